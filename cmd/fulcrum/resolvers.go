package main

import (
	"github.com/fulcrum-proxy/fulcrum/proxy"
	"github.com/fulcrum-proxy/fulcrum/proxy/resolve"
	"github.com/rs/zerolog"
)

// startResolvers gives p's DNS-resolved servers their first address and
// starts resolving them (proxy/resolve): at start from the state file's
// addresses (saved, init_addr "last"), at a reload from prev, the proxy
// replaced, whose servers keep what DNS gave them. The returned func stops
// the resolutions. An error (a server whose init_addr methods all failed)
// means p must not serve; nothing is left running then.
func startResolvers(p *proxy.Proxy, log zerolog.Logger, saved []proxy.SavedDNS, prev *proxy.Proxy) (stop func(), err error) {
	if len(p.Resolvers) == 0 {
		return func() {}, nil
	}
	m := resolve.New(p, log)
	if err := m.Init(saved, prev); err != nil {
		m.Stop()
		return nil, err
	}
	m.Start()
	return m.Stop, nil
}
