package proxy

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/fulcrum-proxy/fulcrum/conf"
	"github.com/fulcrum-proxy/fulcrum/internal/testutil"
	"github.com/fulcrum-proxy/fulcrum/proxy/netio/uring"
	"github.com/rs/zerolog"
	"golang.org/x/sys/unix"
)

// Mode tcp sessions relayed on io_uring (tune_netio = "uring"): the same
// bytes, half-closes, timeouts and their termination flags, counters,
// aborts and stops as the epoll layer's relay. Each test checks that its
// sessions did go through the relay (its Pairs counter).

// needUring skips the test where the kernel refuses io_uring (it fails
// with CI=true, whose kernel has it).
func needUring(t *testing.T) {
	t.Helper()
	r, err := uring.NewRelay(uring.RelayConfig{Buffers: 2, BufSize: 4096, Entries: 8})
	if err != nil {
		if (errors.Is(err, unix.EPERM) || errors.Is(err, unix.ENOSYS) || errors.Is(err, errors.ErrUnsupported)) && os.Getenv("CI") != "true" {
			t.Skipf("io_uring refused: %v", err)
		}
		t.Fatalf("io_uring: %v", err)
	}
	r.Close()
}

// netioConfig is testConfig on the layer named (tune_netio), whatever
// NetIOEnv says.
func netioConfig(t *testing.T, mode string, addrs []string) *conf.Config {
	t.Helper()
	t.Setenv(NetIOEnv, "")
	cfg := testConfig(conf.ModeTCP, addrs, nil)
	cfg.Global.NetIO = mode
	return cfg
}

// uringPairs is how many sessions p relayed on io_uring.
func uringPairs(p *Proxy) uint64 {
	r := p.uring.Load()
	if r == nil {
		return 0
	}
	return r.Stats().Pairs
}

func wantUringPairs(t *testing.T, p *Proxy, n uint64) {
	t.Helper()
	waitFor(t, 5*time.Second, "the relay's count of pairs", func() bool { return uringPairs(p) >= n })
	if got := uringPairs(p); got != n {
		t.Errorf("%d sessions relayed on io_uring, want %d", got, n)
	}
}

// 8 MiB each way at once, each side half-closing when done sending, the
// client reading slowly at first (the relay's queue fills and its receive
// pauses): checksums and byte counters exact.
func TestTCPUringBulkBothWays(t *testing.T) {
	needUring(t)
	const size = 8 << 20
	up, down := make([]byte, size), make([]byte, size)
	rand.Read(up)
	rand.Read(down)
	srv, serverGot := bulkServer(t, down)
	p, addr := startProxy(t, netioConfig(t, "uring", []string{srv}))
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(60 * time.Second))
	sent := make(chan struct{})
	go func() {
		defer close(sent)
		c.Write(up)
		c.(*net.TCPConn).CloseWrite()
	}()
	h := sha256.New()
	// Slowly first: 64 reads of 1 KiB, each after a yield.
	small := make([]byte, 1024)
	for range 64 {
		n, err := c.Read(small)
		if err != nil {
			t.Fatalf("client read: %v", err)
		}
		h.Write(small[:n])
		runtime.Gosched()
	}
	if _, err := io.Copy(h, c); err != nil {
		t.Fatalf("client read: %v", err)
	}
	<-sent
	if got, want := h.Sum(nil), sha256.Sum256(down); !bytes.Equal(got, want[:]) {
		t.Errorf("server-to-client checksum mismatch")
	}
	r := <-serverGot
	if want := sha256.Sum256(up); r.err != nil || r.sum != want {
		t.Errorf("client-to-server checksum mismatch (err %v)", r.err)
	}
	c.Close()
	waitFor(t, 10*time.Second, "session end", func() bool { return p.Snapshot().Backends[0].Scur == 0 })
	if be := p.Snapshot().Backends[0]; be.Bin != size || be.Bout != size {
		t.Errorf("backend bin %d bout %d, want %d both", be.Bin, be.Bout, size)
	}
	wantUringPairs(t, p, 1)
}

// timeout_client and timeout_server end an idle session with the flags
// the epoll layer's relay gives (cD, sD), on both layers.
func TestTCPUringTimeouts(t *testing.T) {
	needUring(t)
	for _, mode := range []string{"epoll", "uring"} {
		for _, tc := range []struct {
			name           string
			client, server time.Duration
			flags          string
		}{
			{"client", 200 * time.Millisecond, 30 * time.Second, "cD"},
			{"server", 30 * time.Second, 200 * time.Millisecond, "sD"},
		} {
			t.Run(mode+"/"+tc.name, func(t *testing.T) {
				srv := tcpServer(t, func(c *net.TCPConn) {
					buf := make([]byte, 4)
					if _, err := io.ReadFull(c, buf); err != nil {
						return
					}
					c.Write(buf)
					io.Copy(io.Discard, c) // then silent until the proxy closes
				})
				cfg := netioConfig(t, mode, []string{srv})
				cfg.Frontends[0].TimeoutClient = tc.client
				cfg.Backends[0].TimeoutServer = tc.server
				p, addr, logs := startLoggedProxy(t, cfg)
				c, err := net.Dial("tcp", addr)
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				c.SetDeadline(time.Now().Add(20 * time.Second))
				c.Write([]byte("ping"))
				b := make([]byte, 4)
				if _, err := io.ReadFull(c, b); err != nil {
					t.Fatal(err)
				}
				start := time.Now()
				if rest, err := io.ReadAll(c); len(rest) != 0 {
					t.Fatalf("after the timeout: %q %v", rest, err)
				}
				if d := time.Since(start); d < 150*time.Millisecond {
					t.Errorf("closed after %v, before the 200ms timeout", d)
				}
				wantFlags(t, tcpLogLine(t, logs), tc.flags)
				if mode == "uring" {
					wantUringPairs(t, p, 1)
				}
			})
		}
	}
}

// tcpLogLine waits for the first log line with a termination state (a
// tcp one has no status).
func tcpLogLine(t *testing.T, buf *syncBuffer) map[string]any {
	t.Helper()
	var line map[string]any
	waitFor(t, 5*time.Second, "a tcp log line", func() bool {
		for _, l := range buf.lines() {
			if l["termination_state"] != nil {
				line = l
				return true
			}
		}
		return false
	})
	return line
}

// openFDs is the number of descriptors the process has open.
func openFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("no /proc/self/fd: %v", err)
	}
	return len(ents)
}

// TestUringTunnelOnPollers: under tune_netio "uring" an HTTP/1 tunnel
// (WebSocket, after its 101) is relayed by the epoll layer's pollers, as
// under "epoll", not by a goroutine per direction.
func TestUringTunnelOnPollers(t *testing.T) {
	needUring(t)
	t.Setenv(NetIOEnv, "")
	t.Setenv(TCPRelayEnv, "")
	cfg := testConfig(conf.ModeHTTP, []string{wsServer(t)}, nil)
	cfg.Global.NetIO = "uring"
	p, addr := startProxy(t, cfg)
	rc := dialRaw(t, addr)
	rc.c.SetDeadline(time.Now().Add(10 * time.Second))
	io.WriteString(rc.c, "GET /echo HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n")
	resp, err := http.ReadResponse(rc.br, nil)
	if err != nil || resp.StatusCode != 101 {
		t.Fatalf("got %v %v, want 101", resp, err)
	}
	io.WriteString(rc.c, "ping")
	buf := make([]byte, 4)
	if _, err := io.ReadFull(rc.br, buf); err != nil || string(buf) != "ping" {
		t.Fatalf("echo %q %v", buf, err)
	}
	waitFor(t, 5*time.Second, "the tunnel on a pollers' pair", func() bool { return p.group.Pairs() == 1 })
	rc.c.Close()
	waitFor(t, 5*time.Second, "the pair's end", func() bool { return p.group.Pairs() == 0 })
}

// TestUringRingThread: OnRingThread's callback hears +1 when the io_uring
// relay takes its first session (not again for the next, while the first
// is open or within idleAfter) and -1 when the proxy stops, under "uring"
// and the default (tune_netio unset: conf.DefaultNetIO, "uring" on
// Linux); under "epoll" it hears nothing. With a short idleAfter it hears
// -1 once the relay has had no session that long, and +1 again at the
// next session.
func TestUringRingThread(t *testing.T) {
	needUring(t)
	srv := testutil.EchoServer(t)
	type run struct {
		p      *Proxy
		mu     sync.Mutex
		deltas []int
	}
	start := func(t *testing.T, mode string, idleAfter time.Duration) *run {
		r := &run{}
		p, err := New(netioConfig(t, mode, []string{srv}), zerolog.Nop())
		if err != nil {
			t.Fatal(err)
		}
		p.OnRingThread(func(d int) {
			r.mu.Lock()
			r.deltas = append(r.deltas, d)
			r.mu.Unlock()
		})
		p.ringThread.idleAfter = idleAfter
		if err := p.Start(); err != nil {
			t.Fatal(err)
		}
		r.p = p
		return r
	}
	// session opens a session and checks an echo through it.
	session := func(t *testing.T, r *run) net.Conn {
		return testutil.DialEcho(t, r.p.Frontends[0].Addrs()[0].String())
	}
	stop := func(r *run) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		r.p.Shutdown(ctx)
	}
	got := func(r *run) []int {
		r.mu.Lock()
		defer r.mu.Unlock()
		return slices.Clone(r.deltas)
	}
	for _, mode := range []string{"uring", "", "epoll"} {
		t.Run("netio="+mode, func(t *testing.T) {
			r := start(t, mode, time.Hour)
			session(t, r).Close()
			session(t, r).Close()
			stop(r)
			want := []int{+1, -1}
			if mode == "epoll" {
				want = nil
			}
			if d := got(r); !slices.Equal(d, want) {
				t.Errorf("ring thread deltas %v, want %v", d, want)
			}
		})
	}
	t.Run("idle", func(t *testing.T) {
		r := start(t, "uring", 20*time.Millisecond)
		c := session(t, r)
		if d := got(r); !slices.Equal(d, []int{+1}) {
			t.Errorf("a session open: deltas %v, want [1]", d)
		}
		c.Close()
		waitFor(t, 5*time.Second, "the idle -1", func() bool { return slices.Equal(got(r), []int{+1, -1}) })
		c = session(t, r)
		if d := got(r); !slices.Equal(d, []int{+1, -1, +1}) {
			t.Errorf("a session after idling: deltas %v, want [1 -1 1]", d)
		}
		c.Close()
		stop(r)
		if d := got(r); !slices.Equal(d, []int{+1, -1, +1, -1}) {
			t.Errorf("after the stop: deltas %v, want [1 -1 1 -1]", d)
		}
	})
}

// TestUringListeningLayer: a proxy with a mode tcp frontend starts its
// io_uring relay with it, before any session, and that frontend's
// plaintext binds say "uring" (the listening log line's netio); under
// "epoll" they say "epoll" and no relay starts.
func TestUringListeningLayer(t *testing.T) {
	needUring(t)
	srv := testutil.EchoServer(t)
	for _, mode := range []string{"uring", "", "epoll"} {
		t.Run("netio="+mode, func(t *testing.T) {
			p, _ := startProxy(t, netioConfig(t, mode, []string{srv}))
			want, running := "uring", true
			if mode == "epoll" {
				want, running = "epoll", false
			}
			if got := p.uring.Load() != nil; got != running {
				t.Errorf("relay running before any session: %v, want %v", got, running)
			}
			if got := p.Frontends[0].NetIOs(); len(got) != 1 || got[0] != want {
				t.Errorf("NetIOs %v, want [%s]", got, want)
			}
		})
	}
}
