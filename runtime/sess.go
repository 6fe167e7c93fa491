package runtime

import (
	"fmt"
	"strconv"
	"time"
	"unsafe"
)

// Session commands: the streams in progress, and aborting one.
var sessionCommands = []Command{
	{Words: []string{"show", "sess"}, Level: LevelOperator, Usage: "show sess [id]", Help: "report the list of current sessions or dump this exact session", Run: showSess},
	{Words: []string{"shutdown", "session"}, Level: LevelAdmin, Usage: "shutdown session [id]", Help: "kill a specific session", Run: shutdownSession},
}

// sessInfo is one line of show sess: a proxy stream or a CLI session.
type sessInfo struct {
	id       uintptr
	proto    string
	src      string
	fe       string
	be, srv  string
	age      time.Duration
	started  time.Time
	cli      *session // set for a Runtime API session
	fromCore bool
}

// sessions lists the streams in progress (client connections with a
// request or TCP session under way), then the Runtime API's own sessions,
// which HAProxy lists too (fe=GLOBAL).
func (c *Context) sessions() []sessInfo {
	var out []sessInfo
	now := time.Now()
	for _, s := range c.Proxy.Sessions() {
		if !s.Active {
			continue // an idle keep-alive connection has no stream in HAProxy
		}
		proto := "tcpv4"
		if s.Src.Addr().Is6() && !s.Src.Addr().Is4In6() {
			proto = "tcpv6"
		}
		be, srv := "<NONE>", "<none>"
		if s.Backend != "" {
			be, srv = s.Backend, s.Server
		}
		out = append(out, sessInfo{id: s.ID, proto: proto, src: s.Src.String(), fe: s.Frontend,
			be: be, srv: srv, age: s.Age, started: now.Add(-s.Age), fromCore: true})
	}
	c.api.mu.Lock()
	for cs := range c.api.sessions {
		proto, src := "unix_stream", "unix:1"
		if cs.sock.path == "" {
			proto, src = "tcpv4", cs.conn.RemoteAddr().String()
		}
		out = append(out, sessInfo{id: uintptr(unsafe.Pointer(cs)), proto: proto, src: src, fe: "GLOBAL",
			be: "<NONE>", srv: "<none>", age: now.Sub(cs.started), started: cs.started, cli: cs})
	}
	c.api.mu.Unlock()
	return out
}

// humanAge formats an age as HAProxy's human_time: 45s, 3m12s, 2h5m, 1d3h.
func humanAge(d time.Duration) string {
	s := int64(d / time.Second)
	switch {
	case s < 60:
		return fmt.Sprintf("%ds", s)
	case s < 3600:
		return fmt.Sprintf("%dm%ds", s/60, s%60)
	case s < 86400:
		return fmt.Sprintf("%dh%dm", s/3600, s%3600/60)
	}
	return fmt.Sprintf("%dd%dh", s/86400, s%86400/3600)
}

// parseSessID reads a session id as HAProxy's strtoul(..., 0): 0x... hex.
func parseSessID(s string) (uintptr, bool) {
	v, err := strconv.ParseUint(s, 0, 64)
	return uintptr(v), err == nil
}

// showSess lists the sessions, or dumps the one whose id is given.
func showSess(c *Context, args []string) error {
	list := c.sessions()
	if a := arg(args, 0); a != "" && a != "all" {
		id, ok := parseSessID(a)
		for _, s := range list {
			if ok && s.id == id {
				c.Printf("0x%x: [%s] proto=%s source=%s\n  frontend=%s\n  backend=%s\n  server=%s\n  age=%s\n",
					s.id, haproxyDate(s.started), s.proto, s.src, s.fe, s.be, s.srv, humanAge(s.age))
				return nil
			}
		}
		return reply("Session not found.")
	}
	for _, s := range list {
		c.Printf("0x%x: proto=%s src=%s fe=%s be=%s srv=%s ts=00 age=%s\n",
			s.id, s.proto, s.src, s.fe, s.be, s.srv, humanAge(s.age))
	}
	return nil
}

// shutdownSession aborts one session: its client and server connections.
func shutdownSession(c *Context, args []string) error {
	a := arg(args, 0)
	if a == "" {
		return reply("Session pointer expected (use 'show sess').")
	}
	id, ok := parseSessID(a)
	if ok {
		for _, s := range c.sessions() {
			if s.id != id {
				continue
			}
			switch {
			case s.fromCore:
				ok = c.Proxy.ShutdownSession(id)
			case s.cli != nil:
				s.cli.conn.Close()
			}
			if ok {
				c.Changed().Str("session", a).Str("frontend", s.fe).Str("backend", s.be).Str("server", s.srv).Msg("session shut down")
				return nil
			}
		}
	}
	return reply("No such session (use 'show sess').")
}
