package cli

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/cli")

// golden compares got with testdata/cli/name, or rewrites it with -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("..", "testdata", "cli", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./cli -update)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs (go test ./cli -update to accept):\n--- got\n%s--- want\n%s", name, got, want)
	}
}

// TestRenderGolden renders the replies captured from HAProxy 2.6 (the
// reference goldens; show-queue.in is fulcrum's layout) as tables without
// colour, as JSON, and show stat cut to 80 columns as watch does.
func TestRenderGolden(t *testing.T) {
	for _, tc := range []struct{ in, kind string }{
		{"show-stat", "stat"},
		{"show-servers-state", "servers-state"},
		{"show-backend", "columns"},
		{"show-table", "table-list"},
		{"show-table-dump", "table-dump"},
		{"show-queue", "columns"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join("..", "testdata", "cli", tc.in+".in"))
			if err != nil {
				t.Fatal(err)
			}
			tab, ok := ParseTable(string(b))
			if !ok || tab.Kind != tc.kind {
				t.Fatalf("ParseTable: ok %v kind %q, want %q", ok, tab.Kind, tc.kind)
			}
			out := tab.Render(false, 0)
			if strings.Contains(out, "\x1b") {
				t.Errorf("colour without asking")
			}
			golden(t, tc.in+".txt", out)
			js := ToJSON(string(b))
			var rows []map[string]string
			if err := json.Unmarshal(js, &rows); err != nil || len(rows) != len(tab.Rows) {
				t.Fatalf("JSON: %v, %d rows\n%s", err, len(rows), js)
			}
			golden(t, tc.in+".json", string(js))
			if tc.in == "show-stat" {
				narrow := tab.Render(false, 80)
				for _, l := range strings.Split(narrow, "\n") {
					if n := len([]rune(l)); n > 80 {
						t.Errorf("line of %d columns at 80: %q", n, l)
					}
				}
				golden(t, "show-stat-80.txt", narrow)
				if c := tab.Render(true, 0); !strings.Contains(c, "\x1b[32mUP") || !strings.Contains(c, "\x1b[31mDOWN") {
					t.Errorf("no colour with colour:\n%s", c)
				}
			}
		})
	}
}

// TestJSONMatchesCSV: every JSON value of show stat is the CSV's value.
func TestJSONMatchesCSV(t *testing.T) {
	b, err := os.ReadFile("../testdata/cli/show-stat.in")
	if err != nil {
		t.Fatal(err)
	}
	var rows []map[string]string
	if err := json.Unmarshal(ToJSON(string(b)), &rows); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	head := strings.Split(strings.TrimPrefix(lines[0], "# "), ",")
	for i, l := range lines[1:] { // the capture has no quoted field
		for j, v := range strings.Split(l, ",") {
			if head[j] != "" && rows[i][head[j]] != v {
				t.Errorf("row %d %s: JSON %q, CSV %q", i, head[j], rows[i][head[j]], v)
			}
		}
	}
}

func TestToJSONOther(t *testing.T) {
	var info map[string]string
	if err := json.Unmarshal(ToJSON("Name: HAProxy\nVersion: 2.6.12\nNode: \n"), &info); err != nil || info["Version"] != "2.6.12" {
		t.Errorf("show info: %v %v", info, err)
	}
	var free map[string][]string
	if err := json.Unmarshal(ToJSON("some text\nmore\n"), &free); err != nil || len(free["lines"]) != 2 {
		t.Errorf("free text: %v %v", free, err)
	}
}

func TestIsError(t *testing.T) {
	for reply, want := range map[string]bool{
		"No such server.\n":                                true,
		"No such backend.\n":                               true,
		"Permission denied\n":                              true,
		"Require 'backend/server'.\n":                      true,
		"Unknown command, but maybe one of the following":  true,
		"Empty weight string empty or preceded by garbage": true,
		"[3]: No such server.\n":                           true,
		"[err]: No such server.\n":                         true,
		"[6]: done\n":                                      false,
		"":                                                 false,
		"1 (initial 1)\n":                                  false,
		"# pxname,svname\n":                                false,
		"admin\n":                                          false,
		// These two used to exit 0 from fulcrumctl.
		"usage: set server <backend>/<server> addr | agent\n":                     true,
		"no need to change the addr, problem converting port '99999' to an int\n": true,
		// reload (issue 11): an invalid file is an error, a reload is not.
		"Success=0\n--\nf.toml:3: unknown key \"x\"\n": true,
		"Success=1\n--\n": false,
	} {
		if got := IsError(reply); got != want {
			t.Errorf("IsError(%q) = %v", reply, got)
		}
	}
}

func TestSplitCommands(t *testing.T) {
	got := SplitCommands(`show cli level;get weight web/s2 ;  add map #4 a\;b v ;`)
	want := []string{"show cli level", "get weight web/s2", `add map #4 a\;b v`, ""}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("got %q", got)
	}
	if c, f := cutFlags("show stat --json", FormatAuto); c != "show stat" || f != FormatJSON {
		t.Errorf("cutFlags: %q %v", c, f)
	}
}
