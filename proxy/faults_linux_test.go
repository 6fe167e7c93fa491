package proxy

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fulcrum-proxy/fulcrum/conf"
)

// The file descriptor exhaustion fault of faults_test.go, on Linux (where
// RLIMIT_NOFILE and EMFILE behave as checked here).

// fdChildEnv marks the child process that runs TestFaultFDExhaustion's body.
const fdChildEnv = "FULCRUM_TEST_FD_EXHAUSTION"

// With the file descriptor table full, accept fails with EMFILE: the
// accept loop backs off (5ms doubling up to 1s, as net/http's Server) and
// logs it once, instead of spinning or exiting; the pending connection is
// served once descriptors are free again. RLIMIT_NOFILE is process-wide, so
// the body runs in a child process (this test binary, re-executed).
func TestFaultFDExhaustion(t *testing.T) {
	if os.Getenv(fdChildEnv) == "" {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestFaultFDExhaustion$", "-test.count=1", "-test.v", "-test.timeout=90s")
		cmd.Env = append(os.Environ(), fdChildEnv+"=1")
		out, err := cmd.CombinedOutput()
		if err != nil || !bytes.Contains(out, []byte("--- PASS: TestFaultFDExhaustion")) {
			t.Fatalf("child process: %v\n%s", err, out)
		}
		return
	}
	fdExhaustionChild(t)
}

func fdExhaustionChild(t *testing.T) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	lim.Cur = min(64, lim.Max)
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	u := newUpstream(t, "s1")
	p, addr, logs := startLoggedProxy(t, testConfig(conf.ModeHTTP, []string{u.addr()}, nil))
	wantServedBy(t, addr, u)

	// Fill the descriptor table, then free one for a client: its connect
	// completes in the kernel, but the proxy has no descriptor to accept it.
	var fillers []*os.File
	defer func() {
		for _, f := range fillers {
			f.Close()
		}
	}()
	for {
		f, err := os.Open(os.DevNull)
		if err != nil {
			if !errors.Is(err, syscall.EMFILE) {
				t.Fatal(err)
			}
			break
		}
		fillers = append(fillers, f)
	}
	if len(fillers) == 0 {
		t.Fatal("no descriptor left to fill")
	}
	fillers[len(fillers)-1].Close()
	fillers = fillers[:len(fillers)-1]
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatalf("dial with one descriptor free: %v", err)
	}
	defer c.Close()
	acceptWarnings := func() (lines []map[string]any) {
		for _, l := range logs.lines() {
			if l["message"] == "accept failed, backing off" {
				lines = append(lines, l)
			}
		}
		return lines
	}
	waitFor(t, 10*time.Second, "the accept failure to be logged", func() bool { return len(acceptWarnings()) > 0 })
	if w := acceptWarnings()[0]; !strings.Contains(fmt.Sprint(w["error"]), "too many open files") {
		t.Errorf("accept warning %v, want EMFILE", w)
	}

	// Descriptors free again: the waiting connection is accepted and served.
	for _, f := range fillers {
		f.Close()
	}
	fillers = nil
	c.SetDeadline(time.Now().Add(10 * time.Second))
	io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("the connection that waited: %v, %v; want 200", resp, err)
	}
	resp.Body.Close()
	var recovered map[string]any
	waitFor(t, 10*time.Second, "the recovery to be logged", func() bool {
		for _, l := range logs.lines() {
			if l["message"] == "accepting again" {
				recovered = l
				return true
			}
		}
		return false
	})
	// Backing off, the loop retried a handful of times while the table
	// was full; spinning, it would have retried thousands of times.
	if n, _ := recovered["failures"].(float64); n < 1 || n > 100 {
		t.Errorf("accept failures while the table was full: %v, want a few", recovered["failures"])
	}
	if w := acceptWarnings(); len(w) != 1 {
		t.Errorf("%d accept warnings, want 1 (rate-limited)", len(w))
	}
	wantServedBy(t, addr, u)
	if p.Snapshot().Frontends[0].Stot < 3 {
		t.Errorf("frontend sessions %d, want 3", p.Snapshot().Frontends[0].Stot)
	}
}
