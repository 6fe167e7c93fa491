package proxy

import (
	"sync"
	"time"
)

// ringIdleAfter is how long the io_uring relay goes without a session
// before its thread gives back the P it was lent (ringThread).
const ringIdleAfter = time.Second

// ringThread tells a callback (Proxy.OnRingThread) when the io_uring
// relay's loop needs a P of its own (+1: a session is relayed) and when
// it no longer does (-1: none for idleAfter, or the proxy stopped). The
// loop blocks in io_uring_enter between turns; with no P to spare, Go's
// sysmon takes the P from a thread 20 µs into a system call and the
// thread must win one back at every turn (bench/README.md, "The io_uring
// loop's thread"). An idle loop blocks for long and costs nothing that
// way, and the extra P would be spent on HTTP work, which on 2 CPUs runs
// better on one (README, nbthread): hence only while sessions flow.
type ringThread struct {
	mu        sync.Mutex
	fn        func(delta int) // nil: nobody listens
	idleAfter time.Duration
	live      int // sessions on the relay
	raised    bool
	stopped   bool
	idle      *time.Timer // armed when live falls to 0 while raised
}

// start counts a session handed to the relay.
func (t *ringThread) start() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.live++
	if t.idle != nil {
		t.idle.Stop()
	}
	if !t.raised && !t.stopped && t.fn != nil {
		t.raised = true
		t.fn(+1)
	}
}

// end counts a session's end; the last one arms the idle timer.
func (t *ringThread) end() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.live--
	if t.live > 0 || !t.raised {
		return
	}
	if t.idle == nil {
		t.idle = time.AfterFunc(t.idleAfter, t.idleFired)
	} else {
		t.idle.Reset(t.idleAfter)
	}
}

func (t *ringThread) idleFired() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.live == 0 && t.raised {
		t.raised = false
		t.fn(-1)
	}
}

// stop gives the P back for good (the proxy's relay is closed).
func (t *ringThread) stop() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.stopped = true
	if t.idle != nil {
		t.idle.Stop()
	}
	if t.raised {
		t.raised = false
		t.fn(-1)
	}
}
