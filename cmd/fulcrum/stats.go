package main

import (
	"net/http"
	"net/netip"

	"github.com/fulcrum-proxy/fulcrum/conf"
	"github.com/fulcrum-proxy/fulcrum/proxy"
	"github.com/fulcrum-proxy/fulcrum/stats"
)

// setupStats serves the stats page at its URI and the Prometheus metrics at
// /metrics on every frontend whose [frontend.stats] is enabled. It must run
// before p.Start (local handlers are fixed once the frontend listens).
func setupStats(p *proxy.Proxy) {
	for _, fe := range p.Frontends {
		sc := fe.Conf.Stats
		if sc == nil {
			continue
		}
		cfg := stats.PageConfig{
			URI: sc.URI, Refresh: sc.Refresh, Auth: sc.Auth, HideVersion: sc.HideVersion,
			Admin: statsAdmin(sc), Facts: processFacts,
		}
		// /metrics first: a page at "/" must not hide it.
		fe.SetLocalHandler("/metrics", stats.NewMetrics(p, cfg))
		fe.SetLocalHandler(sc.URI, stats.NewPage(p, cfg))
	}
}

// statsAdmin turns the page's admin condition into a request check: always,
// never, or by the client's source address.
func statsAdmin(sc *conf.StatsPage) func(*http.Request) bool {
	switch {
	case sc.AdminAlways:
		return func(*http.Request) bool { return true }
	case len(sc.AdminFrom) == 0:
		return nil
	}
	return func(r *http.Request) bool {
		ap, err := netip.ParseAddrPort(r.RemoteAddr)
		if err != nil {
			return false
		}
		addr := ap.Addr().Unmap()
		for _, pfx := range sc.AdminFrom {
			if pfx.Contains(addr) {
				return true
			}
		}
		return false
	}
}
