package haproxycfg

import (
	"strings"

	"github.com/fulcrum-proxy/fulcrum/conf"
	"testing"
)

// peersCfg has a peers section of two members and a table shared in it;
// global is the global section's lines.
func peersCfg(global string) string {
	return "global\n" + global + `
peers mesh
    peer lb1 127.0.0.1:10001
    peer lb2 127.0.0.1:10002

frontend www
    bind :80
    default_backend app

backend app
    stick-table type ip size 1k peers mesh
    stick on src
    server s1 10.0.0.1:80
`
}

// TestImportLocalPeer: for a given instance (check and run of an
// haproxy.cfg), a peers section without a peer of that instance's name
// is removed, as HAProxy 2.6 does, and its table is kept unshared; the
// name is --localpeer, else the global localpeer, else the host name. For
// fulcrum import (no instance), the section is kept as written.
func TestImportLocalPeer(t *testing.T) {
	const removed = `peers: ignored: HAProxy 2.6 removes this section too: no peer is named "vm"`
	for _, tc := range []struct {
		name, global string
		opt          Options
		kept         bool
		noteHas      string
	}{
		{"import keeps it", "", Options{}, true, ""},
		{"host name is a peer", "", Options{HostName: "lb1"}, true, ""},
		{"host name is not", "", Options{HostName: "vm"}, false, removed},
		{"global localpeer over the host name", "    localpeer lb2", Options{HostName: "vm"}, true, ""},
		{"--localpeer over the global localpeer", "    localpeer lb2", Options{LocalPeer: "vm", HostName: "lb1"}, false, removed},
		{"--localpeer a peer", "    localpeer vm", Options{LocalPeer: "lb1", HostName: "vm"}, true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.opt.Name = "h.cfg"
			r, err := Import([]byte(peersCfg(tc.global)), tc.opt)
			if err != nil {
				t.Fatal(err)
			}
			text := string(r.TOML)
			notes := notesText("h.cfg", r)
			if got := strings.Contains(text, "\n[[peers]]\n"); got != tc.kept {
				t.Errorf("[[peers]] kept = %v, want %v:\n%s", got, tc.kept, text)
			}
			if got := strings.Contains(text, `peers = "mesh"`); got != tc.kept {
				t.Errorf("the table's peers kept = %v, want %v:\n%s", got, tc.kept, text)
			}
			if tc.kept {
				if strings.Contains(notes, "removes") {
					t.Errorf("notes: %s", notes)
				}
				return
			}
			for _, want := range []string{"h.cfg:3: " + removed, `h.cfg:12: stick-table: ignored: peers "mesh" is removed (line 3): this table is not shared`} {
				if !strings.Contains(notes, want) {
					t.Errorf("notes lack %q:\n%s", want, notes)
				}
			}
		})
	}
}

// TestImportPeersSectionTable: a peers section's `table NAME ...` line,
// HAProxy's stick table declared in the section, becomes a [[table]]
// named as HAProxy names it, "<peers>/NAME", shared through the section;
// the rules that track in it and read it stay as written. A fresh-user
// trial found the table and its track-sc0 dropped while the deny reading
// sc0 was kept: the rate limit was silently gone. A table line HAProxy
// refuses (no size) is noted and kept as a comment in [[peers]].
func TestImportPeersSectionTable(t *testing.T) {
	const cfg = `peers mesh
    peer lb1 127.0.0.1:10001
    peer lb2 127.0.0.1:10002
    # the limits
    table limits type ip size 100k expire 30s store http_req_rate(10s),gpc0
    table bad type ip

defaults
    mode http

frontend www
    bind :80
    http-request track-sc0 src table mesh/limits
    http-request deny deny_status 429 if { sc_http_req_rate(0) gt 5 }
    default_backend app

backend app
    server s1 10.0.0.1:80
`
	r, err := Import([]byte(cfg), Options{Name: "h.cfg"})
	if err != nil {
		t.Fatal(err)
	}
	text := string(r.TOML)
	for _, want := range []string{`
# the limits
[[table]]
name = "mesh/limits"
type = "ip"
size = 102400
expire = "30s"
store = ["http_req_rate(10s)", "gpc0"]
peers = "mesh"
`, `  "track-sc0 src table mesh/limits",
  "deny deny_status 429 if { sc_http_req_rate(0) gt 5 }",
`, `# table bad type ip
`} {
		if !strings.Contains(text, want) {
			t.Errorf("the TOML lacks\n%s\nin\n%s", want, text)
		}
	}
	notes := notesText("h.cfg", r)
	if strings.Count(notes, "\n") != 1 || !strings.Contains(notes, "h.cfg:6: table: not supported: ") {
		t.Errorf("notes: want one, for line 6:\n%s", notes)
	}
	c, err := conf.Parse("h.toml", r.TOML)
	if err != nil {
		t.Fatalf("the TOML does not pass check: %v\n%s", err, text)
	}
	if len(c.Tables) != 1 || c.Tables[0].Name != "mesh/limits" || c.Tables[0].Peers != "mesh" {
		t.Errorf("tables: %+v", c.Tables)
	}

	// check and run on a host the section does not name: HAProxy 2.6
	// removes the section and keeps its tables, unshared, so that the
	// rules naming them still run (a fresh-user trial saw fulcrum refuse
	// the configuration: unknown stick table "mesh/limits").
	r, err = Import([]byte(cfg), Options{Name: "h.cfg", HostName: "vm"})
	if err != nil {
		t.Fatal(err)
	}
	c, err = conf.Parse("h.toml", r.TOML)
	if err != nil {
		t.Fatalf("removed section: the TOML does not pass check: %v\n%s", err, r.TOML)
	}
	if len(c.Peers) != 0 || len(c.Tables) != 1 || c.Tables[0].Name != "mesh/limits" || c.Tables[0].Peers != "" {
		t.Errorf("removed section: peers %d, tables %+v; want none, and mesh/limits unshared", len(c.Peers), c.Tables)
	}
	if rules := c.Frontends[0].Rules.HTTPRules(); len(rules) != 2 {
		t.Errorf("removed section: %d http_request rules, want both", len(rules))
	}
}

// TestImportTuneH2: tune.h2.max-concurrent-streams converts to
// tune_h2_max_concurrent_streams (a fresh-user trial found it commented
// out as "tuning settings"); the other tune.h2 lines are noted with why.
func TestImportTuneH2(t *testing.T) {
	const cfg = "global\n    tune.h2.max-concurrent-streams 50\n    tune.h2.initial-window-size 65535\n" +
		"defaults\n    mode http\nfrontend f\n    bind :80\n    default_backend b\nbackend b\n    server s 10.0.0.1:80\n"
	r, err := Import([]byte(cfg), Options{Name: "h.cfg"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(r.TOML), "\n[global]\ntune_h2_max_concurrent_streams = 50\n") {
		t.Errorf("TOML:\n%s", r.TOML)
	}
	notes := notesText("h.cfg", r)
	if want := "h.cfg:3: tune.h2.initial-window-size: not supported: HTTP/2 tuning other than max-concurrent-streams"; strings.Count(notes, "\n") != 1 || !strings.Contains(notes, want) {
		t.Errorf("notes: want only %q:\n%s", want, notes)
	}
	c, err := conf.Parse("h.toml", r.TOML)
	if err != nil {
		t.Fatal(err)
	}
	if c.Global.H2MaxStreams != 50 {
		t.Errorf("H2MaxStreams %d, want 50", c.Global.H2MaxStreams)
	}
}

// TestImportStoreUnknownType: a stored type fulcrum lacks is left out of
// the table, noted, and the table with the rest and the rules tracking in
// it are kept (a fresh-user trial saw one http_fail_cnt drop the whole
// table, then its track-sc0: the rate limit reading it was silently gone).
func TestImportStoreUnknownType(t *testing.T) {
	const cfg = "defaults\n    mode http\nfrontend f\n    bind :80\n" +
		"    stick-table type ip size 1k store http_req_rate(10s),http_fail_cnt,gpc0\n" +
		"    http-request track-sc0 src\n    http-request deny deny_status 429 if { sc_http_req_rate(0) gt 5 }\n" +
		"    default_backend b\nbackend b\n    server s 10.0.0.1:80\n"
	r, err := Import([]byte(cfg), Options{Name: "h.cfg"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(r.TOML), `stick_table = { type = "ip", size = 1024, store = ["http_req_rate(10s)", "gpc0"] }`) {
		t.Errorf("TOML:\n%s", r.TOML)
	}
	notes := notesText("h.cfg", r)
	if strings.Count(notes, "\n") != 1 || !strings.Contains(notes, "h.cfg:5: stick-table: not supported: store http_fail_cnt: unknown data type 'http_fail_cnt'") {
		t.Errorf("notes:\n%s", notes)
	}
	c, err := conf.Parse("h.toml", r.TOML)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(c.Frontends[0].Rules.HTTPRules()); n != 2 {
		t.Errorf("%d http_request rules, want 2", n)
	}
}

// TestImportOrphanedCounters: a converted rule reading a tracking counter
// that only a line not converted tracked is noted (it never sees an
// entry); rules on counters tracked by converted lines are not.
func TestImportOrphanedCounters(t *testing.T) {
	const cfg = "defaults\n    mode http\nfrontend f\n    bind :80\n" +
		"    stick-table type ip size 1k store http_req_rate(10s),gpc0\n" +
		"    http-request track-sc1 url32+src\n" + // line 6: not supported
		"    http-request track-sc0 src\n" +
		"    http-request sc-inc-gpc0(0) if { sc_http_req_rate(1) eq 1 }\n" + // 8: reads 1
		"    http-request deny if { sc1_http_req_rate gt 5 }\n" + // 9: reads 1
		"    http-request deny if { sc_get_gpc0(0) gt 3 }\n" + // 10: reads 0, tracked
		"    default_backend b\nbackend b\n    server s 10.0.0.1:80\n"
	r, err := Import([]byte(cfg), Options{Name: "h.cfg"})
	if err != nil {
		t.Fatal(err)
	}
	notes := notesText("h.cfg", r)
	const why = "http-request: converted, differs: reads tracking counter 1, which only line 6 tracks, not converted: this rule never sees an entry"
	for _, want := range []string{"h.cfg:8: " + why, "h.cfg:9: " + why} {
		if !strings.Contains(notes, want) {
			t.Errorf("notes lack %q:\n%s", want, notes)
		}
	}
	if strings.Count(notes, "\n") != 3 {
		t.Errorf("notes: want 3 (lines 6, 8, 9):\n%s", notes)
	}
}
