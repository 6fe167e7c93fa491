package main

import (
	"fmt"
	"os"
	goruntime "runtime"
	"runtime/debug"
	"strings"
	"time"

	"github.com/fulcrum-proxy/fulcrum/conf"
	"github.com/fulcrum-proxy/fulcrum/runtime"
	"github.com/fulcrum-proxy/fulcrum/stats"
	"github.com/rs/zerolog"
)

// startRuntime opens the Runtime API sockets of cfg ([[global.stats_socket]])
// on r's current proxy, with r's reload as the `reload` command; r then
// gives the API each new proxy. The sockets stay as they are across
// reloads. The returned func closes them and removes their files; it is a
// no-op when no socket is configured. On error nothing is left open.
func startRuntime(cfg *conf.Config, r *reloader, log zerolog.Logger) (stop func(), err error) {
	if len(cfg.Global.StatsSockets) == 0 {
		return func() {}, nil
	}
	api := runtime.New(r.current(), log, runtime.Options{
		Version: buildVersion(),
		Timeout: cfg.Global.StatsTimeout,
		Facts:   processFacts,
		Reload:  r.reload,
		Peers:   r.peers.status,
	})
	r.mu.Lock()
	r.api = api
	r.mu.Unlock()
	for _, ss := range cfg.Global.StatsSockets {
		level, err := runtime.ParseLevel(ss.Level)
		if err != nil {
			api.Close()
			return nil, err
		}
		err = api.Listen(runtime.Socket{
			Path: ss.Path, Level: level, Mode: ss.Mode, Owner: ss.Owner, Group: ss.Group,
			TCP: ss.TCP, AllowRemote: ss.AllowRemote, MaxConn: ss.MaxConn,
		})
		if err != nil {
			api.Close()
			return nil, fmt.Errorf("%s:%d: %w", cfg.File, ss.Line, err)
		}
	}
	return func() { api.Close() }, nil
}

// processFacts returns what `show info` says about the process. Version
// and Release_date are single words, as hatop requires.
func processFacts() stats.ProcessFacts {
	host, _ := os.Hostname()
	if i := strings.IndexByte(host, '.'); i > 0 {
		host = host[:i]
	}
	v, date := version, "unknown"
	if bi, ok := debug.ReadBuildInfo(); ok {
		rev := ""
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value[:min(12, len(s.Value))]
			case "vcs.time":
				if t, err := time.Parse(time.RFC3339, s.Value); err == nil {
					date = t.Format("2006/01/02")
				}
			}
		}
		if v == "" {
			v = strings.Trim(bi.Main.Version, "()")
			if rev != "" {
				v += "-" + rev
			}
		}
	}
	heapAlloc, heapUsed := stats.HeapFigures()
	return stats.ProcessFacts{
		HeapAlloc:   heapAlloc,
		HeapUsed:    heapUsed,
		Version:     strings.ReplaceAll(v, " ", "-"),
		ReleaseDate: date,
		BuildInfo:   goruntime.Version(),
		Pid:         os.Getpid(),
		Nbthread:    goruntime.GOMAXPROCS(0),
		Node:        host,
		Tasks:       goruntime.NumGoroutine(),
		UlimitN:     noFile(),
	}
}
