package proxy

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fulcrum-proxy/fulcrum/conf"
	"github.com/fulcrum-proxy/fulcrum/proxy/stick"
)

// An HTTP/1.0 request without Host used to be forwarded as HTTP/1.1, which
// requires Host: servers refused it. The version is now kept.
func TestHTTP10RequestKeepsItsVersion(t *testing.T) {
	lines := make(chan string, 1)
	srv := tcpServer(t, func(c *net.TCPConn) {
		line, _ := bufio.NewReader(c).ReadString('\n')
		lines <- strings.TrimSpace(line)
		c.Write([]byte("HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok"))
	})
	_, addr := startProxy(t, testConfig(conf.ModeHTTP, []string{srv}, nil))
	resp := dialRaw(t, addr).do(t, "GET /x HTTP/1.0\r\n\r\n")
	if resp.StatusCode != 200 {
		t.Fatalf("status %d, want 200", resp.StatusCode)
	}
	if got := <-lines; got != "GET /x HTTP/1.0" {
		t.Errorf("server saw %q, want %q", got, "GET /x HTTP/1.0")
	}
}

// A 400 or 408 sent by a server used to be logged as <BADREQ>, which is
// only for requests the proxy could not parse.
func TestServer400LogsItsRequest(t *testing.T) {
	u := newUpstream(t, "s1")
	u.handler = func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(400) }
	_, addr, buf := startLoggedProxy(t, testConfig(conf.ModeHTTP, []string{u.addr()}, nil))
	if resp := dialRaw(t, addr).do(t, "GET /bad HTTP/1.1\r\nHost: x\r\n\r\n"); resp.StatusCode != 400 {
		t.Fatalf("status %d, want 400", resp.StatusCode)
	}
	waitFor(t, 2*time.Second, "the log line", func() bool { return len(buf.lines()) >= 1 })
	if l := buf.lines()[0]; l["request"] != "GET /bad HTTP/1.1" || l["server"] != "s1" {
		t.Errorf("log line: %v", l)
	}
}

// hard_stop_after used to close only the client side: a request waiting on
// a hung server kept the stop waiting until timeout_server.
func TestHardStopClosesServerSide(t *testing.T) {
	hung := tcpServer(t, func(c *net.TCPConn) {
		c.Read(make([]byte, 4096))
		c.Read(make([]byte, 1)) // until the proxy closes
	})
	cfg := testConfig(conf.ModeHTTP, []string{hung}, nil)
	cfg.Backends[0].TimeoutServer = time.Minute
	p, err := New(cfg, nopLogger())
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	rc := dialRaw(t, p.Frontends[0].Addrs()[0].String())
	rc.c.Write([]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"))
	waitFor(t, 5*time.Second, "the request at the server", func() bool { return p.Snapshot().Backends[0].Scur == 1 })
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- p.Shutdown(ctx) }()
	select {
	case err := <-done:
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Shutdown: %v, want the hard-stop deadline", err)
		}
	case <-time.After(20 * time.Second): // timeout_server is a minute
		t.Fatal("Shutdown still waiting on the hung server")
	}
}

// bytes_in_cnt used to count only the request head: a tracked POST counts
// its body too.
func TestTrackBytesInCountsTheBody(t *testing.T) {
	u := newUpstream(t, "s1")
	p, addr := stickProxy(t, `
[[frontend]]
name = "www"
bind = ["127.0.0.1:0"]
default_backend = "web"
stick_table = { type = "ip", size = 10, expire = "1m", store = ["bytes_in_cnt"] }
http_request = ["track-sc0 src"]
[[backend]]
name = "web"
[[backend.server]]
name = "s1"
address = "%s"
`, u)
	const head = "POST /up HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n"
	if resp := dialRaw(t, addr).do(t, head+strings.Repeat("a", 1000)); resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	tbl := p.Table("www")
	k, _ := tbl.ParseKey("127.0.0.1")
	want := int64(len(head) + 1000)
	var got int64
	waitFor(t, 5*time.Second, "bytes_in_cnt", func() bool {
		e := tbl.Lookup(k)
		if e == nil {
			return false
		}
		defer tbl.Release(e)
		got, _ = tbl.Value(e, stick.BytesInCnt)
		return got == want
	})
}

// A queued TCP client that went away used to stay queued until served or
// timeout queue: it now leaves the queue at once, logged CQ, and never
// reaches the server.
func TestTCPQueuedClientGoneLeavesTheQueue(t *testing.T) {
	var mu sync.Mutex
	accepted := 0
	srv := tcpServer(t, func(c *net.TCPConn) {
		mu.Lock()
		accepted++
		mu.Unlock()
		io.Copy(io.Discard, c) // held until the client closes
	})
	cfg := testConfig(conf.ModeTCP, []string{srv}, nil)
	cfg.Backends[0].Servers[0].MaxConn = 1
	cfg.Backends[0].TimeoutQueue = time.Minute
	p, addr, buf := startLoggedProxy(t, cfg)
	first, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	first.Write([]byte("a"))
	waitFor(t, 5*time.Second, "the first connection at the server", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return accepted == 1
	})
	second, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "the second connection queued", func() bool { return p.Snapshot().Backends[0].Qcur == 1 })
	second.Close()
	waitFor(t, 5*time.Second, "the queue to empty", func() bool { return p.Snapshot().Backends[0].Qcur == 0 })
	waitFor(t, 5*time.Second, "the CQ log line", func() bool {
		for _, l := range buf.lines() {
			if l["termination_state"] == "CQ" {
				return true
			}
		}
		return false
	})
	mu.Lock()
	defer mu.Unlock()
	if accepted != 1 {
		t.Errorf("server connections: got %d, want 1", accepted)
	}
}

// A queued TCP client that sends data while it waits stays queued and
// reaches the server, with its bytes, once a slot frees. (A client that
// shuts its sending side while queued counts as gone, as with HAProxy's
// option abortonclose: a FIN cannot be told from a full close.)
func TestTCPQueuedClientSendingDataIsServed(t *testing.T) {
	got := make(chan string, 2)
	srv := tcpServer(t, func(c *net.TCPConn) {
		b, _ := io.ReadAll(c)
		got <- string(b)
	})
	cfg := testConfig(conf.ModeTCP, []string{srv}, nil)
	cfg.Backends[0].Servers[0].MaxConn = 1
	cfg.Backends[0].TimeoutQueue = time.Minute
	p, addr := startProxy(t, cfg)
	first, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "the first connection assigned", func() bool { return p.Snapshot().Backends[0].Servers[0].Scur == 1 })
	second, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer second.Close()
	waitFor(t, 5*time.Second, "the second connection queued", func() bool { return p.Snapshot().Backends[0].Qcur == 1 })
	second.Write([]byte("queued bytes"))
	first.Close()
	if s := <-got; s != "" {
		t.Errorf("first connection's bytes: %q, want none", s)
	}
	// The server reads until EOF: close the second client once served.
	waitFor(t, 10*time.Second, "the second connection served", func() bool {
		return p.Snapshot().Backends[0].Qcur == 0 && p.Snapshot().Backends[0].Servers[0].Scur == 1
	})
	second.(*net.TCPConn).CloseWrite()
	select {
	case s := <-got:
		if s != "queued bytes" {
			t.Errorf("second connection's bytes at the server: %q", s)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the queued connection never reached the server")
	}
}

// A queued request with a body (left unread while queued) whose client
// closes leaves the queue at once (CQ) and never reaches the server, under
// abortonclose.
func TestQueuedPostClientGone(t *testing.T) {
	release := make(chan struct{})
	u := newUpstream(t, "s1")
	u.handler = func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/hold" {
			<-release
		}
	}
	defer close(release)
	cfg := testConfig(conf.ModeHTTP, []string{u.addr()}, nil)
	cfg.Backends[0].Servers[0].MaxConn = 1
	cfg.Backends[0].TimeoutQueue = time.Minute
	cfg.Backends[0].AbortOnClose = true
	p, addr, buf := startLoggedProxy(t, cfg)
	hold := dialRaw(t, addr)
	hold.c.Write([]byte("GET /hold HTTP/1.1\r\nHost: x\r\n\r\n"))
	waitFor(t, 5*time.Second, "the held request", func() bool { return u.requests.Load() == 1 })
	post := dialRaw(t, addr)
	post.c.Write([]byte("POST /up HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello"))
	waitFor(t, 5*time.Second, "the POST queued", func() bool { return p.Snapshot().Backends[0].Qcur == 1 })
	post.c.Close()
	waitFor(t, 5*time.Second, "the queue to empty", func() bool { return p.Snapshot().Backends[0].Qcur == 0 })
	waitFor(t, 5*time.Second, "the CQ log line", func() bool {
		for _, l := range buf.lines() {
			if l["termination_state"] == "CQ" && l["request"] == "POST /up HTTP/1.1" {
				return true
			}
		}
		return false
	})
	if n := u.requests.Load(); n != 1 {
		t.Errorf("server requests: got %d, want 1", n)
	}
}

// A 504 after the server connection was made used to log Tc and Ta as -1:
// they are now the connect time and the request's duration.
func TestErrorLogKeepsTimers(t *testing.T) {
	hung := tcpServer(t, func(c *net.TCPConn) {
		c.Read(make([]byte, 4096))
		c.Read(make([]byte, 1)) // until the proxy closes
	})
	cfg := testConfig(conf.ModeHTTP, []string{hung}, nil)
	cfg.Backends[0].TimeoutServer = 100 * time.Millisecond
	_, addr, buf := startLoggedProxy(t, cfg)
	if resp := dialRaw(t, addr).do(t, "GET / HTTP/1.1\r\nHost: x\r\n\r\n"); resp.StatusCode != 504 {
		t.Fatalf("status %d, want 504", resp.StatusCode)
	}
	waitFor(t, 5*time.Second, "the log line", func() bool { return len(buf.lines()) >= 1 })
	l := buf.lines()[0]
	tc, ta := l["Tc"].(float64), l["Ta"].(float64)
	if l["termination_state"] != "sH" || tc < 0 || ta < 100 || ta < tc {
		t.Errorf("log line: %v; want sH with Tc >= 0 and Ta >= timeout_server (100)", l)
	}
}
