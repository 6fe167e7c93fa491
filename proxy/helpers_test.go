package proxy

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/fulcrum-proxy/fulcrum/conf"
)

// upstream is a real HTTP server for tests that counts requests and
// connections and records the last X-Forwarded-For it saw.
type upstream struct {
	*httptest.Server
	name     string
	requests atomic.Int64
	conns    atomic.Int64
	mu       sync.Mutex
	lastXFF  string
	handler  http.HandlerFunc // optional override
}

func newUpstream(t *testing.T, name string) *upstream {
	t.Helper()
	u := &upstream{name: name}
	u.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u.requests.Add(1)
		u.mu.Lock()
		u.lastXFF = r.Header.Get("X-Forwarded-For")
		u.mu.Unlock()
		if u.handler != nil {
			u.handler(w, r)
			return
		}
		w.Header().Set("X-Server", name)
		io.Copy(io.Discard, r.Body)
		fmt.Fprintf(w, "%s\n", name)
	}))
	u.Config.ConnState = func(c net.Conn, s http.ConnState) {
		if s == http.StateNew {
			u.conns.Add(1)
		}
	}
	u.Start()
	t.Cleanup(u.Close)
	return u
}

func (u *upstream) addr() string { return u.Listener.Addr().String() }

func (u *upstream) xff() string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.lastXFF
}

// testConfig returns a one-frontend, one-backend config in mode over the
// given server addresses, binding 127.0.0.1:0. weights may be nil (all 1).
func testConfig(mode conf.Mode, addrs []string, weights []int) *conf.Config {
	be := &conf.Backend{
		Name: "web", Mode: mode, Balance: "roundrobin", HTTPReuse: "safe",
		TimeoutConnect: 2 * time.Second, TimeoutServer: 10 * time.Second, Retries: 1,
	}
	for i, a := range addrs {
		w := 1
		if weights != nil {
			w = weights[i]
		}
		be.Servers = append(be.Servers, &conf.Server{Name: fmt.Sprintf("s%d", i+1), Address: a, Weight: w,
			PoolMaxConn: -1, PoolPurgeDelay: 5 * time.Second})
	}
	return &conf.Config{
		Frontends: []*conf.Frontend{{
			Name: "www", Binds: []string{"127.0.0.1:0"}, Mode: mode, DefaultBackend: "web",
			TimeoutClient: 10 * time.Second, TimeoutHTTPRequest: 5 * time.Second, ForwardFor: true,
		}},
		Backends: []*conf.Backend{be},
	}
}

// startProxy builds and starts a proxy, stopping it at the end of the test.
// It returns the proxy and the first frontend's address.
func startProxy(t testing.TB, cfg *conf.Config) (*Proxy, string) {
	t.Helper()
	p, err := New(cfg, zerolog.Nop())
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	if err := p.Start(); err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		p.Shutdown(ctx)
	})
	return p, p.Frontends[0].Addrs()[0].String()
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// rawClient is a minimal keep-alive HTTP/1.1 client on one connection, so
// tests control exactly what is sent and see exactly what comes back.
type rawClient struct {
	c  net.Conn
	br *bufio.Reader
}

func dialRaw(t *testing.T, addr string) *rawClient {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	t.Cleanup(func() { c.Close() })
	return &rawClient{c: c, br: bufio.NewReader(c)}
}

// do sends raw and reads one response.
func (rc *rawClient) do(t *testing.T, raw string) *http.Response {
	t.Helper()
	rc.c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(rc.c, raw); err != nil {
		t.Fatalf("write: %v", err)
	}
	resp, err := http.ReadResponse(rc.br, nil)
	if err != nil {
		t.Fatalf("read response: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	resp.Body = io.NopCloser(strings.NewReader(string(body)))
	return resp
}

func bodyOf(resp *http.Response) string {
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

func nopLogger() zerolog.Logger { return zerolog.Nop() }

func contextBackground() context.Context { return context.Background() }

// errorPage is the body of HAProxy's error page for code.
func errorPage(code int) string {
	body, _ := ErrorPage(code)
	return body
}
