package linequeue

import (
	"fmt"
	"sync"
	"testing"
)

// TestFullDrops: a full queue drops and counts, never waits; the lines
// it took come out in order, then Take reports the end after Close.
func TestFullDrops(t *testing.T) {
	q := New(3)
	for i := range 5 {
		bp := q.Buffer()
		*bp = fmt.Appendf(*bp, "line %d", i)
		if got, want := q.Push(bp), i < 3; got != want {
			t.Errorf("Push %d = %v, want %v", i, got, want)
		}
	}
	if q.Dropped() != 2 {
		t.Errorf("Dropped = %d, want 2", q.Dropped())
	}
	q.Close()
	q.Close() // no-op
	if bp := q.Buffer(); q.Push(bp) || q.Dropped() != 3 {
		t.Errorf("Push after Close: taken or not counted (dropped %d)", q.Dropped())
	}
	for i := range 3 {
		bp, ok := q.Take()
		if !ok || string(*bp) != fmt.Sprintf("line %d", i) {
			t.Fatalf("Take %d = %q, %v", i, *bp, ok)
		}
		q.Release(bp)
	}
	if _, ok := q.Take(); ok || !q.Closed() {
		t.Error("Take after the last line of a closed queue: ok")
	}
}

// TestConcurrent: every line pushed is either taken or counted as
// dropped, with Close racing the pushers (run under -race).
func TestConcurrent(t *testing.T) {
	q := New(64)
	var taken int64
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			bp, ok := q.Take()
			if !ok {
				return
			}
			taken++
			q.Release(bp)
		}
	}()
	var wg sync.WaitGroup
	var pushed [8]int64
	for g := range pushed {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 2000 {
				bp := q.Buffer()
				*bp = append(*bp, byte(i))
				q.Push(bp)
				pushed[g]++
				if g == 0 && i == 1000 {
					q.Close()
				}
			}
		}()
	}
	wg.Wait()
	<-done
	var total int64
	for _, n := range pushed {
		total += n
	}
	if taken+q.Dropped() != total {
		t.Errorf("taken %d + dropped %d != pushed %d", taken, q.Dropped(), total)
	}
}
