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
func (l *limiter) tryAcquire() bool { return l.tryAcquireN(1) }

// tryAcquireN takes n slots at once if n are free (the descriptor budget
// counts a client connection as two, fds.go).
func (l *limiter) tryAcquireN(n int64) bool {
	for {
		c := l.cur.Load()
		if m := l.max.Load(); m > 0 && c+n > m {
			return false
		}
		if l.cur.CompareAndSwap(c, c+n) {
			return true
		}
	}
}

// acquire takes a slot, waiting while none is free. It returns false,
// without a slot, when done is closed first.
func (l *limiter) acquire(done <-chan struct{}) bool { return l.acquireN(1, done, nil) }

// acquireN takes n slots, waiting while fewer are free. Before each wait
// it calls free, if non-nil, which may return slots held elsewhere (the
// descriptor budget closes an idle pooled connection) and reports whether
// it did: the attempt is then made again at once. It returns false,
// without slots, when done is closed first.
func (l *limiter) acquireN(n int64, done <-chan struct{}, free func() bool) bool {
	if l.tryAcquireN(n) {
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
		if l.tryAcquireN(n) {
			return true
		}
		if free != nil && free() {
			continue
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
func (l *limiter) force() { l.forceN(1) }

// forceN takes n slots even when they are not free (see force).
func (l *limiter) forceN(n int64) { l.cur.Add(n) }

// release returns a slot taken by tryAcquire or acquire.
func (l *limiter) release() { l.releaseN(1) }

// releaseN returns n slots taken by tryAcquireN, acquireN or forceN.
func (l *limiter) releaseN(n int64) {
	l.cur.Add(-n)
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
