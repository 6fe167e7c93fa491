package epoll

import (
	"errors"
	"math/rand/v2"
	"os"
	"runtime/metrics"
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

// sleepKinds are the two ways a connection waits with no goroutine:
// Hibernate and Await. Both park the read deadline.
var sleepKinds = []struct {
	name  string
	sleep func(*Conn, Waker)
	count func(*Group) int64 // Hibernating or Awaiting
}{
	{"hibernate", (*Conn).Hibernate, (*Group).Hibernating},
	{"await", (*Conn).Await, (*Group).Awaiting},
}

// A hibernating or awaiting connection's read deadline leaves its runtime
// timer for its poller's parking, still ends the wait at the deadline (not
// before), and goes back to a timer of its own (made by the first read
// that waits) when the connection wakes.
func TestParkedDeadline(t *testing.T) {
	g := newGroup(t, 1)
	for _, k := range sleepKinds {
		t.Run(k.name, func(t *testing.T) { testParkedDeadline(t, g, k.sleep, k.count) })
	}
}

func testParkedDeadline(t *testing.T, g *Group, sleep func(*Conn, Waker), count func(*Group) int64) {
	t.Run("expires", func(t *testing.T) {
		c, _ := registered(t, g)
		dl := time.Now().Add(80 * time.Millisecond)
		c.SetReadDeadline(dl)
		mustRead(t, c, nil) // a read that does not wait makes no timer
		resumed := make(chan time.Time, 2)
		sleep(c, WakeFunc(func() { resumed <- time.Now() }))
		if timer, parked, n := parkedState(c); timer != nil || !parked || n != 1 {
			t.Fatalf("sleeping: timer %v, parked %v, parking holds %d; want no timer, parked, 1", timer, parked, n)
		}
		if n := count(g); n != 1 {
			t.Fatalf("sleeping: %d counted, want 1", n)
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
		if !c.ReadExpired() {
			t.Fatal("ReadExpired false after the deadline")
		}
		if _, err := c.Read(make([]byte, 8)); !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("read after resume: %v, want a deadline error", err)
		}
		if n := count(g); n != 0 {
			t.Fatalf("after: %d counted, want 0", n)
		}
	})

	t.Run("timer first", func(t *testing.T) {
		// A connection whose deadline has a runtime timer already (an
		// earlier read waited) gives it up while it sleeps.
		c, peer := registered(t, g)
		c.SetReadDeadline(time.Now().Add(time.Hour))
		go func() {
			time.Sleep(20 * time.Millisecond)
			peer.Write([]byte("a"))
		}()
		if got := mustRead(t, c, make([]byte, 8)); got != "a" { // waits: a timer
			t.Fatalf("read %q, want a", got)
		}
		if timer, _, _ := parkedState(c); timer == nil {
			t.Fatal("no timer after a read that waited")
		}
		resumed := make(chan struct{}, 2)
		sleep(c, WakeFunc(func() { resumed <- struct{}{} }))
		if timer, parked, n := parkedState(c); timer != nil || !parked || n != 1 {
			t.Fatalf("sleeping: timer %v, parked %v, parking holds %d; want no timer, parked, 1", timer, parked, n)
		}
		peer.Write([]byte("b"))
		select {
		case <-resumed:
		case <-time.After(10 * time.Second):
			t.Fatal("not resumed by bytes")
		}
		if timer, parked, n := parkedState(c); timer != nil || parked || n != 0 {
			t.Fatalf("after: timer %v, parked %v, parking holds %d; want none", timer, parked, n)
		}
		c.Close()
	})

	t.Run("bytes first", func(t *testing.T) {
		// Woken by bytes: the deadline gets a timer again at the first
		// read that waits, and that read still fails at it.
		c, peer := registered(t, g)
		dl := time.Now().Add(300 * time.Millisecond)
		c.SetReadDeadline(dl)
		resumed := make(chan struct{}, 2)
		sleep(c, WakeFunc(func() { resumed <- struct{}{} }))
		peer.Write([]byte("q"))
		select {
		case <-resumed:
		case <-time.After(10 * time.Second):
			t.Fatal("not resumed by bytes")
		}
		if n := count(g); n != 0 {
			t.Fatalf("after: %d counted, want 0", n)
		}
		if timer, parked, n := parkedState(c); timer != nil || parked || n != 0 {
			t.Fatalf("after: timer %v, parked %v, parking holds %d; want no timer yet, not parked, 0", timer, parked, n)
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
		sleep(c, WakeFunc(func() { resumed <- struct{}{} }))
		c.Close()
		select {
		case <-resumed:
		case <-time.After(10 * time.Second):
			t.Fatal("not resumed by Close")
		}
		if _, _, n := parkedState(c); n != 0 {
			t.Fatalf("parking holds %d after Close, want 0", n)
		}
		if n := count(g); n != 0 {
			t.Fatalf("after: %d counted, want 0", n)
		}
	})

	t.Run("deadline moved", func(t *testing.T) {
		// A deadline set while the connection sleeps is met, sooner or later
		// than the parked one.
		c, _ := registered(t, g)
		c.SetReadDeadline(time.Now().Add(time.Hour))
		resumed := make(chan time.Time, 2)
		sleep(c, WakeFunc(func() { resumed <- time.Now() }))
		dl := time.Now().Add(60 * time.Millisecond)
		c.SetReadDeadline(dl)
		select {
		case at := <-resumed:
			if at.Before(dl) {
				t.Fatalf("resumed %v before the new deadline", dl.Sub(at))
			}
		case <-time.After(10 * time.Second):
			t.Fatal("not resumed at the new deadline")
		}
		c.Close()
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
			sleep(c, WakeFunc(func() { resumed <- ended{i, time.Now()} }))
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

// Deadlines, bytes and closes racing to end many hibernations and awaits:
// each ends once, and the parking is empty after.
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
		sleepKinds[i%2].sleep(c, WakeFunc(func() { resumed <- i }))
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
	if p, h, a := g.Parked(), g.Hibernating(), g.Awaiting(); p != 0 || h != 0 || a != 0 {
		t.Fatalf("parked %d, hibernating %d, awaiting %d after every wait ended; want 0, 0, 0", p, h, a)
	}
	for _, c := range conns {
		c.Close()
	}
}

// goroutinesCreated reads the runtime's count of goroutines created.
func goroutinesCreated() uint64 {
	s := []metrics.Sample{{Name: "/sched/goroutines-created:goroutines"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// Many awaits whose deadlines pass at once (a burst of new connections
// reaching IdleKeep together) are all woken at the deadline by the
// parking's one timer: a few goroutines, not one per connection as
// runtime timers of their own would start (time.AfterFunc).
func TestAwaitBurstOneTimer(t *testing.T) {
	g := newGroup(t, 1)
	const n = 200
	conns := make([]*Conn, n)
	for i := range conns {
		conns[i], _ = registered(t, g)
	}
	woken := make(chan time.Time, 2*n)
	dl := time.Now().Add(100 * time.Millisecond)
	before := goroutinesCreated()
	for _, c := range conns {
		c.SetReadDeadline(dl)
		c.Await(WakeFunc(func() { woken <- time.Now() }))
	}
	parked := g.Parked()
	for range n {
		select {
		case at := <-woken:
			if at.Before(dl) {
				t.Fatalf("woken %v before the deadline", dl.Sub(at))
			}
		case <-time.After(10 * time.Second):
			t.Fatal("not all woken")
		}
	}
	created := goroutinesCreated() - before
	if created > n/10 {
		t.Fatalf("%d goroutines created to wake %d awaits, want at most %d", created, n, n/10)
	}
	if parked != n {
		t.Fatalf("parked %d while awaiting, want %d", parked, n)
	}
	if p, a := g.Parked(), g.Awaiting(); p != 0 || a != 0 {
		t.Fatalf("after: parked %d, awaiting %d; want 0, 0", p, a)
	}
	for _, c := range conns {
		if !c.ReadExpired() {
			t.Fatal("a connection's deadline is not past")
		}
		c.Close()
	}
}
