package proxy

import (
	"sync/atomic"
	"time"
)

// timeSamples is the window of HAProxy's qtime/ctime/rtime/ttime averages
// (TIME_STATS_SAMPLES): the last 1,024 requests.
const timeSamples = 1024

// Counters are the counters one frontend, backend or server keeps, named as
// HAProxy's `show stat` columns. Every field is updated with atomics on the
// request path; Snapshot reads them without locks. Fields that do not apply
// to a kind of proxy (lbtot on a frontend, say) simply stay 0 and are left
// empty by the renderers.
type Counters struct {
	Scur atomic.Int64 // current sessions
	Smax atomic.Int64 // highest Scur seen
	Stot atomic.Int64 // sessions (frontend: connections; backend, server: streams = HTTP requests or TCP connections)

	Bin  atomic.Int64 // bytes received from clients
	Bout atomic.Int64 // bytes sent to clients

	Dreq   atomic.Int64 // requests denied
	Dresp  atomic.Int64 // responses denied (http_response deny)
	Ereq   atomic.Int64 // request errors (frontend)
	Econ   atomic.Int64 // connection errors to servers
	Eresp  atomic.Int64 // response errors (bad or aborted server responses)
	Wretr  atomic.Int64 // connection retries
	Wredis atomic.Int64 // redispatches

	ReqTot  atomic.Int64    // HTTP requests (req_tot)
	Hrsp    [6]atomic.Int64 // responses by class: 1xx..5xx at [1..5], other at [0]
	Lbtot   atomic.Int64    // times selected by load balancing
	CliAbrt atomic.Int64    // transfers aborted by the client
	SrvAbrt atomic.Int64    // transfers aborted by the server

	lastSess atomic.Int64 // unix nanoseconds of the last session assigned, 0 = never

	// ConnEarly counts a frontend's connections that ended before their
	// session began: a PROXY header missing or bad, a tcp_request
	// connection rule's reject. conn_tot is Stot + ConnEarly (HAProxy
	// counts every accepted connection there, cum_conn).
	ConnEarly atomic.Int64

	SessRate   FreqCtr // sessions per second (rate)
	ReqRate    FreqCtr // HTTP requests per second (req_rate)
	rateMax    atomic.Int64
	reqRateMax atomic.Int64

	Qtime    SlidingAvg   // ms
	qtimeMax atomic.Int64 // ms, longest queue time (qtime_max)
	Ctime    SlidingAvg   // ms
	Rtime    SlidingAvg   // ms
	Ttime    SlidingAvg   // ms

	// Timings are the latency histograms (histogram.go) and history the
	// last minutes' points (history.go), nil until the sampler first saw
	// traffic.
	Timings Timings
	history atomic.Pointer[History]
	obs     obsCounters // connection and timing counters (snapshot_obs.go)
}

// sessionStart counts a new session at now: scur/smax, stot, rate, lastsess.
func (c *Counters) sessionStart(now time.Time) {
	cur := c.Scur.Add(1)
	storeMax(&c.Smax, cur)
	c.Stot.Add(1)
	storeMax(&c.rateMax, c.SessRate.Add(now, 1))
	c.lastSess.Store(now.UnixNano())
}

// sessionRetried counts a connect retry on the server of a session
// already counted (HAProxy's cum_sess and session rate count each
// connection attempt: connect_server's srv_inc_sess_ctr); scur does not
// move.
func (c *Counters) sessionRetried(now time.Time) {
	c.Stot.Add(1)
	storeMax(&c.rateMax, c.SessRate.Add(now, 1))
	c.lastSess.Store(now.UnixNano())
}

// queued records one queue time, ms.
func (c *Counters) queued(ms int64) {
	c.Qtime.Add(ms)
	storeMax(&c.qtimeMax, ms)
}

// sessionEnd is the pair of sessionStart.
func (c *Counters) sessionEnd() { c.Scur.Add(-1) }

// request counts one HTTP request at now (req_tot, req_rate).
func (c *Counters) request(now time.Time) {
	c.ReqTot.Add(1)
	storeMax(&c.reqRateMax, c.ReqRate.Add(now, 1))
}

// response counts one HTTP response by status class.
func (c *Counters) response(status int) {
	class := status / 100
	if class < 1 || class > 5 {
		class = 0
	}
	c.Hrsp[class].Add(1)
}

// storeMax raises m to v if v is larger.
func storeMax(m *atomic.Int64, v int64) {
	for {
		old := m.Load()
		if v <= old || m.CompareAndSwap(old, v) {
			return
		}
	}
}

// FreqCtr counts events per second as HAProxy's freq_ctr: the count of the
// current second plus the previous second's count weighted by the part of
// the previous second still inside the sliding one-second window.
//
// Add and Rate are safe for concurrent use. An event racing with the turn of
// a second may be counted in the previous second; the error is at most the
// few events in flight at that instant.
type FreqCtr struct {
	sec  atomic.Int64 // unix second that cur counts
	cur  atomic.Int64
	prev atomic.Int64
}

// Add counts n events at now and returns the rate including them.
func (f *FreqCtr) Add(now time.Time, n int64) int64 {
	f.rotate(now.Unix())
	f.cur.Add(n)
	return f.Rate(now)
}

// rotate moves the window to second s.
func (f *FreqCtr) rotate(s int64) {
	for {
		old := f.sec.Load()
		if old >= s {
			return
		}
		if f.sec.CompareAndSwap(old, s) {
			c := f.cur.Swap(0)
			if s == old+1 {
				f.prev.Store(c)
			} else {
				f.prev.Store(0)
			}
			return
		}
	}
}

// Rate returns events per second over the sliding second ending at now.
func (f *FreqCtr) Rate(now time.Time) int64 {
	s := now.Unix()
	sec := f.sec.Load()
	switch {
	case sec == s:
		frac := int64(time.Second) - int64(now.Nanosecond())
		return f.cur.Load() + f.prev.Load()*frac/int64(time.Second)
	case sec == s-1:
		frac := int64(time.Second) - int64(now.Nanosecond())
		return f.cur.Load() * frac / int64(time.Second)
	default:
		return 0
	}
}

// SlidingAvg is HAProxy's swrate as its stream_update_time_stats uses it
// (swrate_add_dynamic): the plain mean of the values while at most
// timeSamples have been seen, then a running average over the last
// timeSamples, kept as a sum of timeSamples×average so that updating it
// is one CAS. (It decayed from the second value on: two responses of
// 3,005 ms averaged 2,253, where HAProxy shows 3,005; a trial saw it.)
type SlidingAvg struct {
	sum atomic.Int64
	n   atomic.Int64
}

// Add records one value.
func (a *SlidingAvg) Add(v int64) {
	n := a.n.Add(1)
	if n <= timeSamples {
		a.sum.Add(v)
		return
	}
	a.n.Store(timeSamples)
	for {
		old := a.sum.Load()
		// sum' = sum - ceil(sum/N) + v keeps sum ≈ N × average.
		if a.sum.CompareAndSwap(old, old-(old+timeSamples-1)/timeSamples+v) {
			return
		}
	}
}

// Avg returns the current average, 0 if nothing was recorded.
func (a *SlidingAvg) Avg() int64 {
	n := a.n.Load()
	if n == 0 {
		return 0
	}
	if n > timeSamples {
		n = timeSamples
	}
	return (a.sum.Load() + n - 1) / n
}

// clearMax zeroes the peak values: smax, the session and request rate
// peaks, and the longest queue, connect, response and total times.
// HAProxy's "clear counters" (proxy.c, cli_parse_clear_counters) zeroes
// the same ones.
func (c *Counters) clearMax() {
	for _, v := range []*atomic.Int64{&c.Smax, &c.rateMax, &c.reqRateMax, &c.qtimeMax,
		&c.obs.ctimeMax, &c.obs.rtimeMax, &c.obs.ttimeMax} {
		v.Store(0)
	}
}

// clearAll zeroes every counter but the current sessions (scur), as
// HAProxy's "clear counters all" clears an object's counters: totals,
// bytes, errors, responses by class, rates and their peaks, the average
// times. The latency histograms and the history are fulcrum's own and
// are kept.
func (c *Counters) clearAll() {
	c.clearMax()
	for _, v := range []*atomic.Int64{&c.Stot, &c.Bin, &c.Bout, &c.Dreq, &c.Dresp, &c.Ereq,
		&c.Econ, &c.Eresp, &c.Wretr, &c.Wredis, &c.ReqTot, &c.Lbtot, &c.CliAbrt, &c.SrvAbrt,
		&c.lastSess, &c.obs.connects, &c.obs.reuses, &c.obs.intercepted, &c.ConnEarly} {
		v.Store(0)
	}
	for i := range c.Hrsp {
		c.Hrsp[i].Store(0)
	}
	c.SessRate.reset()
	c.ReqRate.reset()
	for _, a := range []*SlidingAvg{&c.Qtime, &c.Ctime, &c.Rtime, &c.Ttime} {
		a.reset()
	}
}

// reset empties the counter: no events, rate 0.
func (f *FreqCtr) reset() {
	f.sec.Store(0)
	f.cur.Store(0)
	f.prev.Store(0)
}

// reset forgets every value: the average is 0 again.
func (a *SlidingAvg) reset() {
	a.sum.Store(0)
	a.n.Store(0)
}

// ClearCounters is the Runtime API's "clear counters" (all false: the
// peak values of every frontend, backend and server, and their queues'
// longest) and "clear counters all" (every counter but the current
// sessions, as HAProxy's: "the same effect as restarting"; fulcrum's
// latency histograms and history are kept).
func (p *Proxy) ClearCounters(all bool) {
	reset := (*Counters).clearMax
	if all {
		reset = (*Counters).clearAll
	}
	p.obs.connRateMax.Store(0) // HAProxy's global cps_max and sps_max
	for _, fe := range p.Frontends {
		reset(&fe.Counters)
		if all {
			fe.DeniedConn.Store(0)
			fe.ProxyErrors.Store(0)
			fe.H1.Clear()
			fe.H2.Clear()
		}
	}
	for _, b := range p.Backends {
		reset(&b.Counters)
		if all {
			b.H1.Clear()
			b.H2.Clear()
		}
		b.queue.ResetMax()
		for _, s := range b.Servers() {
			reset(&s.Counters)
		}
	}
}
