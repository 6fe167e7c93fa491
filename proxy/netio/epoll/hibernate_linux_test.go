package epoll

import (
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"
)

// registered returns an accepted connection that has read the peer's
// first bytes and is in the epoll instance (as after a wait), its socket
// empty.
func registered(t testing.TB, g *Group) (*Conn, net.Conn) {
	t.Helper()
	c, peer := accepted(t, g)
	if _, err := peer.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	if got := mustRead(t, c, make([]byte, 8)); got != "x" {
		t.Fatalf("read %q, want x", got)
	}
	if err := c.arm(regIn); err != nil { // as the first wait does
		t.Fatal(err)
	}
	return c, peer
}

// hibernated hibernates a registered connection; the returned channel
// receives once when resume runs.
func hibernated(t *testing.T, g *Group) (*Conn, net.Conn, chan struct{}) {
	t.Helper()
	c, peer := registered(t, g)
	resumed := make(chan struct{}, 2)
	c.Hibernate(WakeFunc(func() { resumed <- struct{}{} }))
	return c, peer, resumed
}

// resumedOnce waits (up to 10 s) for resume, then checks that it ran once
// and that the group's count is back to 0.
func resumedOnce(t *testing.T, g *Group, resumed chan struct{}) {
	t.Helper()
	select {
	case <-resumed:
	case <-time.After(10 * time.Second):
		t.Fatal("resume was not called")
	}
	if n := g.Hibernating(); n != 0 {
		t.Fatalf("hibernating: %d after resume, want 0", n)
	}
	select {
	case <-resumed:
		t.Fatal("resume was called twice")
	default:
	}
}

// A hibernating connection costs no goroutine: it is resumed by what
// would have woken a read (bytes, the peer's close, the read deadline,
// Close), once, and the read that follows sees what woke it.
func TestHibernate(t *testing.T) {
	g := newGroup(t, 1)

	t.Run("bytes", func(t *testing.T) {
		c, peer, resumed := hibernated(t, g)
		if n := g.Hibernating(); n != 1 {
			t.Fatalf("hibernating: %d, want 1", n)
		}
		select {
		case <-resumed:
			t.Fatal("resumed with nothing to read")
		default:
		}
		peer.Write([]byte("next"))
		resumedOnce(t, g, resumed)
		if got := mustRead(t, c, make([]byte, 8)); got != "next" {
			t.Fatalf("read %q after resume, want next", got)
		}
	})

	t.Run("peer close", func(t *testing.T) {
		c, peer, resumed := hibernated(t, g)
		peer.Close()
		resumedOnce(t, g, resumed)
		if _, err := c.Read(make([]byte, 8)); err != io.EOF {
			t.Fatalf("read after resume: %v, want EOF", err)
		}
	})

	t.Run("deadline", func(t *testing.T) {
		c, _, resumed := hibernated(t, g)
		c.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
		// The deadline is set before hibernating in the proxy; here after:
		// its timer resumes the connection either way.
		resumedOnce(t, g, resumed)
		if _, err := c.Read(make([]byte, 8)); !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("read after resume: %v, want a deadline error", err)
		}
	})

	t.Run("deadline armed before", func(t *testing.T) {
		c, _ := registered(t, g)
		dl := time.Now().Add(50 * time.Millisecond)
		c.SetReadDeadline(dl)
		resumed := make(chan struct{}, 2)
		c.Hibernate(WakeFunc(func() { resumed <- struct{}{} }))
		resumedOnce(t, g, resumed)
		if now := time.Now(); now.Before(dl) {
			t.Fatalf("resumed %v before the deadline", dl.Sub(now))
		}
	})

	t.Run("close", func(t *testing.T) {
		c, _, resumed := hibernated(t, g)
		c.Close()
		resumedOnce(t, g, resumed)
		if _, err := c.Read(make([]byte, 8)); !errors.Is(err, net.ErrClosed) {
			t.Fatalf("read after resume: %v, want net.ErrClosed", err)
		}
	})

	t.Run("already readable", func(t *testing.T) {
		c, peer := registered(t, g)
		peer.Write([]byte("y"))
		waitFor(t, "the event", func() bool { return c.r.ready.Load() != 0 })
		resumed := make(chan struct{}, 2)
		c.Hibernate(WakeFunc(func() { resumed <- struct{}{} }))
		resumedOnce(t, g, resumed)
		if got := mustRead(t, c, make([]byte, 8)); got != "y" {
			t.Fatalf("read %q after resume, want y", got)
		}
	})

	t.Run("what it drops", func(t *testing.T) {
		// A hibernating connection keeps no wake-up channel and no write
		// deadline or timer; both come back when used.
		c, peer := registered(t, g)
		c.SetWriteDeadline(time.Now().Add(time.Hour))
		resumed := make(chan struct{}, 2)
		c.Hibernate(WakeFunc(func() { resumed <- struct{}{} }))
		c.w.tmu.Lock()
		dl, timer := c.w.dl, c.w.timer
		c.w.tmu.Unlock()
		if c.r.ch.Load() != nil || c.w.ch.Load() != nil || dl != 0 || timer != nil {
			t.Fatalf("hibernating: channels %v %v, write deadline %d, timer %v; want none", c.r.ch.Load(), c.w.ch.Load(), dl, timer)
		}
		peer.Write([]byte("a"))
		resumedOnce(t, g, resumed)
		if got := mustRead(t, c, make([]byte, 8)); got != "a" {
			t.Fatalf("read %q after resume, want a", got)
		}
		got := make(chan string, 1)
		go func() { // this Read waits on a new channel
			b := make([]byte, 8)
			n, _ := c.Read(b)
			got <- string(b[:n])
		}()
		waitFor(t, "the reader to wait", c.r.waiting.Load)
		peer.Write([]byte("b"))
		if s := <-got; s != "b" {
			t.Fatalf("read %q, want b", s)
		}
		c.SetWriteDeadline(time.Unix(1, 0))
		if _, err := c.Write([]byte("x")); !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("write past a deadline set after resume: %v, want a deadline error", err)
		}
	})

	t.Run("never waited", func(t *testing.T) {
		// Not in the epoll instance yet: Hibernate registers it.
		c, peer := accepted(t, g)
		c.r.ready.Store(0) // as a socket found drained
		resumed := make(chan struct{}, 2)
		c.Hibernate(WakeFunc(func() { resumed <- struct{}{} }))
		select {
		case <-resumed:
			t.Fatal("resumed with nothing to read")
		default:
		}
		peer.Write([]byte("z"))
		resumedOnce(t, g, resumed)
		if got := mustRead(t, c, make([]byte, 8)); got != "z" {
			t.Fatalf("read %q after resume, want z", got)
		}
	})
}

// BenchmarkHibernate measures a hibernation and its end by the peer's
// next bytes: Hibernate, the peer writes 8 bytes, the reaper calls resume,
// which hands the connection back to this goroutine, and a Read takes the
// bytes (what a keep-alive client idle past IdleKeep costs per request
// beyond a busy one's, less the worker's start). One op is one cycle.
func BenchmarkHibernate(b *testing.B) {
	g, err := NewGroup(1)
	if err != nil {
		b.Fatal(err)
	}
	defer g.Unref()
	c, peer := registered(b, g)
	resumed := make(chan struct{}, 1)
	resume := WakeFunc(func() { resumed <- struct{}{} })
	msg := []byte("12345678")
	buf := make([]byte, 64)
	b.ReportAllocs()
	for b.Loop() {
		c.Hibernate(resume)
		if _, err := peer.Write(msg); err != nil {
			b.Fatal(err)
		}
		<-resumed
		if n, err := c.Read(buf); n != len(msg) || err != nil {
			b.Fatalf("read %d, %v", n, err)
		}
	}
}
