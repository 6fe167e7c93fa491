package check

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fulcrum-proxy/fulcrum/conf"
	"github.com/fulcrum-proxy/fulcrum/proxy"
	"github.com/rs/zerolog"
)

// fakeClock is a Clock that moves only when the test advances it.
type fakeClock struct {
	mu     sync.Mutex
	now    time.Time
	timers []*fakeTimer
}

type fakeTimer struct {
	c     chan time.Time
	at    time.Time
	d     time.Duration
	clock *fakeClock
}

func newFakeClock() *fakeClock { return &fakeClock{now: time.Unix(1_700_000_000, 0)} }

func (f *fakeClock) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

func (f *fakeClock) NewTimer(d time.Duration) Timer {
	f.mu.Lock()
	defer f.mu.Unlock()
	t := &fakeTimer{c: make(chan time.Time, 1), at: f.now.Add(d), d: d, clock: f}
	if d <= 0 {
		t.c <- f.now
		return t
	}
	f.timers = append(f.timers, t)
	return t
}

func (t *fakeTimer) C() <-chan time.Time { return t.c }

func (t *fakeTimer) Stop() bool {
	f := t.clock
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, x := range f.timers {
		if x == t {
			f.timers = append(f.timers[:i], f.timers[i+1:]...)
			return true
		}
	}
	return false
}

// Advance moves the clock by d and fires the timers that are due.
func (f *fakeClock) Advance(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.now = f.now.Add(d)
	kept := f.timers[:0]
	for _, t := range f.timers {
		if !t.at.After(f.now) {
			t.c <- f.now
			continue
		}
		kept = append(kept, t)
	}
	f.timers = kept
}

// pending returns the durations of the pending timers, sorted.
func (f *fakeClock) pending() []time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	var ds []time.Duration
	for _, t := range f.timers {
		ds = append(ds, t.d)
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	return ds
}

// waitTimers waits until n timers are pending (every loop is asleep).
func (f *fakeClock) waitTimers(t *testing.T, n int) {
	t.Helper()
	waitFor(t, 5*time.Second, fmt.Sprintf("%d pending timers", n), func() bool {
		f.mu.Lock()
		defer f.mu.Unlock()
		return len(f.timers) >= n
	})
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(time.Millisecond)
	}
}

// probeEvent is one applied probe result.
type probeEvent struct {
	server string
	kind   kind
	r      Result
}

// harness is a real proxy with a checker on a fake clock.
type harness struct {
	t      *testing.T
	p      *proxy.Proxy
	addr   string // the frontend's address
	c      *Checker
	clock  *fakeClock
	events chan probeEvent
	logs   *lockedBuffer
}

// lockedBuffer collects log lines from several goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// newHarness starts cfg's proxy and its checks on a fake clock: no
// jitter, every first probe at once.
func newHarness(t *testing.T, cfg *conf.Config) *harness {
	t.Helper()
	logs := &lockedBuffer{}
	log := zerolog.New(logs)
	p, err := proxy.New(cfg, log)
	if err != nil {
		t.Fatalf("proxy.New: %v", err)
	}
	if err := p.Start(); err != nil {
		t.Fatalf("Start: %v", err)
	}
	h := &harness{t: t, p: p, clock: newFakeClock(), events: make(chan probeEvent, 100), logs: logs}
	if len(p.Frontends) > 0 {
		h.addr = p.Frontends[0].Addrs()[0].String()
	}
	c, err := New(p, log)
	if err != nil {
		t.Fatalf("check.New: %v", err)
	}
	c.Clock, c.Jitter, c.Rand = h.clock, 0, func(int64) int64 { return 0 }
	c.onProbe = func(cs *Server, k kind, r Result) { h.events <- probeEvent{cs.srv.Name, k, r} }
	h.c = c
	c.Start()
	t.Cleanup(func() {
		c.Stop()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		p.Shutdown(ctx)
	})
	return h
}

// next waits for the next applied probe result.
func (h *harness) next() probeEvent {
	h.t.Helper()
	select {
	case ev := <-h.events:
		return ev
	case <-time.After(10 * time.Second):
		h.t.Fatal("no probe result within 10s")
	}
	return probeEvent{}
}

// step waits until the loops are asleep (n timers), checks that the
// next timer is due after want, advances the clock by it and returns the
// probe result that follows.
func (h *harness) step(n int, want time.Duration) probeEvent {
	h.t.Helper()
	h.clock.waitTimers(h.t, n)
	if got := h.clock.pending()[0]; got != want {
		h.t.Fatalf("next probe after %v, want %v", got, want)
	}
	h.clock.Advance(want)
	return h.next()
}

// server returns the snapshot of backend web's server name.
func (h *harness) server(name string) *proxy.ServerSnapshot {
	h.t.Helper()
	for _, s := range h.p.Snapshot().Backends[0].Servers {
		if s.Name == name {
			return &s
		}
	}
	h.t.Fatalf("no server %q", name)
	return nil
}

// upstream is a test HTTP server that names itself and can be told to
// answer with another status, or to hang.
type upstream struct {
	*httptest.Server
	name     string
	status   atomic.Int64 // 0 = 200
	requests atomic.Int64
}

func newUpstream(t *testing.T, name string) *upstream {
	t.Helper()
	u := &upstream{name: name}
	u.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/healthz" {
			u.requests.Add(1)
		}
		if st := u.status.Load(); st != 0 {
			w.WriteHeader(int(st))
			return
		}
		io.WriteString(w, name+"\n")
	}))
	t.Cleanup(u.Close)
	return u
}

func (u *upstream) addr() string { return u.Listener.Addr().String() }

// testConfig is one frontend and backend "web" over addrs, servers s1..sN
// with check = true and a TCP check every second.
func testConfig(addrs ...string) *conf.Config {
	be := &conf.Backend{
		Name: "web", Mode: conf.ModeHTTP, Balance: "roundrobin", HTTPReuse: "never",
		TimeoutConnect: time.Second, TimeoutServer: 5 * time.Second, Retries: 1,
		Check: &conf.Check{Type: "tcp", Path: "/", Method: "GET", ExpectStatus: "200-399",
			Inter: time.Second, FastInter: 250 * time.Millisecond, DownInter: 2 * time.Second, Rise: 2, Fall: 3},
	}
	for i, a := range addrs {
		be.Servers = append(be.Servers, &conf.Server{Name: fmt.Sprintf("s%d", i+1), Address: a, Weight: 1,
			Check: true, ErrorLimit: 10, OnError: "fail-check"})
	}
	return &conf.Config{
		Frontends: []*conf.Frontend{{Name: "www", Binds: []string{"127.0.0.1:0"}, Mode: conf.ModeHTTP,
			DefaultBackend: "web", TimeoutClient: 5 * time.Second, TimeoutHTTPRequest: 5 * time.Second}},
		Backends: []*conf.Backend{be},
	}
}

// get sends one request through the proxy and returns the status and body.
func get(t *testing.T, addr string) (int, string) {
	t.Helper()
	c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 10 * time.Second}
	resp, err := c.Get("http://" + addr + "/")
	if err != nil {
		t.Fatalf("GET: %v", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, strings.TrimSpace(string(b))
}

// closedAddr returns a loopback address that refuses connections.
func closedAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	a := l.Addr().String()
	l.Close()
	return a
}

var nopLog = zerolog.Nop()
