package proxy

import (
	"net/http"
	"strings"

	"github.com/fulcrum-proxy/fulcrum/proxy/http1"
)

// Local handlers: requests that a frontend answers itself (the stats page,
// /metrics) instead of sending them to a backend, as HAProxy's `stats uri`.
// Route finds them; the engine serves them.

// localRoute is one URI prefix served by a handler.
type localRoute struct {
	prefix string
	h      http.Handler
}

// SetLocalHandler makes the frontend answer requests whose path starts with
// uriPrefix with h. It must be called before Start. Later calls add routes;
// the first matching prefix wins.
func (fe *Frontend) SetLocalHandler(uriPrefix string, h http.Handler) {
	fe.local = append(fe.local, localRoute{prefix: uriPrefix, h: h})
}

// localHandler returns the frontend's handler for uri, or nil.
func (fe *Frontend) localHandler(uri []byte) http.Handler {
	if len(fe.local) == 0 {
		return nil
	}
	u := bstr(uri)
	for _, r := range fe.local {
		if strings.HasPrefix(u, r.prefix) {
			return r.h
		}
	}
	return nil
}

// ErrorPage returns HAProxy 2.6's built-in page for code (the body of its
// error response, HTML), and false for a code it has none for. The stats
// page answers its own refusals with them.
func ErrorPage(code int) (string, bool) { return http1.ErrorPage(code) }
