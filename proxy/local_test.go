package proxy

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/fulcrum-proxy/fulcrum/conf"
)

func TestLocalHandler(t *testing.T) {
	u := newUpstream(t, "s1")
	cfg := testConfig(conf.ModeHTTP, []string{u.addr()}, nil)
	p, err := New(cfg, nopLogger())
	if err != nil {
		t.Fatal(err)
	}
	p.Frontends[0].SetLocalHandler("/stats", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(201)
		fmt.Fprintf(w, "%s %s from %s body=%q", r.Method, r.URL.String(), strings.Split(r.RemoteAddr, ":")[0], b)
	}))
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Shutdown(contextBackground()) })
	addr := p.Frontends[0].Addrs()[0].String()
	rc := dialRaw(t, addr)
	resp := rc.do(t, "POST /stats;csv?x=1 HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello")
	if got, want := bodyOf(resp), `POST /stats;csv?x=1 from 127.0.0.1 body="hello"`; resp.StatusCode != 201 || got != want {
		t.Errorf("got %d %q, want 201 %q", resp.StatusCode, got, want)
	}
	// The same connection still proxies other paths.
	resp = rc.do(t, "GET /app HTTP/1.1\r\nHost: x\r\n\r\n")
	if b := bodyOf(resp); resp.StatusCode != 200 || strings.TrimSpace(b) != "s1" {
		t.Errorf("proxied request after local one: got %d %q", resp.StatusCode, b)
	}
	if u.requests.Load() != 1 {
		t.Errorf("upstream requests: got %d, want 1", u.requests.Load())
	}
	waitFor(t, time.Second, "counters", func() bool { return p.Snapshot().Frontends[0].Hrsp2xx == 2 })
}
