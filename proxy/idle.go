package proxy

// The process's idle time, HAProxy's Idle_pct (`show info`) and
// haproxy_process_idle_time_percent: HAProxy measures the time its threads
// spend waiting in the poller; a Go process has no such loop, so fulcrum
// takes the complement of its CPU use: 100 less the CPU time the process
// used (getrusage: user + system) over the thread time available
// (GOMAXPROCS × the wall-clock time), over the time since the previous
// measure, which is at least a second old.

import (
	"runtime"
	"sync"
	"time"
)

// idleMinWindow is the shortest time a measure spans: closer reads get
// the previous measure.
const idleMinWindow = time.Second

// idleMeter keeps the last measure of the idle time. The zero value is
// ready: its first read says 100 (nothing measured yet, as HAProxy at
// start).
type idleMeter struct {
	mu  sync.Mutex
	at  time.Time     // the start of the next measure
	cpu time.Duration // the process's CPU time then
	pct int           // the last measure, percent
}

// percent returns the idle time in percent (0 to 100) at now, when the
// process has used cpu of CPU time and runs threads threads; -1 when cpu
// is negative (unknown on this platform).
func (m *idleMeter) percent(now time.Time, cpu time.Duration, threads int) int {
	if cpu < 0 {
		return -1
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.at.IsZero() {
		m.at, m.cpu, m.pct = now, cpu, 100
		return m.pct
	}
	wall := now.Sub(m.at)
	if wall < idleMinWindow {
		return m.pct
	}
	busy := float64(cpu-m.cpu) / (float64(wall) * float64(max(threads, 1)))
	m.pct = min(max(100-int(busy*100+0.5), 0), 100)
	m.at, m.cpu = now, cpu
	return m.pct
}

// rateMeter is a per-second rate of a growing total measured between
// reads at least idleMinWindow apart (HAProxy's BytesOutRate, which it
// keeps over the last second): closer reads get the previous measure. The
// zero value is ready; its first read says 0.
type rateMeter struct {
	mu    sync.Mutex
	at    time.Time
	total int64
	rate  int64
}

// perSecond returns the rate of total at now, per second.
func (m *rateMeter) perSecond(now time.Time, total int64) int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.at.IsZero() {
		m.at, m.total = now, total
		return 0
	}
	wall := now.Sub(m.at)
	if wall < idleMinWindow {
		return m.rate
	}
	m.rate = max(int64(float64(total-m.total)/wall.Seconds()+0.5), 0)
	m.at, m.total = now, total
	return m.rate
}

// IdlePct returns the process's idle time in percent, HAProxy's Idle_pct
// (see idleMeter), over the last second or more; -1 when unknown.
func (p *Proxy) IdlePct() int {
	return p.obs.idle.percent(time.Now(), processCPU(), runtime.GOMAXPROCS(0))
}
