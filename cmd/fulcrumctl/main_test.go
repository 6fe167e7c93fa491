package main

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fulcrum-proxy/fulcrum/cli"
	"github.com/fulcrum-proxy/fulcrum/conf"
	"github.com/fulcrum-proxy/fulcrum/proxy"
	"github.com/fulcrum-proxy/fulcrum/runtime"
	"github.com/rs/zerolog"
	"go.uber.org/goleak"
)

// TestMain fails the package when a test leaves a goroutine behind.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// Not ours: the first readline instance of a process (cli.Shell)
		// starts a SIGWINCH watcher that lives as long as the process
		// (chzyer/readline utils_unix.go DefaultOnWidthChanged, a
		// sync.Once, never stopped) and that readline's Close leaves.
		goleak.IgnoreTopFunction("github.com/chzyer/readline.DefaultOnWidthChanged.func1.1"),
	)
}

// env is a running proxy with its Runtime API on an admin socket.
type env struct {
	sock string
	url  string // the frontend
	p    *proxy.Proxy
	api  *runtime.API
	opts runtime.Options
}

// restart closes the Runtime API and opens a new one on the same socket,
// as a restarted proxy does: every session is cut.
func (e *env) restart(t *testing.T) {
	t.Helper()
	e.api.Close()
	e.api = runtime.New(e.p, zerolog.Nop(), e.opts)
	api := e.api
	t.Cleanup(func() { api.Close() })
	if err := e.api.Listen(runtime.Socket{Path: e.sock, Level: runtime.LevelAdmin}); err != nil {
		t.Fatal(err)
	}
}

// upstream answers every request with its name, after hold is closed
// when the path is /slow.
func upstream(t *testing.T, name string, hold chan struct{}) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" && hold != nil {
			<-hold
		}
		io.WriteString(w, name+"\n")
	})}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	return l.Addr().String()
}

// startProxy runs a proxy with a frontend over web/s1, web/s2 (both
// upstreams of this test) and an admin socket.
func startProxy(t *testing.T, hold chan struct{}) *env {
	t.Helper()
	return startProxyConfig(t, fmt.Sprintf(`
[defaults]
mode = "http"
timeout_connect = "2s"
timeout_server = "20s"
retries = 2

[[frontend]]
name = "fe_web"
bind = ["127.0.0.1:0"]
default_backend = "web"

[[backend]]
name = "web"
balance = "roundrobin"

[[backend.server]]
name = "s1"
address = %q

[[backend.server]]
name = "s2"
address = %q
`, upstream(t, "s1", hold), upstream(t, "s2", hold)), runtime.Options{})
}

// startProxyConfig runs a proxy on a configuration (its first frontend is
// the one env.url names) with an admin socket served with opts.
func startProxyConfig(t *testing.T, cfg string, opts runtime.Options) *env {
	t.Helper()
	return startProxySock(t, cfg, opts, filepath.Join(shortTempDir(t), "admin.sock"))
}

// shortTempDir is a temporary directory with a short path: socket paths
// are limited to 107 bytes.
func shortTempDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "fctl")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// startProxySock is startProxyConfig with the admin socket at sock.
func startProxySock(t *testing.T, cfg string, opts runtime.Options, sock string) *env {
	t.Helper()
	c, err := conf.Parse("test.toml", []byte(cfg))
	if err != nil {
		t.Fatal(err)
	}
	p, err := proxy.New(c, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		p.Shutdown(ctx)
	})
	opts.Version = "0.0.0-test"
	api := runtime.New(p, zerolog.Nop(), opts)
	t.Cleanup(func() { api.Close() })
	if err := api.Listen(runtime.Socket{Path: sock, Level: runtime.LevelAdmin}); err != nil {
		t.Fatal(err)
	}
	return &env{sock: sock, url: "http://" + p.Frontends[0].Addrs()[0].String(), p: p, api: api, opts: opts}
}

// ctl runs fulcrumctl with args (after the program name) and stdin.
func ctl(t *testing.T, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	f, err := os.CreateTemp(t.TempDir(), "stdin")
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(stdin)
	f.Seek(0, 0)
	defer f.Close()
	var out, errb bytes.Buffer
	code = run(append([]string{"fulcrumctl"}, args...), f, &out, &errb)
	return code, out.String(), errb.String()
}

// statCSV reads `show stat` through a plain one-shot exchange.
func statCSV(t *testing.T, sock string) [][]string {
	t.Helper()
	reply, err := cli.Run(cli.Addr(sock), "show stat", 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(strings.NewReader(strings.TrimPrefix(strings.TrimRight(reply, "\n"), "# "))).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

func statValue(t *testing.T, sock, px, sv, column string) string {
	t.Helper()
	recs := statCSV(t, sock)
	for _, r := range recs[1:] {
		if r[0] == px && r[1] == sv {
			for i, c := range recs[0] {
				if c == column {
					return r[i]
				}
			}
		}
	}
	t.Fatalf("no %s/%s %s in show stat", px, sv, column)
	return ""
}

func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestOneShotExitCodes(t *testing.T) {
	e := startProxy(t, nil)
	tests := []struct {
		name   string
		stdin  string
		args   []string
		code   int
		stdout string // substring
		stderr string // substring
	}{
		{"ok, empty reply", "", []string{"-s", e.sock, "set", "server", "web/s1", "state", "drain"}, 0, "", ""},
		{"ok, reply", "", []string{"-s", e.sock, "get", "weight", "web/s1"}, 0, "1 (initial 1)\n", ""},
		{"no such server", "", []string{"-s", e.sock, "get", "weight", "web/nosrv"}, 1, "", "No such server.\n"},
		{"no such backend", "", []string{"-s", e.sock, "set", "server", "nob/s1", "state", "ready"}, 1, "", "No such backend.\n"},
		{"require", "", []string{"-s", e.sock, "get", "weight", "web"}, 1, "", "Require 'backend/server'."},
		{"unknown command", "", []string{"-s", e.sock, "bogus"}, 1, "", "Unknown command"},
		{"-c, both run", "", []string{"-s", e.sock, "-c", "show cli level; get weight web/s2"}, 0, "admin\n1 (initial 1)\n", ""},
		{"-c stops at the first error", "", []string{"-s", e.sock, "-c", "get weight web/nosrv; show cli level"}, 1, "", "No such server."},
		{"stdin", "show cli level\n\n# comment\nget weight web/s2\n", []string{"-s", e.sock}, 0, "admin\n1 (initial 1)\n", ""},
		{"stdin error", "show cli level\nset weight web/s1 abc\nshow version\n", []string{"-s", e.sock}, 1, "admin\n", "Empty weight string"},
		{"missing socket", "", []string{"-s", filepath.Join(t.TempDir(), "none.sock"), "show", "info"}, 2, "", "cannot reach the socket"},
		{"refused", "", []string{"-s", "tcp:127.0.0.1:1", "show", "info"}, 2, "", "connection refused"},
		{"drain needs a server (usage: 2)", "", []string{"-s", e.sock, "drain"}, 2, "", "give at least one"},
		{"drain --timeout in seconds", "", []string{"-s", e.sock, "drain", "web/s1", "--timeout", "5"}, 0, "web/s1: DRAIN\n", ""},
		{"drain --timeout not a duration: one line", "", []string{"-s", e.sock, "drain", "web/s1", "--timeout", "soon"}, 2, "",
			"fulcrumctl: --timeout: usage: \"soon\" is not a duration (60s, 1m30s, or 60 for seconds) (fulcrumctl --help for the usage)\n"},
		{"unknown flag: one line", "", []string{"-s", e.sock, "--bogus", "show", "info"}, 2, "", "flag provided but not defined: -bogus (fulcrumctl --help for the usage)\n"},
		{"drain every server needs --yes in a script", "", []string{"-s", e.sock, "drain", "web/*"}, 2, "",
			"fulcrumctl: not done: \"drain web/*\" takes every server of backend web out of service; add --yes to do it anyway\n"},
		{"the last server in service needs --yes too", "", []string{"-s", e.sock, "-c", "set server web/s2 state maint"}, 2, "", "takes every server of backend web"},
		{"--yes as a suffix", "", []string{"-s", e.sock, "-c", "set server web/s2 state maint --yes; set server web/s2 state ready"}, 0, "", ""},
		{"ready", "", []string{"-s", e.sock, "ready", "web/*"}, 0, "web/s1, web/s2: READY\n", ""},
		{"ready unknown backend", "", []string{"-s", e.sock, "ready", "nob/*"}, 1, "", "No such backend"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errs := ctl(t, tt.stdin, tt.args...)
			if code != tt.code || !strings.Contains(out, tt.stdout) || !strings.Contains(errs, tt.stderr) {
				t.Errorf("exit %d, want %d\nstdout %q (want %q)\nstderr %q (want %q)", code, tt.code, out, tt.stdout, errs, tt.stderr)
			}
			if tt.code == 1 && out != "" && tt.stdout == "" {
				t.Errorf("error reply on stdout: %q", out)
			}
		})
	}
	if got := statValue(t, e.sock, "web", "s1", "status"); got != "no check" && got != "UP" {
		t.Errorf("web/s1 after ready: %q", got)
	}
}

// TestShowStatTableAndJSON: the one-shot show stat is a table (no colour:
// stdout is not a terminal), and --json holds exactly the CSV's values.
func TestShowStatTableAndJSON(t *testing.T) {
	e := startProxy(t, nil)
	code, out, errs := ctl(t, "", "-s", e.sock, "show", "stat")
	if code != 0 || errs != "" {
		t.Fatalf("show stat: exit %d, %s", code, errs)
	}
	lines := strings.Split(out, "\n")
	if !strings.HasPrefix(lines[0], "PROXY   SERVER") || strings.Contains(out, "\x1b[") {
		t.Errorf("show stat table:\n%s", out)
	}
	code, out, _ = ctl(t, "", "-s", e.sock, "show", "stat", "--json")
	if code != 0 {
		t.Fatal(code)
	}
	var rows []map[string]string
	if err := json.Unmarshal([]byte(out), &rows); err != nil {
		t.Fatalf("--json: %v\n%s", err, out)
	}
	recs := statCSV(t, e.sock)
	if len(rows) != len(recs)-1 {
		t.Fatalf("%d JSON rows, %d CSV rows", len(rows), len(recs)-1)
	}
	// Counters that do not move without traffic: compare every column.
	for i, r := range recs[1:] {
		for j, c := range recs[0] {
			if c == "" || c == "lastchg" || c == "last_chk" || c == "check_duration" {
				continue
			}
			if rows[i][c] != r[j] {
				t.Errorf("row %d column %s: JSON %q, CSV %q", i, c, rows[i][c], r[j])
			}
		}
	}
	if code, out, _ := ctl(t, "", "--raw", "-s", e.sock, "show", "stat"); code != 0 || !strings.HasPrefix(out, "# pxname,svname,") {
		t.Errorf("--raw: %d %q", code, out[:min(len(out), 40)])
	}
}

// traffic sends requests to url until stopped; it counts failures.
type traffic struct {
	ok, failed atomic.Int64
	first      atomic.Value
	stop       chan struct{}
	wg         sync.WaitGroup
}

func startTraffic(url string, n int) *traffic {
	tr := &traffic{stop: make(chan struct{})}
	for range n {
		tr.wg.Add(1)
		go func() {
			defer tr.wg.Done()
			c := &http.Client{Timeout: 10 * time.Second}
			defer c.CloseIdleConnections()
			for {
				select {
				case <-tr.stop:
					return
				default:
				}
				resp, err := c.Get(url)
				if err == nil {
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode != 200 {
						err = fmt.Errorf("status %d", resp.StatusCode)
					}
				}
				if err != nil {
					tr.failed.Add(1)
					tr.first.CompareAndSwap(nil, err.Error())
					continue
				}
				tr.ok.Add(1)
			}
		}()
	}
	return tr
}

func (tr *traffic) end(t *testing.T) {
	close(tr.stop)
	tr.wg.Wait()
	if n := tr.failed.Load(); n > 0 {
		t.Errorf("%d of %d requests failed, first: %v", n, n+tr.ok.Load(), tr.first.Load())
	}
}

// TestDrainUnderTraffic: drain --wait --maint-after while clients keep
// sending requests: no request fails, exit 0, the server ends in MAINT
// and takes no more traffic; ready brings it back.
func TestDrainUnderTraffic(t *testing.T) {
	e := startProxy(t, nil)
	tr := startTraffic(e.url+"/", 4)
	defer tr.end(t)
	waitFor(t, 10*time.Second, "traffic", func() bool { return tr.ok.Load() > 50 })
	code, out, errs := ctl(t, "", "-s", e.sock, "drain", "web/s1", "--wait", "--timeout", "20s", "--maint-after", "--poll", "50ms")
	if code != 0 || !strings.Contains(out, "web/s1: drained in") || !strings.Contains(out, "now in MAINT") {
		t.Fatalf("drain: exit %d\n%s\n%s", code, out, errs)
	}
	if st := statValue(t, e.sock, "web", "s1", "status"); st != "MAINT" {
		t.Errorf("status after drain --maint-after: %q", st)
	}
	before := tr.ok.Load()
	waitFor(t, 10*time.Second, "more traffic", func() bool { return tr.ok.Load() > before+50 })
	if code, _, errs := ctl(t, "", "-s", e.sock, "ready", "web/s1"); code != 0 {
		t.Fatalf("ready: %d %s", code, errs)
	}
}

// TestDrainTimeout: a request held open on the drained server keeps a
// session: drain --wait exits 3 at the timeout, says so, and leaves the
// server in DRAIN.
func TestDrainTimeout(t *testing.T) {
	hold := make(chan struct{})
	e := startProxy(t, hold)
	done := make(chan error, 2)
	for range 2 { // round robin: one of them lands on each server
		go func() {
			resp, err := http.Get(e.url + "/slow")
			if err == nil {
				resp.Body.Close()
			}
			done <- err
		}()
	}
	waitFor(t, 10*time.Second, "a session on web/s1", func() bool { return statValue(t, e.sock, "web", "s1", "scur") == "1" })
	code, _, errs := ctl(t, "", "-s", e.sock, "drain", "web/*", "--yes", "--wait", "--timeout", "300ms", "--poll", "50ms")
	close(hold)
	for range 2 {
		if err := <-done; err != nil {
			t.Errorf("held request: %v", err)
		}
	}
	if code != 3 || !strings.Contains(errs, "timeout after 300ms") || !strings.Contains(errs, "web/s1 1 sessions") || !strings.Contains(errs, "left in DRAIN") {
		t.Fatalf("exit %d, stderr:\n%s", code, errs)
	}
	if st := statValue(t, e.sock, "web", "s1", "status"); st != "DRAIN" {
		t.Errorf("status after the timeout: %q", st)
	}
}
