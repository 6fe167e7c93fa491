package runtime

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// checkedServers is twoServers with health checks configured on both
// servers (no Checker runs: only the Runtime API moves their state) and a
// frontend that denies the addresses of the blocklist file acl.
func checkedServers(s1, s2, acl string) string {
	return fmt.Sprintf(`
[defaults]
mode = "http"
timeout_connect = "2s"
timeout_server = "10s"

[[frontend]]
name = "fe_web"
bind = ["127.0.0.1:0"]
default_backend = "web"
acl = { blocked = "src -f %s" }
http_request = ["deny if blocked"]

[[backend]]
name = "web"
balance = "roundrobin"

[[backend.server]]
name = "s1"
address = %q
check = true

[[backend.server]]
name = "s2"
address = %q
check = true
`, acl, s1, s2)
}

// get sends one request on c and returns its status.
func get(t *testing.T, c *http.Client, url string) int {
	t.Helper()
	resp, err := c.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// mustRun runs a command at admin level and fails on any reply but the
// empty one.
func mustRun(t *testing.T, e *testEnv, l Level, cmd string) {
	t.Helper()
	if got := e.run(t, l, cmd); got != "\n" {
		t.Fatalf("%s: reply %q, want none", cmd, got)
	}
}

// TestHealthAndACLThroughProxy drives a real proxy through the Runtime
// API: `disable health` and a forced `health down` show in show stat and
// take the server out of the traffic, `health up` brings it back; `add acl`
// on the frontend's -f blocklist denies the very next request of a
// keep-alive client, `del acl` lets the one after through. Each change is
// logged with the value it replaced.
func TestHealthAndACLThroughProxy(t *testing.T) {
	s1 := startUpstream(t, "127.0.0.1:0", "s1")
	s2 := startUpstream(t, "127.0.0.1:0", "s2")
	blocklist := filepath.Join(t.TempDir(), "blocked.acl")
	if err := os.WriteFile(blocklist, []byte("192.0.2.0/24\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	e := startEnv(t, checkedServers(s1.addr, s2.addr, blocklist))
	url := "http://" + e.p.Frontends[0].Addrs()[0].String() + "/"
	c := &http.Client{Timeout: 10 * time.Second}
	defer c.CloseIdleConnections()

	if got := statRow(t, e, "web", "s1", "check_status"); got != "INI" {
		t.Fatalf("s1 check_status %q before any change, want INI (checks configured, none run)", got)
	}

	// disable health: "no check", empty check columns, still in traffic.
	mustRun(t, e, LevelAdmin, "disable health web/s1")
	if st, cs := statRow(t, e, "web", "s1", "status"), statRow(t, e, "web", "s1", "check_status"); st != "no check" || cs != "" {
		t.Fatalf("after disable health: status %q check_status %q, want \"no check\" and empty", st, cs)
	}

	// health down: DOWN in show stat, and no request reaches s1.
	mustRun(t, e, LevelAdmin, "set server web/s1 health down")
	if st := statRow(t, e, "web", "s1", "status"); st != "DOWN" {
		t.Fatalf("after health down: status %q, want DOWN", st)
	}
	before := s1.requests.Load()
	for range 10 {
		if code := get(t, c, url); code != http.StatusOK {
			t.Fatalf("request with s1 DOWN: status %d", code)
		}
	}
	if n := s1.requests.Load() - before; n != 0 {
		t.Fatalf("s1 DOWN received %d of 10 requests", n)
	}

	// health up, enable health: UP again, and s1 takes its share.
	mustRun(t, e, LevelAdmin, "set server web/s1 health up")
	mustRun(t, e, LevelAdmin, "enable health web/s1")
	if st := statRow(t, e, "web", "s1", "status"); st != "UP" {
		t.Fatalf("after health up and enable health: status %q, want UP", st)
	}
	before = s1.requests.Load()
	for range 4 {
		get(t, c, url)
	}
	if s1.requests.Load() == before {
		t.Fatal("s1 UP again received none of 4 roundrobin requests")
	}

	// add acl: the next request on the same connection is denied.
	mustRun(t, e, LevelOperator, "add acl "+blocklist+" 127.0.0.1")
	if code := get(t, c, url); code != http.StatusForbidden {
		t.Fatalf("request from a blocked address: status %d, want 403", code)
	}
	if got := e.run(t, LevelUser, "get acl #0 127.0.0.1"); !strings.Contains(got, `match=yes, idx=tree, pattern="127.0.0.1"`) {
		t.Fatalf("get acl after add: %q", got)
	}
	// del acl: the next one goes through.
	mustRun(t, e, LevelOperator, "del acl #0 127.0.0.1")
	if code := get(t, c, url); code != http.StatusOK {
		t.Fatalf("request after del acl: status %d, want 200", code)
	}
	if got := statRow(t, e, "fe_web", "FRONTEND", "dreq"); got != "1" {
		t.Fatalf("fe_web dreq %q, want 1 (the one denied request)", got)
	}

	log := e.log.String()
	for _, want := range []string{
		`"previous_health_enabled":true`,
		`"op_state":"DOWN","previous_op_state":"UP"`,
		`"op_state":"UP","previous_op_state":"DOWN"`,
		`"pattern":"127.0.0.1"`,
		`"message":"acl entry added"`,
		`"message":"acl entry deleted"`,
		`"command":"del acl #0 127.0.0.1"`,
	} {
		if !strings.Contains(log, want) {
			t.Errorf("change log lacks %s:\n%s", want, log)
		}
	}
}
