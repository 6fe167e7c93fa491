package proxy

import (
	"bufio"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fulcrum-proxy/fulcrum/internal/testcert"
	"github.com/fulcrum-proxy/fulcrum/internal/testutil"
)

// alpnUpstream is a real HTTPS server (Go's) selecting protos by ALPN
// (none at all when protos is empty; Go's HTTP/2 server when they hold
// h2). It answers "proto=PROTO alpn=ALPN sni=NAME" on /, echoes the body
// of /echo ("proto=PROTO body=BODY"), answers /grpc as a gRPC server does
// (a body, then the trailers grpc-status and grpc-message), holds /block
// until blockN requests are in it at once (or 10s passed), and switches
// /ws to an echo tunnel (HTTP/1.1 only). It counts its connections.
type alpnUpstream struct {
	*httptest.Server
	conns  atomic.Int64
	blockN int
	mu     sync.Mutex
	in     int           // requests in /block
	all    chan struct{} // closed when blockN were in /block at once
}

func newALPNUpstream(t *testing.T, cert tls.Certificate, blockN int, protos ...string) *alpnUpstream {
	t.Helper()
	u := &alpnUpstream{blockN: blockN, all: make(chan struct{})}
	u.Server = httptest.NewUnstartedServer(http.HandlerFunc(u.serve))
	u.EnableHTTP2 = true
	u.TLS = &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: append([]string{}, protos...)}
	startTLSCounted(t, u.Server, &u.conns)
	return u
}

func (u *alpnUpstream) addr() string { return u.Listener.Addr().String() }

func (u *alpnUpstream) serve(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/echo":
		b, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), 500)
			return
		}
		fmt.Fprintf(w, "proto=%s body=%s", r.Proto, b)
	case "/grpc":
		w.Header().Set("Content-Type", "application/grpc")
		w.Header().Set("Trailer", "Grpc-Status, Grpc-Message")
		fmt.Fprintf(w, "proto=%s", r.Proto)
		w.Header().Set("Grpc-Status", "7")
		w.Header().Set("Grpc-Message", "denied")
	case "/block":
		u.mu.Lock()
		u.in++
		if u.in == u.blockN {
			close(u.all)
		}
		u.mu.Unlock()
		select {
		case <-u.all:
		case <-time.After(10 * time.Second):
		}
		fmt.Fprintf(w, "proto=%s", r.Proto)
	case "/ws":
		if r.Header.Get("Upgrade") != "websocket" || r.ProtoMajor != 1 {
			http.Error(w, "no upgrade in "+r.Proto, 400)
			return
		}
		c, brw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		defer c.Close()
		fmt.Fprintf(brw, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nX-ALPN: %s\r\n\r\n",
			c.(*tls.Conn).ConnectionState().NegotiatedProtocol)
		brw.Flush()
		io.Copy(c, brw)
	default:
		fmt.Fprintf(w, "proto=%s alpn=%s sni=%s", r.Proto, r.TLS.NegotiatedProtocol, r.TLS.ServerName)
	}
}

// alpnAutoConfig is one backend of three servers with ssl and alpn
// "h2,http/1.1" but no proto, chosen by the cookie SRV: h2 (its ALPN
// selects h2), h1 (http/1.1) and none (it selects no ALPN), each with the
// SNI of the request's Host.
const alpnAutoConfig = `
[defaults]
retries = 0
timeout_connect = "2s"
[[frontend]]
name = "www"
bind = ["127.0.0.1:0", "127.0.0.1:0 proto h2"]
default_backend = "web"
[[backend]]
name = "web"
http_reuse = "always"
cookie = { name = "SRV", mode = "insert", indirect = true }
[backend.default_server]
pool_purge_delay = "1m" # no idle connection closes while the test counts
[[backend.server]]
name = "h2"
address = "%[1]s"
cookie = "h2"
ssl = true
alpn = "h2,http/1.1"
ca_file = "ca.pem"
sni = "req.hdr(host)"
[[backend.server]]
name = "h1"
address = "%[2]s"
cookie = "h1"
ssl = true
alpn = "h2,http/1.1"
verify = "none"
sni = "req.hdr(host)"
[[backend.server]]
name = "none"
address = "%[3]s"
cookie = "none"
ssl = true
alpn = "h2,http/1.1"
verify = "none"
sni = "req.hdr(host)"
`

// TestServerALPNAuto: a server with ssl and alpn "h2,http/1.1" without
// proto speaks on each connection what its TLS handshake selected, as
// HAProxy 2.6 picks the mux by ALPN: HTTP/2 to the server selecting h2,
// HTTP/1.1 to the one selecting http/1.1 and to the one selecting none.
// HTTP/1.1 and HTTP/2 clients alike; its h2 connection is shared by
// concurrent requests (one connection per SNI value, counted at the
// server), carries request bodies and a gRPC-style trailer response; the
// HTTP/1.1 connections are pooled and reused by both kinds of clients
// (one connection each); a WebSocket upgrade to the h2 server goes in
// HTTP/1.1 (ALPN offering http/1.1 only, HAProxy's "ws auto"). Counters
// and access log lines are those of any request.
func TestServerALPNAuto(t *testing.T) {
	const concurrent = 8
	e := newTLSEnv(t)
	both := e.ca.Server(t, testcert.Options{}, "a.test", "b.test")
	h2up := newALPNUpstream(t, both.TLS(), concurrent, "h2", "http/1.1")
	h1up := newALPNUpstream(t, both.TLS(), 0, "http/1.1")
	noneup := newALPNUpstream(t, both.TLS(), 0)
	logs := &testutil.SyncBuffer{}
	p := e.start(t, fmt.Sprintf(alpnAutoConfig, h2up.addr(), h1up.addr(), noneup.addr()), logs)
	addrs := p.Frontends[0].Addrs()
	plain, prior := addrs[0].String(), addrs[1].String()
	web := p.Backend("web")
	srv := map[string]*Server{}
	for _, s := range web.Servers() {
		srv[s.Name] = s
		if !s.up.ByALPN || s.up.H2 == nil {
			t.Fatalf("%s: by ALPN %v, h2 pool %v", s.Name, s.up.ByALPN, s.up.H2 != nil)
		}
	}

	// HTTP/1.1 clients, each request on a new client connection.
	do := func(method, host, server, path, body string) (int, http.Header, string) {
		t.Helper()
		c, err := net.Dial("tcp", plain)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(15 * time.Second))
		fmt.Fprintf(c, "%s %s HTTP/1.1\r\nHost: %s\r\nCookie: SRV=%s\r\nContent-Length: %d\r\n\r\n%s", method, path, host, server, len(body), body)
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatalf("%s %s to %s: %v", method, path, server, err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatalf("%s %s to %s: body: %v", method, path, server, err)
		}
		return resp.StatusCode, resp.Trailer, string(b)
	}
	// An HTTP/1.1 connection goes back to its pool once the response went
	// out: settle waits for it, so that the next request can find it.
	settle := func(server string, idle int) {
		t.Helper()
		if server != "h2" {
			waitFor(t, 5*time.Second, server+"'s connection back in the pool", func() bool { return srv[server].up.Pool.Len() == idle })
		}
	}
	for i, host := range []string{"a.test", "a.test", "b.test"} {
		for _, c := range []struct{ server, want string }{
			{"h2", "proto=HTTP/2.0 alpn=h2 sni=" + host},
			{"h1", "proto=HTTP/1.1 alpn=http/1.1 sni=" + host},
			{"none", "proto=HTTP/1.1 alpn= sni=" + host},
		} {
			if code, _, body := do("GET", host, c.server, "/", ""); code != 200 || body != c.want {
				t.Fatalf("HTTP/1.1 client to %s, Host %s: got %d %q, want 200 %q", c.server, host, code, body, c.want)
			}
			settle(c.server, 1+i/2)
		}
	}
	for server, want := range map[string]string{"h2": "proto=HTTP/2.0 body=hello", "h1": "proto=HTTP/1.1 body=hello"} {
		if code, _, body := do("POST", "a.test", server, "/echo", "hello"); code != 200 || body != want {
			t.Errorf("POST to %s: got %d %q, want 200 %q", server, code, body, want)
		}
		settle(server, 2)
	}
	// The trailers of the HTTP/2 response travel in the chunked trailer
	// section.
	if code, tr, body := do("GET", "a.test", "h2", "/grpc", ""); code != 200 || body != "proto=HTTP/2.0" ||
		tr.Get("Grpc-Status") != "7" || tr.Get("Grpc-Message") != "denied" {
		t.Errorf("gRPC-style response from h2: got %d %q trailers %v", code, body, tr)
	}

	// Concurrent requests, each from its own client connection, all in the
	// server at once: streams of the one a.test connection.
	var wg sync.WaitGroup
	results := make([]string, concurrent)
	for i := range concurrent {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := net.Dial("tcp", plain)
			if err != nil {
				results[i] = err.Error()
				return
			}
			defer c.Close()
			c.SetDeadline(time.Now().Add(15 * time.Second))
			fmt.Fprintf(c, "GET /block HTTP/1.1\r\nHost: a.test\r\nCookie: SRV=h2\r\n\r\n")
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil {
				results[i] = err.Error()
				return
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			results[i] = fmt.Sprint(resp.StatusCode, " ", string(b))
		}()
	}
	wg.Wait()
	for i, r := range results {
		if r != "200 proto=HTTP/2.0" {
			t.Errorf("concurrent request %d: %s", i, r)
		}
	}

	// HTTP/2 clients: a new connection for each request as well.
	h2get := func(server, path string) (*http.Response, string) {
		t.Helper()
		tr := h2cTransport()
		defer tr.CloseIdleConnections()
		req := mustReq(t, "http://"+prior+path)
		req.Host = "a.test"
		req.Header.Set("Cookie", "SRV="+server)
		resp, err := tr.RoundTrip(req)
		if err != nil {
			t.Fatalf("HTTP/2 client to %s: %v", server, err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatalf("HTTP/2 client to %s: body: %v", server, err)
		}
		return resp, string(b)
	}
	for _, c := range []struct{ server, want string }{
		{"h2", "proto=HTTP/2.0 alpn=h2 sni=a.test"},
		{"h1", "proto=HTTP/1.1 alpn=http/1.1 sni=a.test"},
		{"none", "proto=HTTP/1.1 alpn= sni=a.test"},
	} {
		if resp, body := h2get(c.server, "/"); resp.StatusCode != 200 || body != c.want {
			t.Errorf("HTTP/2 client to %s: got %d %q, want 200 %q", c.server, resp.StatusCode, body, c.want)
		}
		settle(c.server, 2)
	}
	if resp, body := h2get("h2", "/grpc"); resp.StatusCode != 200 || body != "proto=HTTP/2.0" ||
		resp.Trailer.Get("Grpc-Status") != "7" || resp.Trailer.Get("Grpc-Message") != "denied" {
		t.Errorf("HTTP/2 client, gRPC-style response from h2: got %d %q trailers %v", resp.StatusCode, body, resp.Trailer)
	}

	// A WebSocket upgrade to h2 goes in HTTP/1.1, on a connection whose
	// ALPN offered http/1.1 only.
	func() {
		c, err := net.Dial("tcp", plain)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(15 * time.Second))
		fmt.Fprintf(c, "GET /ws HTTP/1.1\r\nHost: a.test\r\nCookie: SRV=h2\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n")
		br := bufio.NewReader(c)
		resp, err := http.ReadResponse(br, nil)
		if err != nil || resp.StatusCode != 101 || resp.Header.Get("X-ALPN") != "http/1.1" {
			t.Fatalf("WebSocket upgrade to h2: got %v, %v; want 101 with X-ALPN http/1.1", resp, err)
		}
		c.Write([]byte("ping"))
		buf := make([]byte, 4)
		if _, err := io.ReadFull(br, buf); err != nil || string(buf) != "ping" {
			t.Errorf("tunnel echo: got %q %v", buf, err)
		}
	}()

	// The h2 server saw one HTTP/2 connection per SNI value, whichever
	// client sent the streams, and the WebSocket's; the others one
	// connection each per SNI value, reused by every request.
	for _, c := range []struct {
		u    *alpnUpstream
		name string
		want int64
	}{{h2up, "h2", 3}, {h1up, "h1", 2}, {noneup, "none", 2}} {
		if got := c.u.conns.Load(); got != c.want {
			t.Errorf("server %s saw %d connections, want %d", c.name, got, c.want)
		}
	}
	if got := srv["h2"].up.H2.Len(); got != 2 {
		t.Errorf("h2: %d HTTP/2 connections pooled, want 2", got)
	}
	for _, name := range []string{"h1", "none"} {
		if got := srv[name].up.H2.Len(); got != 0 {
			t.Errorf("%s: %d HTTP/2 connections pooled, want 0", name, got)
		}
		if safe, unsafe := srv[name].up.Pool.Idle(); safe+unsafe != 2 {
			t.Errorf("%s: %d+%d idle HTTP/1.1 connections, want 2", name, safe, unsafe)
		}
	}

	// Counters and log lines: each request counted on its server, logged
	// as any request (version, server, status, termination state).
	wantReqs := map[string]int64{"h2": 3 + 1 + 1 + concurrent + 2 + 1, "h1": 3 + 1 + 1, "none": 3 + 1}
	for name, want := range wantReqs {
		if got := srv[name].Counters.Stot.Load(); got != want {
			t.Errorf("%s: stot %d, want %d", name, got, want)
		}
	}
	// The HTTP/2 connections and frames are counted as a proto h2
	// server's (h2_total_connections, h2_headers_rcvd: a response head per
	// stream, and the trailers of the two gRPC-style responses).
	if c, h := web.H2.TotalConns.Load(), web.H2.HeadersRcvd.Load(); c != 2 || h != 3+1+1+concurrent+2+2 {
		t.Errorf("backend h2 counters: %d connections, %d HEADERS; want 2, %d", c, h, 3+1+1+concurrent+2+2)
	}
	// One stream per request sent in HTTP/2 (all but the WebSocket's),
	// none left open.
	waitFor(t, 5*time.Second, "the backend's HTTP/2 streams to end", func() bool { return web.H2.OpenStreams.Load() == 0 })
	if n := web.H2.TotalStreams.Load(); n != 3+1+1+concurrent+2 {
		t.Errorf("h2_backend_total_streams %d, want %d", n, 3+1+1+concurrent+2)
	}
	total := int(wantReqs["h2"] + wantReqs["h1"] + wantReqs["none"])
	var access []string
	waitFor(t, 5*time.Second, "the access log lines", func() bool {
		access = access[:0]
		for _, l := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
			if strings.Contains(l, `"termination_state"`) {
				access = append(access, l)
			}
		}
		return len(access) >= total
	})
	for _, c := range []struct {
		re string
		n  int
	}{
		{`"backend":"web","server":"h2","status":200,.*"termination_state":"--".*"request":"[A-Z]+ /[a-z]* HTTP/1.1"`, 3 + 1 + 1 + concurrent},
		{`"backend":"web","server":"h2","status":200,.*"termination_state":"--".*"request":"GET /[a-z]* HTTP/2.0"`, 2},
		{`"backend":"web","server":"h2","status":101,`, 1},
		{`"backend":"web","server":"h1","status":200,.*"termination_state":"--"`, 5},
		{`"backend":"web","server":"none","status":200,.*"termination_state":"--"`, 4},
		{`"server":"h2",.*"grpc_status":"7"`, 2},
	} {
		n := 0
		for _, l := range access {
			if regexp.MustCompile(c.re).MatchString(l) {
				n++
			}
		}
		if n != c.n {
			t.Errorf("%d access lines match /%s/, want %d:\n%s", n, c.re, c.n, strings.Join(access, "\n"))
		}
	}
}

// TestServerALPNAutoReuseNever: under http_reuse never, the connections
// of servers choosing their protocol by ALPN stay private to their client
// connection, in either protocol: two requests of one keep-alive client
// connection share one server connection (an HTTP/2 one to the server
// selecting h2, an HTTP/1.1 one to the server selecting http/1.1),
// another client connection gets its own, and none is in the shared
// pools.
func TestServerALPNAutoReuseNever(t *testing.T) {
	e := newTLSEnv(t)
	both := e.ca.Server(t, testcert.Options{}, "a.test", "b.test")
	h2up := newALPNUpstream(t, both.TLS(), 0, "h2", "http/1.1")
	h1up := newALPNUpstream(t, both.TLS(), 0, "http/1.1")
	noneup := newALPNUpstream(t, both.TLS(), 0)
	text := strings.Replace(fmt.Sprintf(alpnAutoConfig, h2up.addr(), h1up.addr(), noneup.addr()),
		`http_reuse = "always"`, `http_reuse = "never"`, 1)
	p := e.start(t, text, nil)
	plain := p.Frontends[0].Addrs()[0].String()
	for range 2 {
		c, err := net.Dial("tcp", plain)
		if err != nil {
			t.Fatal(err)
		}
		c.SetDeadline(time.Now().Add(15 * time.Second))
		br := bufio.NewReader(c)
		for i := range 4 {
			server := []string{"h2", "h1", "h2", "h1"}[i]
			fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: a.test\r\nCookie: SRV=%s\r\n\r\n", server)
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			want := map[string]string{"h2": "proto=HTTP/2.0 alpn=h2 sni=a.test", "h1": "proto=HTTP/1.1 alpn=http/1.1 sni=a.test"}[server]
			if resp.StatusCode != 200 || string(b) != want {
				t.Fatalf("request %d to %s: got %d %q, want 200 %q", i, server, resp.StatusCode, b, want)
			}
		}
		c.Close()
	}
	if h2, h1 := h2up.conns.Load(), h1up.conns.Load(); h2 != 2 || h1 != 2 {
		t.Errorf("the servers saw %d (h2) and %d (h1) connections, want 2 and 2 (one per client connection)", h2, h1)
	}
	for _, s := range p.Backend("web").Servers() {
		if n, idle := s.up.H2.Len(), s.up.Pool.Len(); n != 0 || idle != 0 {
			t.Errorf("%s: %d HTTP/2 and %d HTTP/1.1 connections in the shared pools, want none", s.Name, n, idle)
		}
	}
}
