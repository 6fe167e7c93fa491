package proxy

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fulcrum-proxy/fulcrum/conf"
	"github.com/fulcrum-proxy/fulcrum/proxy/lb"
	"github.com/fulcrum-proxy/fulcrum/proxy/queue"
)

// heldUpstream is an upstream whose requests wait until the test releases
// them one by one; it records the ?id= of each request in arrival order.
type heldUpstream struct {
	*upstream
	mu       sync.Mutex
	arrived  []int
	inflight atomic.Int64
	release  chan struct{}
}

func newHeldUpstream(t *testing.T, name string) *heldUpstream {
	h := &heldUpstream{upstream: newUpstream(t, name), release: make(chan struct{})}
	h.handler = func(w http.ResponseWriter, r *http.Request) {
		id, _ := strconv.Atoi(r.URL.Query().Get("id"))
		h.mu.Lock()
		h.arrived = append(h.arrived, id)
		h.mu.Unlock()
		h.inflight.Add(1)
		<-h.release
		h.inflight.Add(-1)
		io.WriteString(w, name)
	}
	t.Cleanup(func() { close(h.release) })
	return h
}

func (h *heldUpstream) order() []int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]int(nil), h.arrived...)
}

// getID sends GET /?id=id and returns the status (0 on a transport error)
// on done.
func getID(addr string, id int, done chan<- [2]int) {
	c := &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := c.Get("http://" + addr + "/?id=" + strconv.Itoa(id))
	if err != nil {
		done <- [2]int{id, 0}
		return
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	done <- [2]int{id, resp.StatusCode}
}

// TestQueueServerMaxconn: maxconn 2 and 5 concurrent requests: 2 at the
// server, 3 in the backend queue (qcur 3), all 5 served in arrival order.
func TestQueueServerMaxconn(t *testing.T) {
	u := newHeldUpstream(t, "s1")
	cfg := testConfig(conf.ModeHTTP, []string{u.addr()}, nil)
	cfg.Backends[0].Servers[0].MaxConn = 2
	cfg.Backends[0].TimeoutQueue = 30 * time.Second
	p, addr := startProxy(t, cfg)
	be := p.Backends[0]
	done := make(chan [2]int, 5)
	for i := range 5 {
		go getID(addr, i, done)
		// Arrival order is the order the proxy sees them: wait for each.
		waitFor(t, 5*time.Second, "request at the server or queued", func() bool {
			return int(u.inflight.Load())+int(be.queue.Len(-1)) == i+1
		})
	}
	snap := p.Snapshot().Backends[0]
	if u.inflight.Load() != 2 || snap.Qcur != 3 || snap.Qmax != 3 || snap.Servers[0].Scur != 2 {
		t.Fatalf("in flight %d, backend qcur/qmax %d/%d, server scur %d; want 2, 3/3, 2",
			u.inflight.Load(), snap.Qcur, snap.Qmax, snap.Servers[0].Scur)
	}
	if q := be.Queues(time.Now())[0]; q.Waiting != 3 || q.Oldest <= 0 {
		t.Errorf("show queue data: %+v", q)
	}
	for k := range 5 {
		u.release <- struct{}{}
		if r := <-done; r[1] != 200 {
			t.Errorf("request %d: status %d", r[0], r[1])
		}
		// The freed slot went to the next in line: let it reach the
		// server before the next release, so that the server sees the
		// proxy's order and not the race of two connects.
		if k+2 < 5 {
			waitFor(t, 5*time.Second, "the next request at the server", func() bool { return len(u.order()) == k+3 })
		}
	}
	if got := u.order(); !equalInts(got, []int{0, 1, 2, 3, 4}) {
		t.Errorf("arrival order at the server %v, want 0..4", got)
	}
	if s := p.Snapshot().Backends[0]; s.Qcur != 0 || s.Servers[0].Smax != 2 {
		t.Errorf("after: qcur %d, server smax %d", s.Qcur, s.Servers[0].Smax)
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestQueueTimeout: timeout_queue 300ms with the only slot held: the queued
// request gets 503 after the timeout, logged sQ with Tw, counted in econ.
func TestQueueTimeout(t *testing.T) {
	u := newHeldUpstream(t, "s1")
	cfg := testConfig(conf.ModeHTTP, []string{u.addr()}, nil)
	cfg.Backends[0].Servers[0].MaxConn = 1
	cfg.Backends[0].TimeoutQueue = 300 * time.Millisecond
	p, addr, buf := startLoggedProxy(t, cfg)
	done := make(chan [2]int, 2)
	go getID(addr, 0, done)
	waitFor(t, 5*time.Second, "first request at the server", func() bool { return u.inflight.Load() == 1 })
	start := time.Now()
	go getID(addr, 1, done)
	r := <-done
	waited := time.Since(start)
	if r != [2]int{1, 503} || waited < 300*time.Millisecond {
		t.Fatalf("got %v after %v, want request 1 → 503 after >= 300ms", r, waited)
	}
	u.release <- struct{}{}
	<-done
	var line map[string]any
	waitFor(t, 2*time.Second, "the 503's log line", func() bool {
		for _, l := range buf.lines() {
			if l["status"] == 503.0 {
				line = l
				return true
			}
		}
		return false
	})
	if line["termination_state"] != "sQ" || line["Tw"].(float64) < 300 || line["server"] != "<NOSRV>" {
		t.Errorf("log line %v: want sQ, Tw >= 300, <NOSRV>", line)
	}
	s := p.Snapshot().Backends[0]
	if s.Econ != 1 || s.Hrsp5xx != 1 || s.Qcur != 0 || s.Qmax != 1 || s.QtimeMax != 0 {
		t.Errorf("backend econ %d, 5xx %d, qcur %d, qmax %d, qtime_max %d; want 1, 1, 0, 1, 0 (the timed-out request never got a slot)",
			s.Econ, s.Hrsp5xx, s.Qcur, s.Qmax, s.QtimeMax)
	}
	if u.requests.Load() != 1 {
		t.Errorf("server saw %d requests, want 1", u.requests.Load())
	}
}

// TestQueueClientGone: under abortonclose, a client that closes while
// its request is queued leaves the queue at once (long before timeout
// queue), is logged CQ, and never reaches the server.
func TestQueueClientGone(t *testing.T) {
	u, p, buf, done := queuedClientCloses(t, true)
	be := p.Backends[0]
	waitFor(t, 5*time.Second, "the queue empties", func() bool { return be.queue.Len(-1) == 0 })
	waitFor(t, 5*time.Second, "the CQ log line", func() bool {
		for _, l := range buf.lines() {
			if l["termination_state"] == "CQ" {
				return true
			}
		}
		return false
	})
	u.release <- struct{}{}
	<-done
	if got := u.order(); !equalInts(got, []int{0}) {
		t.Errorf("server saw %v, want only request 0", got)
	}
	// The session ends just after the response is flushed.
	waitFor(t, 5*time.Second, "server scur 0", func() bool { return p.Snapshot().Backends[0].Servers[0].Scur == 0 })
	if s := p.Snapshot().Backends[0].Servers[0]; s.Stot != 1 {
		t.Errorf("server stot %d, want 1", s.Stot)
	}
}

// TestQueueBackendServedByFirstFree: with two servers of maxconn 1 both
// busy, a queued request goes to whichever frees its slot first.
func TestQueueBackendServedByFirstFree(t *testing.T) {
	u1, u2 := newHeldUpstream(t, "s1"), newHeldUpstream(t, "s2")
	cfg := testConfig(conf.ModeHTTP, []string{u1.addr(), u2.addr()}, nil)
	for _, s := range cfg.Backends[0].Servers {
		s.MaxConn = 1
	}
	cfg.Backends[0].TimeoutQueue = 30 * time.Second
	p, addr := startProxy(t, cfg)
	done := make(chan [2]int, 3)
	go getID(addr, 0, done)
	go getID(addr, 1, done)
	waitFor(t, 5*time.Second, "both servers busy", func() bool { return u1.inflight.Load() == 1 && u2.inflight.Load() == 1 })
	go getID(addr, 2, done)
	waitFor(t, 5*time.Second, "queued", func() bool { return p.Backends[0].queue.Len(-1) == 1 })
	u2.release <- struct{}{} // s2 frees first
	<-done
	waitFor(t, 5*time.Second, "request 2 at s2", func() bool { return len(u2.order()) == 2 })
	if got := u2.order()[1]; got != 2 || len(u1.order()) != 1 {
		t.Errorf("s2 got %v, s1 got %v; want request 2 on s2", u2.order(), u1.order())
	}
	u2.release <- struct{}{}
	u1.release <- struct{}{}
	<-done
	<-done
}

// pinnedTake runs a pinned take in the background, as persistence will.
func pinnedTake(b *Backend, pin *Server) <-chan *Server {
	ch := make(chan *Server, 1)
	go func() {
		srv, _, err := b.take(&lb.Request{}, pin, nil, time.Now(), nil, queue.ChanWait)
		if err != nil {
			srv = nil
		}
		ch <- srv
	}()
	return ch
}

// queueBackend builds a backend of n servers with maxconn 1 each.
func queueBackend(t *testing.T, n int, edit func(*conf.Backend)) *Backend {
	t.Helper()
	bc := &conf.Backend{Name: "web", Balance: "roundrobin", TimeoutQueue: 30 * time.Second}
	for i := range n {
		bc.Servers = append(bc.Servers, &conf.Server{Name: "s" + strconv.Itoa(i+1), Address: "127.0.0.1:1", Weight: 1, MaxConn: 1})
	}
	if edit != nil {
		edit(bc)
	}
	b, err := newBackend(1, bc)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestQueuePinned: a request pinned to a full server waits in that
// server's queue although another server is free, and gets the slot its
// server frees.
func TestQueuePinned(t *testing.T) {
	b := queueBackend(t, 2, nil)
	s1, s2 := b.Servers()[0], b.Servers()[1]
	first := <-pinnedTake(b, s1)
	if first != s1 {
		t.Fatalf("first pinned take got %v", first)
	}
	ch := pinnedTake(b, s1)
	waitFor(t, 5*time.Second, "pinned request queued on s1", func() bool { return b.queue.Len(0) == 1 })
	if s1.lb.Queued.Load() != 1 || b.queue.Len(-1) != 0 || s2.lb.Cur.Load() != 0 {
		t.Fatalf("s1 queued %d, backend queue %d, s2 cur %d", s1.lb.Queued.Load(), b.queue.Len(-1), s2.lb.Cur.Load())
	}
	b.unassign(s1)
	if got := <-ch; got != s1 {
		t.Fatalf("pinned request got %v, want s1", got)
	}
	b.unassign(s1)
	if s1.lb.Cur.Load() != 0 || b.queue.Waiting() != 0 {
		t.Errorf("cur %d, waiting %d", s1.lb.Cur.Load(), b.queue.Waiting())
	}
}

// TestQueueMaxqueueRedispatch: maxqueue 1 on a full server: the second
// pinned request is redispatched with redispatch on (wredis), refused with
// errQueueFull without.
func TestQueueMaxqueueRedispatch(t *testing.T) {
	for _, redisp := range []bool{true, false} {
		b := queueBackend(t, 2, func(bc *conf.Backend) {
			bc.Redispatch = redisp
			bc.Servers[0].MaxQueue = 1
		})
		s1, s2 := b.Servers()[0], b.Servers()[1]
		<-pinnedTake(b, s1)
		waiting := pinnedTake(b, s1)
		waitFor(t, 5*time.Second, "first pinned request queued", func() bool { return b.queue.Len(0) == 1 })
		srv, _, err := b.take(&lb.Request{}, s1, nil, time.Now(), nil, queue.ChanWait)
		if redisp {
			if err != nil || srv != s2 || b.Counters.Wredis.Load() != 1 || s1.Counters.Wredis.Load() != 1 {
				t.Errorf("redispatch: got %v, %v, wredis %d; want s2", srv, err, b.Counters.Wredis.Load())
			}
			b.unassign(s2)
		} else if err != errQueueFull || b.Counters.Econ.Load() != 1 {
			t.Errorf("no redispatch: got %v, %v, econ %d; want errQueueFull", srv, err, b.Counters.Econ.Load())
		}
		b.unassign(s1)
		if got := <-waiting; got != s1 {
			t.Errorf("queued pinned request got %v", got)
		}
		b.unassign(s1)
	}
}

// TestQueueDynamicLimit: minconn 2, maxconn 10, fullconn 20: the limit is
// max(minconn, sessions × maxconn / fullconn), exact at 0, 10 and 20
// backend sessions, and what the snapshot and the queue data report.
func TestQueueDynamicLimit(t *testing.T) {
	b := queueBackend(t, 1, func(bc *conf.Backend) {
		bc.FullConn = 20
		bc.Servers[0].MaxConn, bc.Servers[0].MinConn = 10, 2
	})
	s := b.Servers()[0]
	for _, c := range []struct{ load, want int }{{0, 2}, {5, 2}, {10, 5}, {15, 7}, {20, 10}, {40, 10}} {
		b.Counters.Scur.Store(int64(c.load))
		if got := s.EffectiveMaxConn(); got != c.want {
			t.Errorf("at %d sessions: limit %d, want %d", c.load, got, c.want)
		}
		if got := b.Queues(time.Now())[1].MaxConn; got != c.want {
			t.Errorf("at %d sessions: show queue maxconn %d, want %d", c.load, got, c.want)
		}
	}
}

// TestQueueDynamicLimitLive: the same limits with real held requests on one
// server: at 10 backend sessions 5 run and 5 wait; at 20, 10 run.
func TestQueueDynamicLimitLive(t *testing.T) {
	u := newHeldUpstream(t, "s1")
	cfg := testConfig(conf.ModeHTTP, []string{u.addr()}, nil)
	cfg.Backends[0].FullConn = 20
	cfg.Backends[0].TimeoutQueue = 30 * time.Second
	cfg.Backends[0].Servers[0].MaxConn, cfg.Backends[0].Servers[0].MinConn = 10, 2
	p, addr := startProxy(t, cfg)
	if s := p.Snapshot().Backends[0].Servers[0]; s.Slim != 2 {
		t.Errorf("slim at 0 sessions: %d, want 2", s.Slim)
	}
	done := make(chan [2]int, 20)
	for i := range 10 {
		go getID(addr, i, done)
	}
	waitFor(t, 5*time.Second, "10 backend sessions", func() bool { return p.Backends[0].Counters.Scur.Load() == 10 })
	// A request counts in the backend's sessions just before it queues:
	// wait for all five to be queued too.
	waitFor(t, 5*time.Second, "5 at the server, 5 queued", func() bool {
		return u.inflight.Load() == 5 && p.Snapshot().Backends[0].Qcur == 5
	})
	if s := p.Snapshot().Backends[0]; s.Servers[0].Slim != 5 || s.Qcur != 5 {
		t.Errorf("at 10 sessions: slim %d qcur %d, want 5 and 5", s.Servers[0].Slim, s.Qcur)
	}
	for i := 10; i < 20; i++ {
		go getID(addr, i, done)
	}
	waitFor(t, 5*time.Second, "10 at the server, 10 queued", func() bool {
		return u.inflight.Load() == 10 && p.Snapshot().Backends[0].Qcur == 10
	})
	if s := p.Snapshot().Backends[0]; s.Servers[0].Slim != 10 || s.Qcur != 10 || s.Scur != 20 {
		t.Errorf("at 20 sessions: slim %d qcur %d scur %d, want 10, 10, 20", s.Servers[0].Slim, s.Qcur, s.Scur)
	}
	for range 20 {
		u.release <- struct{}{}
	}
	for range 20 {
		if r := <-done; r[1] != 200 {
			t.Errorf("request %d: %d", r[0], r[1])
		}
	}
}

// TestQueueFirst: balance first fills s1 to its maxconn, then s2, and the
// backend queue takes the rest.
func TestQueueFirst(t *testing.T) {
	b := queueBackend(t, 2, func(bc *conf.Backend) {
		bc.Balance = "first"
		bc.Servers[0].MaxConn, bc.Servers[1].MaxConn = 2, 1
	})
	var got []string
	for range 3 {
		srv := <-pinnedTake(b, nil)
		got = append(got, srv.Name)
	}
	if want := "s1 s1 s2"; joinNames(got) != want {
		t.Errorf("got %v, want %s", got, want)
	}
	ch := pinnedTake(b, nil)
	waitFor(t, 5*time.Second, "backend queue", func() bool { return b.queue.Len(-1) == 1 })
	b.unassign(b.Servers()[1])
	if srv := <-ch; srv != b.Servers()[1] {
		t.Errorf("queued request got %v, want s2", srv)
	}
}

func joinNames(s []string) string {
	out := ""
	for i, n := range s {
		if i > 0 {
			out += " "
		}
		out += n
	}
	return out
}

// TestQueueLeastconnCountsQueued: leastconn sees a server's pinned waiters
// as load.
func TestQueueLeastconnCountsQueued(t *testing.T) {
	b := queueBackend(t, 2, func(bc *conf.Backend) {
		bc.Balance = "leastconn"
		bc.Servers[0].MaxConn, bc.Servers[1].MaxConn = 1, 0
	})
	s1, s2 := b.Servers()[0], b.Servers()[1]
	<-pinnedTake(b, s1)
	ch := pinnedTake(b, s1) // s1: 1 session + 1 queued
	waitFor(t, 5*time.Second, "queued on s1", func() bool { return s1.lb.Queued.Load() == 1 })
	b.unassign(s1)
	<-ch // s1: 1 session, 0 queued
	// s2 takes one: both at 1; then a pinned waiter on s1 makes it 2.
	b.started(s2, time.Now())
	s2.lb.Cur.Add(1)
	b.observer.ConnTaken(&s2.lb)
	ch = pinnedTake(b, s1)
	waitFor(t, 5*time.Second, "queued on s1", func() bool { return s1.lb.Queued.Load() == 1 })
	if v := b.algo.Pick(nil, nil); v != &s2.lb {
		t.Errorf("leastconn picked %s, want s2 (s1 has a session and a waiter)", v.Name)
	}
	b.unassign(s1)
	<-ch
}

// TestFrontendMaxconn20: frontend maxconn 10 with 20 clients: at most 10
// accepted at once, the others wait in the kernel backlog (counted), none
// refused, all served.
func TestFrontendMaxconn20(t *testing.T) {
	u := newHeldUpstream(t, "s1")
	cfg := testConfig(conf.ModeHTTP, []string{u.addr()}, nil)
	cfg.Frontends[0].MaxConn = 10
	p, addr := startProxy(t, cfg)
	done := make(chan [2]int, 20)
	for i := range 20 {
		go getID(addr, i, done)
	}
	waitFor(t, 5*time.Second, "10 requests at the server", func() bool { return u.inflight.Load() == 10 })
	waitFor(t, 5*time.Second, "maxconn hits counted", func() bool { return p.Frontends[0].MaxconnHits.Load() > 0 })
	if s := p.Snapshot().Frontends[0]; s.Scur != 10 || s.Slim != 10 {
		t.Errorf("frontend scur/slim %d/%d, want 10/10", s.Scur, s.Slim)
	}
	ok := 0
	for range 20 {
		u.release <- struct{}{}
		if r := <-done; r[1] == 200 {
			ok++
		}
		if n := p.Snapshot().Frontends[0].Smax; n > 10 {
			t.Fatalf("frontend smax %d > 10", n)
		}
	}
	if ok != 20 {
		t.Errorf("served %d of 20", ok)
	}
}

var _ queue.Slots = (*Backend)(nil)

// takeAsync runs take for r (pinned to pin when not nil) in the
// background and reports the server it got, or its error.
func takeAsync(b *Backend, r *lb.Request, pin *Server) <-chan connectResult {
	ch := make(chan connectResult, 1)
	go func() {
		srv, _, err := b.take(r, pin, nil, time.Now(), nil, queue.ChanWait)
		ch <- connectResult{srv: srv, err: err}
	}()
	return ch
}

// TestQueueRedistributedWhenServerLeaves is issue 16 point 12's third bug:
// requests waiting in a server's own queue were served by that server
// after `disable server` put it in MAINT. As HAProxy 2.6 (`disable server`
// on loopback: "3 requeued", the 3 requests served by s2 at once, wredis 3
// on s1), with redispatch they move to the backend queue when the server
// goes MAINT, DRAIN, NOLB or DOWN, and the other servers serve them, in
// order, counted in the wredis of the server they left, not in lbtot (a
// queue pop). Without redispatch they stay for their server.
func TestQueueRedistributedWhenServerLeaves(t *testing.T) {
	leave := map[string]func(b *Backend, s *Server){
		"MAINT": func(b *Backend, s *Server) { b.SetAdmin(s, AdminMaint) },
		"DRAIN": func(b *Backend, s *Server) { b.SetAdmin(s, AdminDrain) },
		"NOLB":  func(b *Backend, s *Server) { b.SetOp(s, OpStopping) },
		"DOWN":  func(b *Backend, s *Server) { b.SetOp(s, OpDown) },
	}
	for _, how := range []string{"MAINT", "DRAIN", "NOLB", "DOWN"} {
		for _, redisp := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/redispatch=%v", how, redisp), func(t *testing.T) {
				b := queueBackend(t, 2, func(bc *conf.Backend) { bc.Redispatch = redisp })
				s1, s2 := b.Servers()[0], b.Servers()[1]
				<-pinnedTake(b, s1) // s1 full
				var waiting []<-chan connectResult
				for i := range 2 {
					waiting = append(waiting, takeAsync(b, &lb.Request{}, s1))
					waitFor(t, 5*time.Second, "pinned requests queued on s1", func() bool { return b.queue.Len(0) == int64(i+1) })
				}
				lbtot := s2.Counters.Lbtot.Load()
				leave[how](b, s1)
				if !redisp {
					if b.queue.Len(0) != 2 || s2.lb.Cur.Load() != 0 {
						t.Fatalf("without redispatch: s1 queue %d, s2 sessions %d; want 2 and 0", b.queue.Len(0), s2.lb.Cur.Load())
					}
					for range waiting { // s1 serves them as its slot frees
						b.unassign(s1)
					}
					for i, ch := range waiting {
						if res := <-ch; res.srv != s1 || res.err != nil {
							t.Errorf("request %d: got %v %v, want s1", i, res.srv, res.err)
						}
					}
					b.unassign(s1)
					return
				}
				// s2's free slot goes to the older request at once, the
				// younger waits for it in the backend queue.
				if res := <-waiting[0]; res.srv != s2 || res.err != nil {
					t.Fatalf("first request: got %v %v, want s2", res.srv, res.err)
				}
				if b.queue.Len(0) != 0 || b.queue.Len(-1) != 1 {
					t.Fatalf("queues: s1 %d, backend %d; want 0 and 1", b.queue.Len(0), b.queue.Len(-1))
				}
				b.unassign(s1) // s1's slot frees: it must not serve the moved request
				b.unassign(s2)
				if res := <-waiting[1]; res.srv != s2 || res.err != nil {
					t.Fatalf("second request: got %v %v, want s2", res.srv, res.err)
				}
				b.unassign(s2)
				if w, bw := s1.Counters.Wredis.Load(), b.Counters.Wredis.Load(); w != 2 || bw != 2 || s2.Counters.Wredis.Load() != 0 {
					t.Errorf("wredis: s1 %d, backend %d, s2 %d; want 2, 2, 0", w, bw, s2.Counters.Wredis.Load())
				}
				if n := s2.Counters.Lbtot.Load(); n != lbtot {
					t.Errorf("s2 lbtot %d, want %d (queue pops)", n, lbtot)
				}
			})
		}
	}
}

// TestQueueHashAffinity is issue 16 point 12's fourth bug: with a hashing
// algorithm, a request whose server was full went to another server; HAProxy
// 2.6 keeps it on its server and queues it there (on loopback: balance uri,
// maxconn 1, three /slowa requests: s2 qcur 2 while s1 was idle), which is
// hash_preserve_affinity "always", the default. "maxconn" (HAProxy 3.2) is
// the old behaviour; "maxqueue" keeps the affinity until the server's queue
// holds maxqueue requests.
func TestQueueHashAffinity(t *testing.T) {
	for _, ht := range []string{"map-based", "consistent"} {
		for _, aff := range []string{"always", "maxconn", "maxqueue"} {
			t.Run(ht+"/"+aff, func(t *testing.T) {
				b := queueBackend(t, 2, func(bc *conf.Backend) {
					bc.Balance, bc.HashType, bc.HashPreserveAffinity = "uri", ht, aff
					bc.Redispatch = true
					for _, s := range bc.Servers {
						s.MaxQueue = 1
					}
				})
				r := &lb.Request{Path: "/key"}
				home := b.Servers()[b.algo.Pick(r, nil).Index]
				other := b.Servers()[1-b.algo.Pick(r, nil).Index]
				if res := <-takeAsync(b, r, nil); res.srv != home {
					t.Fatalf("first request: got %v, want its server %s", res.srv, home.Name)
				}
				second := takeAsync(b, r, nil)
				if aff == "maxconn" {
					if res := <-second; res.srv != other {
						t.Fatalf("maxconn: second request got %v, want the other server", res.srv)
					}
					b.unassign(other)
					b.unassign(home)
					return
				}
				waitFor(t, 5*time.Second, "the second request queued on its server", func() bool { return b.queue.Len(home.ID-1) == 1 })
				if other.lb.Cur.Load() != 0 || b.queue.Len(-1) != 0 {
					t.Fatalf("other server %d sessions, backend queue %d; want 0 and 0", other.lb.Cur.Load(), b.queue.Len(-1))
				}
				// The home server's queue is full (maxqueue 1): "always"
				// refuses the third request (a 503 even with redispatch, as
				// HAProxy: the hash would bring it back), "maxqueue" sends it
				// to the other server.
				third := <-takeAsync(b, r, nil)
				switch {
				case aff == "always" && (third.err != errQueueFull || third.srv != home):
					t.Errorf("always, queue full: got %v %v, want errQueueFull on %s", third.srv, third.err, home.Name)
				case aff == "maxqueue" && third.srv != other:
					t.Errorf("maxqueue, queue full: got %v %v, want the other server", third.srv, third.err)
				case aff == "maxqueue":
					b.unassign(other)
				}
				b.unassign(home)
				if res := <-second; res.srv != home {
					t.Errorf("second request: got %v, want %s", res.srv, home.Name)
				}
				b.unassign(home)
				if n := home.Counters.Lbtot.Load(); n != map[string]int64{"always": 3, "maxqueue": 2}[aff] {
					t.Errorf("%s lbtot %d: every pick of the algorithm counts, as HAProxy's", home.Name, n)
				}
			})
		}
	}
}

// TestQueueClientGoneServed: without abortonclose (HAProxy 2.6's default,
// checked beside it: "fe b_q2/q 0/1401/0/1502/2903 200 ... ----" for a
// client that left while queued), a queued request whose client closed is
// still sent when a slot frees: the server sees it, and its line is the
// server's answer that found no client (CD, as HAProxy's when the write
// fails; or -- when the response was written before the close was seen).
func TestQueueClientGoneServed(t *testing.T) {
	u, p, buf, done := queuedClientCloses(t, false)
	be := p.Backends[0]
	u.release <- struct{}{}
	<-done
	waitFor(t, 5*time.Second, "the queued request at the server", func() bool { return u.inflight.Load() == 1 })
	if n := be.queue.Len(-1); n != 0 {
		t.Errorf("queue %d, want 0", n)
	}
	u.release <- struct{}{}
	waitFor(t, 5*time.Second, "two log lines", func() bool { return len(buf.lines()) == 2 })
	if got := u.order(); !equalInts(got, []int{0, 1}) {
		t.Errorf("server saw %v, want both requests", got)
	}
	if l := buf.lines()[1]; l["termination_state"] == "CQ" || l["server"] != "s1" {
		t.Errorf("the queued request's line: %v, want it sent to s1", l)
	}
}

// queuedClientCloses starts a proxy (abortonclose as given) whose one
// server takes one request at a time, sends request 0 there (done gets
// its answer), queues request 1 behind it on a connection of its own and
// closes that connection.
func queuedClientCloses(t *testing.T, abortOnClose bool) (*heldUpstream, *Proxy, *syncBuffer, chan [2]int) {
	t.Helper()
	u := newHeldUpstream(t, "s1")
	cfg := testConfig(conf.ModeHTTP, []string{u.addr()}, nil)
	cfg.Backends[0].Servers[0].MaxConn = 1
	cfg.Backends[0].TimeoutQueue = time.Minute
	cfg.Backends[0].AbortOnClose = abortOnClose
	p, addr, buf := startLoggedProxy(t, cfg)
	done := make(chan [2]int, 1)
	go getID(addr, 0, done)
	waitFor(t, 5*time.Second, "first request at the server", func() bool { return u.inflight.Load() == 1 })
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(c, "GET /?id=1 HTTP/1.1\r\nHost: a\r\n\r\n")
	waitFor(t, 5*time.Second, "queued", func() bool { return p.Backends[0].queue.Len(-1) == 1 })
	c.Close()
	return u, p, buf, done
}
