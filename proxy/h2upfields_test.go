package proxy

import (
	"net/http"
	"strings"
	"testing"

	"golang.org/x/net/http2"

	"github.com/fulcrum-proxy/fulcrum/conf"
)

// Requests to an HTTP/2 server carry the client's fields only: no
// User-Agent of the proxy's HTTP/2 library when the client sent none (it
// added "Go-http-client/2.0"), and an HTTP/1 client's "TE: trailers" kept
// (the only TE value HTTP/2 allows; it was dropped). As HAProxy 2.6 (a
// fresh-user trial compared them). Both engines: an HTTP/1 client and an
// HTTP/2 one.
func TestH2UpstreamFields(t *testing.T) {
	got := make(chan http.Header, 4)
	up := h2cUpstream(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ProtoMajor != 2 {
			t.Errorf("the server was spoken to in %s", r.Proto)
		}
		got <- r.Header.Clone()
		w.Write([]byte("ok"))
	}))
	upAddr := strings.TrimPrefix(up.URL, "http://")
	check := func(who string, wantTE string) {
		t.Helper()
		h := <-got
		if ua, ok := h["User-Agent"]; ok {
			t.Errorf("%s: the server got User-Agent %q, want none", who, ua)
		}
		if te := h.Get("Te"); te != wantTE {
			t.Errorf("%s: the server got TE %q, want %q", who, te, wantTE)
		}
	}

	cfg := testConfig(conf.ModeHTTP, []string{upAddr}, nil)
	cfg.Backends[0].Servers[0].Proto = "h2"
	_, addr := startProxy(t, cfg)
	resp := dialRaw(t, addr).do(t, "GET /a HTTP/1.1\r\nHost: x\r\nTE: trailers\r\nConnection: TE\r\n\r\n")
	if b := bodyOf(resp); resp.StatusCode != 200 || b != "ok" {
		t.Fatalf("HTTP/1 client: %d %q", resp.StatusCode, b)
	}
	check("HTTP/1 client", "trailers")

	_, addr2 := startProxy(t, h2Config([]string{upAddr}, "h2"))
	f := dialFramer(t, addr2)
	f.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: f.headers("/b"), EndStream: true, EndHeaders: true})
	check("HTTP/2 client", "")
}
