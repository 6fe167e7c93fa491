package runtime

import (
	"strings"
	"testing"
)

// set server addr with a signed port (HAProxy's port map) or a "port"
// word without a value: HAProxy 2.6.12's replies (measured by a
// fresh-user trial; fulcrum took "+24203" as the port 24203 and ignored
// the empty one). The server keeps its port.
func TestSetServerAddrPortForms(t *testing.T) {
	e := startEnv(t, fuzzConfig)
	const portMap = "can't change <port> to port map because it is incompatible with current health check port configuration (use 'port' statement from the 'server' directive."
	for _, tc := range []struct{ cmd, want string }{
		{"set server web/s1 addr 127.0.0.1 port +2", "no need to change the addr, " + portMap + " by 'stats socket command'\n\n"},
		{"set server web/s1 addr 127.0.0.1 port -1", "no need to change the addr, " + portMap + " by 'stats socket command'\n\n"},
		{"set server web/s1 addr 127.0.0.1 port", "no need to change the addr, problem converting port '' to an int by 'stats socket command'\n\n"},
		{"set server web/s1 addr 127.0.0.1 port 18081", "no need to change the addr, no need to change the port by 'stats socket command'\n\n"},
	} {
		if got := e.run(t, LevelAdmin, tc.cmd); got != tc.want {
			t.Errorf("%s:\n got %q\nwant %q", tc.cmd, got, tc.want)
		}
	}
	if a := e.p.Backends[0].Servers()[0].Addr(); a != "127.0.0.1:18081" {
		t.Errorf("address %s, want 127.0.0.1:18081 kept", a)
	}
}

// srv_check_health of a server without checks: rise (2) at first, 0 once
// it has been in maintenance, as HAProxy 2.6 (measured by a trial: it
// zeroes the counter on entering MAINT, and no check raises it again).
func TestServersStateHealthAfterMaint(t *testing.T) {
	e := startEnv(t, fuzzConfig)
	health := func() string {
		for _, l := range strings.Split(e.run(t, LevelUser, "show servers state web"), "\n") {
			if f := strings.Fields(l); len(f) > 12 && f[3] == "s1" {
				return f[12]
			}
		}
		return "?"
	}
	if h := health(); h != "2" {
		t.Fatalf("before maintenance: srv_check_health %s, want 2", h)
	}
	e.run(t, LevelAdmin, "set server web/s1 state maint")
	e.run(t, LevelAdmin, "set server web/s1 state ready")
	if h := health(); h != "0" {
		t.Errorf("after maint then ready: srv_check_health %s, want 0", h)
	}
}
