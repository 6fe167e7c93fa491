package proxy

import (
	"math/rand/v2"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/fulcrum-proxy/fulcrum/conf"
	"github.com/fulcrum-proxy/fulcrum/proxy/stream"
)

// TestHistIndexBounds checks that every value lands in a bucket whose
// bounds hold it, that buckets tile the range without gaps, and that no
// bucket is wider than 1/8 of its lower bound (the error bound).
func TestHistIndexBounds(t *testing.T) {
	var prevHi uint64
	for i := range HistBuckets {
		lo, hi := HistBucketBounds(i)
		if lo != prevHi {
			t.Fatalf("bucket %d starts at %d, want %d (the previous bucket's end)", i, lo, prevHi)
		}
		if hi <= lo {
			t.Fatalf("bucket %d: empty bounds [%d, %d)", i, lo, hi)
		}
		if lo >= 16 && float64(hi-lo)/float64(lo) > 1.0/8 {
			t.Fatalf("bucket %d [%d, %d) is wider than 1/8 of its lower bound", i, lo, hi)
		}
		for _, v := range []uint64{lo, hi - 1, lo + (hi-lo)/2} {
			if got := histIndex(v); got != i {
				t.Fatalf("value %d: got bucket %d, want %d [%d, %d)", v, got, i, lo, hi)
			}
		}
		prevHi = hi
	}
	if prevHi != 1<<32 {
		t.Errorf("the last bucket ends at %d, want 2^32", prevHi)
	}
	for _, v := range []uint64{1 << 32, 1<<40 + 5, 1<<64 - 1} {
		if got := histIndex(v); got != HistBuckets-1 {
			t.Errorf("value %d: got bucket %d, want the last one", v, got)
		}
	}
}

// TestHistogramPercentiles records a known distribution and checks each
// percentile against the exact one, within the error bound.
func TestHistogramPercentiles(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, tc := range []struct {
		name string
		gen  func() time.Duration
	}{
		{"uniform 0-100ms", func() time.Duration { return time.Duration(r.Int64N(int64(100 * time.Millisecond))) }},
		{"exponential mean 2ms", func() time.Duration { return time.Duration(r.ExpFloat64() * float64(2*time.Millisecond)) }},
		{"three servers 10/50/200ms", func() time.Duration {
			return []time.Duration{10, 50, 200}[r.IntN(3)]*time.Millisecond + time.Duration(r.Int64N(int64(time.Millisecond)))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var h Histogram
			vals := make([]int64, 100000)
			var sum int64
			for i := range vals {
				d := tc.gen()
				h.Record(d)
				vals[i] = d.Microseconds()
				sum += vals[i]
			}
			sort.Slice(vals, func(i, j int) bool { return vals[i] < vals[j] })
			s := h.Summary()
			if s.Count != uint64(len(vals)) || s.SumUs != sum {
				t.Fatalf("count/sum: got %d/%d, want %d/%d", s.Count, s.SumUs, len(vals), sum)
			}
			for _, p := range []struct {
				q   float64
				got int64
			}{{0.5, s.P50}, {0.9, s.P90}, {0.99, s.P99}, {0.999, s.P999}} {
				want := vals[int(p.q*float64(len(vals)))-1]
				if d := float64(p.got-want) / float64(max(want, 1)); d > histErrorBound+0.001 || d < -histErrorBound-0.001 {
					t.Errorf("p%v: got %dµs, want %dµs ± %.2f%%", p.q*100, p.got, want, histErrorBound*100)
				}
			}
		})
	}
}

// TestHistogramEmptyAndNegative: nothing recorded gives zeros; a negative
// duration (a phase not reached) is not recorded.
func TestHistogramEmptyAndNegative(t *testing.T) {
	var h Histogram
	h.Record(-time.Millisecond)
	h.RecordMs(-1)
	if !h.Empty() {
		t.Fatal("a negative duration allocated the histogram")
	}
	if s := h.Summary(); s != (HistSummary{}) {
		t.Errorf("empty summary: got %+v", s)
	}
	h.RecordMs(0)
	if s := h.Summary(); s.Count != 1 || s.P99 != 0 {
		t.Errorf("one zero: got %+v", s)
	}
}

// TestHistogramConcurrent records from several goroutines (first use
// included) and checks that no value is lost.
func TestHistogramConcurrent(t *testing.T) {
	var h Histogram
	var wg sync.WaitGroup
	const workers, each = 8, 5000
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				h.Record(time.Duration(w*each+i) * time.Microsecond)
			}
		}()
	}
	wg.Wait()
	if s := h.Summary(); s.Count != workers*each {
		t.Errorf("count: got %d, want %d", s.Count, workers*each)
	}
}

// TestHistogramShare: after a reload the new object's histogram records
// into the old one's storage.
func TestHistogramShare(t *testing.T) {
	var old, nu Timings
	old[TimingResponse].Record(time.Millisecond)
	nu.share(&old)
	nu[TimingResponse].Record(2 * time.Millisecond)
	old[TimingResponse].Record(3 * time.Millisecond) // a request finishing on the old proxy
	nu[TimingQueue].Record(0)
	if got := nu[TimingResponse].Summary().Count; got != 3 {
		t.Errorf("shared response histogram: got %d values, want 3", got)
	}
	if got := old[TimingQueue].Summary().Count; got != 1 {
		t.Errorf("queue histogram allocated after the share: got %d values in the old one, want 1", got)
	}
}

// BenchmarkHistogramRecord is the cost of one sample on the request path
// (the budget: < 50 ns, no allocation).
func BenchmarkHistogramRecord(b *testing.B) {
	var h Histogram
	h.Record(0)
	d := 1234 * time.Microsecond
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		h.Record(d + time.Duration(i&1023)*time.Microsecond)
	}
}

// BenchmarkHistogramRecordParallel is Record from every CPU at once on one
// histogram (one backend's, under load).
func BenchmarkHistogramRecordParallel(b *testing.B) {
	var h Histogram
	h.Record(0)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			h.Record(time.Duration(i&4095) * 10 * time.Microsecond)
			i++
		}
	})
}

// BenchmarkHistogramSummary is the cost of reading the percentiles of one
// histogram (once per object per page, scrape or show stat).
func BenchmarkHistogramSummary(b *testing.B) {
	var h Histogram
	for i := range 10000 {
		h.Record(time.Duration(i) * 37 * time.Microsecond)
	}
	b.ReportAllocs()
	for b.Loop() {
		h.Summary()
	}
}

// BenchmarkRequestAccounting is what the access log and the histograms
// add to a request when nothing is logged (the bench configuration's
// log_level error): the queue and response hooks, and closeLog's records
// into the frontend's, backend's and server's histograms.
func BenchmarkRequestAccounting(b *testing.B) {
	p, err := New(testConfig(conf.ModeHTTP, []string{"127.0.0.1:1"}, nil), nopLogger())
	if err != nil {
		b.Fatal(err)
	}
	var x Stream
	x.fe, x.be, x.srv = p.Frontends[0], p.Backends[0], p.Backends[0].Servers()[0]
	x.inBackend, x.assigned = true, true
	b.ReportAllocs()
	for b.Loop() {
		x.lg.reset()
		x.t0 = time.Now()
		x.lg.logQueue(x.be, nil)
		x.lg.logQueued(-1)
		x.lg.c = 1
		x.lg.logResponse(300 * time.Microsecond)
		x.closeLog(stream.Served, 0)
	}
}
