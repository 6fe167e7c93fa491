// Package memtrim gives memory back to the system once the process goes
// quiet after a burst.
//
// A burst of new connections grows the Go heap (each connection holds its
// buffers and a goroutine stack until it goes idle: proxy/http1's
// IdleKeep), and when the burst ends nothing allocates any more, so no
// garbage collection runs until the runtime's forced one, two minutes
// later, and the background scavenger then returns the freed pages
// slowly. Thousands of idle keep-alive connections then cost several
// times their live memory in RSS (bench/README.md, "Hibernation on the
// epoll layer"). HAProxy's pools have no such lag.
//
// A Trimmer watches the runtime's metrics once a second: when no
// collection has run for a while after one did (the process allocated,
// then stopped) and the heap is big enough to matter, it collects and
// returns the free pages at once (runtime.GC, then debug.FreeOSMemory:
// sync.Pools drop what they hold at the second collection), at most every
// MinInterval. Under load collections keep running, so it does not act
// there.
package memtrim

import (
	"context"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"time"
)

// Sample is what the policy reads of the runtime's memory, in bytes (and
// collection cycles).
type Sample struct {
	Cycles  uint64 // /gc/cycles/total:gc-cycles
	Objects uint64 // /memory/classes/heap/objects:bytes: live and garbage
	Free    uint64 // /memory/classes/heap/free:bytes: free, not returned
}

// Heap is the heap memory the process holds that a collection and a
// scavenge could shrink: its objects (live or not) and its free pages.
// How much of it is live is only known after a collection: the live size
// the runtime reports is the last collection's, taken during the burst.
func (s Sample) Heap() uint64 { return s.Objects + s.Free }

// Policy decides when to trim.
type Policy struct {
	// Quiet is how long no collection must have run (the process stopped
	// allocating) before trimming.
	Quiet time.Duration
	// MinHeap is the least heap (Sample.Heap) worth a trim, in bytes.
	MinHeap uint64
	// MinInterval is the least time between two trims: a process that
	// allocates a little now and then is trimmed at most this often.
	MinInterval time.Duration
}

// DefaultPolicy trims after 5 s without a collection, when the heap holds
// at least 4 MiB, at most every 30 s. 4 MiB: a burst of 1,000 HTTP/1
// connections served by the epoll layer's pollers leaves about 10 MiB
// (buffers in their pools), under the 16 MiB this was before; a trim
// happens once per quiet period (Observe), so a small live heap is not
// collected again and again.
func DefaultPolicy() Policy {
	return Policy{Quiet: 5 * time.Second, MinHeap: 4 << 20, MinInterval: 30 * time.Second}
}

// Trimmer applies a Policy to successive samples. The zero value with a
// Policy set is ready; it is used by one goroutine.
type Trimmer struct {
	Policy
	cycles   uint64
	since    time.Time // when cycles last changed (zero: no sample yet)
	done     bool      // trimmed since cycles last changed
	lastTrim time.Time
}

// Observe takes the sample s read at now and reports whether to trim
// (then call Trimmed): once the process has gone Quiet without a
// collection after one ran, with a heap of at least MinHeap, and
// MinInterval after the last trim.
func (t *Trimmer) Observe(now time.Time, s Sample) bool {
	if t.since.IsZero() || s.Cycles != t.cycles {
		t.cycles, t.since, t.done = s.Cycles, now, false
		return false
	}
	if t.done || now.Sub(t.since) < t.Quiet || s.Heap() < t.MinHeap {
		return false
	}
	return t.lastTrim.IsZero() || now.Sub(t.lastTrim) >= t.MinInterval
}

// Trimmed records a trim made at now, after which the runtime counted
// cycles collections (the trim's own included): until another one runs,
// there is nothing new to give back.
func (t *Trimmer) Trimmed(now time.Time, cycles uint64) {
	t.cycles, t.since, t.done, t.lastTrim = cycles, now, true, now
}

// Run samples the runtime every period (a second in fulcrum) until ctx
// ends, trimming as t's policy says; trimmed (may be nil) is called after
// each trim with the heap before and after it (Sample.Heap, bytes).
func Run(ctx context.Context, t *Trimmer, every time.Duration, trimmed func(before, after uint64)) {
	names := []metrics.Sample{
		{Name: "/gc/cycles/total:gc-cycles"},
		{Name: "/memory/classes/heap/objects:bytes"},
		{Name: "/memory/classes/heap/free:bytes"},
	}
	read := func() Sample {
		metrics.Read(names)
		return Sample{Cycles: value(names[0]), Objects: value(names[1]), Free: value(names[2])}
	}
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-tick.C:
			s := read()
			if !t.Observe(now, s) {
				continue
			}
			// Two collections: what sync.Pools held at the first is only
			// dropped at the second (their victim cache).
			runtime.GC()
			debug.FreeOSMemory()
			after := read()
			t.Trimmed(now, after.Cycles)
			if trimmed != nil {
				trimmed(s.Heap(), after.Heap())
			}
		}
	}
}

// value is a uint64 metric's value, 0 when the runtime does not have it.
func value(s metrics.Sample) uint64 {
	if s.Value.Kind() == metrics.KindUint64 {
		return s.Value.Uint64()
	}
	return 0
}
