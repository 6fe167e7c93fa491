package stats

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fulcrum-proxy/fulcrum/proxy"
)

// TestHeaderMatchesHAProxy26 compares the CSV header with HAProxy 2.6.12's
// (captured in testdata/stats/haproxy-2.6-header.csv) column by column.
func TestHeaderMatchesHAProxy26(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "testdata", "stats", "haproxy-2.6-header.csv"))
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Split(strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(string(raw)), "# "), ","), ",")
	got := strings.Split(strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(string(csvHeader)), "# "), ","), ",")
	if len(want) != 128 {
		t.Fatalf("the capture has %d columns, want 128", len(want))
	}
	for i := range want {
		if i >= len(got) {
			t.Fatalf("column %d: missing, want %q", i, want[i])
		}
		if got[i] != want[i] {
			t.Errorf("column %d: got %q, want %q", i, got[i], want[i])
		}
	}
	// fulcrum's own columns come after HAProxy's, never among them.
	if own := len(timingColumns()); len(got) != len(want)+own {
		t.Errorf("got %d columns, want HAProxy's %d and fulcrum's %d", len(got), len(want), own)
	}
	if !strings.HasPrefix(string(csvHeader), "# pxname,svname,") || !strings.HasSuffix(string(csvHeader), ",\n") {
		t.Errorf("header framing: got %q", csvHeader)
	}
}

// TestColumnTable checks each column's declaration.
func TestColumnTable(t *testing.T) {
	seen := map[string]bool{}
	for i, c := range columns {
		if seen[c.Name] {
			t.Errorf("column %d: duplicate name %q", i, c.Name)
		}
		seen[c.Name] = true
		if c.Name == "-" {
			continue
		}
		if c.Desc == "" || c.get == nil || c.Kinds == 0 {
			t.Errorf("column %d (%s): needs a description, a getter and row kinds", i, c.Name)
		}
		for _, tags := range []string{c.tags, c.btags} {
			if tags == "" {
				continue
			}
			if len(tags) != 3 || tagOrigin[tags[0]] == "" || tagNature[tags[1]] == "" || tagScope[tags[2]] == "" {
				t.Errorf("column %d (%s): bad tags %q", i, c.Name, tags)
			}
		}
	}
	if dashCol != 103 {
		t.Errorf("the - column is at %d, want 103", dashCol)
	}
}

func render(t *testing.T, fn func(*bytes.Buffer) error) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := fn(&b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestGolden renders the fixed snapshot in every format.
func TestGolden(t *testing.T) {
	snap := testSnapshot()
	all := AllRows()
	srv := Filter{Proxy: "web", ProxyID: -1, Types: 4, ServerID: 1}
	for _, tc := range []struct {
		name string
		fn   func(*bytes.Buffer) error
	}{
		{"show-stat.csv", func(b *bytes.Buffer) error { return WriteCSV(b, snap, all) }},
		{"show-stat-typed.txt", func(b *bytes.Buffer) error { return WriteTyped(b, snap, all) }},
		{"show-stat-json.txt", func(b *bytes.Buffer) error { return WriteJSON(b, snap, all) }},
		{"show-stat-typed-desc.txt", func(b *bytes.Buffer) error { return WriteDesc(b, snap, srv) }},
		{"show-info.txt", func(b *bytes.Buffer) error { return WriteInfo(b, NewInfo(snap, testFacts), "") }},
		{"show-info-typed.txt", func(b *bytes.Buffer) error { return WriteInfo(b, NewInfo(snap, testFacts), "typed") }},
		{"show-info-json.txt", func(b *bytes.Buffer) error { return WriteInfo(b, NewInfo(snap, testFacts), "json") }},
	} {
		t.Run(tc.name, func(t *testing.T) { golden(t, tc.name, render(t, tc.fn)) })
	}
}

var testFacts = ProcessFacts{APIListeners: 1, APISessions: 1, APISessionsTotal: 4, ActivePeers: 2, ConnectedPeers: 1,
	HeapAlloc: 23 << 20, HeapUsed: 9<<20 + 512, Version: "0.1.0", ReleaseDate: "2025/05/30", BuildInfo: "go1.26 fulcrum 0.1.0", UlimitN: 4058,
	Pid: 4242, Nbthread: 2, Node: "lb1", Tasks: 31}

// TestCSVShape checks what the haproxy exporter and hatop rely on: every
// line has the header's field count, types route rows, quoting is standard.
func TestCSVShape(t *testing.T) {
	out := render(t, func(b *bytes.Buffer) error { return WriteCSV(b, testSnapshot(), AllRows()) })
	r := csv.NewReader(bytes.NewReader(out))
	recs, err := r.ReadAll() // fails on ragged records
	if err != nil {
		t.Fatal(err)
	}
	if got, want := len(recs[0]), len(columns)+1; got != want {
		t.Fatalf("got %d fields per line, want %d (with the trailing comma)", got, want)
	}
	byName := map[string][]string{}
	for _, rec := range recs[1:] {
		byName[rec[0]+"/"+rec[1]] = rec
	}
	col := func(name string) int { return columnIndex(name) }
	for _, tc := range []struct {
		row, col, want string
	}{
		{"web/s1", "status", "UP"},
		{"web/s2", "status", "UP 2/3"},
		{"web/s3", "status", "DOWN"},
		{"web/s4", "status", "DOWN 1/2"},
		{"web/s5", "status", "no check"},
		{"web/s6", "status", "MAINT"},
		{"web/s7", "status", "DRAIN"},
		{"web/s7", "weight", "10"},
		{"web/s1", "last_agt", "via agent : up"},
		{"web/s1", "agent_status", "L7OK"},
		{"web/s1", "agent_health", "1"},
		{"web/s2", "hanafail", "0"},
		{"web/s6", "check_rise", ""},
		{"web/s6", "downtime", "161"},
		{"be_tcp/c2", "status", "NOLB"},
		{"be_tcp/BACKEND", "act", "1"},
		{"web/b1", "bck", "1"},
		{"web/b1", "qlimit", "10"},
		{"web/s4", "last_chk", `Bad, "quoted" thing`},
		{"web/s4", "check_status", "* L7STS"},
		{"web/BACKEND", "status", "UP"},
		{"web/BACKEND", "act", "3"},
		{"web/BACKEND", "bck", "1"},
		{"web/BACKEND", "weight", "151"},
		{"be_down/BACKEND", "status", "DOWN"},
		{"be_empty/BACKEND", "status", "UP"},
		{"be_empty/BACKEND", "algo", "random"},
		{"fe_web/FRONTEND", "type", "0"},
		{"fe_web/FRONTEND", "conn_tot", "130"},
		{"fe_tcp/FRONTEND", "slim", "2000"},
		{"fe_tcp/FRONTEND", "hrsp_2xx", ""},
		{"be_tcp/c1", "req_tot", ""},
		{"be_tcp/c1", "slim", "50"},
		{"web/s5", "chkfail", ""},
		{"web/s5", "check_status", ""},
		{"web/s1", "lastsess", "2"},
		{"web/s5", "lastsess", "-1"},
		{"web/s1", "-", "-"},
	} {
		rec, ok := byName[tc.row]
		if !ok {
			t.Errorf("no row %s", tc.row)
			continue
		}
		if got := rec[col(tc.col)]; got != tc.want {
			t.Errorf("%s %s: got %q, want %q", tc.row, tc.col, got, tc.want)
		}
	}
	if !bytes.Contains(out, []byte(`,"Bad, ""quoted"" thing",`)) {
		t.Errorf("last_chk not quoted as HAProxy's csv-quoting.txt")
	}
}

// TestFilter checks `show stat {proxy|-1} {type|-1} {sid|-1} [up|no-maint]`.
func TestFilter(t *testing.T) {
	snap := testSnapshot()
	for _, tc := range []struct {
		name string
		f    Filter
		want []string // pxname/svname of the rows
	}{
		{"frontends", Filter{ProxyID: -1, Types: 1, ServerID: -1}, []string{"fe_web/FRONTEND", "fe_tcp/FRONTEND"}},
		{"one server by name", Filter{Proxy: "web", ProxyID: -1, Types: 4, ServerID: 1}, []string{"web/s1"}},
		{"one backend by iid", Filter{ProxyID: 4, Types: 2, ServerID: -1}, []string{"be_tcp/BACKEND"}},
		{"iid names one proxy", Filter{ProxyID: 4, Types: -1, ServerID: -1},
			[]string{"be_tcp/c1", "be_tcp/c2", "be_tcp/BACKEND"}},
		{"sid keeps the backend row", Filter{Proxy: "be_tcp", ProxyID: -1, Types: -1, ServerID: 2},
			[]string{"be_tcp/c2", "be_tcp/BACKEND"}},
		{"unknown iid prints the header only", Filter{ProxyID: 99, Types: -1, ServerID: -1}, nil},
		{"up", Filter{Proxy: "web", ProxyID: -1, Types: 4, ServerID: -1, Up: true},
			[]string{"web/s1", "web/s2", "web/s5", "web/s7", "web/b1"}},
		{"no-maint", Filter{Proxy: "web", ProxyID: -1, Types: 4, ServerID: -1, NoMaint: true},
			[]string{"web/s1", "web/s2", "web/s3", "web/s4", "web/s5", "web/s7", "web/b1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := render(t, func(b *bytes.Buffer) error { return WriteCSV(b, snap, tc.f) })
			lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
			var got []string
			for _, l := range lines[1:] {
				f := strings.SplitN(l, ",", 3)
				got = append(got, f[0]+"/"+f[1])
			}
			if strings.Join(got, " ") != strings.Join(tc.want, " ") {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
	t.Run("backend status with no-maint", func(t *testing.T) {
		out := render(t, func(b *bytes.Buffer) error {
			return WriteCSV(b, snap, Filter{Proxy: "web", ProxyID: -1, Types: 2, ServerID: -1, NoMaint: true})
		})
		if !bytes.Contains(out, []byte(",UP (5/8),")) {
			t.Errorf("got %s, want status UP (5/8)", out)
		}
	})
	t.Run("no such proxy", func(t *testing.T) {
		for _, fn := range []func(*bytes.Buffer, *proxy.Snapshot, Filter) error{
			func(b *bytes.Buffer, s *proxy.Snapshot, f Filter) error { return WriteCSV(b, s, f) },
			func(b *bytes.Buffer, s *proxy.Snapshot, f Filter) error { return WriteTyped(b, s, f) },
			func(b *bytes.Buffer, s *proxy.Snapshot, f Filter) error { return WriteJSON(b, s, f) },
		} {
			var b bytes.Buffer
			err := fn(&b, snap, Filter{Proxy: "nosuch", ProxyID: -1, Types: -1, ServerID: -1})
			if !errors.Is(err, ErrNoSuchProxy) || b.Len() != 0 {
				t.Errorf("got %v and %d bytes, want ErrNoSuchProxy and nothing written", err, b.Len())
			}
		}
	})
	t.Run("legends hidden", func(t *testing.T) {
		out := render(t, func(b *bytes.Buffer) error {
			return WriteCSV(b, snap, Filter{ProxyID: -1, Types: -1, ServerID: -1, HideLegends: true})
		})
		if bytes.Contains(out, []byte("127.0.0.1")) || bytes.Contains(out, []byte("roundrobin")) {
			t.Errorf("addr or algo printed with HideLegends")
		}
	})
}

// TestTypedAndJSON checks the typed/JSON forms against HAProxy's shapes.
func TestTypedAndJSON(t *testing.T) {
	snap := testSnapshot()
	f := Filter{Proxy: "web", ProxyID: -1, Types: 4, ServerID: 4}
	typed := string(render(t, func(b *bytes.Buffer) error { return WriteTyped(b, snap, f) }))
	for _, want := range []string{
		"S.2.4.0.pxname.1:KNS:str:web\n",
		"S.2.4.17.status.1:SGP:str:DOWN 1/2\n",
		"S.2.4.19.act.1:SGP:u32:1\n",
		"S.2.4.56.last_chk.1:MOP:str:Bad, \"quoted\" thing\n",
		"S.2.4.103.ssl_sess.1:MCP:u64:0\n", // the - column is not counted
	} {
		if !strings.Contains(typed, want) {
			t.Errorf("typed output lacks %q", want)
		}
	}
	be := string(render(t, func(b *bytes.Buffer) error {
		return WriteTyped(b, snap, Filter{Proxy: "web", ProxyID: -1, Types: 2, ServerID: -1})
	}))
	if !strings.Contains(be, "B.2.0.19.act.1:MGP:u32:3\n") {
		t.Errorf("backend act tags: got\n%s", be)
	}
	js := render(t, func(b *bytes.Buffer) error { return WriteJSON(b, snap, AllRows()) })
	var rows [][]struct {
		ObjType string `json:"objType"`
		ProxyID int    `json:"proxyId"`
		Field   struct {
			Pos  int    `json:"pos"`
			Name string `json:"name"`
		} `json:"field"`
		Tags  map[string]string `json:"tags"`
		Value struct {
			Type  string `json:"type"`
			Value any    `json:"value"`
		} `json:"value"`
	}
	if err := json.Unmarshal(js, &rows); err != nil {
		t.Fatalf("invalid JSON: %v", err)
	}
	if got, want := len(rows), 17; got != want {
		t.Errorf("got %d rows, want %d", got, want)
	}
	first := rows[0][0]
	if first.ObjType != "Frontend" || first.Field.Name != "pxname" || first.Tags["origin"] != "Key" || first.Value.Value != "fe_web" {
		t.Errorf("first field: got %+v", first)
	}
	empty := render(t, func(b *bytes.Buffer) error {
		return WriteJSON(b, snap, Filter{ProxyID: 99, Types: -1, ServerID: -1})
	})
	if string(empty) != "[]\n" {
		t.Errorf("no rows: got %q, want %q", empty, "[]\n")
	}
}

// TestServerStatus checks the status strings stats prints, from the
// snapshot's Status (the one place that decides them).
func TestServerStatus(t *testing.T) {
	ck := func(h, rise, fall int) *proxy.CheckSnapshot {
		return &proxy.CheckSnapshot{Health: h, Rise: rise, Fall: fall}
	}
	for _, tc := range []struct {
		name string
		s    proxy.ServerSnapshot
		want string
	}{
		{"up without check", proxy.ServerSnapshot{}, "no check"},
		{"up at full health", proxy.ServerSnapshot{Check: ck(4, 2, 3)}, "UP"},
		{"up going down", proxy.ServerSnapshot{Check: ck(2, 2, 3)}, "UP 1/3"},
		{"drain", proxy.ServerSnapshot{Admin: proxy.AdminDrain, Check: ck(4, 2, 3)}, "DRAIN"},
		{"drain without check", proxy.ServerSnapshot{Admin: proxy.AdminDrain}, "DRAIN"},
		{"drain going down", proxy.ServerSnapshot{Admin: proxy.AdminDrain, Check: ck(3, 2, 3)}, "DRAIN 2/3"},
		{"maint wins", proxy.ServerSnapshot{Admin: proxy.AdminMaint, Op: proxy.OpDown, Check: ck(0, 2, 3)}, "MAINT"},
		{"down", proxy.ServerSnapshot{Op: proxy.OpDown, Check: ck(0, 2, 3)}, "DOWN"},
		{"down going up", proxy.ServerSnapshot{Op: proxy.OpDown, Check: ck(1, 2, 3)}, "DOWN 1/2"},
		{"down without check", proxy.ServerSnapshot{Op: proxy.OpDown}, "DOWN"},
		{"nolb", proxy.ServerSnapshot{Op: proxy.OpStopping}, "NOLB"},
		{"nolb going down", proxy.ServerSnapshot{Op: proxy.OpStopping, Check: ck(2, 2, 3)}, "NOLB 1/3"},
		{"drain with agent", proxy.ServerSnapshot{Admin: proxy.AdminDrain, Agent: &proxy.AgentSnapshot{Health: 1}}, "DRAIN (agent)"},
		{"down by agent", proxy.ServerSnapshot{Op: proxy.OpDown, Check: ck(1, 2, 3), Agent: &proxy.AgentSnapshot{}}, "DOWN (agent)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.s.Status(); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// TestInfoCumulative: CumConns counts every connection accepted (sessions
// and those refused at the edge) and the Runtime API's sessions; CumReq
// every stream: HTTP requests, TCP sessions, and the API's sessions, as
// HAProxy 2.6 counts them (measured: a socat to its stats socket moves
// both by one, a keep-alive connection of three requests CumConns by one
// and CumReq by three).
func TestInfoCumulative(t *testing.T) {
	snap := testSnapshot()
	var conns, reqs int64 = testFacts.APISessionsTotal, testFacts.APISessionsTotal
	for _, fe := range snap.Frontends {
		c := fe.CounterValues
		conns += c.Stot + c.ConnEarly
		if fe.Mode == "tcp" {
			reqs += c.Stot
		} else {
			reqs += c.ReqTot
		}
	}
	in := NewInfo(snap, testFacts)
	if in.CumConns != conns || in.CumReq != reqs {
		t.Errorf("CumConns %d, CumReq %d, want %d and %d", in.CumConns, in.CumReq, conns, reqs)
	}
	var tcp bool
	for _, fe := range snap.Frontends {
		tcp = tcp || fe.Mode == "tcp" && fe.CounterValues.Stot > 0
	}
	if !tcp {
		t.Error("the test snapshot has no TCP frontend with sessions: the test cannot tell TCP from HTTP")
	}
}
