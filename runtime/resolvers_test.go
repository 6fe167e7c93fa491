package runtime

import (
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fulcrum-proxy/fulcrum/internal/testutil"
	"github.com/fulcrum-proxy/fulcrum/proxy/resolve"
	"github.com/rs/zerolog"
)

// timeline is HAProxy 2.6's capture of DNS discovery against dnsmasq
// (proxy/resolve/testdata/haproxy/capture.sh).
const timeline = "../proxy/resolve/testdata/haproxy/timeline.txt"

// captured returns the reply to the n-th (from 0) occurrence of cmd in
// the timeline.
func captured(t *testing.T, cmd string, n int) string {
	t.Helper()
	data, err := os.ReadFile(timeline)
	if err != nil {
		t.Fatal(err)
	}
	parts := strings.Split(string(data), "$ echo \""+cmd+"\" | socat stdio ./admin.sock\n")
	if len(parts) <= n+1 {
		t.Fatalf("%s: no reply %d to %q", timeline, n, cmd)
	}
	reply := parts[n+1]
	if i := strings.Index(reply, "\n$ echo"); i >= 0 {
		reply = reply[:i+1]
	}
	if i := strings.Index(reply, "\n### "); i >= 0 {
		reply = reply[:i+1]
	}
	return reply
}

// TestShowResolversHAProxy renders `show resolvers dns` and `show stat
// domain resolvers` with the counters HAProxy 2.6 had in the capture, and
// compares them byte for byte (fulcrum names a name server by its address
// where HAProxy has a name: ns1, ns2).
func TestShowResolversHAProxy(t *testing.T) {
	e := startEnv(t, `
[[resolvers]]
name = "dns"
nameserver = ["127.0.0.1:15353", "127.0.0.1:15354"]

[[frontend]]
name = "fe"
bind = ["127.0.0.1:0"]
default_backend = "be"

[[backend]]
name = "be"
`)
	want := captured(t, "show resolvers dns", 0)
	// The counters of each name server, in order.
	re := regexp.MustCompile(`(?m)^  (\w+): +(\d+)$`)
	values := re.FindAllStringSubmatch(want, -1)
	r := e.p.Resolvers[0]
	for i, ns := range r.Nameservers {
		list := ns.Counters.List()
		for j := range list {
			v := values[i*len(list)+j]
			if v[1] != list[j].Name {
				t.Fatalf("counter %d of %s: HAProxy %s, fulcrum %s", j, ns.Name, v[1], list[j].Name)
			}
			var n int64
			fmt.Sscan(v[2], &n)
			list[j].V.Store(n)
		}
	}
	names := strings.NewReplacer("nameserver 127.0.0.1:15353:", "nameserver ns1:", "nameserver 127.0.0.1:15354:", "nameserver ns2:",
		"\n127.0.0.1:15353,", "\nns1,", "\n127.0.0.1:15354,", "\nns2,")
	if got := names.Replace(e.run(t, LevelUser, "show resolvers dns")); got != want {
		t.Errorf("show resolvers dns:\ngot:\n%s\nHAProxy 2.6:\n%s", got, want)
	}
	if got, want := e.run(t, LevelUser, "show resolvers nosuch"), captured(t, "show resolvers nosuch", 0); got != want {
		t.Errorf("show resolvers nosuch: got %q, HAProxy 2.6: %q", got, want)
	}
	// show stat domain resolvers: the capture was taken later (more sent);
	// compare the layout with HAProxy's two first rows.
	got := names.Replace(e.run(t, LevelUser, "show stat domain resolvers"))
	wantStat := captured(t, "show stat domain resolvers", 0)
	wantLines := strings.Split(wantStat, "\n")
	gotLines := strings.Split(got, "\n")
	if gotLines[0] != wantLines[0] {
		t.Errorf("header: got %q, HAProxy 2.6: %q", gotLines[0], wantLines[0])
	}
	digits := regexp.MustCompile(`\d+`)
	for i := 1; i <= 2; i++ {
		if g, w := digits.ReplaceAllString(gotLines[i], "N"), digits.ReplaceAllString(wantLines[i], "N"); g != w {
			t.Errorf("row %d: got %q, HAProxy 2.6: %q", i, gotLines[i], wantLines[i])
		}
	}
}

// stateLines normalises a `show servers state` reply for comparison with
// HAProxy's: the backend id (numbered with the frontends there) and the
// seconds since the last change go; so do the names and ids of template
// slots, whose filling order follows each program's record order: the
// lines of a backend are then compared as a set.
func stateLines(reply string, backends ...string) []string {
	var out []string
	for _, line := range strings.Split(reply, "\n") {
		f := strings.Fields(line)
		if len(f) < 25 || f[0] == "#" || !slices.Contains(backends, f[1]) {
			continue
		}
		f[0], f[9] = "BE", "T"
		if f[1] != "be_host" {
			f[2], f[3] = "ID", "SLOT"
		}
		out = append(out, strings.Join(f, " "))
	}
	slices.Sort(out)
	return out
}

// statusLines is `show stat` cut to pxname, svname, status and weight for
// the backends given, server names masked in templates, sorted.
func statusLines(reply string, backends ...string) []string {
	var out []string
	for _, line := range strings.Split(reply, "\n") {
		f := strings.Split(line, ",")
		if len(f) < 20 || !slices.Contains(backends, f[0]) {
			continue
		}
		name := f[1]
		if f[0] != "be_host" && name != "BACKEND" {
			name = "SLOT"
		}
		out = append(out, strings.Join([]string{f[0], name, f[17], f[18]}, ","))
	}
	slices.Sort(out)
	return out
}

// TestDiscoveryHAProxyTimeline replays HAProxy 2.6's capture against
// fulcrum and dnsmasq (the same records, changed the same way) and
// compares `show servers state` and the status column of `show stat` at
// each step (normalised: stateLines, statusLines). Holds are shorter than
// the capture's, which does not change what is shown; hold_timeout stays
// longer than dnsmasq's restarts (SetSRV).
func TestDiscoveryHAProxyTimeline(t *testing.T) {
	srv := func(target string, port, weight int) string {
		return fmt.Sprintf("_http._tcp.svc.test,%s.svc.test,%d,0,%d", target, port, weight)
	}
	hosts := []string{"127.0.0.1 a1.svc.test", "127.0.0.2 a2.svc.test", "127.0.0.3 a3.svc.test",
		"127.0.0.4 a4.svc.test", "127.0.0.5 a5.svc.test", "127.0.0.1 web.test", "127.0.0.2 web.test"}
	three := []string{srv("a1", 18081, 10), srv("a2", 18082, 300), srv("a3", 18083, 60000)}
	dm := testutil.StartDnsmasq(t, hosts, three)
	e := startEnv(t, fmt.Sprintf(`
[[resolvers]]
name = "dns"
nameserver = ["%s"]
accepted_payload_size = 8192
resolve_retries = 2
timeout_resolve = "50ms"
timeout_retry = "100ms"
hold_obsolete = "300ms"
hold_nx = "300ms"
hold_timeout = "2s"
hold_refused = "300ms"
hold_other = "300ms"

[[frontend]]
name = "fe"
bind = ["127.0.0.1:0"]
default_backend = "be_srv"

[[backend]]
name = "be_srv"
[[backend.server_template]]
prefix = "srv"
count = 4
fqdn = "_http._tcp.svc.test"
resolvers = "dns"
init_addr = "none"

[[backend]]
name = "be_a"
[[backend.server_template]]
prefix = "web"
count = 3
fqdn = "web.test"
port = 18081
resolvers = "dns"
init_addr = "none"
resolve_prefer = "ipv4"

[[backend]]
name = "be_host"
[[backend.server]]
name = "h1"
address = "a1.svc.test:18081"
resolvers = "dns"
init_addr = "none"
[[backend.server]]
name = "h2"
address = "nope.test:18081"
resolvers = "dns"
init_addr = "none"
[[backend.server]]
name = "plain"
address = "127.0.0.1:18081"
`, dm.Addr))
	m := resolve.New(e.p, zerolog.Nop())
	if err := m.Init(nil, nil); err != nil {
		t.Fatal(err)
	}
	m.Start()
	t.Cleanup(m.Stop)

	all := []string{"be_srv", "be_a", "be_host"}
	// expect waits until `show servers state` matches HAProxy's n-th
	// reply to cmd for the backends given (the capture's cmd may be for
	// one backend; fulcrum's full reply is filtered).
	expect := func(step, cmd string, n int, backends ...string) {
		t.Helper()
		want := stateLines(captured(t, cmd, n), backends...)
		if len(want) == 0 {
			t.Fatalf("%s: no line in the capture", step)
		}
		var got []string
		deadline := time.Now().Add(10 * time.Second)
		for time.Now().Before(deadline) {
			got = stateLines(e.run(t, LevelUser, "show servers state"), backends...)
			if slices.Equal(got, want) {
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
		t.Fatalf("%s: show servers state\ngot:\n%s\nHAProxy 2.6:\n%s", step, strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	expect("three records, two addresses, one name", "show servers state", 0, all...)
	checkStatus(t, e, "three records", 0)

	dm.SetSRV(three[:2]...)
	expect("a3 removed, after hold obsolete", "show servers state be_srv", 1, "be_srv")
	checkStatus(t, e, "a3 removed", 1)

	dm.SetSRV(three[0], three[1], srv("a4", 18084, 1), srv("a5", 18085, 256))
	expect("a4 and a5 added", "show servers state be_srv", 2, "be_srv")
	checkStatus(t, e, "a4 and a5 added", 2)

	hosts[0] = "127.0.0.9 a1.svc.test"
	dm.SetHosts(hosts...)
	expect("a1 moved: h1 follows", "show servers state be_host", 1, "be_host")
	expect("a1 moved: its slot follows", "show servers state be_srv", 3, "be_srv")

	dm.Stop()
	expect("name server down, past hold timeout", "show servers state", 2, all...)
	checkStatus(t, e, "name server down", 3)

	// set server fqdn, as the capture ends: HAProxy's replies, and h1
	// then resolves a2.svc.test, admin state 0 (HAProxy 2.6.12, measured
	// beside dnsmasq: no 0x40 bit for a name set from the CLI).
	dm.Start()
	for _, cmd := range []string{"set server be_host/h1 fqdn a2.svc.test", "set server be_srv/srv1 fqdn a1.svc.test",
		"set server be_host/plain fqdn a2.svc.test", "set server be_host/h1 fqdn"} {
		if got, want := e.run(t, LevelAdmin, cmd), captured(t, cmd, 0); got != want {
			t.Errorf("%s: got %q, HAProxy 2.6: %q", cmd, got, want)
		}
	}
	if got, want := e.run(t, LevelAdmin, "set server be_host/h1 fqdn a2.svc.test"), "no need to change the FDQN by 'stats socket command'\n\n"; got != want {
		t.Errorf("same fqdn: got %q, want %q", got, want)
	}
	waitFor(t, 10*time.Second, "h1 on a2's address", func() bool {
		return strings.Contains(e.run(t, LevelUser, "show servers state be_host"), " h1 127.0.0.2 2 0 ")
	})
}

// checkStatus compares fulcrum's `show stat` status column with the n-th
// capture of it in the timeline.
func checkStatus(t *testing.T, e *testEnv, step string, n int) {
	t.Helper()
	cmd := `show stat" | socat stdio ./admin.sock | cut -d, -f1,2,18,19 | grep -v FRONTEND`
	data, err := os.ReadFile(timeline)
	if err != nil {
		t.Fatal(err)
	}
	parts := strings.Split(string(data), "$ echo \""+cmd+"\n")
	if len(parts) <= n+1 {
		t.Fatalf("no capture %d of show stat", n)
	}
	block := parts[n+1]
	if i := strings.Index(block, "\n\n"); i >= 0 {
		block = block[:i]
	}
	var want []string
	for _, line := range strings.Split(block, "\n")[1:] { // after the header
		f := strings.Split(line, ",")
		if f[0] != "be_host" && f[1] != "BACKEND" {
			f[1] = "SLOT"
		}
		want = append(want, strings.Join(f, ","))
	}
	slices.Sort(want)
	if len(want) < 10 {
		t.Fatalf("%s: %d lines in the capture", step, len(want))
	}
	got := statusLines(e.run(t, LevelAdmin, "show stat"), "be_srv", "be_a", "be_host")
	if !slices.Equal(got, want) {
		t.Errorf("%s: show stat status\ngot:\n%s\nHAProxy 2.6:\n%s", step, strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
