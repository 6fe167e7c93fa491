package proxy

import (
	"fmt"
	"github.com/fulcrum-proxy/fulcrum/conf"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/h2c"
)

// reuseClient is one client connection of the reuse tests: get sends a GET
// on it and returns the body.
type reuseClient interface {
	get(t *testing.T, path string) string
}

type rawReuseClient struct{ rc *rawClient }

func (c rawReuseClient) get(t *testing.T, path string) string {
	t.Helper()
	resp := c.rc.do(t, "GET "+path+" HTTP/1.1\r\nHost: x\r\n\r\n")
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s: status %d", path, resp.StatusCode)
	}
	return bodyOf(resp)
}

type h2ReuseClient struct {
	rt   http.RoundTripper
	addr string
}

func (c h2ReuseClient) get(t *testing.T, path string) string {
	t.Helper()
	resp, err := c.rt.RoundTrip(mustReq(t, "http://"+c.addr+path))
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s: status %d", path, resp.StatusCode)
	}
	return string(b)
}

// newReuseClient opens a client connection to addr: HTTP/1.1 keep-alive
// (kind "h1") or HTTP/2 with prior knowledge ("h2").
func newReuseClient(t *testing.T, kind, addr string) reuseClient {
	if kind == "h1" {
		return rawReuseClient{dialRaw(t, addr)}
	}
	tr := h2cTransport()
	t.Cleanup(tr.CloseIdleConnections)
	return h2ReuseClient{tr, addr}
}

// connServer is an HTTP/2 (h2c) server answering with its name and the
// address of the proxy's connection the request came on; it counts the
// connections it accepted.
func connServer(t *testing.T, name string) (addr string, conns *atomic.Int64) {
	conns = new(atomic.Int64)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "%s %s", name, r.RemoteAddr)
	})
	up := httptest.NewUnstartedServer(h2c.NewHandler(h, &http2.Server{}))
	up.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	up.Start()
	t.Cleanup(up.Close)
	return up.Listener.Addr().String(), conns
}

func reuseBind(kind string) string {
	if kind == "h2" {
		return "127.0.0.1:0 proto h2"
	}
	return "127.0.0.1:0"
}

// TestH2ServerReuse: requests to a server with proto h2 share its
// connections as http_reuse allows, from HTTP/1.1 and HTTP/2 clients
// alike. Two client connections A and B send A1 B1 A2 B2 A3 B3 one after
// the other: under never each client has its own server connection,
// closed when the client leaves; under safe B's first request does not
// take A's idle connection but B's later ones share A's; under always one
// connection carries all six.
func TestH2ServerReuse(t *testing.T) {
	for _, kind := range []string{"h1", "h2"} {
		for _, reuse := range []string{"never", "safe", "always"} {
			t.Run(kind+" "+reuse, func(t *testing.T) {
				srv, conns := connServer(t, "s1")
				cfg := loadConfig(t, t.TempDir(), fmt.Sprintf(`
[[frontend]]
name = "www"
bind = [%q]
default_backend = "web"

[[backend]]
name = "web"
http_reuse = %q
[[backend.server]]
name = "s1"
address = %q
proto = "h2"
`, reuseBind(kind), reuse, srv))
				p, addr := startProxy(t, cfg)
				a, b := newReuseClient(t, kind, addr), newReuseClient(t, kind, addr)
				var got [2][3]string
				// A connection whose stream just ended may not know it
				// yet: "safe" lets a first request use a busy connection.
				pool := p.Backends[0].Servers()[0].up.H2
				idle := func() {
					waitFor(t, 5*time.Second, "the pool's streams ended", func() bool { return pool.Streams() == 0 })
				}
				for i := range 3 {
					got[0][i] = a.get(t, "/a")
					idle()
					got[1][i] = b.get(t, "/b")
					idle()
				}
				// Under safe, B's first request opens a connection of its
				// own, its later ones take the pool's first, A's.
				wantB := [3]string{got[1][0], got[1][0], got[1][0]}
				if reuse == "safe" {
					wantB = [3]string{got[1][0], got[0][0], got[0][0]}
				}
				if got[0][1] != got[0][0] || got[0][2] != got[0][0] || got[1] != wantB {
					t.Errorf("server connections: A's requests came on %q, B's on %q", got[0], got[1])
				}
				var wantConns int64
				switch reuse {
				case "never", "safe":
					wantConns = 2
					if got[0][0] == got[1][0] {
						t.Errorf("B's first request took A's connection %q under %s", got[0][0], reuse)
					}
				case "always":
					wantConns = 1
				}
				if n := conns.Load(); n != wantConns {
					t.Errorf("server connections: got %d, want %d", n, wantConns)
				}
				if reuse == "safe" {
					if n := p.Backends[0].Servers()[0].up.H2.Len(); n != 2 {
						t.Errorf("shared connections in the pool: got %d, want 2", n)
					}
				}
				if reuse == "never" {
					if n := p.Backends[0].Servers()[0].up.H2.Len(); n != 0 {
						t.Errorf("shared connections in the pool: got %d, want 0 (private ones)", n)
					}
					if kind == "h1" {
						a.(rawReuseClient).rc.c.Close()
						b.(rawReuseClient).rc.c.Close()
					} else {
						a.(h2ReuseClient).rt.(interface{ CloseIdleConnections() }).CloseIdleConnections()
						b.(h2ReuseClient).rt.(interface{ CloseIdleConnections() }).CloseIdleConnections()
					}
					waitFor(t, 5*time.Second, "the private server connections closed", func() bool {
						return p.Backends[0].H2.OpenConns.Load() == 0
					})
				}
			})
		}
	}
}

// TestH2ReuseKeepsBackendsApart: a keep-alive client alternating between
// two backends whose servers speak HTTP/2, one with http_reuse never,
// always reaches the right backend's server (issue 16's routing bug,
// through HTTP/2 server connections), from HTTP/1.1 and HTTP/2 clients.
func TestH2ReuseKeepsBackendsApart(t *testing.T) {
	sa, _ := connServer(t, "a")
	sb, _ := connServer(t, "b")
	for _, kind := range []string{"h1", "h2"} {
		for _, reuseB := range []string{"never", "safe", "always"} {
			t.Run(kind+" b "+reuseB, func(t *testing.T) {
				cfg := loadConfig(t, t.TempDir(), fmt.Sprintf(`
[[frontend]]
name = "www"
bind = [%q]
default_backend = "a"
use_backend = [{ backend = "b", if = "{ path_beg /b }" }]

[[backend]]
name = "a"
http_reuse = "never"
[[backend.server]]
name = "sa"
address = %q
proto = "h2"

[[backend]]
name = "b"
http_reuse = %q
[[backend.server]]
name = "sb"
address = %q
proto = "h2"
`, reuseBind(kind), sa, reuseB, sb))
				_, addr := startProxy(t, cfg)
				c := newReuseClient(t, kind, addr)
				for i := range 10 {
					path, want := "/a", "a "
					if i%2 == 1 {
						path, want = "/b", "b "
					}
					if got := c.get(t, path); !strings.HasPrefix(got, want) {
						t.Fatalf("request %d %s answered by %q, want server %q", i, path, got, strings.TrimSpace(want))
					}
				}
			})
		}
	}
}

// TestH2ServerAnswersEarly: a server with proto h2 answers before it read
// the request body. The HTTP/1.1 client gets the answer and its
// connection is closed (the rest of its body is still on it), the HTTP/2
// client gets the answer on its stream and its connection stays usable;
// the next request is served in both cases.
func TestH2ServerAnswersEarly(t *testing.T) {
	up := h2cUpstream(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/early" {
			w.WriteHeader(http.StatusRequestEntityTooLarge)
			io.WriteString(w, "early")
			return
		}
		io.WriteString(w, "ok")
	}))
	body := strings.Repeat("x", 4<<20)
	for _, kind := range []string{"h1", "h2"} {
		t.Run(kind, func(t *testing.T) {
			cfg := h2Config([]string{up.Listener.Addr().String()}, "h2")
			if kind == "h1" {
				cfg.Frontends[0].BindOptions = nil
			}
			_, addr, logs := startLogged(t, cfg)
			if kind == "h1" {
				rc := dialRaw(t, addr)
				rc.c.SetDeadline(time.Now().Add(10 * time.Second))
				go io.WriteString(rc.c, fmt.Sprintf("POST /early HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s", len(body), body))
				resp, err := http.ReadResponse(rc.br, nil)
				if err != nil {
					t.Fatalf("response: %v", err)
				}
				if got := bodyOf(resp); resp.StatusCode != 413 || got != "early" {
					t.Errorf("got %d %q, want 413 \"early\"", resp.StatusCode, got)
				}
				if _, err := rc.br.ReadByte(); err == nil {
					t.Errorf("the connection carried more after the early answer, want it closed")
				}
				if got := newReuseClient(t, kind, addr).get(t, "/next"); got != "ok" {
					t.Errorf("next request: got %q, want \"ok\"", got)
				}
			} else {
				c := newReuseClient(t, kind, addr).(h2ReuseClient)
				req, _ := http.NewRequest("POST", "http://"+addr+"/early", strings.NewReader(body))
				resp, err := c.rt.RoundTrip(req)
				if err != nil {
					t.Fatalf("POST: %v", err)
				}
				if got := bodyOf(resp); resp.StatusCode != 413 || got != "early" {
					t.Errorf("got %d %q, want 413 \"early\"", resp.StatusCode, got)
				}
				resp.Body.Close()
				if got := c.get(t, "/next"); got != "ok" {
					t.Errorf("next request on the connection: got %q, want \"ok\"", got)
				}
			}
			waitFor(t, 5*time.Second, "2 log lines", func() bool { return len(logLines(t, logs)) == 2 })
			if l := logLines(t, logs)[0]; l["status"] != 413.0 || l["termination_state"] != "--" {
				t.Errorf("log: got %v, want status 413, flags --", l)
			}
		})
	}
}

// TestH2FlowControl: 3 MB each way, far beyond HTTP/2's 64 KB initial
// windows, through every translation: the server echoes the request body
// as it reads it, so both directions' flow control must move while the
// other is in flight.
func TestH2FlowControl(t *testing.T) {
	up := h2cUpstream(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ProtoMajor == 1 {
			// An HTTP/1.1 server may read and write at once only when
			// told so.
			http.NewResponseController(w).EnableFullDuplex()
		}
		io.Copy(w, r.Body)
	}))
	body := strings.Repeat("0123456789abcdef", 3<<16)
	for _, tc := range []struct{ client, server string }{{"h2", ""}, {"h2", "h2"}, {"h1", "h2"}} {
		t.Run(tc.client+" to "+map[string]string{"": "h1", "h2": "h2"}[tc.server], func(t *testing.T) {
			cfg := h2Config([]string{up.Listener.Addr().String()}, tc.server)
			var rt http.RoundTripper = h2cTransport()
			if tc.client == "h1" {
				cfg.Frontends[0].BindOptions = nil
				rt = &http.Transport{}
			}
			defer rt.(interface{ CloseIdleConnections() }).CloseIdleConnections()
			_, addr, _ := startLogged(t, cfg)
			req, _ := http.NewRequest("POST", "http://"+addr+"/echo", strings.NewReader(body))
			resp, err := rt.RoundTrip(req)
			if err != nil {
				t.Fatalf("POST: %v", err)
			}
			got, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil || resp.StatusCode != 200 || string(got) != body {
				t.Errorf("got %d, %d bytes (%v); want 200 and the %d bytes sent", resp.StatusCode, len(got), err, len(body))
			}
		})
	}
}

// TestH2ResponseRules: http_response rules run on every translation
// through HTTP/2 as on HTTP/1: del-header, set-header with the status,
// set-status, and a deny answered with its page.
func TestH2ResponseRules(t *testing.T) {
	up := h2cUpstream(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Secret", "s")
		w.Header().Set("X-Path", r.URL.Path)
		io.WriteString(w, "hello")
	}))
	for _, tc := range []struct{ client, server string }{{"h2", ""}, {"h2", "h2"}, {"h1", "h2"}} {
		t.Run(tc.client+" to "+map[string]string{"": "h1", "h2": "h2"}[tc.server], func(t *testing.T) {
			cfg := loadConfig(t, t.TempDir(), fmt.Sprintf(`
[[frontend]]
name = "www"
bind = [%q]
default_backend = "web"
[[backend]]
name = "web"
http_response = [
  "del-header X-Secret",
  "set-header X-Status %%[status]",
  "set-status 201 if { res.hdr(x-path) /created }",
  "deny deny_status 403 if { res.hdr(x-path) /deny }",
]
[[backend.server]]
name = "s1"
address = %q
proto = %q
`, reuseBind(tc.client), up.Listener.Addr().String(), tc.server))
			_, addr := startProxy(t, cfg)
			var rt http.RoundTripper = h2cTransport()
			if tc.client == "h1" {
				rt = &http.Transport{}
			}
			defer rt.(interface{ CloseIdleConnections() }).CloseIdleConnections()
			for _, want := range []struct {
				path   string
				status int
				body   string
			}{{"/plain", 200, "hello"}, {"/created", 201, "hello"}, {"/deny", 403, errorPage(403)}, {"/again", 200, "hello"}} {
				resp, err := rt.RoundTrip(mustReq(t, "http://"+addr+want.path))
				if err != nil {
					t.Fatalf("GET %s: %v", want.path, err)
				}
				body := bodyOf(resp)
				resp.Body.Close()
				if resp.StatusCode != want.status || body != want.body {
					t.Errorf("GET %s: got %d %q, want %d %q", want.path, resp.StatusCode, body, want.status, want.body)
				}
				if want.status == 403 {
					continue
				}
				if s, st := resp.Header.Get("X-Secret"), resp.Header.Get("X-Status"); s != "" || st != "200" {
					t.Errorf("GET %s: X-Secret %q, X-Status %q; want none and 200", want.path, s, st)
				}
			}
		})
	}
}

// TestH2ExpectContinueClientGone: an HTTP/1.1 client that leaves (a reset)
// while fulcrum answers its "Expect: 100-continue" for a request to a
// server with proto h2 gives back the stream it had reserved on the
// server's shared connection: the pool counts no stream once it ended, and
// the next request is served on the same connection.
func TestH2ExpectContinueClientGone(t *testing.T) {
	srv, conns := connServer(t, "s1")
	cfg := testConfig(conf.ModeHTTP, []string{srv}, nil)
	cfg.Backends[0].HTTPReuse = "always"
	cfg.Backends[0].Servers[0].Proto = "h2"
	p, addr := startProxy(t, cfg)
	pool := p.Backends[0].Servers()[0].up.H2
	first := rawReuseClient{dialRaw(t, addr)}.get(t, "/warm")
	for range 3 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Write([]byte("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n")); err != nil {
			t.Fatal(err)
		}
		c.(*net.TCPConn).SetLinger(0)
		c.Close() // a reset: the 100 Continue fails
	}
	waitFor(t, 5*time.Second, "the three requests ended", func() bool {
		return p.Frontends[0].Counters.Stot.Load() == 4
	})
	waitFor(t, 5*time.Second, "the pool's streams ended", func() bool { return pool.Streams() == 0 })
	after := rawReuseClient{dialRaw(t, addr)}.get(t, "/after")
	if after != first {
		t.Errorf("the next request came on %q, want the first connection %q", after, first)
	}
	if n := conns.Load(); n != 1 {
		t.Errorf("server connections: got %d, want 1", n)
	}
}
