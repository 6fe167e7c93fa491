package epoll

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"testing"
	"time"
)

// aheadOrSkip fails (CI) or skips the test when the kernel refuses the
// poller's ring for reads ahead.
func aheadOrSkip(t *testing.T) {
	t.Helper()
	r, err := newSendRing()
	if err == nil {
		r.Close()
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("io_uring refused (%v): no reads ahead", err)
	}
	t.Skipf("io_uring refused here (%v): AwaitRead is Await", err)
}

// enters returns the io_uring_enter calls made for reads ahead.
func enters(g *Group) int64 {
	_, n := g.ReadAheads()
	return n
}

// Connections waiting with AwaitRead are woken with their bytes read
// already (by the reaper, in one system call for those of a batch of
// events), which their reads then take without the socket: each gets
// exactly its peer's bytes, then ErrWouldBlock.
func TestReadAhead(t *testing.T) {
	aheadOrSkip(t)
	g := newGroup(t, 1)
	const n = 8
	type wake struct {
		i   int
		pre bool
	}
	woken := make(chan wake, n)
	conns := make([]*Conn, n)
	peers := make([]net.Conn, n)
	for i := range n {
		c, peer := registered(t, g)
		conns[i], peers[i] = c, peer
		c.AwaitRead(WakeFunc(func() { woken <- wake{i, c.pre.set.Load()} }))
	}
	if g.Awaiting() != n {
		t.Fatalf("awaiting %d, want %d", g.Awaiting(), n)
	}
	for i, p := range peers {
		if _, err := fmt.Fprintf(p, "response %d", i); err != nil {
			t.Fatal(err)
		}
	}
	for range n {
		select {
		case w := <-woken:
			if !w.pre {
				t.Errorf("connection %d woken without its bytes read ahead", w.i)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("not every connection was woken")
		}
	}
	if g.Awaiting() != 0 {
		t.Errorf("awaiting %d after the wakes", g.Awaiting())
	}
	buf := make([]byte, 64)
	for i, c := range conns {
		if !c.Readable() || c.Idle() {
			t.Errorf("connection %d with bytes read ahead: readable %v, idle %v; want true, false", i, c.Readable(), c.Idle())
		}
		nr, err := c.TryRead(buf)
		if want := fmt.Sprintf("response %d", i); err != nil || string(buf[:nr]) != want {
			t.Errorf("connection %d read %q, %v; want %q", i, buf[:nr], err, want)
		}
		if nr, err := c.TryRead(buf); nr != 0 || !errors.Is(err, ErrWouldBlock) {
			t.Errorf("connection %d read again: %d, %v; want ErrWouldBlock", i, nr, err)
		}
	}
	if reads, _ := g.ReadAheads(); reads != n {
		t.Errorf("%d reads ahead counted, want %d", reads, n)
	}
	if e := enters(g); e < 1 || e > n {
		t.Errorf("%d io_uring_enter calls for %d reads ahead; want 1 to %d", e, n, n)
	}
	t.Logf("%d connections read ahead in %d system calls", n, enters(g))
}

// Bytes read ahead are taken in order by reads of any size, before what
// stayed in the socket (a response longer than the read ahead's buffer);
// while some wait the connection is not idle; the end of the stream is
// found by the next AwaitRead's read as by a read.
func TestReadAheadRest(t *testing.T) {
	aheadOrSkip(t)
	g := newGroup(t, 1)
	c, peer := registered(t, g)
	woken := make(chan struct{}, 1)
	c.AwaitRead(WakeFunc(func() { woken <- struct{}{} }))
	want := make([]byte, 40000)
	for i := range want {
		want[i] = byte('a' + i%26)
	}
	go peer.Write(want)
	<-woken
	if !c.pre.set.Load() || c.Idle() {
		t.Fatalf("woken: read ahead %v, idle %v; want true, false", c.pre.set.Load(), c.Idle())
	}
	got := make([]byte, 0, len(want))
	small := make([]byte, 1000)
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	for len(got) < len(want) {
		nr, err := c.Read(small)
		if err != nil {
			t.Fatalf("after %d bytes: %v", len(got), err)
		}
		got = append(got, small[:nr]...)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("the bytes differ from those sent, or came out of order")
	}
	if c.pre.set.Load() || !c.Idle() {
		t.Errorf("all taken: read ahead %v, idle %v; want false, true", c.pre.set.Load(), c.Idle())
	}
	peer.Close()
	c.AwaitRead(WakeFunc(func() { woken <- struct{}{} }))
	<-woken
	if nr, err := c.Read(small); nr != 0 || err != io.EOF {
		t.Errorf("after the peer's close: %d, %v; want 0, EOF", nr, err)
	}
	c.Hibernate(WakeFunc(func() {}))
	if c.ahead.Load() {
		t.Error("Hibernate keeps AwaitRead's read ahead")
	}
}

// BenchmarkAwaitRead: ten connections wait for a response, their peers
// answer, and each woken connection reads its answer (as HTTP/2's parked
// streams): woken by Await and read with a system call each ("await"),
// or woken by AwaitRead with the answers read ahead ("ahead").
func BenchmarkAwaitRead(b *testing.B) {
	const n = 10
	conns, peers := benchConns(b, n, registered)
	msg := bytes.Repeat([]byte("h"), 200) // about a response
	for _, mode := range []string{"await", "ahead"} {
		b.Run(mode, func(b *testing.B) {
			woken := make(chan int, n)
			bufs := make([][]byte, n)
			for i := range bufs {
				bufs[i] = make([]byte, 4096)
			}
			for range b.N {
				for i, c := range conns {
					w := WakeFunc(func() {
						c.TryRead(bufs[i])
						woken <- i
					})
					if mode == "ahead" {
						c.AwaitRead(w)
					} else {
						c.Await(w)
					}
				}
				for _, p := range peers {
					p.Write(msg)
				}
				for range n {
					<-woken
				}
			}
		})
	}
}
