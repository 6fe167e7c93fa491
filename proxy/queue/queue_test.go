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
