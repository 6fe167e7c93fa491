package runtime

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fulcrum-proxy/fulcrum/conf"
)

// freePort returns a loopback port free at the time of the call, for a
// program that cannot be told to pick one (haproxy).
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// TestHAProxySendProxy: HAProxy 2.6 in front of fulcrum's accept-proxy
// bind, with send-proxy (v1) and send-proxy-v2: the client's own address
// (127.0.0.2 here, HAProxy connecting from 127.0.0.1) reaches the server
// in X-Forwarded-For, and show table keys on it.
func TestHAProxySendProxy(t *testing.T) {
	haproxy := needTool(t, "haproxy", "haproxy")
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "xff=%s", r.Header.Get("X-Forwarded-For"))
	}))
	defer up.Close()
	dir, err := os.MkdirTemp("", "pp")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	cfgPath := filepath.Join(dir, "fulcrum.toml")
	if err := os.WriteFile(cfgPath, []byte(fmt.Sprintf(`
[[frontend]]
name = "www"
bind = ["127.0.0.1:0 accept-proxy"]
forwardfor = true
default_backend = "web"
stick_table = { type = "ip", size = 100, store = ["conn_cnt"] }
tcp_request = ["connection track-sc0 src"]
[[backend]]
name = "web"
[[backend.server]]
name = "s1"
address = "%s"
`, up.Listener.Addr())), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := conf.Load(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	e := startEnvConf(t, c)
	fulcrum := e.p.Frontends[0].Addrs()[0].String()
	p1, p2 := freePort(t), freePort(t)
	tmpl := fmt.Sprintf(`global
  stats socket %s/haproxy.sock level admin
defaults
  mode tcp
  timeout client 5s
  timeout server 5s
  timeout connect 5s
frontend v1
  bind 127.0.0.1:%d
  default_backend v1
frontend v2
  bind 127.0.0.1:%d
  default_backend v2
backend v1
  server f %s send-proxy
backend v2
  server f %s send-proxy-v2
`, dir, p1, p2, fulcrum, fulcrum)
	if err := os.WriteFile(filepath.Join(dir, "haproxy.cfg.tmpl"), []byte(tmpl), 0o600); err != nil {
		t.Fatal(err)
	}
	startHAProxy(t, haproxy, dir)
	for _, port := range []int{p1, p2} {
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2)}, Timeout: 5 * time.Second}
		conn, err := d.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			t.Fatal(err)
		}
		conn.SetDeadline(time.Now().Add(10 * time.Second))
		fmt.Fprint(conn, "GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatalf("port %d: %v", port, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		conn.Close()
		if string(body) != "xff=127.0.0.2" {
			t.Fatalf("port %d: the server got %q, want xff=127.0.0.2", port, body)
		}
	}
	// The last connection's entry is in use until fulcrum closes it.
	var got string
	waitFor(t, 10*time.Second, "the entry released", func() bool {
		got = e.run(t, LevelAdmin, "show table www")
		return strings.Contains(got, "use=0")
	})
	if !strings.Contains(got, "used:1\n") || !strings.Contains(got, ": key=127.0.0.2 use=0 exp=0 conn_cnt=2\n") {
		t.Fatalf("show table www: want one entry, for 127.0.0.2 with conn_cnt=2, got:\n%s", got)
	}
}
