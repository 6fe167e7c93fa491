package proxy

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"pgregory.net/rapid"

	"github.com/fulcrum-proxy/fulcrum/conf"
	"github.com/fulcrum-proxy/fulcrum/proxy/lb"
)

// fakeClock is a clock that moves only when the test says so; timers fire
// from Advance, in the test's goroutine.
type fakeClock struct {
	mu     sync.Mutex
	now    time.Time
	timers []*fakeTimer
}

type fakeTimer struct {
	at      time.Time
	f       func()
	stopped bool
}

func newFakeClock() *fakeClock { return &fakeClock{now: time.Unix(1_700_000_000, 0)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) AfterFunc(d time.Duration, f func()) func() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &fakeTimer{at: c.now.Add(d), f: f}
	c.timers = append(c.timers, t)
	return func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		was := !t.stopped
		t.stopped = true
		return was
	}
}

// pending counts the timers not yet fired or stopped.
func (c *fakeClock) pending() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, t := range c.timers {
		if !t.stopped {
			n++
		}
	}
	return n
}

// Advance moves the time by d, firing the timers that fall due in order.
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	end := c.now.Add(d)
	c.mu.Unlock()
	for {
		c.mu.Lock()
		var next *fakeTimer
		for _, t := range c.timers {
			if !t.stopped && !t.at.After(end) && (next == nil || t.at.Before(next.at)) {
				next = t
			}
		}
		if next == nil {
			c.now = end
			c.mu.Unlock()
			return
		}
		c.now, next.stopped = next.at, true
		c.mu.Unlock()
		next.f()
	}
}

// testServer is one server of testBackend: its name and the keys that
// differ from the defaults.
type testServer struct {
	name      string
	weight    int
	backup    bool
	maxconn   int
	slowstart time.Duration
}

// testBackend builds a backend without listeners, with a fake clock.
func testBackend(t *testing.T, bc conf.Backend, servers ...testServer) (*Backend, *fakeClock) {
	t.Helper()
	if bc.Name == "" {
		bc.Name = "web"
	}
	if bc.Mode == "" {
		bc.Mode = conf.ModeHTTP
	}
	if bc.Balance == "" {
		bc.Balance = "roundrobin"
	}
	for _, s := range servers {
		w := s.weight
		if w == 0 {
			w = 1
		}
		bc.Servers = append(bc.Servers, &conf.Server{Name: s.name, Address: "127.0.0.1:1", Weight: w,
			Backup: s.backup, MaxConn: s.maxconn, Slowstart: s.slowstart})
	}
	b, err := newBackend(1, &bc)
	if err != nil {
		t.Fatal(err)
	}
	clk := newFakeClock()
	b.mu.Lock()
	b.clock = clk
	b.mu.Unlock()
	return b, clk
}

// picks assigns and releases n sessions and returns the servers' names.
func picks(b *Backend, n int) []string {
	var got []string
	for range n {
		s := b.assign(&lb.Request{}, nil, time.Now())
		if s == nil {
			got = append(got, "-")
			continue
		}
		got = append(got, s.Name)
		b.unassign(s)
	}
	return got
}

func TestBackupServers(t *testing.T) {
	for _, all := range []bool{false, true} {
		t.Run(fmt.Sprintf("allbackups=%v", all), func(t *testing.T) {
			b, _ := testBackend(t, conf.Backend{AllBackups: all},
				testServer{name: "s1"}, testServer{name: "s2"},
				testServer{name: "b1", backup: true}, testServer{name: "b2", backup: true, weight: 2})
			steps := []struct {
				do   func()
				want map[string]int // over 6 picks
			}{
				{func() {}, map[string]int{"s1": 3, "s2": 3}},
				{func() { b.SetOp(b.Server("s1"), OpDown) }, map[string]int{"s2": 6}},
				{func() { b.SetAdmin(b.Server("s2"), AdminMaint) },
					map[string]int{"b1": 6}},
				{func() { b.SetOp(b.Server("b1"), OpDown) }, map[string]int{"b2": 6}},
				{func() { b.SetOp(b.Server("b1"), OpUp) }, map[string]int{"b1": 6}},
				{func() { b.SetAdmin(b.Server("s2"), AdminReady) }, map[string]int{"s2": 6}},
			}
			if all {
				steps[2].want = map[string]int{"b1": 2, "b2": 4}
				steps[4].want = map[string]int{"b1": 2, "b2": 4}
			}
			for i, st := range steps {
				st.do()
				if got := tally(picks(b, 6)); fmt.Sprint(got) != fmt.Sprint(st.want) {
					t.Errorf("step %d: got %v, want %v", i, got, st.want)
				}
			}
		})
	}
}

func TestPanicThreshold(t *testing.T) {
	var logs bytes.Buffer
	b, _ := testBackend(t, conf.Backend{PanicThreshold: 50},
		testServer{name: "s1"}, testServer{name: "s2"}, testServer{name: "s3"}, testServer{name: "s4"})
	b.log = zerolog.New(&logs)
	steps := []struct {
		name  string
		do    func()
		want  map[string]int // over 12 picks
		panic bool
	}{
		{"all up", func() {}, map[string]int{"s1": 3, "s2": 3, "s3": 3, "s4": 3}, false},
		{"75% up", func() { b.SetOp(b.Server("s1"), OpDown) }, map[string]int{"s2": 4, "s3": 4, "s4": 4}, false},
		{"50% up: not below", func() { b.SetOp(b.Server("s2"), OpDown) }, map[string]int{"s3": 6, "s4": 6}, false},
		{"25% up: panic", func() { b.SetOp(b.Server("s3"), OpDown) }, map[string]int{"s1": 3, "s2": 3, "s3": 3, "s4": 3}, true},
		{"none up: still panic", func() { b.SetOp(b.Server("s4"), OpDown) }, map[string]int{"s1": 3, "s2": 3, "s3": 3, "s4": 3}, true},
		{"50% up again: out", func() { b.SetOp(b.Server("s1"), OpUp); b.SetOp(b.Server("s2"), OpUp) }, map[string]int{"s1": 6, "s2": 6}, false},
		{"MAINT does not count", func() { b.SetAdmin(b.Server("s3"), AdminMaint); b.SetAdmin(b.Server("s4"), AdminMaint) }, map[string]int{"s1": 6, "s2": 6}, false},
	}
	for _, st := range steps {
		st.do()
		if got := tally(picks(b, 12)); fmt.Sprint(got) != fmt.Sprint(st.want) {
			t.Errorf("%s: got %v, want %v", st.name, got, st.want)
		}
		if b.InPanic() != st.panic {
			t.Errorf("%s: InPanic %v, want %v", st.name, b.InPanic(), st.panic)
		}
	}
	lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], `"entering panic mode`) || !strings.Contains(lines[1], `"leaving panic mode"`) ||
		!strings.Contains(lines[0], `"level":"warn"`) || !strings.Contains(lines[0], `"up":1,"servers":4,"panic_threshold":50`) {
		t.Errorf("got log lines %q, want one entering (up 1 of 4) and one leaving, at warn", lines)
	}
}

func TestPanicThresholdPrefersBackups(t *testing.T) {
	b, _ := testBackend(t, conf.Backend{PanicThreshold: 50},
		testServer{name: "s1"}, testServer{name: "s2"}, testServer{name: "b1", backup: true})
	b.SetOp(b.Server("s1"), OpDown)
	b.SetOp(b.Server("s2"), OpDown)
	if got := tally(picks(b, 4)); fmt.Sprint(got) != fmt.Sprint(map[string]int{"b1": 4}) {
		t.Errorf("no active up, a backup up: got %v, want b1 only", got)
	}
	b.SetOp(b.Server("b1"), OpDown)
	if got := tally(picks(b, 4)); fmt.Sprint(got) != fmt.Sprint(map[string]int{"s1": 2, "s2": 2}) || !b.InPanic() {
		t.Errorf("nothing up: got %v (panic %v), want s1 and s2 in panic", got, b.InPanic())
	}
}

// TestSlowstart: a server coming back up ramps its weight and maxconn
// over slowstart as HAProxy 2.6 does (server_recalc_eweight: a sixteenth
// of the weight times 1 + floor(16 x elapsed / slowstart);
// srv_dynamic_maxconn: max(1, maxconn x floor(100 x elapsed / slowstart)
// / 100)), in steps driven by the clock; a server that is up at start does
// not ramp.
func TestSlowstart(t *testing.T) {
	b, clk := testBackend(t, conf.Backend{},
		testServer{name: "s1", weight: 10},
		testServer{name: "s2", weight: 10, maxconn: 100, slowstart: 10 * time.Second})
	s2 := b.Server("s2")
	if s2.lb.Weight != 160 || s2.lb.MaxConn.Load() != 100 || clk.pending() != 0 {
		t.Fatalf("at start: weight %d maxconn %d, %d timers; want 160, 100, none", s2.lb.Weight, s2.lb.MaxConn.Load(), clk.pending())
	}
	b.SetOp(s2, OpDown)
	b.SetOp(s2, OpUp)
	cases := []struct {
		after   time.Duration // since the server came up
		weight  int           // lb units (16 per point)
		eweight int           // shown
		maxconn int64
	}{
		{0, 10, 1, 1},
		{2500 * time.Millisecond, 50, 4, 25},
		{5 * time.Second, 90, 6, 50},
		{9 * time.Second, 150, 10, 90},
		{10 * time.Second, 160, 10, 100},
	}
	elapsed := time.Duration(0)
	for _, tc := range cases {
		clk.Advance(tc.after - elapsed)
		elapsed = tc.after
		b.mu.Lock()
		w, ew := s2.lb.Weight, shownWeight(s2.bal.eweight)
		b.mu.Unlock()
		if w != tc.weight || ew != tc.eweight || s2.lb.MaxConn.Load() != tc.maxconn {
			t.Errorf("after %v: weight %d (shown %d), maxconn %d; want %d (%d), %d",
				tc.after, w, ew, s2.lb.MaxConn.Load(), tc.weight, tc.eweight, tc.maxconn)
		}
	}
	if clk.pending() != 0 {
		t.Errorf("%d slowstart timers left after the ramp", clk.pending())
	}
	// Half-way, picks follow the ramped weights: 160 to 90 over 250 picks.
	b.SetOp(s2, OpDown)
	b.SetOp(s2, OpUp)
	clk.Advance(5 * time.Second)
	if got := tally(picks(b, 250)); fmt.Sprint(got) != fmt.Sprint(map[string]int{"s1": 160, "s2": 90}) {
		t.Errorf("half-way: got %v, want s1:160 s2:90", got)
	}
}

func TestSlowstartLeavingMaint(t *testing.T) {
	b, clk := testBackend(t, conf.Backend{}, testServer{name: "s1", weight: 4, slowstart: 4 * time.Second})
	s1 := b.Server("s1")
	b.SetAdmin(s1, AdminMaint)
	b.SetAdmin(s1, AdminReady)
	clk.Advance(time.Second)
	if s1.lb.Weight != 20 { // 4 x (1 + 16/4) sixteenths
		t.Errorf("1s of 4s: weight %d, want 20", s1.lb.Weight)
	}
}

// TestSlowstartStatic: static algorithms ramp maxconn, not the weight.
func TestSlowstartStatic(t *testing.T) {
	b, clk := testBackend(t, conf.Backend{Balance: "static-rr"},
		testServer{name: "s1", weight: 2, maxconn: 10, slowstart: 10 * time.Second})
	s1 := b.Server("s1")
	b.SetOp(s1, OpDown)
	b.SetOp(s1, OpUp)
	clk.Advance(3 * time.Second)
	if s1.lb.Weight != 32 || s1.lb.MaxConn.Load() != 3 {
		t.Errorf("weight %d maxconn %d, want 32 (full) and 3", s1.lb.Weight, s1.lb.MaxConn.Load())
	}
}

func TestStaticWeightChange(t *testing.T) {
	cases := []struct {
		balance, hashType string
		dynamic           bool
	}{
		{"static-rr", "", false},
		{"uri", "map-based", false},
		{"uri", "consistent", true},
		{"roundrobin", "", true},
		{"first", "", true},
	}
	for _, tc := range cases {
		b, _ := testBackend(t, conf.Backend{Balance: tc.balance, HashType: tc.hashType}, testServer{name: "s1", weight: 4})
		s := b.Server("s1")
		_, err := b.SetWeight(s, 2)
		if b.Dynamic() != tc.dynamic || tc.dynamic != (err == nil) || !tc.dynamic && !errors.Is(err, ErrStaticWeight) {
			t.Errorf("%s %s: Dynamic %v, SetWeight(2): %v", tc.balance, tc.hashType, b.Dynamic(), err)
		}
		for _, w := range []int{0, 4} { // 0% and 100% always
			if _, err := b.SetWeight(s, w); err != nil {
				t.Errorf("%s: SetWeight(%d): %v", tc.balance, w, err)
			}
		}
	}
}

func TestNewBackendChecks(t *testing.T) {
	cases := []struct {
		bc   conf.Backend
		want string
	}{
		{conf.Backend{Name: "t", Mode: conf.ModeTCP, Balance: "uri"}, `backend "t": balance "uri" needs mode http`},
		{conf.Backend{Name: "t", Mode: conf.ModeTCP, Balance: "hash path"}, `backend "t": balance "hash path" needs mode http`},
		{conf.Backend{Name: "t", Balance: "fastest"}, `backend "t": balance: unknown algorithm "fastest"`},
		{conf.Backend{Name: "t", Balance: "rdp-cookie"}, `backend "t": balance: rdp-cookie: not supported yet`},
		{conf.Backend{Name: "t", Balance: "source", HashType: "ring"}, `backend "t": hash_type: must be`},
	}
	for _, tc := range cases {
		_, err := newBackend(1, &tc.bc)
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%+v: got %v, want %s...", tc.bc, err, tc.want)
		}
	}
	for _, ok := range []conf.Backend{
		{Name: "t", Mode: conf.ModeTCP, Balance: "source"},
		{Name: "t", Mode: conf.ModeTCP, Balance: "hash src"},
		{Name: "t", Mode: conf.ModeTCP, Balance: "random(3)"},
	} {
		if _, err := newBackend(1, &ok); err != nil {
			t.Errorf("%s in tcp: %v", ok.Balance, err)
		}
	}
}

// expectedFree is b.free recomputed from scratch.
func expectedFree(b *Backend) int64 {
	n := int64(0)
	for _, s := range b.Servers() {
		s.bal.mu.Lock()
		if s.bal.inSet && !s.lb.Full() {
			n++
		}
		s.bal.mu.Unlock()
	}
	return n
}

// TestAssignProperty: under random sequences of health, admin, weight and
// maxconn changes, sessions starting and ending, no algorithm is ever made
// to give a session to a server that is DOWN, stopping, in MAINT or DRAIN,
// of weight 0, or full; to a backup while an active server is usable; and
// assign fails only when no usable server has a free slot, or when a
// hashing algorithm keeps the request on its key's server, which must then
// be usable and full (hash_preserve_affinity). The free-slot count stays
// exact throughout.
func TestAssignProperty(t *testing.T) {
	algos := []struct{ balance, hash string }{
		{"roundrobin", ""}, {"static-rr", ""}, {"leastconn", ""}, {"first", ""},
		{"source", "map-based"}, {"uri", "consistent"}, {"hdr(X-K)", "consistent"},
		{"random", ""}, {"random(1)", ""}, {"url_param k", "consistent"},
	}
	rapid.Check(t, func(rt *rapid.T) {
		a := algos[rapid.IntRange(0, len(algos)-1).Draw(rt, "algorithm")]
		bc := conf.Backend{Name: "web", Mode: conf.ModeHTTP, Balance: a.balance, HashType: a.hash,
			AllBackups: rapid.Bool().Draw(rt, "allbackups")}
		if rapid.Bool().Draw(rt, "bounded") && a.hash == "consistent" {
			bc.HashBalanceFactor = 125
		}
		bc.HashPreserveAffinity = rapid.SampledFrom([]string{"always", "maxconn", "maxqueue"}).Draw(rt, "affinity")
		n := rapid.IntRange(1, 6).Draw(rt, "servers")
		for i := range n {
			bc.Servers = append(bc.Servers, &conf.Server{Name: fmt.Sprintf("s%d", i+1), Address: "127.0.0.1:1",
				Weight: rapid.IntRange(1, 3).Draw(rt, "weight"), Backup: rapid.Bool().Draw(rt, "backup"),
				MaxConn: rapid.IntRange(0, 2).Draw(rt, "maxconn")})
		}
		b, err := newBackend(1, &bc)
		if err != nil {
			rt.Fatal(err)
		}
		var inflight []*Server
		server := func(rt *rapid.T) *Server { return b.Servers()[rapid.IntRange(0, n-1).Draw(rt, "server")] }
		usable := func(s *Server) bool {
			return s.Op() == OpUp && s.Admin() == AdminReady && s.UserWeight.Load() > 0
		}
		rt.Repeat(map[string]func(*rapid.T){
			"op": func(rt *rapid.T) {
				b.SetOp(server(rt), OpState(rapid.IntRange(0, 2).Draw(rt, "op")))
			},
			"admin": func(rt *rapid.T) {
				b.SetAdmin(server(rt), AdminState(rapid.IntRange(0, 2).Draw(rt, "admin")))
			},
			"weight": func(rt *rapid.T) {
				s := server(rt)
				w := rapid.IntRange(0, 3).Draw(rt, "weight")
				if !b.Dynamic() && w != 0 {
					w = s.InitialWeight
				}
				if _, err := b.SetWeight(s, w); err != nil {
					rt.Fatal(err)
				}
			},
			"maxconn": func(rt *rapid.T) {
				b.SetMaxConn(server(rt), rapid.IntRange(0, 2).Draw(rt, "maxconn"))
			},
			"assign": func(rt *rapid.T) {
				r := &lb.Request{Path: fmt.Sprintf("/%d", rapid.IntRange(0, 9).Draw(rt, "path")),
					Query:   fmt.Sprintf("k=%d", rapid.IntRange(0, 3).Draw(rt, "k")),
					Headers: nil}
				anyActive := slices.ContainsFunc(b.Servers(), func(s *Server) bool { return !s.Conf.Backup && usable(s) })
				free := slices.ContainsFunc(b.Servers(), func(s *Server) bool {
					return usable(s) && (anyActive != s.Conf.Backup) && !s.lb.Full()
				})
				s, q := b.assignOrQueue(r, nil, time.Now())
				switch {
				case s == nil && q != nil:
					if !usable(q) || q.Conf.Backup && anyActive || !q.lb.Full() && b.queue.Len(q.ID-1) == 0 {
						rt.Fatalf("kept on %s: usable %v, backup %v, %d/%d sessions", q.Name, usable(q), q.Conf.Backup,
							q.lb.Cur.Load(), q.lb.MaxConn.Load())
					}
					return
				case s == nil:
					if free && (bc.AllBackups || anyActive) {
						rt.Fatalf("no server assigned with a free usable one")
					}
					return
				case !usable(s):
					rt.Fatalf("assigned %s: op %v admin %v weight %d", s.Name, s.Op(), s.Admin(), s.UserWeight.Load())
				case s.Conf.Backup && anyActive:
					rt.Fatalf("assigned backup %s while an active server is usable", s.Name)
				case s.lb.MaxConn.Load() > 0 && s.lb.Cur.Load() > s.lb.MaxConn.Load():
					rt.Fatalf("assigned %s beyond its maxconn: %d/%d", s.Name, s.lb.Cur.Load(), s.lb.MaxConn.Load())
				}
				inflight = append(inflight, s)
			},
			"unassign": func(rt *rapid.T) {
				if len(inflight) == 0 {
					rt.Skip("nothing in flight")
				}
				i := rapid.IntRange(0, len(inflight)-1).Draw(rt, "session")
				b.unassign(inflight[i])
				inflight = slices.Delete(inflight, i, i+1)
			},
			"": func(rt *rapid.T) { // after every step
				if got, want := b.free.Load(), expectedFree(b); got != want {
					rt.Fatalf("free: got %d, want %d", got, want)
				}
				for _, s := range b.Servers() {
					held := int64(0)
					for _, h := range inflight {
						if h == s {
							held++
						}
					}
					if s.lb.Cur.Load() != held || s.Counters.Scur.Load() != held {
						rt.Fatalf("%s: Cur %d, scur %d, want %d", s.Name, s.lb.Cur.Load(), s.Counters.Scur.Load(), held)
					}
				}
			},
		})
	})
}

// TestAssignConcurrent: sessions from several goroutines on servers with a
// maxconn, while states flip: no server ever holds more than its maxconn,
// and once quiet the free-slot count is exact.
func TestAssignConcurrent(t *testing.T) {
	for _, balance := range []string{"roundrobin", "leastconn", "first", "random", "static-rr"} {
		t.Run(balance, func(t *testing.T) {
			b, _ := testBackend(t, conf.Backend{Balance: balance},
				testServer{name: "s1", maxconn: 2}, testServer{name: "s2", maxconn: 3, weight: 2},
				testServer{name: "s3", maxconn: 1}, testServer{name: "s4"})
			var wg sync.WaitGroup
			errs := make(chan string, 4)
			for range 4 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					var mine []*Server
					for i := range 2000 {
						if s := b.assign(&lb.Request{}, nil, time.Now()); s != nil {
							if m := s.lb.MaxConn.Load(); m > 0 && s.lb.Cur.Load() > m {
								select {
								case errs <- fmt.Sprintf("%s holds %d, maxconn %d", s.Name, s.lb.Cur.Load(), m):
								default:
								}
							}
							mine = append(mine, s)
						}
						if len(mine) > 2 || i%3 == 0 && len(mine) > 0 {
							b.unassign(mine[0])
							mine = mine[1:]
						}
					}
					for _, s := range mine {
						b.unassign(s)
					}
				}()
			}
			for i := range 100 {
				s := b.Servers()[i%4]
				b.SetOp(s, OpDown)
				b.SetOp(s, OpUp)
			}
			wg.Wait()
			close(errs)
			for e := range errs {
				t.Error(e)
			}
			if got, want := b.free.Load(), expectedFree(b); got != want || got != 4 {
				t.Errorf("free when quiet: got %d, want %d (all 4)", got, want)
			}
			for _, s := range b.Servers() {
				if c := s.lb.Cur.Load(); c != 0 {
					t.Errorf("%s: %d sessions left", s.Name, c)
				}
			}
		})
	}
}

// TestSlowstartQuarterShare is issue 4's case: 1 s after coming UP with
// slowstart 4s, a roundrobin server gets about a quarter of its normal
// share: HAProxy's 1/16 + floor(16 x 1/4)/16 = 5/16 of its weight (issue
// 16: HAProxy 2.6 shows weight 32 of 100 at 5 s of a 20 s slowstart).
func TestSlowstartQuarterShare(t *testing.T) {
	b, clk := testBackend(t, conf.Backend{},
		testServer{name: "s1", weight: 8},
		testServer{name: "s2", weight: 8, slowstart: 4 * time.Second})
	s2 := b.Server("s2")
	b.SetOp(s2, OpDown)
	b.SetOp(s2, OpUp)
	clk.Advance(time.Second)
	// s2 at 5/16 of weight 8: 16 picks for s1 to 5 for s2.
	if got := tally(picks(b, 210)); fmt.Sprint(got) != fmt.Sprint(map[string]int{"s1": 160, "s2": 50}) {
		t.Errorf("1s of 4s: got %v, want s1:160 s2:50", got)
	}
}
