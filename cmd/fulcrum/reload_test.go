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
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"text/template"
	"time"

	"github.com/fulcrum-proxy/fulcrum/conf"
	"github.com/fulcrum-proxy/fulcrum/internal/testutil"
	"github.com/fulcrum-proxy/fulcrum/proxy"
	"go.uber.org/goleak"
)

// reloadConfig is the configuration the reload tests rewrite: {{.Bind}}
// is the frontend's address (port 0 at first, then the port it got, so
// that reloads keep the listener), the rest varies per reload.
var reloadConfig = template.Must(template.New("cfg").Parse(`
[global]
hard_stop_after = "10s"
{{- if .StateFile}}
state_file = "{{.StateFile}}"
{{- end}}

[[global.stats_socket]]
path = "{{.Sock}}"
level = "admin"

[[frontend]]
name = "www"
bind = ["{{.Bind}}"]
default_backend = "web"
{{- if .APIRoute}}
acl = { is_api = "path_beg /api" }
use_backend = [{ backend = "api", if = "is_api" }]
{{- end}}

[[backend]]
name = "web"

[[backend.server]]
name = "s1"
address = "{{index .Up 0}}"
weight = {{.W1}}

[[backend.server]]
name = "s2"
address = "{{index .Up 1}}"
{{- if .S3}}

[[backend.server]]
name = "s3"
address = "{{index .Up 2}}"
{{- end}}
{{- if .APIRoute}}

[[backend]]
name = "api"

[[backend.server]]
name = "a1"
address = "{{index .Up 2}}"
{{- end}}
{{- if .Invalid}}

[[backend.server]]
name = "broken"
weight = 300
{{- end}}
`))

// reloadVars fills reloadConfig.
type reloadVars struct {
	Sock, Bind, StateFile string
	Up                    []string
	W1                    int
	S3, APIRoute, Invalid bool
}

func (v reloadVars) text(t *testing.T) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := reloadConfig.Execute(&b, v); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// reloadEnv is a running daemon (serveWith) on a configuration file that
// the test rewrites.
type reloadEnv struct {
	t    *testing.T
	path string
	vars reloadVars
	r    *reloader
	addr string // the frontend's address
}

// upstreams starts n HTTP servers that answer their name.
func upstreams(t *testing.T, n int) []string {
	t.Helper()
	var addrs []string
	for i := range n {
		name := fmt.Sprintf("up%d", i+1)
		up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			io.WriteString(w, name)
		}))
		t.Cleanup(up.Close)
		addrs = append(addrs, up.Listener.Addr().String())
	}
	return addrs
}

// startReloadEnv writes vars as the configuration and serves it until the
// test ends (then it stops gracefully and waits for the daemon to return).
func startReloadEnv(t *testing.T, vars reloadVars, opts serveOptions) *reloadEnv {
	t.Helper()
	dir := t.TempDir()
	e := &reloadEnv{t: t, path: filepath.Join(dir, "fulcrum.toml"), vars: vars}
	if e.vars.Sock == "" {
		e.vars.Sock = filepath.Join(dir, "admin.sock")
	}
	if e.vars.Bind == "" {
		e.vars.Bind = "127.0.0.1:0"
	}
	e.write(e.vars)
	cfg, err := conf.Load(e.path)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	started := make(chan *reloader, 1)
	done := make(chan error, 1)
	opts.started = func(r *reloader) { started <- r }
	go func() { done <- serveWith(ctx, cfg, io.Discard, opts) }()
	select {
	case e.r = <-started:
	case err := <-done:
		cancel()
		t.Fatalf("serve: %v", err)
	}
	e.addr = e.r.current().Frontends[0].Addrs()[0].String()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	// From now on the file names the port the listener got: reloads
	// keep it open.
	e.vars.Bind = e.addr
	e.write(e.vars)
	return e
}

// write makes v the configuration file's content.
func (e *reloadEnv) write(v reloadVars) {
	e.t.Helper()
	if err := os.WriteFile(e.path, v.text(e.t), 0o644); err != nil {
		e.t.Fatal(err)
	}
}

// cmd runs one Runtime API command and returns its reply.
func (e *reloadEnv) cmd(line string) string {
	e.t.Helper()
	c, err := net.Dial("unix", e.vars.Sock)
	if err != nil {
		e.t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, line+"\n")
	b, err := io.ReadAll(c)
	if err != nil {
		e.t.Fatal(err)
	}
	return string(b)
}

// noLeaks fails t if goroutines started by the test outlive it: checked
// after every cleanup (servers, the daemon) has run.
func noLeaks(t *testing.T) {
	opt := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, opt) })
}

// waitFor polls cond until it holds or d passes.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond) // polling interval, not synchronisation
	}
}

// loadResult is what the load loop saw.
type loadResult struct {
	ok, failed atomic.Int64
	// kaDials counts the connections the keep-alive workers opened (one
	// each, unless Go's client gives one up itself: it does when the
	// write of a request is not confirmed within 50 ms, as on a loaded
	// machine); kaPeerClosed counts those that the proxy closed under
	// their client (a read that ended before the client closed), which
	// Go's client would hide by redialling and retrying a GET silently.
	kaDials, kaPeerClosed atomic.Int64
	mu                    sync.Mutex
	errs                  []string // the first failures
}

func (lr *loadResult) fail(format string, args ...any) {
	lr.failed.Add(1)
	lr.mu.Lock()
	if len(lr.errs) < 10 {
		lr.errs = append(lr.errs, fmt.Sprintf(format, args...))
	}
	lr.mu.Unlock()
}

// peerCloseConn counts, in closedByPeer, a connection whose read ends
// (EOF or error) before its own side closed it.
type peerCloseConn struct {
	net.Conn
	closed       atomic.Bool
	counted      atomic.Bool
	closedByPeer *atomic.Int64
}

func (c *peerCloseConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if err != nil && !c.closed.Load() && c.counted.CompareAndSwap(false, true) {
		c.closedByPeer.Add(1)
	}
	return n, err
}

func (c *peerCloseConn) Close() error {
	c.closed.Store(true)
	return c.Conn.Close()
}

// runLoad sends GET requests to addr from workers goroutines until stop
// is closed or each has sent max: half keep their connections alive, half
// open one per request (exercising the listener hand-over).
func runLoad(addr string, workers, max int, stop <-chan struct{}) (*loadResult, func()) {
	lr := &loadResult{}
	var wg sync.WaitGroup
	var transports []*http.Transport
	for w := range workers {
		tr := &http.Transport{DisableKeepAlives: w%2 == 1, MaxIdleConnsPerHost: 1}
		if w%2 == 0 {
			var d net.Dialer
			tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
				lr.kaDials.Add(1)
				c, err := d.DialContext(ctx, network, addr)
				if err != nil {
					return nil, err
				}
				return &peerCloseConn{Conn: c, closedByPeer: &lr.kaPeerClosed}, nil
			}
		}
		transports = append(transports, tr)
		client := &http.Client{Transport: tr, Timeout: 10 * time.Second}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range max {
				select {
				case <-stop:
					return
				default:
				}
				path := "/"
				if i%2 == 1 {
					path = "/api/x"
				}
				resp, err := client.Get("http://" + addr + path)
				if err != nil {
					lr.fail("GET %s (keepalive %v): %v", path, !tr.DisableKeepAlives, err)
					continue
				}
				body, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				if err != nil || resp.StatusCode != http.StatusOK || !strings.HasPrefix(string(body), "up") {
					lr.fail("GET %s: %d %q %v", path, resp.StatusCode, body, err)
					continue
				}
				lr.ok.Add(1)
			}
		}()
	}
	return lr, func() {
		wg.Wait()
		for _, tr := range transports {
			tr.CloseIdleConnections()
		}
	}
}

// TestReloadUnderLoad reloads 20 times while 8 clients send requests: one
// reload changes a weight, one adds a server, one removes a backend and
// its route, one is invalid, the others go back and forth; through the
// Runtime API's reload and the reloader itself. No request may fail, no
// connection be refused, and a DRAIN set at runtime stays in force.
func TestReloadUnderLoad(t *testing.T) {
	noLeaks(t)
	up := upstreams(t, 3)
	base := reloadVars{Up: up, W1: 100, APIRoute: true}
	e := startReloadEnv(t, base, serveOptions{})

	if got := e.cmd("set server web/s2 state drain"); strings.TrimSpace(got) != "" {
		t.Fatalf("set server state drain: got %q", got)
	}
	stop := make(chan struct{})
	lr, wait := runLoad(e.addr, 8, 200000, stop)
	defer func() {
		select {
		case <-stop:
		default:
			close(stop)
			wait()
		}
	}()

	weight := base
	weight.W1 = 50
	added := weight
	added.S3 = true
	noRoute := added
	noRoute.APIRoute = false
	invalid := noRoute
	invalid.Invalid = true
	steps := []struct {
		name    string
		vars    reloadVars
		invalid bool
		want    reloadVars // what serves after the step
	}{
		{"same file", base, false, base},
		{"weight", weight, false, weight},
		{"add server", added, false, added},
		{"remove backend route", noRoute, false, noRoute},
		{"invalid", invalid, true, noRoute}, // nothing changes
	}
	for i := range 20 {
		st := steps[i%len(steps)]
		v := st.vars
		v.Sock, v.Bind = e.vars.Sock, e.vars.Bind
		e.write(v)
		before := lr.ok.Load() + lr.failed.Load()
		if i%2 == 0 { // through the Runtime API
			got := e.cmd("reload")
			want := "Success=1\n--\n\n"
			if st.invalid {
				want = "Success=0\n--\n"
			}
			if !strings.HasPrefix(got, want) {
				t.Fatalf("reload %d (%s): got %q, want %q...", i, st.name, got, want)
			}
			if st.invalid && !strings.Contains(got, "weight") {
				t.Errorf("reload %d (%s): reply %q does not name the error", i, st.name, got)
			}
		} else {
			err := e.r.reload()
			if (err != nil) != st.invalid {
				t.Fatalf("reload %d (%s): got %v, want error %v", i, st.name, err, st.invalid)
			}
		}
		// Each reload happens under load: wait for requests to complete
		// on the new configuration before the next one.
		waitFor(t, 10*time.Second, "requests after a reload", func() bool {
			return lr.ok.Load()+lr.failed.Load() >= before+50
		})
		p := e.r.current()
		web := p.Backend("web")
		if got := web.Server("s2").Admin(); got != proxy.AdminDrain {
			t.Fatalf("after reload %d (%s): s2 admin %v, want DRAIN", i, st.name, got)
		}
		if got, want := int(web.Server("s1").UserWeight.Load()), st.want.W1; got != want {
			t.Errorf("after reload %d (%s): s1 weight %d, want %d", i, st.name, got, want)
		}
		if got, want := web.Server("s3") != nil, st.want.S3; got != want {
			t.Errorf("after reload %d (%s): s3 exists %v, want %v", i, st.name, got, want)
		}
		if got, want := p.Backend("api") != nil, st.want.APIRoute; got != want {
			t.Errorf("after reload %d (%s): backend api exists %v, want %v", i, st.name, got, want)
		}
	}
	close(stop)
	wait()
	if n := lr.failed.Load(); n > 0 {
		t.Errorf("%d of %d requests failed; first: %q", n, n+lr.ok.Load(), lr.errs)
	}
	if lr.ok.Load() < 1000 {
		t.Errorf("only %d requests during 20 reloads, want a steady load", lr.ok.Load())
	}
	// Keep-alive connections moved to each new configuration: none was
	// closed under its client.
	if got := lr.kaPeerClosed.Load(); got != 0 {
		t.Errorf("the proxy closed %d keep-alive connections under their clients (of %d opened), want 0: they are kept across the 20 reloads", got, lr.kaDials.Load())
	}
	// Cumulative counters keep counting: once the replaced configurations
	// have drained, the frontend counted every request of the test.
	e.r.retiring.Wait()
	fe := e.r.current().Frontend("www")
	if got, want := fe.Counters.ReqTot.Load(), lr.ok.Load(); got != want {
		t.Errorf("frontend req_tot after 20 reloads: got %d, want %d (every request)", got, want)
	}
	t.Logf("%d requests, 20 reloads, 0 failed", lr.ok.Load())
}

// TestReloadKeepsCheckAndRuntimeState: a server an operator put in MAINT,
// one whose weight was set at runtime and the check counters stay through
// a reload; a weight changed in the file wins over the runtime one.
func TestReloadKeepsRuntimeState(t *testing.T) {
	noLeaks(t)
	up := upstreams(t, 3)
	e := startReloadEnv(t, reloadVars{Up: up, W1: 100, APIRoute: true}, serveOptions{})
	for _, c := range []string{"set server web/s2 state maint", "set weight web/s1 20", "set weight api/a1 7"} {
		if got := e.cmd(c); strings.TrimSpace(got) != "" {
			t.Fatalf("%s: got %q", c, got)
		}
	}
	if got := e.cmd("reload"); got != "Success=1\n--\n\n" {
		t.Fatalf("reload: got %q", got)
	}
	p := e.r.current()
	if got := p.Backend("web").Server("s2").Admin(); got != proxy.AdminMaint {
		t.Errorf("s2 admin: got %v, want MAINT", got)
	}
	if got := p.Backend("web").Server("s1").UserWeight.Load(); got != 20 {
		t.Errorf("s1 weight: got %d, want 20 (set at runtime, file unchanged)", got)
	}
	// The file changes s1's weight: the file wins for s1, a1 keeps its own.
	v := e.vars
	v.W1 = 60
	e.write(v)
	if err := e.r.reload(); err != nil {
		t.Fatal(err)
	}
	p = e.r.current()
	if got := p.Backend("web").Server("s1").UserWeight.Load(); got != 60 {
		t.Errorf("s1 weight: got %d, want 60 (changed in the file)", got)
	}
	if got := p.Backend("api").Server("a1").UserWeight.Load(); got != 7 {
		t.Errorf("a1 weight: got %d, want 7", got)
	}
	// The Runtime API acts on the new proxy.
	if got := e.cmd("get weight web/s1"); got != "60 (initial 60)\n\n" {
		t.Errorf("get weight after reload: got %q", got)
	}
}

// TestReloadInvalidChangesNothing: an invalid file is refused with its
// errors; the same proxy keeps serving.
func TestReloadInvalidChangesNothing(t *testing.T) {
	noLeaks(t)
	e := startReloadEnv(t, reloadVars{Up: upstreams(t, 3), W1: 100}, serveOptions{})
	p := e.r.current()
	v := e.vars
	v.Invalid = true
	e.write(v)
	got := e.cmd("reload")
	want := fmt.Sprintf("Success=0\n--\n%s:", e.path)
	if !strings.HasPrefix(got, want) || !strings.Contains(got, "weight: must be 0..256, got 300") {
		t.Errorf("reload of an invalid file: got %q, want %q... naming the weight", got, want)
	}
	if e.r.current() != p {
		t.Error("an invalid reload replaced the proxy")
	}
	resp, err := http.Get("http://" + e.addr + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	http.DefaultClient.CloseIdleConnections()
	if resp.StatusCode != 200 {
		t.Errorf("after an invalid reload: status %d, want 200", resp.StatusCode)
	}
}

// logLinesWith returns the lines of log that contain s.
func logLinesWith(log, s string) []string {
	var out []string
	for _, l := range strings.Split(log, "\n") {
		if strings.Contains(l, s) {
			out = append(out, l)
		}
	}
	return out
}

// TestReloadBinds: a bind added by a reload opens, one removed closes
// (after its in-flight work), one that stays keeps its listener.
func TestReloadBinds(t *testing.T) {
	noLeaks(t)
	e := startReloadEnv(t, reloadVars{Up: upstreams(t, 3), W1: 100}, serveOptions{})
	// A second address: bind it with a reload, then remove it.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	second := l.Addr().String()
	l.Close()
	v := e.vars
	v.Bind = e.addr + `", "` + second
	e.write(v)
	var logBuf testutil.SyncBuffer
	e.r.logw = &logBuf // the reloads log here (no other reload runs)
	if err := e.r.reload(); err != nil {
		t.Fatal(err)
	}
	// The added bind is told, the kept one is not told again.
	if got := logLinesWith(logBuf.String(), `"message":"listening"`); len(got) != 1 || !strings.Contains(got[0], `"bind":"`+second+`"`) {
		t.Errorf("after adding %s, the log should hold one listening line, for it: %q", second, got)
	}
	for _, a := range []string{e.addr, second} {
		resp, err := http.Get("http://" + a + "/")
		if err != nil {
			t.Fatalf("GET on %s after adding a bind: %v", a, err)
		}
		resp.Body.Close()
	}
	http.DefaultClient.CloseIdleConnections()
	e.write(e.vars)
	if err := e.r.reload(); err != nil {
		t.Fatal(err)
	}
	e.r.retiring.Wait() // the old proxy closed its listeners
	if got := logLinesWith(logBuf.String(), `"message":"stopped listening"`); len(got) != 1 || !strings.Contains(got[0], `"frontend":"www","bind":"`+second+`"`) {
		t.Errorf("after removing %s, the log should hold one stopped listening line, for it: %q", second, got)
	}
	if got := logLinesWith(logBuf.String(), `"message":"listening"`); len(got) != 1 {
		t.Errorf("the kept bind was told again: %q", got)
	}
	if c, err := net.Dial("tcp", second); err == nil {
		c.Close()
		t.Errorf("removed bind %s still accepts", second)
	}
	resp, err := http.Get("http://" + e.addr + "/")
	if err != nil {
		t.Fatalf("kept bind after removing another: %v", err)
	}
	resp.Body.Close()
	http.DefaultClient.CloseIdleConnections()
}

// TestReloadWatch: run --watch reloads when the file changes.
func TestReloadWatch(t *testing.T) {
	noLeaks(t)
	e := startReloadEnv(t, reloadVars{Up: upstreams(t, 3), W1: 100}, serveOptions{watch: 5 * time.Millisecond})
	first := e.r.current()
	v := e.vars
	v.W1 = 42
	e.write(v)
	waitFor(t, 5*time.Second, "the watched file's reload", func() bool {
		p := e.r.current()
		return p != first && p.Backend("web").Server("s1").UserWeight.Load() == 42
	})
}

// TestStateFileRestart: state_file keeps a server an operator put in MAINT
// (and a runtime weight) across a stop and a start.
func TestStateFileRestart(t *testing.T) {
	noLeaks(t)
	up := upstreams(t, 3)
	dir := t.TempDir()
	state := filepath.Join(dir, "server-state")
	vars := reloadVars{Up: up, W1: 100, StateFile: state, Sock: filepath.Join(dir, "a.sock")}

	run := func(check func(e *reloadEnv)) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		path := filepath.Join(dir, "fulcrum.toml")
		v := vars
		v.Bind = "127.0.0.1:0"
		os.WriteFile(path, v.text(t), 0o644)
		cfg, err := conf.Load(path)
		if err != nil {
			t.Fatal(err)
		}
		started := make(chan *reloader, 1)
		done := make(chan error, 1)
		go func() {
			done <- serveWith(ctx, cfg, io.Discard, serveOptions{started: func(r *reloader) { started <- r }})
		}()
		e := &reloadEnv{t: t, path: path, vars: v}
		select {
		case e.r = <-started:
		case err := <-done:
			t.Fatalf("serve: %v", err)
		}
		check(e)
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	run(func(e *reloadEnv) {
		for _, c := range []string{"set server web/s2 state maint", "set weight web/s1 33"} {
			if got := e.cmd(c); strings.TrimSpace(got) != "" {
				t.Fatalf("%s: got %q", c, got)
			}
		}
	})
	b, err := os.ReadFile(state)
	if err != nil {
		t.Fatalf("state file not written at stop: %v", err)
	}
	if !bytes.HasPrefix(b, []byte("1\n# be_id be_name srv_id srv_name")) {
		t.Errorf("state file: got %q, want show servers state's format", b)
	}
	run(func(e *reloadEnv) {
		web := e.r.current().Backend("web")
		if got := web.Server("s2").Admin(); got != proxy.AdminMaint {
			t.Errorf("after restart: s2 admin %v, want MAINT", got)
		}
		if got := web.Server("s1").UserWeight.Load(); got != 33 {
			t.Errorf("after restart: s1 weight %d, want 33", got)
		}
		if got := web.Server("s1").Admin(); got != proxy.AdminReady {
			t.Errorf("after restart: s1 admin %v, want READY", got)
		}
		sc := bufio.NewScanner(strings.NewReader(e.cmd("show servers state web")))
		found := false
		for sc.Scan() {
			f := strings.Fields(sc.Text())
			if len(f) > 6 && f[3] == "s2" {
				found = true
				if f[6] != "1" {
					t.Errorf("show servers state after restart: s2 srv_admin_state %s, want 1 (FMAINT)", f[6])
				}
			}
		}
		if !found {
			t.Error("show servers state after restart: no s2 line")
		}
	})
}

// TestReloadSIGHUP runs the real command in a child: SIGHUP with an
// invalid file logs the errors and keeps serving; SIGUSR2 with a valid one
// serves the new configuration on the same listener.
func TestReloadSIGHUP(t *testing.T) {
	up := upstreams(t, 3)
	dir := t.TempDir()
	vars := reloadVars{Up: up, W1: 100, Sock: filepath.Join(dir, "a.sock"), Bind: "127.0.0.1:0"}
	path := filepath.Join(dir, "fulcrum.toml")
	if err := os.WriteFile(path, vars.text(t), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "run", "-c", path)
	cmd.Env = append(os.Environ(), "FULCRUM_TEST_MAIN=1")
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	logs := make(chan map[string]any, 100)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			var m map[string]any
			if json.Unmarshal(sc.Bytes(), &m) == nil {
				logs <- m
			}
		}
		close(logs)
	}()
	next := func(msgPrefix string) map[string]any {
		t.Helper()
		timeout := time.After(10 * time.Second)
		for {
			select {
			case m, ok := <-logs:
				if !ok {
					t.Fatalf("fulcrum exited before logging %q", msgPrefix)
				}
				if msg, _ := m["message"].(string); strings.HasPrefix(msg, msgPrefix) {
					return m
				}
			case <-timeout:
				t.Fatalf("no %q log line", msgPrefix)
			}
		}
	}
	addr := next("listening")["bind"].(string)
	get := func() string {
		t.Helper()
		resp, err := http.Get("http://" + addr + "/")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	get()

	bad := vars
	bad.Bind, bad.Invalid = addr, true
	os.WriteFile(path, bad.text(t), 0o644)
	cmd.Process.Signal(syscall.SIGHUP)
	// Issue 23: one log line per problem (the file has two), then the
	// refusal with their count.
	e1, _ := next("invalid configuration")["error"].(string)
	e2, _ := next("invalid configuration")["error"].(string)
	if !strings.Contains(e1, "address: required") || !strings.Contains(e2, "weight: must be 0..256, got 300") {
		t.Errorf("refused reload log: errors %q and %q, want the file's two", e1, e2)
	}
	if m := next("reload refused"); m["errors"] != float64(2) {
		t.Errorf("refused reload log: errors %v, want 2", m["errors"])
	}
	get() // still serving

	good := vars
	good.Bind, good.W1 = addr, 7
	os.WriteFile(path, good.text(t), 0o644)
	// SIGUSR2, HAProxy's master-worker reload signal, reloads too (Go's
	// default for it would end the process).
	cmd.Process.Signal(syscall.SIGUSR2)
	if took, _ := next("configuration reloaded")["took"].(string); !regexp.MustCompile(`^[0-9.]+(µs|ms|s)$`).MatchString(took) {
		t.Errorf("reload log: took %q, want a duration with its unit", took)
	}
	got := strings.TrimSpace(fmt.Sprint(socketCmd(t, vars.Sock, "get weight web/s1")))
	if got != "7 (initial 7)" {
		t.Errorf("get weight after SIGUSR2: got %q, want %q", got, "7 (initial 7)")
	}
	get()
	http.DefaultClient.CloseIdleConnections()
	cmd.Process.Signal(syscall.SIGTERM)
	if err := cmd.Wait(); err != nil {
		t.Errorf("exit: %v, want 0", err)
	}
}

// socketCmd runs one Runtime API command on the Unix socket path.
func socketCmd(t *testing.T, path, line string) string {
	t.Helper()
	c, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, line+"\n")
	b, _ := io.ReadAll(c)
	return string(b)
}

// TestReloadConcurrentRuntimeChange: a Runtime API change racing with a
// reload is never lost: it lands on the old proxy before its state is
// copied, or on the new one (runtime.API.Hold).
func TestReloadConcurrentRuntimeChange(t *testing.T) {
	noLeaks(t)
	e := startReloadEnv(t, reloadVars{Up: upstreams(t, 3), W1: 100}, serveOptions{})
	for i := range 30 {
		w := i + 1
		done := make(chan error, 1)
		go func() {
			c, err := net.Dial("unix", e.vars.Sock)
			if err != nil {
				done <- err
				return
			}
			defer c.Close()
			fmt.Fprintf(c, "set weight web/s1 %d\n", w)
			b, err := io.ReadAll(c)
			if err == nil && strings.TrimSpace(string(b)) != "" {
				err = fmt.Errorf("set weight: %q", b)
			}
			done <- err
		}()
		if err := e.r.reload(); err != nil {
			t.Fatal(err)
		}
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if got := e.r.current().Backend("web").Server("s1").UserWeight.Load(); got != int32(w) {
			t.Fatalf("round %d: s1 weight %d after a concurrent set weight %d and reload, want %d", i, got, w, w)
		}
	}
}
