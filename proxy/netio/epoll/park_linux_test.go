package epoll

import (
	"errors"
	"math/rand/v2"
	"os"
	"testing"
	"time"
)

// parkedState returns c's read timer and whether its deadline is parked,
// and how many deadlines its poller's parking holds.
func parkedState(c *Conn) (timer *time.Timer, parked bool, n int) {
	c.r.tmu.Lock()
	timer, parked = c.r.timer, c.r.parked
	c.r.tmu.Unlock()
	return timer, parked, c.p.park.len()
}

// A hibernating connection's read deadline leaves its runtime timer for
// its poller's parking, still ends the hibernation at the deadline (not
// before), and goes back to a timer of its own when the connection wakes.
func TestParkedDeadline(t *testing.T) {
	g := newGroup(t, 1)

	t.Run("expires", func(t *testing.T) {
		c, _ := registered(t, g)
		dl := time.Now().Add(80 * time.Millisecond)
		c.SetReadDeadline(dl)
		resumed := make(chan time.Time, 2)
		c.Hibernate(WakeFunc(func() { resumed <- time.Now() }))
		if timer, parked, n := parkedState(c); timer != nil || !parked || n != 1 {
			t.Fatalf("hibernating: timer %v, parked %v, parking holds %d; want no timer, parked, 1", timer, parked, n)
		}
		select {
		case at := <-resumed:
			if at.Before(dl) {
				t.Fatalf("resumed %v before the deadline", dl.Sub(at))
			}
		case <-time.After(10 * time.Second):
			t.Fatal("not resumed at the deadline")
		}
		if timer, parked, n := parkedState(c); timer != nil || parked || n != 0 {
			t.Fatalf("after: timer %v, parked %v, parking holds %d; want none", timer, parked, n)
		}
		if _, err := c.Read(make([]byte, 8)); !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("read after resume: %v, want a deadline error", err)
		}
		if n := g.Hibernating(); n != 0 {
			t.Fatalf("hibernating: %d, want 0", n)
		}
	})

	t.Run("bytes first", func(t *testing.T) {
		// Woken by bytes: the deadline gets a timer again, and a read that
		// waits after them still fails at it.
		c, peer := registered(t, g)
		dl := time.Now().Add(300 * time.Millisecond)
		c.SetReadDeadline(dl)
		resumed := make(chan struct{}, 2)
		c.Hibernate(WakeFunc(func() { resumed <- struct{}{} }))
		peer.Write([]byte("q"))
		resumedOnce(t, g, resumed)
		if timer, parked, n := parkedState(c); timer == nil || parked || n != 0 {
			t.Fatalf("after: timer %v, parked %v, parking holds %d; want a timer, not parked, 0", timer, parked, n)
		}
		if got := mustRead(t, c, make([]byte, 8)); got != "q" {
			t.Fatalf("read %q, want q", got)
		}
		_, err := c.Read(make([]byte, 8)) // waits for the deadline
		if !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("second read: %v, want a deadline error", err)
		}
		if now := time.Now(); now.Before(dl) {
			t.Fatalf("deadline error %v before the deadline", dl.Sub(now))
		}
	})

	t.Run("close", func(t *testing.T) {
		c, _ := registered(t, g)
		c.SetReadDeadline(time.Now().Add(time.Hour))
		resumed := make(chan struct{}, 2)
		c.Hibernate(WakeFunc(func() { resumed <- struct{}{} }))
		c.Close()
		resumedOnce(t, g, resumed)
		if _, _, n := parkedState(c); n != 0 {
			t.Fatalf("parking holds %d after Close, want 0", n)
		}
	})

	t.Run("many", func(t *testing.T) {
		// Deadlines parked in any order end their hibernations each at its
		// own time.
		const n = 24
		start := time.Now()
		type ended struct {
			i  int
			at time.Time
		}
		resumed := make(chan ended, 2*n)
		dls := make([]time.Time, n)
		conns := make([]*Conn, n)
		for k, i := range rand.Perm(n) {
			c, _ := registered(t, g)
			dls[i] = start.Add(time.Duration(100+15*i) * time.Millisecond)
			c.SetReadDeadline(dls[i])
			c.Hibernate(WakeFunc(func() { resumed <- ended{i, time.Now()} }))
			conns[k] = c
		}
		seen := make([]bool, n)
		for range n {
			select {
			case e := <-resumed:
				if seen[e.i] {
					t.Fatalf("connection %d resumed twice", e.i)
				}
				seen[e.i] = true
				if e.at.Before(dls[e.i]) {
					t.Fatalf("connection %d resumed %v before its deadline", e.i, dls[e.i].Sub(e.at))
				}
			case <-time.After(10 * time.Second):
				t.Fatal("not all resumed")
			}
		}
		if _, _, left := parkedState(conns[0]); left != 0 {
			t.Fatalf("parking holds %d, want 0", left)
		}
		for _, c := range conns {
			c.Close()
		}
	})
}

// The parking's heap keeps its order and every connection's place through
// adds and removes in any order, and gives back its array once mostly
// empty.
func TestParkingHeap(t *testing.T) {
	var pk parking
	defer func() {
		if pk.timer != nil {
			pk.timer.Stop()
		}
	}()
	const n = 500
	base := time.Now().Add(time.Hour).UnixNano()
	conns := make([]*Conn, n)
	for i := range conns {
		conns[i] = &Conn{}
		pk.add(conns[i], base+int64(rand.IntN(1000)))
	}
	check := func() {
		t.Helper()
		for i, e := range pk.heap {
			if int(e.c.pidx) != i+1 {
				t.Fatalf("entry %d: pidx %d", i, e.c.pidx)
			}
			if i > 0 && pk.heap[(i-1)/2].when > e.when {
				t.Fatalf("entry %d earlier than its parent", i)
			}
		}
		if len(pk.heap) > 0 && pk.armed > pk.heap[0].when {
			t.Fatalf("timer armed at %d, after the earliest %d", pk.armed, pk.heap[0].when)
		}
	}
	check()
	for k, i := range rand.Perm(n) {
		pk.remove(conns[i])
		if conns[i].pidx != 0 {
			t.Fatalf("removed connection has pidx %d", conns[i].pidx)
		}
		pk.remove(conns[i]) // twice: nothing
		if k%50 == 0 {
			check()
		}
	}
	if len(pk.heap) != 0 || cap(pk.heap) > 64 {
		t.Fatalf("after removing all: len %d cap %d, want 0 and <= 64", len(pk.heap), cap(pk.heap))
	}
}

// Deadlines, bytes and closes racing to end many hibernations: each ends
// once, and the parking is empty after.
func TestParkedRace(t *testing.T) {
	g := newGroup(t, 2)
	const n = 60
	resumed := make(chan int, 2*n)
	conns := make([]*Conn, n)
	peers := make([]interface{ Write([]byte) (int, error) }, n)
	start := time.Now()
	for i := range conns {
		c, peer := registered(t, g)
		c.SetReadDeadline(start.Add(time.Duration(20+rand.IntN(40)) * time.Millisecond))
		c.Hibernate(WakeFunc(func() { resumed <- i }))
		conns[i], peers[i] = c, peer
	}
	for i, c := range conns {
		go func() {
			time.Sleep(time.Duration(rand.IntN(60)) * time.Millisecond)
			switch i % 3 {
			case 0:
				peers[i].Write([]byte("b"))
			case 1:
				c.Close()
			}
		}()
	}
	seen := make([]int, n)
	for range n {
		select {
		case i := <-resumed:
			seen[i]++
		case <-time.After(10 * time.Second):
			t.Fatalf("resumed: %v", seen)
		}
	}
	select {
	case i := <-resumed:
		t.Fatalf("connection %d resumed twice", i)
	case <-time.After(100 * time.Millisecond):
	}
	if p, h := g.Parked(), g.Hibernating(); p != 0 || h != 0 {
		t.Fatalf("parked %d, hibernating %d after every hibernation ended; want 0, 0", p, h)
	}
	for _, c := range conns {
		c.Close()
	}
}
