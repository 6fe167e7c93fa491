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

	"github.com/rs/zerolog"

	"github.com/fulcrum-proxy/fulcrum/conf"
	"github.com/fulcrum-proxy/fulcrum/internal/testutil"
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

// acceptLogChildEnv marks the child process of TestIssue16AcceptLogRateLimit.
const acceptLogChildEnv = "FULCRUM_TEST_ACCEPT_LOG"

// acceptLogEvery is the warning interval of TestIssue16AcceptLogRateLimit,
// shortened from 10 s so that the test sees several intervals.
const acceptLogEvery = 200 * time.Millisecond

// Issue 16: near the descriptor limit, accepts alternate between failing
// (EMFILE) and succeeding, and each success ended the episode, so that the
// next failure logged a warning again: 1,386 lines in 10 s instead of one
// warning, then one every 10 s, then "accepting again". The proxy runs in
// a child process with one descriptor free; the clients run here, in the
// parent, so that each next client waits in the backlog (accept fails)
// while the previous one is served with that descriptor. The warning count
// must stay within one per interval (shortened to acceptLogEvery), and the
// lines must report many more failures than they are (the suppressed ones).
func TestIssue16AcceptLogRateLimit(t *testing.T) {
	if os.Getenv(acceptLogChildEnv) != "" {
		acceptLogChild(t)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestIssue16AcceptLogRateLimit$", "-test.count=1", "-test.v", "-test.timeout=90s")
	cmd.Env = append(os.Environ(), acceptLogChildEnv+"=1")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr testutil.SyncBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var out testutil.SyncBuffer
	lines := make(chan string, 100)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			out.Write(append(sc.Bytes(), '\n'))
			lines <- sc.Text()
		}
	}()
	expect := func(prefix string) string {
		for {
			select {
			case l, ok := <-lines:
				if !ok {
					t.Fatalf("child ended before %q:\n%s%s", prefix, out.String(), stderr.String())
				}
				if strings.HasPrefix(l, prefix) {
					return strings.TrimPrefix(l, prefix)
				}
			case <-ctx.Done():
				t.Fatalf("no %q from the child:\n%s", prefix, out.String())
			}
		}
	}
	addr := expect("addr ")
	io.WriteString(stdin, "fill\n")
	expect("filled")

	// Client i+1 is dialled before client i is served, so that the
	// proxy's next accept finds it while its only descriptor is in use.
	// At least 5 intervals, at least 30 clients, bounded.
	start := time.Now()
	next, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	clients := 0
	for clients < 30 || time.Since(start) < 5*acceptLogEvery {
		if clients == 1000 {
			t.Fatal("1000 clients without reaching 5 intervals")
		}
		cur := next
		if next, err = net.Dial("tcp", addr); err != nil {
			t.Fatal(err)
		}
		cur.SetDeadline(time.Now().Add(10 * time.Second))
		io.WriteString(cur, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
		resp, err := http.ReadResponse(bufio.NewReader(cur), nil)
		if err != nil {
			t.Fatalf("client %d: %v", clients, err)
		}
		resp.Body.Close()
		cur.Close()
		clients++
	}
	next.Close()
	io.WriteString(stdin, "done\n")
	for range lines {
	}
	if err := cmd.Wait(); err != nil || !strings.Contains(out.String(), "--- PASS: TestIssue16AcceptLogRateLimit") {
		t.Fatalf("child process: %v\n%s%s", err, out.String(), stderr.String())
	}
	for _, l := range strings.Split(out.String(), "\n") {
		if strings.Contains(l, "failures reported") {
			t.Logf("%d clients in %v; the child: %s", clients, time.Since(start).Round(time.Millisecond), strings.TrimSpace(l))
		}
	}
}

func acceptLogChild(t *testing.T) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	lim.Cur = min(128, lim.Max)
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	// No server: every request gets a 503 without a server connection,
	// so that each client needs one descriptor only.
	logs := &syncBuffer{}
	p, err := New(testConfig(conf.ModeHTTP, nil, nil), zerolog.New(logs).Level(zerolog.InfoLevel))
	if err != nil {
		t.Fatal(err)
	}
	p.acceptWarnEvery = acceptLogEvery
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	defer p.Shutdown(contextBackground())
	fmt.Printf("addr %s\n", p.Frontends[0].Addrs()[0])
	in := bufio.NewScanner(os.Stdin)
	if !in.Scan() || in.Text() != "fill" {
		t.Fatal("no fill command")
	}
	var fillers []*os.File
	defer func() {
		for _, f := range fillers {
			f.Close()
		}
	}()
	for {
		f, err := os.Open(os.DevNull)
		if err != nil {
			break
		}
		fillers = append(fillers, f)
	}
	fillers[len(fillers)-1].Close()
	fillers = fillers[:len(fillers)-1]
	start := time.Now()
	fmt.Println("filled")
	if !in.Scan() || in.Text() != "done" {
		t.Fatal("no done command")
	}
	elapsed := time.Since(start)

	warnings, agains, reported := 0, 0, 0
	for _, l := range logs.lines() {
		switch l["message"] {
		case "accept failed, backing off":
			warnings++
		case "accepting again":
			agains++
			n, _ := l["failures"].(float64)
			reported += int(n)
		}
	}
	t.Logf("%v: %d warnings, %d accepting again, %d failures reported", elapsed, warnings, agains, reported)
	if most := int(elapsed/acceptLogEvery) + 1; warnings < 1 || warnings > most {
		t.Errorf("%d accept failure warnings in %v, want 1 to %d (one per %v)", warnings, elapsed, most, acceptLogEvery)
	}
	if agains < warnings-1 || agains > warnings {
		t.Errorf("%d \"accepting again\" lines for %d warnings, want one per warning", agains, warnings)
	}
	// Each client past the first met at least one failure; the lines
	// report them all but the last interval's.
	if reported <= 2*warnings {
		t.Errorf("%d failures reported by %d warnings, want many more: each failure was logged, or the accepts did not alternate (the test would prove nothing)", reported, warnings)
	}
}
