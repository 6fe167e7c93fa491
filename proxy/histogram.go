package proxy

// Latency histograms: per frontend, backend and server, the distribution of
// the queue, connect, response and total times of the requests (HAProxy's
// Tw, Tc, Tr and Ta; Tt in tcp mode), beside HAProxy's averages.
//
// A Histogram is log-linear, as HdrHistogram: values are microseconds; the
// values below 8 µs have a bucket each, and every power of two above is
// split into 8 buckets of equal width. A bucket is thus at most 1/8 of its
// lower bound wide, and a percentile read at a bucket's middle is within
// 6.25% of the true value (histErrorBound). Values of 2^32 µs (71 minutes)
// and more share the last bucket.
//
// Recording is lock-free: one atomic load of the bucket array, two atomic
// adds, no allocation once the array exists. The array (240 counters and
// the sum, 1.9 KiB) is allocated at the first value recorded, so the
// servers that never see traffic cost one pointer per histogram.

import (
	"math"
	"math/bits"
	"sync/atomic"
	"time"
)

const (
	histSubBits = 3 // 2^3 = 8 buckets per power of two
	histSub     = 1 << histSubBits
	histMaxExp  = 32 // values of 2^32 µs and more go to the last bucket
	// HistBuckets is the number of buckets of a Histogram.
	HistBuckets = (histMaxExp - histSubBits + 1) * histSub
)

// histErrorBound is the largest relative error of a value read from a
// histogram at its bucket's middle: half a bucket's width over its lower
// bound.
const histErrorBound = 1.0 / (2 * histSub)

// histData is a histogram's storage: a count per bucket and the sum of the
// values recorded, in µs.
type histData struct {
	counts [HistBuckets]atomic.Uint64
	sum    atomic.Int64
}

// Histogram is a lock-free log-linear histogram of durations (see the file
// comment). The zero value is empty and ready to use.
type Histogram struct {
	d atomic.Pointer[histData]
}

// histIndex returns the bucket of a value in µs.
func histIndex(us uint64) int {
	if us < histSub {
		return int(us)
	}
	e := bits.Len64(us) - 1 // us is in [2^e, 2^(e+1))
	if e >= histMaxExp {
		return HistBuckets - 1
	}
	shift := e - histSubBits
	return (e-histSubBits+1)<<histSubBits + int(us>>shift) - histSub
}

// HistBucketBounds returns bucket i's bounds in µs: [lo, hi).
func HistBucketBounds(i int) (lo, hi uint64) {
	if i < 2*histSub {
		return uint64(i), uint64(i) + 1
	}
	g, sub := i>>histSubBits, uint64(i&(histSub-1))
	shift := g - 1
	return (histSub + sub) << shift, (histSub + sub + 1) << shift
}

// Record adds one duration. Negative durations (a phase not reached) are
// not recorded. Safe for concurrent use; it does not allocate once the
// histogram has its storage.
func (h *Histogram) Record(d time.Duration) {
	if d < 0 {
		return
	}
	us := uint64(d / time.Microsecond)
	hd := h.d.Load()
	if hd == nil {
		hd = h.storage()
	}
	hd.counts[histIndex(us)].Add(1)
	hd.sum.Add(int64(us))
}

// RecordMs adds one duration given in milliseconds (the access log's
// unit), -1 meaning not reached.
func (h *Histogram) RecordMs(ms int64) {
	if ms >= 0 {
		h.Record(time.Duration(ms) * time.Millisecond)
	}
}

// storage returns h's storage, allocating it if needed: concurrent first
// calls agree on one array.
func (h *Histogram) storage() *histData {
	if hd := h.d.Load(); hd != nil {
		return hd
	}
	h.d.CompareAndSwap(nil, new(histData))
	return h.d.Load()
}

// share makes h record into from's storage (a reload: the histograms of an
// object that keeps its name continue, and the requests still finishing on
// the old configuration count in the same one). h must not have recorded
// anything yet.
func (h *Histogram) share(from *Histogram) {
	h.d.Store(from.storage())
}

// Empty reports whether nothing was ever recorded.
func (h *Histogram) Empty() bool { return h.d.Load() == nil }

// Counts copies the bucket counts into dst (which must hold HistBuckets)
// and returns the total count and the sum in µs. An empty histogram gives
// zeros.
func (h *Histogram) Counts(dst []uint64) (count uint64, sumUs int64) {
	hd := h.d.Load()
	if hd == nil {
		clear(dst[:HistBuckets])
		return 0, 0
	}
	for i := range hd.counts {
		c := hd.counts[i].Load()
		dst[i] = c
		count += c
	}
	return count, hd.sum.Load()
}

// HistSummary is a histogram read at one instant: the count, the sum and
// the usual percentiles, in µs (0 when empty).
type HistSummary struct {
	Count               uint64
	SumUs               int64
	P50, P90, P99, P999 int64
	MaxUs               int64 // upper bound of the highest non-empty bucket
}

// Summary reads h: its count, sum and p50/p90/p99/p99.9.
func (h *Histogram) Summary() HistSummary {
	var buf [HistBuckets]uint64
	n, sum := h.Counts(buf[:])
	return summarize(buf[:], n, sum)
}

// summarize computes a summary of bucket counts totalling n.
func summarize(counts []uint64, n uint64, sum int64) HistSummary {
	s := HistSummary{Count: n, SumUs: sum}
	if n == 0 {
		return s
	}
	s.P50 = percentileOf(counts, n, 0.50)
	s.P90 = percentileOf(counts, n, 0.90)
	s.P99 = percentileOf(counts, n, 0.99)
	s.P999 = percentileOf(counts, n, 0.999)
	for i := len(counts) - 1; i >= 0; i-- {
		if counts[i] > 0 {
			_, hi := HistBucketBounds(i)
			s.MaxUs = int64(hi)
			break
		}
	}
	return s
}

// percentileOf returns the value at quantile q (0 < q <= 1) of bucket
// counts totalling n, in µs: the middle of the bucket holding the
// ceil(q*n)-th value (below 16 µs, where a bucket holds one value, that
// value).
func percentileOf(counts []uint64, n uint64, q float64) int64 {
	rank := uint64(math.Ceil(q * float64(n)))
	if rank < 1 {
		rank = 1
	}
	var seen uint64
	for i, c := range counts {
		seen += c
		if seen >= rank {
			lo, hi := HistBucketBounds(i)
			if hi-lo == 1 {
				return int64(lo)
			}
			return int64(lo + (hi-lo)/2)
		}
	}
	lo, _ := HistBucketBounds(len(counts) - 1)
	return int64(lo)
}

// Timing kinds: the phases of a request a histogram covers.
const (
	TimingQueue    = iota // Tw: waiting for a server slot
	TimingConnect         // Tc: connecting to the server
	TimingResponse        // Tr: from the request sent to the response head received
	TimingTotal           // Ta (http) or Tt (tcp): the whole request or session
	NumTimings
)

// TimingNames are the timing kinds' names, in order, as `show histogram`
// and the metrics name them.
var TimingNames = [NumTimings]string{"queue", "connect", "response", "total"}

// Timings are one object's latency histograms, by timing kind.
type Timings [NumTimings]Histogram

// share makes t record into from's histograms (see Histogram.share).
func (t *Timings) share(from *Timings) {
	for i := range t {
		t[i].share(&from[i])
	}
}
