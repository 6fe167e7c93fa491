package proxy

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fulcrum-proxy/fulcrum/conf"
	"github.com/fulcrum-proxy/fulcrum/proxy/http1"
)

// Responses finished by the epoll layer (http1/inline.go): a request
// without a body parks while its response comes; the reaper finishes a
// simple whole response, a worker goes on with the others.

// scriptUpstream is a server whose connections are served by serve (each
// in its own goroutine, closed after); conns receives each accepted
// connection's number, from 1.
func scriptUpstream(t *testing.T, serve func(n int, c net.Conn, br *bufio.Reader)) (addr string, conns *counter) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	conns = &counter{}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var open []net.Conn
	wg.Go(func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			n := conns.inc()
			mu.Lock()
			open = append(open, c)
			mu.Unlock()
			wg.Go(func() {
				defer c.Close()
				serve(n, c, bufio.NewReader(c))
			})
		}
	})
	t.Cleanup(func() {
		l.Close()
		mu.Lock()
		for _, c := range open {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return l.Addr().String(), conns
}

type counter struct {
	mu sync.Mutex
	n  int
}

func (c *counter) inc() int { c.mu.Lock(); defer c.mu.Unlock(); c.n++; return c.n }
func (c *counter) get() int { c.mu.Lock(); defer c.mu.Unlock(); return c.n }

// readReq reads one request head; false at the end of the stream.
func readReq(br *bufio.Reader) bool {
	var h http1.Head
	return h.Read(br, false) == nil
}

// inlineProxy starts a proxy on the epoll layer in front of addr (one
// server), edit changing its configuration first.
func inlineProxy(t *testing.T, addr string, edit func(*conf.Config)) (*Proxy, *Frontend, string) {
	t.Helper()
	cfg := epollConfig(t, conf.ModeHTTP, []string{addr})
	cfg.Backends[0].HTTPReuse = "always"
	if edit != nil {
		edit(cfg)
	}
	p, a := startProxy(t, cfg)
	return p, p.Frontends[0], a
}

// waitParked waits until a request parked (with nothing parked, for
// comparison, it is enough that its server got it).
func waitParked(t *testing.T, p *Proxy) {
	t.Helper()
	if os.Getenv(H1InlineEnv) != "0" {
		waitFor(t, 10*time.Second, "the request parked", func() bool { return p.group.Awaiting() == 1 })
	}
}

// gate is a channel closed once, by the test or at its end (cleanups
// registered after the server's run first: a server held on it does not
// outlive a failed test).
func gate() (ch chan struct{}, open func()) {
	ch = make(chan struct{})
	var once sync.Once
	open = func() { once.Do(func() { close(ch) }) }
	return ch, open
}

// wantInline checks fe's parked requests: finished by the reaper, and
// continued by a worker.
func wantInline(t *testing.T, fe *Frontend, finished, continued int64) {
	t.Helper()
	if os.Getenv(H1InlineEnv) == "0" {
		return // the same tests with nothing parked, for comparison
	}
	if f, c := fe.h1inl.Finished.Load(), fe.h1inl.Continued.Load(); f != finished || c != continued {
		t.Fatalf("parked requests: %d finished inline, %d continued, want %d and %d", f, c, finished, continued)
	}
}

// Simple responses are finished by the reaper, on one server connection;
// the counters and the connection's next requests are as usual; with
// H1InlineEnv=0 nothing parks.
func TestInlineFinishesResponses(t *testing.T) {
	for _, on := range []bool{true, false} {
		t.Run(map[bool]string{true: "on", false: "off"}[on], func(t *testing.T) {
			if !on {
				t.Setenv(H1InlineEnv, "0")
			}
			up, _ := fixedUpstream(t, "hello\n")
			p, fe, addr := inlineProxy(t, up, nil)
			rc := dialRaw(t, addr)
			const n = 20
			for i := range n {
				r := rc.do(t, "GET /r"+strconv.Itoa(i)+" HTTP/1.1\r\nHost: x\r\n\r\n")
				if b := bodyOf(r); r.StatusCode != 200 || b != "hello\n" || r.Header.Get("Content-Length") != "6" {
					t.Fatalf("request %d: %d %q %v", i, r.StatusCode, b, r.Header)
				}
			}
			if on {
				wantInline(t, fe, n, 0)
			} else {
				wantInline(t, fe, 0, 0)
			}
			if got := fe.Counters.Hrsp[2].Load(); got != n {
				t.Fatalf("2xx responses %d, want %d", got, n)
			}
			srv := p.Backends[0].Servers()[0]
			if got := srv.Counters.Hrsp[2].Load(); got != n {
				t.Fatalf("server 2xx %d, want %d", got, n)
			}
		})
	}
}

// A head that comes in two parts is waited for by the reaper (a wake-up
// each), the bytes read at each kept in order; a body whose rest comes
// later goes to a worker at once, which relays the head and the bytes
// there before the rest comes (as HAProxy forwards what it has: the
// reaper used to hold the head back until the whole body came).
func TestInlinePartialResponses(t *testing.T) {
	if os.Getenv(H1InlineEnv) == "0" {
		t.Skip("it counts the reaper's wake-ups: nothing parks with " + H1InlineEnv + "=0")
	}
	const head = "HTTP/1.1 200 OK\r\nContent-Length: 10\r\nX-Part: "
	step := make(chan struct{})
	up, _ := scriptUpstream(t, func(_ int, c net.Conn, br *bufio.Reader) {
		for readReq(br) {
			io.WriteString(c, head)
			<-step
			io.WriteString(c, "a\r\n\r\n01234")
			<-step
			io.WriteString(c, "56789")
		}
	})
	_, fe, addr := inlineProxy(t, up, nil)
	rc := dialRaw(t, addr)
	rc.c.SetDeadline(time.Now().Add(10 * time.Second))
	io.WriteString(rc.c, "GET /a HTTP/1.1\r\nHost: x\r\n\r\n")
	waitFor(t, 10*time.Second, "a wake-up with half a head", func() bool { return fe.h1inl.Waited.Load() == 1 })
	step <- struct{}{}
	// The head and half the body reach the client while the server
	// holds the rest.
	rc.c.SetDeadline(time.Now().Add(5 * time.Second))
	resp, err := http.ReadResponse(rc.br, nil)
	if err != nil {
		go func() { step <- struct{}{} }()
		t.Fatal(err)
	}
	half := make([]byte, 5)
	if _, err := io.ReadFull(resp.Body, half); err != nil || string(half) != "01234" || resp.Header.Get("X-Part") != "a" {
		go func() { step <- struct{}{} }() // the server's end
		t.Fatalf("before the rest: %q, %v, X-Part %q", half, err, resp.Header.Get("X-Part"))
	}
	step <- struct{}{}
	if rest, err := io.ReadAll(resp.Body); err != nil || string(rest) != "56789" {
		t.Fatalf("the rest: %q, %v", rest, err)
	}
	if got := fe.h1inl.Waited.Load(); got != 1 {
		t.Fatalf("%d waits on the reaper, want 1 (the head's)", got)
	}
	wantInline(t, fe, 0, 1)
	// The same again, the parts as they come: finished on the reaper or
	// by a worker, depending on what each wake-up finds.
	go func() { step <- struct{}{}; step <- struct{}{} }()
	r := rc.do(t, "GET /b HTTP/1.1\r\nHost: x\r\n\r\n")
	if got := bodyOf(r); got != "0123456789" {
		t.Fatalf("second response %q", got)
	}
	if f, c := fe.h1inl.Finished.Load(), fe.h1inl.Continued.Load(); f+c != 2 {
		t.Fatalf("parked requests: %d finished inline, %d continued, want 2 in all", f, c)
	}
}

// A server that closes in the middle of a body: the response goes on on
// a worker with the bytes read, as without parking: the client gets the
// head and those bytes, then the close (SD).
func TestInlineServerAbortMidBody(t *testing.T) {
	step := make(chan struct{})
	up, _ := scriptUpstream(t, func(_ int, c net.Conn, br *bufio.Reader) {
		readReq(br)
		io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n01234")
		<-step
	})
	p, fe, addr := inlineProxy(t, up, nil)
	rc := dialRaw(t, addr)
	rc.c.SetDeadline(time.Now().Add(10 * time.Second))
	io.WriteString(rc.c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	if os.Getenv(H1InlineEnv) != "0" {
		waitFor(t, 10*time.Second, "the half body handed to a worker", func() bool { return fe.h1inl.Continued.Load() == 1 })
	}
	close(step)
	resp, err := http.ReadResponse(rc.br, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(resp.Body)
	if string(b) != "01234" || err != io.ErrUnexpectedEOF {
		t.Fatalf("body %q, %v; want 01234 and the close", b, err)
	}
	wantInline(t, fe, 0, 1)
	waitFor(t, 5*time.Second, "srv_abrt", func() bool { return p.Backends[0].Counters.SrvAbrt.Load() == 1 })
}

// A response larger than the server reader's buffer, a chunked one and
// one with an interim 103 are relayed whole by a worker, on the same
// connections, which then serve the next requests inline.
func TestInlineLargeChunkedInterim(t *testing.T) {
	big := strings.Repeat("0123456789abcdef", 100000/16)
	up, conns := scriptUpstream(t, func(_ int, c net.Conn, br *bufio.Reader) {
		for i := 0; readReq(br); i++ {
			switch i % 4 {
			case 0:
				io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: "+strconv.Itoa(len(big))+"\r\n\r\n"+big)
			case 1:
				io.WriteString(c, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n1\r\n!\r\n0\r\n\r\n")
			case 2:
				io.WriteString(c, "HTTP/1.1 103 Early Hints\r\nLink: </s.css>\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
			default:
				io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nsimp")
			}
		}
	})
	_, fe, addr := inlineProxy(t, up, nil)
	rc := dialRaw(t, addr)
	for round := range 2 {
		if got := bodyOf(rc.do(t, "GET /big HTTP/1.1\r\nHost: x\r\n\r\n")); got != big {
			t.Fatalf("round %d: big body of %d bytes, want %d", round, len(got), len(big))
		}
		if got := bodyOf(rc.do(t, "GET /chunked HTTP/1.1\r\nHost: x\r\n\r\n")); got != "hello!" {
			t.Fatalf("round %d: chunked body %q", round, got)
		}
		rc.c.SetDeadline(time.Now().Add(10 * time.Second))
		io.WriteString(rc.c, "GET /hints HTTP/1.1\r\nHost: x\r\n\r\n")
		line, err := rc.br.ReadString('\n')
		if err != nil || line != "HTTP/1.1 103 Early Hints\r\n" {
			t.Fatalf("round %d: interim %q %v", round, line, err)
		}
		for line != "\r\n" {
			if line, err = rc.br.ReadString('\n'); err != nil {
				t.Fatal(err)
			}
		}
		resp, err := http.ReadResponse(rc.br, nil)
		if err != nil || bodyOf(resp) != "ok" {
			t.Fatalf("round %d: final response %v", round, err)
		}
		if got := bodyOf(rc.do(t, "GET /simple HTTP/1.1\r\nHost: x\r\n\r\n")); got != "simp" {
			t.Fatalf("round %d: simple body %q", round, got)
		}
	}
	wantInline(t, fe, 2, 6)
	if n := conns.get(); n != 1 {
		t.Fatalf("%d server connections, want 1", n)
	}
}

// Bytes after a response cost its server connection only: the client has
// the response and its next request goes on a new server connection. A
// server that answers garbage costs that request (502) and its client
// connection, as before; the next client is served.
func TestInlineGarbage(t *testing.T) {
	up, conns := scriptUpstream(t, func(n int, c net.Conn, br *bufio.Reader) {
		for readReq(br) {
			switch n {
			case 1:
				io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokGARBAGE")
			case 2:
				io.WriteString(c, "NOT HTTP AT ALL\r\n\r\n")
			default:
				io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nyes")
			}
		}
	})
	_, fe, addr := inlineProxy(t, up, nil)
	rc := dialRaw(t, addr)
	if got := bodyOf(rc.do(t, "GET /1 HTTP/1.1\r\nHost: x\r\n\r\n")); got != "ok" {
		t.Fatalf("first body %q", got)
	}
	r := rc.do(t, "GET /2 HTTP/1.1\r\nHost: x\r\n\r\n")
	if r.StatusCode != 502 {
		t.Fatalf("garbage answered %d, want 502", r.StatusCode)
	}
	rc.c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if n, err := rc.br.Read(make([]byte, 1)); n != 0 || err != io.EOF {
		t.Fatalf("after the 502: %d bytes, %v; want the end of the stream", n, err)
	}
	rc2 := dialRaw(t, addr)
	if got := bodyOf(rc2.do(t, "GET /3 HTTP/1.1\r\nHost: x\r\n\r\n")); got != "yes" {
		t.Fatalf("third body %q", got)
	}
	if got := bodyOf(rc2.do(t, "GET /4 HTTP/1.1\r\nHost: x\r\n\r\n")); got != "yes" {
		t.Fatalf("fourth body %q", got)
	}
	if n := conns.get(); n != 3 {
		t.Fatalf("%d server connections, want 3", n)
	}
	wantInline(t, fe, 3, 1)
	if got := fe.Counters.Hrsp[5].Load(); got != 1 {
		t.Fatalf("5xx %d, want 1", got)
	}
}

// timeout_server holds while the response is awaited with no goroutine:
// 504 once it passed, not before.
func TestInlineTimeoutServer(t *testing.T) {
	up, _ := scriptUpstream(t, func(_ int, c net.Conn, br *bufio.Reader) {
		readReq(br)
		br.ReadByte() // silent until closed
	})
	_, fe, addr := inlineProxy(t, up, func(cfg *conf.Config) {
		cfg.Backends[0].TimeoutServer = 300 * time.Millisecond
	})
	rc := dialRaw(t, addr)
	start := time.Now()
	r := rc.do(t, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	if took := time.Since(start); r.StatusCode != 504 || took < 300*time.Millisecond || took > 5*time.Second {
		t.Fatalf("%d after %v, want 504 after 300ms", r.StatusCode, took)
	}
	wantInline(t, fe, 0, 1)
	if got := fe.p.Backends[0].Servers()[0].Counters.Eresp.Load(); got != 1 {
		t.Fatalf("server eresp %d, want 1", got)
	}
}

// A client that closes while its response is awaited: the response is
// finished (its write fails or reaches a closed socket), the client
// connection is closed, and nothing is left (scur 0, server connection
// pooled or closed); the next client is served.
func TestInlineClientGone(t *testing.T) {
	got := make(chan struct{}, 1)
	answer, release := gate()
	up, _ := scriptUpstream(t, func(n int, c net.Conn, br *bufio.Reader) {
		for readReq(br) {
			if n == 1 {
				got <- struct{}{}
				<-answer
			}
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nlater")
		}
	})
	t.Cleanup(release)
	p, fe, addr := inlineProxy(t, up, nil)
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	<-got
	waitParked(t, p)
	c.Close()
	release()
	waitFor(t, 10*time.Second, "the client connection closed", func() bool { return fe.Counters.Scur.Load() == 0 })
	if f, c := fe.h1inl.Finished.Load(), fe.h1inl.Continued.Load(); f+c != 1 && os.Getenv(H1InlineEnv) != "0" {
		t.Fatalf("%d finished, %d continued, want 1 in all", f, c)
	}
	rc := dialRaw(t, addr)
	if got := bodyOf(rc.do(t, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")); got != "later" {
		t.Fatalf("next client got %q", got)
	}
}

// A stop while a response is awaited waits for it: the client has it
// (saying the connection closes), and the stop ends.
func TestInlineStop(t *testing.T) {
	got := make(chan struct{}, 1)
	answer, release := gate()
	up, _ := scriptUpstream(t, func(_ int, c net.Conn, br *bufio.Reader) {
		for readReq(br) {
			got <- struct{}{}
			<-answer
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nlast")
		}
	})
	t.Cleanup(release)
	p, fe, addr := inlineProxy(t, up, nil)
	rc := dialRaw(t, addr)
	rc.c.SetDeadline(time.Now().Add(10 * time.Second))
	io.WriteString(rc.c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	<-got
	waitParked(t, p)
	stopped := make(chan error, 1)
	go func() { stopped <- p.Shutdown(contextBackground()) }()
	waitFor(t, 10*time.Second, "the stop under way", func() bool { return p.stopping.Load() })
	release()
	resp, err := http.ReadResponse(rc.br, nil)
	if err != nil {
		t.Fatal(err)
	}
	if b := bodyOf(resp); b != "last" || !resp.Close {
		t.Fatalf("got %q, close %v; want \"last\" and close", b, resp.Close)
	}
	if err := <-stopped; err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	wantInline(t, fe, 1, 0)
}

// The log line of a request finished inline is the usual one; an
// operator's `shutdown session` while a response is awaited kills it (K
// flags, the client closed), and the proxy serves on.
func TestInlineLogAndShutdownSession(t *testing.T) {
	got := make(chan struct{}, 1)
	answer, release := gate()
	up, _ := scriptUpstream(t, func(n int, c net.Conn, br *bufio.Reader) {
		for readReq(br) {
			if n == 2 {
				got <- struct{}{}
				<-answer
			}
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nfirst")
		}
	})
	t.Cleanup(release)
	cfg := epollConfig(t, conf.ModeHTTP, []string{up})
	cfg.Backends[0].HTTPReuse = "never"
	p, addr, logs := startLoggedProxy(t, cfg)
	fe := p.Frontends[0]
	rc := dialRaw(t, addr)
	if b := bodyOf(rc.do(t, "GET /one HTTP/1.1\r\nHost: x\r\n\r\n")); b != "first" {
		t.Fatalf("got %q", b)
	}
	waitFor(t, 5*time.Second, "the first log line", func() bool { return len(logs.lines()) == 1 })
	line := logs.lines()[0]
	wantFlags(t, line, "--")
	if line["status"] != float64(200) || line["request"] != "GET /one HTTP/1.1" || line["server"] != "s1" {
		t.Fatalf("log line %v", line)
	}
	wantInline(t, fe, 1, 0)

	rc2 := dialRaw(t, addr)
	rc2.c.SetDeadline(time.Now().Add(10 * time.Second))
	io.WriteString(rc2.c, "GET /two HTTP/1.1\r\nHost: x\r\n\r\n")
	<-got
	waitParked(t, p)
	killed := 0
	for _, s := range p.Sessions() {
		if s.Active && s.Server == "s1" && p.ShutdownSession(s.ID) {
			killed++
		}
	}
	release()
	if killed != 1 {
		t.Fatalf("%d sessions shut down, want 1 (%+v)", killed, p.Sessions())
	}
	if _, err := io.ReadAll(rc2.br); err != nil {
		t.Fatalf("after the shutdown: %v, want the connection closed", err)
	}
	waitFor(t, 5*time.Second, "the killed request's log line", func() bool { return len(logs.lines()) == 2 })
	if f, _ := logs.lines()[1]["termination_state"].(string); f != "KH" {
		t.Fatalf("termination state %q, want KH (as with nothing parked; HAProxy's for a kill before the response head)", f)
	}
	wantInline(t, fe, 1, 1)
	rc3 := dialRaw(t, addr)
	if b := bodyOf(rc3.do(t, "GET /three HTTP/1.1\r\nHost: x\r\n\r\n")); b != "first" {
		t.Fatalf("after the shutdown: %q", b)
	}
}

// A client that does not read while it pipelines requests: the responses
// the reaper finishes meet a full socket (the rest waits for a worker's
// write), and every response arrives whole, in order.
func TestInlineSlowClientPipelined(t *testing.T) {
	if os.Getenv(H1InlineEnv) == "0" {
		t.Skip("it watches the parked requests' counters: nothing parks with " + H1InlineEnv + "=0")
	}
	body := strings.Repeat("0123456789abcdef", 512) // 8 KiB
	up, _ := fixedUpstream(t, body)
	_, fe, addr := inlineProxy(t, up, nil)
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(30 * time.Second))
	const n = 1000
	sent := make(chan error, 1)
	go func() {
		var err error
		for i := 0; i < n && err == nil; i++ {
			_, err = io.WriteString(c, "GET /p"+strconv.Itoa(i)+" HTTP/1.1\r\nHost: x\r\n\r\n")
		}
		sent <- err
	}()
	// Not read until the proxy's writes to it are blocked: the requests
	// stop being served (the served count stays put).
	var last int64 = -1
	waitFor(t, 20*time.Second, "the proxy blocked on the client", func() bool {
		cur := fe.h1inl.Finished.Load() + fe.h1inl.Continued.Load()
		stalled := cur == last && cur > 0 && cur < n
		last = cur
		if !stalled {
			time.Sleep(20 * time.Millisecond)
		}
		return stalled || cur == n
	})
	br := bufio.NewReader(c)
	for i := range n {
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("response %d: %v", i, err)
		}
		if b := bodyOf(resp); resp.StatusCode != 200 || b != body {
			t.Fatalf("response %d: %d, %d bytes", i, resp.StatusCode, len(b))
		}
	}
	if err := <-sent; err != nil {
		t.Fatal(err)
	}
	if f, c := fe.h1inl.Finished.Load(), fe.h1inl.Continued.Load(); f+c != n || f == 0 {
		t.Fatalf("%d finished inline, %d continued: want %d in all, some inline", f, c, n)
	}
}

// timeout_server holds while the rest of a body is awaited: from the last
// bytes, the client gets the head and those bytes, then the close, as
// without parking.
func TestInlineTimeoutServerMidBody(t *testing.T) {
	up, _ := scriptUpstream(t, func(_ int, c net.Conn, br *bufio.Reader) {
		readReq(br)
		io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n01234")
		br.ReadByte() // silent until closed
	})
	p, fe, addr := inlineProxy(t, up, func(cfg *conf.Config) {
		cfg.Backends[0].TimeoutServer = 300 * time.Millisecond
	})
	rc := dialRaw(t, addr)
	rc.c.SetDeadline(time.Now().Add(10 * time.Second))
	start := time.Now()
	io.WriteString(rc.c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	resp, err := http.ReadResponse(rc.br, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(resp.Body)
	if took := time.Since(start); string(b) != "01234" || err != io.ErrUnexpectedEOF || took < 300*time.Millisecond {
		t.Fatalf("body %q, %v after %v; want 01234 and the close after 300ms", b, err, took)
	}
	wantInline(t, fe, 0, 1)
	waitFor(t, 5*time.Second, "srv_abrt", func() bool { return p.Backends[0].Counters.SrvAbrt.Load() == 1 })
}
