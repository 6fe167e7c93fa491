//go:build linux

package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/fulcrum-proxy/fulcrum/cli"
	"github.com/fulcrum-proxy/fulcrum/conf"
	"github.com/fulcrum-proxy/fulcrum/internal/testutil"
	"github.com/fulcrum-proxy/fulcrum/proxy/netio/uring"
	"github.com/rs/zerolog"
)

// Issue 16: started under `ulimit -n 256` with no global maxconn, fulcrum
// accepted clients until the descriptor table was full, then failed their
// server connections (771 of 1,000 concurrent clients got a 503) and its
// idle pooled connections kept the table full; show info said Maxconn 0
// and had no Ulimit-n. HAProxy 2.6 derives maxconn from the limit (114
// here, its show info checked side by side), so that clients past it wait
// in the backlog, and serves them all. The daemon runs in a child process
// started by sh after `ulimit`, as an operator would start it.
func TestIssue16MaxconnFromDescriptorLimit(t *testing.T) {
	for _, tc := range []struct {
		name    string
		ulimit  string // sh commands run before fulcrum
		clients int
		want    []string // show info lines
	}{
		// Soft and hard 256: maxconn (256 - 28 reserved) / 2, HAProxy's.
		{"ulimit -n 256", "ulimit -n 256", 1000,
			[]string{"Ulimit-n: 256", "Maxsock: 256", "Maxconn: 114", "Hard_maxconn: 114"}},
		// A soft limit below the hard one is raised to it at start, as
		// HAProxy does (its show info: Ulimit-n 1024, Maxconn 498).
		{"soft 128 hard 1024", "ulimit -Sn 128 && ulimit -Hn 1024", 0,
			[]string{"Ulimit-n: 1024", "Maxsock: 1024", "Maxconn: 498", "Hard_maxconn: 498"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				io.WriteString(w, "ok\n")
			}))
			defer up.Close()
			sock := filepath.Join(t.TempDir(), "admin.sock")
			// nbthread 2 fixes the reserved descriptors (3 per thread)
			// whatever the machine's CPUs.
			cfg := writeFile(t, "f.toml", fmt.Sprintf(`
[global]
nbthread = 2
[[global.stats_socket]]
path = %q
[[frontend]]
name = "www"
bind = ["127.0.0.1:0"]
default_backend = "web"
[[backend]]
name = "web"
[[backend.server]]
name = "s1"
address = %q
`, sock, up.Listener.Addr().String()))
			d := startLimited(t, tc.ulimit, cfg)
			info, err := cli.Run(cli.Addr(sock), "show info", 5*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range tc.want {
				if !strings.Contains(info, "\n"+w+"\n") {
					t.Errorf("show info lacks %q:\n%s", w, info)
				}
			}
			if tc.clients == 0 {
				return
			}
			got := concurrentGets(d.addr, tc.clients)
			if want := fmt.Sprintf("map[200:%d]", tc.clients); fmt.Sprint(got) != want {
				t.Errorf("%d concurrent clients: got %v, want %s", tc.clients, got, want)
			}
			if n := strings.Count(d.log.String(), "accept failed"); n != 0 {
				t.Errorf("%d accept failures logged, want 0 (descriptors never ran out)", n)
			}
		})
	}
}

// limitedDaemon is `fulcrum run` in a child process.
type limitedDaemon struct {
	addr string               // the frontend's bound address
	log  *testutil.SyncBuffer // its stderr
}

// startLimited runs `fulcrum run -c cfg` (this test binary acting as the
// command) through sh after the ulimit commands, and stops it with
// SIGTERM when t ends.
func startLimited(t *testing.T, ulimit, cfg string) *limitedDaemon {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	cmd := exec.CommandContext(ctx, "/bin/sh", "-c", ulimit+` && exec "$0" run -c "$1"`, os.Args[0], cfg)
	cmd.Env = append(os.Environ(), "FULCRUM_TEST_MAIN=1")
	d := &limitedDaemon{log: &testutil.SyncBuffer{}}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	addrc := make(chan string, 1)
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			d.log.Write(append(sc.Bytes(), '\n'))
			var m map[string]any
			if json.Unmarshal(sc.Bytes(), &m) == nil && m["message"] == "listening" {
				select {
				case addrc <- fmt.Sprint(m["bind"]):
				default:
				}
			}
		}
	}()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		<-copied
		if err := cmd.Wait(); err != nil {
			t.Errorf("fulcrum exit: %v\n%s", err, d.log.String())
		}
		cancel()
	})
	select {
	case d.addr = <-addrc:
	case <-copied:
		t.Fatalf("fulcrum exited before listening:\n%s", d.log.String())
	case <-time.After(20 * time.Second):
		t.Fatalf("fulcrum did not report listening:\n%s", d.log.String())
	}
	return d
}

// concurrentGets opens n connections to addr at once, sends one request on
// each and returns the count of each status (an error counts as 0).
func concurrentGets(addr string, n int) map[int]int {
	var (
		mu    sync.Mutex
		codes = map[int]int{}
		wg    sync.WaitGroup
	)
	start := make(chan struct{})
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			code := 0
			defer func() {
				mu.Lock()
				codes[code]++
				mu.Unlock()
			}()
			c, err := net.DialTimeout("tcp", addr, 30*time.Second)
			if err != nil {
				return
			}
			defer c.Close()
			c.SetDeadline(time.Now().Add(30 * time.Second))
			if _, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"); err != nil {
				return
			}
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil {
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			code = resp.StatusCode
		}()
	}
	close(start)
	wg.Wait()
	return codes
}

// TestDefaultThreads: nbthread's default is one thread fewer than the CPUs
// (at least one); the GOMAXPROCS environment variable and nbthread
// override it. show info's Nbthread says what the process runs with.
func TestDefaultThreads(t *testing.T) {
	for cpus, want := range map[int]int{1: 1, 2: 1, 3: 2, 4: 3, 64: 63} {
		if got := defaultThreads(cpus); got != want {
			t.Errorf("defaultThreads(%d) = %d, want %d", cpus, got, want)
		}
	}
	// config is a file with global in [global] and an admin socket at sock.
	config := func(global, sock string) string {
		return fmt.Sprintf(`[global]
%s
[[global.stats_socket]]
path = %q
level = "admin"
[[frontend]]
name = "www"
bind = ["127.0.0.1:0"]
mode = "tcp"
default_backend = "b"
[[backend]]
name = "b"
mode = "tcp"
[[backend.server]]
name = "s1"
address = "127.0.0.1:1"
`, global, sock)
	}
	showInfo := func(sock string) string { return socketCmd(t, sock, "show info") }
	for _, tc := range []struct {
		name, shell, global string
		want                int
	}{
		{"default", "unset GOMAXPROCS", "", defaultThreads(goruntime.NumCPU())},
		{"GOMAXPROCS", "export GOMAXPROCS=3", "", 3},
		{"nbthread", "unset GOMAXPROCS", "nbthread = 3", 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sock := filepath.Join(t.TempDir(), "s.sock")
			startLimited(t, tc.shell, writeFile(t, "t.toml", config(tc.global, sock)))
			want := fmt.Sprintf("Nbthread: %d\n", tc.want)
			if info := showInfo(sock); !strings.Contains(info, want) {
				t.Errorf("show info has no %q:\n%s", strings.TrimSpace(want), info)
			}
		})
	}
	// A reload applies a new nbthread, and one that removes it returns to
	// the default, as a restart would.
	t.Run("reload", func(t *testing.T) {
		sock := filepath.Join(t.TempDir(), "s.sock")
		cfg := writeFile(t, "t.toml", config("", sock))
		startLimited(t, "unset GOMAXPROCS", cfg)
		for _, step := range []struct {
			global string
			want   int
		}{{"nbthread = 3", 3}, {"", defaultThreads(goruntime.NumCPU())}} {
			if err := os.WriteFile(cfg, []byte(config(step.global, sock)), 0o644); err != nil {
				t.Fatal(err)
			}
			if got := socketCmd(t, sock, "reload"); !strings.HasPrefix(got, "Success=1") {
				t.Fatalf("reload: %q", got)
			}
			want := fmt.Sprintf("Nbthread: %d\n", step.want)
			if info := showInfo(sock); !strings.Contains(info, want) {
				t.Errorf("after a reload with %q: show info has no %q", step.global, strings.TrimSpace(want))
			}
		}
	})
	// Under tune_netio "uring" the io_uring relay's thread has a P of its
	// own while it relays sessions: one more.
	t.Run("uring", func(t *testing.T) {
		if r, err := uring.NewRelay(uring.RelayConfig{Buffers: 2, BufSize: 4096, Entries: 8}); err != nil {
			if os.Getenv("CI") != "" {
				t.Fatalf("io_uring: %v", err)
			}
			t.Skipf("io_uring refused: %v", err)
		} else {
			r.Close()
		}
		sock := filepath.Join(t.TempDir(), "s.sock")
		text := strings.Replace(config(`tune_netio = "uring"`, sock), "127.0.0.1:1", testutil.EchoServer(t), 1)
		d := startLimited(t, "unset GOMAXPROCS FULCRUM_TUNE_NETIO", writeFile(t, "t.toml", text))
		base := defaultThreads(goruntime.NumCPU())
		if info := showInfo(sock); !strings.Contains(info, fmt.Sprintf("Nbthread: %d\n", base)) {
			t.Errorf("before a session: show info has no Nbthread: %d", base)
		}
		c := testutil.DialEcho(t, d.addr)
		defer c.Close()
		want := fmt.Sprintf("Nbthread: %d\n", base+1)
		if info := showInfo(sock); !strings.Contains(info, want) {
			t.Errorf("with a session on the relay: show info has no %q:\n%s", strings.TrimSpace(want), info)
		}
		// A second after the last session ends, the thread is given back.
		c.Close()
		want = fmt.Sprintf("Nbthread: %d\n", base)
		waitFor(t, 10*time.Second, "Nbthread back to "+fmt.Sprint(base), func() bool {
			return strings.Contains(showInfo(sock), want)
		})
	})
}

// TestSizeLogsChangesOnly: the descriptor line is logged at start, and by
// a reload only when the maxconn changes.
func TestSizeLogsChangesOnly(t *testing.T) {
	l := fdLimit{nofile: 1000, perConn: 2}
	var buf bytes.Buffer
	log := zerolog.New(&buf)
	cfg := &conf.Config{}
	l.size(cfg, log, 0)
	derived := cfg.Global.MaxConn
	if derived == 0 || !strings.Contains(buf.String(), "maxconn derived from the file descriptor limit") {
		t.Fatalf("at start: maxconn %d, log %q", derived, buf.String())
	}
	buf.Reset()
	again := &conf.Config{}
	l.size(again, log, derived)
	if again.Global.MaxConn != derived || buf.Len() != 0 {
		t.Errorf("a reload keeping maxconn %d: got %d, log %q", derived, again.Global.MaxConn, buf.String())
	}
	changed := &conf.Config{}
	changed.Global.MaxConn = 100
	l.size(changed, log, derived)
	if !strings.Contains(buf.String(), `"maxconn":100`) {
		t.Errorf("a reload changing maxconn: log %q", buf.String())
	}
}
