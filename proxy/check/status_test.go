package check

import (
	"testing"

	"github.com/fulcrum-proxy/fulcrum/proxy"
)

// TestServerStatus: proxy.ServerSnapshot.Status gives HAProxy's status
// strings byte for byte (stats-csv.md section 3).
func TestServerStatus(t *testing.T) {
	ck := func(health int) *proxy.CheckSnapshot { return &proxy.CheckSnapshot{Rise: 2, Fall: 3, Health: health} }
	ag := func(health int) *proxy.AgentSnapshot { return &proxy.AgentSnapshot{Rise: 1, Fall: 1, Health: health} }
	tests := []struct {
		name string
		s    proxy.ServerSnapshot
		want string
	}{
		{"up", proxy.ServerSnapshot{Check: ck(4)}, "UP"},
		{"up going down", proxy.ServerSnapshot{Check: ck(3)}, "UP 2/3"},
		{"up 1/3", proxy.ServerSnapshot{Check: ck(2)}, "UP 1/3"},
		{"no check", proxy.ServerSnapshot{}, "no check"},
		{"no check with agent", proxy.ServerSnapshot{Agent: ag(1)}, "no check"},
		{"maint wins", proxy.ServerSnapshot{Admin: proxy.AdminMaint, Op: proxy.OpDown, Check: ck(0)}, "MAINT"},
		{"drain agent", proxy.ServerSnapshot{Admin: proxy.AdminDrain, Check: ck(3), Agent: ag(1)}, "DRAIN (agent)"},
		{"drain going down", proxy.ServerSnapshot{Admin: proxy.AdminDrain, Check: ck(3)}, "DRAIN 2/3"},
		{"drain", proxy.ServerSnapshot{Admin: proxy.AdminDrain}, "DRAIN"},
		{"nolb", proxy.ServerSnapshot{Op: proxy.OpStopping, Check: ck(4)}, "NOLB"},
		{"nolb going down", proxy.ServerSnapshot{Op: proxy.OpStopping, Check: ck(2)}, "NOLB 1/3"},
		{"down", proxy.ServerSnapshot{Op: proxy.OpDown, Check: ck(0)}, "DOWN"},
		{"down going up", proxy.ServerSnapshot{Op: proxy.OpDown, Check: ck(1)}, "DOWN 1/2"},
		{"down agent", proxy.ServerSnapshot{Op: proxy.OpDown, Check: ck(4), Agent: ag(0)}, "DOWN (agent)"},
		{"down unchecked", proxy.ServerSnapshot{Op: proxy.OpDown}, "DOWN"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.s.Status(); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

// TestStatusTable: codes, descriptions and HAProxy's numbers.
func TestStatusTable(t *testing.T) {
	tests := []struct {
		s          Status
		code, desc string
		num        int
		v          Verdict
	}{
		{StatusINI, "INI", "Initializing", 1, VerdictUnknown},
		{StatusCHECKED, "CHECKED", "No status change", 3, VerdictNeutral},
		{StatusHANA, "HANA", "Health analyze", 4, VerdictFailed},
		{StatusL4OK, "L4OK", "Layer4 check passed", 6, VerdictPassed},
		{StatusL4CON, "L4CON", "Layer4 connection problem", 8, VerdictFailed},
		{StatusL7OK, "L7OK", "Layer7 check passed", 15, VerdictPassed},
		{StatusL7STS, "L7STS", "Layer7 wrong status", 17, VerdictFailed},
	}
	for _, tt := range tests {
		if tt.s.String() != tt.code || tt.s.Desc() != tt.desc || int(tt.s) != tt.num || tt.s.Verdict() != tt.v {
			t.Errorf("%s: got %s %q %d %d, want %s %q %d %d", tt.code, tt.s, tt.s.Desc(), int(tt.s), tt.s.Verdict(), tt.code, tt.desc, tt.num, tt.v)
		}
	}
}

// TestRedispatch: a server that refuses connections is skipped without a
// client-visible error when another server is UP (retries 2, redispatch),
// at the first retry, counted in wredis and not wretr, as HAProxy 2.6 (the
// request path's connectServer; see also proxy's TestRedispatch).
func TestRedispatch(t *testing.T) {
	u := newUpstream(t, "s2")
	cfg := testConfig(closedAddr(t), u.addr())
	be := cfg.Backends[0]
	be.Retries, be.Redispatch = 2, true
	be.Servers[0].Check, be.Servers[1].Check = false, false
	h := newHarness(t, cfg)
	for i := 0; i < 4; i++ {
		if code, body := get(t, h.addr); code != 200 || body != "s2" {
			t.Fatalf("request %d: got %d %q, want 200 s2", i, code, body)
		}
	}
	snap := h.p.Snapshot().Backends[0]
	if snap.Wredis == 0 || snap.Wretr != 0 {
		t.Errorf("wretr %d wredis %d, want 0 and more than 0", snap.Wretr, snap.Wredis)
	}
}
