package agent

import (
	"os"
	"path/filepath"
	"testing"
)

func TestParseOverride(t *testing.T) {
	for in, want := range map[string]Override{"drain": OverrideDrain, "MAINT": OverrideMaint, " ready\n": OverrideReady, "auto": OverrideAuto} {
		if got, err := ParseOverride(in); err != nil || got != want {
			t.Errorf("ParseOverride(%q): got %q, %v, want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"", "down", "up", "drain now", "rm -rf /"} {
		if got, err := ParseOverride(in); err == nil {
			t.Errorf("ParseOverride(%q): got %q, want an error", in, got)
		}
	}
}

func TestControl(t *testing.T) {
	dir := t.TempDir()
	c := Control{Path: filepath.Join(dir, "sub", "state")}
	get := func(want Override) {
		t.Helper()
		got, err := c.Get()
		if err != nil || got != want {
			t.Fatalf("Get: got %q, %v, want %q", got, err, want)
		}
	}
	get(OverrideAuto) // no file, no directory yet
	for _, o := range []Override{OverrideDrain, OverrideMaint, OverrideReady} {
		if err := c.Set(o); err != nil {
			t.Fatal(err)
		}
		get(o)
	}
	if err := c.Set(OverrideAuto); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(c.Path); !os.IsNotExist(err) {
		t.Errorf("set auto: state file still there (%v)", err)
	}
	get(OverrideAuto)
	if err := c.Set(OverrideAuto); err != nil {
		t.Errorf("set auto twice: %v", err)
	}
	entries, _ := os.ReadDir(filepath.Dir(c.Path))
	if len(entries) != 0 {
		t.Errorf("temporary files left: %v", entries)
	}

	// A garbled file answers auto and says why.
	if err := os.WriteFile(c.Path, []byte("sideways\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := c.Get(); got != OverrideAuto || err == nil {
		t.Errorf("garbled file: got %q, %v, want auto and an error", got, err)
	}
}
