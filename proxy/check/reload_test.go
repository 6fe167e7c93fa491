package check

import (
	"context"
	"testing"
	"time"

	"github.com/fulcrum-proxy/fulcrum/conf"

	"github.com/fulcrum-proxy/fulcrum/proxy"
	"github.com/rs/zerolog"
)

// TestInherit: a reload keeps a server DOWN by its checks DOWN, with its
// counters and last status; a check disabled at runtime stays disabled;
// a new rise/fall keeps the meaning of the counter.
func TestInherit(t *testing.T) {
	withAgent := func(cfg *conf.Config) *conf.Config {
		cfg.Backends[0].Servers[2].Agent = &conf.Agent{Port: 9999, Inter: time.Second}
		return cfg
	}
	old, err := proxy.New(withAgent(testConfig("127.0.0.1:1", "127.0.0.1:2", "127.0.0.1:3")), zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	b := old.Backends[0]
	down := Of(b.Servers()[0])
	down.mu.Lock()
	down.health.health, down.health.status, down.failed, down.downs = 0, StatusL4CON, 7, 2
	down.mu.Unlock()
	b.SetOp(b.Servers()[0], proxy.OpDown)
	disabled := Of(b.Servers()[1])
	disabled.mu.Lock()
	disabled.health.enabled = false
	disabled.mu.Unlock()
	up := Of(b.Servers()[2]) // up, counter at the top (rise+fall-1 = 4)
	up.mu.Lock()
	up.health.health = up.health.max()
	up.agent.enabled, up.agent.status, up.agent.info = false, StatusL7OK, "drain 50%" // agent disabled at runtime
	up.mu.Unlock()

	cfg := withAgent(testConfig("127.0.0.1:1", "127.0.0.1:2", "127.0.0.1:3"))
	cfg.Backends[0].Check.Rise, cfg.Backends[0].Check.Fall = 3, 5
	p, err := proxy.NewFrom(old, cfg, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	Inherit(p, old)
	nb := p.Backends[0]
	s1, s2, s3 := Of(nb.Servers()[0]), Of(nb.Servers()[1]), Of(nb.Servers()[2])
	tests := []struct {
		name      string
		got, want any
	}{
		{"s1 op", nb.Servers()[0].Op(), proxy.OpDown},
		{"s1 health", s1.health.health, 0},
		{"s1 status", s1.health.status, StatusL4CON},
		{"s1 chkfail", s1.failed, int64(7)},
		{"s1 chkdown", s1.downs, int64(2)},
		{"s2 check enabled", s2.health.enabled, false},
		{"s3 health (top of the new counter)", s3.health.health, 3 + 5 - 1},
		{"s3 op", nb.Servers()[2].Op(), proxy.OpUp},
		{"s3 agent enabled", s3.agent.enabled, false},
		{"s3 agent status", s3.agent.status, StatusL7OK},
		{"s3 agent info", s3.agent.info, "drain 50%"},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s: got %v, want %v", tt.name, tt.got, tt.want)
		}
	}
	old.Shutdown(context.Background())
	p.Shutdown(context.Background())
}

// TestRestoreState: the check part of a server-state line (state_file)
// puts back the counter, on the side of rise the server's state is on,
// and a check disabled at runtime.
func TestRestoreState(t *testing.T) {
	p, err := proxy.New(testConfig("127.0.0.1:1", "127.0.0.1:2", "127.0.0.1:3"), zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer p.Shutdown(context.Background())
	b := p.Backends[0]
	b.SetOp(b.Servers()[0], proxy.OpDown) // LoadServerState restored DOWN
	RestoreState([]proxy.SavedChecks{
		{Server: b.Servers()[0], CheckHealth: 4, CheckState: 0x06}, // DOWN wins over a stale counter
		{Server: b.Servers()[1], CheckHealth: 3, CheckState: 0x02}, // configured, not enabled
		{Server: b.Servers()[2], CheckHealth: 0, CheckState: 0x06}, // UP: at least rise
	})
	s1, s2, s3 := Of(b.Servers()[0]), Of(b.Servers()[1]), Of(b.Servers()[2])
	tests := []struct {
		name      string
		got, want any
	}{
		{"s1 health", s1.health.health, 1},
		{"s2 health", s2.health.health, 3},
		{"s2 enabled", s2.health.enabled, false},
		{"s3 health", s3.health.health, 2},
		{"s3 enabled", s3.health.enabled, true},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s: got %v, want %v", tt.name, tt.got, tt.want)
		}
	}
}
