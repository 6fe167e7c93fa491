package proxy

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/fulcrum-proxy/fulcrum/conf"
)

// Keep-alive client connections give their buffers back while idle
// (http1.Settings.IdleKeep, session.awaitRequest): the next request's
// bytes must all arrive, in order, on their own connection.

// startProxyKeep is startProxy with the frontends' IdleKeep set to keep.
func startProxyKeep(tb testing.TB, cfg *conf.Config, keep time.Duration) (*Proxy, string) {
	tb.Helper()
	p, err := New(cfg, nopLogger())
	if err != nil {
		tb.Fatalf("New: %v", err)
	}
	for _, fe := range p.Frontends {
		fe.idleKeep = keep
	}
	if err := p.Start(); err != nil {
		tb.Fatalf("Start: %v", err)
	}
	tb.Cleanup(func() { p.Shutdown(contextBackground()) })
	return p, p.Frontends[0].Addrs()[0].String()
}

// parkedWithoutBuffers counts p's sessions waiting for a request without
// buffers: in the read without buffers (awaitRequest, from the goroutines'
// stacks) or hibernating (the epoll layer, no goroutine); and those
// waiting with them (a bufio Peek, or the epoll layer's Await of a session
// kept after a response it finished: no request is in flight when this
// is asked).
func parkedWithoutBuffers(p *Proxy) (without, with int) {
	if p.group != nil {
		without = int(p.group.Hibernating())
		with = int(p.group.Awaiting())
	}
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	for _, g := range bytes.Split(buf, []byte("\n\n")) {
		if !bytes.Contains(g, []byte("http1.(*session).awaitRequest")) {
			continue
		}
		// The read is the connection layer's (Go's poller or tune_netio's).
		if bytes.Contains(g, []byte("bufio.(*Reader).Peek")) {
			with++
		} else if bytes.Contains(g, []byte(").Read(")) {
			without++
		}
	}
	return without, with
}

// waitReleased waits until n of p's sessions wait for a request without
// buffers.
func waitReleased(tb testing.TB, p *Proxy, n int) {
	tb.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		without, _ := parkedWithoutBuffers(p)
		if without == n {
			return
		}
		if time.Now().After(deadline) {
			tb.Fatalf("%d sessions wait without buffers, want %d", without, n)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// echoUpstream answers "PATH PAD BODYLEN" for each request.
func echoUpstream(t *testing.T) *upstream {
	u := newUpstream(t, "echo")
	u.handler = func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		fmt.Fprintf(w, "%s %s %d", r.URL.Path, r.Header.Get("X-Pad"), len(b))
	}
	return u
}

func wantBody(t *testing.T, resp *http.Response, want string) {
	t.Helper()
	if got := bodyOf(resp); resp.StatusCode != 200 || got != want {
		t.Fatalf("got %d %q, want 200 %q", resp.StatusCode, got, want)
	}
}

func TestIdleWithoutBuffersNextRequest(t *testing.T) {
	u := echoUpstream(t)
	p, addr := startProxyKeep(t, testConfig(conf.ModeHTTP, []string{u.addr()}, nil), 0)
	rc := dialRaw(t, addr)
	wantBody(t, rc.do(t, "GET /first HTTP/1.1\r\nHost: x\r\n\r\n"), "/first  0")

	// A head longer than the first read (128 bytes): the rest comes through
	// the buffers taken back.
	waitReleased(t, p, 1)
	pad := strings.Repeat("p", 300)
	wantBody(t, rc.do(t, "GET /long HTTP/1.1\r\nHost: x\r\nX-Pad: "+pad+"\r\n\r\n"), "/long "+pad+" 0")

	// Three pipelined requests in one write: the first read ends inside the
	// second one.
	waitReleased(t, p, 1)
	var reqs string
	for i := range 3 {
		reqs += fmt.Sprintf("GET /pipe%d HTTP/1.1\r\nHost: x\r\nX-Pad: %s\r\n\r\n", i, strings.Repeat("q", 40+i))
	}
	rc.c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(rc.c, reqs); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		resp, err := http.ReadResponse(rc.br, nil)
		if err != nil {
			t.Fatalf("pipelined response %d: %v", i, err)
		}
		wantBody(t, resp, fmt.Sprintf("/pipe%d %s 0", i, strings.Repeat("q", 40+i)))
	}

	// A head split across two writes: the first read has its start only.
	waitReleased(t, p, 1)
	if _, err := io.WriteString(rc.c, "GET /split HTTP/1.1\r\nHo"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the first read to take the first part", func() bool {
		without, _ := parkedWithoutBuffers(p)
		return without == 0
	})
	wantBody(t, rc.do(t, "st: x\r\n\r\n"), "/split  0")

	// A request with a body.
	waitReleased(t, p, 1)
	body := strings.Repeat("b", 1000)
	wantBody(t, rc.do(t, "POST /body HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n"+body), "/body  1000")
}

// Many connections going idle and active at once: each gets its own
// answers (no byte crosses to another connection through the pools).
func TestIdleWithoutBuffersManyConnections(t *testing.T) {
	u := echoUpstream(t)
	p, addr := startProxyKeep(t, testConfig(conf.ModeHTTP, []string{u.addr()}, nil), 0)
	const n = 16
	rcs := make([]*rawClient, n)
	for i := range rcs {
		rcs[i] = dialRaw(t, addr)
		wantBody(t, rcs[i].do(t, "GET /hello HTTP/1.1\r\nHost: x\r\n\r\n"), "/hello  0")
	}
	for round := range 3 {
		waitReleased(t, p, n)
		var wg sync.WaitGroup
		errs := make(chan error, n)
		for i, rc := range rcs {
			wg.Go(func() {
				pad := strings.Repeat(string(rune('a'+i)), 100+i*10)
				path := fmt.Sprintf("/c%d/r%d", i, round)
				rc.c.SetDeadline(time.Now().Add(10 * time.Second))
				if _, err := io.WriteString(rc.c, "GET "+path+" HTTP/1.1\r\nHost: x\r\nX-Pad: "+pad+"\r\n\r\n"); err != nil {
					errs <- err
					return
				}
				resp, err := http.ReadResponse(rc.br, nil)
				if err != nil {
					errs <- err
					return
				}
				if got, want := bodyOf(resp), path+" "+pad+" 0"; got != want {
					errs <- fmt.Errorf("connection %d round %d: got %q, want %q", i, round, got, want)
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
	}
}

// A connection gives its buffers back once IdleKeep has passed, not before.
func TestIdleKeepThenRelease(t *testing.T) {
	u := echoUpstream(t)
	p, addr := startProxyKeep(t, testConfig(conf.ModeHTTP, []string{u.addr()}, nil), time.Hour)
	rc := dialRaw(t, addr)
	wantBody(t, rc.do(t, "GET /a HTTP/1.1\r\nHost: x\r\n\r\n"), "/a  0")
	waitFor(t, 10*time.Second, "a session waiting with its buffers", func() bool {
		without, with := parkedWithoutBuffers(p)
		return with == 1 && without == 0
	})
	wantBody(t, rc.do(t, "GET /b HTTP/1.1\r\nHost: x\r\n\r\n"), "/b  0")

	u2 := echoUpstream(t)
	p2, addr2 := startProxyKeep(t, testConfig(conf.ModeHTTP, []string{u2.addr()}, nil), 20*time.Millisecond)
	rc2 := dialRaw(t, addr2)
	wantBody(t, rc2.do(t, "GET /c HTTP/1.1\r\nHost: x\r\n\r\n"), "/c  0")
	waitReleased(t, p2, 1)
	wantBody(t, rc2.do(t, "GET /d HTTP/1.1\r\nHost: x\r\n\r\n"), "/d  0")
}

// A first request that never comes gets its 408 from a connection that
// waited without buffers (they are taken back for the answer).
func TestIdleWithoutBuffersRequestTimeout(t *testing.T) {
	u := echoUpstream(t)
	cfg := testConfig(conf.ModeHTTP, []string{u.addr()}, nil)
	cfg.Frontends[0].TimeoutHTTPRequest = 300 * time.Millisecond
	_, addr := startProxyKeep(t, cfg, 0)
	rc := dialRaw(t, addr)
	rc.c.SetDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(rc.br, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := bodyOf(resp); resp.StatusCode != 408 || got != errorPage(408) {
		t.Fatalf("got %d %q, want 408 %q", resp.StatusCode, got, errorPage(408))
	}
	if _, err := rc.br.ReadByte(); err != io.EOF {
		t.Fatalf("after the 408: %v, want EOF", err)
	}
}

// BenchmarkIdleKeepAliveMemory reports what an idle keep-alive client
// connection costs the proxy (heap in use plus goroutine stacks, after a
// GC, per connection): 1,000 connections through the whole proxy, each
// having made one request, waiting without their buffers (the steady
// state past IdleKeep) and, for comparison, with them, on the layer
// NetIOEnv or the default says (on Linux the epoll layer, where a
// connection past IdleKeep hibernates: no goroutine, session or Stream);
// "released-go" is the first on Go's layer whatever NetIOEnv says. The
// clients are raw sockets, so that they add nothing to the process's Go
// memory.
func BenchmarkIdleKeepAliveMemory(b *testing.B) {
	for _, c := range []struct {
		name  string
		keep  time.Duration
		netio string
	}{{"released", time.Millisecond, ""}, {"kept", time.Hour, ""}, {"released-go", time.Millisecond, "go"}} {
		b.Run(c.name, func(b *testing.B) {
			if c.netio != "" {
				b.Setenv(NetIOEnv, c.netio)
			}
			benchIdleMemory(b, c.keep, 1000)
		})
	}
}

func benchIdleMemory(b *testing.B, keep time.Duration, n int) {
	up := fastUpstream(b)
	var perConn, stackPerConn, goroutinesPerConn float64
	for range b.N {
		// A fresh proxy each time: a previous one's worker goroutines (and
		// their stacks) would otherwise serve these connections.
		g0 := runtime.NumGoroutine()
		before, stack0 := memInUse(), stackInUse()
		cfg := testConfig(conf.ModeHTTP, []string{up}, nil)
		cfg.Backends[0].HTTPReuse = "always"
		cfg.Frontends[0].TimeoutClient, cfg.Frontends[0].TimeoutHTTPRequest = time.Minute, time.Minute
		p, err := New(cfg, nopLogger())
		if err != nil {
			b.Fatal(err)
		}
		p.Frontends[0].idleKeep = keep
		if err := p.Start(); err != nil {
			b.Fatal(err)
		}
		ta := p.Frontends[0].Addrs()[0].(*net.TCPAddr)
		sa := &syscall.SockaddrInet4{Port: ta.Port}
		copy(sa.Addr[:], ta.IP.To4())
		fds := make([]int, 0, n)
		for range n {
			fd, err := rawRequest(sa)
			if err != nil {
				b.Fatal(err)
			}
			fds = append(fds, fd)
		}
		deadline := time.Now().Add(30 * time.Second)
		for {
			without, with := parkedWithoutBuffers(p)
			if (keep < time.Minute && without == n) || (keep >= time.Minute && with == n) {
				break
			}
			if time.Now().After(deadline) {
				b.Fatalf("%d sessions idle without buffers, %d with, want %d", without, with, n)
			}
			time.Sleep(10 * time.Millisecond)
		}
		perConn = float64(memInUse()-before) / float64(n)
		stackPerConn = float64(stackInUse()-stack0) / float64(n)
		goroutinesPerConn = float64(runtime.NumGoroutine()-g0) / float64(n)
		for _, fd := range fds {
			syscall.Close(fd)
		}
		p.Shutdown(contextBackground())
		for i := 0; runtime.NumGoroutine() > g0+1 && i < 3000; i++ {
			time.Sleep(10 * time.Millisecond) // the workers end with the proxy
		}
	}
	b.ReportMetric(perConn, "B/idle-conn")
	b.ReportMetric(stackPerConn, "stack-B/idle-conn")
	b.ReportMetric(goroutinesPerConn, "goroutines/idle-conn")
}

// memInUse is the heap in use plus the goroutine stacks, after a GC (the
// pools' contents go in the second).
func memInUse() int64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapInuse + ms.StackInuse)
}

// stackInUse is the goroutine stacks' memory (after memInUse's GC).
func stackInUse() int64 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.StackInuse)
}

// rawRequest opens a blocking socket to sa, sends one GET and reads the
// response ("ok\n", Content-Length 3) to its end; it returns the socket.
func rawRequest(sa *syscall.SockaddrInet4) (int, error) {
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	if err != nil {
		return -1, err
	}
	syscall.CloseOnExec(fd) // SOCK_CLOEXEC is not on every Unix (darwin)
	tv := syscall.Timeval{Sec: 10}
	syscall.SetsockoptTimeval(fd, syscall.SOL_SOCKET, syscall.SO_RCVTIMEO, &tv)
	if err := syscall.Connect(fd, sa); err != nil {
		syscall.Close(fd)
		return -1, err
	}
	if _, err := syscall.Write(fd, []byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n")); err != nil {
		syscall.Close(fd)
		return -1, err
	}
	var buf [512]byte
	have := 0
	for !bytes.HasSuffix(buf[:have], []byte("\r\n\r\nok\n")) {
		m, err := syscall.Read(fd, buf[have:])
		if err == syscall.EINTR {
			continue // the runtime's preemption signal
		}
		if err != nil || m <= 0 {
			syscall.Close(fd)
			return -1, fmt.Errorf("read response: %v (%q)", err, buf[:have])
		}
		have += m
	}
	return fd, nil
}
