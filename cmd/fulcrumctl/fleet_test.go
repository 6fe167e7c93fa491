package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fulcrum-proxy/fulcrum/cli"
	"github.com/fulcrum-proxy/fulcrum/runtime"
)

// syncBuffer is a buffer that fulcrumctl writes in one goroutine while
// the test reads it in another.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// heldUpstream answers every request with its name; a request for /slow
// is announced on arrived, then held until hold is closed.
func heldUpstream(t *testing.T, name string, hold <-chan struct{}, arrived chan<- string) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			arrived <- name
			<-hold
		}
		io.WriteString(w, name+"\n")
	})}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	return l.Addr().String()
}

// fleetMember is one instance of a test fleet: a proxy whose backend web
// balances `first` over s1 and s2 (s1 takes every request while it is in
// service), with its socket at sock. A /slow request to it is held in its
// upstream until hold is closed (nil: none comes).
func fleetMember(t *testing.T, sock string, hold <-chan struct{}, arrived chan<- string, extra string) *env {
	t.Helper()
	name := strings.TrimSuffix(filepath.Base(sock), ".sock")
	// A global maxconn: a backend's session limit (fullconn, 10% of it)
	// derives from it, else from the machine's descriptor limit.
	return startProxySock(t, fmt.Sprintf(`
[global]
maxconn = 1000

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
balance = "first"

[[backend.server]]
name = "s1"
address = %q

[[backend.server]]
name = "s2"
address = %q
%s`, heldUpstream(t, name+"/s1", hold, arrived), heldUpstream(t, name+"/s2", hold, arrived), extra), runtime.Options{}, sock)
}

// TestFleetDrainUnderLoad: issue 20 — `drain web/s1 --wait` over three
// instances while clients keep sending requests to all three. b and c
// each hold a long request on s1: the command waits for both, then for c
// alone once b's ends, and exits 0 only when all three are drained. No
// request fails, the long ones included.
func TestFleetDrainUnderLoad(t *testing.T) {
	dir := shortTempDir(t)
	holds := map[string]chan struct{}{"b": make(chan struct{}), "c": make(chan struct{})}
	arrived := make(chan string, 2)
	var es []*env
	for _, name := range []string{"a", "b", "c"} {
		es = append(es, fleetMember(t, filepath.Join(dir, name+".sock"), holds[name], arrived, ""))
	}
	release := func(name string) { close(holds[name]) }
	t.Cleanup(func() { // before the upstreams close: no handler left blocked
		for _, h := range holds {
			select {
			case <-h:
			default:
				close(h)
			}
		}
	})

	var trs []*traffic
	for _, e := range es {
		trs = append(trs, startTraffic(e.url+"/", 2))
	}
	defer func() {
		for _, tr := range trs {
			tr.end(t)
		}
	}()
	for i, tr := range trs {
		waitFor(t, 10*time.Second, "traffic through "+es[i].sock, func() bool { return tr.ok.Load() >= 20 })
	}
	held := make(chan error, 2)
	for _, e := range es[1:] {
		go func() {
			resp, err := http.Get(e.url + "/slow")
			if err == nil {
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 {
					err = fmt.Errorf("status %d: %s", resp.StatusCode, body)
				}
			}
			held <- err
		}()
	}
	for got := map[string]bool{}; len(got) < 2; {
		got[<-arrived] = true
		if len(got) == 2 && (!got["b/s1"] || !got["c/s1"]) {
			t.Fatalf("long requests reached %v, want b/s1 and c/s1", got)
		}
	}

	devnull, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer devnull.Close()
	var stdout bytes.Buffer
	stderr := &syncBuffer{}
	done := make(chan int, 1)
	go func() {
		done <- run([]string{"fulcrumctl", "-s", es[0].sock, "-s", es[1].sock, "-s", es[2].sock,
			"drain", "web/s1", "--wait", "--timeout", "20s", "--poll", "50ms"}, devnull, &stdout, stderr)
	}()
	notYet := func(when string) {
		t.Helper()
		select {
		case code := <-done:
			t.Fatalf("exit %d %s\nstdout:\n%s\nstderr:\n%s", code, when, stdout.String(), stderr.String())
		default:
		}
	}
	waitFor(t, 15*time.Second, "the wait for b and c", func() bool {
		return strings.Contains(stderr.String(), "draining: b.sock: web/s1 1 sessions, 0 queued; c.sock: web/s1 1 sessions, 0 queued (")
	})
	notYet("while b and c have a session on s1")
	release("b")
	waitFor(t, 15*time.Second, "the wait for c alone", func() bool {
		return strings.Contains(stderr.String(), "draining: c.sock: web/s1 1 sessions, 0 queued (")
	})
	notYet("while c has a session on s1")
	release("c")
	var code int
	select {
	case code = <-done:
	case <-time.After(30 * time.Second):
		t.Fatalf("drain did not end; stderr:\n%s", stderr.String())
	}
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
	}
	lines := strings.Split(strings.TrimSuffix(stdout.String(), "\n"), "\n")
	if len(lines) != 3 {
		t.Fatalf("stdout: %q, want one line per instance", lines)
	}
	for i, name := range []string{"a.sock", "b.sock", "c.sock"} {
		if !strings.HasPrefix(lines[i], name+": web/s1: drained in ") {
			t.Errorf("line %d: %q, want %s: web/s1: drained in ...", i, lines[i], name)
		}
	}
	for _, e := range es {
		if st, scur := statValue(t, e.sock, "web", "s1", "status"), statValue(t, e.sock, "web", "s1", "scur"); st != "DRAIN" || scur != "0" {
			t.Errorf("%s: web/s1 %s with %s sessions, want DRAIN with 0", e.sock, st, scur)
		}
	}
	for range 2 {
		if err := <-held; err != nil {
			t.Errorf("long request: %v", err)
		}
	}
}

// fleetFile writes a fleet file in dir.
func fleetFile(t *testing.T, dir, text string) string {
	t.Helper()
	path := filepath.Join(dir, "test.fleet")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestFleetFile: a fleet file names the instances (paths relative to the
// file); show stat is one table with an INSTANCE column (golden), --raw
// each reply under its header, --csv HAProxy's columns then instance,
// --json one array; text replies come line by line under each name; a
// bad file is a usage error naming its lines.
func TestFleetFile(t *testing.T) {
	dir := shortTempDir(t)
	lb1 := fleetMember(t, filepath.Join(dir, "one.sock"), nil, nil, "")
	lb2 := fleetMember(t, filepath.Join(dir, "two.sock"), nil, nil, "")
	fleet := fleetFile(t, dir, "# the test fleet\nlb1 one.sock\nlb2 "+lb2.sock+"   # absolute\n")
	if code, out, errs := ctl(t, "", "--fleet", fleet, "set", "server", "web/s1", "state", "drain"); code != 0 || out != "" || errs != "" {
		t.Fatalf("set server: exit %d, %q %q", code, out, errs)
	}
	if st := statValue(t, lb1.sock, "web", "s1", "status"); st != "DRAIN" {
		t.Errorf("lb1 web/s1 %q, want DRAIN", st)
	}

	code, out, errs := ctl(t, "", "--fleet", fleet, "show", "stat")
	if code != 0 || errs != "" {
		t.Fatalf("show stat: exit %d, %s", code, errs)
	}
	tmuxGolden(t, "fleet-show-stat-live.txt", out, func(s string) string {
		var lines []string
		for _, l := range strings.Split(s, "\n") {
			lines = append(lines, strings.Join(strings.Fields(ages.ReplaceAllString(l, "Ns")), " "))
		}
		return strings.Join(lines, "\n")
	})

	code, out, _ = ctl(t, "", "--fleet", fleet, "--raw", "show", "stat")
	raw1 := strings.Join(statLines(t, lb1.sock), "\n") + "\n"
	if code != 0 || !strings.HasPrefix(out, "# instance: lb1\n"+strings.SplitAfter(raw1, "\n")[0]) || !strings.Contains(out, "\n\n# instance: lb2\n# pxname,svname,") {
		t.Errorf("--raw: exit %d\n%s", code, out)
	}

	code, out, _ = ctl(t, "", "--fleet", fleet, "show", "stat", "--csv")
	header := statLines(t, lb1.sock)[0]
	if got := strings.SplitN(out, "\n", 2)[0]; code != 0 || got != strings.TrimSuffix(header, ",")+",instance," {
		t.Errorf("--csv: exit %d, header %q, want HAProxy's then instance", code, got)
	}
	if n := strings.Count(out, ",lb2,\n"); n != 4 {
		t.Errorf("--csv: %d rows of lb2, want 4\n%s", n, out)
	}

	code, out, _ = ctl(t, "", "--fleet", fleet, "--json", "show", "stat")
	var rows []map[string]string
	if err := json.Unmarshal([]byte(out), &rows); err != nil || code != 0 || len(rows) != 8 {
		t.Fatalf("--json: exit %d, %d rows, %v", code, len(rows), err)
	}
	if rows[1]["svname"] != "s1" || rows[1]["instance"] != "lb1" || rows[5]["instance"] != "lb2" || rows[5]["status"] != "DRAIN" {
		t.Errorf("--json rows: %v / %v", rows[1], rows[5])
	}

	if code, out, _ := ctl(t, "", "--fleet", fleet, "-c", "show cli level; get weight web/s2"); code != 0 ||
		out != "lb1: admin\nlb2: admin\nlb1: 1 (initial 1)\nlb2: 1 (initial 1)\n" {
		t.Errorf("-c: exit %d\n%s", code, out)
	}
	// -s adds to the file's instances.
	three := fleetMember(t, filepath.Join(dir, "three.sock"), nil, nil, "")
	if code, out, _ := ctl(t, "", "--fleet", fleet, "-s", three.sock, "show", "cli", "level"); code != 0 || out != "lb1: admin\nlb2: admin\nthree.sock: admin\n" {
		t.Errorf("--fleet and -s: exit %d\n%s", code, out)
	}

	bad := fleetFile(t, t.TempDir(), "lb1 one.sock\nlb1 two.sock\nthree words here\n")
	code, out, errs = ctl(t, "", "--fleet", bad, "set", "server", "web/s2", "state", "drain")
	if want := "fulcrumctl: " + bad + ":2: instance \"lb1\": already named on line 1\nfulcrumctl: " + bad + ":3: expected NAME ADDRESS or ADDRESS, got 3 words\n"; code != 2 || out != "" || errs != want {
		t.Errorf("bad fleet file: exit %d, stderr %q, want %q", code, errs, want)
	}
	if code, _, errs := ctl(t, "", "--fleet", filepath.Join(dir, "none.fleet"), "show", "info"); code != 2 || !strings.Contains(errs, "no such file") {
		t.Errorf("missing fleet file: exit %d, %q", code, errs)
	}
	if st := statValue(t, lb1.sock, "web", "s2", "status"); st != "no check" {
		t.Errorf("lb1 web/s2 %q after a usage error", st)
	}
}

// statLines returns show stat's CSV lines as the socket sends them.
func statLines(t *testing.T, sock string) []string {
	t.Helper()
	reply, err := cli.Run(cli.Addr(sock), "show stat", 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimRight(reply, "\n"), "\n")
}

// TestFleetFailures: an instance that cannot be reached, or that refuses
// a command, is named on stderr; the others run the command; the exit
// code is the highest (2 unreachable, 1 refused). In a script each
// instance stops at its own first error. Taking every server of a
// backend out on any instance is refused, naming them, and nothing is
// sent anywhere.
func TestFleetFailures(t *testing.T) {
	dir := shortTempDir(t)
	a := fleetMember(t, filepath.Join(dir, "a.sock"), nil, nil, "")
	c := fleetMember(t, filepath.Join(dir, "c.sock"), nil, nil, `
[[backend.server]]
name = "s3"
address = "192.0.2.1:80"
`)
	gone := filepath.Join(dir, "gone.sock")
	tests := []struct {
		name, stdin    string
		args           []string
		code           int
		stdout, stderr string // exact
	}{
		{"every server of web on one instance", "", []string{"-s", a.sock, "-s", c.sock, "drain", "web/s1", "web/s2"}, 2, "",
			"fulcrumctl: not done: \"drain web/s1 web/s2\" takes every server of backend web out of service on a.sock; add --yes to do it anyway\n"},
		{"error reply on one", "", []string{"-s", a.sock, "-s", c.sock, "get", "weight", "web/s3"}, 1,
			"c.sock: 1 (initial 1)\n", "a.sock: No such server.\n"},
		{"a script stops on each at its first error", "get weight web/s3\nshow cli level\n", []string{"-s", a.sock, "-s", c.sock}, 1,
			"c.sock: 1 (initial 1)\nc.sock: admin\n", "a.sock: No such server.\n"},
		{"ready with one refusing", "", []string{"-s", a.sock, "-s", c.sock, "ready", "web/s1", "web/s3"}, 1,
			"c.sock: web/s1, web/s3: READY\n", "a.sock: No such server.\nfulcrumctl: a.sock: web/s3: could not set ready\n"},
		{"one unreachable", "", []string{"-s", a.sock, "-s", gone, "-s", c.sock, "set", "server", "web/s1", "state", "drain"}, 2, "",
			"fulcrumctl: gone.sock: cannot reach the socket " + gone + ": dial unix " + gone + ": connect: no such file or directory\n"},
		{"drain --wait with one unreachable", "", []string{"-s", a.sock, "-s", gone, "-s", c.sock, "drain", "web/s2", "--yes", "--wait", "--timeout", "10s", "--poll", "50ms"}, 2,
			"a.sock: web/s2: drained in 0s\nc.sock: web/s2: drained in 0s\n",
			"fulcrumctl: gone.sock: cannot reach the socket " + gone + ": dial unix " + gone + ": connect: no such file or directory\n"},
		{"all unreachable", "", []string{"-s", gone, "-s", gone + "2", "show", "info"}, 2, "",
			"fulcrumctl: gone.sock: cannot reach the socket " + gone + ": dial unix " + gone + ": connect: no such file or directory\n" +
				"fulcrumctl: gone.sock2: cannot reach the socket " + gone + "2: dial unix " + gone + "2: connect: no such file or directory\n" +
				"(is the proxy running? give the socket with -s or $FULCRUM_SOCKET)\n"},
		{"the same socket twice", "", []string{"-s", a.sock, "-s", a.sock, "show", "info"}, 2, "",
			"fulcrumctl: -s: usage: " + a.sock + " given twice (fulcrumctl --help for the usage)\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errs := ctl(t, tt.stdin, tt.args...)
			out = drainedIn.ReplaceAllString(out, "drained in 0s") // the time it took
			if code != tt.code || out != tt.stdout || errs != tt.stderr {
				t.Errorf("exit %d, want %d\nstdout %q\n  want %q\nstderr %q\n  want %q", code, tt.code, out, tt.stdout, errs, tt.stderr)
			}
		})
	}
	for _, e := range []*env{a, c} {
		for _, sv := range []string{"s1", "s2"} {
			if st := statValue(t, e.sock, "web", sv, "status"); st != "DRAIN" {
				t.Errorf("%s: web/%s %q, want DRAIN (set on the instances that could be reached)", e.sock, sv, st)
			}
		}
	}
}

var drainedIn = regexp.MustCompile(`drained in [0-9.]+m?s`)

// TestFleetWatchScreen: watch on a fleet is one table with an INSTANCE
// column; an instance that does not answer is named below it.
func TestFleetWatchScreen(t *testing.T) {
	dir := shortTempDir(t)
	a := fleetMember(t, filepath.Join(dir, "a.sock"), nil, nil, "")
	b := fleetMember(t, filepath.Join(dir, "b.sock"), nil, nil, "")
	gone := filepath.Join(dir, "gone.sock")
	insts, err := cli.NameInstances([]string{a.sock, b.sock, gone})
	if err != nil {
		t.Fatal(err)
	}
	ms, _ := cli.DialMembers(insts, 5*time.Second, 0)
	defer cli.CloseMembers(ms)
	if _, err := cli.Run(cli.Addr(b.sock), "set server web/s2 state maint", 5*time.Second); err != nil {
		t.Fatal(err)
	}
	c := &cli.Client{Members: ms}
	for range 2 { // the second screen dials gone.sock again
		screen := cli.WatchScreen(c, cli.WatchOptions{Backend: "web", Interval: time.Second}, 300)
		lines := strings.Split(screen, "\n")
		if !strings.HasPrefix(lines[0], "fulcrumctl watch 3 instances  every 1s") {
			t.Errorf("title %q", lines[0])
		}
		var got []string
		for _, l := range lines[2:] {
			got = append(got, strings.Join(strings.Fields(ages.ReplaceAllString(l, "Ns")), " "))
		}
		want := []string{
			"INSTANCE PROXY SERVER STATUS WEIGHT SESS QUEUE RATE LBTOT CHECK LASTCHG",
			"a.sock web s1 no check 1 0/- 0 0 0 Ns",
			"a.sock web s2 no check 1 0/- 0 0 0 Ns",
			"a.sock web BACKEND UP 2 0/100 0 0 0 Ns",
			"b.sock web s1 no check 1 0/- 0 0 0 Ns",
			"b.sock web s2 MAINT 1 0/- 0 0 0 Ns",
			"b.sock web BACKEND UP 1 0/100 0 0 0 Ns",
			"fulcrumctl: gone.sock: cannot reach the socket " + gone + ": dial unix " + gone + ": connect: no such file or directory (retrying)",
			"",
		}
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("screen:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
}

// TestFleetShellInTmux: the shell on two sockets sends each line to both,
// shows show stat as one table, and asks once before taking the last
// server of a backend out on either.
func TestFleetShellInTmux(t *testing.T) {
	bin := buildCtl(t)
	dir := shortTempDir(t)
	a := fleetMember(t, filepath.Join(dir, "a.sock"), nil, nil, "")
	b := fleetMember(t, filepath.Join(dir, "b.sock"), nil, nil, "")
	tm := startTmux(t, 120, 50, "cd "+dir+" && env FULCRUMCTL_HISTORY="+filepath.Join(t.TempDir(), "h")+
		" NO_COLOR=1 TERM=xterm "+bin+" -s a.sock -s b.sock; sleep 30")
	const prompt = "a.sock,b.sock>"
	tm.wait("the prompt", func(h string) bool { return strings.Contains(h, prompt) })
	if h := tm.history(); !strings.Contains(h, "Fleet of 2 instances (a.sock, b.sock): each line goes to all of them.") {
		t.Errorf("banner:\n%s", h)
	}
	tm.command(prompt, "set server web/s1 state drain")
	for _, e := range []*env{a, b} {
		if st := statValue(t, e.sock, "web", "s1", "status"); st != "DRAIN" {
			t.Errorf("%s: web/s1 %q after the shell's set server, want DRAIN", e.sock, st)
		}
	}
	out := tm.command(prompt, "show stat")
	for _, row := range []string{"a.sock web s1 DRAIN", "b.sock web s1 DRAIN", "b.sock web s2 no check"} {
		if !strings.Contains(stable(out, prompt+" "), row) {
			t.Errorf("show stat lacks %q:\n%s", row, out)
		}
	}
	tm.keys("drain web/s2", "Enter")
	tm.wait("the question", func(h string) bool {
		return strings.Contains(h, `"drain web/s2" takes every server of backend web out of service on a.sock, b.sock; go on? [y/N]`)
	})
	tm.keys("n", "Enter")
	tm.wait("the cancellation", func(h string) bool { return strings.Contains(h, "fulcrumctl: cancelled, nothing sent") })
	if out := tm.command(prompt, "get weight web/s9"); !strings.Contains(out, "a.sock: No such server.\nb.sock: No such server.\n") {
		t.Errorf("error replies:\n%s", out)
	}
	for _, e := range []*env{a, b} {
		if st := statValue(t, e.sock, "web", "s2", "status"); st != "no check" {
			t.Errorf("%s: web/s2 %q after a cancelled drain", e.sock, st)
		}
	}
}

// TestFleetRemoveUnderLoad: issue 20 — `remove web/s1 --wait` over three
// instances under traffic. b holds a long request on s1: the command
// does not end while it runs, then exits 0 once s1 is gone from all
// three; no request fails, the long one included.
func TestFleetRemoveUnderLoad(t *testing.T) {
	dir := shortTempDir(t)
	hold := make(chan struct{})
	arrived := make(chan string, 1)
	var es []*env
	for _, name := range []string{"a", "b", "c"} {
		var h chan struct{}
		if name == "b" {
			h = hold
		}
		es = append(es, fleetMember(t, filepath.Join(dir, name+".sock"), h, arrived, ""))
	}
	released := false
	release := func() {
		if !released {
			released = true
			close(hold)
		}
	}
	t.Cleanup(release) // before the upstreams close: no handler left blocked

	var trs []*traffic
	for _, e := range es {
		trs = append(trs, startTraffic(e.url+"/", 2))
	}
	defer func() {
		for _, tr := range trs {
			tr.end(t)
		}
	}()
	for i, tr := range trs {
		waitFor(t, 10*time.Second, "traffic through "+es[i].sock, func() bool { return tr.ok.Load() >= 20 })
	}
	held := make(chan error, 1)
	go func() {
		resp, err := http.Get(es[1].url + "/slow")
		if err == nil {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 {
				err = fmt.Errorf("status %d: %s", resp.StatusCode, body)
			}
		}
		held <- err
	}()
	if got := <-arrived; got != "b/s1" {
		t.Fatalf("the long request reached %s, want b/s1", got)
	}

	devnull, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer devnull.Close()
	var stdout bytes.Buffer
	stderr := &syncBuffer{}
	done := make(chan int, 1)
	go func() {
		done <- run([]string{"fulcrumctl", "-s", es[0].sock, "-s", es[1].sock, "-s", es[2].sock,
			"remove", "web/s1", "--wait", "--timeout", "20s", "--poll", "50ms"}, devnull, &stdout, stderr)
	}()
	waitFor(t, 15*time.Second, "b's s1 draining", func() bool {
		return statValue(t, es[1].sock, "web", "s1", "status") == "DRAIN"
	})
	select {
	case code := <-done:
		t.Fatalf("exit %d while b has a session on s1\nstdout:\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
	case <-time.After(300 * time.Millisecond): // a few polls: the command must still be waiting
	}
	release()
	var code int
	select {
	case code = <-done:
	case <-time.After(30 * time.Second):
		t.Fatalf("remove did not end; stderr:\n%s", stderr.String())
	}
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
	}
	out := stdout.String()
	for _, name := range []string{"a.sock", "b.sock", "c.sock"} {
		if !strings.Contains(out, name+": web/s1: removed after draining for") {
			t.Errorf("stdout lacks %s: web/s1: removed after draining for ...:\n%s", name, out)
		}
	}
	for _, e := range es {
		for _, r := range statCSV(t, e.sock) {
			if r[0] == "web" && r[1] == "s1" {
				t.Errorf("%s: show stat still lists web/s1", e.sock)
			}
		}
	}
	if err := <-held; err != nil {
		t.Errorf("long request: %v", err)
	}
}
