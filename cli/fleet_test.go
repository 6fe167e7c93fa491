package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestNameInstances(t *testing.T) {
	tests := []struct {
		name  string
		addrs []string
		want  []string
	}{
		{"base names differ", []string{"/run/fulcrum/lb1.sock", "/run/fulcrum/lb2.sock"}, []string{"lb1.sock", "lb2.sock"}},
		{"same base name", []string{"/tmp/a/admin.sock", "/tmp/b/admin.sock", "/run/c.sock"}, []string{"a/admin.sock", "b/admin.sock", "c.sock"}},
		{"nested", []string{"/x/a/s.sock", "/y/a/s.sock"}, []string{"x/a/s.sock", "y/a/s.sock"}},
		{"relative and absolute", []string{"s.sock", "/run/s.sock"}, []string{"s.sock", "run/s.sock"}},
		{"tcp", []string{"tcp:10.0.0.1:9999", "10.0.0.2:9999", "lb.sock"}, []string{"10.0.0.1:9999", "10.0.0.2:9999", "lb.sock"}},
		{"unix: prefix", []string{"unix:/run/a.sock", "/run/b.sock"}, []string{"a.sock", "b.sock"}},
		{"one", []string{"/run/fulcrum/admin.sock"}, []string{"admin.sock"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			insts, err := NameInstances(tt.addrs)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for i, in := range insts {
				got = append(got, in.Name)
				if string(in.Addr) != tt.addrs[i] {
					t.Errorf("address %d: got %q, want %q", i, in.Addr, tt.addrs[i])
				}
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
	if _, err := NameInstances([]string{"/run/a.sock", "/run/../run/a.sock"}); !errors.Is(err, ErrUsage) || !strings.Contains(err.Error(), "given twice") {
		t.Errorf("the same socket twice: %v", err)
	}
}

func TestParseFleet(t *testing.T) {
	tests := []struct {
		name, text string
		want       []Instance
		err        string
	}{
		{"names, comments, relative paths", `
# production
lb1  /run/fulcrum/lb1.sock   # the first
lb2  tcp:10.0.0.2:9999
     lb3.sock
#lb4 /run/lb4.sock
`, []Instance{{"lb1", "/run/fulcrum/lb1.sock"}, {"lb2", "tcp:10.0.0.2:9999"}, {"lb3.sock", "/etc/fleet/lb3.sock"}}, ""},
		{"unnamed share a base name", "/a/admin.sock\n/b/admin.sock\n",
			[]Instance{{"a/admin.sock", "/a/admin.sock"}, {"b/admin.sock", "/b/admin.sock"}}, ""},
		{"every error, with its line", "lb1 /run/a.sock\nlb1 /run/b.sock\nlb3 /run/a.sock\nlb4 /run/d.sock extra\n", nil,
			"/etc/fleet/prod.fleet:2: instance \"lb1\": already named on line 1\n" +
				"/etc/fleet/prod.fleet:3: /run/a.sock: already listed on line 1\n" +
				"/etc/fleet/prod.fleet:4: expected NAME ADDRESS or ADDRESS, got 3 words"},
		{"empty", "# nothing yet\n\n", nil, "/etc/fleet/prod.fleet: no instance (expected lines of NAME ADDRESS)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseFleet("/etc/fleet/prod.fleet", strings.NewReader(tt.text))
			if tt.err != "" {
				if err == nil || err.Error() != tt.err || !errors.Is(err, ErrUsage) {
					t.Fatalf("got error %v, want %q (a usage error)", err, tt.err)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %v %v, want %v", got, err, tt.want)
			}
		})
	}
}

// fleetReplies are show stat as three instances answer it: HAProxy 2.6's
// reply (part of show-stat.in) on a and c, and on b the same with web/s1 in
// DRAIN and a session on it.
func fleetReplies(t *testing.T) []reply {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "testdata", "cli", "show-stat.in"))
	if err != nil {
		t.Fatal(err)
	}
	var keep []string // HAProxy's header, a frontend, two servers, their backend
	for _, l := range strings.SplitAfter(string(b), "\n") {
		if strings.HasPrefix(l, "# ") || strings.HasPrefix(l, "fe_web,FRONTEND,") || strings.HasPrefix(l, "web,s1,") ||
			strings.HasPrefix(l, "web,s2,") || strings.HasPrefix(l, "web,BACKEND,") {
			keep = append(keep, l)
		}
	}
	in := strings.Join(keep, "")
	tab, _ := ParseTable(in)
	var drained []string
	for _, l := range strings.SplitAfter(in, "\n") {
		if strings.HasPrefix(l, "web,s1,") {
			f := strings.Split(l, ",")
			f[tab.Col("status")], f[tab.Col("scur")] = "DRAIN", "1"
			l = strings.Join(f, ",")
		}
		drained = append(drained, l)
	}
	return []reply{
		{&Member{Instance: Instance{Name: "a"}}, in},
		{&Member{Instance: Instance{Name: "b"}}, strings.Join(drained, "")},
		{&Member{Instance: Instance{Name: "c"}}, in},
	}
}

// TestFleetShowStatGolden: show stat from three instances, merged into
// one table with an INSTANCE column, as JSON with "instance" after the
// server's columns, and as CSV that keeps HAProxy's columns and appends
// the instance's; --raw gives each reply untouched under its header.
func TestFleetShowStatGolden(t *testing.T) {
	rs := fleetReplies(t)
	var out bytes.Buffer
	c := &Client{Out: &out}
	for _, f := range []struct {
		format Format
		file   string
	}{{FormatAuto, "fleet-show-stat.txt"}, {FormatJSON, "fleet-show-stat.json"}, {FormatCSV, "fleet-show-stat.csv"}, {FormatRaw, "fleet-show-stat.raw"}} {
		out.Reset()
		c.print("show stat", rs, f.format)
		golden(t, f.file, out.String())
	}

	// CSV: HAProxy's header, then the instance; each row as the server
	// sent it, then its instance.
	out.Reset()
	c.print("show stat", rs, FormatCSV)
	got := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	var want []string
	for _, r := range rs {
		lines := strings.Split(strings.TrimSuffix(r.text, "\n"), "\n")
		if want == nil {
			want = append(want, strings.TrimSuffix(lines[0], ",")+",instance,")
		}
		for _, l := range lines[1:] {
			want = append(want, l+r.m.Name+",")
		}
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("merged CSV:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	// JSON: every row of every instance, with the CSV's values.
	out.Reset()
	c.print("show stat", rs, FormatJSON)
	var rows []map[string]string
	if err := json.Unmarshal(out.Bytes(), &rows); err != nil {
		t.Fatal(err)
	}
	if len(rows) != 12 || rows[0]["instance"] != "a" || rows[4]["instance"] != "b" || rows[5]["status"] != "DRAIN" || rows[11]["instance"] != "c" {
		t.Errorf("JSON: %d rows, %v ... %v", len(rows), rows[0], rows[len(rows)-1])
	}
}

// TestFleetText: replies that are not tables print line by line under
// each instance's name, as JSON one object per instance; one instance
// alone, unnamed, prints as before fleets.
func TestFleetText(t *testing.T) {
	a, b := &Member{Instance: Instance{Name: "lb1"}}, &Member{Instance: Instance{Name: "lb2"}}
	rs := []reply{{a, "Name: fulcrum\nVersion: 1.0\n"}, {b, "Name: fulcrum\nVersion: 1.1\n"}}
	var out bytes.Buffer
	c := &Client{Out: &out}
	c.print("show info", rs, FormatAuto)
	if want := "lb1: Name: fulcrum\nlb1: Version: 1.0\nlb2: Name: fulcrum\nlb2: Version: 1.1\n"; out.String() != want {
		t.Errorf("got %q, want %q", out.String(), want)
	}
	out.Reset()
	c.print("show info", rs, FormatJSON)
	if want := "{\n  \"lb1\": {\n    \"Name\": \"fulcrum\",\n    \"Version\": \"1.0\"\n  },\n  \"lb2\": {\n    \"Name\": \"fulcrum\",\n    \"Version\": \"1.1\"\n  }\n}\n"; out.String() != want {
		t.Errorf("JSON: got %q, want %q", out.String(), want)
	}
	out.Reset()
	c.print("show info", []reply{{&Member{}, "Name: fulcrum\n"}}, FormatAuto)
	if out.String() != "Name: fulcrum\n" {
		t.Errorf("one socket: got %q", out.String())
	}
	// One socket's show stat --csv is the server's CSV, unchanged.
	in, err := os.ReadFile(filepath.Join("..", "testdata", "cli", "show-stat.in"))
	if err != nil {
		t.Fatal(err)
	}
	out.Reset()
	c.print("show stat", []reply{{&Member{}, string(in)}}, FormatCSV)
	if want := strings.TrimSuffix(string(in), "\n"); out.String() != want { // in ends with the socket's empty line
		t.Errorf("one socket's --csv differs from the reply:\n%s", out.String())
	}
}

// TestMergeStickTables: show table NAME from two instances whose entries
// store different data: the columns of both, one title without the use
// count (it differs), rows in the fleet's order.
func TestMergeStickTables(t *testing.T) {
	a, _ := ParseReply("show table www", "# table: www, type: ip, size:100, used:1\n0x1: key=10.0.0.1 use=0 exp=0 gpc0=3\n")
	b, _ := ParseReply("show table www", "# table: www, type: ip, size:100, used:2\n0x2: key=10.0.0.2 use=1 exp=0 http_req_rate(10000)=4\n0x3: key=10.0.0.3 use=0 exp=0 http_req_rate(10000)=1\n")
	m := mergeTables([]*Table{a, b}, []string{"a", "b"})
	wantCols := []string{"ptr", "key", "use", "exp", "gpc0", "http_req_rate(10000)", "instance"}
	if !reflect.DeepEqual(m.Columns, wantCols) || m.Title != "table www: type ip, size 100" || len(m.Rows) != 3 {
		t.Fatalf("columns %q, title %q, %d rows", m.Columns, m.Title, len(m.Rows))
	}
	want := "INSTANCE  KEY       USE  EXP  GPC0  HTTP_REQ_RATE(10s)\n" +
		"a         10.0.0.1  0    -    3\n" +
		"b         10.0.0.2  1    -          4\n" +
		"b         10.0.0.3  0    -          1\n"
	if got := m.Render(false, 0); got != "table www: type ip, size 100\n"+want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
}

// FuzzParseFleet: a fleet file never panics the parser, and what it
// accepts has names and addresses, each once.
func FuzzParseFleet(f *testing.F) {
	f.Add("lb1 /run/lb1.sock\nlb2 tcp:10.0.0.2:9999 # two\nlb3.sock\n")
	f.Add("a a\n# x\n\n/a/s.sock\n/b/s.sock\n")
	f.Add("x y z\nx y\nx y\n")
	f.Fuzz(func(t *testing.T, text string) {
		insts, err := ParseFleet("/etc/f.fleet", strings.NewReader(text))
		if err != nil {
			if !errors.Is(err, ErrUsage) {
				t.Fatalf("error %v is not a usage error", err)
			}
			return
		}
		names := map[string]bool{}
		for _, in := range insts {
			if in.Name == "" || in.Addr == "" || names[in.Name] {
				t.Fatalf("instances %v", insts)
			}
			names[in.Name] = true
		}
	})
}

// FuzzMergeReplies: replies from two servers (untrusted bytes) never
// panic the merge or its renderings, and a merged table has every row of
// both with its instance last.
func FuzzMergeReplies(f *testing.F) {
	b, err := os.ReadFile(filepath.Join("..", "testdata", "cli", "show-stat.in"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add("show stat", string(b), "# pxname,svname,status\nweb,s1,UP\n")
	f.Add("show table www", "# table: www, type: ip, size:100, used:1\n0x1: key=a use=0 exp=0 gpc0=1\n", "# table: www, type: ip, size:100, used:0\n")
	f.Add("show servers state", "1\n# be_id be_name srv_id\n3 web 1\n", "1\n# be_id be_name\n3\n")
	f.Add("show backend", "# name\nweb\n", "Unknown command\n")
	f.Fuzz(func(t *testing.T, cmd, a, b string) {
		rs := []reply{{&Member{Instance: Instance{Name: "a"}}, a}, {&Member{Instance: Instance{Name: "b"}}, b}}
		m := mergeReplies(cmd, rs)
		c := &Client{Out: io.Discard}
		for _, f := range []Format{FormatAuto, FormatJSON, FormatCSV, FormatRaw} {
			c.print(cmd, rs, f)
		}
		if m == nil {
			return
		}
		ta, _ := ParseReply(cmd, a)
		tb, _ := ParseReply(cmd, b)
		if len(m.Rows) != len(ta.Rows)+len(tb.Rows) || m.Columns[len(m.Columns)-1] != InstanceColumn {
			t.Fatalf("%d rows from %d and %d, columns %q", len(m.Rows), len(ta.Rows), len(tb.Rows), m.Columns)
		}
		for i, r := range m.Rows {
			if want := map[bool]string{true: "a", false: "b"}[i < len(ta.Rows)]; r[len(r)-1] != want {
				t.Fatalf("row %d: instance %q, want %q", i, r[len(r)-1], want)
			}
		}
	})
}
