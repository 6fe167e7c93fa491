package proxy

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fulcrum-proxy/fulcrum/conf"
)

// get sends n keep-alive GETs on one connection and counts the answering
// servers by body.
func countGets(t *testing.T, addr string, n int) map[string]int {
	t.Helper()
	rc := dialRaw(t, addr)
	got := map[string]int{}
	for i := 0; i < n; i++ {
		resp := rc.do(t, "GET /x HTTP/1.1\r\nHost: test\r\n\r\n")
		if resp.StatusCode != 200 {
			t.Fatalf("request %d: status %d", i, resp.StatusCode)
		}
		got[strings.TrimSpace(bodyOf(resp))]++
	}
	return got
}

func TestRoundRobinDistribution(t *testing.T) {
	cases := []struct {
		name    string
		weights []int
		want    map[string]int
	}{
		{"equal weights", []int{1, 1, 1}, map[string]int{"s1": 100, "s2": 100, "s3": 100}},
		{"weights 2:1:1", []int{2, 1, 1}, map[string]int{"s1": 150, "s2": 75, "s3": 75}},
		{"weight 0 gets none", []int{1, 0, 2}, map[string]int{"s1": 100, "s3": 200}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var addrs []string
			for i := 1; i <= 3; i++ {
				addrs = append(addrs, newUpstream(t, fmt.Sprintf("s%d", i)).addr())
			}
			_, addr := startProxy(t, testConfig(conf.ModeHTTP, addrs, tc.weights))
			got := countGets(t, addr, 300)
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestForwardForAndKeepAliveReuse(t *testing.T) {
	u := newUpstream(t, "s1")
	_, addr := startProxy(t, testConfig(conf.ModeHTTP, []string{u.addr()}, nil))
	countGets(t, addr, 50)
	if got := u.xff(); got != "127.0.0.1" {
		t.Errorf("X-Forwarded-For: got %q, want %q", got, "127.0.0.1")
	}
	if req, conns := u.requests.Load(), u.conns.Load(); req != 50 || conns >= req {
		t.Errorf("upstream saw %d requests on %d connections, want 50 requests on fewer connections", req, conns)
	}
}

func TestHTTPReuseModes(t *testing.T) {
	// Two client connections, 3 requests each, one server: "never" keeps
	// one server connection per client connection; "always" lets the second
	// client reuse the first's; "safe" makes each client's first request
	// open a connection.
	cases := []struct {
		mode      string
		wantConns int64
	}{
		{"never", 2},
		{"safe", 2},
		{"always", 1},
	}
	for _, tc := range cases {
		t.Run(tc.mode, func(t *testing.T) {
			u := newUpstream(t, "s1")
			cfg := testConfig(conf.ModeHTTP, []string{u.addr()}, nil)
			cfg.Backends[0].HTTPReuse = tc.mode
			_, addr := startProxy(t, cfg)
			countGets(t, addr, 3)
			countGets(t, addr, 3)
			if got := u.conns.Load(); got != tc.wantConns {
				t.Errorf("server connections: got %d, want %d", got, tc.wantConns)
			}
		})
	}
}

func TestCountersAfterKnownTraffic(t *testing.T) {
	var addrs []string
	for i := 1; i <= 2; i++ {
		addrs = append(addrs, newUpstream(t, fmt.Sprintf("s%d", i)).addr())
	}
	p, addr := startProxy(t, testConfig(conf.ModeHTTP, addrs, nil))
	rc := dialRaw(t, addr)
	const req = "GET /abc HTTP/1.1\r\nHost: test\r\n\r\n"
	var respBytes int64
	for i := 0; i < 10; i++ {
		rc.do(t, req)
	}
	// Response size on the wire, read raw once more through a fresh client.
	raw := dialRaw(t, addr)
	raw.c.Write([]byte("GET /abc HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n"))
	all, _ := io.ReadAll(raw.c)
	_ = respBytes
	waitFor(t, 2*time.Second, "sessions to end", func() bool {
		s := p.Snapshot()
		return s.Frontends[0].Scur == 1 && s.Backends[0].Scur == 0
	})
	snap := p.Snapshot()
	fe, be := snap.Frontends[0], snap.Backends[0]
	if fe.Stot != 2 || fe.ReqTot != 11 || fe.Hrsp2xx != 11 {
		t.Errorf("frontend stot/req_tot/hrsp_2xx: got %d/%d/%d, want 2/11/11", fe.Stot, fe.ReqTot, fe.Hrsp2xx)
	}
	if be.Stot != 11 || be.Lbtot != 11 || be.Hrsp2xx != 11 {
		t.Errorf("backend stot/lbtot/hrsp_2xx: got %d/%d/%d, want 11/11/11", be.Stot, be.Lbtot, be.Hrsp2xx)
	}
	if s1, s2 := be.Servers[0], be.Servers[1]; s1.Lbtot != 6 || s2.Lbtot != 5 || s1.Stot != 6 || s2.Stot != 5 {
		t.Errorf("server lbtot/stot: got s1 %d/%d s2 %d/%d, want 6/6 5/5", s1.Lbtot, s1.Stot, s2.Lbtot, s2.Stot)
	}
	wantBin := int64(10*len(req) + len("GET /abc HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n"))
	if fe.Bin != wantBin {
		t.Errorf("frontend bin: got %d, want %d", fe.Bin, wantBin)
	}
	// Keep-alive responses lack the "connection: close" line the last one has.
	closeLen := int64(len(all))
	keepLen := closeLen - int64(len("connection: close\r\n"))
	if wantBout := 10*keepLen + closeLen; fe.Bout != wantBout || be.Bout != wantBout {
		t.Errorf("bout: got frontend %d backend %d, want %d", fe.Bout, be.Bout, wantBout)
	}
	if sum := be.Servers[0].Bout + be.Servers[1].Bout; sum != be.Bout {
		t.Errorf("server bout sum %d != backend bout %d", sum, be.Bout)
	}
	if fe.Scur != 1 || be.Scur != 0 || fe.Smax != 2 {
		t.Errorf("scur/smax: got frontend %d/%d backend %d, want 1/2 and 0", fe.Scur, fe.Smax, be.Scur)
	}
}

func TestStoppedUpstream(t *testing.T) {
	l, _ := net.Listen("tcp", "127.0.0.1:0")
	dead := l.Addr().String()
	l.Close() // nothing listens there any more: connect is refused
	p, addr := startProxy(t, testConfig(conf.ModeHTTP, []string{dead}, nil))
	resp := dialRaw(t, addr).do(t, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	if resp.StatusCode != 503 {
		t.Fatalf("status: got %d, want 503", resp.StatusCode)
	}
	if b := bodyOf(resp); !strings.Contains(b, "No server is available to handle this request.") {
		t.Errorf("body: got %q", b)
	}
	snap := p.Snapshot()
	be, srv := snap.Backends[0], snap.Backends[0].Servers[0]
	// retries = 1: one retry counted, then one connection error.
	if be.Econ != 1 || srv.Econ != 1 || srv.Wretr != 1 || be.Hrsp5xx != 1 || snap.Frontends[0].Hrsp5xx != 1 {
		t.Errorf("econ/wretr/hrsp_5xx: got be %d srv %d/%d be5xx %d fe5xx %d, want 1 1/1 1 1",
			be.Econ, srv.Econ, srv.Wretr, be.Hrsp5xx, snap.Frontends[0].Hrsp5xx)
	}
}

func TestNoUsableServer(t *testing.T) {
	u := newUpstream(t, "s1")
	cfg := testConfig(conf.ModeHTTP, []string{u.addr()}, nil)
	cfg.Backends[0].Servers[0].Disabled = true
	_, addr := startProxy(t, cfg)
	resp := dialRaw(t, addr).do(t, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	if resp.StatusCode != 503 || u.requests.Load() != 0 {
		t.Errorf("got status %d and %d upstream requests, want 503 and 0", resp.StatusCode, u.requests.Load())
	}
}

func TestBadGatewayAndTimeouts(t *testing.T) {
	t.Run("server closes without answering: 502", func(t *testing.T) {
		l, _ := net.Listen("tcp", "127.0.0.1:0")
		defer l.Close()
		go func() {
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				buf := make([]byte, 1024)
				c.Read(buf)
				c.Close()
			}
		}()
		p, addr := startProxy(t, testConfig(conf.ModeHTTP, []string{l.Addr().String()}, nil))
		resp := dialRaw(t, addr).do(t, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
		if resp.StatusCode != 502 {
			t.Errorf("status: got %d, want 502", resp.StatusCode)
		}
		if e := p.Snapshot().Backends[0].Eresp; e != 1 {
			t.Errorf("eresp: got %d, want 1", e)
		}
	})
	t.Run("server never answers: 504", func(t *testing.T) {
		l, _ := net.Listen("tcp", "127.0.0.1:0")
		defer l.Close()
		var held []net.Conn
		var mu sync.Mutex
		go func() {
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				mu.Lock()
				held = append(held, c)
				mu.Unlock()
			}
		}()
		defer func() {
			mu.Lock()
			for _, c := range held {
				c.Close()
			}
			mu.Unlock()
		}()
		cfg := testConfig(conf.ModeHTTP, []string{l.Addr().String()}, nil)
		cfg.Backends[0].TimeoutServer = 200 * time.Millisecond
		_, addr := startProxy(t, cfg)
		resp := dialRaw(t, addr).do(t, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
		if resp.StatusCode != 504 {
			t.Errorf("status: got %d, want 504", resp.StatusCode)
		}
	})
	t.Run("client sends half a request: 408", func(t *testing.T) {
		u := newUpstream(t, "s1")
		cfg := testConfig(conf.ModeHTTP, []string{u.addr()}, nil)
		cfg.Frontends[0].TimeoutHTTPRequest = 200 * time.Millisecond
		_, addr := startProxy(t, cfg)
		rc := dialRaw(t, addr)
		rc.c.Write([]byte("GET / HTTP/1.1\r\nHost: x\r\n"))
		rc.c.SetDeadline(time.Now().Add(5 * time.Second))
		resp, err := http.ReadResponse(rc.br, nil)
		if err != nil || resp.StatusCode != 408 {
			t.Fatalf("got %v %v, want 408", resp, err)
		}
	})
}

func TestBadRequests(t *testing.T) {
	cases := []struct {
		name, raw string
	}{
		{"garbage", "HELLO\r\n\r\n"},
		{"bad version", "GET / HTTP/2.7\r\nHost: x\r\n\r\n"},
		{"space before colon", "GET / HTTP/1.1\r\nHost : x\r\n\r\n"},
		{"CL and TE", "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"},
		{"two different CL", "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabcd"},
		{"folded header", "GET / HTTP/1.1\r\nHost: x\r\nX-A: 1\r\n  2\r\n\r\n"},
		{"huge head", "GET / HTTP/1.1\r\nHost: x\r\nX-Big: " + strings.Repeat("a", 70<<10) + "\r\n\r\n"},
	}
	u := newUpstream(t, "s1")
	p, addr := startProxy(t, testConfig(conf.ModeHTTP, []string{u.addr()}, nil))
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp := dialRaw(t, addr).do(t, tc.raw)
			if resp.StatusCode != 400 {
				t.Errorf("status: got %d, want 400", resp.StatusCode)
			}
		})
	}
	if n := u.requests.Load(); n != 0 {
		t.Errorf("upstream got %d requests, want 0", n)
	}
	if e := p.Snapshot().Frontends[0].Ereq; e != int64(len(cases)) {
		t.Errorf("ereq: got %d, want %d", e, len(cases))
	}
}

func TestBodiesStream(t *testing.T) {
	u := newUpstream(t, "s1")
	u.handler = func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if r.URL.Path == "/chunked" {
			w.Write(b[:len(b)/2])
			w.(http.Flusher).Flush()
			w.Write(b[len(b)/2:])
			return
		}
		w.Header().Set("Content-Length", fmt.Sprint(len(b)))
		w.Write(b)
	}
	_, addr := startProxy(t, testConfig(conf.ModeHTTP, []string{u.addr()}, nil))
	payload := strings.Repeat("0123456789", 100_000) // 1 MB: spliced response
	for _, path := range []string{"/fixed", "/chunked"} {
		resp, err := http.Post("http://"+addr+path, "text/plain", strings.NewReader(payload))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(b) != payload {
			t.Errorf("%s: echoed %d bytes, want %d identical", path, len(b), len(payload))
		}
	}
	// Chunked request body.
	rc := dialRaw(t, addr)
	resp := rc.do(t, "POST /fixed HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n")
	if b := bodyOf(resp); b != "hello world" {
		t.Errorf("chunked request body: got %q", b)
	}
	// Expect: 100-continue answered, then the body flows.
	resp = rc.do(t, "POST /fixed HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nExpect: 100-continue\r\n\r\nok")
	if resp.StatusCode != 100 {
		t.Errorf("expect 100: got %d first, want 100 Continue", resp.StatusCode)
	}
	resp, err := http.ReadResponse(rc.br, nil)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := io.ReadAll(resp.Body); resp.StatusCode != 200 || string(b) != "ok" {
		t.Errorf("expect 100: got %d %q, want 200 \"ok\"", resp.StatusCode, b)
	}
}

func TestHopByHopHeaders(t *testing.T) {
	u := newUpstream(t, "s1")
	var got http.Header
	var mu sync.Mutex
	u.handler = func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = r.Header.Clone()
		mu.Unlock()
		w.Header().Set("Keep-Alive", "timeout=5")
		w.Header().Set("X-Private", "1")
		w.Header().Set("Connection", "X-Private")
		w.Write([]byte("ok"))
	}
	_, addr := startProxy(t, testConfig(conf.ModeHTTP, []string{u.addr()}, nil))
	resp := dialRaw(t, addr).do(t, "GET / HTTP/1.1\r\nHost: x\r\nConnection: X-Secret\r\nX-Secret: 1\r\nProxy-Connection: keep-alive\r\nX-Keep: yes\r\n\r\n")
	mu.Lock()
	defer mu.Unlock()
	if got.Get("X-Secret") != "" || got.Get("Proxy-Connection") != "" || got.Get("X-Keep") != "yes" {
		t.Errorf("request headers at server: %v", got)
	}
	if resp.Header.Get("Keep-Alive") != "" || resp.Header.Get("X-Private") != "" {
		t.Errorf("response headers at client: %v", resp.Header)
	}
}

func TestWebSocketUpgradeTunnel(t *testing.T) {
	// A server that switches protocols and then echoes bytes.
	l, _ := net.Listen("tcp", "127.0.0.1:0")
	defer l.Close()
	go func() {
		c, err := l.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		buf := make([]byte, 4096)
		n, _ := c.Read(buf)
		if !strings.Contains(string(buf[:n]), "Upgrade: websocket") {
			return
		}
		c.Write([]byte("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n"))
		io.Copy(c, c)
	}()
	_, addr := startProxy(t, testConfig(conf.ModeHTTP, []string{l.Addr().String()}, nil))
	rc := dialRaw(t, addr)
	rc.c.SetDeadline(time.Now().Add(5 * time.Second))
	rc.c.Write([]byte("GET /ws HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n"))
	resp, err := http.ReadResponse(rc.br, nil)
	if err != nil || resp.StatusCode != 101 {
		t.Fatalf("got %v %v, want 101", resp, err)
	}
	rc.c.Write([]byte("ping"))
	buf := make([]byte, 4)
	if _, err := io.ReadFull(rc.br, buf); err != nil || string(buf) != "ping" {
		t.Errorf("tunnel echo: got %q %v", buf, err)
	}
}

func TestConcurrentClients(t *testing.T) {
	var ups []*upstream
	var addrs []string
	for i := 1; i <= 3; i++ {
		u := newUpstream(t, fmt.Sprintf("s%d", i))
		ups = append(ups, u)
		addrs = append(addrs, u.addr())
	}
	p, addr := startProxy(t, testConfig(conf.ModeHTTP, addrs, nil))
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := &http.Client{Transport: &http.Transport{}}
			defer c.CloseIdleConnections()
			for i := 0; i < 30; i++ {
				resp, err := c.Get("http://" + addr + "/")
				if err != nil {
					t.Error(err)
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		}()
	}
	wg.Wait()
	var sum int64
	for _, u := range ups {
		sum += u.requests.Load()
	}
	if sum != 240 {
		t.Errorf("upstreams served %d, want 240", sum)
	}
	if lb := p.Snapshot().Backends[0].Lbtot; lb != 240 {
		t.Errorf("lbtot: got %d, want 240", lb)
	}
}

// TestStalePooledConnectionRetried: a server that closes each connection
// after one response without saying so leaves dead connections in the pool;
// the next request on one is retried on a fresh connection, invisibly.
func TestStalePooledConnectionRetried(t *testing.T) {
	// A WaitGroup here raced (Add in the accept loop against Wait in the
	// test): count the closed connections instead.
	var closed atomic.Int64
	l, _ := net.Listen("tcp", "127.0.0.1:0")
	defer l.Close()
	var accepted int64
	var mu sync.Mutex
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			accepted++
			mu.Unlock()
			go func() {
				defer closed.Add(1)
				defer c.Close()
				buf := make([]byte, 4096)
				c.Read(buf)
				c.Write([]byte("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"))
			}()
		}
	}()
	cfg := testConfig(conf.ModeHTTP, []string{l.Addr().String()}, nil)
	cfg.Backends[0].HTTPReuse = "always"
	p, addr := startProxy(t, cfg)
	rc := dialRaw(t, addr)
	for i := 0; i < 5; i++ {
		// Let the server's close reach the pooled connection first.
		waitFor(t, 5*time.Second, "the server's closes", func() bool { return closed.Load() == int64(i) })
		resp := rc.do(t, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
		if resp.StatusCode != 200 {
			t.Fatalf("request %d: status %d, want 200", i, resp.StatusCode)
		}
	}
	if e := p.Snapshot().Backends[0].Econ; e != 0 {
		t.Errorf("econ: got %d, want 0", e)
	}
	mu.Lock()
	defer mu.Unlock()
	if accepted != 5 {
		t.Errorf("server connections: got %d, want 5", accepted)
	}
}

// TestHTTPReuseAggressive: a first request may reuse only a connection that
// has already served more than one request.
func TestHTTPReuseAggressive(t *testing.T) {
	u := newUpstream(t, "s1")
	cfg := testConfig(conf.ModeHTTP, []string{u.addr()}, nil)
	cfg.Backends[0].HTTPReuse = "aggressive"
	_, addr := startProxy(t, cfg)
	countGets(t, addr, 1) // a connection that served once: not proven
	countGets(t, addr, 1) // first request: may not take it, opens another
	if got := u.conns.Load(); got != 2 {
		t.Fatalf("after two single-request clients: %d server connections, want 2", got)
	}
	countGets(t, addr, 3) // opens a third, proves it by reusing it twice
	countGets(t, addr, 1) // first request reuses the proven one
	if got := u.conns.Load(); got != 3 {
		t.Errorf("server connections: got %d, want 3", got)
	}
}

// TestRedispatch: with retries 2 and redispatch, a roundrobin request to a
// server that refuses connections goes to the other server at its first
// retry, without waiting, as HAProxy 2.6 does (issue 16: it used to retry
// the dead server first); the client sees no error, and the redispatch is
// counted in the wredis of the server it left (HAProxy 2.6 on loopback:
// s1 wredis 3, wretr 0 for 3 such requests).
func TestRedispatch(t *testing.T) {
	// The upstream listens first: a port closed before it starts could be
	// handed to it, and then both servers would be s2.
	u := newUpstream(t, "s2")
	dead := refusingAddr(t)
	cfg := testConfig(conf.ModeHTTP, []string{dead, u.addr()}, nil)
	cfg.Backends[0].Retries = 2
	cfg.Backends[0].Redispatch = true
	p, addr := startProxy(t, cfg)
	rc := dialRaw(t, addr)
	// Roundrobin alternates s1, s2; each redispatch takes s2's turn, so
	// every request is first assigned to the dead s1.
	for i := 0; i < 4; i++ {
		resp := rc.do(t, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
		if resp.StatusCode != 200 || strings.TrimSpace(bodyOf(resp)) != "s2" {
			t.Fatalf("request %d: got %d, want 200 from s2", i, resp.StatusCode)
		}
	}
	// The session ends (unassign) just after the response is flushed.
	waitFor(t, 2*time.Second, "sessions to end", func() bool { return p.Snapshot().Backends[0].Scur == 0 })
	snap := p.Snapshot()
	be, s1, s2 := snap.Backends[0], snap.Backends[0].Servers[0], snap.Backends[0].Servers[1]
	if be.Wretr != 0 || be.Wredis != 4 || s1.Wretr != 0 || s1.Wredis != 4 || s2.Wredis != 0 || be.Econ != 0 {
		t.Errorf("wretr/wredis/econ: got be %d/%d/%d s1 %d/%d s2 wredis %d, want 0/4/0 0/4 0",
			be.Wretr, be.Wredis, be.Econ, s1.Wretr, s1.Wredis, s2.Wredis)
	}
	if s1.Lbtot != 4 || s2.Lbtot != 4 {
		t.Errorf("lbtot: got s1 %d s2 %d, want 4 and 4 (each redispatch is a pick)", s1.Lbtot, s2.Lbtot)
	}
	if s1.Scur != 0 || s2.Scur != 0 {
		t.Errorf("scur after requests: s1 %d s2 %d, want 0 0", s1.Scur, s2.Scur)
	}
}
