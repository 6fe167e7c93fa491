package check

import (
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/fulcrum-proxy/fulcrum/proxy"
)

// switchable is an HTTP server that can stop listening and start again on
// the same address, as a backend process that dies and comes back.
type switchable struct {
	t    *testing.T
	addr string
	l    net.Listener
	srv  *http.Server
}

func newSwitchable(t *testing.T, name string) *switchable {
	s := &switchable{t: t, addr: "127.0.0.1:0"}
	s.start(name)
	t.Cleanup(s.stop)
	return s
}

func (s *switchable) start(name string) {
	l, err := net.Listen("tcp", s.addr)
	if err != nil {
		s.t.Fatalf("listen %s: %v", s.addr, err)
	}
	s.addr = l.Addr().String()
	s.l = l
	s.srv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(name + "\n"))
	})}
	go s.srv.Serve(l)
}

func (s *switchable) stop() {
	if s.srv != nil {
		// Close the listener itself: the kernel accepts connections as soon
		// as it listens, and srv.Close does not close a listener Serve has
		// not reached yet, so a probe could still connect after stop.
		s.l.Close()
		s.srv.Close()
		s.srv = nil
	}
}

// checkRow is what one step of a health timeline must show.
type checkRow struct {
	status       string
	checkStatus  string
	health       int
	failed, down int64
	op           proxy.OpState
}

func (h *harness) expect(name string, want checkRow) {
	h.t.Helper()
	s := h.server(name)
	if s.Check == nil {
		h.t.Fatalf("%s: no check state in the snapshot", name)
	}
	got := checkRow{s.Status(), s.Check.Status, s.Check.Health, s.Check.Failed, s.Check.Downs, s.Op}
	if got != want {
		h.t.Fatalf("%s: got %+v, want %+v", name, got, want)
	}
}

// TestFallRise: a server that starts refusing connections goes DOWN after
// exactly fall failed checks (UP 2/3, UP 1/3, DOWN), probed at fastinter
// while going down and downinter while down; traffic then goes to the other
// server only; it comes back UP after exactly rise passing checks (DOWN
// 1/2, UP). Counters and codes as health-counters.txt.
func TestFallRise(t *testing.T) {
	s1 := newSwitchable(t, "s1")
	s2 := newUpstream(t, "s2")
	cfg := testConfig(s1.addr, s2.addr())
	cfg.Backends[0].Servers[1].Check = false
	h := newHarness(t, cfg)

	if ev := h.next(); ev.r.Status != StatusL4OK {
		t.Fatalf("first check: got %v, want L4OK", ev.r.Status)
	}
	h.expect("s1", checkRow{"UP", "L4OK", 4, 0, 0, proxy.OpUp})
	if s2 := h.server("s2"); s2.Status() != "no check" {
		t.Errorf("s2 without check: got %q, want \"no check\"", s2.Status())
	}

	s1.stop()
	steps := []struct {
		after time.Duration
		want  checkRow
	}{
		{time.Second, checkRow{"UP 2/3", "L4CON", 3, 1, 0, proxy.OpUp}},
		{250 * time.Millisecond, checkRow{"UP 1/3", "L4CON", 2, 2, 0, proxy.OpUp}},
		{250 * time.Millisecond, checkRow{"DOWN", "L4CON", 0, 3, 1, proxy.OpDown}},
	}
	for i, st := range steps {
		h.step(1, st.after)
		h.expect("s1", st.want)
		if i < 2 && h.server("s1").EffectiveWeight == 0 {
			t.Fatalf("step %d: s1 out of the usable set before fall failures", i)
		}
	}
	if info := h.server("s1").Check.Info; info != "Connection refused" {
		t.Errorf("last_chk: got %q, want \"Connection refused\"", info)
	}
	for i := 0; i < 4; i++ {
		if _, body := get(t, h.addr); body != "s2" {
			t.Fatalf("request %d while s1 is DOWN: got %q, want s2", i, body)
		}
	}
	logs := h.logs.String()
	if want := `Server web/s1 is DOWN, reason: Layer4 connection problem, info: \"Connection refused\", check duration: `; !strings.Contains(logs, want) {
		t.Errorf("log: no %q in\n%s", want, logs)
	}
	if want := `1 active and 0 backup servers left. 0 sessions active, 0 requeued, 0 remaining in queue.`; !strings.Contains(logs, want) {
		t.Errorf("log: no %q in\n%s", want, logs)
	}

	s1.start("s1")
	h.step(1, 2*time.Second)
	h.expect("s1", checkRow{"DOWN 1/2", "L4OK", 1, 3, 1, proxy.OpDown})
	h.step(1, 250*time.Millisecond)
	h.expect("s1", checkRow{"UP", "L4OK", 4, 3, 1, proxy.OpUp})
	if !strings.Contains(h.logs.String(), `Server web/s1 is UP, reason: Layer4 check passed, check duration: `) {
		t.Errorf("log: no UP line in\n%s", h.logs.String())
	}
	seen := map[string]int{}
	for i := 0; i < 4; i++ {
		_, body := get(t, h.addr)
		seen[body]++
	}
	if seen["s1"] != 2 || seen["s2"] != 2 {
		t.Errorf("traffic after s1 is back: got %v, want 2 each", seen)
	}
	// Fully UP again: the next check is at inter.
	h.clock.waitTimers(t, 1)
	if got := h.clock.pending()[0]; got != time.Second {
		t.Errorf("interval when UP: got %v, want 1s", got)
	}
}

// TestStartup: a checked server starts UP with health = rise ("UP 1/3"),
// and a failing first check takes it straight DOWN (health-counters.txt).
func TestStartup(t *testing.T) {
	cfg := testConfig(closedAddr(t))
	p, err := proxy.New(cfg, nopLog)
	if err != nil {
		t.Fatal(err)
	}
	Of(p.Backends[0].Servers()[0]) // state without a running checker
	s := &p.Snapshot().Backends[0].Servers[0]
	if got := s.Status(); got != "UP 1/3" || s.Check.Status != "INI" || s.Check.Health != 2 {
		t.Fatalf("before the first check: got %q %s health %d, want \"UP 1/3\" INI 2", got, s.Check.Status, s.Check.Health)
	}

	h := newHarness(t, testConfig(closedAddr(t)))
	h.next()
	h.expect("s1", checkRow{"DOWN", "L4CON", 0, 1, 1, proxy.OpDown})
	h.clock.waitTimers(t, 1)
	if got := h.clock.pending()[0]; got != 2*time.Second {
		t.Errorf("interval when DOWN: got %v, want downinter 2s", got)
	}
}

// TestNoCheck: check = false is always UP, shown "no check", and nothing
// probes it.
func TestNoCheck(t *testing.T) {
	cfg := testConfig(closedAddr(t))
	cfg.Backends[0].Servers[0].Check = false
	h := newHarness(t, cfg)
	if n := len(h.c.Servers()); n != 0 {
		t.Fatalf("checked servers: got %d, want 0", n)
	}
	s := h.server("s1")
	if s.Status() != "no check" || s.Check != nil || s.Op != proxy.OpUp {
		t.Errorf("got %q check %v op %v, want \"no check\" nil UP", s.Status(), s.Check, s.Op)
	}
}

// TestRuntimeHealth: `set server health down|up|stopping`, `disable
// health` and `enable health`, and maintenance from the Runtime API, as
// set-server-state.txt shows them.
func TestRuntimeHealth(t *testing.T) {
	u := newUpstream(t, "s1")
	h := newHarness(t, testConfig(u.addr()))
	h.next()
	cs := Of(h.p.Backends[0].Servers()[0])

	cs.SetHealth(HealthDown)
	h.expect("s1", checkRow{"DOWN", "L4OK", 0, 0, 1, proxy.OpDown})
	cs.SetHealth(HealthUp)
	h.expect("s1", checkRow{"UP", "L4OK", 4, 0, 1, proxy.OpUp})
	cs.SetHealth(HealthStopping)
	h.expect("s1", checkRow{"NOLB", "L4OK", 4, 0, 1, proxy.OpStopping})
	cs.SetHealth(HealthUp)

	cs.SetAdmin(proxy.AdminMaint)
	s := h.server("s1")
	if s.Status() != "MAINT" || !s.Check.Paused || s.Check.Status != "" || s.Check.Downs != 2 || s.HealthState.CheckHealth != 0 {
		t.Fatalf("MAINT: got %q paused %v status %q chkdown %d health %d", s.Status(), s.Check.Paused, s.Check.Status, s.Check.Downs, s.HealthState.CheckHealth)
	}
	cs.SetAdmin(proxy.AdminReady)
	h.expect("s1", checkRow{"UP 1/3", "L4OK", 2, 0, 2, proxy.OpUp})

	cs.DisableHealth()
	if s := h.server("s1"); s.Status() != "no check" || s.Check != nil {
		t.Fatalf("disable health: got %q", s.Status())
	}
	if err := cs.EnableHealth(); err != nil {
		t.Fatal(err)
	}
	if err := cs.SetAgent(true); err != ErrAgentNotEnabled {
		t.Errorf("agent up without agent: got %v, want ErrAgentNotEnabled", err)
	}
	if err := cs.EnableAgent(); err != ErrAgentNotConfigured {
		t.Errorf("enable agent without agent: got %v, want ErrAgentNotConfigured", err)
	}
}
