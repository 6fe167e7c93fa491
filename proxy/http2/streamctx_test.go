package http2

import (
	"context"
	"net"
	"testing"
	"time"
)

// TestStreamCtx: a stream's context is a context.Context as the context
// package's: Done (made before or after the cancellation) closes, Err
// says Canceled, AfterFunc's functions run once or are stopped, a
// context derived from it is cancelled with it, and a watched cutter
// closes its connection unless the watch ended first.
func TestStreamCtx(t *testing.T) {
	es := &estream{}
	ctx := context.Context(es.ctx())
	early := ctx.Done()
	if ctx.Err() != nil {
		t.Fatalf("Err %v before the cancellation", ctx.Err())
	}
	select {
	case <-early:
		t.Fatal("Done closed before the cancellation")
	default:
	}
	ran := make(chan string, 3)
	context.AfterFunc(ctx, func() { ran <- "kept" })
	stop := context.AfterFunc(ctx, func() { ran <- "stopped" })
	if !stop() || stop() {
		t.Fatal("stop: want true once, then false")
	}
	derived, cancelDerived := context.WithTimeout(ctx, time.Minute)
	defer cancelDerived()
	keptConn, cutConn := net.Pipe()
	defer keptConn.Close()
	unwatched := &cutter{c: keptConn}
	es.ctx().watchCut(unwatched)
	es.ctx().watchCut(nil)
	watched := &cutter{c: cutConn}
	es.ctx().watchCut(watched)

	es.cancel()
	es.cancel()
	<-early
	<-ctx.Done()
	<-derived.Done()
	if ctx.Err() != context.Canceled || derived.Err() != context.Canceled {
		t.Fatalf("Err %v, derived %v: want Canceled", ctx.Err(), derived.Err())
	}
	if got := <-ran; got != "kept" {
		t.Fatalf("AfterFunc ran %q", got)
	}
	testutilWait(t, "the watched connection cut", func() bool { return wasCut(watched) })
	if wasCut(unwatched) {
		t.Error("a cutter no longer watched was cut")
	}
	// After the cancellation: AfterFunc and watchCut act at once.
	context.AfterFunc(ctx, func() { ran <- "late" })
	if got := <-ran; got != "late" {
		t.Fatalf("AfterFunc ran %q", got)
	}
	select {
	case got := <-ran:
		t.Fatalf("AfterFunc ran %q as well", got)
	default:
	}
	late := &cutter{c: keptConn}
	es.ctx().watchCut(late)
	testutilWait(t, "the late watch cut", func() bool { return wasCut(late) })
}

func wasCut(c *cutter) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.wasCut
}
