package proxy

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fulcrum-proxy/fulcrum/conf"
	"github.com/fulcrum-proxy/fulcrum/proxy/http1"
	"github.com/rs/zerolog"
)

// Hibernation (httpconn.go): on the epoll layer, a keep-alive client
// connection idle past IdleKeep has no goroutine, session or Stream; it is
// resumed when its socket is readable, its deadline passes or it is closed.

// fixedUpstream is a keep-alive HTTP/1.1 server answering every request
// with the same response, whose body is body; it returns its address and
// that response's bytes.
func fixedUpstream(t *testing.T, body string) (addr, resp string) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	resp = "HTTP/1.1 200 OK\r\nContent-Length: " + strconv.Itoa(len(body)) + "\r\nContent-Type: text/plain\r\n\r\n" + body
	done := make(chan struct{})
	conns := make(chan net.Conn, 64)
	go func() {
		defer close(done)
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			conns <- c
			go func() {
				defer c.Close()
				br := bufio.NewReader(c)
				var h http1.Head
				for h.Read(br, false) == nil {
					if _, err := io.WriteString(c, resp); err != nil {
						return
					}
				}
			}()
		}
	}()
	t.Cleanup(func() {
		l.Close()
		<-done
		close(conns)
		for c := range conns {
			c.Close()
		}
	})
	return l.Addr().String(), resp
}

// hibernatingProxy starts a proxy on the epoll layer in front of an
// upstream answering body, whose connections hibernate as soon as they
// are idle (IdleKeep 0); edit changes the configuration first.
func hibernatingProxy(t *testing.T, body string, edit func(*conf.Config)) (p *Proxy, addr, resp string) {
	t.Helper()
	up, resp := fixedUpstream(t, body)
	cfg := epollConfig(t, conf.ModeHTTP, []string{up})
	cfg.Backends[0].HTTPReuse = "always"
	if edit != nil {
		edit(cfg)
	}
	p, addr = startProxyKeep(t, cfg, 0)
	if p.group == nil {
		t.Skip("the epoll layer is not available here")
	}
	return p, addr, resp
}

// exchangeRaw writes req on c and reads exactly len(want) bytes, which must
// be want.
func exchangeRaw(t *testing.T, c net.Conn, req, want string) {
	t.Helper()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c, req); err != nil {
		t.Fatalf("write: %v", err)
	}
	got := make([]byte, len(want))
	if _, err := io.ReadFull(c, got); err != nil {
		t.Fatalf("read: %v (%q)", err, got)
	}
	if string(got) != want {
		t.Fatalf("got %q, want %q", got, want)
	}
}

func waitHibernating(t testing.TB, p *Proxy, n int) {
	t.Helper()
	g := p.group
	deadline := time.Now().Add(10 * time.Second)
	for g.Hibernating() != int64(n) {
		if time.Now().After(deadline) {
			without, with := parkedWithoutBuffers(p)
			t.Fatalf("%d hibernating connections, want %d (waiting with buffers %d, without %d)", g.Hibernating(), n, with, without)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// A connection that hibernated is served as before on its next requests:
// a short one, one longer than the first read, pipelined ones; meanwhile
// it is still counted (scur) and listed (show sess), idle.
func TestHibernateNextRequest(t *testing.T) {
	p, addr, resp := hibernatingProxy(t, "hello\n", nil)
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	get := "GET / HTTP/1.1\r\nHost: x\r\n\r\n"
	exchangeRaw(t, c, get, resp)
	waitHibernating(t, p, 1)
	if without, with := parkedWithoutBuffers(p); without != 1 || with != 0 {
		t.Fatalf("sessions without buffers %d (hibernating included), with %d; want 1, 0", without, with)
	}
	if n := p.Frontends[0].Counters.Scur.Load(); n != 1 {
		t.Errorf("scur %d while hibernating, want 1", n)
	}
	if ss := p.Sessions(); len(ss) != 1 || ss[0].Active || ss[0].Frontend != p.Frontends[0].Name {
		t.Errorf("show sess while hibernating: %+v, want one idle session of %s", ss, p.Frontends[0].Name)
	}

	exchangeRaw(t, c, get, resp)
	waitHibernating(t, p, 1)
	long := "GET /long HTTP/1.1\r\nHost: x\r\nX-Pad: " + strings.Repeat("p", 300) + "\r\n\r\n"
	exchangeRaw(t, c, long, resp)
	waitHibernating(t, p, 1)
	exchangeRaw(t, c, get+long+get, resp+resp+resp)
	waitHibernating(t, p, 1)
	if n := p.Frontends[0].Counters.ReqTot.Load(); n != 6 {
		t.Errorf("req_tot %d, want 6", n)
	}
	c.Close()
	waitFor(t, 10*time.Second, "the connection to end", func() bool {
		return p.Frontends[0].Counters.Scur.Load() == 0 && p.group.Hibernating() == 0
	})
}

// With N idle connections past IdleKeep the proxy runs no more goroutines
// than before they opened, whatever N: none waits for them.
func TestHibernateNoGoroutines(t *testing.T) {
	p, addr, resp := hibernatingProxy(t, "ok\n", func(cfg *conf.Config) {
		cfg.Frontends[0].TimeoutHTTPRequest = time.Minute // a slow machine must not end the test's connections
	})
	// The upstream's connection (and its goroutine) and the pool's are
	// made by a first request, closed before the count starts.
	first, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	exchangeRaw(t, first, "GET / HTTP/1.1\r\nHost: x\r\n\r\n", resp)
	waitHibernating(t, p, 1)
	first.Close()
	waitHibernating(t, p, 0)
	var g0 int
	waitFor(t, 10*time.Second, "the first connection's worker to end", func() bool {
		g0 = runtime.NumGoroutine()
		without, with := parkedWithoutBuffers(p)
		return without == 0 && with == 0
	})
	const n = 200
	conns := make([]net.Conn, n)
	for i := range conns {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		exchangeRaw(t, c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n", resp)
		conns[i] = c
	}
	waitHibernating(t, p, n)
	// The workers of the last connections end just after they hibernated.
	waitFor(t, 10*time.Second, "as many goroutines as before the connections opened", func() bool {
		return runtime.NumGoroutine() <= g0
	})
	if got := p.Frontends[0].Counters.Scur.Load(); got != n {
		t.Errorf("scur %d, want %d", got, n)
	}
	for _, c := range conns {
		exchangeRaw(t, c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n", resp)
	}
	waitHibernating(t, p, n)
}

// The keep-alive timeout (timeout_http_request) closes a hibernating
// connection, silently, not before the timeout has passed since the
// connection was last armed (netio.Deadlines: at the earliest when it
// opened), and it is counted out.
func TestHibernateKeepAliveTimeout(t *testing.T) {
	const timeout = 300 * time.Millisecond
	p, addr, resp := hibernatingProxy(t, "ok\n", func(cfg *conf.Config) {
		cfg.Frontends[0].TimeoutHTTPRequest = timeout
	})
	dialed := time.Now()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	exchangeRaw(t, c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n", resp)
	waitFor(t, 10*time.Second, "the connection to hibernate or close", func() bool {
		return p.group.Hibernating() == 1 || p.Frontends[0].Counters.Scur.Load() == 0
	})
	wantClosedAfter(t, c, dialed, timeout)
	waitFor(t, 10*time.Second, "the connection to be counted out", func() bool {
		return p.Frontends[0].Counters.Scur.Load() == 0 && p.group.Hibernating() == 0
	})
}

// asleep starts hibernatingProxy with body, and returns it with a client
// connection that was served once and now hibernates.
func asleep(t *testing.T, body string) (p *Proxy, c net.Conn, resp string) {
	t.Helper()
	p, addr, resp := hibernatingProxy(t, body, nil)
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	exchangeRaw(t, c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n", resp)
	waitHibernating(t, p, 1)
	return p, c, resp
}

// A stop closes hibernating connections (their clients read the end) and
// returns; a reload moves one to the new proxy, which serves its next
// request, and closes one whose bind the new configuration dropped.
func TestHibernateStopAndReload(t *testing.T) {
	t.Run("stop", func(t *testing.T) {
		p, c, _ := asleep(t, "ok\n")
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := p.Shutdown(ctx); err != nil {
			t.Fatalf("Shutdown: %v (the hibernating connection held it)", err)
		}
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		if n, err := c.Read(make([]byte, 64)); n != 0 || err != io.EOF {
			t.Fatalf("read %d bytes, %v after the stop; want the end of the stream", n, err)
		}
		if n := p.Frontends[0].Counters.Scur.Load(); n != 0 {
			t.Errorf("scur %d after the stop, want 0", n)
		}
	})

	t.Run("reload", func(t *testing.T) {
		p, c, _ := asleep(t, "old\n")
		g := p.group
		up2, resp2 := fixedUpstream(t, "new\n")
		p2 := reloadTo(t, p, keepBind(epollConfig(t, conf.ModeHTTP, []string{up2}), p))
		t.Cleanup(func() { p2.Shutdown(contextBackground()) })
		if err := p2.Retire(contextBackground(), p); err != nil {
			t.Fatalf("Retire: %v", err)
		}
		if n := g.Hibernating(); n != 1 {
			t.Fatalf("hibernating %d after the hand-over, want 1 (moved, still asleep)", n)
		}
		if n := p2.Frontends[0].Counters.Scur.Load(); n != 1 {
			t.Errorf("the new proxy's scur %d, want 1 (the moved connection)", n)
		}
		exchangeRaw(t, c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n", resp2)
	})

	t.Run("reload without the bind", func(t *testing.T) {
		p, c, _ := asleep(t, "old\n")
		g := p.group
		up2, _ := fixedUpstream(t, "new\n")
		p2 := reloadTo(t, p, epollConfig(t, conf.ModeHTTP, []string{up2}))
		t.Cleanup(func() { p2.Shutdown(contextBackground()) })
		if err := p2.Retire(contextBackground(), p); err != nil {
			t.Fatalf("Retire: %v", err)
		}
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		if n, err := c.Read(make([]byte, 64)); n != 0 || err != io.EOF {
			t.Fatalf("read %d bytes, %v after the reload; want the end of the stream", n, err)
		}
		if n := g.Hibernating(); n != 0 {
			t.Errorf("hibernating %d, want 0", n)
		}
	})
}

// The request that resumes a hibernated connection has its access log
// line, whose idle time (Ti) runs from the end of the previous response,
// not from the resumption.
func TestHibernateAccessLog(t *testing.T) {
	up, resp := fixedUpstream(t, "ok\n")
	cfg := epollConfig(t, conf.ModeHTTP, []string{up})
	buf := &syncBuffer{}
	p, err := New(cfg, zerolog.New(buf).Level(zerolog.InfoLevel))
	if err != nil {
		t.Fatal(err)
	}
	p.Frontends[0].idleKeep = 0
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Shutdown(contextBackground()) })
	if p.group == nil {
		t.Skip("the epoll layer is not available here")
	}
	c, err := net.Dial("tcp", p.Frontends[0].Addrs()[0].String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	exchangeRaw(t, c, "GET /first HTTP/1.1\r\nHost: x\r\n\r\n", resp)
	answered := time.Now()
	waitHibernating(t, p, 1)
	// Idle long enough that the time the proxy spends after the answer
	// (its log line, Idle) cannot hide a Ti counted from the resumption.
	const idle = 200 * time.Millisecond
	waitFor(t, 10*time.Second, "the connection to be idle for "+idle.String(), func() bool {
		return time.Since(answered) >= idle
	})
	exchangeRaw(t, c, "GET /second HTTP/1.1\r\nHost: x\r\n\r\n", resp)
	var line map[string]any
	waitFor(t, 10*time.Second, "the second request's log line", func() bool {
		for _, l := range buf.lines() {
			if l["request"] == "GET /second HTTP/1.1" {
				line = l
				return true
			}
		}
		return false
	})
	for k, v := range map[string]any{"frontend": "www", "status": 200.0, "termination_state": "--"} {
		if line[k] != v {
			t.Errorf("%s: got %v, want %v (line %v)", k, line[k], v, line)
		}
	}
	if ti := line["Ti"].(float64); ti < float64(idle.Milliseconds()/2) {
		t.Errorf("Ti %v ms, want at least half the %v the connection was idle (line %v)", ti, idle, line)
	}
}

// A TLS connection of the epoll layer does not hibernate (crypto/tls
// keeps its own state over the socket): past IdleKeep it waits without
// its buffers on its goroutine, as on Go's layer, and is served after.
func TestHibernateNotTLS(t *testing.T) {
	t.Setenv(NetIOEnv, "")
	e := newTLSEnv(t)
	up, resp := fixedUpstream(t, "ok\n")
	p := e.start(t, fmt.Sprintf(`
[global]
tune_netio = "epoll"
[[frontend]]
name = "www"
bind = ["127.0.0.1:0 ssl crt a.pem alpn http/1.1"]
default_backend = "web"
[[backend]]
name = "web"
[[backend.server]]
name = "s1"
address = "%s"
`, up), nil)
	if p.group == nil {
		t.Skip("the epoll layer is not available here")
	}
	c, err := tls.Dial("tcp", p.Frontends[0].Addrs()[0].String(), e.clientTLS("a.test"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	exchangeRaw(t, c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n", resp)
	waitFor(t, 10*time.Second, "the TLS session to wait without its buffers", func() bool {
		without, with := parkedWithoutBuffers(p)
		return without == 1 && with == 0
	})
	if n := p.group.Hibernating(); n != 0 {
		t.Fatalf("hibernating: %d, want 0 (TLS)", n)
	}
	exchangeRaw(t, c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n", resp)
}

// A hibernating connection's keep-alive deadline waits in its poller's
// parking (no runtime timer of its own): `show sess` still lists the
// connection, `shutdown session` still closes it, and the keep-alive
// timeout (timeout_http_request) still closes it when due: not before the
// timeout since it was armed (at the earliest when the connection opened),
// and not long after the timeout since the last response.
func TestHibernateParkedDeadline(t *testing.T) {
	const timeout = 400 * time.Millisecond
	p, addr, resp := hibernatingProxy(t, "ok\n", func(cfg *conf.Config) {
		cfg.Frontends[0].TimeoutHTTPRequest = timeout
		cfg.Frontends[0].TimeoutClient = time.Minute
	})
	dialed := time.Now()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	exchangeRaw(t, c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n", resp)
	answered := time.Now()
	waitFor(t, 10*time.Second, "the connection to hibernate or close", func() bool {
		return p.group.Hibernating() == 1 || p.Frontends[0].Counters.Scur.Load() == 0
	})
	if n := p.group.Parked(); n != 1 && p.group.Hibernating() == 1 {
		t.Fatalf("parked deadlines: %d, want 1", n)
	}
	if ss := p.Sessions(); len(ss) != 1 || ss[0].Active || ss[0].Src.String() != c.LocalAddr().String() {
		t.Fatalf("sessions %+v, want the idle connection from %v", ss, c.LocalAddr())
	}
	closed := wantClosedAfter(t, c, dialed, timeout)
	if late := closed.Sub(answered.Add(timeout)); late > 3*time.Second {
		t.Fatalf("closed %v after the timeout", late)
	}
	waitFor(t, 10*time.Second, "the connection to be counted out", func() bool {
		return p.Frontends[0].Counters.Scur.Load() == 0 && p.group.Hibernating() == 0 && p.group.Parked() == 0 &&
			len(p.Sessions()) == 0
	})

	// shutdown session: the parked deadline goes with the connection.
	c2, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	exchangeRaw(t, c2, "GET / HTTP/1.1\r\nHost: x\r\n\r\n", resp)
	waitFor(t, 10*time.Second, "the second connection to hibernate", func() bool {
		return p.group.Hibernating() == 1 && p.group.Parked() == 1
	})
	ss := p.Sessions()
	if len(ss) != 1 || !p.ShutdownSession(ss[0].ID) {
		t.Fatalf("sessions %+v: shutdown session failed", ss)
	}
	c2.SetReadDeadline(time.Now().Add(10 * time.Second))
	if n, err := c2.Read(make([]byte, 64)); n != 0 || err != io.EOF {
		t.Fatalf("read %d bytes, %v after shutdown session; want the end of the stream", n, err)
	}
	waitFor(t, 10*time.Second, "the second connection to be counted out", func() bool {
		return p.Frontends[0].Counters.Scur.Load() == 0 && p.group.Hibernating() == 0 && p.group.Parked() == 0 &&
			len(p.Sessions()) == 0
	})
}

// wantClosedAfter reads c until its end, which must come no earlier than
// timeout after dialed, and returns when it came.
func wantClosedAfter(t *testing.T, c net.Conn, dialed time.Time, timeout time.Duration) time.Time {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	n, err := c.Read(make([]byte, 64))
	closed := time.Now()
	if n != 0 || err != io.EOF {
		t.Fatalf("read %d bytes, %v; want the end of the stream", n, err)
	}
	if closed.Before(dialed.Add(timeout)) {
		t.Fatalf("closed %v after the dial, before the %v timeout", closed.Sub(dialed), timeout)
	}
	return closed
}
