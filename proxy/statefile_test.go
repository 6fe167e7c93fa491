package proxy

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/fulcrum-proxy/fulcrum/conf"
)

const stateHeader = "1\n# be_id be_name srv_id srv_name srv_addr srv_op_state srv_admin_state srv_uweight srv_iweight srv_time_since_last_change srv_check_status srv_check_result srv_check_health srv_check_state srv_agent_state bk_f_forced_id srv_f_forced_id srv_fqdn srv_port srvrecord srv_use_ssl srv_check_port srv_check_addr srv_agent_addr srv_agent_port\n"

// stateLine is one server line of stateHeader's columns.
func stateLine(srv string, op, admin, uw, iw, health int) string {
	return strings.Join([]string{"1", "web", "1", srv, "127.0.0.1", itoa(op), itoa(admin), itoa(uw), itoa(iw),
		"5", "6", "3", itoa(health), "6", "0", "0", "0", "-", "1", "-", "0", "0", "-", "-", "0"}, " ") + "\n"
}

func itoa(n int) string { return strconv.Itoa(n) }

// TestLoadServerState restores what operators set (and the checks'
// verdict) from a server-state file, by name, the file winning only where
// the configuration did not change.
func TestLoadServerState(t *testing.T) {
	cfg := testConfig(conf.ModeHTTP, []string{"127.0.0.1:1", "127.0.0.1:2", "127.0.0.1:3", "127.0.0.1:4"}, []int{10, 10, 20, 10})
	cfg.Backends[0].Servers[3].Check = true
	cfg.Backends[0].Check = &conf.Check{Type: "tcp", Rise: 2, Fall: 3}
	p, err := New(cfg, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer p.Shutdown(context.Background())
	file := stateHeader +
		stateLine("s1", 0, 0x01, 10, 10, 0) + // MAINT by an operator
		stateLine("s2", 2, 0x08, 4, 10, 2) + // DRAIN, weight 4
		stateLine("s3", 2, 0, 4, 10, 2) + // weight 4 but the file now says 20
		stateLine("s4", 0, 0, 10, 10, 1) + // DOWN by its checks
		stateLine("gone", 2, 0x01, 1, 1, 0) // no longer configured
	res, err := p.LoadServerState(strings.NewReader(file))
	if err != nil {
		t.Fatal(err)
	}
	b := p.Backends[0]
	tests := []struct {
		name      string
		got, want any
	}{
		{"applied", res.Applied, 4},
		{"skipped", res.Skipped, 1},
		{"s1 admin", b.Servers()[0].Admin(), AdminMaint},
		{"s2 admin", b.Servers()[1].Admin(), AdminDrain},
		{"s2 weight", b.Servers()[1].UserWeight.Load(), int32(4)},
		{"s3 weight (configured weight changed)", b.Servers()[2].UserWeight.Load(), int32(20)},
		{"s3 admin", b.Servers()[2].Admin(), AdminReady},
		{"s1 op (not checked: UP)", b.Servers()[0].Op(), OpUp},
		{"s4 op", b.Servers()[3].Op(), OpDown},
		{"checks returned", len(res.Checks), 1},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s: got %v, want %v", tt.name, tt.got, tt.want)
		}
	}
	if len(res.Checks) == 1 && (res.Checks[0].Server != b.Servers()[3] || res.Checks[0].CheckHealth != 1) {
		t.Errorf("checks: got %+v, want s4 with health 1", res.Checks[0])
	}
}

// TestLoadServerStateErrors: a malformed file changes nothing.
func TestLoadServerStateErrors(t *testing.T) {
	tests := []struct {
		name, file, want string
	}{
		{"version", "2\n", "unsupported state file version"},
		{"no header", "1\n1 web 1 s1\n", "no \"# be_id be_name ...\" header"},
		{"short line", stateHeader + "1 web 1 s1\n", "no srv_admin_state field"},
		{"not a number", stateHeader + strings.Replace(stateLine("s1", 2, 1, 10, 10, 2), " 1 10 10 ", " x 10 10 ", 1), "srv_admin_state"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := New(testConfig(conf.ModeHTTP, []string{"127.0.0.1:1"}, nil), zerolog.Nop())
			if err != nil {
				t.Fatal(err)
			}
			defer p.Shutdown(context.Background())
			_, err = p.LoadServerState(strings.NewReader(tt.file))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v, want an error with %q", err, tt.want)
			}
			if got := p.Backends[0].Servers()[0].Admin(); got != AdminReady {
				t.Errorf("s1 admin after an error: got %v, want READY", got)
			}
		})
	}
}
