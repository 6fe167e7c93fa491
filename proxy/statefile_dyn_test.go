package proxy

import (
	"context"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/fulcrum-proxy/fulcrum/conf"
)

// stateLineID is stateLine with the server's id.
func stateLineID(srv string, id, op, admin, uw, iw int) string {
	f := strings.Fields(stateLine(srv, op, admin, uw, iw, 0))
	f[2] = itoa(id)
	return strings.Join(f, " ") + "\n"
}

// TestLoadServerStateAddsServers: the state file's "# add server" lines
// bring back the servers added at runtime before the state lines apply:
// their id (the state line's srv_id, or an operator's `id`), their
// configuration and state; not when the configuration now defines a
// server of that name (the file wins), nor for a backend that is gone or
// a line that does not read. The backend numbers new servers after the
// ids restored.
func TestLoadServerStateAddsServers(t *testing.T) {
	cfg := testConfig(conf.ModeHTTP, []string{"127.0.0.1:1", "127.0.0.1:2"}, nil)
	cfg.Backends[0].Servers[1].Name = "clash"
	p, err := New(cfg, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer p.Shutdown(context.Background())
	file := stateHeader +
		stateLineID("s1", 1, 2, 0, 1, 1) +
		stateLineID("d1", 7, 2, 0x08, 9, 3) + // DRAIN, weight 9 (configured 3)
		stateLineID("d2", 40, 0, 0x01, 1, 1) + // MAINT, forced id
		stateLineID("clash", 8, 2, 0, 1, 1) +
		"# servers added at runtime (fulcrum), as add server takes them:\n" +
		"# add server web/d1 127.0.0.1:9001 weight 3 check inter 2s enabled\n" +
		"# add server web/d2 127.0.0.1:9002 id 40\n" +
		"# add server web/clash 127.0.0.1:9003 enabled\n" + // the file defines clash now
		"# add server gone/x 127.0.0.1:9004\n" + // no such backend
		"# add server web/bad 127.0.0.1:9005 weight 999\n" + // does not read
		"# a comment\n"
	res, err := p.LoadServerState(strings.NewReader(file))
	if err != nil {
		t.Fatal(err)
	}
	if res.Added != 2 || res.NotAdded != 3 {
		t.Fatalf("added %d, not added %d; want 2 and 3", res.Added, res.NotAdded)
	}
	b := p.Backends[0]
	d1, d2 := b.Server("d1"), b.Server("d2")
	if d1 == nil || d2 == nil {
		t.Fatalf("servers %v", serverNames(b.Servers()))
	}
	for _, c := range []struct {
		name      string
		got, want any
	}{
		{"d1 id (srv_id)", d1.ID, 7},
		{"d1 forced", d1.ForcedID(), false},
		{"d1 admin", d1.Admin(), AdminDrain},
		{"d1 weight", d1.UserWeight.Load(), int32(9)},
		{"d1 check", d1.Conf.Check, true},
		{"d1 addr", d1.Addr(), "127.0.0.1:9001"},
		{"d1 dynamic", d1.Dynamic(), true},
		{"d2 id (forced)", d2.ID, 40},
		{"d2 forced", d2.ForcedID(), true},
		{"d2 admin", d2.Admin(), AdminMaint},
		{"clash stays the file's", b.Server("clash").Dynamic(), false},
	} {
		if c.got != c.want {
			t.Errorf("%s: got %v, want %v", c.name, c.got, c.want)
		}
	}
	n, _ := p.AddServer(b, dynServer("n", 1, false), 0)
	if n.ID != 8 {
		t.Errorf("the next id %d, want 8 (after d1's 7; d2's forced 40 does not count)", n.ID)
	}
	// AddedServerLine writes them as they were read.
	if got := AddedServerLine(d1); got != "# add server web/d1 127.0.0.1:9001 weight 3 check inter 2s enabled" {
		t.Errorf("d1's line: %q", got)
	}
	if got := AddedServerLine(d2); got != "# add server web/d2 127.0.0.1:9002 id 40" {
		t.Errorf("d2's line: %q", got)
	}
}
