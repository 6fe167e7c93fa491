package proxy

// The in-process history of the last minutes: per frontend, backend and
// server, a ring of HistorySlots points, one per history interval (10 s by
// default: 15 minutes), that the stats page draws as sparklines. The
// sampler (one goroutine per running Proxy) writes a point per object at
// the end of each interval, from the counters and histograms the request
// path keeps anyway: the request path does no work for the history.
//
// Memory is fixed per object and allocated once, at the first interval in
// which the object has seen traffic (idle objects cost one pointer):
// HistoryBytes, 3.2 KiB, for the ring and the checkpoint of the response
// histogram that per-interval percentiles are computed from. With the
// four latency histograms (4 x 1.9 KiB, histogram.go) a server that sees
// traffic holds at most 11 KiB of observability data, under the 16 KiB the
// design allows.

import (
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/fulcrum-proxy/fulcrum/conf"
)

// HistorySlots is the number of points a history holds.
const HistorySlots = 90

// DefaultHistoryInterval is the interval between two points unless the
// configuration says otherwise: 90 points cover 15 minutes.
const DefaultHistoryInterval = 10 * time.Second

// HistoryPoint is one interval of an object's history. Rates are counts
// over the interval; times are in µs.
type HistoryPoint struct {
	// End is the end of the interval, unix seconds; 0 marks an interval
	// the sampler missed (the process was busy or stopped).
	End int64
	// Requests is the HTTP requests (tcp mode: sessions) in the interval.
	Requests uint32
	// Errors is the failed requests in the interval: 5xx responses,
	// connection and response errors (frontends: request errors and 5xx).
	Errors uint32
	// P50 and P99 are the response time percentiles (Tr) of the requests
	// of the interval, in µs; 0 without requests.
	P50, P99 uint32
	// Queue and Sessions are the queued requests and the current sessions
	// at the end of the interval.
	Queue, Sessions uint32
}

// History is one object's ring of points. The sampler writes it, under
// mu; readers copy it with Points.
type History struct {
	mu      sync.Mutex
	owner   *Counters // the counters the points are computed from (see shareHistory)
	last    int64     // index of the last interval written (unix time / interval)
	next    int       // ring position of the next point
	n       int       // points written, up to HistorySlots
	points  [HistorySlots]HistoryPoint
	prevReq int64
	prevErr int64
	check   [HistBuckets]uint32 // the response histogram at the last point
}

// HistoryBytes is the memory one History takes.
const HistoryBytes = int(unsafe.Sizeof(History{}))

// NewHistory returns a history holding pts (the last HistorySlots of
// them), as a sampler would have written them: for renderers' tests and
// tools that replay a history.
func NewHistory(pts []HistoryPoint) *History {
	h := &History{}
	for _, p := range pts[max(0, len(pts)-HistorySlots):] {
		h.push(p)
	}
	return h
}

// Points returns the history's points, oldest first (at most
// HistorySlots). Safe for concurrent use.
func (h *History) Points() []HistoryPoint {
	if h == nil {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]HistoryPoint, 0, h.n)
	start := h.next - h.n
	if start < 0 {
		start += HistorySlots
	}
	for i := range h.n {
		out = append(out, h.points[(start+i)%HistorySlots])
	}
	return out
}

// sampleCounts are the figures a point is computed from.
type sampleCounts struct {
	requests, errors int64
	queue, sessions  int64
}

// record writes the point of interval idx (ending at end) from c's
// counters and response histogram, once per interval: a second call for
// the same interval (two samplers during a reload) does nothing. Intervals
// missed since the last point are written as gaps.
func (h *History) record(c *Counters, idx int64, end time.Time, s sampleCounts) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.owner != c || idx <= h.last {
		return
	}
	var buf [HistBuckets]uint64
	c.Timings[TimingResponse].Counts(buf[:])
	var delta [HistBuckets]uint64
	var dn uint64
	for i := range buf {
		cur := uint32(buf[i])
		d := cur - h.check[i] // modulo 2^32: exact while a bucket gets fewer than 2^32 values per interval
		h.check[i] = cur
		delta[i] = uint64(d)
		dn += uint64(d)
	}
	if h.last > 0 {
		for gap := min(idx-h.last-1, HistorySlots); gap > 0; gap-- {
			h.push(HistoryPoint{})
		}
	}
	p := HistoryPoint{End: end.Unix()}
	if h.last > 0 { // the first point has no previous counts to subtract
		p.Requests = clampU32(s.requests - h.prevReq)
		p.Errors = clampU32(s.errors - h.prevErr)
		if dn > 0 {
			p.P50 = clampU32(percentileOf(delta[:], dn, 0.50))
			p.P99 = clampU32(percentileOf(delta[:], dn, 0.99))
		}
	}
	p.Queue, p.Sessions = clampU32(s.queue), clampU32(s.sessions)
	h.prevReq, h.prevErr = s.requests, s.errors
	h.last = idx
	h.push(p)
}

func (h *History) push(p HistoryPoint) {
	h.points[h.next] = p
	h.next = (h.next + 1) % HistorySlots
	h.n = min(h.n+1, HistorySlots)
}

func clampU32(v int64) uint32 {
	switch {
	case v < 0:
		return 0
	case v > 1<<32-1:
		return 1<<32 - 1
	}
	return uint32(v)
}

// historyFor returns c's history, allocating it when c has seen traffic
// (nil otherwise).
func (c *Counters) historyFor() *History {
	if h := c.history.Load(); h != nil {
		return h
	}
	if c.Stot.Load() == 0 && c.ReqTot.Load() == 0 {
		return nil
	}
	h := &History{owner: c}
	if c.history.CompareAndSwap(nil, h) {
		return h
	}
	return c.history.Load()
}

// History returns the object's history, nil before it has seen traffic.
func (c *Counters) History() *History { return c.history.Load() }

// carryObservations makes to continue from's histograms, history and
// observability counters (a reload: see Proxy.carry).
func (p *Proxy) carryObservations(from, to *Counters) {
	to.shareObservations(from)
	fo, tobs := &from.obs, &to.obs
	p.carryList([]*atomic.Int64{&fo.connects, &fo.reuses, &fo.intercepted},
		[]*atomic.Int64{&tobs.connects, &tobs.reuses, &tobs.intercepted})
	for _, m := range [][2]*atomic.Int64{{&fo.ctimeMax, &tobs.ctimeMax}, {&fo.rtimeMax, &tobs.rtimeMax}, {&fo.ttimeMax, &tobs.ttimeMax}} {
		storeMax(m[1], m[0].Load())
	}
}

// shareObservations makes to continue from's histograms and history. The
// history's points are computed from to's counters from now on.
func (to *Counters) shareObservations(from *Counters) {
	to.Timings.share(&from.Timings)
	if h := from.history.Load(); h != nil {
		h.mu.Lock()
		h.owner = to
		h.mu.Unlock()
		to.history.Store(h)
	}
}

// sampleHistory writes the point of interval idx of every object of p.
// Called by the sampler.
func (p *Proxy) sampleHistory(idx int64, end time.Time) {
	for _, fe := range p.Frontends {
		c := &fe.Counters
		if h := c.historyFor(); h != nil {
			h.record(c, idx, end, sampleCounts{
				requests: pick(fe.Conf.Mode == conf.ModeTCP, c.Stot.Load(), c.ReqTot.Load()),
				errors:   c.Ereq.Load() + c.Hrsp[5].Load(),
				sessions: c.Scur.Load(),
			})
		}
	}
	for _, b := range p.Backends {
		tcp := b.Conf.Mode == conf.ModeTCP
		c := &b.Counters
		if h := c.historyFor(); h != nil {
			h.record(c, idx, end, sampleCounts{
				requests: pick(tcp, c.Stot.Load(), c.ReqTot.Load()),
				errors:   c.Hrsp[5].Load() + c.Econ.Load() + c.Eresp.Load(),
				queue:    int64(b.queue.Len(-1)),
				sessions: c.Scur.Load(),
			})
		}
		for _, s := range b.Servers() {
			c := &s.Counters
			if h := c.historyFor(); h != nil {
				h.record(c, idx, end, sampleCounts{
					requests: pick(tcp, c.Stot.Load(), c.ReqTot.Load()),
					errors:   c.Hrsp[5].Load() + c.Econ.Load() + c.Eresp.Load(),
					queue:    int64(b.queue.Len(s.ID - 1)),
					sessions: c.Scur.Load(),
				})
			}
		}
	}
}

func pick(cond bool, a, b int64) int64 {
	if cond {
		return a
	}
	return b
}

// runHistory is the sampler: it writes a point of every object at the end
// of each interval (aligned on multiples of the interval since the epoch,
// so that the proxy a reload starts continues the same rings) until the
// proxy stops. It does nothing when interval is 0.
func (p *Proxy) runHistory(interval time.Duration) {
	if interval <= 0 {
		return
	}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for {
			now := time.Now()
			next := now.Truncate(interval).Add(interval)
			t := time.NewTimer(next.Sub(now))
			select {
			case <-p.ctx.Done():
				t.Stop()
				return
			case end := <-t.C:
				p.sampleHistory(end.UnixNano()/int64(interval), end)
			}
		}
	}()
}
