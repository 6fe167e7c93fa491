package memtrim

import (
	"context"
	"runtime"
	"runtime/metrics"
	"testing"
	"time"
)

// The policy trims once the process has been quiet (no collection) for
// Quiet after one ran, with a heap worth it, at most every MinInterval,
// and not again until a collection says the process allocated.
func TestObserve(t *testing.T) {
	tr := Trimmer{Policy: Policy{Quiet: 5 * time.Second, MinHeap: 16 << 20, MinInterval: 30 * time.Second}}
	t0 := time.Unix(1000, 0)
	big := func(cycles uint64) Sample { return Sample{Cycles: cycles, Objects: 40 << 20, Free: 5 << 20} }
	small := Sample{Cycles: 9, Objects: 10 << 20, Free: 5 << 20} // 15 MiB
	type step struct {
		at     time.Duration
		s      Sample
		want   bool
		cycles uint64 // when trimming: the count after the trim
	}
	steps := []step{
		{0, big(7), false, 0},                // first sample
		{4 * time.Second, big(7), false, 0},  // not quiet long enough
		{5 * time.Second, big(7), true, 8},   // quiet 5 s, 45 MiB: trim (one collection)
		{6 * time.Second, big(8), false, 0},  // the trim's own collection
		{20 * time.Second, big(8), false, 0}, // nothing new since
		{21 * time.Second, big(9), false, 0}, // the process allocated
		{27 * time.Second, big(9), false, 0}, // quiet 6 s, but 22 s after the trim
		{35 * time.Second, big(9), true, 10}, // 30 s after it
		{36 * time.Second, small, false, 0},  // allocated again
		{45 * time.Second, small, false, 0},  // quiet, 15 MiB: too small
	}
	for i, st := range steps {
		got := tr.Observe(t0.Add(st.at), st.s)
		if got != st.want {
			t.Errorf("step %d (%v): trim %v, want %v", i, st.at, got, st.want)
		}
		if got {
			tr.Trimmed(t0.Add(st.at), st.cycles)
		}
	}
}

// The heap a burst left goes back to the system once the process is
// quiet: Run collects it and releases the free pages.
func TestRunReleases(t *testing.T) {
	released := func() uint64 {
		s := []metrics.Sample{{Name: "/memory/classes/heap/released:bytes"}}
		metrics.Read(s)
		return s[0].Value.Uint64()
	}
	// The burst: 64 MiB live in 16 KiB objects through a collection (as
	// connections holding their buffers), then dropped.
	sink := make([][]byte, 4096)
	for i := range sink {
		sink[i] = make([]byte, 16<<10)
	}
	runtime.GC()
	runtime.KeepAlive(sink)
	sink = nil
	before := released()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	type trim struct{ before, after uint64 }
	done := make(chan trim, 1)
	tr := &Trimmer{Policy: Policy{Quiet: 100 * time.Millisecond, MinHeap: 16 << 20, MinInterval: time.Hour}}
	go Run(ctx, tr, 20*time.Millisecond, func(b, a uint64) {
		select {
		case done <- trim{b, a}:
		default:
		}
	})
	select {
	case tm := <-done:
		if tm.before < 64<<20 || tm.after > tm.before-48<<20 {
			t.Errorf("heap %d -> %d bytes, want at least 64 MiB before and 48 MiB less after", tm.before, tm.after)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("no trim within 20 s")
	}
	cancel()
	if after := released(); after < before+48<<20 {
		t.Errorf("released %d -> %d bytes, want 48 MiB more", before, after)
	}
}
