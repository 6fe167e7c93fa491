package runtime

import (
	goruntime "runtime"
	"sync"
	"time"
)

// The Runtime API yields to the data path. Its clients are operators'
// tools, and none of them may slow the traffic the proxy carries, not even
// a thousand monitoring probes hammering `show stat` in a loop: Go's
// scheduler has no priorities, so every goroutine serving a command takes
// its turn on the CPUs beside those serving requests, and a closed loop of
// clients takes as many turns as it is given. Two limits keep the API's
// share small whatever its clients do:
//
//   - each socket serves at most Socket.MaxConn sessions at once (HAProxy's
//     `stats maxconn`, 10 by default); the other clients wait, unaccepted,
//     in the kernel's listen queue (api.go);
//   - commands draw on a CPU budget: sustained, the API runs commands for
//     at most cmdShare of the process's CPUs, with bursts of up to
//     cmdBurst after a quiet time; an overdrawn budget makes the next
//     command wait before it runs, as HAProxy's `nice` on a stats socket
//     gives its place in the scheduler. Operators do not notice it (a
//     `show stat` of 100 backends x 100 servers costs about 20 ms); a
//     flood of clients is paced.
//
// A command is charged the CPU time it used (session.charge: its
// goroutine's, read on its thread's clock), not the time it took: waiting
// for a CPU while the data path runs, or for a client that reads slowly,
// costs nothing, and one slow client must not delay the others. Where no
// thread clock exists, the time it took less its blocked writes. Each
// command is also charged cmdOverhead for the work around it that is not
// measured: accepting the session, reading its line, the close, the
// garbage collection of what it allocated, and the client's own share of
// the exchange when it runs on the same machine.
const (
	cmdShare    = 0.05
	cmdBurst    = 100 * time.Millisecond
	cmdOverhead = 100 * time.Microsecond
)

// budget is a token bucket of command time, refilled at rate seconds per
// second of wall time up to burst.
type budget struct {
	rate  float64 // seconds of command time earned per second
	burst time.Duration

	mu     sync.Mutex
	tokens time.Duration // negative when overdrawn
	last   time.Time     // of the last refill
}

// newBudget returns a full budget of share of the process's CPUs.
func newBudget(share float64, burst time.Duration) *budget {
	return &budget{rate: share * float64(goruntime.GOMAXPROCS(0)), burst: burst, tokens: burst, last: time.Now()}
}

// refillLocked adds what was earned since the last refill.
func (b *budget) refillLocked(now time.Time) {
	if now.After(b.last) {
		b.tokens = min(b.burst, b.tokens+time.Duration(float64(now.Sub(b.last))*b.rate))
		b.last = now
	}
}

// reserve takes cmdOverhead from the budget and returns 0 when it is not
// overdrawn; otherwise it takes nothing and returns how long to wait
// before asking again.
func (b *budget) reserve(now time.Time) time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.refillLocked(now)
	if b.tokens >= 0 {
		b.tokens -= cmdOverhead
		return 0
	}
	return time.Duration(float64(-b.tokens)/b.rate) + time.Millisecond
}

// admit waits until a command may run, and reserves its overhead. It
// returns false, without waiting further, once done is closed.
func (b *budget) admit(done <-chan struct{}) bool {
	for {
		wait := b.reserve(time.Now())
		if wait == 0 {
			return true
		}
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-done:
			t.Stop()
			return false
		}
	}
}

// spend charges d of command time.
func (b *budget) spend(now time.Time, d time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.refillLocked(now)
	b.tokens -= max(d, 0)
}

// overdrawn reports whether the next command would wait.
func (b *budget) overdrawn() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.refillLocked(time.Now())
	return b.tokens < 0
}
