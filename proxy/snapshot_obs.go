package proxy

// What the observability features add to the counters and the snapshot:
// connection attempts and reuses, the longest connect, response and total
// times (HAProxy's ctime_max, rtime_max, ttime_max), requests answered by
// the frontend itself (intercepted), a backend's own state changes and
// downtime, a server's idle connections, and the live histograms and
// history the renderers read.

import (
	"sync"
	"sync/atomic"
	"time"
)

// obsCounters are kept beside Counters' own, updated on the request path
// with atomics.
type obsCounters struct {
	connects    atomic.Int64 // successful connections to a server (attempts are these plus wretr and econ)
	reuses      atomic.Int64 // requests sent over a kept connection
	ctimeMax    atomic.Int64 // ms
	rtimeMax    atomic.Int64 // ms
	ttimeMax    atomic.Int64 // ms
	intercepted atomic.Int64 // requests answered by the frontend itself (stats page, redirects)
}

// ObsValues is the observability part of an object's snapshot.
type ObsValues struct {
	// Connect is the connection attempts to servers (HAProxy's connect:
	// successful ones, retries and failures); Reuse the requests sent over
	// an idle connection kept from an earlier one.
	Connect, Reuse int64
	// CtimeMax, RtimeMax and TtimeMax are the longest connect, response and
	// total times seen, ms.
	CtimeMax, RtimeMax, TtimeMax int64
	// Intercepted is the requests a frontend answered itself.
	Intercepted int64

	// Backends only: the last time the backend went UP or DOWN (zero:
	// never since start) and the time it spent DOWN, and how many times
	// it went DOWN.
	BackendChange   time.Time
	BackendDowntime time.Duration
	BackendDowns    int64

	// Servers only: the idle connections kept for reuse; Safe of them
	// have served more than one request (HAProxy's safe idle
	// connections); PoolMax is pool_max_conn (-1: no limit).
	Idle, SafeIdle, PoolMax int

	// Timings are the object's live latency histograms and History its
	// last minutes, nil before it saw traffic. They are read when
	// rendered, not copied into the snapshot.
	Timings *Timings
	History *History
}

// obsValues reads c's observability counters.
func (c *Counters) obsValues() ObsValues {
	o := &c.obs
	return ObsValues{
		Connect: o.connects.Load() + c.Wretr.Load() + c.Econ.Load(), Reuse: o.reuses.Load(),
		CtimeMax: o.ctimeMax.Load(), RtimeMax: o.rtimeMax.Load(), TtimeMax: o.ttimeMax.Load(),
		Intercepted: o.intercepted.Load(), Timings: &c.Timings, History: c.history.Load(),
	}
}

// server fills the server-only values of s.
func (v *ObsValues) server(s *Server) {
	safe, unsafe := s.up.Pool.Idle()
	v.Idle, v.SafeIdle, v.PoolMax = safe+unsafe, safe, s.up.Pool.Max()
}

// backend fills the backend-only values of b at now.
func (v *ObsValues) backend(b *Backend, now time.Time) {
	v.BackendChange, v.BackendDowntime, v.BackendDowns = b.state.read(now)
}

// backendState is a backend's own UP/DOWN history: it is DOWN while no
// server is usable (HAProxy's backend status), and HAProxy reports when
// it last changed, how often it went down and for how long.
type backendState struct {
	mu       sync.Mutex
	init     bool
	up       bool
	since    time.Time // last change
	downs    int64
	downtime time.Duration // closed DOWN periods
}

// note records the backend's usability after a rebuild at now. Called by
// rebuildLocked with the backend's lock held.
func (st *backendState) note(up bool, now time.Time) {
	st.mu.Lock()
	defer st.mu.Unlock()
	switch {
	case !st.init:
		st.init, st.up = true, up
		if !up {
			st.since = now // DOWN from the start counts as down time
		}
	case up == st.up:
	case up:
		st.downtime += now.Sub(st.since)
		st.up, st.since = true, now
	default:
		st.downs++
		st.up, st.since = false, now
	}
}

// read returns the last change, the downtime up to now and the downs.
func (st *backendState) read(now time.Time) (time.Time, time.Duration, int64) {
	st.mu.Lock()
	defer st.mu.Unlock()
	d := st.downtime
	if st.init && !st.up {
		d += now.Sub(st.since)
	}
	return st.since, d, st.downs
}

// inherit continues old's history (a reload). It is called before the
// new backend's servers get their inherited states: the rebuild that
// follows records a change from old's last state, if any.
func (st *backendState) inherit(old *backendState) {
	old.mu.Lock()
	init, up, since, downs, downtime := old.init, old.up, old.since, old.downs, old.downtime
	old.mu.Unlock()
	if !init {
		return
	}
	st.mu.Lock()
	st.init, st.up, st.since, st.downs, st.downtime = true, up, since, downs, downtime
	st.mu.Unlock()
}

// noteUsable is rebuildLocked's hook: the backend is UP while its usable
// set is not empty.
func (b *Backend) noteUsable(usable int) {
	b.state.note(usable > 0, b.clock.Now())
}
