package runtime

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// pipelineWeights are the weights a pipeline of n `set weight` commands
// sets, in order: each differs from the one before (and from the
// configured 10), so that each is logged as a change.
func pipelineWeights(n int) []int {
	w := make([]int, n)
	for i := range w {
		w[i] = (i+1)%200 + 1
	}
	return w
}

// pipelineLines returns the pipeline's commands, per lines of perLine
// commands chained with ';'.
func pipelineLines(weights []int, perLine int) string {
	var b strings.Builder
	for i, w := range weights {
		fmt.Fprintf(&b, "set weight web/s1 %d", w)
		if (i+1)%perLine == 0 {
			b.WriteByte('\n')
		} else {
			b.WriteByte(';')
		}
	}
	return b.String()
}

// appliedWeights returns the weights set on web/s1 according to the change
// log, in order, from the log's byte offset from on.
func appliedWeights(t *testing.T, e *testEnv, from int) []int {
	t.Helper()
	var got []int
	for _, l := range strings.Split(e.log.String()[from:], "\n") {
		var m struct {
			Message string
			Server  string
			Weight  int
		}
		if json.Unmarshal([]byte(l), &m) == nil && m.Message == "server weight changed" && m.Server == "web/s1" {
			got = append(got, m.Weight)
		}
	}
	return got
}

// Issue 16: a pipeline of 600 `set weight` lines through socat applied
// the 191 that fitted in the session's first 4 KiB read buffer, then the
// session closed (socat exited 0). Every command must run, in order,
// however many arrive at once: from a Go client writing them in one write
// (with and without prompt mode, one per line or chained with ';'), and
// from socat reading a file or a shell loop.
func TestIssue16PipelineRunsEveryCommand(t *testing.T) {
	e := startEnv(t, fuzzConfig)
	sock := e.socks[LevelAdmin]
	weights := pipelineWeights(600)
	socat := func(t *testing.T, shell string) string {
		path := needTool(t, "socat", "socat")
		cmd := exec.Command("/bin/sh", "-c", shell+` | "$0" stdio unix-connect:"$1"`, path, sock)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("socat: %v\n%s", err, stderr.String())
		}
		return string(out)
	}
	file := filepath.Join(t.TempDir(), "weights.txt")
	if err := os.WriteFile(file, []byte(pipelineLines(weights, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		run  func(t *testing.T) string // the output
		want string
	}{
		{"one write", func(t *testing.T) string {
			return dialRun(t, "unix", sock, pipelineLines(weights, 1))
		}, strings.Repeat("\n", 600)},
		{"one write, chained with semicolons", func(t *testing.T) string {
			return dialRun(t, "unix", sock, pipelineLines(weights, 100))
		}, strings.Repeat("\n", 600)},
		{"one write, prompt mode", func(t *testing.T) string {
			return dialRun(t, "unix", sock, "prompt\n"+pipelineLines(weights, 1)+"quit\n")
		}, strings.Repeat("\n> ", 601)},
		{"socat reading a file", func(t *testing.T) string {
			return socat(t, fmt.Sprintf("cat %q", file))
		}, strings.Repeat("\n", 600)},
		{"socat after a shell loop", func(t *testing.T) string {
			return socat(t, `i=1; while [ $i -le 600 ]; do echo "set weight web/s1 $((i % 200 + 1))"; i=$((i + 1)); done`)
		}, strings.Repeat("\n", 600)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e.run(t, LevelAdmin, "set weight web/s1 10")
			from := len(e.log.String())
			if got := tc.run(t); got != tc.want {
				t.Errorf("output: %d bytes %q..., want %d bytes", len(got), got[:min(len(got), 20)], len(tc.want))
			}
			if got := appliedWeights(t, e, from); !slices.Equal(got, weights) {
				t.Errorf("weights applied: %d, want all %d in order (got first %v, last %v)",
					len(got), len(weights), got[:min(len(got), 3)], got[max(len(got)-3, 0):])
			}
			if got := e.run(t, LevelAdmin, "get weight web/s1"); got != "1 (initial 10)\n\n" {
				t.Errorf("get weight after the pipeline: %q, want %q", got, "1 (initial 10)\n\n")
			}
		})
	}
}

// A client that sends one line and waits for the close (the Prometheus
// exporter, fulcrumctl) gets it at once: only a client that sent several
// lines is given pipelineGrace for its next one. With a grace of an hour,
// the one-shot client is still answered and closed.
func TestOneShotClosesAtOnce(t *testing.T) {
	e := startEnv(t, fuzzConfig)
	e.api.mu.Lock() // the sessions' goroutines read it after taking mu
	e.api.pipelineGrace = time.Hour
	e.api.mu.Unlock()
	for _, line := range []string{"show cli level\n", "show cli level;show cli level\n"} {
		c, err := net.Dial("unix", e.socks[LevelUser])
		if err != nil {
			t.Fatal(err)
		}
		io.WriteString(c, line)
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		b, err := io.ReadAll(c)
		c.Close()
		if want := strings.Repeat("user\n\n", strings.Count(line, ";")+1); err != nil || string(b) != want {
			t.Errorf("%q: got %q, %v; want %q then the close", line, b, err, want)
		}
	}
}
