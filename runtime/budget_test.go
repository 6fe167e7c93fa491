package runtime

import (
	"fmt"
	"net"
	"testing"
	"time"
)

// TestBudget: the bucket's arithmetic, on explicit times.
func TestBudget(t *testing.T) {
	t0 := time.Now()
	b := &budget{rate: 0.1, burst: 100 * time.Millisecond, tokens: 100 * time.Millisecond, last: t0}
	if w := b.reserve(t0); w != 0 {
		t.Fatalf("a full budget waits %v", w)
	}
	b.spend(t0, 300*time.Millisecond) // a burst of work: 200 ms overdrawn (plus the overhead)
	w := b.reserve(t0)
	if want := time.Duration(float64(200*time.Millisecond+cmdOverhead) / 0.1); w < want || w > want+2*time.Millisecond {
		t.Fatalf("overdrawn by 200 ms at 0.1 s/s: wait %v, want about %v", w, want)
	}
	if w := b.reserve(t0.Add(w)); w != 0 {
		t.Fatalf("after the wait: still %v to wait", w)
	}
	b.reserve(t0.Add(time.Hour)) // a quiet hour refills up to the burst only
	if b.tokens != b.burst-cmdOverhead {
		t.Errorf("after an hour: %v, want the burst less one overhead", b.tokens)
	}
	b.spend(t0.Add(time.Hour), -time.Second) // a clock step never credits
	if b.tokens != b.burst-cmdOverhead {
		t.Errorf("a negative charge credited: %v", b.tokens)
	}
}

// TestBudgetPaces: past its burst, the API makes commands wait, and a
// waiting command gives up when the API closes.
func TestBudgetPaces(t *testing.T) {
	e := startEnv(t, fuzzConfig)
	e.api.budget.spend(time.Now(), e.api.budget.burst+time.Duration(0.3*e.api.budget.rate*float64(time.Second)))
	start := time.Now()
	if got := e.run(t, LevelUser, "show cli level"); got != "user\n\n" {
		t.Fatalf("got %q", got)
	}
	if d := time.Since(start); d < 200*time.Millisecond {
		t.Errorf("an overdrawn budget (0.3 s to earn back) let a command run after %v", d)
	}

	e.api.budget.spend(time.Now(), time.Hour)
	c, err := net.Dial("unix", e.socks[LevelUser])
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.Write([]byte("show cli level\n"))
	time.Sleep(50 * time.Millisecond) // the session waits in admit
	closed := make(chan struct{})
	go func() { e.api.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("Close waited for a command paced by the budget")
	}
}

// TestReloadNotCharged: reload, whose cost grows with the file, does not
// draw on the command budget (the next commands must not wait for it);
// other commands do.
func TestReloadNotCharged(t *testing.T) {
	burn := func() {
		for end := time.Now().Add(30 * time.Millisecond); time.Now().Before(end); {
		}
	}
	e := startEnvOpts(t, fuzzConfig, Options{Reload: func() error { burn(); return nil }})
	tokens := func() time.Duration {
		b := e.api.budget
		b.mu.Lock()
		defer b.mu.Unlock()
		return b.tokens
	}
	full := tokens()
	e.run(t, LevelAdmin, "reload") // burns 30 ms of CPU
	after := tokens()
	if after < full-2*cmdOverhead {
		t.Errorf("budget after reload: %v, want about %v (only the %v of the exchange)", after, full, cmdOverhead)
	}
	e.run(t, LevelUser, "show stat")
	if got := tokens(); got >= after {
		t.Errorf("budget after show stat: %v, want less than %v (charged)", got, after)
	}
}

// TestAddDelServerNotCharged: add server and del server, an
// administrator's deliberate changes that automation sends by the
// thousand (issue 19: 1,000 adds in under 1 s), do not draw on the
// command budget; show stat does.
func TestAddDelServerNotCharged(t *testing.T) {
	e := startEnv(t, fuzzConfig)
	tokens := func() time.Duration {
		b := e.api.budget
		b.mu.Lock()
		defer b.mu.Unlock()
		return b.tokens
	}
	// Nothing is earned back during the test: on a loaded machine the
	// refill over a slow command's wall time exceeded its charge.
	e.api.budget.mu.Lock()
	e.api.budget.rate = 0
	e.api.budget.mu.Unlock()
	full := tokens()
	be := e.p.Backends[0].Name
	for i := range 50 {
		if got := e.run(t, LevelAdmin, fmt.Sprintf("add server %s/n%d 127.0.0.1:%d", be, i, 20000+i)); got != "New server registered.\n\n" {
			t.Fatalf("add server: %q", got)
		}
		if got := e.run(t, LevelAdmin, fmt.Sprintf("del server %s/n%d", be, i)); got != "Server deleted.\n" {
			t.Fatalf("del server: %q", got)
		}
	}
	// Each command is still charged cmdOverhead when admitted, not the
	// CPU time it used (charged, the 100 commands would cost more than
	// twice as much).
	after := tokens()
	if after < full-100*cmdOverhead-2*time.Millisecond {
		t.Errorf("budget after 50 adds and deletes: %v, want at least %v less 100 overheads", after, full)
	}
	e.run(t, LevelUser, "show stat")
	if got := tokens(); got >= after {
		t.Errorf("budget after show stat: %v, want less than %v (charged)", got, after)
	}
}
