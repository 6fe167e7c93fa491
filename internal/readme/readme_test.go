package readme

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fulcrum-proxy/fulcrum/internal/testutil"
)

// block is a fenced block of the README that takes part in the test.
type block struct {
	line int    // line of the opening fence
	file string // {file=NAME}: written to NAME
	run  bool   // {run}
	text string
}

// fence matches an opening fence with its info string.
var fence = regexp.MustCompile("^```([a-z]*)\\s*(.*)$")

// blocks returns the README's blocks marked {run} or {file=NAME}.
func blocks(t *testing.T, readme string) []block {
	t.Helper()
	var out []block
	lines := strings.Split(readme, "\n")
	for i := 0; i < len(lines); i++ {
		m := fence.FindStringSubmatch(lines[i])
		if m == nil || lines[i] == "```" {
			continue
		}
		start := i
		var body []string
		for i++; i < len(lines) && lines[i] != "```"; i++ {
			body = append(body, lines[i])
		}
		b := block{line: start + 1, text: strings.Join(body, "\n") + "\n"}
		attrs := m[2]
		b.run = strings.Contains(attrs, "{run}")
		if f := regexp.MustCompile(`\{file=([^}]+)\}`).FindStringSubmatch(attrs); f != nil {
			b.file = f[1]
		}
		if b.run || b.file != "" {
			out = append(out, b)
		}
	}
	return out
}

// env is where the blocks run.
type env struct {
	dir   string
	path  string            // PATH, the built binaries first
	subst map[string]string // README text -> this run's value
}

// durations matches a duration in expected and actual output.
var durations = regexp.MustCompile(`\b[0-9]+(\.[0-9]+)?(ns|µs|us|ms|s|m)\b`)

// normalise makes output comparable: substitutions, durations, trailing
// blanks.
func (e *env) normalise(s string) string {
	var out []string
	for _, l := range strings.Split(strings.TrimRight(s, "\n"), "\n") {
		l = durations.ReplaceAllString(e.apply(l), "<duration>")
		out = append(out, strings.TrimRight(l, " \t"))
	}
	return strings.Join(out, "\n")
}

// apply replaces the README's fixed addresses by this run's.
func (e *env) apply(s string) string {
	for from, to := range e.subst {
		s = strings.ReplaceAll(s, from, to)
	}
	return s
}

// sh runs one command with bash in the test's directory, bounded in time,
// and returns its stdout and stderr together and its error.
func (e *env) sh(command string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", e.apply(command))
	cmd.Dir = e.dir
	cmd.Env = append(os.Environ(), "PATH="+e.path, "NO_COLOR=1", "FULCRUM_SOCKET=", "FULCRUMCTL_HISTORY="+filepath.Join(e.dir, ".history"))
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// build builds the binaries as `make build` does, into dir.
func build(t *testing.T, dir string) {
	t.Helper()
	for _, name := range []string{"fulcrum", "fulcrumctl"} {
		cmd := exec.Command("go", "build", "-o", filepath.Join(dir, name), "./cmd/"+name)
		cmd.Dir = "../.."
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go build %s: %v\n%s", name, err, out)
		}
	}
}

// freeAddr returns a loopback address whose port was free a moment ago.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// startDemo runs `fulcrum demo` in dir until the test ends.
func startDemo(t *testing.T, bin, dir, listen, stats string) {
	t.Helper()
	cmd := exec.Command(bin, "demo", "--listen", listen, "--stats", stats, "--socket", "fulcrum.sock")
	cmd.Dir = dir
	var out testutil.SyncBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	})
	deadline := time.Now().Add(20 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", listen, time.Second)
		_, serr := os.Stat(filepath.Join(dir, "fulcrum.sock"))
		if err == nil {
			c.Close()
			if serr == nil {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the demo does not listen on %s: %v\n%s", listen, err, out.String())
		}
		time.Sleep(20 * time.Millisecond) // polling for the listener, with a deadline
	}
}

// transcript splits a {run} block into its commands and their expected
// output; isTranscript is false for a block without "$ " lines, a script.
func transcript(text string) (cmds, wants []string, isTranscript bool) {
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		l := sc.Text()
		if c, ok := strings.CutPrefix(l, "$ "); ok {
			isTranscript = true
			cmds = append(cmds, c)
			wants = append(wants, "")
			continue
		}
		if isTranscript {
			wants[len(wants)-1] += l + "\n"
		}
	}
	return cmds, wants, isTranscript
}

// TestREADMEExamples runs the README's marked blocks (see the package
// comment) against binaries built from this tree.
func TestREADMEExamples(t *testing.T) {
	testutil.NeedTool(t, "bash", "bash")
	testutil.NeedTool(t, "curl", "curl")
	testutil.NeedTool(t, "socat", "socat")
	data, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	bs := blocks(t, string(data))
	runs := 0
	for _, b := range bs {
		if b.run {
			runs++
		}
	}
	if runs < 5 {
		t.Fatalf("README.md has %d blocks marked {run}: the marking is lost", runs)
	}
	bin := t.TempDir()
	build(t, bin)
	dir, err := os.MkdirTemp("", "readme") // short: a Unix socket path is at most 107 bytes
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	listen, stats := freeAddr(t), freeAddr(t)
	e := &env{dir: dir, path: bin + string(os.PathListSeparator) + os.Getenv("PATH"), subst: map[string]string{
		"127.0.0.1:8080":          listen,
		"127.0.0.1:8404":          stats,
		"/run/fulcrum/admin.sock": "./fulcrum.sock",
	}}
	startDemo(t, filepath.Join(bin, "fulcrum"), dir, listen, stats)
	for _, b := range bs {
		name := fmt.Sprintf("README.md:%d", b.line)
		if b.file != "" {
			if err := os.WriteFile(filepath.Join(dir, b.file), []byte(e.apply(b.text)), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if !b.run {
			continue
		}
		cmds, wants, isTranscript := transcript(b.text)
		if !isTranscript {
			// A script: one bash, stopping at the first command that fails.
			if out, err := e.sh("set -e\n" + b.text); err != nil {
				t.Errorf("%s: %v\n%s", name, err, out)
			}
			continue
		}
		for i, c := range cmds {
			out, _ := e.sh(c)
			if got, want := e.normalise(out), e.normalise(wants[i]); got != want {
				t.Errorf("%s: $ %s\n--- got\n%s\n--- the README says\n%s", name, c, got, want)
			}
		}
	}
}
