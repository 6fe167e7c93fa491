package epoll

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
	"testing"
)

// ringsOrSkip fails (CI) or skips the test when the kernel refuses the
// rings SendBatch sends through.
func ringsOrSkip(t *testing.T, g *Group) {
	t.Helper()
	if r := g.takeRing(); r != nil {
		g.putRing(r)
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("io_uring refused: SendBatch cannot send in one system call")
	}
	t.Skip("io_uring refused here: SendBatch writes one by one")
}

// fill writes to c until its socket's buffer is full (a write would
// block).
func fill(t *testing.T, c *Conn) {
	t.Helper()
	chunk := make([]byte, 64<<10)
	for {
		if _, err := c.TryWrite(chunk); errors.Is(err, ErrWouldBlock) {
			return
		} else if err != nil {
			t.Fatal(err)
		}
	}
}

// The writes of a batch to many sockets are made in one io_uring_enter,
// each socket getting exactly its bytes; batches longer than batchMax
// take one enter per batchMax; a batch of one is a plain write.
func TestSendBatch(t *testing.T) {
	g := newGroup(t, 1)
	ringsOrSkip(t, g)
	const n = batchMax + 3
	conns := make([]*Conn, n)
	peers := make([]net.Conn, n)
	for i := range n {
		conns[i], peers[i] = accepted(t, g)
	}
	var b SendBatch
	for round := range 3 {
		for i, c := range conns {
			if idx := b.Add(c, []byte(fmt.Sprintf("round %d to %d\n", round, i))); idx != i {
				t.Fatalf("Add = %d, want %d", idx, i)
			}
		}
		b.Flush()
		for i := range conns {
			want := fmt.Sprintf("round %d to %d\n", round, i)
			if nw, err := b.Result(i); nw != len(want) || err != nil {
				t.Fatalf("round %d, write %d: %d, %v; want %d, nil", round, i, nw, err, len(want))
			}
			if got := readN(t, peers[i], len(want)); string(got) != want {
				t.Fatalf("round %d, peer %d read %q, want %q", round, i, got, want)
			}
		}
		b.Reset()
		if b.Len() != 0 {
			t.Fatalf("Len after Reset = %d", b.Len())
		}
	}
	if b.Enters != 6 || b.Sends != 3*n {
		t.Errorf("enters %d, sends %d; want 6 and %d (two enters a round)", b.Enters, b.Sends, 3*n)
	}
	b.Add(conns[0], []byte("alone"))
	b.Flush()
	if nw, err := b.Result(0); nw != 5 || err != nil || b.Enters != 6 {
		t.Errorf("a batch of one: %d, %v, enters %d; want 5, nil, no enter", nw, err, b.Enters)
	}
	readN(t, peers[0], 5)
	if rings, refused := g.SendRings(); rings != 1 || refused {
		t.Errorf("SendRings = %d, %v; want the one ring, lent and given back each time", rings, refused)
	}
}

// A socket whose buffer is full takes part of its write or none
// (ErrWouldBlock with the count taken); a closed connection and a reset
// peer fail their writes alone; the other writes of the batch are made.
func TestSendBatchFailures(t *testing.T) {
	g := newGroup(t, 1)
	ringsOrSkip(t, g)
	full, fullPeer := accepted(t, g)
	closed, _ := accepted(t, g)
	reset, resetPeer := accepted(t, g)
	fine, finePeer := accepted(t, g)
	fill(t, full)
	closed.Close()
	resetPeer.(*net.TCPConn).SetLinger(0)
	resetPeer.Close()
	// The reset reaches the socket: a read says so.
	waitFor(t, "the reset", func() bool {
		_, err := reset.TryRead(make([]byte, 1))
		return err != nil && !errors.Is(err, ErrWouldBlock)
	})
	var b SendBatch
	big := bytes.Repeat([]byte("x"), 1<<20)
	b.Add(full, big)
	b.Add(closed, []byte("closed"))
	b.Add(reset, []byte("reset"))
	b.Add(fine, []byte("fine"))
	b.Flush()
	if nw, err := b.Result(0); !errors.Is(err, ErrWouldBlock) || nw >= len(big) {
		t.Errorf("full socket: %d, %v; want less than %d and ErrWouldBlock", nw, err, len(big))
	}
	if nw, err := b.Result(1); nw != 0 || !errors.Is(err, net.ErrClosed) {
		t.Errorf("closed connection: %d, %v; want 0, net.ErrClosed", nw, err)
	}
	nw, err := b.Result(2)
	var oe *net.OpError
	if nw != 0 || !errors.As(err, &oe) || !(errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)) {
		t.Errorf("reset peer: %d, %v; want 0 and a *net.OpError of ECONNRESET or EPIPE", nw, err)
	}
	if nw, err := b.Result(3); nw != 4 || err != nil {
		t.Errorf("fine socket: %d, %v; want 4, nil", nw, err)
	}
	if got := readN(t, finePeer, 4); string(got) != "fine" {
		t.Errorf("fine peer read %q", got)
	}
	if b.Enters != 1 || b.Sends != 3 {
		t.Errorf("enters %d, sends %d; want 1 and 3 (the closed connection's write is not made)", b.Enters, b.Sends)
	}
	_ = fullPeer
}

// A send the kernel does not finish at once (here: one allowed to wait,
// to a full socket) is cancelled and awaited before Flush returns: it
// took nothing (ErrWouldBlock), the batch's other write is made, and the
// ring, empty again, is lent again.
func TestSendBatchCancel(t *testing.T) {
	g := newGroup(t, 1)
	ringsOrSkip(t, g)
	full, _ := accepted(t, g)
	fine, finePeer := accepted(t, g)
	fill(t, full)
	b := SendBatch{mayWait: true}
	b.Add(full, []byte("waits"))
	b.Add(fine, []byte("fine"))
	b.Flush()
	if nw, err := b.Result(0); nw != 0 || !errors.Is(err, ErrWouldBlock) {
		t.Errorf("the waiting send: %d, %v; want 0, ErrWouldBlock (cancelled)", nw, err)
	}
	if nw, err := b.Result(1); nw != 4 || err != nil {
		t.Errorf("the other: %d, %v; want 4, nil", nw, err)
	}
	if string(readN(t, finePeer, 4)) != "fine" {
		t.Error("fine peer: wrong bytes")
	}
	if b.Enters < 2 || b.Sends != 2 {
		t.Errorf("enters %d, sends %d; want 2 or more (the wait for the cancellation) and 2", b.Enters, b.Sends)
	}
	if full.state.Load() != 0 || fine.state.Load() != 0 {
		t.Errorf("references left: %d, %d", full.state.Load(), fine.state.Load())
	}
	b.Reset()
	b.Add(fine, []byte("again"))
	b.Add(fine, []byte("!"))
	b.Flush()
	if string(readN(t, finePeer, 6)) != "again!" {
		t.Error("the ring after a cancellation: wrong bytes")
	}
	if rings, _ := g.SendRings(); rings != 1 {
		t.Errorf("rings = %d, want the one, given back", rings)
	}
}

// A group closed while a ring is lent closes it when it comes back; a
// group that lends no ring (none may be made) has its batches written one
// by one, with the same results.
func TestSendBatchNoRing(t *testing.T) {
	g := newGroup(t, 1)
	ringsOrSkip(t, g)
	a, ap := accepted(t, g)
	c, cp := accepted(t, g)
	r := g.takeRing()
	g.closeRings()
	g.putRing(r)
	if rings, _ := g.SendRings(); rings != 0 {
		t.Fatalf("rings after close = %d, want 0", rings)
	}
	var b SendBatch
	b.Add(a, []byte("one"))
	b.Add(c, []byte("two"))
	b.Flush()
	for i := range 2 {
		if nw, err := b.Result(i); nw != 3 || err != nil {
			t.Errorf("write %d: %d, %v", i, nw, err)
		}
	}
	if string(readN(t, ap, 3)) != "one" || string(readN(t, cp, 3)) != "two" || b.Enters != 0 {
		t.Errorf("one by one: enters %d, want 0", b.Enters)
	}
}

// benchConns returns n connections of a one-poller group made by conn
// (accepted, registered) and their peers; the group ends with b.
func benchConns(b *testing.B, n int, conn func(testing.TB, *Group) (*Conn, net.Conn)) ([]*Conn, []net.Conn) {
	g, err := NewGroup(1)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(g.Unref)
	conns := make([]*Conn, n)
	peers := make([]net.Conn, n)
	for i := range n {
		conns[i], peers[i] = conn(b, g)
	}
	return conns, peers
}

// BenchmarkSendBatch: ten sockets written at once, as HTTP/2's reader
// sends the requests of one client read: one write each ("write") or one
// batch ("batch"); the peers read what came.
func BenchmarkSendBatch(b *testing.B) {
	conns, peers := benchConns(b, 10, accepted)
	msg := bytes.Repeat([]byte("r"), 120) // about a request head
	buf := make([]byte, 4096)
	drain := func() {
		for _, p := range peers {
			io.ReadFull(p, buf[:len(msg)])
		}
	}
	b.Run("write", func(b *testing.B) {
		for range b.N {
			for _, c := range conns {
				c.TryWrite(msg)
			}
			drain()
		}
	})
	b.Run("batch", func(b *testing.B) {
		var sb SendBatch
		for range b.N {
			for _, c := range conns {
				sb.Add(c, msg)
			}
			sb.Flush()
			sb.Reset()
			drain()
		}
	})
}
