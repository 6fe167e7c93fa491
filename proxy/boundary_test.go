package proxy

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fulcrum-proxy/fulcrum/conf"
	"github.com/fulcrum-proxy/fulcrum/internal/testutil"
	"github.com/fulcrum-proxy/fulcrum/proxy/http1"
)

// Issue 16: no byte crosses a boundary. These tests send the exact bytes
// of each reported shape through the real proxy to upstreams that frame
// strictly (Go's net/http server, or a raw script), and check what each
// upstream framed and what each client received.

// recorder is an upstream that frames requests strictly (net/http) and
// records every request it framed: method, target and body.
type recorder struct {
	*upstream
	mu   sync.Mutex
	seen []string
}

func newRecorder(t *testing.T, name string) *recorder {
	r := &recorder{}
	r.upstream = newUpstream(t, name)
	r.upstream.handler = func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		r.seen = append(r.seen, req.Method+" "+req.RequestURI+" "+string(body))
		n := len(r.seen)
		r.mu.Unlock()
		fmt.Fprintf(w, "%s %s #%d\n", name, req.URL.Path, n)
	}
	return r
}

func (r *recorder) requests() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.seen...)
}

// boundaryConfig is one frontend denying /admin, as the issue's example,
// in front of one backend with http_reuse always over addrs.
func boundaryConfig(t *testing.T, extra string, addrs ...string) *conf.Config {
	t.Helper()
	servers := ""
	for i, a := range addrs {
		servers += fmt.Sprintf("[[backend.server]]\nname = \"s%d\"\naddress = %q\n", i+1, a)
	}
	return loadConfig(t, t.TempDir(), fmt.Sprintf(`
%s
[defaults]
timeout_http_request = "10s"
timeout_client = "10s"
timeout_server = "10s"

[[frontend]]
name = "www"
bind = ["127.0.0.1:0"]
default_backend = "web"
http_request = ["deny if { path_beg /admin }"]

[[backend]]
name = "web"
http_reuse = "always"
%s`, extra, servers))
}

// Point 1: a field the Connection field lists is never a framing or
// routing field. Before the fix, Content-Length and Transfer-Encoding
// were dropped as hop-by-hop while the body was still forwarded, so the
// server read the body as a second request (GET /admin past the deny
// rule); Host was dropped after routing used it.
func TestIssue16ConnectionListsFramingFields(t *testing.T) {
	smuggled := "GET /admin HTTP/1.1\r\nHost: x\r\n\r\n"
	chunk := fmt.Sprintf("%x\r\n%s\r\n0\r\n\r\n", len(smuggled), smuggled)
	for _, tc := range []struct {
		name, raw, want string
	}{
		{"content-length",
			fmt.Sprintf("POST / HTTP/1.1\r\nHost: x\r\nConnection: Content-Length\r\nContent-Length: %d\r\n\r\n%s", len(smuggled), smuggled),
			"POST / " + smuggled},
		{"transfer-encoding",
			"POST / HTTP/1.1\r\nHost: x\r\nConnection: keep-alive, Transfer-Encoding\r\nTransfer-Encoding: chunked\r\n\r\n" + chunk,
			"POST / " + smuggled},
		{"host", "GET /h HTTP/1.1\r\nHost: x\r\nConnection: Host\r\n\r\n", "GET /h "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := newRecorder(t, "s1")
			_, addr := startProxy(t, boundaryConfig(t, "", rec.addr()))
			resp := dialRaw(t, addr).do(t, tc.raw)
			if resp.StatusCode != 200 {
				t.Fatalf("status %d, want 200", resp.StatusCode)
			}
			// Another client on the pooled server connection gets its
			// own response, not the smuggled request's.
			if got := bodyOf(dialRaw(t, addr).do(t, "GET /next HTTP/1.1\r\nHost: x\r\n\r\n")); !strings.HasPrefix(got, "s1 /next ") {
				t.Errorf("next client got %q, want its own /next response", got)
			}
			seen := rec.requests()
			if len(seen) != 2 || seen[0] != tc.want || !strings.HasPrefix(seen[1], "GET /next") {
				t.Errorf("upstream framed %q, want [%q, GET /next]", seen, tc.want)
			}
		})
	}
}

// Point 1, responses: a response whose Connection lists Content-Length
// reached the client without its length on a kept-alive connection.
func TestIssue16ResponseConnectionListsContentLength(t *testing.T) {
	up := faultServer(t, func(c *net.TCPConn, req *http.Request) {
		io.WriteString(c, "HTTP/1.1 200 OK\r\nConnection: Content-Length, X-Drop\r\nX-Drop: 1\r\nContent-Length: 5\r\n\r\nhello")
		bufio.NewReader(c).ReadByte()
	})
	_, addr := startProxy(t, testConfig(conf.ModeHTTP, []string{up}, nil))
	rc := dialRaw(t, addr)
	resp := rc.do(t, "GET /x HTTP/1.1\r\nHost: x\r\n\r\n")
	if resp.ContentLength != 5 || bodyOf(resp) != "hello" || resp.Header.Get("X-Drop") != "" {
		t.Fatalf("got length %d, X-Drop %q; want 5 and the listed field dropped", resp.ContentLength, resp.Header.Get("X-Drop"))
	}
	// The client connection is still usable: its next response is framed.
	if resp := rc.do(t, "GET /ok HTTP/1.1\r\nHost: x\r\n\r\n"); bodyOf(resp) != "ok\n" {
		t.Errorf("next response on the connection: %q", bodyOf(resp))
	}
}

// Point 1: at most tune_http_maxhdr lines per head, the start line
// included (HAProxy's default 101): a request with more gets 400, a
// response 502.
func TestIssue16MaxHdr(t *testing.T) {
	fields := func(n int) string { return strings.Repeat("X-A: b\r\n", n) }
	up := faultServer(t, func(c *net.TCPConn, req *http.Request) {
		io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n"+fields(100)+"\r\n")
	})
	_, addr := startProxy(t, testConfig(conf.ModeHTTP, []string{up}, nil))
	// Host and 99 more fields: 101 lines.
	if resp := dialRaw(t, addr).do(t, "GET /ok HTTP/1.1\r\nHost: x\r\n"+fields(99)+"\r\n"); resp.StatusCode != 200 {
		t.Errorf("101 lines: status %d, want 200", resp.StatusCode)
	}
	if resp := dialRaw(t, addr).do(t, "GET /ok HTTP/1.1\r\nHost: x\r\n"+fields(100)+"\r\n"); resp.StatusCode != 400 {
		t.Errorf("102 lines: status %d, want 400", resp.StatusCode)
	}
	if resp := dialRaw(t, addr).do(t, "GET /many HTTP/1.1\r\nHost: x\r\n\r\n"); resp.StatusCode != 502 {
		t.Errorf("response of 102 lines: status %d, want 502", resp.StatusCode)
	}

	cfg := boundaryConfig(t, "[global]\ntune_http_maxhdr = 5", newUpstream(t, "s1").addr())
	_, addr = startProxy(t, cfg)
	if resp := dialRaw(t, addr).do(t, "GET / HTTP/1.1\r\nHost: x\r\n"+fields(3)+"\r\n"); resp.StatusCode != 200 {
		t.Errorf("tune_http_maxhdr 5, 5 lines: status %d, want 200", resp.StatusCode)
	}
	if resp := dialRaw(t, addr).do(t, "GET / HTTP/1.1\r\nHost: x\r\n"+fields(4)+"\r\n"); resp.StatusCode != 400 {
		t.Errorf("tune_http_maxhdr 5, 6 lines: status %d, want 400", resp.StatusCode)
	}
}

// Point 2 end to end: the issue's request, whose chunk is 1 byte for a
// strict parser but was a 5-byte one for fulcrum and 261 for nginx, gets
// 400 and its hidden request never reaches the server.
func TestIssue16ChunkCRLFChecked(t *testing.T) {
	rec := newRecorder(t, "s1")
	_, addr := startProxy(t, boundaryConfig(t, "", rec.addr()))
	hidden := "GET /admin HTTP/1.1\r\nHost: x\r\n\r\n"
	raw := "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nA\n105\r\n" +
		strings.Repeat("B", 0x105-len(hidden)-2) + "\r\n" + hidden + "0\r\n\r\n"
	if resp := dialRaw(t, addr).do(t, raw); resp.StatusCode != 400 {
		t.Errorf("status %d, want 400", resp.StatusCode)
	}
	dialRaw(t, addr).do(t, "GET /next HTTP/1.1\r\nHost: x\r\n\r\n")
	for _, r := range rec.requests() {
		if strings.Contains(r, "/admin") {
			t.Errorf("the hidden request reached the server: %q", rec.requests())
		}
	}
}

// Point 2, responses: a server's broken chunked framing never reaches the
// client: 502 (PH) while nothing was sent, else the exchange is cut (SD),
// eresp counted either way.
func TestIssue16ResponseBadChunk(t *testing.T) {
	for _, tc := range []struct{ name, resp string }{
		{"bad size", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n+5\r\nhello\r\n0\r\n\r\n"},
		{"bad trailer", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\r\n\r\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			up := faultServer(t, func(c *net.TCPConn, req *http.Request) {
				io.WriteString(c, tc.resp)
				bufio.NewReader(c).ReadByte()
			})
			p, addr := startProxy(t, testConfig(conf.ModeHTTP, []string{up}, nil))
			if resp := dialRaw(t, addr).do(t, "GET /x HTTP/1.1\r\nHost: x\r\n\r\n"); resp.StatusCode != 502 {
				t.Errorf("status %d, want 502", resp.StatusCode)
			}
			waitFor(t, 2*time.Second, "eresp", func() bool { return p.Snapshot().Backends[0].Eresp == 1 })
			wantServed(t, addr)
		})
	}
	t.Run("after a relayed chunk", func(t *testing.T) {
		cont := make(chan struct{})
		up := faultServer(t, func(c *net.TCPConn, req *http.Request) {
			io.WriteString(c, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n")
			<-cont
			io.WriteString(c, "1\r\nxYY0\r\n\r\n")
			bufio.NewReader(c).ReadByte()
		})
		p, addr := startProxy(t, testConfig(conf.ModeHTTP, []string{up}, nil))
		rc := dialRaw(t, addr)
		rc.c.SetDeadline(time.Now().Add(10 * time.Second))
		io.WriteString(rc.c, "GET /x HTTP/1.1\r\nHost: x\r\n\r\n")
		var got []byte
		for !strings.HasSuffix(string(got), "hello\r\n") {
			b, err := rc.br.ReadByte()
			if err != nil {
				t.Fatalf("read %q: %v", got, err)
			}
			got = append(got, b)
		}
		close(cont)
		rest, _ := io.ReadAll(rc.br)
		if !strings.HasPrefix(string(got), "HTTP/1.1 200 OK") || strings.Contains(string(rest), "YY") {
			t.Errorf("client got %q then %q; want the first chunk, then a cut before the broken one", got, rest)
		}
		waitFor(t, 2*time.Second, "eresp", func() bool { return p.Snapshot().Backends[0].Eresp == 1 })
	})
}

// Point 3: a server connection goes back to the pool only when it stands
// exactly at the end of a response. Before the fix, what a server sent
// past its response (a second response, a body after 204/304 or to HEAD)
// was read by the next request on the connection: another client's.
func TestIssue16StaleBytesNeverReachNextClient(t *testing.T) {
	evil := "HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nEVIL"
	for _, tc := range []struct{ name, method, resp string }{
		{"second response", "GET", "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok" + evil},
		{"body after 204", "GET", "HTTP/1.1 204 No Content\r\n\r\n" + evil},
		{"body after 304", "GET", "HTTP/1.1 304 Not Modified\r\nContent-Length: 9\r\n\r\n" + evil},
		{"body to HEAD", "HEAD", "HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nBODY" + evil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			up := faultServer(t, func(c *net.TCPConn, req *http.Request) {
				io.WriteString(c, tc.resp)
				bufio.NewReader(c).ReadByte() // keep the connection open
			})
			cfg := testConfig(conf.ModeHTTP, []string{up}, nil)
			cfg.Backends[0].HTTPReuse = "always"
			_, addr := startProxy(t, cfg)
			dialRaw(t, addr).do(t, tc.method+" /x HTTP/1.1\r\nHost: x\r\n\r\n")
			for range 3 {
				if got := bodyOf(dialRaw(t, addr).do(t, "GET /ok HTTP/1.1\r\nHost: x\r\n\r\n")); got != "ok\n" {
					t.Fatalf("next client got %q, want its own ok", got)
				}
			}
		})
	}
}

// Point 3: bytes a server sends after its connection went idle in the
// pool, or its close, make the connection unusable: the next request
// gets another one, and the sweeper releases it (no CLOSE_WAIT kept).
func TestIssue16LateBytesAndClosesLeaveThePool(t *testing.T) {
	for _, tc := range []struct {
		name  string
		after func(c *net.TCPConn)
	}{
		{"late bytes", func(c *net.TCPConn) {
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nEVIL")
			bufio.NewReader(c).ReadByte()
		}},
		{"close", func(c *net.TCPConn) { c.Close() }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			idle := make(chan *net.TCPConn, 1)
			up := tcpServer(t, func(c *net.TCPConn) {
				br := bufio.NewReader(c)
				for {
					req, err := http.ReadRequest(br)
					if err != nil {
						return
					}
					io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nok\n")
					if req.URL.Path == "/first" {
						idle <- c
						return
					}
				}
			})
			cfg := testConfig(conf.ModeHTTP, []string{up}, nil)
			cfg.Backends[0].HTTPReuse = "always"
			p, addr := startProxy(t, cfg)
			srv := p.Backends[0].Servers()[0]
			dialRaw(t, addr).do(t, "GET /first HTTP/1.1\r\nHost: x\r\n\r\n")
			c := <-idle
			waitFor(t, 2*time.Second, "a pooled connection", func() bool { return srv.up.Pool.Len() == 1 })
			go tc.after(c)
			waitFor(t, 2*time.Second, "the sweeper to release it", func() bool { return srv.up.Pool.Len() == 0 })
			if got := bodyOf(dialRaw(t, addr).do(t, "GET /ok HTTP/1.1\r\nHost: x\r\n\r\n")); got != "ok\n" {
				t.Errorf("next client got %q, want ok", got)
			}
		})
	}
}

// Point 3: a 101 to a request that did not ask to upgrade is an invalid
// response (502, PH), never a blind tunnel.
func TestIssue16Unrequested101(t *testing.T) {
	up := faultServer(t, func(c *net.TCPConn, req *http.Request) {
		io.WriteString(c, "HTTP/1.1 101 Switching Protocols\r\nConnection: upgrade\r\nUpgrade: x\r\n\r\nRAW")
		bufio.NewReader(c).ReadByte()
	})
	p, addr := startProxy(t, testConfig(conf.ModeHTTP, []string{up}, nil))
	if resp := dialRaw(t, addr).do(t, "GET /x HTTP/1.1\r\nHost: x\r\n\r\n"); resp.StatusCode != 502 {
		t.Errorf("status %d, want 502", resp.StatusCode)
	}
	waitFor(t, 2*time.Second, "eresp", func() bool { return p.Snapshot().Backends[0].Eresp == 1 })
}

// Point 4: under http_reuse never, a keep-alive client alternating
// between two backends always reaches the right backend's server. Before
// the fix, the connection kept for backend A's server was put into
// backend B's server's pool, and B's next request was served by A.
func TestIssue16ReuseNeverKeepsPoolsApart(t *testing.T) {
	a, b := newUpstream(t, "a"), newUpstream(t, "b")
	for _, reuseB := range []string{"never", "safe", "always"} {
		t.Run("b "+reuseB, func(t *testing.T) {
			cfg := loadConfig(t, t.TempDir(), fmt.Sprintf(`
[[frontend]]
name = "www"
bind = ["127.0.0.1:0"]
default_backend = "a"
use_backend = [{ backend = "b", if = "{ path_beg /b }" }]

[[backend]]
name = "a"
http_reuse = "never"
[[backend.server]]
name = "sa"
address = %q

[[backend]]
name = "b"
http_reuse = %q
[[backend.server]]
name = "sb"
address = %q
`, a.addr(), reuseB, b.addr()))
			_, addr := startProxy(t, cfg)
			rc := dialRaw(t, addr)
			for i := range 10 {
				path, want := "/a", "a\n"
				if i%2 == 1 {
					path, want = "/b", "b\n"
				}
				if got := bodyOf(rc.do(t, "GET "+path+" HTTP/1.1\r\nHost: x\r\n\r\n")); got != want {
					t.Fatalf("request %d %s answered by %q, want %q", i, path, got, want)
				}
			}
		})
	}
}

// Point 6: request lines HAProxy 2.6 refuses get an immediate 400, not a
// 408 once timeout_http_request (10 s here) has passed.
func TestIssue16RequestLineStrictness(t *testing.T) {
	rec := newRecorder(t, "s1")
	_, addr := startProxy(t, boundaryConfig(t, "", rec.addr()))
	for _, raw := range []string{
		"GET /a#b HTTP/1.1\r\nHost: x\r\n\r\n",
		"GET /\xc3\xa9 HTTP/1.1\r\nHost: x\r\n\r\n",
		"GET /\x80 HTTP/1.1\r\nHost: x\r\n\r\n",
		"GET http://x?q HTTP/1.1\r\nHost: x\r\n\r\n",
		"GET /\r\n",
		"GET /\r\nHost: x\r\n",
		"GET / HTTP/0.9\r\n",
		"GET / HTTP/2.0\r\nHost: x\r\n\r\n",
	} {
		rc := dialRaw(t, addr)
		rc.c.SetDeadline(time.Now().Add(5 * time.Second))
		io.WriteString(rc.c, raw)
		resp, err := http.ReadResponse(rc.br, nil)
		if err != nil || resp.StatusCode != 400 {
			t.Errorf("%q: got %v, %v; want an immediate 400", raw, resp, err)
		}
	}
	for _, raw := range []string{
		"GET http://x HTTP/1.1\r\nHost: x\r\n\r\n",
		"GET http://x/?q HTTP/1.1\r\nHost: x\r\n\r\n",
		"GET /?a=%C3%A9 HTTP/1.1\r\nHost: x\r\n\r\n",
	} {
		if resp := dialRaw(t, addr).do(t, raw); resp.StatusCode != 200 {
			t.Errorf("%q: status %d, want 200", raw, resp.StatusCode)
		}
	}
	if n := len(rec.requests()); n != 3 {
		t.Errorf("upstream saw %d requests, want the 3 valid ones", n)
	}
}

// The sweeper checks pooled connections while requests take and return
// them: it must look at the socket only (the race detector caught it
// reading a reader its taker was filling), and give back the buffers of
// those still pooled only.
func TestPoolSweepRacesRequests(t *testing.T) {
	u := newUpstream(t, "s1")
	cfg := testConfig(conf.ModeHTTP, []string{u.addr()}, nil)
	cfg.Backends[0].HTTPReuse = "always"
	p, addr := startProxy(t, cfg)
	srv := p.Backends[0].Servers()[0]
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-done:
				return
			default:
				srv.up.Pool.Sweep(time.Now())
				srv.up.Pool.Sweep(time.Now().Add(http1.DryAfter)) // gives back the buffers of every idle one
			}
		}
	}()
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Error(err)
				return
			}
			defer c.Close()
			br := bufio.NewReader(c)
			for range 200 {
				io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
				resp, err := http.ReadResponse(br, nil)
				if err != nil {
					t.Error(err)
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		}()
	}
	// Wait for the clients (the sweeper goroutine is the first Add).
	for srv.Counters.Stot.Load() < 800 {
		time.Sleep(time.Millisecond)
		if t.Failed() {
			break
		}
	}
	close(done)
	wg.Wait()
}

// An idle pooled server connection gives its buffers back after
// DryAfter, and serves the next request with new ones.
func TestPoolDriesIdle(t *testing.T) {
	u := newUpstream(t, "s1")
	cfg := testConfig(conf.ModeHTTP, []string{u.addr()}, nil)
	cfg.Backends[0].HTTPReuse = "always"
	p, addr := startProxy(t, cfg)
	srv := p.Backends[0].Servers()[0]
	get := func() {
		t.Helper()
		if resp := dialRaw(t, addr).do(t, "GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"); resp.StatusCode != 200 {
			t.Fatalf("status %d, want 200", resp.StatusCode)
		}
	}
	get()
	testutil.WaitFor(t, 5*time.Second, "the server connection to be pooled", func() bool { return srv.up.Pool.Len() == 1 })
	buffers := func() (n int) {
		srv.up.Pool.Each(func(br *bufio.Reader, bw *bufio.Writer) {
			if br != nil {
				n++
			}
			if bw != nil {
				n++
			}
		})
		return n
	}
	srv.up.Pool.Sweep(time.Now())
	if n := buffers(); n != 2 {
		t.Fatalf("a connection pooled just now holds %d buffers, want 2", n)
	}
	srv.up.Pool.Sweep(time.Now().Add(http1.DryAfter))
	if n := buffers(); n != 0 {
		t.Fatalf("a connection idle for DryAfter holds %d buffers, want 0", n)
	}
	get()
	get()
	if n := u.conns.Load(); n != 1 {
		t.Errorf("the upstream saw %d connections, want 1 (the dried one reused)", n)
	}
}
