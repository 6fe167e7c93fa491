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

// BenchmarkGet is lookup-or-create then release, on existing keys.
func BenchmarkGet(b *testing.B) {
	for _, n := range sizes {
		tb, keys := benchTable(b, n)
		b.Run(fmt.Sprintf("%d/single", n), func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				tb.Release(tb.Get(keys[i%n]))
			}
		})
		b.Run(fmt.Sprintf("%d/parallel", n), func(b *testing.B) {
			b.ReportAllocs()
			var seq atomic.Int64
			b.RunParallel(func(pb *testing.PB) {
				i := int(seq.Add(1)) * 7919
				for pb.Next() {
					tb.Release(tb.Get(keys[i%n]))
					i++
				}
			})
		})
	}
}

// BenchmarkTouch re-arms an entry's expiry.
func BenchmarkTouch(b *testing.B) {
	for _, n := range sizes {
		tb, keys := benchTable(b, n)
		es := make([]*Entry, n)
		for i, k := range keys {
			es[i] = tb.Lookup(k)
		}
		b.Run(fmt.Sprintf("%d/single", n), func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				tb.Touch(es[i%n])
			}
		})
		b.Run(fmt.Sprintf("%d/parallel", n), func(b *testing.B) {
			b.ReportAllocs()
			var seq atomic.Int64
			b.RunParallel(func(pb *testing.PB) {
				i := int(seq.Add(1)) * 7919
				for pb.Next() {
					tb.Touch(es[i%n])
					i++
				}
			})
		})
	}
}

// BenchmarkRate counts a request in http_req_rate.
func BenchmarkRate(b *testing.B) {
	for _, n := range sizes {
		tb, keys := benchTable(b, n)
		es := make([]*Entry, n)
		for i, k := range keys {
			es[i] = tb.Lookup(k)
		}
		b.Run(fmt.Sprintf("%d/single", n), func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				tb.Update(es[i%n], HTTPReqRate)
			}
		})
		b.Run(fmt.Sprintf("%d/parallel", n), func(b *testing.B) {
			b.ReportAllocs()
			var seq atomic.Int64
			b.RunParallel(func(pb *testing.PB) {
				i := int(seq.Add(1)) * 7919
				for pb.Next() {
					tb.Update(es[i%n], HTTPReqRate)
					i++
				}
			})
		})
	}
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
