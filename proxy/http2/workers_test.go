package http2

import (
	"io"
	"net/http"
	"testing"
	"time"

	xh2 "golang.org/x/net/http2"
)

// oneConn returns the engine's only connection, once it is served.
func oneConn(t *testing.T, e *engineServer) *econn {
	t.Helper()
	var c *econn
	testutilWait(t, "the connection", func() bool {
		e.srv.mu.Lock()
		defer e.srv.mu.Unlock()
		for c = range e.srv.conns {
		}
		return c != nil
	})
	return c
}

// waiting returns how many of c's workers wait for a stream.
func waiting(c *econn) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.idleW)
}

// TestEngineWorkers: streams one after the other run on one worker (it
// waits for the next stream instead of exiting); after 20 streams at
// once, maxIdleWorkers of their workers wait and the others exited; a
// worker that waited workerIdle for nothing exits.
func TestEngineWorkers(t *testing.T) {
	gate := make(chan struct{})
	started := make(chan struct{}, 20)
	e := startEngine(t, 0, 0, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/wait" {
			started <- struct{}{}
			<-gate
		}
		io.WriteString(w, "ok")
	}))
	rc := dial(t, e.addr)
	rc.handshake()
	c := oneConn(t, e)
	id := uint32(1)
	for range 5 {
		rc.request(id, "GET", "/", true)
		rc.whole(id, 2)
		id += 2
		// The worker is back among those waiting before the next stream.
		testutilWait(t, "the worker waiting", func() bool { return waiting(c) == 1 })
	}
	first := id
	for range 20 {
		rc.request(id, "GET", "/wait", true)
		id += 2
	}
	for range 20 {
		<-started
	}
	if n := waiting(c); n != 0 {
		t.Fatalf("%d workers waiting while 20 streams run, want 0", n)
	}
	close(gate)
	ended := map[uint32]bool{}
	for len(ended) < 20 {
		var sid uint32
		switch f := rc.next().(type) {
		case *xh2.HeadersFrame:
			if f.StreamEnded() {
				sid = f.StreamID
			}
		case *xh2.DataFrame:
			if f.StreamEnded() {
				sid = f.StreamID
			}
		}
		if sid == 0 {
			continue
		}
		if sid < first || sid >= id || ended[sid] {
			t.Fatalf("stream %d ended, want each of %d..%d once", sid, first, id-2)
		}
		ended[sid] = true
	}
	testutilWait(t, "the workers done", func() bool { return waiting(c) == maxIdleWorkers })
	if n := waiting(c); n != maxIdleWorkers {
		t.Fatalf("%d workers waiting, want %d", n, maxIdleWorkers)
	}

	e2 := startEngine(t, 0, 0, sizedHandler)
	e2.srv.mu.Lock()
	e2.srv.workerIdle = 50 * time.Millisecond
	e2.srv.mu.Unlock()
	rc2 := dial(t, e2.addr)
	rc2.handshake()
	rc2.request(1, "GET", "/3", true)
	rc2.whole(1, 3)
	c2 := oneConn(t, e2)
	testutilWait(t, "the idle worker gone", func() bool { return waiting(c2) == 0 })
	rc2.request(3, "GET", "/4", true)
	rc2.whole(3, 4)
}

// TestExpireWorkers: the idle timer ends the workers that waited
// workerIdle or longer, the longest waiting first, keeps the others in
// their order and re-arms itself for them; on a closed connection it
// ends none (stopWorkers does).
func TestExpireWorkers(t *testing.T) {
	c := &econn{workerIdle: time.Minute}
	now := time.Now()
	var ws []*streamWorker
	for _, ago := range []time.Duration{3 * time.Minute, 2 * time.Minute, time.Minute, time.Second, 0} {
		w := &streamWorker{ch: make(chan *estream, 1), since: now.Add(-ago)}
		ws = append(ws, w)
		c.idleW = append(c.idleW, w)
	}
	c.expireWorkers()
	defer func() {
		c.mu.Lock()
		c.closed = true
		c.stopWorkers()
		c.mu.Unlock()
	}()
	for i, w := range ws {
		var ended bool
		select {
		case es := <-w.ch:
			if es != nil {
				t.Fatalf("worker %d was handed a stream", i)
			}
			ended = true
		default:
		}
		if want := i < 3; ended != want {
			t.Errorf("worker %d (waiting since %v) ended %v, want %v", i, now.Sub(w.since), ended, want)
		}
	}
	c.mu.Lock()
	left, armed := append([]*streamWorker(nil), c.idleW...), c.idleArmed
	c.mu.Unlock()
	if len(left) != 2 || left[0] != ws[3] || left[1] != ws[4] || !armed {
		t.Fatalf("after expiry: %d waiting (want workers 3 and 4, in order), timer armed %v", len(left), armed)
	}

	c.mu.Lock()
	c.closed = true
	c.idleW[0].since = now.Add(-time.Hour)
	c.mu.Unlock()
	c.expireWorkers()
	select {
	case <-ws[3].ch:
		t.Fatal("a worker of a closed connection was ended by the idle timer")
	default:
	}
}
