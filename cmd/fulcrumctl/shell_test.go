package main

import (
	"github.com/fulcrum-proxy/fulcrum/cli"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// needTool returns the path of an external program the test drives. When
// it is missing the test fails under CI=true (the CI installs it) and is
// skipped otherwise, saying what to install.
func needTool(t *testing.T, name, pkg string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err == nil {
		return path
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s not found: the CI must install the Debian package %s (.ci/run PKGS)", name, pkg)
	}
	t.Skipf("%s not found: apt-get install %s to run this test", name, pkg)
	return ""
}

// buildCtl builds fulcrumctl into a temporary directory.
func buildCtl(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "fulcrumctl")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// TestShellInTmux drives the interactive shell in a real terminal (tmux):
// Tab completes servers after `set server web/`, Ctrl-C cancels the line,
// `show stat` renders a table, Up recalls the last command, Ctrl-D quits
// and the history file keeps the commands.
func TestShellInTmux(t *testing.T) {
	tmux := needTool(t, "tmux", "tmux")
	bin := buildCtl(t)
	e := startProxy(t, nil)
	dir := t.TempDir()
	hist := filepath.Join(dir, "history")
	tsock := filepath.Join(dir, "tmux.sock")
	tm := func(args ...string) string {
		t.Helper()
		out, err := exec.Command(tmux, append([]string{"-S", tsock}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("tmux %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	tm("new-session", "-d", "-x", "100", "-y", "40",
		"env FULCRUMCTL_HISTORY="+hist+" NO_COLOR=1 TERM=xterm "+bin+" -s "+e.sock+"; sleep 30")
	t.Cleanup(func() { exec.Command(tmux, "-S", tsock, "kill-server").Run() })
	pane := func() string { return tm("capture-pane", "-p") }
	waitPane := func(what string, cond func(string) bool) string {
		t.Helper()
		var last string
		deadline := time.Now().Add(15 * time.Second)
		for {
			last = pane()
			if cond(last) {
				return last
			}
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s; pane:\n%s", what, last)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	waitPane("the prompt", func(p string) bool { return strings.Contains(p, "admin.sock>") })

	tm("send-keys", "set server web/", "Tab")
	// The first Tab inserts the common prefix, the second lists the servers.
	waitPane("the common prefix", func(p string) bool { return strings.Contains(p, "set server web/s") })
	tm("send-keys", "Tab")
	offered := func(p string) bool {
		for _, l := range strings.Split(p, "\n") {
			if strings.Contains(l, "s1") && strings.Contains(l, "s2") {
				return true
			}
		}
		return false
	}
	t.Logf("completion:\n%s", waitPane("servers offered", offered))
	// Ctrl-C first closes the list of candidates, then cancels the line.
	tm("send-keys", "C-c")
	waitPane("the candidates closed", func(p string) bool { return !offered(p) })
	tm("send-keys", "C-c")
	waitPane("the line cancelled", func(p string) bool { return strings.Contains(p, "^C") })

	tm("send-keys", "show stat", "Enter")
	out := waitPane("the table", func(p string) bool { return strings.Contains(p, "PROXY   SERVER") })
	if !regexp.MustCompile(`(?m)^web +s1 `).MatchString(out) || strings.Contains(out, "# pxname") {
		t.Errorf("show stat is not a table:\n%s", out)
	}
	tm("send-keys", "Up")
	waitPane("the last command recalled", func(p string) bool {
		lines := strings.Split(strings.TrimRight(p, "\n "), "\n")
		return strings.HasSuffix(strings.TrimSpace(lines[len(lines)-1]), "admin.sock> show stat")
	})
	tm("send-keys", "C-u", "C-d")
	waitPane("the history file", func(string) bool {
		b, _ := os.ReadFile(hist)
		return strings.Contains(string(b), "show stat")
	})
}

// TestWatchInTmux runs `fulcrumctl watch` on an 80-column terminal: the
// servers are listed within 80 columns, a state change made meanwhile is
// redrawn in place, and `q` quits.
func TestWatchInTmux(t *testing.T) {
	tmux := needTool(t, "tmux", "tmux")
	bin := buildCtl(t)
	e := startProxy(t, nil)
	tsock := filepath.Join(t.TempDir(), "tmux.sock")
	tm := func(args ...string) string {
		t.Helper()
		out, err := exec.Command(tmux, append([]string{"-S", tsock}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("tmux %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	tm("new-session", "-d", "-x", "80", "-y", "24",
		"env NO_COLOR=1 TERM=xterm "+bin+" -s "+e.sock+" watch web --interval 100ms; echo WATCH-ENDED; sleep 30")
	t.Cleanup(func() { exec.Command(tmux, "-S", tsock, "kill-server").Run() })
	waitPane := func(what string, cond func(string) bool) string {
		t.Helper()
		var last string
		deadline := time.Now().Add(15 * time.Second)
		for {
			last = tm("capture-pane", "-p")
			if cond(last) {
				return last
			}
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s; pane:\n%s", what, last)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	row := func(p, server, status string) bool {
		for _, l := range strings.Split(p, "\n") {
			if f := strings.Fields(l); len(f) >= 3 && f[0] == "web" && f[1] == server && strings.Contains(l, status) {
				return true
			}
		}
		return false
	}
	// The servers have no health checks: their status reads "no check".
	first := waitPane("both servers", func(p string) bool { return row(p, "s1", "no check") && row(p, "s2", "no check") })
	for _, l := range strings.Split(first, "\n") {
		if len([]rune(l)) > 80 {
			t.Errorf("line wider than 80 columns: %q", l)
		}
	}
	if _, err := cli.Run(cli.Addr(e.sock), "set server web/s2 state drain", 5*time.Second); err != nil {
		t.Fatal(err)
	}
	waitPane("s2 redrawn as DRAIN", func(p string) bool { return row(p, "s2", "DRAIN") && row(p, "s1", "no check") })
	tm("send-keys", "q")
	waitPane("watch to quit", func(p string) bool { return strings.Contains(p, "WATCH-ENDED") })
}
