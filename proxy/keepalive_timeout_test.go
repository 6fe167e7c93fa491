package proxy

import (
	"io"
	"strings"
	"testing"
	"time"

	"github.com/fulcrum-proxy/fulcrum/conf"
)

// TestTimeoutHTTPKeepAlive: timeout_http_keep_alive bounds the wait for
// a kept-alive connection's next request (closed silently when it
// passes), while the first request still has timeout_http_request (a
// 408 when it passes), as HAProxy's timeout http-keep-alive and timeout
// http-request. Each timeout that should not act is 30 s, far past the
// 10 s the test waits, so that no timing decides the outcome.
func TestTimeoutHTTPKeepAlive(t *testing.T) {
	up := newUpstream(t, "s1")
	start := func(request, keepAlive time.Duration) string {
		cfg := testConfig(conf.ModeHTTP, []string{up.addr()}, nil)
		cfg.Frontends[0].TimeoutHTTPRequest = request
		cfg.Frontends[0].TimeoutHTTPKeepAlive = keepAlive
		_, addr := startProxy(t, cfg)
		return addr
	}

	// After a request: closed at the keep-alive timeout.
	rc := dialRaw(t, start(30*time.Second, 100*time.Millisecond))
	resp := rc.do(t, "GET / HTTP/1.1\r\nHost: a\r\n\r\n")
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	rc.c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if b, err := io.ReadAll(rc.br); err != nil || len(b) != 0 {
		t.Errorf("idle kept-alive connection: read %q, %v; want a silent close at the keep-alive timeout", b, err)
	}

	// Before the first request: timeout_http_request, and a 408.
	first := dialRaw(t, start(200*time.Millisecond, 30*time.Second))
	first.c.SetReadDeadline(time.Now().Add(10 * time.Second))
	b, err := io.ReadAll(first.br)
	if !strings.HasPrefix(string(b), "HTTP/1.1 408 ") {
		t.Errorf("no first request: got %q, %v; want a 408 at the request timeout", b, err)
	}
}
