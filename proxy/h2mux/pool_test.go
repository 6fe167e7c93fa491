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
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var closed atomic.Int64
	var wg sync.WaitGroup
	h2s := &http2.Server{}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				h2s.ServeConn(c, &http2.ServeConnOpts{Handler: h})
				c.Close()
				closed.Add(1)
			}()
		}
	}()
	defer func() { ln.Close(); wg.Wait() }()
	var cs Counters
	p := NewPool(&cs, time.Minute)
	defer p.CloseAll()
	dial := func() *http2.ClientConn {
		c, err := net.Dial("tcp", ln.Addr().String())
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
