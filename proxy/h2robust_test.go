package proxy

import (
	"net/http"
	"testing"
	"time"

	"golang.org/x/net/http2"

	"github.com/fulcrum-proxy/fulcrum/conf"
)

// TestH2ServerResetRefused: an HTTP/2 server that resets a stream before
// its response head (here x/net's server, RST_STREAM INTERNAL_ERROR for a
// handler aborting) gets the HTTP/2 client's stream reset with
// REFUSED_STREAM, no error page and no log line, the backend and server
// counting eresp and srv_abrt once, no 5xx: what HAProxy 2.6 does
// (measured with nghttp through haproxy 2.6 to a server resetting with
// codes 0, 1, 2, 7 and 8). An HTTP/1.1 client still gets the 502 (SH).
func TestH2ServerResetRefused(t *testing.T) {
	up := h2cUpstream(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		panic(http.ErrAbortHandler)
	}))
	cfg := h2Config([]string{up.Listener.Addr().String()}, "h2")
	cfg.Frontends[0].Binds = append(cfg.Frontends[0].Binds, "127.0.0.1:0")
	cfg.Frontends[0].BindOptions = append(cfg.Frontends[0].BindOptions, &conf.Bind{Addr: "127.0.0.1:0"})
	p, addr, logs := startLogged(t, cfg)
	f := dialFramer(t, addr)
	f.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: f.headers("/reset"), EndStream: true, EndHeaders: true})
	for {
		fr, err := f.fr.ReadFrame()
		if err != nil {
			t.Fatalf("stream 1: %v before its end", err)
		}
		if fr.Header().StreamID != 1 {
			continue
		}
		rst, ok := fr.(*http2.RSTStreamFrame)
		if !ok {
			t.Fatalf("stream 1: got %v, want RST_STREAM(REFUSED_STREAM) only", fr)
		}
		if rst.ErrCode != http2.ErrCodeRefusedStream {
			t.Fatalf("stream 1 reset with %v, want REFUSED_STREAM", rst.ErrCode)
		}
		break
	}
	s := p.Snapshot()
	be, srv := s.Backends[0].CounterValues, s.Backends[0].Servers[0].CounterValues
	if be.Eresp != 1 || be.SrvAbrt != 1 || srv.Eresp != 1 || srv.SrvAbrt != 1 || be.Hrsp5xx != 0 || s.Frontends[0].Hrsp5xx != 0 {
		t.Errorf("after the h2 reset: backend eresp %d srv_abrt %d hrsp_5xx %d, server eresp %d srv_abrt %d, frontend hrsp_5xx %d; want 1 1 0 1 1 0",
			be.Eresp, be.SrvAbrt, be.Hrsp5xx, srv.Eresp, srv.SrvAbrt, s.Frontends[0].Hrsp5xx)
	}
	// The HTTP/1.1 client: the 502, logged SH. Its line is the only one
	// (the h2 stream's would have been written before its reset left).
	rc := dialRaw(t, p.Frontends[0].Addrs()[1].String())
	if resp := rc.do(t, "GET /h1 HTTP/1.1\r\nHost: x\r\n\r\n"); resp.StatusCode != 502 {
		t.Errorf("HTTP/1.1 client: got %d, want 502", resp.StatusCode)
	}
	waitFor(t, 5*time.Second, "the HTTP/1.1 request's log line", func() bool { return len(logLines(t, logs)) >= 1 })
	lines := logLines(t, logs)
	if len(lines) != 1 || lines[0]["request"] != "GET /h1 HTTP/1.1" || lines[0]["termination_state"] != "SH" {
		t.Errorf("log lines: got %v, want only GET /h1's, flags SH", lines)
	}
}
