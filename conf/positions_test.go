package conf

import (
	"strconv"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"
)

// positionsDoc holds each construct the scanner must get through; the line
// of each key is in the test table below.
const positionsDoc = `# comment [not.a.table]
title = "x # not a comment ["
[a]
b.c = 1
"quoted.key" = 2
arr = [
  1, # comment ]
  { k = "v" },
]
ml = """
line "" \"""
[fake]
"""
next = 'lit'
[[t]]
name = "t0"
[[t.sub]]
x = 1
[[t]]
name = "t1"
[t.tab]
y = 2
[[t.sub]]
inline = { a = 1, b = { c = 2 } }
lit = '''
[also.fake]'''
"esc\"aped" = "\u00e9"
multi = { p = 1,
  q = [ "a",
    "b" ] }
[ spaced . table ]
z = 1979-05-27 07:32:00
w = 3
"x\xe9\e\u0000" = 4
`

func TestScanPositions(t *testing.T) {
	var tree map[string]any
	if _, err := toml.Decode(positionsDoc, &tree); err != nil {
		t.Fatalf("test document is not valid TOML: %v", err)
	}
	pos := scanPositions(positionsDoc)
	tests := []struct {
		path path
		want int
	}{
		{path{"title"}, 2},
		{path{"a"}, 3},
		{path{"a", "b"}, 4},
		{path{"a", "b", "c"}, 4},
		{path{"a", "quoted.key"}, 5},
		{path{"a", "arr"}, 6},
		{path{"a", "arr", "[0]"}, 7},
		{path{"a", "arr", "[1]"}, 8},
		{path{"a", "arr", "[1]", "k"}, 8},
		{path{"a", "ml"}, 10},
		{path{"a", "next"}, 14},
		{path{"t"}, 15},
		{path{"t", "[0]"}, 15},
		{path{"t", "[0]", "name"}, 16},
		{path{"t", "[0]", "sub", "[0]"}, 17},
		{path{"t", "[0]", "sub", "[0]", "x"}, 18},
		{path{"t", "[1]"}, 19},
		{path{"t", "[1]", "name"}, 20},
		{path{"t", "[1]", "tab"}, 21},
		{path{"t", "[1]", "tab", "y"}, 22},
		{path{"t", "[1]", "sub", "[0]"}, 23},
		{path{"t", "[1]", "sub", "[0]", "inline", "b", "c"}, 24},
		{path{"t", "[1]", "sub", "[0]", "lit"}, 25},
		{path{"t", "[1]", "sub", "[0]", `esc"aped`}, 27},
		{path{"t", "[1]", "sub", "[0]", "multi", "q", "[1]"}, 30},
		{path{"spaced", "table"}, 31},
		{path{"spaced", "table", "z"}, 32},
		{path{"spaced", "table", "w"}, 33},
		{path{"spaced", "table", "x\u00e9\x1b\x00"}, 34},
		// Not in the file: the nearest enclosing table's line.
		{path{"t", "[1]", "tab", "missing"}, 21},
		{path{"nothing"}, 0},
	}
	for _, tt := range tests {
		if got := pos.line(tt.path); got != tt.want {
			t.Errorf("line(%q): got %d, want %d", tt.path, got, tt.want)
		}
	}
}

// TestScanPositionsCoverKeys checks, on every golden config, that the
// scanner found a line for each key the toml package read.
func TestScanPositionsCoverKeys(t *testing.T) {
	checkPositionsCoverKeys(t, []byte(positionsDoc))
	for _, file := range goldenFiles(t) {
		config, _ := readCase(t, file)
		checkPositionsCoverKeys(t, config)
	}
}

// checkPositionsCoverKeys fails t when the toml package reads a key in data
// for which scanPositions has no line. Data that is not TOML passes.
func checkPositionsCoverKeys(t *testing.T, data []byte) {
	t.Helper()
	var tree map[string]any
	md, err := toml.Decode(string(data), &tree)
	if err != nil {
		return
	}
	schemas := map[string]bool{}
	for k := range scanPositions(string(data)) {
		schemas[path(splitKey(k)).schema()] = true
	}
	for _, k := range md.Keys() {
		if want := path(k).schema(); !schemas[want] {
			t.Errorf("no line for key %q in:\n%s", want, data)
		}
	}
}

// splitKey is the inverse of path.key.
func splitKey(k string) []string {
	var p []string
	for k != "" {
		n, rest, _ := strings.Cut(k, ":")
		size, err := strconv.Atoi(n)
		if err != nil || size > len(rest) {
			panic("bad path key " + strconv.Quote(k))
		}
		p, k = append(p, rest[:size]), rest[size:]
	}
	return p
}
