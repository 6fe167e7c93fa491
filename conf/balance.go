package conf

// The balance expression: HAProxy's "balance <algorithm> [<arguments>]".
//
// The algorithms, the arguments each takes and the messages about them are
// proxy/lb's registry, read through lb.Parse: STYLE.md §2's one list of
// names. This file adds what only the configuration knows, the backend's
// mode: an algorithm that reads the HTTP request (uri, url_param, hdr, most
// hash expressions) is an error in a tcp backend, where HAProxy would only
// warn and fall back to roundrobin. An algorithm HAProxy has and fulcrum
// does not run yet is left to checkSupport, which reports it as "not
// supported yet".

import (
	"errors"

	"github.com/fulcrum-proxy/fulcrum/proxy/lb"
)

// checkBalance checks a balance expression at s, in [defaults] or in a
// [[backend]]: a known algorithm with the arguments it takes, in a backend
// whose mode it can run in. An unknown name gets the sorted list of valid
// ones.
func checkBalance(s scope, v *string) {
	if v == nil {
		return
	}
	b, err := lb.Parse(*v)
	switch {
	case errors.Is(err, lb.ErrNotSupported):
		return // checkSupport reports it
	case err != nil:
		s.errorf("%s", err)
		return
	}
	if b.HTTP {
		checkBalanceMode(s, b)
	}
}

// checkBalanceMode reports an HTTP-only algorithm set at s that a tcp
// backend uses: the backend's own balance, or the one of [defaults] for
// every backend that inherits it. It runs before inheritance is applied,
// so it reads the modes from the TOML tree: a backend's own mode, else the
// mode of [defaults], else "http".
func checkBalanceMode(s scope, b lb.Balance) {
	tree := s.c.tree
	defaultMode := "http"
	if d, ok := tree["defaults"].(map[string]any); ok {
		if m, ok := d["mode"].(string); ok {
			defaultMode = m
		}
	}
	backends, _ := tree["backend"].([]map[string]any)
	modeOf := func(be map[string]any) string {
		if m, ok := be["mode"].(string); ok {
			return m
		}
		return defaultMode
	}
	switch {
	case len(s.p) == 3 && s.p[0] == "backend":
		if i := indexOf(s.p[1]); i >= 0 && i < len(backends) && modeOf(backends[i]) == string(ModeTCP) {
			s.errorf("%s needs mode http, the backend is in mode tcp, got %q", b.Entry.Name, b.Expr)
		}
	case len(s.p) == 2 && s.p[0] == "defaults":
		for i, be := range backends {
			if _, own := be["balance"]; !own && modeOf(be) == string(ModeTCP) {
				at := scope{s.c, path{"backend"}.index(i).child("balance")}
				at.errorf("%s from [defaults] needs mode http, the backend is in mode tcp, got %q", b.Entry.Name, b.Expr)
			}
		}
	}
}
