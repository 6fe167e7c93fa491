package proxy

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"testing"
	"time"
)

// Mode tcp sessions relayed by the epoll layer's pollers (epoll.Pair,
// tune_netio = "epoll" and TCPRelayEnv unset) and on io_uring (tune_netio
// = "uring"): the same bytes, half-closes, counters, log line, aborts and
// stops as netio.Relay. Each test checks that its sessions did go through
// the relay named (its count of sessions while they run). The timeouts
// and their flags are TestTCPUringTimeouts'.

// tcpRelay is one of the relays the tests below run on.
type tcpRelay struct {
	netio string             // tune_netio
	ready func(t *testing.T) // skips where the relay is unavailable, or pins it
	live  func(p *Proxy) int64
	// total is how many sessions the relay took so far; nil: not counted.
	total func(p *Proxy) int64
	// stopped returns, before p stops, the condition that says the relay
	// let go of everything once p stopped.
	stopped func(p *Proxy) func() bool
}

// pairRelay is the epoll layer's default relay, whatever TCPRelayEnv says.
func pairRelay() tcpRelay {
	return tcpRelay{
		netio: "epoll",
		ready: func(t *testing.T) { t.Setenv(TCPRelayEnv, "") },
		live: func(p *Proxy) int64 {
			if p.group == nil {
				return 0
			}
			return p.group.Pairs()
		},
		stopped: func(p *Proxy) func() bool {
			g := p.group
			return func() bool { return g.Pairs() == 0 }
		},
	}
}

// uringRelay is the io_uring relay.
func uringRelay() tcpRelay {
	return tcpRelay{
		netio: "uring",
		ready: needUring,
		live: func(p *Proxy) int64 {
			if r := p.uring.Load(); r != nil {
				return int64(r.Live())
			}
			return 0
		},
		total: func(p *Proxy) int64 { return int64(uringPairs(p)) },
		stopped: func(p *Proxy) func() bool {
			return func() bool { return p.uring.Load() == nil }
		},
	}
}

// wantLive waits until r relays n sessions of p.
func (r tcpRelay) wantLive(t *testing.T, p *Proxy, n int64) {
	t.Helper()
	waitFor(t, 5*time.Second, "the relay's count of sessions", func() bool { return r.live(p) == n })
}

// wantTotal checks that r took n sessions of p in all, where it counts them.
func (r tcpRelay) wantTotal(t *testing.T, p *Proxy, n int64) {
	t.Helper()
	if r.total != nil {
		if got := r.total(p); got != n {
			t.Errorf("%d sessions relayed on %s, want %d", got, r.netio, n)
		}
	}
}

func TestTCPPairEchoHalfClose(t *testing.T)    { testTCPEchoHalfClose(t, pairRelay()) }
func TestTCPUringEchoHalfClose(t *testing.T)   { testTCPEchoHalfClose(t, uringRelay()) }
func TestTCPPairShutdownAndStop(t *testing.T)  { testTCPShutdownAndStop(t, pairRelay()) }
func TestTCPUringShutdownAndStop(t *testing.T) { testTCPShutdownAndStop(t, uringRelay()) }
func TestTCPPairManySessions(t *testing.T)     { testTCPManySessions(t, pairRelay()) }
func TestTCPUringManySessions(t *testing.T)    { testTCPManySessions(t, uringRelay()) }

// Echo, then half-close from the client: the server sees the end of the
// stream and still sends its reply, which the client gets before its own
// end of stream; counters and the log line count the bytes moved.
func testTCPEchoHalfClose(t *testing.T, r tcpRelay) {
	r.ready(t)
	srv := tcpServer(t, func(c *net.TCPConn) {
		buf := make([]byte, 5)
		if _, err := io.ReadFull(c, buf); err != nil {
			return
		}
		c.Write(buf) // echo
		rest, err := io.ReadAll(c)
		if err != nil {
			return
		}
		// After the client's end of stream: the reply.
		c.Write(append([]byte("got:"), rest...))
		c.CloseWrite()
		io.Copy(io.Discard, c)
	})
	p, addr, logs := startLoggedProxy(t, netioConfig(t, r.netio, []string{srv}))
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	c.Write([]byte("hello"))
	b := make([]byte, 5)
	if _, err := io.ReadFull(c, b); err != nil || string(b) != "hello" {
		t.Fatalf("echo %q %v", b, err)
	}
	r.wantLive(t, p, 1)
	c.Write([]byte("last words"))
	c.(*net.TCPConn).CloseWrite()
	got, err := io.ReadAll(c)
	if err != nil || string(got) != "got:last words" {
		t.Fatalf("after the half-close: %q %v, want the reply then the end of stream", got, err)
	}
	c.Close()
	l := tcpLogLine(t, logs)
	wantFlags(t, l, "--")
	if l["bytes_read"] != 19.0 {
		t.Errorf("bytes_read %v, want 19", l["bytes_read"])
	}
	waitFor(t, 5*time.Second, "session end", func() bool { return p.Snapshot().Backends[0].Scur == 0 })
	be := p.Snapshot().Backends[0]
	if be.Bin != 15 || be.Bout != 19 || be.Stot != 1 {
		t.Errorf("backend bin %d bout %d stot %d, want 15 19 1", be.Bin, be.Bout, be.Stot)
	}
	if fe := p.Snapshot().Frontends[0]; fe.Bin != 15 || fe.Bout != 19 {
		t.Errorf("frontend bin %d bout %d, want 15 19", fe.Bin, fe.Bout)
	}
	r.wantLive(t, p, 0)
	r.wantTotal(t, p, 1)
}

// shutdown sessions server ends a relayed session at once (the client
// sees its connection end, the relay lets it go); a graceful stop with
// live sessions ends them at its hard deadline.
func testTCPShutdownAndStop(t *testing.T, r tcpRelay) {
	r.ready(t)
	srv := tcpServer(t, echoConn)
	cfg := netioConfig(t, r.netio, []string{srv})
	cfg.Frontends[0].TimeoutClient = time.Minute
	cfg.Backends[0].TimeoutServer = time.Minute
	p, err := New(cfg, nopLogger())
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			p.Shutdown(context.Background())
		}
	})
	addr := p.Frontends[0].Addrs()[0].String()
	dial := func() net.Conn {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		c.SetDeadline(time.Now().Add(20 * time.Second))
		c.Write([]byte("ping"))
		b := make([]byte, 4)
		if _, err := io.ReadFull(c, b); err != nil || string(b) != "ping" {
			t.Fatalf("echo %q %v", b, err)
		}
		return c
	}
	c1 := dial()
	r.wantLive(t, p, 1)
	if n := p.ShutdownSessions(p.Backends[0].Servers()[0]); n != 1 {
		t.Fatalf("shutdown sessions server: %d, want 1", n)
	}
	if rest, err := io.ReadAll(c1); len(rest) != 0 || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("after shutdown session: %q %v, want the end", rest, err)
	}
	waitFor(t, 5*time.Second, "the session's end", func() bool { return p.Snapshot().Backends[0].Scur == 0 })
	r.wantLive(t, p, 0)

	c2, c3 := dial(), dial()
	r.wantLive(t, p, 2)
	r.wantTotal(t, p, 3)
	released := r.stopped(p)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- p.Shutdown(ctx) }()
	select {
	case err := <-done:
		stopped = true
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Shutdown: %v, want the hard-stop deadline", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Shutdown still waiting on relayed sessions")
	}
	for _, c := range []net.Conn{c2, c3} {
		if rest, err := io.ReadAll(c); len(rest) != 0 || errors.Is(err, os.ErrDeadlineExceeded) {
			t.Errorf("after the stop: %q %v, want the end", rest, err)
		}
	}
	waitFor(t, 5*time.Second, "the relay to let go after the stop", released)
}

// 200 concurrent sessions, each a few round trips: every byte back, each
// relayed while it ran, none left and no descriptor left open once they
// end (goroutines: goleak in TestMain).
func testTCPManySessions(t *testing.T, r tcpRelay) {
	r.ready(t)
	srv := tcpServer(t, echoConn)
	p, addr := startProxy(t, netioConfig(t, r.netio, []string{srv}))
	// One session first, so that the relay's own descriptors are counted
	// in the baseline.
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	c.Write([]byte("x"))
	io.ReadFull(c, make([]byte, 1))
	c.Close()
	waitFor(t, 5*time.Second, "the first session's end", func() bool { return p.Snapshot().Backends[0].Scur == 0 })
	base := openFDs(t)
	const n = 200
	var wg sync.WaitGroup
	errs := make(chan error, n)
	live := make(chan int64, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := net.Dial("tcp", addr)
			if err != nil {
				errs <- err
				return
			}
			defer c.Close()
			c.SetDeadline(time.Now().Add(30 * time.Second))
			msg := []byte{byte(i), byte(i >> 8), 'a', 'b'}
			got := make([]byte, len(msg))
			for range 5 {
				if _, err := c.Write(msg); err != nil {
					errs <- err
					return
				}
				if _, err := io.ReadFull(c, got); err != nil || !bytes.Equal(got, msg) {
					errs <- errors.Join(err, errors.New("echo mismatch"))
					return
				}
			}
			live <- r.live(p) // this session is still relayed
		}()
	}
	wg.Wait()
	close(errs)
	close(live)
	for err := range errs {
		t.Fatal(err)
	}
	for m := range live {
		if m < 1 {
			t.Fatalf("a session saw %d sessions relayed while it ran, want >= 1", m)
		}
	}
	waitFor(t, 10*time.Second, "every session's end", func() bool { return p.Snapshot().Backends[0].Scur == 0 })
	r.wantLive(t, p, 0)
	r.wantTotal(t, p, n+1)
	waitFor(t, 10*time.Second, "the descriptors back to the baseline", func() bool { return openFDs(t) <= base })
	if be := p.Snapshot().Backends[0]; be.Bin != n*20+1 || be.Bout != n*20+1 {
		t.Errorf("bin %d bout %d, want %d", be.Bin, be.Bout, n*20+1)
	}
}
