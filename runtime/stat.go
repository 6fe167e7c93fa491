package runtime

import (
	"errors"
	"os"
	goruntime "runtime"
	"runtime/debug"
	"strings"
	"time"

	"github.com/fulcrum-proxy/fulcrum/stats"
)

// `show info` and `show stat`: the snapshot rendered by package stats, the
// same as the stats page and the Prometheus endpoint.
var statCommands = []Command{
	{Words: []string{"show", "info"}, Level: LevelUser, Usage: "show info [desc|json|typed|float]*", Help: "report information about the running process", Run: showInfo},
	{Words: []string{"show", "stat"}, Level: LevelUser, Usage: "show stat [desc|json|no-maint|typed|up]*", Help: "report counters for each proxy and server", Run: showStat},
}

// facts returns the process facts for show info, the Runtime API's own
// sockets, sessions and peers included.
func (a *API) facts() stats.ProcessFacts {
	f := a.ownFacts()
	if f.HeapAlloc == 0 {
		f.HeapAlloc, f.HeapUsed = stats.HeapFigures()
	}
	a.mu.Lock()
	f.APIListeners, f.APISessions = len(a.listeners), len(a.sessions)
	f.APISessionsTotal = a.accepted
	a.mu.Unlock()
	if a.opts.Peers != nil {
		for _, st := range a.opts.Peers() {
			for _, ps := range st.Peers {
				if ps.Local {
					continue
				}
				if ps.Active {
					f.ActivePeers++
				}
				if ps.Connected {
					f.ConnectedPeers++
				}
			}
		}
	}
	return f
}

// ownFacts returns Options.Facts when set, else what the runtime package
// can tell itself.
func (a *API) ownFacts() stats.ProcessFacts {
	if a.opts.Facts != nil {
		return a.opts.Facts()
	}
	host, _ := os.Hostname()
	if i := strings.IndexByte(host, '.'); i > 0 {
		host = host[:i]
	}
	// hatop requires every one of Name, Version and Release_date to be a
	// word: an unknown date is "unknown", not empty.
	date := "unknown"
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if t, err := time.Parse(time.RFC3339, s.Value); s.Key == "vcs.time" && err == nil {
				date = t.Format("2006/01/02")
			}
		}
	}
	version := a.opts.Version
	if version == "" {
		version = "unknown"
	}
	return stats.ProcessFacts{Version: version, ReleaseDate: date, Pid: os.Getpid(),
		Nbthread: goruntime.GOMAXPROCS(0), Node: host, Tasks: goruntime.NumGoroutine()}
}

// showInfo prints the process information: `Name: value` lines, or typed,
// typed with descriptions, or JSON.
func showInfo(c *Context, args []string) error {
	typed, desc, json := false, false, false
	for _, a := range args {
		switch a {
		case "typed":
			typed = true
		case "desc":
			desc = true
		case "json":
			json = true
		}
	}
	format := ""
	switch {
	case json:
		format = "json"
	case typed && desc:
		format = "typed desc"
	case typed:
		format = "typed"
	}
	info := stats.NewInfo(c.Proxy.Snapshot(), c.api.facts())
	return stats.WriteInfo(c, info, format)
}

// showStat is `show stat [domain proxy] [{proxy|#iid|iid} {type} {sid}]
// [typed|json] [desc] [up|no-maint]`, parsed as HAProxy's
// cli_parse_show_stat: the filter triple counts only when all three words
// are present, and comes before the options.
func showStat(c *Context, args []string) error {
	if arg(args, 0) == "domain" {
		switch arg(args, 1) {
		case "proxy":
		case "resolvers":
			return showStatResolvers(c, args[2:]) // resolvers.go
		default:
			return reply("Invalid statistics domain.")
		}
		args = args[2:]
	}
	f := stats.AllRows()
	f.HideLegends = c.Level() < LevelOperator // HAProxy hides addr and algo at user level
	if len(args) >= 3 && args[0] != "" && args[1] != "" && args[2] != "" {
		name := args[0]
		if findBackend(c.Proxy, name) != nil && !strings.HasPrefix(name, "#") || c.Proxy.Frontend(name) != nil {
			f.Proxy = name
		} else {
			id := atoi(strings.TrimPrefix(name, "#"))
			if id == 0 {
				return reply("No such proxy.")
			}
			f.ProxyID = id
		}
		f.Types, f.ServerID = atoi(args[1]), atoi(args[2])
		args = args[3:]
	}
	typed, json, desc := false, false, false
	for _, a := range args {
		switch a {
		case "typed":
			typed = true
		case "json":
			json = true
		case "desc":
			desc = true
		case "up":
			f.Up = true
		case "no-maint":
			f.NoMaint = true
		}
	}
	snap := c.Proxy.Snapshot()
	var err error
	switch {
	case typed && desc:
		err = stats.WriteDesc(c, snap, f)
	case typed:
		err = stats.WriteTyped(c, snap, f)
	case json:
		err = stats.WriteJSON(c, snap, f)
	default:
		err = stats.WriteCSV(c, snap, f)
	}
	if errors.Is(err, stats.ErrNoSuchProxy) {
		return reply("No such proxy.")
	}
	return err
}
