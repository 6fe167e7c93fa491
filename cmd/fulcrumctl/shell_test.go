package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fulcrum-proxy/fulcrum/cli"
	"github.com/fulcrum-proxy/fulcrum/runtime"
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

// tmuxPane is a program running in a detached tmux session of a given
// size, driven by keys and read from its pane.
type tmuxPane struct {
	t    *testing.T
	tmux string
	sock string
}

// startTmux runs shell in a width x height tmux pane until the test ends.
func startTmux(t *testing.T, width, height int, shell string) *tmuxPane {
	t.Helper()
	tm := &tmuxPane{t: t, tmux: needTool(t, "tmux", "tmux"), sock: filepath.Join(t.TempDir(), "tmux.sock")}
	tm.run("new-session", "-d", "-x", strconv.Itoa(width), "-y", strconv.Itoa(height), shell)
	t.Cleanup(func() { exec.Command(tm.tmux, "-S", tm.sock, "kill-server").Run() })
	return tm
}

// run runs a tmux command on the pane's server.
func (tm *tmuxPane) run(args ...string) string {
	tm.t.Helper()
	out, err := exec.Command(tm.tmux, append([]string{"-S", tm.sock}, args...)...).CombinedOutput()
	if err != nil {
		tm.t.Fatalf("tmux %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// keys types keys into the pane (tmux send-keys: "Enter", "Tab", "C-c").
func (tm *tmuxPane) keys(keys ...string) {
	tm.t.Helper()
	tm.run(append([]string{"send-keys"}, keys...)...)
}

// history returns everything the pane showed, scrolled-out lines included.
func (tm *tmuxPane) history() string {
	tm.t.Helper()
	return strings.TrimRight(tm.run("capture-pane", "-p", "-S", "-"), "\n") + "\n"
}

// wait waits until cond holds for the pane's history.
func (tm *tmuxPane) wait(what string, cond func(string) bool) string {
	tm.t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		h := tm.history()
		if cond(h) {
			return h
		}
		if time.Now().After(deadline) {
			tm.t.Fatalf("timed out waiting for %s; pane:\n%s", what, h)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// command types a line and waits until its output is followed by a new
// prompt (the count of prompts grows by one).
func (tm *tmuxPane) command(prompt, line string) string {
	tm.t.Helper()
	before := strings.Count(tm.history(), prompt)
	tm.keys(line, "Enter")
	return tm.wait("the reply to "+line, func(h string) bool {
		return strings.Count(h, prompt) > before && strings.HasSuffix(strings.TrimRight(h, "\n "), strings.TrimRight(prompt, " "))
	})
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

// TestShellSessionInTmux: issue 23 in a real terminal. An idle shell keeps
// its session past the server's idle timeout; drain inside the shell is
// fulcrumctl's drain, and asks before taking every server out; after the
// proxy restarts the shell reconnects at the level the operator chose
// and says so.
func TestShellSessionInTmux(t *testing.T) {
	bin := buildCtl(t)
	e := startProxy(t, nil)
	tm := startTmux(t, 120, 50, "env FULCRUMCTL_HISTORY="+filepath.Join(t.TempDir(), "h")+" NO_COLOR=1 TERM=xterm "+bin+" -s "+e.sock+"; sleep 30")
	const prompt = "admin.sock>"
	tm.wait("the prompt", func(h string) bool { return strings.Contains(h, prompt) })

	// Idle for twice the idle timeout: the shell's pings keep the session.
	tm.command(prompt, "set timeout cli 1")
	time.Sleep(2500 * time.Millisecond) // the idle time under test
	if out := tm.command(prompt, "show cli level"); strings.Contains(out, "connection lost") || !strings.Contains(out, "show cli level\nadmin\n") {
		t.Fatalf("after 2.5s idle:\n%s", out)
	}

	// fulcrumctl's verbs inside the shell, with its completion.
	tm.keys("drain web/", "Tab", "Tab")
	tm.wait("drain's candidates", func(h string) bool { return strings.Contains(h, "web/*") && strings.Contains(h, "web/s1") })
	tm.keys("C-c", "C-c")
	tm.wait("the line cancelled", func(h string) bool { return strings.Contains(h, "^C") })
	tm.keys("drain 'web/*'", "Enter")
	tm.wait("the question", func(h string) bool {
		return strings.Contains(h, `"drain web/*" takes every server of backend web out of service; go on? [y/N]`)
	})
	tm.keys("n", "Enter")
	tm.wait("the cancellation", func(h string) bool { return strings.Contains(h, "fulcrumctl: cancelled, nothing sent") })
	if st := statValue(t, e.sock, "web", "s1", "status"); st != "no check" {
		t.Errorf("web/s1 after a cancelled drain: %q", st)
	}
	if out := tm.command(prompt, "drain web/s1"); !strings.Contains(out, "web/s1: DRAIN") {
		t.Errorf("drain in the shell:\n%s", out)
	}
	if out := tm.command(prompt, "ready web/s1"); !strings.Contains(out, "web/s1: READY") {
		t.Errorf("ready in the shell:\n%s", out)
	}
	if out := tm.command(prompt, "drain web/s1 --timeout soon"); !strings.Contains(out, "fulcrumctl: --timeout: usage: \"soon\" is not a duration") {
		t.Errorf("usage error in the shell:\n%s", out)
	}
	if out := tm.command(prompt, "add server web/d1 127.0.0.1:9"); !strings.Contains(out, "New server registered.") {
		t.Errorf("add server in the shell:\n%s", out)
	}
	if out := tm.command(prompt, "remove web/d1 --wait --timeout 5s"); !strings.Contains(out, "web/d1: removed after draining for") {
		t.Errorf("remove in the shell:\n%s", out)
	}

	// Lowered to user, then the proxy restarts.
	tm.command(prompt, "user")
	e.restart(t)
	out := tm.command(prompt, "show cli level")
	if !strings.Contains(out, "fulcrumctl: connection lost; reconnected to "+e.sock+" at level user\nuser\n") {
		t.Errorf("after the restart:\n%s", out)
	}
}

// ages matches the ages a table shows (LASTCHG: "0s", "12s", "3m4s").
var ages = regexp.MustCompile(`\b([0-9]+[dhm])?[0-9]+[smh]\b`)

// stable returns a transcript as the golden comparison reads it: the ages
// of show stat and show servers state (they grow while the test runs)
// read "Ns", and runs of spaces are one space, so that an age of 12s
// does not shift the columns after it. The raw transcript is what the
// golden file holds and what the width check reads.
func stable(transcript, prompt string) string {
	var out []string
	block := ""
	for _, l := range strings.Split(transcript, "\n") {
		if cmd, ok := strings.CutPrefix(l, prompt); ok {
			block = strings.TrimSpace(cmd)
		} else if block == "show stat" || block == "show servers state" {
			l = ages.ReplaceAllString(l, "Ns")
		}
		out = append(out, strings.Join(strings.Fields(l), " "))
	}
	return strings.Join(out, "\n")
}

// TestShellTablesInTmux: golden transcripts of the shell's tables in a
// terminal of 80 and of 120 columns (issue 23): show servers state and
// conn with named states and the columns that fit, show table with its
// header (empty and not), show stat.
func TestShellTablesInTmux(t *testing.T) {
	bin := buildCtl(t)
	// A global maxconn: a backend's session limit (fullconn) derives from
	// it, else from the machine's descriptor limit.
	e := startProxyConfig(t, `
[global]
maxconn = 1000

[defaults]
mode = "http"

[[frontend]]
name = "www"
bind = ["127.0.0.1:0"]
default_backend = "web"
stick_table = { type = "ip", size = 1000, store = ["gpc0", "http_req_rate(10s)"] }
http_request = ["track-sc0 src"]

[[frontend]]
name = "api"
bind = ["127.0.0.1:0"]
maxconn = 100
default_backend = "web"
stick_table = { type = "string", size = 100 }

[[backend]]
name = "web"

[[backend.server]]
name = "s1"
address = "192.0.2.10:8080"
weight = 50

[[backend.server]]
name = "s2"
address = "192.0.2.11:8080"
disabled = true

[[backend.server]]
name = "backup1"
address = "192.0.2.12:8080"
backup = true
maxconn = 20
`, runtime.Options{})
	if out, err := cli.Run(cli.Addr(e.sock), "set table www key 10.0.0.1 data.gpc0 3; set server web/s1 state drain", 5*time.Second); err != nil || strings.TrimSpace(out) != "" {
		t.Fatalf("setup: %q %v", out, err)
	}
	for _, width := range []int{80, 120} {
		t.Run(strconv.Itoa(width), func(t *testing.T) {
			// From the socket's directory: the banner names "admin.sock".
			tm := startTmux(t, width, 200, "cd "+filepath.Dir(e.sock)+" && env FULCRUMCTL_HISTORY="+filepath.Join(t.TempDir(), "h")+
				" NO_COLOR=1 TERM=xterm "+bin+" -s admin.sock; sleep 30")
			const prompt = "admin.sock> "
			tm.wait("the prompt", func(h string) bool { return strings.Contains(h, strings.TrimSpace(prompt)) })
			for _, cmd := range []string{"show servers state", "show servers conn", "show table", "show table www", "show table api", "show stat"} {
				tm.command(strings.TrimSpace(prompt), cmd)
			}
			got := tm.history()
			for _, l := range strings.Split(got, "\n") {
				if n := len([]rune(l)); n > width {
					t.Errorf("line of %d columns in a %d-column terminal: %q", n, width, l)
				}
			}
			tmuxGolden(t, fmt.Sprintf("shell-tables-%d.txt", width), got, func(s string) string { return stable(s, prompt) })
		})
	}
}

var update = flag.Bool("update", false, "rewrite the golden files of ../../testdata/cli from the current output")

// tmuxGolden compares got with testdata/cli/name, both read through
// norm, or rewrites the file with got.
func tmuxGolden(t *testing.T, name, got string, norm func(string) string) {
	t.Helper()
	path := filepath.Join("..", "..", "testdata", "cli", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test ./cmd/fulcrumctl -run TestShellTablesInTmux -update writes it)", err)
	}
	if norm(got) != norm(string(want)) {
		t.Errorf("%s differs (-update to accept):\n--- got\n%s--- want\n%s", name, got, want)
	}
}
