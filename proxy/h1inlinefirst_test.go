package proxy

import (
	"io"
	"net/http"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/fulcrum-proxy/fulcrum/conf"
)

// A new connection's first request awaited on the epoll layer
// (http1.AwaitFirst): accepted, its session begun and its request awaited
// with no worker goroutine; the request then goes through the reaper's
// request phase as a keep-alive connection's next one does. Each test
// runs with the switch on and off (H1InlineFirstEnv=0) and asserts the
// same outcome for the client and the counters.

// firstModes runs f with the first request awaited on the pollers, then
// served by a worker; on says which.
func firstModes(t *testing.T, f func(t *testing.T, on bool)) {
	for _, on := range []bool{true, false} {
		t.Run(map[bool]string{true: "on", false: "off"}[on], func(t *testing.T) {
			if !on {
				t.Setenv(H1InlineFirstEnv, "0")
			}
			f(t, on && os.Getenv(H1InlineEnv) != "0" && os.Getenv(H1InlineReqEnv) != "0")
		})
	}
}

// wantAwaited checks how many connections began with their first request
// awaited by the pollers.
func wantAwaited(t *testing.T, fe *Frontend, on bool, n int64) {
	t.Helper()
	if !on {
		n = 0
	}
	if got := fe.h1inl.Awaited.Load(); got != n {
		t.Fatalf("%d connections awaited their first request on the pollers, want %d", got, n)
	}
}

// wantCounts checks that each counter in got, by name, is want.
func wantCounts(t *testing.T, want int64, got map[string]int64) {
	t.Helper()
	for what, c := range got {
		if c != want {
			t.Fatalf("%s %d, want %d", what, c, want)
		}
	}
}

// A connection per request (Connection: close): every first request is
// awaited by the pollers; the first is handed to a worker to dial the
// server, the others are sent by the reaper on the pooled connection; each
// connection is closed after its response; the counters are as a
// worker's.
func TestInlineFirstConnPerRequest(t *testing.T) {
	firstModes(t, func(t *testing.T, on bool) {
		up, conns := countingUpstream(t)
		p, fe, addr := inlineProxy(t, up, nil)
		const n = 10
		for i := range n {
			rc := dialRaw(t, addr)
			r := rc.do(t, "GET /c"+strconv.Itoa(i)+" HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
			if b := bodyOf(r); r.StatusCode != 200 || b != "/c"+strconv.Itoa(i) || !r.Close {
				t.Fatalf("request %d: %d %q close %v", i, r.StatusCode, b, r.Close)
			}
			wantClosed(t, rc.c, "connection "+strconv.Itoa(i))
		}
		waitFor(t, 10*time.Second, "the sessions ended", func() bool { return fe.Counters.Scur.Load() == 0 })
		wantAwaited(t, fe, on, n)
		if on {
			wantReq(t, fe, 0, 0, n-1, 1)
		}
		wantInline(t, fe, n, 0)
		if got := conns.get(); got != 1 {
			t.Fatalf("%d server connections, want 1", got)
		}
		srv := p.Backends[0].Servers()[0]
		wantCounts(t, n, map[string]int64{
			"frontend sessions": fe.Counters.Stot.Load(),
			"frontend 2xx":      fe.Counters.Hrsp[2].Load(),
			"server sessions":   srv.Counters.Stot.Load(),
			"backend sessions":  p.Backends[0].Counters.Stot.Load(),
		})
	})
}

// A first request that never comes, or whose head stops half-way, gets
// HAProxy's 408 at timeout_http_request (from a worker: the pollers hand
// it over), counted as a request error; a connection closed before it
// sends anything ends its session and counts as a request, a request
// error and a 4xx (HAProxy 2.6 logs it 400 CR-- "<BADREQ>": measured).
func TestInlineFirstTimeoutAndUnused(t *testing.T) {
	firstModes(t, func(t *testing.T, on bool) {
		up, _ := countingUpstream(t)
		_, fe, addr := inlineProxy(t, up, func(cfg *conf.Config) {
			cfg.Frontends[0].TimeoutHTTPRequest = 300 * time.Millisecond
		})
		for i, sent := range []string{"", "GET /half HTTP/1.1\r\nHo"} {
			rc := dialRaw(t, addr)
			start := time.Now()
			rc.c.SetDeadline(time.Now().Add(10 * time.Second))
			io.WriteString(rc.c, sent)
			r, err := http.ReadResponse(rc.br, nil)
			if err != nil {
				t.Fatalf("case %d: %v", i, err)
			}
			if took := time.Since(start); r.StatusCode != 408 || took < 250*time.Millisecond {
				t.Fatalf("case %d: status %d after %v, want 408 after 300ms", i, r.StatusCode, took)
			}
			wantClosed(t, rc.c, "timed-out connection")
		}
		unused := dialRaw(t, addr)
		waitFor(t, 10*time.Second, "the unused connection's session", func() bool { return fe.Counters.Stot.Load() == 3 })
		unused.c.Close()
		waitFor(t, 10*time.Second, "the sessions ended", func() bool { return fe.Counters.Scur.Load() == 0 })
		wantAwaited(t, fe, on, 3)
		wantCounts(t, 3, map[string]int64{
			"4xx":            fe.Counters.Hrsp[4].Load(),
			"request errors": fe.Counters.Ereq.Load(),
			"requests":       fe.Counters.ReqTot.Load(),
		})
	})
}

// A first request that is not simple (a body; a head in two parts) is
// served by a worker, from where the pollers left it.
func TestInlineFirstFallbacks(t *testing.T) {
	firstModes(t, func(t *testing.T, on bool) {
		up, _ := countingUpstream(t)
		_, fe, addr := inlineProxy(t, up, nil)
		rc := dialRaw(t, addr)
		r := rc.do(t, "POST /p HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc")
		if b := bodyOf(r); b != "/p:abc" {
			t.Fatalf("post: %q", b)
		}
		if b := bodyOf(rc.do(t, "GET /n HTTP/1.1\r\nHost: x\r\n\r\n")); b != "/n" {
			t.Fatalf("next: %q", b)
		}
		two := dialRaw(t, addr)
		two.c.SetDeadline(time.Now().Add(10 * time.Second))
		io.WriteString(two.c, "GET /tw")
		// Read by the pollers and left to a worker: rc's connection is
		// the only one they await then.
		waitFor(t, 10*time.Second, "the first part handed over", func() bool {
			return !on || fe.h1inl.Awaited.Load() == 2 && fe.p.group.Awaiting() == 1
		})
		r = two.do(t, "o HTTP/1.1\r\nHost: x\r\n\r\n")
		if b := bodyOf(r); b != "/two" {
			t.Fatalf("two parts: %q", b)
		}
		wantAwaited(t, fe, on, 2)
		// The POST handed over at its parsed head; the two-part head was
		// a worker's before anything began. /n is the worker's when it
		// comes within the worker's idle wait after the POST's response
		// (IdleKeep), else the reaper's: either is right, and which one
		// depends on the machine's load (the test failed in CI once in
		// about ten runs when it wanted the worker's).
		if on {
			if s, h := fe.h1inl.Sent.Load(), fe.h1inl.Handed.Load(); h != 1 || s > 1 {
				t.Fatalf("requests: %d sent by the reaper, %d handed to a worker, want 0 or 1 and 1", s, h)
			}
		}
		wantCounts(t, 3, map[string]int64{"2xx": fe.Counters.Hrsp[2].Load()})
	})
}

// A stop while a new connection waits for its first request: as with a
// worker, the request that then comes is served with Connection: close,
// and the stop ends with it.
func TestInlineFirstStop(t *testing.T) {
	firstModes(t, func(t *testing.T, on bool) {
		up, _ := countingUpstream(t)
		p, fe, addr := inlineProxy(t, up, nil)
		rc := dialRaw(t, addr)
		waitFor(t, 10*time.Second, "the session", func() bool { return fe.Counters.Scur.Load() == 1 })
		stopped := make(chan error, 1)
		go func() { stopped <- p.Shutdown(contextBackground()) }()
		waitFor(t, 10*time.Second, "the stop under way", func() bool { return p.stopping.Load() })
		r := rc.do(t, "GET /last HTTP/1.1\r\nHost: x\r\n\r\n")
		if b := bodyOf(r); b != "/last" || !r.Close {
			t.Fatalf("got %q close %v, want \"/last\" and close", b, r.Close)
		}
		if err := <-stopped; err != nil {
			t.Fatalf("Shutdown: %v", err)
		}
		wantAwaited(t, fe, on, 1)
	})
}

// A keep-alive connection whose request the pollers finished waits for
// its next one there without buffers, and hibernates at IdleKeep on the
// pollers (no worker); its next request resumes it; the buffers it held
// went back to their pools at once.
func TestInlineHibernatesOnPollers(t *testing.T) {
	if os.Getenv(H1InlineEnv) == "0" {
		t.Skip("nothing waits on the pollers with " + H1InlineEnv + "=0")
	}
	up, _ := countingUpstream(t)
	p, fe, addr := inlineProxy(t, up, func(cfg *conf.Config) {
		cfg.Frontends[0].TimeoutHTTPRequest = time.Minute
	})
	if fe.idleKeep <= 0 {
		t.Fatalf("IdleKeep %v: the test needs the wait with a keep period", fe.idleKeep)
	}
	rc := dialRaw(t, addr)
	for i := range 3 {
		if b := bodyOf(rc.do(t, "GET /h"+strconv.Itoa(i)+" HTTP/1.1\r\nHost: x\r\n\r\n")); b != "/h"+strconv.Itoa(i) {
			t.Fatalf("request %d: %q", i, b)
		}
		waitHibernating(t, p, 1)
		if got := fe.h1inl.Hibernated.Load(); got != int64(i+1) {
			t.Fatalf("after request %d: %d hibernated by the pollers, want %d", i, got, i+1)
		}
		if without, with := parkedWithoutBuffers(p); without != 1 || with != 0 {
			t.Fatalf("sessions without buffers %d (hibernating included), with %d; want 1, 0", without, with)
		}
	}
	if got := fe.Counters.ReqTot.Load(); got != 3 {
		t.Fatalf("req_tot %d, want 3", got)
	}
}
