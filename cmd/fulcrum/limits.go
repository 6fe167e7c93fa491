package main

// Descriptor limits at start (issue 16: with `ulimit -n 256` and no
// maxconn, 771 of 1,000 concurrent clients got a 503 where HAProxy served
// them all).

import (
	goruntime "runtime"

	"github.com/fulcrum-proxy/fulcrum/conf"
	"github.com/rs/zerolog"
)

// fdLimit is the process's file descriptor limit (RLIMIT_NOFILE), read
// once at start after raising the soft limit to the hard one, as HAProxy
// does. It sizes every configuration the process serves (start and
// reloads).
type fdLimit struct {
	nofile     int // the soft limit now; 0 = unknown (nothing is sized)
	raisedFrom int // the soft limit found at start, when it was raised; else 0
	// perConn is the descriptors a proxied connection costs: 2 (client
	// and server connections); 3 for the demo, whose servers run in the
	// same process and hold the accepted end too.
	perConn int
}

// startFDLimit raises the soft descriptor limit to the hard one and
// returns the result. A failure to raise keeps the soft limit as it is.
func startFDLimit(perConn int) fdLimit {
	cur, raisedFrom := raiseNoFile()
	return fdLimit{nofile: cur, raisedFrom: raisedFrom, perConn: perConn}
}

// haproxyDefaultMaxconn is HAProxy's DEFAULT_MAXCONN: below it, a maxconn
// derived from the descriptor limit is worth a warning.
const haproxyDefaultMaxconn = 100

// reservedFDs is how many descriptors cfg needs beside its client and
// server connections, counted as HAProxy 2.6 does before it derives
// maxconn (global.maxsock): 10 for the process itself (standard streams,
// logs, the state file), one per listener (each bind, each Runtime API
// endpoint), each Runtime API endpoint's maxconn, one per health check and
// agent check, and three per thread (HAProxy's poller and wake-up pipe;
// Go's scheduler needs fewer, the rest is margin). With the same
// configuration the derived maxconn is then HAProxy's (114 for one bind,
// one socket, nbthread 2 and `ulimit -n 256`, checked with HAProxy 2.6.12).
func reservedFDs(cfg *conf.Config, threads int) int {
	n := 10
	for _, fe := range cfg.Frontends {
		n += len(fe.Binds)
	}
	for _, ss := range cfg.Global.StatsSockets {
		for _, ep := range []string{ss.Path, ss.TCP} {
			if ep != "" {
				n += 1 + ss.MaxConn
			}
		}
	}
	for _, b := range cfg.Backends {
		for _, s := range b.Servers {
			if s.Check {
				n++
			}
			if s.Agent != nil {
				n++
			}
		}
	}
	return n + 3*threads
}

// raised adds raised_from, the soft limit found at start, to ev when
// fulcrum raised it (to the hard limit); nothing when it was already there.
func (l fdLimit) raised(ev *zerolog.Event) *zerolog.Event {
	if l.raisedFrom > 0 {
		ev = ev.Int("raised_from", l.raisedFrom)
	}
	return ev
}

// size fits cfg to the limit and returns the bound to give its proxy's
// connections (proxy.LimitDescriptors, which counts two descriptors per
// connection; 0 = no bound). When
// cfg sets no global maxconn, it becomes what the limit allows, as
// HAProxy's: (limit - reserved) / 2, at least 1. show info reports it as
// Maxconn and Hard_maxconn; `set maxconn global` cannot go above it.
//
// prev is the maxconn the process ran with before (a reload's previous
// configuration; 0 at start): a reload that keeps it logs nothing.
func (l fdLimit) size(cfg *conf.Config, log zerolog.Logger, prev int) (budget int) {
	if l.nofile <= 0 {
		return 0
	}
	reserved := reservedFDs(cfg, goruntime.GOMAXPROCS(0))
	budget = max(l.nofile-reserved, l.perConn)
	// Descriptors counted by proxy.LimitDescriptors, two per connection;
	// the demo's upstreams take a third share of what remains.
	counted := budget * 2 / l.perConn
	fits := max(counted/2, 1)
	derived := cfg.Global.MaxConn == 0
	if derived {
		cfg.Global.MaxConn = fits
	}
	if prev != 0 && cfg.Global.MaxConn == prev {
		return counted // a reload that keeps the maxconn: nothing new to say
	}
	ev := log.Info()
	switch {
	case derived:
		if fits < haproxyDefaultMaxconn {
			ev = log.Warn()
		}
		l.raised(ev.Int("ulimit_n", l.nofile)).Int("reserved", reserved).
			Int("maxconn", fits).Msg("maxconn derived from the file descriptor limit")
	case cfg.Global.MaxConn > fits:
		l.raised(log.Warn().Int("ulimit_n", l.nofile)).Int("reserved", reserved).
			Int("maxconn", cfg.Global.MaxConn).Int("fits", fits).
			Msg("global maxconn needs more file descriptors than the limit allows: past the connections that fit, new ones wait in the backlog")
	default:
		l.raised(ev.Int("ulimit_n", l.nofile)).Int("maxconn", cfg.Global.MaxConn).
			Msg("file descriptor limit")
	}
	return counted
}
