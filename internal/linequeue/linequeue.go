// Package linequeue is a bounded queue of lines (log lines) that many
// goroutines fill without ever waiting and one goroutine empties: a line
// that finds the queue full is dropped and counted. The process log
// (cmd/fulcrum) and each syslog target (proxy/syslog) write through one,
// so that a stalled reader costs log lines, never requests.
package linequeue

import (
	"sync"
	"sync/atomic"
)

// keepCap is the largest line buffer kept for reuse.
const keepCap = 64 << 10

// Queue holds up to its capacity of lines. Its zero value is not usable:
// make one with New.
type Queue struct {
	lines   chan *[]byte
	free    sync.Pool  // *[]byte
	mu      sync.Mutex // orders Push against Close's close of lines
	closed  atomic.Bool
	dropped atomic.Int64
}

// New returns a queue of n lines (n >= 1).
func New(n int) *Queue { return &Queue{lines: make(chan *[]byte, max(n, 1))} }

// Buffer returns an empty line buffer to fill and Push.
func (q *Queue) Buffer() *[]byte {
	bp, _ := q.free.Get().(*[]byte)
	if bp == nil {
		bp = new([]byte)
	}
	*bp = (*bp)[:0]
	return bp
}

// Push queues the line in bp (from Buffer) and reports whether it was
// taken: a full or closed queue drops it, counts it and keeps bp for
// reuse. It never waits. The caller must not touch bp after Push.
func (q *Queue) Push(bp *[]byte) bool {
	q.mu.Lock()
	ok := !q.closed.Load()
	if ok {
		select {
		case q.lines <- bp:
		default:
			ok = false
		}
	}
	q.mu.Unlock()
	if !ok {
		q.dropped.Add(1)
		q.Release(bp)
	}
	return ok
}

// Take waits for the next line: ok is false once the queue is closed and
// every line pushed before Close was taken. The consumer gives bp back
// with Release when done with it.
func (q *Queue) Take() (bp *[]byte, ok bool) {
	bp, ok = <-q.lines
	return bp, ok
}

// Release gives a line buffer back for reuse (large ones are let go).
func (q *Queue) Release(bp *[]byte) {
	if cap(*bp) <= keepCap {
		q.free.Put(bp)
	}
}

// Close stops taking lines; those queued stay for Take. Lines pushed
// after Close are dropped. Closing twice is a no-op.
func (q *Queue) Close() {
	q.mu.Lock()
	defer q.mu.Unlock()
	if !q.closed.Swap(true) {
		close(q.lines)
	}
}

// Closed reports whether Close was called.
func (q *Queue) Closed() bool { return q.closed.Load() }

// Dropped returns how many lines were dropped so far.
func (q *Queue) Dropped() int64 { return q.dropped.Load() }
