package main

import (
	goruntime "runtime"
	"sync"

	"github.com/rs/zerolog"
)

// threadCount keeps the process's P count (runtime.GOMAXPROCS): nbthread,
// or without one the base count (defaultThreads, or GOMAXPROCS from the
// environment), plus one for each io_uring relay relaying sessions
// (tune_netio "uring": proxy.Proxy.OnRingThread, until a second after its
// last session), whose loop holds an OS thread of its own and blocks in
// io_uring_enter between turns. Without a P to
// spare, Go's sysmon takes the P from a thread blocked in a system call
// after 20 µs and the thread must win one back when the call returns, at
// every turn: bench/README.md ("The io_uring loop's thread") measured 0.22
// nanosleep and 0.08 futex calls per request and 37% more CPU per request
// in mode tcp with the default single P on 2 CPUs. The zero value is not
// usable: fill base.
type threadCount struct {
	mu       sync.Mutex
	base     int // the count without nbthread
	nbthread int // the configuration's nbthread; 0 = none
	rings    int // io_uring relays relaying sessions
}

// want is the P count for t's state.
func (t *threadCount) want() int {
	n := t.nbthread
	if n <= 0 {
		n = t.base
	}
	return n + t.rings
}

// apply sets GOMAXPROCS to t's count when it differs, and logs the change
// with why: at info level for the configuration's nbthread, at debug
// level for an io_uring relay (which changes it at each burst of mode tcp
// sessions after a quiet second).
func (t *threadCount) apply(log zerolog.Logger, why string) {
	want := t.want()
	if cur := goruntime.GOMAXPROCS(0); want > 0 && want != cur {
		goruntime.GOMAXPROCS(want)
		ev := log.Info()
		if why != "nbthread" {
			ev = log.Debug()
		}
		ev.Int("nbthread", want).Int("previous", cur).Str("reason", why).Msg("thread count changed")
	}
}

// setNbthread applies a configuration's nbthread (0: none), at start or
// after a reload.
func (t *threadCount) setNbthread(n int, log zerolog.Logger) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.nbthread = n
	t.apply(log, "nbthread")
}

// ring counts an io_uring relay taking sessions (+1) or idle (-1): the
// callback proxy.Proxy.OnRingThread wants.
func (t *threadCount) ring(delta int, log zerolog.Logger) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.rings = max(0, t.rings+delta)
	t.apply(log, "io_uring relay")
}
