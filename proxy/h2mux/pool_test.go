package h2mux

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/http2"

	"github.com/fulcrum-proxy/fulcrum/internal/testutil"
)

// TestPoolCloseIdleReserved: a connection CloseIdle drains while a stream
// is reserved on it but not yet sent is not sent GOAWAY before that
// stream started (x/net/http2 would refuse it): the request is served
// whole, then the connection closes; an idle connection closes at once.
func TestPoolCloseIdleReserved(t *testing.T) {
	addr, _, closed := startH2Server(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }))
	var cs Counters
	p := NewPool(&cs, time.Minute)
	defer p.CloseAll()
	dial := func() *http2.ClientConn {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		cc, err := p.Add("", c) // one stream reserved
		if err != nil {
			t.Fatal(err)
		}
		return cc
	}
	do := func(cc *http2.ClientConn) (string, error) {
		call := NewCall(context.Background(), 0).Pooled(p)
		defer call.Close()
		req := &http.Request{Method: "GET", URL: &url.URL{Scheme: "http", Host: "s", Path: "/"}, Header: http.Header{}, Host: "s"}
		if _, err := call.RoundTrip(cc, req); err != nil {
			return "", err
		}
		b, err := io.ReadAll(call)
		return string(b), err
	}
	idle := dial()
	if got, err := do(idle); got != "ok" || err != nil {
		t.Fatalf("first request: %q, %v", got, err)
	}
	reserved := dial()
	p.CloseIdle()
	testutil.WaitFor(t, 5*time.Second, "the idle connection closed", func() bool { return closed.Load() >= 1 })
	if got, err := do(reserved); got != "ok" || err != nil {
		t.Errorf("the reserved stream on the draining connection: got %q, %v; want \"ok\"", got, err)
	}
	testutil.WaitFor(t, 5*time.Second, "the drained connection closed after its stream", func() bool { return closed.Load() == 2 })
	if n := p.Len(); n != 0 {
		t.Errorf("pool: %d connections left, want 0", n)
	}
}

// startH2Server serves HTTP/2 (prior knowledge) on a loopback listener
// with h, counting the connections accepted and those it closed; it stops
// at the end of t.
func startH2Server(t *testing.T, h http.Handler) (addr string, accepted, closed *atomic.Int64) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	accepted, closed = new(atomic.Int64), new(atomic.Int64)
	var wg sync.WaitGroup
	h2s := &http2.Server{}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			wg.Add(1)
			go func() {
				defer wg.Done()
				h2s.ServeConn(c, &http2.ServeConnOpts{Handler: h})
				c.Close()
				closed.Add(1)
			}()
		}
	}()
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	return ln.Addr().String(), accepted, closed
}

// TestPoolReserveOrDial: requests that find no free stream while a dial
// is under way wait for it and share the connection it made (one dial
// for all); when the dial fails they are told to dial on their own at
// once, and a wait is bounded.
func TestPoolReserveOrDial(t *testing.T) {
	addr, accepted, _ := startH2Server(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	var cs Counters
	p := NewPool(&cs, time.Minute)
	defer p.CloseAll()
	ctx := context.Background()

	// A failed dial: the waiter is sent to dial on its own.
	cc, d := p.ReserveOrDial(ctx, "", true, time.Minute)
	if cc != nil || d == nil {
		t.Fatalf("first request: got %v, %v; want a dial to make", cc, d)
	}
	got := make(chan *Dial)
	go func() {
		cc, d := p.ReserveOrDial(ctx, "", true, time.Minute)
		if cc != nil {
			t.Error("a reservation on no connection")
		}
		got <- d
	}()
	testutil.WaitFor(t, 5*time.Second, "a request waiting for the dial", func() bool { return p.waiting.Load() == 1 })
	d.Done(nil)
	if d2 := <-got; d2 != nil {
		t.Errorf("after a failed dial: got a dial registered, want nil (dial on its own)")
	}
	// A bounded wait: nobody ends this dial.
	if _, d = p.ReserveOrDial(ctx, "", true, time.Minute); d == nil {
		t.Fatal("no dial to make after the failed one")
	}
	if cc, d2 := p.ReserveOrDial(ctx, "", true, 10*time.Millisecond); cc != nil || d2 != nil {
		t.Errorf("after the wait: got %v, %v; want nil, nil", cc, d2)
	}
	// The dial succeeds: 20 requests waiting for it share its connection.
	const n = 20
	results := make(chan *http2.ClientConn, n)
	for range n {
		go func() {
			cc, d := p.ReserveOrDial(ctx, "", true, time.Minute)
			if d != nil {
				d.Done(nil)
			}
			results <- cc
		}()
	}
	testutil.WaitFor(t, 5*time.Second, "20 requests waiting for the dial", func() bool { return p.waiting.Load() == n })
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	cc, err = p.Add("", c)
	if err != nil {
		t.Fatal(err)
	}
	d.Done(cc)
	for range n {
		if got := <-results; got != cc {
			t.Errorf("a waiting request got %p, want the dialed connection %p", got, cc)
		}
	}
	if a := accepted.Load(); a != 1 {
		t.Errorf("connections dialed: %d, want 1", a)
	}
}
