package epoll

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
)

// newGroup returns a group closed at the end of the test.
func newGroup(t *testing.T, n int) *Group {
	t.Helper()
	g, err := NewGroup(n)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Unref() })
	return g
}

// accepted returns a Conn accepted by g and the net.Conn that dialled it.
func accepted(t testing.TB, g *Group) (*Conn, net.Conn) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	el, err := g.Listen(l.(*net.TCPListener))
	if err != nil {
		t.Fatal(err)
	}
	defer el.Close()
	peer, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	c, err := el.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(); peer.Close() })
	return c.(*Conn), peer
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// Bytes go both ways exactly, over many connections served by two pollers
// at once.
func TestEcho(t *testing.T) {
	g := newGroup(t, 2)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	el, err := g.Listen(l.(*net.TCPListener))
	if err != nil {
		t.Fatal(err)
	}
	defer el.Close()
	const conns, rounds = 16, 50
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // the server side: echo on each accepted Conn
		defer wg.Done()
		for range conns {
			c, err := el.Accept()
			if err != nil {
				t.Error(err)
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				io.Copy(writerOnly{c.(*Conn)}, c)
			}()
		}
	}()
	for i := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := net.Dial("tcp", l.Addr().String())
			if err != nil {
				t.Error(err)
				return
			}
			defer c.Close()
			buf := make([]byte, 64)
			for r := range rounds {
				msg := []byte(strings.Repeat(string(rune('a'+i)), 1+r))
				if _, err := c.Write(msg); err != nil {
					t.Error(err)
					return
				}
				if _, err := io.ReadFull(c, buf[:len(msg)]); err != nil {
					t.Error(err)
					return
				}
				if !bytes.Equal(buf[:len(msg)], msg) {
					t.Errorf("conn %d round %d: got %q, want %q", i, r, buf[:len(msg)], msg)
					return
				}
			}
		}()
	}
	wg.Wait()
}

// Read returns io.EOF once the peer closed, and keeps returning it.
func TestReadEOF(t *testing.T) {
	g := newGroup(t, 1)
	c, peer := accepted(t, g)
	peer.Write([]byte("last"))
	peer.Close()
	got, err := io.ReadAll(c)
	if err != nil || string(got) != "last" {
		t.Fatalf("ReadAll = %q, %v; want \"last\", nil", got, err)
	}
	if n, err := c.Read(make([]byte, 1)); n != 0 || err != io.EOF {
		t.Fatalf("Read after EOF = %d, %v; want 0, EOF", n, err)
	}
}

// A read deadline fails a blocked read with a timeout; one set in the past
// wakes it at once (the queue's dispatcher relies on it); a read past an
// expired deadline fails even with bytes waiting, as net.Conn's.
func TestReadDeadline(t *testing.T) {
	g := newGroup(t, 1)
	c, peer := accepted(t, g)
	c.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
	_, err := c.Read(make([]byte, 1))
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("Read at the deadline: %v, want a timeout", err)
	}
	c.SetReadDeadline(time.Time{})
	done := make(chan error, 1)
	go func() {
		_, err := c.Read(make([]byte, 1))
		done <- err
	}()
	waitFor(t, "the reader to block", func() bool { return c.r.waiting.Load() })
	c.SetReadDeadline(time.Unix(1, 0))
	if err := <-done; !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("woken Read: %v, want a deadline error", err)
	}
	peer.Write([]byte("x"))
	waitFor(t, "the byte's event", func() bool { return c.r.ready.Load() == 1 })
	if _, err := c.Read(make([]byte, 1)); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("Read past the deadline with a byte waiting: %v, want a deadline error", err)
	}
	c.SetReadDeadline(time.Time{})
	if b := make([]byte, 1); mustRead(t, c, b) != "x" {
		t.Fatal("the byte was lost")
	}
}

// The deadline's state is the timer's, not a clock read per operation: a
// deadline moved later clears it, a timer run that finds a later deadline
// (it began before the move, or the wall clock went back) leaves it clear
// and re-arms, and a deadline that has passed stays past until reset.
func TestDeadlineTimerState(t *testing.T) {
	g := newGroup(t, 1)
	c, peer := accepted(t, g)
	c.SetReadDeadline(time.Unix(1, 0))
	if !c.r.expired() {
		t.Fatal("a deadline in the past is not expired")
	}
	c.SetReadDeadline(time.Now().Add(time.Hour))
	if c.r.expired() {
		t.Fatal("a deadline moved an hour later is still expired")
	}
	c.r.expire() // a late run of the old timer
	if c.r.expired() {
		t.Fatal("a timer run before the new deadline marked it past")
	}
	peer.Write([]byte("y"))
	if b := make([]byte, 1); mustRead(t, c, b) != "y" {
		t.Fatal("the byte was lost")
	}
	c.SetReadDeadline(time.Now().Add(30 * time.Millisecond))
	if lazyDeadlines {
		// The timer is made by the first wait (TestLazyDeadline): this
		// Read's, which it ends.
		if _, err := c.Read(make([]byte, 1)); !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("Read: %v, want a deadline error", err)
		}
	}
	waitFor(t, "the timer to mark the deadline past", c.r.expired)
	if _, err := c.Read(make([]byte, 1)); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("Read after the timer: %v, want a deadline error", err)
	}
	c.SetReadDeadline(time.Time{})
	if c.r.expired() {
		t.Fatal("no deadline, yet expired")
	}
}

func mustRead(t testing.TB, c net.Conn, b []byte) string {
	t.Helper()
	n, err := c.Read(b)
	if err != nil {
		t.Fatal(err)
	}
	return string(b[:n])
}

// Close wakes a blocked Read and a blocked Write with net.ErrClosed, and a
// second Close fails.
func TestCloseWakes(t *testing.T) {
	g := newGroup(t, 1)
	c, _ := accepted(t, g)
	rerr, werr := make(chan error, 1), make(chan error, 1)
	go func() {
		_, err := c.Read(make([]byte, 1))
		rerr <- err
	}()
	go func() { // the peer never reads: the buffers fill and Write blocks
		big := make([]byte, 64<<20)
		_, err := c.Write(big)
		werr <- err
	}()
	waitFor(t, "both sides to block", func() bool { return c.r.waiting.Load() && c.w.waiting.Load() })
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	for name, ch := range map[string]chan error{"Read": rerr, "Write": werr} {
		if err := <-ch; !errors.Is(err, net.ErrClosed) {
			t.Errorf("%s after Close: %v, want net.ErrClosed", name, err)
		}
	}
	if err := c.Close(); !errors.Is(err, net.ErrClosed) {
		t.Errorf("second Close: %v, want net.ErrClosed", err)
	}
	waitFor(t, "the descriptor to close", func() bool { return g.conns.get(c.fd) != c })
}

// A write deadline ends a write the peer does not drain, with the bytes
// written so far; one set in the past wakes a blocked write at once.
func TestWriteDeadline(t *testing.T) {
	g := newGroup(t, 1)
	c, _ := accepted(t, g)
	type result struct {
		n   int
		err error
	}
	done := make(chan result, 1)
	go func() {
		n, err := c.Write(make([]byte, 64<<20))
		done <- result{n, err}
	}()
	waitFor(t, "the writer to block", func() bool { return c.w.waiting.Load() })
	c.SetWriteDeadline(time.Unix(1, 0))
	r := <-done
	var ne net.Error
	if !errors.As(r.err, &ne) || !ne.Timeout() || r.n == 0 || r.n >= 64<<20 {
		t.Fatalf("Write = %d, %v; want some bytes and a timeout", r.n, r.err)
	}
	c.SetWriteDeadline(time.Now().Add(time.Hour))
	c.SetWriteDeadline(time.Unix(1, 0))
	if n, err := c.Write([]byte("x")); n != 0 || !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("Write past the deadline = %d, %v; want 0 and a deadline error", n, err)
	}
}

// The RawConn calls its callback first and, when it declines, waits for
// the next event: bytes arriving later end the wait.
func TestRawRead(t *testing.T) {
	g := newGroup(t, 1)
	c, peer := accepted(t, g)
	rc, _ := c.SyscallConn()
	calls := 0
	go func() {
		waitFor(t, "the raw reader to wait", func() bool { return c.r.waiting.Load() })
		peer.Write([]byte("y"))
	}()
	err := rc.Read(func(uintptr) bool {
		calls++
		return calls == 2
	})
	if err != nil || calls != 2 {
		t.Fatalf("RawConn.Read: %v after %d calls, want nil after 2", err, calls)
	}
	if got := mustRead(t, c, make([]byte, 4)); got != "y" {
		t.Fatalf("Read after the raw read: %q, want y", got)
	}
}

// Idle is true while nothing came, false once a byte or the end of the
// stream arrived (once the poller saw it).
func TestIdle(t *testing.T) {
	for _, tc := range []struct {
		name string
		peer func(net.Conn)
	}{
		{"stray byte", func(c net.Conn) { c.Write([]byte("x")) }},
		{"closed", func(c net.Conn) { c.Close() }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := newGroup(t, 1)
			c, peer := accepted(t, g)
			if !c.Idle() {
				t.Fatal("a new connection is not idle")
			}
			tc.peer(peer)
			waitFor(t, "Idle to turn false", func() bool { return !c.Idle() })
			if c.Idle() {
				t.Fatal("Idle came back true with the byte or the end still there")
			}
		})
	}
}

// ReadFrom splices between Conns, exactly the bytes of a LimitedReader's
// limit, and copies from other readers.
func TestReadFrom(t *testing.T) {
	g := newGroup(t, 2)
	src, srcPeer := accepted(t, g)
	dst, dstPeer := accepted(t, g)
	payload := bytes.Repeat([]byte("0123456789abcdef"), 200_000) // 3.2 MB
	go func() {
		srcPeer.Write(payload)
		srcPeer.Write([]byte("tail"))
	}()
	got := make(chan []byte, 1)
	go func() {
		b, _ := io.ReadAll(dstPeer)
		got <- b
	}()
	lr := &io.LimitedReader{R: src, N: int64(len(payload))}
	n, err := dst.ReadFrom(lr)
	if err != nil || n != int64(len(payload)) || lr.N != 0 {
		t.Fatalf("ReadFrom = %d, %v (N left %d); want %d, nil, 0", n, err, lr.N, len(payload))
	}
	if _, err := dst.ReadFrom(strings.NewReader("+plain")); err != nil {
		t.Fatal(err)
	}
	dst.CloseWrite()
	b := <-got
	if want := append(append([]byte{}, payload...), "+plain"...); !bytes.Equal(b, want) {
		t.Fatalf("received %d bytes, want %d (equal: false)", len(b), len(want))
	}
	if rest := mustRead(t, src, make([]byte, 8)); rest != "tail" {
		t.Fatalf("the source's next bytes: %q, want tail", rest)
	}
}

// FromTCP moves a dialled connection into the group; the original is
// closed and the connection still works both ways.
func TestFromTCP(t *testing.T) {
	g := newGroup(t, 1)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	nc, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	peer, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer peer.Close()
	c, err := g.FromTCP(nc.(*net.TCPConn))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := nc.Write([]byte("x")); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("the original after FromTCP: %v, want net.ErrClosed", err)
	}
	if c.RemoteAddr().String() != l.Addr().String() || c.LocalAddr().String() != peer.RemoteAddr().String() {
		t.Fatalf("addresses %v -> %v, want %v -> %v", c.LocalAddr(), c.RemoteAddr(), peer.RemoteAddr(), l.Addr())
	}
	for range 2 { // converted, then kept
		if local, remote := c.AddrPorts(); local.String() != peer.RemoteAddr().String() || remote.String() != l.Addr().String() {
			t.Fatalf("AddrPorts %v -> %v, want %v -> %v", local, remote, peer.RemoteAddr(), l.Addr())
		}
	}
	c.Write([]byte("ping"))
	if got := mustRead(t, peer, make([]byte, 8)); got != "ping" {
		t.Fatalf("peer read %q, want ping", got)
	}
	peer.Write([]byte("pong"))
	if got := mustRead(t, c, make([]byte, 8)); got != "pong" {
		t.Fatalf("read %q, want pong", got)
	}
}

// Accept fails with net.ErrClosed once the listener is closed, and with a
// timeout at its deadline (a reload's hand-over).
func TestAcceptErrors(t *testing.T) {
	g := newGroup(t, 1)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	el, _ := g.Listen(l.(*net.TCPListener))
	el.SetDeadline(time.Unix(1, 0))
	_, err = el.Accept()
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("Accept past the deadline: %v, want a timeout", err)
	}
	el.SetDeadline(time.Time{})
	el.Close()
	if _, err := el.Accept(); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("Accept on a closed listener: %v, want net.ErrClosed", err)
	}
}

// A group stays open while referenced and closes with its last reference.
func TestGroupRefs(t *testing.T) {
	g, err := NewGroup(2)
	if err != nil {
		t.Fatal(err)
	}
	if !g.Ref() {
		t.Fatal("Ref on an open group failed")
	}
	g.Unref()
	select {
	case <-g.polls[0].done:
		t.Fatal("the group closed with a reference left")
	default:
	}
	g.Unref()
	for _, p := range g.polls {
		<-p.done
	}
	if g.Ref() {
		t.Fatal("Ref on a closed group succeeded")
	}
}

// A table entry maps a descriptor to its Conn until cleared, and clearing
// with another Conn leaves it (a reused descriptor).
func TestTable(t *testing.T) {
	var tb table
	a, b := &Conn{}, &Conn{}
	tb.set(3000, a)
	if tb.get(3000) != a || tb.get(2999) != nil || tb.get(1<<20) != nil || tb.get(-1) != nil {
		t.Fatal("lookups after set")
	}
	tb.clear(3000, b)
	if tb.get(3000) != a {
		t.Fatal("clear with another Conn removed the entry")
	}
	tb.clear(3000, a)
	if tb.get(3000) != nil {
		t.Fatal("clear left the entry")
	}
}

// An accepted Conn knows both addresses without asking the kernel when the
// listener is bound to one address: the local one is the listener's.
func TestAcceptAddrs(t *testing.T) {
	g := newGroup(t, 1)
	c, peer := accepted(t, g)
	if c.LocalAddr().String() != peer.RemoteAddr().String() || c.RemoteAddr().String() != peer.LocalAddr().String() {
		t.Fatalf("addresses %v -> %v, want %v -> %v", c.RemoteAddr(), c.LocalAddr(), peer.LocalAddr(), peer.RemoteAddr())
	}
}

// A deadline set on a side that does not wait makes no timer
// (lazyDeadlines): a read that finds bytes needs none, the first wait
// makes it (and fails at once if the deadline has passed), a side with a
// timer keeps it, and a waiter blocked when the deadline is set gets one
// at once. FULCRUM_LAZY_DEADLINES=0 makes the timer at every deadline.
func TestLazyDeadline(t *testing.T) {
	for _, lazy := range []bool{true, false} {
		t.Run(fmt.Sprint("lazy=", lazy), func(t *testing.T) {
			saved := lazyDeadlines
			lazyDeadlines = lazy
			defer func() { lazyDeadlines = saved }()
			g := newGroup(t, 1)
			c, peer := accepted(t, g)
			hasTimer := func() bool {
				c.r.tmu.Lock()
				defer c.r.tmu.Unlock()
				return c.r.timer != nil
			}
			c.SetReadDeadline(time.Now().Add(time.Hour))
			if hasTimer() == lazy {
				t.Fatalf("timer made: %v, want %v", hasTimer(), !lazy)
			}
			peer.Write([]byte("a"))
			if b := make([]byte, 1); mustRead(t, c, b) != "a" {
				t.Fatal("the byte was lost")
			}
			// A deadline that passes with no wait: the next wait reports it.
			dl := time.Now().Add(20 * time.Millisecond)
			c.SetReadDeadline(dl)
			waitFor(t, "the deadline to pass", func() bool { return time.Now().After(dl) })
			start := time.Now()
			if _, err := c.Read(make([]byte, 1)); !errors.Is(err, os.ErrDeadlineExceeded) {
				t.Fatalf("Read after the deadline: %v, want a deadline error", err)
			}
			if d := time.Since(start); d > time.Second {
				t.Fatalf("the deadline error took %v", d)
			}
			if !c.r.expired() {
				t.Fatal("not expired after the deadline error")
			}
			// A waiter blocked when the deadline is set is woken by it.
			c.SetReadDeadline(time.Time{})
			errc := make(chan error, 1)
			go func() {
				_, err := c.Read(make([]byte, 1))
				errc <- err
			}()
			waitFor(t, "the reader to wait", c.r.waiting.Load)
			c.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
			select {
			case err := <-errc:
				if !errors.Is(err, os.ErrDeadlineExceeded) {
					t.Fatalf("blocked Read: %v, want a deadline error", err)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("the blocked Read was not ended by its deadline")
			}
			if !hasTimer() {
				t.Fatal("no timer after a wait with a deadline")
			}
		})
	}
}
