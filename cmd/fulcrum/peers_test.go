package main

// Stick tables shared over the peers protocol, end to end: fulcrum
// instances and HAProxy 2.6 on loopback, with traffic.

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"text/template"
	"time"

	"github.com/fulcrum-proxy/fulcrum/conf"
	"github.com/fulcrum-proxy/fulcrum/internal/testutil"
	"github.com/fulcrum-proxy/fulcrum/proxy"
	"github.com/rs/zerolog"
)

// peersConfig is a member of section "mesh": a frontend that tracks the
// source in table web (and in table limits, added up across the fulcrum
// members, when Limit is set: more than Limit requests in 10 s are
// denied), and backend web, whose stick table remembers the server per
// source.
var peersConfig = template.Must(template.New("cfg").Parse(`
[global]
hard_stop_after = "2s"

[[global.stats_socket]]
path = "{{.Sock}}"
level = "admin"

[[frontend]]
name = "www"
bind = ["{{.Bind}}"]
default_backend = "web"
{{- if .Limit}}
http_request = ["track-sc0 src table web", "track-sc1 src table limits", "deny deny_status 429 if { sc_http_req_rate(1) gt {{.Limit}} }"]
{{- else}}
http_request = ["track-sc0 src table web"]
{{- end}}

[[backend]]
name = "web"
stick_table = { type = "ip", size = {{if .Size}}{{.Size}}{{else}}1024{{end}}, expire = "1m", store = ["http_req_cnt", "http_req_rate(10s)"], peers = "mesh" }
stick = ["on src"]

[[backend.server]]
name = "s1"
address = "{{index .Up 0}}"

[[backend.server]]
name = "s2"
address = "{{index .Up 1}}"
{{- if .Limit}}

[[table]]
name = "limits"
type = "ip"
size = 1000
expire = "1m"
store = ["http_req_rate(10s)"]
peers = "mesh"
peers_aggregate = true
{{- end}}

[[peers]]
name = "mesh"
peer = [{{range $i, $p := .Peers}}{{if $i}}, {{end}}{ name = "{{$p.Name}}", address = "{{$p.Addr}}" }{{end}}]
`))

// member is a peer of the section: its name and peers address.
type member struct{ Name, Addr string }

// peersVars fills peersConfig.
type peersVars struct {
	Sock, Bind string
	Up         []string
	Limit      int
	Size       int // of table web, 0 = 1024
	Peers      []member
}

// fulcrumPeer is a fulcrum instance of the section, run in the test
// process (serveWith) with --localpeer.
type fulcrumPeer struct {
	t      *testing.T
	name   string
	vars   peersVars
	path   string
	cancel context.CancelFunc
	done   chan error
	addr   string // the frontend's address
}

// startFulcrumPeer writes the configuration of member name and serves it.
// The instance stops at the test's end unless stopped before.
func startFulcrumPeer(t *testing.T, name string, vars peersVars) *fulcrumPeer {
	t.Helper()
	dir, err := os.MkdirTemp("", "fp")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	vars.Sock = filepath.Join(dir, "admin.sock")
	vars.Bind = freePort(t)
	f := &fulcrumPeer{t: t, name: name, vars: vars, path: filepath.Join(dir, "fulcrum.toml")}
	f.write(vars)
	f.start()
	t.Cleanup(f.stop)
	return f
}

// write makes vars the configuration file's content (the frontend stays
// at the address it got).
func (f *fulcrumPeer) write(vars peersVars) {
	f.t.Helper()
	vars.Sock, vars.Bind = f.vars.Sock, f.vars.Bind
	f.vars = vars
	var b bytes.Buffer
	if err := peersConfig.Execute(&b, vars); err != nil {
		f.t.Fatal(err)
	}
	if err := os.WriteFile(f.path, b.Bytes(), 0o644); err != nil {
		f.t.Fatal(err)
	}
}

// start serves the configuration (again, after stop).
func (f *fulcrumPeer) start() {
	f.t.Helper()
	cfg, err := conf.Load(f.path)
	if err != nil {
		f.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	started := make(chan *reloader, 1)
	f.done = make(chan error, 1)
	f.cancel = cancel
	go func() {
		f.done <- serveWith(ctx, cfg, io.Discard, serveOptions{localPeer: f.name, started: func(r *reloader) { started <- r }})
	}()
	select {
	case r := <-started:
		f.addr = r.current().Frontends[0].Addrs()[0].String()
	case err := <-f.done:
		cancel()
		f.t.Fatalf("fulcrum %s: %v", f.name, err)
	}
}

// stop stops the instance and waits for it.
func (f *fulcrumPeer) stop() {
	if f.cancel == nil {
		return
	}
	f.cancel()
	if err := <-f.done; err != nil {
		f.t.Errorf("fulcrum %s: %v", f.name, err)
	}
	f.cancel = nil
}

// cmd runs a Runtime API command.
func (f *fulcrumPeer) cmd(line string) string { return socketCmd(f.t, f.vars.Sock, line) }

// haproxyPeer is HAProxy 2.6 as a member of the section, with the same
// frontend and backend as peersConfig.
type haproxyPeer struct {
	t    *testing.T
	bin  string
	cfg  string
	sock string
	addr string
	cmdp *exec.Cmd
	out  *testutil.SyncBuffer
}

// startHAProxyPeer runs HAProxy as member name of peers.
func startHAProxyPeer(t *testing.T, name string, up []string, peers []member) *haproxyPeer {
	t.Helper()
	bin := needTool(t, "haproxy", "haproxy")
	dir, err := os.MkdirTemp("", "hp")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	h := &haproxyPeer{t: t, bin: bin, sock: filepath.Join(dir, "admin.sock"), addr: freePort(t), cfg: filepath.Join(dir, "haproxy.cfg")}
	var b strings.Builder
	fmt.Fprintf(&b, "global\n    stats socket %s level admin\n    localpeer %s\npeers mesh\n", h.sock, name)
	for _, p := range peers {
		fmt.Fprintf(&b, "    peer %s %s\n", p.Name, p.Addr)
	}
	fmt.Fprintf(&b, `defaults
    mode http
    timeout connect 1s
    timeout client 5s
    timeout server 5s
frontend www
    bind %s
    http-request track-sc0 src table web
    default_backend web
backend web
    stick-table type ip size 1k expire 1m peers mesh store server_id,server_key,http_req_cnt,http_req_rate(10s)
    stick on src
    server s1 %s
    server s2 %s
`, h.addr, up[0], up[1])
	if err := os.WriteFile(h.cfg, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	h.start()
	return h
}

// start runs HAProxy; it is killed at the test's end.
func (h *haproxyPeer) start() {
	h.t.Helper()
	h.out = &testutil.SyncBuffer{}
	cmd := exec.Command(h.bin, "-db", "-f", h.cfg)
	cmd.Stdout, cmd.Stderr = h.out, h.out
	if err := cmd.Start(); err != nil {
		h.t.Fatal(err)
	}
	h.cmdp = cmd
	h.t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	waitFor(h.t, 5*time.Second, "haproxy's stats socket", func() bool {
		c, err := net.Dial("unix", h.sock)
		if err == nil {
			c.Close()
		}
		return err == nil
	})
}

// kill stops HAProxy at once, as a crash.
func (h *haproxyPeer) kill() {
	h.cmdp.Process.Signal(syscall.SIGKILL)
	h.cmdp.Wait()
}

func (h *haproxyPeer) cmd(line string) string { return socketCmd(h.t, h.sock, line) }

// getFrom sends a GET to addr from source address src and returns the
// status and the body (the upstream's name).
func getFrom(t *testing.T, src, addr string) (int, string) {
	t.Helper()
	tr := &http.Transport{DialContext: (&net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}}).DialContext, DisableKeepAlives: true}
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr, Timeout: 5 * time.Second}
	resp, err := c.Get("http://" + addr + "/")
	if err != nil {
		t.Fatalf("GET %s from %s: %v", addr, src, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// tableEntry returns the data of key's entry in a show table reply, nil
// when it has none.
func tableEntry(reply, key string) map[string]string {
	for _, line := range strings.Split(reply, "\n") {
		if !strings.Contains(line, " key="+key+" ") {
			continue
		}
		m := map[string]string{}
		for _, kv := range regexp.MustCompile(`(\w+(?:\(\d+\))?)=(\S+)`).FindAllStringSubmatch(line, -1) {
			m[kv[1]] = kv[2]
		}
		return m
	}
	return nil
}

// waitEntry waits up to d for key's entry in table web (show) to hold
// want, and returns how long it took.
func waitEntry(t *testing.T, d time.Duration, who string, show func(string) string, key string, want map[string]string) time.Duration {
	t.Helper()
	start := time.Now()
	var got map[string]string
	deadline := start.Add(d)
	for {
		got = tableEntry(show("show table web"), key)
		ok := got != nil
		for k, v := range want {
			ok = ok && got[k] == v
		}
		if ok {
			return time.Since(start)
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: entry %s after %v: %v, want %v", who, key, d, got, want)
		}
		time.Sleep(5 * time.Millisecond) // polling interval, not synchronisation
	}
}

// peersIdle reports whether a show peers reply shows every remote peer
// established with no lesson under way (flags without TEACH_PROCESS 0x1
// nor LEARN_ASSIGN 0x100): changes made from then on are not overwritten
// by the lessons of the start, which carry older data.
func peersIdle(reply string) bool {
	if !strings.Contains(reply, "id=mesh") {
		return false
	}
	for _, m := range regexp.MustCompile(`\(remote,(\w+)\)[^\n]*\n[^\n]*\n\s+flags=0x([0-9a-f]+)( appctx:\S+ st0=(\d+))?`).FindAllStringSubmatch(reply, -1) {
		var pf uint64
		fmt.Sscanf(m[2], "%x", &pf)
		if m[1] != "active" || m[4] != "7" || pf&0x101 != 0 {
			return false
		}
	}
	return true
}

// waitIdle waits until show (a member's Runtime API) says its sessions
// are established and idle.
func waitIdle(t *testing.T, who string, show func(string) string) {
	t.Helper()
	// 30 s: a resync takes 5 s by itself, and a loaded machine starts
	// HAProxy and connects slowly (15 s ran out once with the whole suite
	// running beside it).
	waitFor(t, 30*time.Second, who+"'s sessions to settle", func() bool { return peersIdle(show("show peers")) })
}

// TestPeersWithHAProxy shares table web between fulcrum and HAProxy 2.6
// under traffic: an entry made through one shows with its data in the
// other's show table within a second, both ways; a source pinned to s2
// through one goes to s2 through the other (persistence across a
// failover), both ways; HAProxy killed and restarted learns the entries
// back from fulcrum, and fulcrum stopped and restarted learns them back
// from HAProxy.
func TestPeersWithHAProxy(t *testing.T) {
	needTool(t, "haproxy", "haproxy")
	up := upstreams(t, 2)
	peers := []member{{"hap", freePort(t)}, {"fulc", freePort(t)}}
	f := startFulcrumPeer(t, "fulc", peersVars{Up: up, Peers: peers})
	h := startHAProxyPeer(t, "hap", up, peers)
	waitIdle(t, "fulcrum", f.cmd)

	// Traffic through HAProxy shows in fulcrum's table, and the reverse.
	for range 3 {
		getFrom(t, "127.0.0.1", h.addr)
	}
	took := waitEntry(t, 10*time.Second, "fulcrum", f.cmd, "127.0.0.1", map[string]string{"http_req_cnt": "3", "server_id": "1", "server_key": "s1"})
	t.Logf("HAProxy's entry in fulcrum's show table after %v", took)
	for range 2 {
		getFrom(t, "127.0.0.2", f.addr)
	}
	took = waitEntry(t, 10*time.Second, "HAProxy", h.cmd, "127.0.0.2", map[string]string{"http_req_cnt": "2", "server_id": "1", "server_key": "s1"})
	t.Logf("fulcrum's entry in HAProxy's show table after %v", took)

	// Persistence across a failover, HAProxy then fulcrum: a source
	// pinned to s2 through HAProxy (s1 in maintenance meanwhile) goes to
	// s2 through fulcrum, where s1 is up; and the reverse.
	pin := func(via func(string) string, addr, src string) {
		via("disable server web/s1")
		if _, body := getFrom(t, src, addr); body != "up2" {
			t.Fatalf("pinning %s: served by %s, want up2", src, body)
		}
		via("enable server web/s1")
	}
	pin(h.cmd, h.addr, "127.0.0.3")
	waitEntry(t, 10*time.Second, "fulcrum", f.cmd, "127.0.0.3", map[string]string{"server_key": "s2"})
	pin(f.cmd, f.addr, "127.0.0.4")
	waitEntry(t, 10*time.Second, "HAProxy", h.cmd, "127.0.0.4", map[string]string{"server_key": "s2"})
	for range 4 {
		if _, body := getFrom(t, "127.0.0.3", f.addr); body != "up2" {
			t.Errorf("127.0.0.3, pinned to s2 through HAProxy: fulcrum sent it to %s", body)
		}
		if _, body := getFrom(t, "127.0.0.4", h.addr); body != "up2" {
			t.Errorf("127.0.0.4, pinned to s2 through fulcrum: HAProxy sent it to %s", body)
		}
	}

	// HAProxy killed and restarted: it asks fulcrum for a resync.
	h.kill()
	h.start()
	took = waitEntry(t, 5*time.Second, "restarted HAProxy", h.cmd, "127.0.0.2", map[string]string{"server_key": "s1"})
	waitEntry(t, 10*time.Second, "restarted HAProxy", h.cmd, "127.0.0.4", map[string]string{"server_key": "s2"})
	t.Logf("restarted HAProxy had fulcrum's entries back after %v", took)
	waitIdle(t, "fulcrum", f.cmd)

	// fulcrum stopped and restarted: it asks HAProxy.
	f.stop()
	f.start()
	took = waitEntry(t, 5*time.Second, "restarted fulcrum", f.cmd, "127.0.0.1", map[string]string{"server_key": "s1"})
	waitEntry(t, 10*time.Second, "restarted fulcrum", f.cmd, "127.0.0.3", map[string]string{"server_key": "s2"})
	t.Logf("restarted fulcrum had the entries back after %v", took)
	if _, body := getFrom(t, "127.0.0.3", f.addr); body != "up2" {
		t.Errorf("127.0.0.3 after fulcrum's restart: served by %s, want up2", body)
	}
}

// TestPeersFulcrumFailover: a source pinned to s2 through fulcrum A goes
// to s2 through fulcrum B; B stopped and restarted learns the entry back.
func TestPeersFulcrumFailover(t *testing.T) {
	up := upstreams(t, 2)
	peers := []member{{"a", freePort(t)}, {"b", freePort(t)}}
	a := startFulcrumPeer(t, "a", peersVars{Up: up, Peers: peers})
	b := startFulcrumPeer(t, "b", peersVars{Up: up, Peers: peers})
	waitIdle(t, "a", a.cmd)
	waitIdle(t, "b", b.cmd)
	a.cmd("disable server web/s1")
	if _, body := getFrom(t, "127.0.0.7", a.addr); body != "up2" {
		t.Fatalf("pinning through a: served by %s, want up2", body)
	}
	a.cmd("enable server web/s1")
	took := waitEntry(t, 10*time.Second, "b", b.cmd, "127.0.0.7", map[string]string{"server_key": "s2", "server_id": "2"})
	t.Logf("a's entry on b after %v", took)
	for range 4 {
		if _, body := getFrom(t, "127.0.0.7", b.addr); body != "up2" {
			t.Errorf("pinned to s2 through a: b sent it to %s", body)
		}
	}
	b.stop()
	b.start()
	took = waitEntry(t, 5*time.Second, "restarted b", b.cmd, "127.0.0.7", map[string]string{"server_key": "s2"})
	t.Logf("restarted b had the entry back after %v", took)
	if _, body := getFrom(t, "127.0.0.7", b.addr); body != "up2" {
		t.Errorf("after b's restart: served by %s, want up2", body)
	}
}

// TestPeersAggregateRateLimit: three fulcrum instances add up
// http_req_rate(10s) in table limits (peers_aggregate), so that "more
// than 100 requests in 10 s" is enforced across them: a client spreading
// 300 requests over the three gets about 100 through, not 300.
func TestPeersAggregateRateLimit(t *testing.T) {
	up := upstreams(t, 2)
	peers := []member{{"a", freePort(t)}, {"b", freePort(t)}, {"c", freePort(t)}}
	var fs []*fulcrumPeer
	for _, p := range peers {
		fs = append(fs, startFulcrumPeer(t, p.Name, peersVars{Up: up, Peers: peers, Limit: 100}))
	}
	for _, f := range fs {
		waitIdle(t, f.name, f.cmd)
	}
	// One request every 4 ms, round robin: 1.2 s, well within the 10 s
	// period. The pace leaves the instances the time to tell each other.
	tick := time.NewTicker(4 * time.Millisecond)
	defer tick.Stop()
	passed, denied := 0, 0
	for i := range 300 {
		<-tick.C
		code, _ := getFrom(t, "127.0.0.9", fs[i%3].addr)
		switch code {
		case 200:
			passed++
		case 429:
			denied++
		default:
			t.Fatalf("request %d: status %d", i, code)
		}
	}
	t.Logf("300 requests over 3 instances, limit 100 in 10 s: %d passed, %d denied", passed, denied)
	if passed < 90 || passed > 110 {
		t.Errorf("%d requests passed, want 100 within 10%%", passed)
	}
	// Each instance reads the cluster's rate, once the last increments
	// have travelled (a loaded machine delays them).
	for _, f := range fs {
		var rate int
		var e map[string]string
		deadline := time.Now().Add(5 * time.Second)
		for {
			e = tableEntry(f.cmd("show table limits"), "127.0.0.9")
			rate, _ = strconv.Atoi(e["http_req_rate(10000)"])
			if (rate >= 290 && rate <= 300) || rate > 300 || time.Now().After(deadline) {
				break
			}
			time.Sleep(20 * time.Millisecond) // polling interval
		}
		if rate < 290 || rate > 300 {
			t.Errorf("%s: rate %d (%v), want about 300", f.name, rate, e)
		}
	}
}

// peerCounter returns counter name (new_conn, coll...) of peer in a show
// peers reply.
func peerCounter(reply, peer, name string) string {
	m := regexp.MustCompile(`id=` + peer + `\(remote[^\n]*\n[^\n]*` + name + `=(\d+)`).FindStringSubmatch(reply)
	if m == nil {
		return ""
	}
	return m[1]
}

// TestPeersReload: a reload that keeps a shared table keeps the session
// and the entries (no reconnection, no resync); one that redefines the
// table (its size) starts the new table from the old one's entries, and
// the members carry on replicating both ways.
func TestPeersReload(t *testing.T) {
	up := upstreams(t, 2)
	peers := []member{{"a", freePort(t)}, {"b", freePort(t)}}
	vars := peersVars{Up: up, Peers: peers}
	a := startFulcrumPeer(t, "a", vars)
	b := startFulcrumPeer(t, "b", vars)
	waitIdle(t, "a", a.cmd)
	waitIdle(t, "b", b.cmd)
	getFrom(t, "127.0.0.11", b.addr)
	waitEntry(t, 10*time.Second, "a", a.cmd, "127.0.0.11", map[string]string{"http_req_cnt": "1"})
	before := a.cmd("show peers")

	// Same configuration: the session and the table stay.
	if out := a.cmd("reload"); !strings.HasPrefix(out, "Success=1") {
		t.Fatalf("reload: %q", out)
	}
	after := a.cmd("show peers")
	for _, c := range []string{"new_conn", "coll"} {
		if x, y := peerCounter(before, "b", c), peerCounter(after, "b", c); x == "" || x != y {
			t.Errorf("plain reload: %s of peer b went from %q to %q (the session must stay)", c, x, y)
		}
	}
	if e := tableEntry(a.cmd("show table web"), "127.0.0.11"); e["http_req_cnt"] != "1" {
		t.Errorf("plain reload: entry %v, want http_req_cnt=1", e)
	}
	getFrom(t, "127.0.0.12", a.addr)
	waitEntry(t, 10*time.Second, "b after a's reload", b.cmd, "127.0.0.12", map[string]string{"http_req_cnt": "1"})

	// The table redefined: the new one starts from the old one's entries.
	vars.Size = 2048
	a.write(vars)
	if out := a.cmd("reload"); !strings.HasPrefix(out, "Success=1") {
		t.Fatalf("reload: %q", out)
	}
	reply := a.cmd("show table web")
	if !strings.Contains(reply, "size:2048") {
		t.Fatalf("the reload did not redefine the table:\n%s", reply)
	}
	for _, k := range []string{"127.0.0.11", "127.0.0.12"} {
		if e := tableEntry(reply, k); e["http_req_cnt"] != "1" {
			t.Errorf("redefining reload: entry %s: %v, want http_req_cnt=1", k, e)
		}
	}
	getFrom(t, "127.0.0.13", a.addr)
	waitEntry(t, 10*time.Second, "b after a's redefining reload", b.cmd, "127.0.0.13", map[string]string{"http_req_cnt": "1"})
	getFrom(t, "127.0.0.14", b.addr)
	waitEntry(t, 10*time.Second, "a's new table", a.cmd, "127.0.0.14", map[string]string{"http_req_cnt": "1"})
}

// TestCheckLocalPeer: check (as run) needs a member named as the local
// peer: --localpeer, else the section's localpeer, else the host name.
func TestCheckLocalPeer(t *testing.T) {
	cfg := writeFile(t, "peers.toml", `
[[frontend]]
name = "www"
bind = ["127.0.0.1:0"]
default_backend = "web"

[[backend]]
name = "web"
stick_table = { type = "ip", size = 10, peers = "mesh" }

[[backend.server]]
name = "s1"
address = "127.0.0.1:9001"

[[peers]]
name = "mesh"
peer = [{ name = "lb1", address = "127.0.0.1:10000" }, { name = "lb2", address = "127.0.0.1:10001" }]
`)
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--localpeer", "lb2"}, 0, "configuration is valid\n"},
		{[]string{"-L", "lb1"}, 0, "configuration is valid\n"},
		{[]string{"--localpeer", "lb3"}, 1, cfg + `:15: peers "mesh": no peer named "lb3", the local peer's name (localpeer, --localpeer or the host name)` + "\n"},
	} {
		var out bytes.Buffer
		args := append([]string{"fulcrum", "check", "-c", cfg}, tc.args...)
		if code := run(args, &out, &out); code != tc.code || out.String() != tc.want {
			t.Errorf("%v: exit %d, output %q, want exit %d, %q", tc.args, code, out.String(), tc.code, tc.want)
		}
	}
}

// TestMeshConfigWireNames: a [[table]] named "<peers>/<table>" (HAProxy's
// name of a table declared in a peers section, as fulcrum import writes
// it) is defined to the peers as "/<table>", HAProxy 2.6's nid; other
// tables by their own name.
func TestMeshConfigWireNames(t *testing.T) {
	cfg, err := conf.Parse("t.toml", []byte(`
[[peers]]
name = "mesh"
peer = [{ name = "lb1", address = "127.0.0.1:1" }]

[[table]]
name = "mesh/limits"
type = "ip"
size = 10
peers = "mesh"

[[table]]
name = "web"
type = "ip"
size = 10
peers = "mesh"

[[frontend]]
name = "fe"
bind = ["127.0.0.1:0"]
mode = "http"
http_request = ["track-sc0 src table mesh/limits", "track-sc1 src table web"]
default_backend = "be"

[[backend]]
name = "be"
[[backend.server]]
name = "s1"
address = "127.0.0.1:1"
`))
	if err != nil {
		t.Fatal(err)
	}
	p, err := proxy.New(cfg, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	mc := meshConfig(cfg, p, cfg.Peers[0], "lb1")
	got := map[string]string{}
	for _, tc := range mc.Tables {
		got[tc.Table.Name()] = tc.Name
	}
	if len(got) != 2 || got["mesh/limits"] != "/limits" || got["web"] != "" {
		t.Errorf("wire names %q, want mesh/limits as /limits and web as itself", got)
	}
}
