package main

import (
	"github.com/fulcrum-proxy/fulcrum/proxy"
	"github.com/fulcrum-proxy/fulcrum/proxy/check"
	"github.com/rs/zerolog"
)

// startChecks starts the health checks, agent checks and traffic
// observation of p's servers (proxy/check). The returned func stops them
// and waits for probes in flight; serve defers it, so checks keep running
// while in-flight requests drain at stop, as HAProxy's do.
func startChecks(p *proxy.Proxy, log zerolog.Logger) (stop func()) {
	c, err := check.New(p, log)
	if err != nil { // conf validates every check setting first
		log.Error().Err(err).Msg("health checks not started")
		return func() {}
	}
	c.Start()
	return c.Stop
}
