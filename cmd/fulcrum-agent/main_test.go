package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/fulcrum-proxy/fulcrum/cmd/fulcrum-agent/internal/agent"
	"github.com/rs/zerolog"
	"go.uber.org/goleak"
)

// TestMain fails the package when a test leaves a goroutine behind.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// fixed returns a sourceFunc that hands out src, in place of gopsutil.
func fixed(src agent.Source) sourceFunc {
	return func(context.Context, *agent.Config, zerolog.Logger) (agent.Source, error) { return src, nil }
}

// runCLI runs the command line with src as the load source and returns the
// exit code, stdout and stderr.
func runCLI(t *testing.T, src agent.Source, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := runApp(context.Background(), newApp(&out, &errb, fixed(src)), append([]string{"fulcrum-agent"}, args...), &errb)
	return code, out.String(), errb.String()
}

// writeConfig writes a configuration whose state file is in dir.
func writeConfig(t *testing.T, dir, extra string) string {
	t.Helper()
	path := filepath.Join(dir, "agent.toml")
	src := "state_file = " + quote(filepath.Join(dir, "state")) + "\n" + extra
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func quote(s string) string { return `"` + strings.ReplaceAll(s, `\`, `\\`) + `"` }

// TestOnceAndSet: --once prints the reply for the current load and the
// current override; set changes the override seen by the next --once.
func TestOnceAndSet(t *testing.T) {
	dir := t.TempDir()
	cfgPath := writeConfig(t, dir, "min_weight = 5\n[memory]\nenabled = false\n")
	src := agent.NewManualSource(agent.Reading{CPU: 27})
	steps := []struct {
		args     []string
		code     int
		out, err string
	}{
		{[]string{"--once", "-c", cfgPath}, 0, "up ready 73%\n", ""},
		{[]string{"run", "--once", "-c", cfgPath}, 0, "up ready 73%\n", ""},
		{[]string{"set", "-c", cfgPath, "drain"}, 0, "state drain (" + filepath.Join(dir, "state") + ")\n", ""},
		{[]string{"--once", "-c", cfgPath}, 0, "up drain #manual\n", ""},
		{[]string{"set", "-c", cfgPath, "MAINT"}, 0, "state maint (" + filepath.Join(dir, "state") + ")\n", ""},
		{[]string{"--once", "-c", cfgPath}, 0, "up maint #manual\n", ""},
		{[]string{"set", "-c", cfgPath, "ready"}, 0, "state ready (" + filepath.Join(dir, "state") + ")\n", ""},
		{[]string{"--once", "-c", cfgPath}, 0, "up ready 73%\n", ""},
		{[]string{"set", "-c", cfgPath, "auto"}, 0, "state auto (" + filepath.Join(dir, "state") + ")\n", ""},
		{[]string{"--once", "-c", cfgPath}, 0, "up ready 73%\n", ""},
		{[]string{"set", "-c", cfgPath, "down"}, 2, "", "unknown state \"down\" (want drain, maint, ready or auto)\n"},
		{[]string{"set", "-c", cfgPath}, 2, "", "usage: fulcrum-agent set drain|maint|ready|auto\n"},
	}
	for _, s := range steps {
		code, out, errOut := runCLI(t, src, s.args...)
		if code != s.code || out != s.out || errOut != s.err {
			t.Errorf("%v: got %d %q %q, want %d %q %q", s.args, code, out, errOut, s.code, s.out, s.err)
		}
	}
	src.Set(agent.Reading{CPU: 97})
	if _, out, _ := runCLI(t, src, "--once", "-c", cfgPath); out != "up drain #cpu 97% over threshold 90%\n" {
		t.Errorf("--once at 97%% cpu: got %q", out)
	}
}

// TestOnceSystem runs --once with the real gopsutil source.
func TestOnceSystem(t *testing.T) {
	dir := t.TempDir()
	cfgPath := writeConfig(t, dir, "sample_interval = \"20ms\"\ncpu_window = \"20ms\"\n")
	var out, errb bytes.Buffer
	code := runApp(context.Background(), newApp(&out, &errb, systemSource), []string{"fulcrum-agent", "--once", "-c", cfgPath}, &errb)
	if code != 0 || !regexp.MustCompile(`^up (ready \d{1,3}%|drain #.+ over threshold \d+%)\n$`).MatchString(out.String()) {
		t.Errorf("got %d %q %q", code, out.String(), errb.String())
	}
}

func TestCheck(t *testing.T) {
	dir := t.TempDir()
	good := writeConfig(t, dir, "listen = \"127.0.0.1:9999\"\n")
	bad := filepath.Join(dir, "bad.toml")
	os.WriteFile(bad, []byte("listen = \"\"\n[cpu]\nthreshold = 2000\n"), 0o644)
	for _, tt := range []struct {
		args     []string
		code     int
		out, err string
	}{
		{[]string{"check", "-c", good}, 0, "configuration is valid\n", ""},
		{[]string{"check", "-c", "../../dist/agent.toml"}, 0, "configuration is valid\n", ""},
		{[]string{"check", "-c", bad}, 1, "", bad + ":1: listen: must not be empty\n" + bad + ":3: cpu.threshold: must be 0..1000, got 2000\n"},
		{[]string{"check", "-c", filepath.Join(dir, "missing.toml")}, 1, "", "fulcrum-agent: open " + filepath.Join(dir, "missing.toml") + ": no such file or directory\n"},
		{[]string{"--once", "-c", bad}, 1, "", bad + ":1: listen: must not be empty\n" + bad + ":3: cpu.threshold: must be 0..1000, got 2000\n"},
	} {
		code, out, errOut := runCLI(t, agent.NewManualSource(agent.Reading{}), tt.args...)
		if code != tt.code || out != tt.out || errOut != tt.err {
			t.Errorf("%v: got %d %q %q, want %d %q %q", tt.args, code, out, errOut, tt.code, tt.out, tt.err)
		}
	}
}
