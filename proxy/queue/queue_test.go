package queue

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// slots is a fake backend: per-server free slot counts.
type slots struct {
	mu   sync.Mutex
	free []int
}

func (s *slots) Take(i int, _ bool) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.free[i] > 0 {
		s.free[i]--
		return true
	}
	return false
}

func (s *slots) give(i int) {
	s.mu.Lock()
	s.free[i]++
	s.mu.Unlock()
}

func newQ(n int) *Queues {
	lens := make([]*atomic.Int64, n)
	for i := range lens {
		lens[i] = new(atomic.Int64)
	}
	return New(lens)
}

// TestOrderAcrossQueues: a freed slot goes to the oldest of the server's
// own queue and the backend queue.
func TestOrderAcrossQueues(t *testing.T) {
	q, s := newQ(2), &slots{free: []int{0, 0}}
	now := time.Now()
	ps := make([]*Pending, 4)
	for i, srv := range []int{-1, 0, -1, 1} {
		ps[i] = new(Pending)
		if !q.Enqueue(ps[i], srv, 0, now, s) {
			t.Fatal("refused")
		}
	}
	if q.Waiting() != 4 || q.Len(-1) != 2 || q.Len(0) != 1 || q.Len(1) != 1 {
		t.Fatalf("lengths %d %d %d %d", q.Waiting(), q.Len(-1), q.Len(0), q.Len(1))
	}
	// Server 0 frees 3 slots one at a time: backend#0, pinned#1, backend#2.
	for _, want := range []int{0, 1, 2} {
		s.give(0)
		q.Dispatch(0, s)
		for i, p := range ps {
			if (p.Served() >= 0) != (i <= want) {
				t.Fatalf("after serving %d: pending %d served=%d", want, i, p.Served())
			}
		}
	}
	// ps[3] is pinned to server 1: a slot on server 0 does not serve it.
	s.give(0)
	q.Dispatch(0, s)
	if ps[3].Served() >= 0 {
		t.Fatal("pinned request served by another server")
	}
	if got := q.Cancel(ps[3]); got != -1 || q.Waiting() != 0 {
		t.Fatalf("cancel: %d, waiting %d", got, q.Waiting())
	}
	if got := q.Cancel(ps[0]); got != 0 {
		t.Fatalf("cancel of a served request: %d, want its server 0", got)
	}
}

// TestMaxQueue: a server queue refuses past maxqueue.
func TestMaxQueue(t *testing.T) {
	q, s := newQ(1), &slots{free: []int{0}}
	if !q.Enqueue(new(Pending), 0, 1, time.Now(), s) || q.Enqueue(new(Pending), 0, 1, time.Now(), s) {
		t.Fatal("maxqueue 1 not applied")
	}
	if in := q.Info(0, time.Now()); in.Waiting != 1 || in.Max != 1 {
		t.Fatalf("info %+v", in)
	}
}

// TestRedistribute: the requests waiting in a server's queue move to the
// backend queue when the server stops taking traffic (with redispatch),
// keeping their age among the backend's requests, and are served at once
// where slots are free; the requests of other servers stay.
func TestRedistribute(t *testing.T) {
	q, s := newQ(3), &slots{free: []int{0, 0, 1}}
	now := time.Now()
	ps := make([]*Pending, 6)
	for i, srv := range []int{-1, 0, -1, 0, 1, -1} {
		ps[i] = new(Pending)
		if !q.Enqueue(ps[i], srv, 0, now, s) {
			t.Fatal("refused")
		}
	}
	// Server 2's free slot went to the oldest request it may serve: #0.
	if ps[0].Served() != 2 {
		t.Fatalf("#0 served by %d, want 2", ps[0].Served())
	}
	s.give(2) // one more free slot on server 2, not yet dispatched
	if n := q.Redistribute(0, s); n != 2 {
		t.Fatalf("moved %d, want 2", n)
	}
	// The slot went to the oldest backend request, #1, moved from server 0.
	if ps[1].Served() != 2 || ps[2].Served() >= 0 {
		t.Fatalf("after the move: #1 served by %d, #2 by %d; want 2, none", ps[1].Served(), ps[2].Served())
	}
	if q.Len(0) != 0 || q.Len(-1) != 3 || q.Len(1) != 1 || q.Waiting() != 4 {
		t.Fatalf("lengths: server 0 %d, backend %d, server 1 %d, waiting %d; want 0 3 1 4", q.Len(0), q.Len(-1), q.Len(1), q.Waiting())
	}
	// The backend queue is in arrival order: #2, #3 (moved), #5.
	for _, want := range []int{2, 3, 5} {
		s.give(2)
		q.Dispatch(2, s)
		if ps[want].Served() != 2 {
			t.Fatalf("next slot: #%d not served (served %d)", want, ps[want].Served())
		}
	}
	if ps[4].Served() >= 0 || q.Len(1) != 1 {
		t.Fatal("server 1's pinned request moved or was served elsewhere")
	}
	for i, p := range ps {
		if q.Cancel(p) < 0 && i != 4 {
			t.Fatalf("#%d: not served", i)
		}
		if p.Redistributed() != (i == 1 || i == 3) {
			t.Errorf("#%d: Redistributed %v", i, p.Redistributed())
		}
	}
	if q.Redistribute(0, s) != 0 || q.Max(-1) != 4 {
		t.Errorf("empty queue: moved something, or backend qmax %d, want 4", q.Max(-1))
	}
}

// TestServersComeAndGo: a server added at runtime serves the requests
// waiting in the backend queue, oldest first; a server's slot is taken
// away only while nothing waits in its queue, then refuses new requests
// and is skipped by the dispatchers; a slot given to another server
// starts empty, its qmax included. No waiting request is lost.
func TestServersComeAndGo(t *testing.T) {
	q, s := newQ(1), &slots{free: []int{0, 0, 0}}
	now := time.Now()
	ps := make([]*Pending, 4)
	for i, srv := range []int{-1, 0, -1, -1} {
		ps[i] = new(Pending)
		if !q.Enqueue(ps[i], srv, 0, now, s) {
			t.Fatal("refused")
		}
	}
	// Slot 0 has a waiter: it cannot go.
	if q.RemoveServer(0) {
		t.Fatal("RemoveServer took a slot with a request waiting in it")
	}
	if q.Cancel(ps[1]) != -1 || !q.RemoveServer(0) {
		t.Fatal("the emptied slot was not removed")
	}
	if q.Enqueue(new(Pending), 0, 0, now, s) {
		t.Fatal("Enqueue linked a request to a removed slot")
	}
	s.give(0)
	q.Dispatch(0, s) // nobody serves from a removed slot
	q.DispatchAll(s)
	if ps[0].Served() >= 0 || q.Len(-1) != 3 || q.Waiting() != 3 {
		t.Fatalf("a removed slot served: #0 served %d, backend %d, waiting %d", ps[0].Served(), q.Len(-1), q.Waiting())
	}
	// A new server on slot 2 (slot 1 never used) takes the oldest first.
	var l2 atomic.Int64
	l2.Store(7) // a stale mirror is reset
	q.AddServer(2, &l2)
	if q.Servers() != 3 || l2.Load() != 0 {
		t.Fatalf("slots %d, mirror %d; want 3, 0", q.Servers(), l2.Load())
	}
	s.give(2)
	q.Dispatch(2, s)
	if ps[0].Served() != 2 || ps[2].Served() >= 0 {
		t.Fatalf("after add: #0 served by %d, #2 by %d; want 2, none", ps[0].Served(), ps[2].Served())
	}
	// Slot 0 goes to another server: an empty queue, qmax from zero (and
	// no free session left over from the server that had the slot).
	s.free[0] = 0
	var l0 atomic.Int64
	q.AddServer(0, &l0)
	if in := q.Info(0, now); in.Waiting != 0 || in.Max != 0 {
		t.Fatalf("reused slot: %+v, want empty", in)
	}
	p := new(Pending)
	if !q.Enqueue(p, 0, 0, now, s) || l0.Load() != 1 || q.Max(0) != 1 {
		t.Fatalf("reused slot: enqueue, mirror %d, qmax %d", l0.Load(), q.Max(0))
	}
	// The backend's #2 and #3 are older than p: they go first.
	for _, w := range []*Pending{ps[2], ps[3]} {
		s.give(0)
		q.Dispatch(0, s)
		if w.Served() != 0 || p.Served() >= 0 {
			t.Fatalf("not served in order by the reused slot: %d, p %d", w.Served(), p.Served())
		}
	}
	if q.Cancel(p) != -1 || q.Waiting() != 0 || l0.Load() != 0 {
		t.Fatalf("waiting %d, mirror %d after the last cancel", q.Waiting(), l0.Load())
	}
	// Info and Max of slots past the end or removed are zero.
	if in := q.Info(9, now); in != (Info{}) || q.Max(9) != 0 || q.Len(9) != 0 {
		t.Fatal("an unknown slot has a queue")
	}
}

// TestAddServerTwice: a slot that has a server cannot be given again.
func TestAddServerTwice(t *testing.T) {
	q := newQ(1)
	defer func() {
		if recover() == nil {
			t.Fatal("AddServer on a slot in use did not panic")
		}
	}()
	q.AddServer(0, new(atomic.Int64))
}

// BenchmarkEnqueueDequeue: one request queues and is handed a slot freed by
// another, under contention from every P (RunParallel).
func BenchmarkEnqueueDequeue(b *testing.B) {
	q, s := newQ(4), &slots{free: []int{0, 0, 0, 0}}
	var n atomic.Int64
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		p := new(Pending)
		i := int(n.Add(1)) % 4
		for pb.Next() {
			q.Enqueue(p, -1, 0, time.Time{}, s)
			s.give(i) // a session ends: its slot goes to the oldest waiter
			q.Dispatch(i, s)
			<-p.Ready() // every waiter is handed the slot of one give
			q.Cancel(p)
			p.Reset()
		}
	})
}
