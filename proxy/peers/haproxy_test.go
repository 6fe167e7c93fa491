package peers

// HAProxy 2.6 as a real peer, on loopback.

import (
	"bufio"
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
	"time"

	"github.com/fulcrum-proxy/fulcrum/internal/testutil"
	"github.com/fulcrum-proxy/fulcrum/proxy/stick"
)

// needHAProxy returns the haproxy binary; a test needing it fails under
// CI=true when it is missing and is skipped otherwise.
func needHAProxy(t testing.TB) string {
	t.Helper()
	path, err := exec.LookPath("haproxy")
	if err == nil {
		return path
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("haproxy not found: the CI must install the Debian package haproxy (.ci/run PKGS)")
	}
	t.Skipf("haproxy not found: apt-get install haproxy to run this test")
	return ""
}

// hap is a running HAProxy.
type hap struct {
	bin  string
	dir  string
	cfg  string
	sock string
	http string // its frontend's address
	cmd  *exec.Cmd
	out  *testutil.SyncBuffer
}

// startHAProxy runs HAProxy with local peer name local in section
// "mesh" of peers, and a frontend tracking the source address in table
// "st" (stored: store), which answers 200 itself. The frontend listens at
// httpAddr.
func startHAProxy(t testing.TB, local string, peers []PeerConfig, store, httpAddr string) *hap {
	t.Helper()
	return startHAProxyTable(t, local, peers, "ip", store, httpAddr)
}

// startHAProxyTable is startHAProxy with table st's type as HAProxy
// writes it ("ip", "string len 16"...).
func startHAProxyTable(t testing.TB, local string, peers []PeerConfig, typ, store, httpAddr string) *hap {
	t.Helper()
	h := &hap{bin: needHAProxy(t), dir: t.TempDir(), http: httpAddr}
	h.sock = filepath.Join(h.dir, "admin.sock")
	var b strings.Builder
	fmt.Fprintf(&b, "global\n    stats socket %s level admin\n    localpeer %s\n", h.sock, local)
	fmt.Fprintf(&b, "peers mesh\n")
	for _, p := range peers {
		fmt.Fprintf(&b, "    peer %s %s\n", p.Name, p.Addr)
	}
	fmt.Fprintf(&b, `defaults
    mode http
    timeout connect 1s
    timeout client 5s
    timeout server 5s
frontend fe
    bind %s
    http-request track-sc0 src table st
    http-request return status 200
backend st
    stick-table type %s size 1000 expire 1m peers mesh store %s
`, httpAddr, typ, store)
	h.cfg = filepath.Join(h.dir, "haproxy.cfg")
	if err := os.WriteFile(h.cfg, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	h.start(t)
	return h
}

// start runs the configuration; the process is killed at the test's end.
func (h *hap) start(t testing.TB) {
	t.Helper()
	h.out = &testutil.SyncBuffer{}
	h.cmd = exec.Command(h.bin, "-db", "-f", h.cfg)
	h.cmd.Stdout, h.cmd.Stderr = h.out, h.out
	if err := h.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	cmd := h.cmd
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	waitFor(t, 15*time.Second, "haproxy's stats socket", func() bool {
		c, err := net.Dial("unix", h.sock)
		if err == nil {
			c.Close()
		}
		return err == nil
	})
}

// kill stops HAProxy at once (SIGKILL): its peers see the connection end.
func (h *hap) kill() {
	h.cmd.Process.Signal(syscall.SIGKILL)
	h.cmd.Wait()
}

// cli sends one Runtime API command and returns the reply.
func (h *hap) cli(t testing.TB, cmd string) string {
	t.Helper()
	c, err := net.Dial("unix", h.sock)
	if err != nil {
		t.Fatalf("haproxy socket: %v\n%s", err, h.out.String())
	}
	defer c.Close()
	fmt.Fprintf(c, "%s\n", cmd)
	b, _ := io.ReadAll(bufio.NewReader(c))
	return string(b)
}

// get sends a request through HAProxy's frontend.
func (h *hap) get(t testing.TB) {
	t.Helper()
	resp, err := http.Get("http://" + h.http + "/")
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
}

var entryData = regexp.MustCompile(`(\w+(?:\(\d+\))?)=(\S+)`)

// entry returns the data of key's entry in HAProxy's table st, nil when
// there is none.
func (h *hap) entry(t testing.TB, key string) map[string]string {
	t.Helper()
	out := h.cli(t, "show table st key "+key)
	for _, line := range strings.Split(out, "\n") {
		if !strings.Contains(line, " key="+key+" ") {
			continue
		}
		m := map[string]string{}
		for _, kv := range entryData.FindAllStringSubmatch(line, -1) {
			m[kv[1]] = kv[2]
		}
		return m
	}
	return nil
}

// freePort returns a loopback address nothing listens on.
func freePort(t testing.TB) string {
	ln := listen(t)
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// TestHAProxyBothWays: HAProxy 2.6 and a mesh share a table: an entry
// made by a request through HAProxy shows in the mesh's table with its
// data within a second, and an entry changed in the mesh's table shows in
// HAProxy's `show table` within a second.
func TestHAProxyBothWays(t *testing.T) {
	needHAProxy(t)
	store := "server_id,gpc0,conn_cnt,conn_cur,conn_rate(10s),http_req_cnt,http_req_rate(10s),bytes_out_cnt"
	ln := listen(t)
	peers := []PeerConfig{{Name: "hap", Addr: freePort(t)}, {Name: "fulc", Addr: ln.Addr().String()}}
	h := startHAProxy(t, "hap", peers, store, freePort(t))
	tb := ipTable(t, "st", 0, strings.Split(store, ",")...)
	m, err := New(Config{Name: "mesh", Local: "fulc", Peers: peers, Tables: []TableConfig{{Table: tb}}}, testLog(t))
	if err != nil {
		t.Fatal(err)
	}
	m.StartListener(ln)
	t.Cleanup(m.Stop)
	waitFor(t, 10*time.Second, "the session with HAProxy", func() bool { return settled(m) })

	// HAProxy to fulcrum.
	k := ip(t, "127.0.0.1")
	for range 3 {
		h.get(t)
	}
	start := time.Now()
	// The goal is within 1 s (logged below); the deadline is wider
	// so that a loaded machine does not fail the test on a timing.
	waitFor(t, 10*time.Second, "HAProxy's entry in fulcrum's table", func() bool { return value(tb, k, stick.HTTPReqCnt) == 3 })
	t.Logf("HAProxy's 3rd request seen after %v", time.Since(start))
	for _, c := range []struct {
		d    stick.DataType
		want int64
	}{{stick.ConnCnt, 3}, {stick.ConnRate, 3}, {stick.HTTPReqRate, 3}, {stick.ConnCur, 0}} {
		if v := value(tb, k, c.d); v != c.want {
			t.Errorf("%s learned from HAProxy: %d, want %d", c.d, v, c.want)
		}
	}

	// Fulcrum to HAProxy.
	k2 := ip(t, "192.0.2.9")
	e := tb.Get(k2)
	tb.SetServer(e, 3, "")
	tb.Update(e, stick.HTTPReqCnt, stick.HTTPReqRate, stick.GPC0, stick.ConnCur)
	tb.Add(e, stick.BytesOutCnt, 5_000_000_000)
	tb.Release(e)
	start = time.Now()
	var got map[string]string
	waitFor(t, 10*time.Second, "fulcrum's entry in HAProxy's table", func() bool {
		got = h.entry(t, "192.0.2.9")
		return got != nil
	})
	t.Logf("fulcrum's entry seen by HAProxy after %v", time.Since(start))
	want := map[string]string{"server_id": "3", "gpc0": "1", "http_req_cnt": "1", "http_req_rate(10000)": "1",
		"conn_cur": "0", "bytes_out_cnt": "5000000000"}
	for name, v := range want {
		if got[name] != v {
			t.Errorf("HAProxy's %s: %q, want %q (entry %v)", name, got[name], v, got)
		}
	}
	exp, _ := strconv.Atoi(got["exp"])
	if exp < 55000 || exp > 60000 {
		t.Errorf("HAProxy's exp=%d, want about 60000", exp)
	}
}

// TestHAProxyAllTypes sends every data type fulcrum stores through
// HAProxy 2.6, each with its own value, both ways: fulcrum's entry as
// HAProxy's show table prints it, and HAProxy's (set table) as fulcrum
// reads it. conn_cur is never learned.
func TestHAProxyAllTypes(t *testing.T) {
	needHAProxy(t)
	types := stick.DataTypes()
	var store []string
	for _, d := range types {
		name := d.String()
		if d.IsRate() {
			name += "(10s)"
		}
		store = append(store, name)
	}
	ln := listen(t)
	peers := []PeerConfig{{Name: "hap", Addr: freePort(t)}, {Name: "fulc", Addr: ln.Addr().String()}}
	h := startHAProxy(t, "hap", peers, strings.Join(store, ","), freePort(t))
	tb := ipTable(t, "st", 0, store...)
	m, err := New(Config{Name: "mesh", Local: "fulc", Peers: peers, Tables: []TableConfig{{Table: tb}}}, testLog(t))
	if err != nil {
		t.Fatal(err)
	}
	m.StartListener(ln)
	t.Cleanup(m.Stop)
	waitFor(t, 10*time.Second, "the session with HAProxy", func() bool { return settled(m) })

	// fulcrum to HAProxy: type i gets value 100+i (the server id 7).
	k := ip(t, "198.51.100.1")
	var set []stick.Assign
	want := map[string]string{}
	for i, d := range types {
		v := int64(100 + i)
		switch d {
		case stick.ServerKey:
			continue
		case stick.ServerID:
			v = 7
		}
		set = append(set, stick.Assign{Type: d, Value: v})
		name := d.String()
		if d.IsRate() {
			name += "(10000)"
		}
		want[name] = strconv.FormatInt(v, 10)
	}
	want["conn_cur"] = "0"
	want["server_key"] = "srv7"
	tb.Set(k, set)
	e := tb.Lookup(k)
	tb.SetServer(e, 7, "srv7")
	tb.Release(e)
	var got map[string]string
	waitFor(t, 15*time.Second, "fulcrum's entry in HAProxy", func() bool {
		got = h.entry(t, "198.51.100.1")
		return got != nil && got["server_key"] == "srv7"
	})
	for name, v := range want {
		if got[name] != v {
			t.Errorf("HAProxy's %s: %q, want %q", name, got[name], v)
		}
	}

	// HAProxy to fulcrum: type i gets value 200+i.
	var cmd strings.Builder
	cmd.WriteString("set table st key 198.51.100.2")
	for i, d := range types {
		if d == stick.ServerKey {
			continue
		}
		fmt.Fprintf(&cmd, " data.%s %d", d, 200+i)
	}
	if out := h.cli(t, cmd.String()); strings.TrimSpace(out) != "" {
		t.Fatalf("%s: %q", cmd.String(), out)
	}
	k2 := ip(t, "198.51.100.2")
	waitFor(t, 15*time.Second, "HAProxy's entry in fulcrum", func() bool { return value(tb, k2, stick.GPC1) == int64(200+int(stick.GPC1)) })
	for i, d := range types {
		if d == stick.ServerKey {
			continue
		}
		want := int64(200 + i)
		if d == stick.ConnCur {
			want = 0
		}
		if v := value(tb, k2, d); v != want {
			t.Errorf("fulcrum's %s: %d, want %d", d, v, want)
		}
	}
}

// TestAggregateWithHAProxy: two fulcrum members add up an aggregate
// table's counts; HAProxy, a member too, receives the sums as an ordinary
// table, and its own counts are not added to fulcrum's.
func TestAggregateWithHAProxy(t *testing.T) {
	needHAProxy(t)
	lns := []net.Listener{listen(t), listen(t)}
	peers := []PeerConfig{{Name: "hap", Addr: freePort(t)}, {Name: "a", Addr: lns[0].Addr().String()}, {Name: "b", Addr: lns[1].Addr().String()}}
	h := startHAProxy(t, "hap", peers, "http_req_cnt", freePort(t))
	var tabs []*stick.Table
	var meshes []*Mesh
	for i, local := range []string{"a", "b"} {
		tb := ipTable(t, "st", 2, "http_req_cnt")
		m, err := New(Config{Name: "mesh", Local: local, Peers: peers, Tables: []TableConfig{{Table: tb, Aggregate: true}}}, testLog(t))
		if err != nil {
			t.Fatal(err)
		}
		m.StartListener(lns[i])
		t.Cleanup(m.Stop)
		tabs, meshes = append(tabs, tb), append(meshes, m)
	}
	for _, m := range meshes {
		waitFor(t, 10*time.Second, "the sessions of "+m.localName, func() bool { return settled(m) })
	}
	k := ip(t, "127.0.0.1")
	for i, n := range []int{5, 3} {
		e := tabs[i].Get(k)
		for range n {
			tabs[i].Update(e, stick.HTTPReqCnt)
		}
		tabs[i].Release(e)
	}
	for i, tb := range tabs {
		waitFor(t, 15*time.Second, fmt.Sprintf("the sum on member %d", i), func() bool { return value(tb, k, stick.HTTPReqCnt) == 8 })
	}
	waitFor(t, 15*time.Second, "the sum in HAProxy", func() bool {
		e := h.entry(t, "127.0.0.1")
		return e != nil && e["http_req_cnt"] == "8"
	})
	// HAProxy counts two requests of its own (10) and sends its value: the
	// fulcrum members do not add it. First, every sum the members sent
	// HAProxy has arrived: a late one would replace HAProxy's count (last
	// writer wins).
	for _, m := range meshes {
		waitCaughtUp(t, m, "hap")
	}
	var recv []uint64
	for _, m := range meshes {
		recv = append(recv, peerStatus(m, "hap").UpdatesReceived)
	}
	h.get(t)
	h.get(t)
	waitFor(t, 15*time.Second, "HAProxy's own count", func() bool { return h.entry(t, "127.0.0.1")["http_req_cnt"] == "10" })
	for i, m := range meshes {
		waitFor(t, 15*time.Second, "HAProxy's update", func() bool { return peerStatus(m, "hap").UpdatesReceived > recv[i] })
		if v := value(tabs[i], k, stick.HTTPReqCnt); v != 8 {
			t.Errorf("member %s after HAProxy's count: %d, want 8", m.localName, v)
		}
	}
}

// TestHAProxyKeyTypes pairs a table of each key type with HAProxy's (the
// key size on the wire as HAProxy counts it) and sends an entry each way.
func TestHAProxyKeyTypes(t *testing.T) {
	needHAProxy(t)
	for _, tc := range []struct {
		hap      string // HAProxy's type
		typ      stick.KeyType
		keyLen   int
		ours     string // a key set on fulcrum's side
		theirs   string // a key set on HAProxy's side
		theirsAs string // how fulcrum prints it
	}{
		{"ip", stick.KeyIP, 0, "192.0.2.1", "192.0.2.2", "192.0.2.2"},
		{"ipv6", stick.KeyIPv6, 0, "2001:db8::1", "2001:db8::2", "2001:db8::2"},
		{"integer", stick.KeyInteger, 0, "4000000000", "77", "77"},
		{"string", stick.KeyString, 0, "fulcrum-key", "haproxy-key", "haproxy-key"},
		{"string len 12", stick.KeyString, 12, "twelve-chars", "hap-12-chars", "hap-12-chars"},
		{"binary len 4", stick.KeyBinary, 4, "0a0b0c0d", "01020304", "01020304"},
	} {
		t.Run(tc.hap, func(t *testing.T) {
			ln := listen(t)
			peers := []PeerConfig{{Name: "hap", Addr: freePort(t)}, {Name: "fulc", Addr: ln.Addr().String()}}
			h := startHAProxyTable(t, "hap", peers, tc.hap, "gpc0", freePort(t))
			s, _ := stick.ParseStore([]string{"gpc0"})
			tb := stick.New(stick.Config{Name: "st", Type: tc.typ, KeyLen: tc.keyLen, Size: 100, Expire: time.Minute, Store: s})
			m, err := New(Config{Name: "mesh", Local: "fulc", Peers: peers, Tables: []TableConfig{{Table: tb, KeyLen: tc.keyLen}}}, testLog(t))
			if err != nil {
				t.Fatal(err)
			}
			m.StartListener(ln)
			t.Cleanup(m.Stop)
			waitFor(t, 10*time.Second, "the session with HAProxy", func() bool { return settled(m) })
			k, err := tb.ParseKey(tc.ours)
			if err != nil {
				t.Fatal(err)
			}
			tb.Set(k, []stick.Assign{{Type: stick.GPC0, Value: 41}})
			if tc.typ == stick.KeyBinary {
				// HAProxy's CLI cannot name a binary key: find it in the dump.
				waitFor(t, 15*time.Second, "fulcrum's entry in HAProxy", func() bool {
					out := h.cli(t, "show table st")
					return strings.Contains(out, "key="+strings.ToUpper(tc.ours)+" use=0 exp=") && strings.Contains(out, "gpc0=41")
				})
			} else {
				waitFor(t, 15*time.Second, "fulcrum's entry in HAProxy", func() bool { return h.entry(t, tc.ours)["gpc0"] == "41" })
			}
			if tc.typ == stick.KeyBinary {
				return // and it cannot set one either
			}
			if out := h.cli(t, "set table st key "+tc.theirs+" data.gpc0 42"); strings.TrimSpace(out) != "" {
				t.Fatalf("set table: %q", out)
			}
			k2, _ := tb.ParseKey(tc.theirsAs)
			waitFor(t, 15*time.Second, "HAProxy's entry in fulcrum", func() bool { return value(tb, k2, stick.GPC0) == 42 })
			if m.Status().Peers[0].ProtoErr != 0 {
				t.Error("protocol errors")
			}
		})
	}
}

// TestHAProxyPeersSectionTable: a table declared in HAProxy's peers
// section (`table limits ...` in `peers mesh`) is "mesh/limits" to its
// rules and CLI and "/limits" to its peers (HAProxy's nid: the name past
// the section's); a fulcrum table named "mesh/limits" (what fulcrum
// import makes of that line) with the wire name "/limits" pairs with it
// both ways.
func TestHAProxyPeersSectionTable(t *testing.T) {
	ln := listen(t)
	peers := []PeerConfig{{Name: "hap", Addr: freePort(t)}, {Name: "fulc", Addr: ln.Addr().String()}}
	h := &hap{bin: needHAProxy(t), dir: t.TempDir(), http: freePort(t)}
	h.sock = filepath.Join(h.dir, "admin.sock")
	cfg := fmt.Sprintf(`global
    stats socket %s level admin
    localpeer hap
peers mesh
    peer hap %s
    peer fulc %s
    table limits type ip size 1000 expire 1m store http_req_cnt,gpc0
defaults
    mode http
    timeout connect 1s
    timeout client 5s
    timeout server 5s
frontend fe
    bind %s
    http-request track-sc0 src table mesh/limits
    http-request return status 200
`, h.sock, peers[0].Addr, peers[1].Addr, h.http)
	h.cfg = filepath.Join(h.dir, "haproxy.cfg")
	if err := os.WriteFile(h.cfg, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	h.start(t)
	tb := ipTable(t, "mesh/limits", 0, "http_req_cnt", "gpc0")
	m, err := New(Config{Name: "mesh", Local: "fulc", Peers: peers, Tables: []TableConfig{{Table: tb, Name: "/limits"}}}, testLog(t))
	if err != nil {
		t.Fatal(err)
	}
	m.StartListener(ln)
	t.Cleanup(m.Stop)
	waitFor(t, 10*time.Second, "the session with HAProxy", func() bool { return settled(m) })

	k := ip(t, "127.0.0.1")
	for range 2 {
		h.get(t)
	}
	waitFor(t, 10*time.Second, "HAProxy's entry in fulcrum's table", func() bool { return value(tb, k, stick.HTTPReqCnt) == 2 })

	e := tb.Get(ip(t, "192.0.2.7"))
	tb.Update(e, stick.GPC0)
	tb.Release(e)
	waitFor(t, 10*time.Second, "fulcrum's entry in HAProxy's table mesh/limits", func() bool {
		return strings.Contains(h.cli(t, "show table mesh/limits key 192.0.2.7"), " gpc0=1")
	})
}
