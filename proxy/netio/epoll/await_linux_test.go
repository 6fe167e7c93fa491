package epoll

import (
	"errors"
	"net"
	"os"
	"testing"
	"time"
)

// awaited makes a registered connection Await; the channel receives once
// per Wake.
func awaited(t *testing.T, g *Group) (*Conn, net.Conn, chan struct{}) {
	t.Helper()
	c, peer := registered(t, g)
	woken := make(chan struct{}, 2)
	c.Await(WakeFunc(func() { woken <- struct{}{} }))
	return c, peer, woken
}

func wokenOnce(t *testing.T, g *Group, woken chan struct{}) {
	t.Helper()
	select {
	case <-woken:
	case <-time.After(10 * time.Second):
		t.Fatal("Wake was not called")
	}
	select {
	case <-woken:
		t.Fatal("Wake was called twice")
	default:
	}
	if n, h := g.Awaiting(), g.Hibernating(); n != 0 || h != 0 {
		t.Fatalf("awaiting %d, hibernating %d after the wake, want 0 and 0", n, h)
	}
}

// Await ends as a read would: bytes, the peer's close, the read deadline
// (its runtime timer, kept), a Close; TryRead then reads without waiting,
// and says ErrWouldBlock once the socket is drained.
func TestAwait(t *testing.T) {
	g := newGroup(t, 1)
	t.Run("bytes", func(t *testing.T) {
		c, peer, woken := awaited(t, g)
		defer c.Close()
		if n := g.Awaiting(); n != 1 {
			t.Fatalf("awaiting %d, want 1", n)
		}
		peer.Write([]byte("hello"))
		wokenOnce(t, g, woken)
		b := make([]byte, 16)
		if n, err := c.TryRead(b); err != nil || string(b[:n]) != "hello" {
			t.Fatalf("TryRead: %q %v", b[:n], err)
		}
		if n, err := c.TryRead(b); n != 0 || err != ErrWouldBlock {
			t.Fatalf("TryRead on a drained socket: %d %v, want ErrWouldBlock", n, err)
		}
		if c.Readable() {
			t.Fatal("readable after a drained TryRead")
		}
	})
	t.Run("close by the peer", func(t *testing.T) {
		c, peer, woken := awaited(t, g)
		defer c.Close()
		peer.Close()
		wokenOnce(t, g, woken)
		if n, err := c.TryRead(make([]byte, 4)); n != 0 || err == nil || err == ErrWouldBlock {
			t.Fatalf("TryRead after the peer's close: %d %v, want the end", n, err)
		}
	})
	t.Run("deadline", func(t *testing.T) {
		c, _ := registered(t, g)
		defer c.Close()
		woken := make(chan struct{}, 2)
		start := time.Now()
		c.SetReadDeadline(start.Add(50 * time.Millisecond))
		c.Await(WakeFunc(func() { woken <- struct{}{} }))
		wokenOnce(t, g, woken)
		if took := time.Since(start); took < 50*time.Millisecond {
			t.Fatalf("woken after %v, before the deadline", took)
		}
		if _, err := c.TryRead(make([]byte, 4)); !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("TryRead after the deadline: %v", err)
		}
	})
	t.Run("close", func(t *testing.T) {
		c, _, woken := awaited(t, g)
		c.Close()
		wokenOnce(t, g, woken)
		if _, err := c.TryRead(make([]byte, 4)); !errors.Is(err, net.ErrClosed) {
			t.Fatalf("TryRead after Close: %v", err)
		}
	})
	t.Run("readable already", func(t *testing.T) {
		c, peer := registered(t, g)
		defer c.Close()
		peer.Write([]byte("x"))
		waitReady(t, c)
		woken := make(chan struct{}, 2)
		c.Await(WakeFunc(func() { woken <- struct{}{} }))
		wokenOnce(t, g, woken) // called within Await
	})
}

func waitReady(t *testing.T, c *Conn) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !c.Readable() {
		if time.Now().After(deadline) {
			t.Fatal("the connection never became readable")
		}
		time.Sleep(time.Millisecond)
	}
}

// TryWrite writes what the socket takes and says ErrWouldBlock with the
// count when it is full; Write then finishes once the peer reads.
func TestTryWrite(t *testing.T) {
	g := newGroup(t, 1)
	c, peer := registered(t, g)
	defer c.Close()
	if n, err := c.TryWrite([]byte("abc")); n != 3 || err != nil {
		t.Fatalf("TryWrite: %d %v", n, err)
	}
	big := make([]byte, 64<<20)
	n, err := c.TryWrite(big)
	if err != ErrWouldBlock || n <= 0 || n >= len(big) {
		t.Fatalf("TryWrite of %d bytes: %d %v, want part of it and ErrWouldBlock", len(big), n, err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := c.Write(big[n:])
		done <- err
	}()
	peer.SetReadDeadline(time.Now().Add(10 * time.Second))
	total := 0
	buf := make([]byte, 1<<20)
	for total < 3+len(big) {
		m, err := peer.Read(buf)
		if err != nil {
			t.Fatalf("peer read after %d bytes: %v", total, err)
		}
		total += m
	}
	if err := <-done; err != nil {
		t.Fatalf("Write of the rest: %v", err)
	}
}
