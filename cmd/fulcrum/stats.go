package main

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"

	"github.com/fulcrum-proxy/fulcrum/conf"
	"github.com/fulcrum-proxy/fulcrum/proxy"
	"github.com/fulcrum-proxy/fulcrum/proxy/acl"
	"github.com/fulcrum-proxy/fulcrum/proxy/peers"
	"github.com/fulcrum-proxy/fulcrum/stats"
)

// setupStats serves the stats page at its URI and the Prometheus metrics at
// /metrics on every frontend whose [frontend.stats] is enabled. It must run
// before p.Start (local handlers are fixed once the frontend listens).
// change runs the page's admin actions on the proxy serving then (see
// reloader.change). peersStatus gives the [[peers]] sections' state for
// the page's peers section and the per-peer metrics.
func setupStats(p *proxy.Proxy, change func(func(*proxy.Proxy)), peersStatus func() []peers.Status) {
	for _, fe := range p.Frontends {
		sc := fe.Conf.Stats
		if sc == nil {
			continue
		}
		// The page and /metrics share one authentication: one cache of
		// verified credentials, one count of each source's failures.
		cfg := stats.PageConfig{
			URI: sc.URI, Refresh: sc.Refresh, Auth: sc.Auth, Authenticator: stats.NewAuth(sc.Auth),
			HideVersion: sc.HideVersion, Admin: statsAdmin(sc), Facts: processFacts, Change: change,
			Peers:           peersStatus,
			HistoryInterval: p.Conf.Global.StatsHistoryInterval, Log: p.Logger(),
		}
		// /metrics first: a page at "/" must not hide it.
		fe.SetLocalHandler("/metrics", stats.NewMetrics(p, cfg))
		fe.SetLocalHandler(sc.URI, stats.NewPage(p, cfg))
	}
}

// statsAdmin turns the page's admin condition (an ACL condition compiled
// in the frontend's scope) into a request check; nil means never.
func statsAdmin(sc *conf.StatsPage) func(*http.Request) bool {
	if sc.AdminCond == nil {
		return nil
	}
	return func(r *http.Request) bool {
		src, _ := netip.ParseAddrPort(r.RemoteAddr)
		var dst netip.AddrPort
		if la, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok {
			dst, _ = netip.ParseAddrPort(la.String())
		}
		view := acl.Request{
			Src: src, Dst: dst, HTTP: true,
			Method: []byte(r.Method), URI: []byte(r.RequestURI),
			Version: []byte(fmt.Sprintf("%d.%d", r.ProtoMajor, r.ProtoMinor)),
			Headers: headerList(r),
		}
		return sc.AdminCond.Eval(&view)
	}
}

// headerList adapts a net/http request's headers (and its Host, which
// net/http keeps apart) to the ACL engine's view.
type headerLines [][2][]byte

func headerList(r *http.Request) headerLines {
	h := headerLines{{[]byte("Host"), []byte(r.Host)}}
	for name, values := range r.Header {
		for _, v := range values {
			h = append(h, [2][]byte{[]byte(name), []byte(v)})
		}
	}
	return h
}

func (h headerLines) NumHeaders() int                     { return len(h) }
func (h headerLines) HeaderAt(i int) (name, value []byte) { return h[i][0], h[i][1] }
