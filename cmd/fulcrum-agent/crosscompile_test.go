package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestCrossCompile builds the agent for every platform of `make agents`,
// whose list (AGENT_TARGETS in the Makefile) it reads, so the Windows
// service and the per-platform gopsutil code keep compiling. Skipped with
// -short: a cold build takes about a minute.
func TestCrossCompile(t *testing.T) {
	if testing.Short() {
		t.Skip("cross-compiling four targets is slow")
	}
	mk, err := os.ReadFile("../../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^AGENT_TARGETS\s*:?=\s*(.+)$`).FindSubmatch(mk)
	if m == nil {
		t.Fatal("Makefile: no AGENT_TARGETS line")
	}
	targets := strings.Fields(string(m[1]))
	for _, want := range []string{"linux/amd64", "linux/arm64", "windows/amd64", "darwin/arm64"} {
		found := false
		for _, tg := range targets {
			found = found || tg == want
		}
		if !found {
			t.Errorf("AGENT_TARGETS lacks %s", want)
		}
	}
	goBin := filepath.Join(os.Getenv("GOROOT"), "bin", "go")
	if _, err := os.Stat(goBin); err != nil {
		goBin = "go"
	}
	dir := t.TempDir()
	for _, tg := range targets {
		goos, goarch, _ := strings.Cut(tg, "/")
		cmd := exec.Command(goBin, "build", "-trimpath", "-o", filepath.Join(dir, goos+"-"+goarch), ".")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+goos, "GOARCH="+goarch)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("build %s: %v\n%s", tg, err, out)
		}
	}
}
