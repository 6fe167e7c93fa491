package proxy

import (
	"context"
	"testing"
	"time"
)

// An idle worker takes the work handed over, and ends at the second trim
// tick that finds it idle (workerTrim), or when the proxy stops.
func TestWorkerNextTrim(t *testing.T) {
	if !workerTrim {
		t.Skip("FULCRUM_WORKER_TRIM=0")
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p := &Proxy{ctx: ctx, work: make(chan work)}
	p.trim.ctx = ctx
	type result struct {
		w  work
		ok bool
	}
	res := make(chan result, 1)
	var iw idleWait
	wait := func() {
		go func() {
			w, ok := p.next(&iw)
			res <- result{w, ok}
		}()
	}
	get := func(what string) result {
		t.Helper()
		select {
		case r := <-res:
			return r
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: next did not return", what)
		}
		return result{}
	}

	wait()
	cc := &clientConn{}
	p.work <- work{cc: cc}
	if r := get("work"); !r.ok || r.w.cc != cc {
		t.Fatalf("next: %+v, want the work handed over", r)
	}

	// Ticks until the worker ends: at least two (the one ending the period
	// it went idle in, then a whole period).
	first := p.trim.tick()
	wait()
	ticks := 0
	deadline := time.Now().Add(5 * time.Second)
	var r result
wait:
	for {
		p.trim.next()
		ticks++
		select {
		case r = <-res:
			break wait
		case <-time.After(time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatal("the worker did not end at the trim ticks")
		}
	}
	if r.ok || ticks < 2 {
		t.Fatalf("next: %+v after %d ticks, want the worker to end after 2 or more", r, ticks)
	}
	select {
	case <-first:
	default:
		t.Fatal("the first tick's channel is not closed")
	}

	wait()
	cancel()
	if r := get("stop"); r.ok {
		t.Fatalf("next: %+v after the stop, want the worker to end", r)
	}
}
