package agent

import (
	"os"
	"reflect"
	"strings"
	"testing"
)

func TestParseConfigErrors(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want string
	}{
		{"valid", "listen = \"127.0.0.1:9999\"\nallow = [\"10.0.0.0/8\", \"192.0.2.7\"]\n[cpu]\nimportance = 1\n", ""},
		{"syntax", "listen = \"x\"\nmin_weight = = 3\n", "a.toml:2: min_weight: expected value but found '=' instead"},
		{"bare number duration", "sample_interval = 5\n", `a.toml:1: sample_interval: invalid duration "5" (want a number with a unit, e.g. "2s")`},
		{"wrong type", "\n[memory]\nvalue = \"x\"\n", "a.toml:3: memory.value: incompatible types: TOML value has type string; destination has type integer"},
		{"every error, in line order", strings.Join([]string{
			"min_weight = 200",
			"bogus = 1",
			"allow = [\"10.0.0.0/33\"]",
			"log_level = \"loud\"",
			"cpu_window = \"100ms\"",
			"[cpu]",
			"threshold = -1",
			"importance = 11",
			"[load]",
			"value = 0",
			"[process]",
			"enabled = true",
			"action = \"stop\"",
		}, "\n"), strings.Join([]string{
			"a.toml:1: min_weight: must be 0..100, got 200",
			"a.toml:2: bogus: unknown key",
			`a.toml:3: allow: "10.0.0.0/33" is neither a network (10.0.0.0/8) nor an address`,
			`a.toml:4: log_level: must be debug, info, warn or error, got "loud"`,
			"a.toml:5: cpu_window: must be at least sample_interval (1s), got 100ms",
			"a.toml:7: cpu.threshold: must be 0..1000, got -1",
			"a.toml:8: cpu.importance: must be 0..10, got 11",
			"a.toml:10: load.value: must be 1..1000, got 0",
			"a.toml:12: process.enabled: needs process.name or process.service",
			`a.toml:13: process.action: must be down or maint, got "stop"`,
		}, "\n")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseConfig("a.toml", tt.src)
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tt.want {
				t.Errorf("got\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
}

// TestReadmeDefaults: the fulcrum-agent section of README.md shows a
// configuration with every key at its default. It must decode to exactly
// Default(), so the documentation cannot drift from the code.
func TestReadmeDefaults(t *testing.T) {
	b, err := os.ReadFile("../../../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	_, section, ok := strings.Cut(readme, "\n## fulcrum-agent\n")
	if !ok {
		t.Fatal(`README.md has no "## fulcrum-agent" section`)
	}
	_, block, ok := strings.Cut(section, "```toml\n")
	if !ok {
		t.Fatal("the fulcrum-agent section has no toml block")
	}
	block, _, _ = strings.Cut(block, "```")
	got, err := ParseConfig("README.md", block)
	if err != nil {
		t.Fatal(err)
	}
	want := Default()
	// The state file's default depends on the platform; the README gives
	// the Linux one and names the Windows one in a comment.
	got.StateFile, want.StateFile = "", ""
	if len(got.Allow) == 0 { // `allow = []` decodes to an empty, non-nil slice
		got.Allow = nil
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("README defaults differ from Default():\ngot  %+v\nwant %+v", got, want)
	}
	for _, key := range []string{"listen", "allow", "state_file", "min_weight", "report_up", "sample_interval", "cpu_window",
		"timeout", "max_conns", "log_level", "log_format", "log_file", "[cpu]", "[memory]", "[load]", "[process]"} {
		if !strings.Contains(block, key) {
			t.Errorf("README block does not mention %s", key)
		}
	}
}
