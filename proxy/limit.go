package proxy

import (
	"sync"
	"sync/atomic"
)

// limiter counts connections against a limit that may change at runtime:
// a frontend's maxconn or the process's (`set maxconn frontend|global`).
//
// Taking and returning a slot are lock-free while the limit is not
// reached; only waiters and limit changes take mu. Invariants:
//   - cur is the number of slots taken; it may exceed max right after the
//     limit was lowered (nobody is cut off), and then falls as slots return;
//   - a waiter registers (waiters, then the wake channel under mu) before
//     its last attempt, and release/setMax close the wake channel under mu
//     after changing cur/max, so a waiter either sees the free slot or is
//     woken: no lost wake-up.
type limiter struct {
	cur     atomic.Int64
	max     atomic.Int64 // 0 = unlimited
	waiters atomic.Int32

	mu   sync.Mutex
	wake chan struct{} // closed (and cleared) to wake every waiter
}

// tryAcquire takes a slot if one is free.
func (l *limiter) tryAcquire() bool {
	for {
		c := l.cur.Load()
		if m := l.max.Load(); m > 0 && c >= m {
			return false
		}
		if l.cur.CompareAndSwap(c, c+1) {
			return true
		}
	}
}

// acquire takes a slot, waiting while none is free. It returns false,
// without a slot, when done is closed first.
func (l *limiter) acquire(done <-chan struct{}) bool {
	if l.tryAcquire() {
		return true
	}
	l.waiters.Add(1)
	defer l.waiters.Add(-1)
	for {
		l.mu.Lock()
		if l.wake == nil {
			l.wake = make(chan struct{})
		}
		wake := l.wake
		l.mu.Unlock()
		if l.tryAcquire() {
			return true
		}
		select {
		case <-wake:
		case <-done:
			return false
		}
	}
}

// force takes a slot even when none is free (cur may then exceed max, as
// after a lowered limit): for a connection that was admitted already and
// moves from the proxy a reload replaced (handoff.go).
func (l *limiter) force() { l.cur.Add(1) }

// release returns a slot taken by tryAcquire or acquire.
func (l *limiter) release() {
	l.cur.Add(-1)
	if l.waiters.Load() > 0 {
		l.broadcast()
	}
}

// setMax changes the limit (0 = unlimited) and returns the previous one.
func (l *limiter) setMax(n int) int {
	old := l.max.Swap(int64(n))
	l.broadcast()
	return int(old)
}

// broadcast wakes every waiter so that each tries again.
func (l *limiter) broadcast() {
	l.mu.Lock()
	if l.wake != nil {
		close(l.wake)
		l.wake = nil
	}
	l.mu.Unlock()
}
