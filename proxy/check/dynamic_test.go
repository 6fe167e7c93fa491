package check

import (
	"testing"
	"time"

	"github.com/fulcrum-proxy/fulcrum/conf"
	"github.com/fulcrum-proxy/fulcrum/proxy"
)

// addChecked adds server name at addr to backend web at runtime, with
// check and its own timings, in MAINT, as `add server web/name addr check
// inter 500 rise 3 fall 2` does.
func (h *harness) addChecked(name, addr string) *proxy.Server {
	h.t.Helper()
	sc, _, err := conf.ParseServerLine(name, []string{addr, "check", "inter", "500", "rise", "3", "fall", "2"}, nil)
	if err != nil {
		h.t.Fatal(err)
	}
	s, err := h.p.AddServer(h.p.Backends[0], sc, 0)
	if err != nil {
		h.t.Fatal(err)
	}
	return s
}

// TestAddedServerChecks: a server added at runtime with `check` starts in
// MAINT with its checks paused, and gets its own timings (inter 500ms,
// rise 3, fall 2); `enable server` does not bring it UP at once, as it
// does a configured server, but after rise passing checks (DOWN, DOWN
// 1/3, DOWN 2/3, UP), the first one at once; only then does it take
// traffic. Deleting it stops its checks.
func TestAddedServerChecks(t *testing.T) {
	s1, n1 := newUpstream(t, "s1"), newUpstream(t, "n1")
	cfg := testConfig(s1.addr())
	ck := cfg.Backends[0].Check // s1 is probed once, then not within the test
	ck.Inter, ck.FastInter, ck.DownInter = time.Hour, time.Hour, time.Hour
	h := newHarness(t, cfg)
	if ev := h.next(); ev.server != "s1" {
		t.Fatalf("first event from %s", ev.server)
	}

	s := h.addChecked("n1", n1.addr())
	cs := Of(s)
	h.expect("n1", checkRow{"MAINT", "", 0, 0, 0, proxy.OpDown})
	if got := len(h.c.Servers()); got != 2 {
		t.Fatalf("the checker checks %d servers, want 2", got)
	}
	// Paused in MAINT: its first probe (at once) does nothing; it sleeps
	// downinter, its own inter.
	h.clock.waitTimers(t, 2)
	if got := h.clock.pending(); got[0] != 500*time.Millisecond {
		t.Fatalf("n1's next probe after %v, want 500ms", got[0])
	}
	h.expect("n1", checkRow{"MAINT", "", 0, 0, 0, proxy.OpDown})

	if old := cs.SetAdmin(proxy.AdminReady); old != proxy.AdminMaint {
		t.Fatalf("previous admin %v", old)
	}
	// Woken at once, then at fastinter (its inter, 500ms) until UP.
	if ev := h.next(); ev.server != "n1" {
		t.Fatalf("event from %s", ev.server)
	}
	h.expect("n1", checkRow{"DOWN 1/3", "L4OK", 1, 0, 0, proxy.OpDown})
	h.step(2, 500*time.Millisecond)
	h.expect("n1", checkRow{"DOWN 2/3", "L4OK", 2, 0, 0, proxy.OpDown})
	if code, body := get(t, h.addr); code != 200 || body != "s1" {
		t.Fatalf("before n1 is UP: %d %q, want s1", code, body)
	}
	h.step(2, 500*time.Millisecond)
	h.expect("n1", checkRow{"UP", "L4OK", 4, 0, 0, proxy.OpUp})
	seen := map[string]bool{}
	for range 4 {
		_, body := get(t, h.addr)
		seen[body] = true
	}
	if !seen["n1"] || !seen["s1"] {
		t.Fatalf("traffic after n1 came UP: %v", seen)
	}
	// Deleted: its loop stops, the checker forgets it. The last
	// request's session ends on the proxy's side after the client read
	// its answer: wait until the server may be deleted.
	cs.SetAdmin(proxy.AdminMaint)
	waitFor(t, 5*time.Second, "n1 removable", func() bool { return s.Backend.Removable(s) == nil })
	if err := h.p.DeleteServer(s); err != nil {
		t.Fatal(err)
	}
	if got := len(h.c.Servers()); got != 1 {
		t.Fatalf("the checker checks %d servers after the delete, want 1", got)
	}
	if got := h.clock.pending(); len(got) != 1 || got[0] != time.Hour {
		t.Fatalf("check timers pending %v, want s1's only", got)
	}
}

// TestAddedServerReadyWithCheck: a server added "enabled" with `check`
// starts READY but DOWN, and comes UP after its checks pass (rise 1: the
// first); one added without check is UP (no check) at once.
func TestAddedServerReadyWithCheck(t *testing.T) {
	s1, n1 := newUpstream(t, "s1"), newUpstream(t, "n1")
	h := newHarness(t, testConfig(s1.addr()))
	sc, _, _ := conf.ParseServerLine("n1", []string{n1.addr(), "check", "rise", "1", "enabled"}, nil)
	s, err := h.p.AddServer(h.p.Backends[0], sc, 0)
	if err != nil {
		t.Fatal(err)
	}
	_ = s
	for {
		if ev := h.next(); ev.server == "n1" {
			break
		}
	}
	h.expect("n1", checkRow{"UP", "L4OK", 3, 0, 0, proxy.OpUp})
	sc2, _, _ := conf.ParseServerLine("n2", []string{n1.addr(), "enabled"}, nil)
	if _, err := h.p.AddServer(h.p.Backends[0], sc2, 0); err != nil {
		t.Fatal(err)
	}
	if st := h.server("n2"); st.Status() != "no check" || st.Op != proxy.OpUp {
		t.Fatalf("n2: %s %v", st.Status(), st.Op)
	}
}
