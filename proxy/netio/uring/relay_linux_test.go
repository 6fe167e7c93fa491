package uring

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fulcrum-proxy/fulcrum/internal/testutil"
	"golang.org/x/sys/unix"
)

// newRelay starts a Relay for a test (skipped when the kernel refuses
// io_uring, outside CI) and closes it at the end.
func newRelay(t *testing.T, cfg RelayConfig) *Relay {
	t.Helper()
	r, err := NewRelay(cfg)
	if err != nil {
		if (errors.Is(err, unix.EPERM) || errors.Is(err, unix.ENOSYS)) && os.Getenv("CI") != "true" {
			t.Skipf("io_uring refused by this kernel: %v", err)
		}
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := r.Close(); err != nil {
			t.Error(err)
		}
	})
	return r
}

// startServer listens on 127.0.0.1:0 and runs serve on each connection
// (closed after it); everything stops at the test's end.
func startServer(t *testing.T, serve func(net.Conn)) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.SetDeadline(time.Now().Add(20 * time.Second))
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				serve(c)
			}()
		}
	}()
	t.Cleanup(func() {
		l.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return l.Addr().String()
}

func echo(c net.Conn) { io.Copy(c, c) }

// through returns a client connection relayed by r to upstream: the
// relay's accepted socket and its socket to upstream are handed to r.
func through(t *testing.T, r *Relay, upstream string) *net.TCPConn {
	t.Helper()
	client, ffd, bfd := detachedPair(t, upstream)
	if err := r.Add(ffd, bfd); err != nil {
		unix.Close(ffd)
		unix.Close(bfd)
		t.Fatal(err)
	}
	return client
}

// detachedPair returns a client connection and the descriptors, out of
// Go's poller, of the socket that accepted it and of a connection to
// upstream: what a relay is given.
func detachedPair(t *testing.T, upstream string) (client *net.TCPConn, ffd, bfd int) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	c, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(20 * time.Second))
	front, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	back, err := net.Dial("tcp", upstream)
	if err != nil {
		front.Close()
		t.Fatal(err)
	}
	if ffd, err = Detach(front.(*net.TCPConn)); err != nil {
		t.Fatal(err)
	}
	if bfd, err = Detach(back.(*net.TCPConn)); err != nil {
		unix.Close(ffd)
		t.Fatal(err)
	}
	return c.(*net.TCPConn), ffd, bfd
}

// waitLive waits until r relays n pairs, failing after 10 s.
func waitLive(t *testing.T, r *Relay, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for r.Live() != n {
		if time.Now().After(deadline) {
			t.Fatalf("%d pairs live after 10 s, want %d (%+v)", r.Live(), n, r.Stats())
		}
		time.Sleep(time.Millisecond) // polling a counter: no event to wait on
	}
}

func TestRelayPingPong(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  RelayConfig
	}{
		{"default", RelayConfig{}},
		{"no-defer-taskrun", RelayConfig{Flags: SetupCoopTaskrun}},
		{"peek-first", RelayConfig{PeekFirst: true}},
		{"raw-wait", RelayConfig{RawWait: time.Millisecond}},
		{"wait-past-sends", RelayConfig{WaitPastSends: true}},
	} {
		t.Run(tc.name, func(t *testing.T) { testPingPong(t, tc.cfg) })
	}
}

func testPingPong(t *testing.T, cfg RelayConfig) {
	r := newRelay(t, cfg)
	up := startServer(t, echo)
	const clients, rounds = 8, 200
	conns := make([]*net.TCPConn, clients)
	for i := range conns {
		conns[i] = through(t, r, up)
	}
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	for i, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			msg := make([]byte, 64)
			got := make([]byte, 64)
			for k := range rounds {
				copy(msg, fmt.Sprintf("client %d round %d", i, k))
				if _, err := c.Write(msg); err != nil {
					errs <- err
					return
				}
				if _, err := io.ReadFull(c, got); err != nil {
					errs <- err
					return
				}
				if !bytes.Equal(got, msg) {
					errs <- fmt.Errorf("client %d round %d: got %q", i, k, got)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for _, c := range conns {
		c.Close()
	}
	waitLive(t, r, 0)
	s := r.Stats()
	if s.Pairs != clients || s.Closed != clients {
		t.Fatalf("pairs %d closed %d, want %d", s.Pairs, s.Closed, clients)
	}
	// Each round trip is at least one receive on each side (64 bytes
	// arrive as one segment, but may be split), each receive one send
	// at least.
	if s.Recvs < 2*clients*rounds || s.Sends != s.Recvs+s.Partial {
		t.Fatalf("stats %+v: want recvs >= %d and sends = recvs + partial", s, 2*clients*rounds)
	}
	if s.Enters >= s.Sends+s.Recvs {
		t.Fatalf("stats %+v: one io_uring_enter per operation or more", s)
	}
}

func TestRelayHalfClose(t *testing.T) {
	r := newRelay(t, RelayConfig{})
	// The server reads to the end, then answers and closes.
	up := startServer(t, func(c net.Conn) {
		b, err := io.ReadAll(c)
		if err != nil {
			return
		}
		fmt.Fprintf(c, "got %d bytes: %s", len(b), b)
	})
	c := through(t, r, up)
	if _, err := c.Write([]byte("ping")); err != nil {
		t.Fatal(err)
	}
	if err := c.CloseWrite(); err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(c)
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != "got 4 bytes: ping" {
		t.Fatalf("got %q", b)
	}
	c.Close()
	waitLive(t, r, 0)
}

func TestRelayBulk(t *testing.T) {
	// Few small buffers: the receives run out of them (ENOBUFS, re-armed)
	// and sends may be short; the bytes must come back whole and in order.
	r := newRelay(t, RelayConfig{Buffers: 8, BufSize: 4096})
	up := startServer(t, echo)
	c := through(t, r, up)
	const size = 4 << 20
	want := make([]byte, size)
	for i := range want {
		want[i] = byte(i*7 + i>>12)
	}
	werr := make(chan error, 1)
	go func() {
		_, err := c.Write(want)
		if err == nil {
			err = c.CloseWrite()
		}
		werr <- err
	}()
	got, err := io.ReadAll(c)
	if err != nil {
		t.Fatal(err)
	}
	if err := <-werr; err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("got %d bytes back, want %d equal", len(got), len(want))
	}
	c.Close()
	waitLive(t, r, 0)
	t.Logf("%+v", r.Stats())
}

func TestRelayServerReset(t *testing.T) {
	r := newRelay(t, RelayConfig{})
	up := startServer(t, func(c net.Conn) {
		b := make([]byte, 4)
		io.ReadFull(c, b)
		c.(*net.TCPConn).SetLinger(0) // the close sends a reset
	})
	c := through(t, r, up)
	if _, err := c.Write([]byte("ping")); err != nil {
		t.Fatal(err)
	}
	// The client sees its connection end (an end of stream or a reset),
	// and the pair goes.
	if b, err := io.ReadAll(c); len(b) != 0 {
		t.Fatalf("read %q, %v", b, err)
	}
	waitLive(t, r, 0)
}

func TestRelayClose(t *testing.T) {
	r, err := NewRelay(RelayConfig{})
	if err != nil {
		if (errors.Is(err, unix.EPERM) || errors.Is(err, unix.ENOSYS)) && os.Getenv("CI") != "true" {
			t.Skipf("io_uring refused by this kernel: %v", err)
		}
		t.Fatal(err)
	}
	up := startServer(t, echo)
	c1 := through(t, r, up)
	c2 := through(t, r, up)
	waitLive(t, r, 2)
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []*net.TCPConn{c1, c2} {
		if b, err := io.ReadAll(c); len(b) != 0 {
			t.Fatalf("after Close: read %q, %v", b, err)
		}
	}
	if s := r.Stats(); s.Pairs != 2 || s.Closed != 2 {
		t.Fatalf("stats %+v", s)
	}
	a, b := socketpair(t)
	if err := r.Add(a, b); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("Add after Close: %v", err)
	}
	// Add left them open.
	if _, err := unix.Write(a, []byte("x")); err != nil {
		t.Fatalf("socket closed by a failed Add: %v", err)
	}
	if err := r.Close(); err != nil {
		t.Fatal("second Close:", err)
	}
}

// BenchmarkRelayRoundTrip is BenchmarkRoundTrip of proxy/netio/epoll on
// the io_uring relay: one 64-byte request and its echo through a relayed
// pair, client and echo server in this process on Go's net.Conns. One op
// is one round trip. With one connection nothing is batched (the relay's
// worst case); bench/uring.sh measures 64 connections, the relay alone in
// its process.
func BenchmarkRelayRoundTrip(b *testing.B) {
	r, err := NewRelay(RelayConfig{})
	if err != nil {
		b.Skip("io_uring:", err)
	}
	defer r.Close()
	sl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer sl.Close()
	served := make(chan struct{})
	go func() {
		defer close(served)
		c, err := sl.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		io.Copy(c, c)
	}()
	ll, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	client, err := net.Dial("tcp", ll.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	defer client.Close()
	front, err := ll.Accept()
	ll.Close()
	if err != nil {
		b.Fatal(err)
	}
	back, err := net.Dial("tcp", sl.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	ffd, err := Detach(front.(*net.TCPConn))
	if err != nil {
		b.Fatal(err)
	}
	bfd, err := Detach(back.(*net.TCPConn))
	if err != nil {
		b.Fatal(err)
	}
	if err := r.Add(ffd, bfd); err != nil {
		b.Fatal(err)
	}
	client.SetDeadline(time.Now().Add(5 * time.Minute))
	testutil.PingPong(b, client, 64)
	client.Close()
	<-served
	s := r.Stats()
	b.ReportMetric(float64(s.Enters)/float64(b.N), "enters/op")
}

// TestProbeRecvMultishot: the start-up probe passes on this kernel and
// leaves the buffers as it found them (the ring usable after it), and
// fails, saying why, when the receive cannot take a buffer (here: none
// left), as on a kernel without multishot receive (EINVAL).
func TestProbeRecvMultishot(t *testing.T) {
	r := newRing(t, 8)
	br, err := r.NewBufRing(7, 2, 64)
	if err != nil {
		t.Fatal(err)
	}
	defer br.Close()
	for range 2 {
		if err := probeRecvMultishot(r, br); err != nil {
			t.Fatalf("probe: %v", err)
		}
		if br.Out() != 0 || r.Ready() != 0 || r.Pending() != 0 {
			t.Fatalf("after the probe: %d buffers out, %d completions, %d entries pending", br.Out(), r.Ready(), r.Pending())
		}
	}
	// Take both buffers with a receive of our own, then probe.
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fds[0])
	defer unix.Close(fds[1])
	r.GetSQE().PrepRecvMultishot(fds[0], br.Group(), 9)
	for i := range 2 {
		unix.Write(fds[1], []byte{'x'})
		if c := waitOne(t, r); c.Res != 1 {
			t.Fatalf("receive %d: %+v %v", i, c, c.Err())
		}
		br.Taken()
	}
	err = probeRecvMultishot(r, br)
	if !errors.Is(err, unix.ENOBUFS) || !strings.Contains(err.Error(), "multishot receive") {
		t.Fatalf("probe without buffers: %v, want multishot receive: ENOBUFS", err)
	}
}
