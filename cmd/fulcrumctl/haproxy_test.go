package main

import (
	"encoding/json"
	"fmt"
	"github.com/fulcrum-proxy/fulcrum/internal/testutil"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestAgainstHAProxy runs the one-shot mode against a real HAProxy 2.6
// admin socket: show stat as a table and as JSON, set server ... state
// drain, and an error reply.
func TestAgainstHAProxy(t *testing.T) {
	haproxy := needTool(t, "haproxy", "haproxy")
	dir, err := os.MkdirTemp("", "fhap") // short: socket paths are limited to 107 bytes
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	sock := filepath.Join(dir, "h.sock")
	cfg := fmt.Sprintf(`global
    stats socket %s level admin
defaults
    mode http
    timeout connect 2s
    timeout client 10s
    timeout server 10s
frontend fe_web
    bind 127.0.0.1:%d
    default_backend web
backend web
    server s1 %s
    server s2 %s
`, sock, port, upstream(t, "s1", nil), upstream(t, "s2", nil))
	cfgPath := filepath.Join(dir, "haproxy.cfg")
	os.WriteFile(cfgPath, []byte(cfg), 0o644)
	cmd := exec.Command(haproxy, "-db", "-f", cfgPath)
	out := &testutil.SyncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	waitFor(t, 10*time.Second, "HAProxy's socket", func() bool {
		c, err := net.Dial("unix", sock)
		if err == nil {
			c.Close()
		}
		return err == nil
	})

	code, stdout, stderr := ctl(t, "", "-s", sock, "show", "stat")
	if code != 0 || !strings.HasPrefix(stdout, "PROXY ") || !regexp.MustCompile(`(?m)^web +s1 `).MatchString(stdout) {
		t.Fatalf("show stat: exit %d\n%s\n%s\nhaproxy: %s", code, stdout, stderr, out.String())
	}
	if code, _, stderr := ctl(t, "", "-s", sock, "set", "server", "web/s1", "state", "drain"); code != 0 || stderr != "" {
		t.Fatalf("set server: exit %d %s", code, stderr)
	}
	code, stdout, _ = ctl(t, "", "--json", "-s", sock, "show", "stat")
	var rows []map[string]string
	if err := json.Unmarshal([]byte(stdout), &rows); code != 0 || err != nil {
		t.Fatalf("--json: exit %d %v\n%s", code, err, stdout)
	}
	found := false
	for _, r := range rows {
		if r["pxname"] == "web" && r["svname"] == "s1" {
			found = true
			if r["status"] != "DRAIN" {
				t.Errorf("web/s1 after drain: %q", r["status"])
			}
		}
	}
	if !found {
		t.Errorf("no web/s1 in %s", stdout)
	}
	if code, _, stderr := ctl(t, "", "-s", sock, "get", "weight", "web/nosrv"); code != 1 || stderr != "No such server.\n" {
		t.Errorf("error reply: exit %d %q", code, stderr)
	}
	if code, stdout, _ := ctl(t, "", "-s", sock, "ready", "web/*"); code != 0 || stdout != "web/s1, web/s2: READY\n" {
		t.Errorf("ready: exit %d %q", code, stdout)
	}
}
