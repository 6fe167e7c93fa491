package proxy

import (
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fulcrum-proxy/fulcrum/conf"
	"github.com/fulcrum-proxy/fulcrum/proxy/lb"
	"github.com/fulcrum-proxy/fulcrum/proxy/queue"
)

// refusingAddr returns a loopback address where nothing listens: a connect
// there is refused at once.
func refusingAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// listeningAddr returns the address of a listener that accepts and holds
// connections until the test ends.
func listeningAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { c.Close() })
		}
	}()
	return l.Addr().String()
}

// attempts counts a server's connect attempts (its traffic observer).
type attempts struct{ n atomic.Int64 }

func (a *attempts) ObserveConnect(bool) { a.n.Add(1) }
func (a *attempts) ObserveResponse(int) {}
func countAttempts(s *Server) *attempts { a := &attempts{}; s.SetTrafficObserver(a); return a }
func (c *fakeClock) nextTimer() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	next := time.Duration(-1)
	for _, t := range c.timers {
		if d := t.at.Sub(c.now); !t.stopped && (next < 0 || d < next) {
			next = d
		}
	}
	return next
}

// connectResult is what connectServer returned, for a background call.
type connectResult struct {
	srv *Server
	c   net.Conn
	err error
}

// connectAsync assigns a server of b (pin, or the algorithm's), calls then
// (if not nil) and connectServer in the background, as the request path
// does.
func connectAsync(t *testing.T, b *Backend, pin *Server, r *lb.Request, then func()) <-chan connectResult {
	t.Helper()
	srv, _, err := b.take(r, pin, nil, time.Now(), nil, queue.ChanWait)
	if err != nil {
		t.Fatal(err)
	}
	if then != nil {
		then()
	}
	ch := make(chan connectResult, 1)
	go func() {
		srv, c, _, err := connectServer(b, srv, r, pin != nil, nil, nil)
		if c != nil {
			t.Cleanup(func() { c.Close() })
		}
		ch <- connectResult{srv, c, err}
	}()
	return ch
}

// turnAround waits until the connect path waits on clk, checks the delay
// and the attempts made so far, and lets the delay pass.
func turnAround(t *testing.T, clk *fakeClock, want time.Duration, tries *attempts, triesSoFar int64) {
	t.Helper()
	waitFor(t, 5*time.Second, "the turn-around delay", func() bool { return clk.pending() > 0 })
	if d := clk.nextTimer(); d != want {
		t.Fatalf("turn-around delay %v, want %v", d, want)
	}
	if n := tries.n.Load(); n != triesSoFar {
		t.Fatalf("%d connect attempts before the delay passed, want %d", n, triesSoFar)
	}
	clk.Advance(want)
}

// TestConnectTurnAround is issue 16 point 12's first bug: a connect retry
// on the same server was made at once, hammering a refusing server three
// times within a few milliseconds. As HAProxy 2.6 (SYNs to a refusing
// port on loopback 1.00 s apart, 0.30 s with timeout connect 300ms), each
// retry first waits min(1s, timeout_connect), here on the backend's clock.
func TestConnectTurnAround(t *testing.T) {
	for _, tc := range []struct {
		name    string
		timeout time.Duration
		want    time.Duration
	}{
		{"timeout_connect 5s", 5 * time.Second, time.Second},
		{"timeout_connect 300ms", 300 * time.Millisecond, 300 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, clk := testBackend(t, conf.Backend{Retries: 2, TimeoutConnect: tc.timeout}, testServer{name: "s1"})
			s1 := b.Servers()[0]
			s1.addr.Store(ptr(refusingAddr(t)))
			tries := countAttempts(s1)
			done := connectAsync(t, b, nil, &lb.Request{}, nil)
			turnAround(t, clk, tc.want, tries, 1)
			turnAround(t, clk, tc.want, tries, 2)
			res := <-done
			if res.err == nil || res.srv != s1 || tries.n.Load() != 3 {
				t.Fatalf("got %v on %v after %d attempts, want an error on s1 after 3", res.err, res.srv, tries.n.Load())
			}
			if w, e := s1.Counters.Wretr.Load(), s1.Counters.Econ.Load(); w != 2 || e != 1 {
				t.Errorf("s1 wretr %d econ %d, want 2 and 1", w, e)
			}
			// HAProxy counts each connect attempt in the server's stot
			// (cum_sess); scur stays the request's one session.
			if st, sc := s1.Counters.Stot.Load(), s1.Counters.Scur.Load(); st != 3 || sc != 1 {
				t.Errorf("s1 stot %d scur %d, want 3 (one per attempt) and 1", st, sc)
			}
			b.unassign(res.srv)
		})
	}
}

// TestRedispatchAtFirstRetry is issue 16 point 12's second bug: with
// redispatch, a roundrobin request to a refusing server retried it twice
// before moving on, and wredis was counted on the server it moved to.
// HAProxy 2.6 (with its 2.7 fix backported, which the 2.6.12 on this
// machine shows) redispatches at the first retry, without a delay, whatever
// the algorithm as long as it does not hash a key, nothing (persistence)
// ties the request to the server and more than one active server is
// usable; else it retries the same server, with the turn-around delay, and
// redispatches at the last retry. wredis is the server's it left.
func TestRedispatchAtFirstRetry(t *testing.T) {
	cases := []struct {
		name     string
		balance  string
		pinned   bool
		retried  int64 // s1's wretr: retries on s1 before it was left
		delays   int   // turn-around delays waited
		attempts int64 // connects to s1
	}{
		{"roundrobin", "roundrobin", false, 0, 0, 1},
		{"leastconn", "leastconn", false, 0, 0, 1},
		{"random", "random", false, 0, 0, 1},
		{"roundrobin, pinned", "roundrobin", true, 2, 2, 3},
		{"uri (a hash)", "uri", false, 2, 2, 3},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b, clk := testBackend(t, conf.Backend{Balance: tc.balance, Retries: 3, Redispatch: true,
				TimeoutConnect: 5 * time.Second}, testServer{name: "s1"}, testServer{name: "s2"})
			s1, s2 := b.Servers()[0], b.Servers()[1]
			s1.addr.Store(ptr(refusingAddr(t)))
			s2.addr.Store(ptr(listeningAddr(t)))
			tries := countAttempts(s1)
			// A request that persistence, or the algorithm while s2 is
			// DOWN, sends to s1; s2 is back UP when s1 refuses it.
			r := &lb.Request{Path: "/x"}
			var pin *Server
			if tc.pinned {
				pin = s1
			} else {
				b.SetOp(s2, OpDown)
			}
			done := connectAsync(t, b, pin, r, func() { b.SetOp(s2, OpUp) })
			lbtot := int64(1) // s1's pick, or none when pinned, and s2's
			if tc.pinned {
				lbtot = 0
			}
			for i := range tc.delays {
				turnAround(t, clk, time.Second, tries, int64(i+1))
			}
			res := <-done
			if res.err != nil || res.srv != s2 {
				t.Fatalf("got %v on %v, want a connection to s2", res.err, res.srv.Name)
			}
			if n := tries.n.Load(); n != tc.attempts || clk.pending() != 0 {
				t.Errorf("%d attempts on s1, %d timers pending; want %d, none", n, clk.pending(), tc.attempts)
			}
			got := [4]int64{s1.Counters.Wretr.Load(), s1.Counters.Wredis.Load(), s2.Counters.Wretr.Load(), s2.Counters.Wredis.Load()}
			if want := [4]int64{tc.retried, 1, 0, 0}; got != want {
				t.Errorf("s1 wretr/wredis, s2 wretr/wredis: got %v, want %v", got, want)
			}
			// The session moved: s1 has none, s2 one; the move is a pick.
			if s1.lb.Cur.Load() != 0 || s2.lb.Cur.Load() != 1 {
				t.Errorf("sessions: s1 %d s2 %d, want 0 and 1", s1.lb.Cur.Load(), s2.lb.Cur.Load())
			}
			if got := [2]int64{s1.Counters.Lbtot.Load(), s2.Counters.Lbtot.Load()}; got != [2]int64{lbtot, 1} {
				t.Errorf("lbtot s1, s2: got %v, want [%d 1]", got, lbtot)
			}
			b.unassign(res.srv)
		})
	}
}

// TestRedispatchOneActiveServer: with a single usable active server, a
// redispatch would come back to it: the retry waits the turn-around delay
// (HAProxy: srv_act <= 1) and is counted as a retry.
func TestRedispatchOneActiveServer(t *testing.T) {
	b, clk := testBackend(t, conf.Backend{Retries: 1, Redispatch: true, TimeoutConnect: 5 * time.Second},
		testServer{name: "s1"})
	s1 := b.Servers()[0]
	s1.addr.Store(ptr(refusingAddr(t)))
	tries := countAttempts(s1)
	done := connectAsync(t, b, nil, &lb.Request{}, nil)
	turnAround(t, clk, time.Second, tries, 1)
	if res := <-done; res.err == nil || s1.Counters.Wretr.Load() != 1 || s1.Counters.Wredis.Load() != 0 {
		t.Errorf("got %v, wretr %d wredis %d; want an error, 1 and 0", res.err, s1.Counters.Wretr.Load(), s1.Counters.Wredis.Load())
	}
	b.unassign(s1)
}

func ptr[T any](v T) *T { return &v }

// TestNoServerAndConnectFailedLog: the access log and counters of the two
// SC cases as HAProxy 2.6's (fresh-user trials beside it): a backend with
// no usable server logs Tw -1 and counts econ on the backend; a
// connection refused after the retries logs Tc -1 and Tw 0, or, with
// redispatch, Tw up to the failure (the attempts and the turn-around
// delays: HAProxy's t_queue is set when the stream goes back to its
// assignment; measured: 0/0/-1/-1/2003 and 0/2003/-1/-1/2003).
func TestNoServerAndConnectFailedLog(t *testing.T) {
	cfg := testConfig(conf.ModeHTTP, []string{refusingAddr(t)}, nil)
	cfg.Backends[0].Retries = 1
	cfg.Backends[0].TimeoutConnect = 100 * time.Millisecond // the turn-around delay
	p, addr, buf := startLoggedProxy(t, cfg)
	be := p.Backends[0]
	if r := dialRaw(t, addr).do(t, "GET /refused HTTP/1.1\r\nHost: x\r\n\r\n"); r.StatusCode != 503 {
		t.Fatalf("status %d, want 503", r.StatusCode)
	}
	be.SetAdmin(be.Servers()[0], AdminMaint)
	if r := dialRaw(t, addr).do(t, "GET /nosrv HTTP/1.1\r\nHost: x\r\n\r\n"); r.StatusCode != 503 {
		t.Fatalf("status %d, want 503", r.StatusCode)
	}
	waitFor(t, 5*time.Second, "two log lines", func() bool { return len(buf.lines()) == 2 })
	refused, nosrv := buf.lines()[0], buf.lines()[1]
	if refused["request"] != "GET /refused HTTP/1.1" { // each is written when its request releases: either order
		refused, nosrv = nosrv, refused
	}
	if refused["termination_state"] != "SC" || refused["Tw"] != float64(0) || refused["Tc"] != float64(-1) {
		t.Errorf("refused: %v; want SC, Tw 0, Tc -1", refused)
	}
	if nosrv["termination_state"] != "SC" || nosrv["Tw"] != float64(-1) || nosrv["server"] != "<NOSRV>" {
		t.Errorf("no server: %v; want SC, Tw -1, <NOSRV>", nosrv)
	}
	if e := be.Counters.Econ.Load(); e != 2 {
		t.Errorf("backend econ %d, want 2 (the refused connection, the request without a server)", e)
	}
}

// TestConnectFailedRedispatchTw: with redispatch, a connection refused
// after its retries logs Tw up to the failure, as HAProxy 2.6's
// (TestNoServerAndConnectFailedLog: 0 without).
func TestConnectFailedRedispatchTw(t *testing.T) {
	cfg := testConfig(conf.ModeHTTP, []string{refusingAddr(t)}, nil)
	cfg.Backends[0].Retries = 1
	cfg.Backends[0].Redispatch = true
	cfg.Backends[0].TimeoutConnect = 100 * time.Millisecond // the turn-around delay
	_, addr, buf := startLoggedProxy(t, cfg)
	if r := dialRaw(t, addr).do(t, "GET /refused HTTP/1.1\r\nHost: x\r\n\r\n"); r.StatusCode != 503 {
		t.Fatalf("status %d, want 503", r.StatusCode)
	}
	waitFor(t, 5*time.Second, "the log line", func() bool { return len(buf.lines()) == 1 })
	l := buf.lines()[0]
	if tw, _ := l["Tw"].(float64); l["termination_state"] != "SC" || tw < 100 || l["Tc"] != float64(-1) {
		t.Errorf("refused: %v; want SC, Tw >= 100 (the turn-around), Tc -1", l)
	}
}
