package stick

import (
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"time"
)

// benchTable returns a table of n ip entries storing server_id and
// http_req_rate(10s), and their keys.
func benchTable(b testing.TB, n int) (*Table, []Key) {
	tb := New(Config{Name: "b", Type: KeyIP, Size: n, Expire: 30 * time.Minute,
		Store: mustStore(b, "server_id", "http_req_rate(10s)")})
	keys := make([]Key, n)
	for i := range keys {
		keys[i] = Key{lo: uint64(0x0a000000 + i)}
		e := tb.Get(keys[i])
		tb.SetServer(e, 1+i%3, "")
		tb.Release(e)
	}
	return tb, keys
}

var sizes = []int{1000, 1000000}

// runSizes runs op(tb, i) for each table size, on one goroutine
// ("N/single") and on all of them ("N/parallel", each starting at its own
// place in the keys). setup builds the per-size state op uses.
func runSizes[T any](b *testing.B, setup func(tb *Table, keys []Key) T, op func(tb *Table, st T, i int)) {
	for _, n := range sizes {
		tb, keys := benchTable(b, n)
		st := setup(tb, keys)
		b.Run(fmt.Sprintf("%d/single", n), func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				op(tb, st, i%n)
			}
		})
		b.Run(fmt.Sprintf("%d/parallel", n), func(b *testing.B) {
			b.ReportAllocs()
			var seq atomic.Int64
			b.RunParallel(func(pb *testing.PB) {
				i := int(seq.Add(1)) * 7919
				for pb.Next() {
					op(tb, st, i%n)
					i++
				}
			})
		})
	}
}

// entries looks up every key once.
func entries(tb *Table, keys []Key) []*Entry {
	es := make([]*Entry, len(keys))
	for i, k := range keys {
		es[i] = tb.Lookup(k)
	}
	return es
}

// BenchmarkGet is lookup-or-create then release, on existing keys.
func BenchmarkGet(b *testing.B) {
	runSizes(b, func(_ *Table, keys []Key) []Key { return keys },
		func(tb *Table, keys []Key, i int) { tb.Release(tb.Get(keys[i])) })
}

// BenchmarkTouch re-arms an entry's expiry.
func BenchmarkTouch(b *testing.B) {
	runSizes(b, entries, func(tb *Table, es []*Entry, i int) { tb.Touch(es[i]) })
}

// BenchmarkRate counts a request in http_req_rate.
func BenchmarkRate(b *testing.B) {
	runSizes(b, entries, func(tb *Table, es []*Entry, i int) { tb.Update(es[i], HTTPReqRate) })
}

// TestMemoryPerEntry checks the million-entry budget: ip keys with
// server_id and http_req_rate must take under 300 MB.
func TestMemoryPerEntry(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a million entries")
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	tb, _ := benchTable(t, 1000000)
	runtime.GC()
	runtime.ReadMemStats(&after)
	used := after.HeapAlloc - before.HeapAlloc
	t.Logf("1,000,000 entries: %d MB, %d bytes/entry", used>>20, used/1000000)
	if used > 300<<20 {
		t.Fatalf("%d MB for a million entries, budget 300 MB", used>>20)
	}
	runtime.KeepAlive(tb)
}

// BenchmarkRateShared is BenchmarkRate on a table shared with peers, with
// a replication layer draining its pending changes every millisecond: the
// request path's cost of replication.
func BenchmarkRateShared(b *testing.B) {
	runSizes(b, func(tb *Table, keys []Key) []*Entry {
		tb.SetShared(true)
		stop := make(chan struct{})
		done := make(chan struct{})
		go func() {
			defer close(done)
			tick := time.NewTicker(time.Millisecond)
			defer tick.Stop()
			for {
				select {
				case <-stop:
					return
				case <-tick.C:
					tb.DrainUpdates(func(*Entry) {})
				}
			}
		}()
		b.Cleanup(func() { close(stop); <-done })
		return entries(tb, keys)
	}, func(tb *Table, es []*Entry, i int) { tb.Update(es[i], HTTPReqRate) })
}
