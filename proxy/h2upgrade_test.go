package proxy

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/fulcrum-proxy/fulcrum/conf"
	"github.com/fulcrum-proxy/fulcrum/internal/testutil"
)

// TestH2ImplicitUpgrade: a plaintext HTTP bind without proto serves as
// HTTP/2 a connection that opens with the HTTP/2 preface (HAProxy's
// implicit upgrade), and HTTP/1.1 to the others on the same bind; bind
// proto h1 and disable_h2_upgrade turn the upgrade off (the preface is
// then a bad HTTP/1 request: 400).
func TestH2ImplicitUpgrade(t *testing.T) {
	up := newUpstream(t, "s1")
	cfg := testConfig(conf.ModeHTTP, []string{up.addr()}, nil)
	cfg.Global.H2MaxStreams = 100
	p, addr, logs := startLogged(t, cfg)

	c := &http.Client{Transport: h2cTransport(), Timeout: 10 * time.Second}
	for i := range 3 { // one connection, three streams
		resp, err := c.Get(fmt.Sprintf("http://%s/x%d", addr, i))
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.ProtoMajor != 2 || resp.StatusCode != 200 || strings.TrimSpace(string(body)) != "s1" {
			t.Fatalf("h2c request %d: %s %d %q", i, resp.Proto, resp.StatusCode, body)
		}
	}
	c.CloseIdleConnections()
	// HTTP/1.1 on the same bind.
	if resp, body := get(t, "http://"+addr+"/", ""); resp.StatusCode != 200 || resp.ProtoMajor != 1 || strings.TrimSpace(body) != "s1" {
		t.Fatalf("HTTP/1.1 on the same bind: %s %d %q", resp.Proto, resp.StatusCode, body)
	}
	fe := p.Frontends[0]
	waitFor(t, 5*time.Second, "four requests logged", func() bool { return len(logLines(t, logs)) == 4 })
	if n := fe.H2Upgrades.Load(); n != 1 {
		t.Errorf("upgrades: %d, want 1", n)
	}
	if n := fe.H2.TotalStreams.Load(); n != 3 {
		t.Errorf("h2 streams: %d, want 3", n)
	}
	lines := logLines(t, logs)
	var h2, h1 int
	for _, l := range lines {
		switch {
		case strings.HasSuffix(l["request"].(string), " HTTP/2.0") && l["status"] == 200.0:
			h2++
		case l["request"] == "GET / HTTP/1.1" && l["status"] == 200.0:
			h1++
		}
	}
	if h2 != 3 || h1 != 1 {
		t.Errorf("access log: %d HTTP/2.0 and %d HTTP/1.1 requests, want 3 and 1: %v", h2, h1, lines)
	}
}

// TestH2UpgradeOff: proto h1 on the bind, or disable_h2_upgrade, keeps
// the preface an HTTP/1 request (400, as HAProxy with the option).
func TestH2UpgradeOff(t *testing.T) {
	up := newUpstream(t, "s1")
	for _, tc := range []struct {
		name string
		set  func(*conf.Config)
	}{
		{"proto h1", func(c *conf.Config) {
			c.Frontends[0].BindOptions = []*conf.Bind{{Addr: "127.0.0.1:0", Proto: "h1"}}
		}},
		{"disable_h2_upgrade", func(c *conf.Config) { c.Frontends[0].DisableH2Upgrade = true }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig(conf.ModeHTTP, []string{up.addr()}, nil)
			cfg.Global.H2MaxStreams = 100
			tc.set(cfg)
			p, addr, _ := startLogged(t, cfg)
			conn := dialDeadline(t, addr)
			io.WriteString(conn, "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")
			b, _ := io.ReadAll(conn)
			if !strings.HasPrefix(string(b), "HTTP/1.1 400 ") {
				t.Errorf("preface with the upgrade off: %q, want a 400", b)
			}
			if p.Frontends[0].H2Upgrades.Load() != 0 {
				t.Error("counted as an upgrade")
			}
		})
	}
}

// TestH2UpgradeSlowPreface: a preface that arrives in pieces (a part of
// it first, the rest later) is still recognised; bytes that only start
// like it ("PRI" and then something else) are an HTTP/1 request.
func TestH2UpgradeSlowPreface(t *testing.T) {
	up := newUpstream(t, "s1")
	cfg := testConfig(conf.ModeHTTP, []string{up.addr()}, nil)
	cfg.Global.H2MaxStreams = 100
	p, addr, _ := startLogged(t, cfg)

	conn := dialDeadline(t, addr)
	io.WriteString(conn, "PRI * HTTP/2")
	waitFor(t, 5*time.Second, "the first part read", func() bool { return p.Frontends[0].Counters.Stot.Load() == 1 })
	io.WriteString(conn, ".0\r\n\r\nSM\r\n\r\n")
	io.WriteString(conn, "\x00\x00\x00\x04\x00\x00\x00\x00\x00") // an empty SETTINGS frame
	// The server's first frame is its SETTINGS: 9 bytes of header, type 4.
	head := make([]byte, 9)
	if _, err := io.ReadFull(conn, head); err != nil || head[3] != 4 {
		t.Fatalf("after the preface: %v, frame header %x, want a SETTINGS frame", err, head)
	}
	waitFor(t, 5*time.Second, "the upgrade counted", func() bool { return p.Frontends[0].H2Upgrades.Load() == 1 })

	other := dialDeadline(t, addr)
	io.WriteString(other, "PRIX / HTTP/1.1\r\nHost: a\r\n\r\n")
	b := make([]byte, 12)
	if _, err := io.ReadFull(other, b); err != nil || !strings.HasPrefix(string(b), "HTTP/1.1 ") {
		t.Fatalf("a request that starts like the preface: %q, %v, want an HTTP/1.1 answer", b, err)
	}
	// The method PRI itself is reserved for the preface: 400, as HAProxy.
	pri := dialDeadline(t, addr)
	io.WriteString(pri, "PRI / HTTP/1.1\r\nHost: a\r\n\r\n")
	if b, _ := io.ReadAll(pri); !strings.HasPrefix(string(b), "HTTP/1.1 400 ") {
		t.Errorf("method PRI in HTTP/1: %q, want a 400", b)
	}
}

// TestH2UpgradeCurl: curl --http2-prior-knowledge and h2load against a
// plain bind without proto h2, as against HAProxy's default bind.
func TestH2UpgradeCurl(t *testing.T) {
	curl := testutil.NeedTool(t, "curl", "curl")
	h2load := testutil.NeedTool(t, "h2load", "nghttp2-client")
	up := newUpstream(t, "s1")
	cfg := testConfig(conf.ModeHTTP, []string{up.addr()}, nil)
	cfg.Global.H2MaxStreams = 100
	_, addr, _ := startLogged(t, cfg)
	out, err := exec.Command(curl, "-sS", "--http2-prior-knowledge", "-o", "-", "-w", "%{http_version} %{http_code}", "http://"+addr+"/").CombinedOutput()
	if err != nil || string(out) != "s1\n2 200" {
		t.Fatalf("curl --http2-prior-knowledge: %v %q", err, out)
	}
	out, err = exec.Command(h2load, "-n", "200", "-c", "4", "-m", "10", "http://"+addr+"/").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "200 succeeded, 0 failed, 0 errored") {
		t.Fatalf("h2load: %v\n%s", err, out)
	}
}

// dialDeadline dials addr with a 10 s deadline on the connection, closed
// when the test ends.
func dialDeadline(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(10 * time.Second))
	return c
}

// TestH2LogAbsoluteURI: the log targets' lines show an HTTP/2 request's
// URI in absolute form, as HAProxy 2.6's (%r: "GET http://host/x
// HTTP/2.0"); the stderr line keeps the path.
func TestH2LogAbsoluteURI(t *testing.T) {
	up := newUpstream(t, "s1")
	sink := newSyslogSink(t)
	cfg, err := conf.Parse("t.toml", []byte(fmt.Sprintf(`
[[frontend]]
name = "www"
bind = ["127.0.0.1:0"]
default_backend = "web"
log = [{ target = %q, format = "raw" }]
log_format = "%%{+Q}r %%HU"
[[backend]]
name = "web"
[[backend.server]]
name = "s1"
address = %q
`, sink.addr(), up.addr())))
	if err != nil {
		t.Fatal(err)
	}
	p, _ := startProxy(t, cfg)
	addr := p.Frontends[0].Addrs()[0].String()
	c := &http.Client{Transport: h2cTransport(), Timeout: 10 * time.Second}
	resp, err := c.Get("http://" + addr + "/x?y=1")
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	c.CloseIdleConnections()
	want := fmt.Sprintf(`"GET http://%[1]s/x?y=1 HTTP/2.0" http://%[1]s/x?y=1`, addr)
	if got := sink.nextRaw(t, 0); got != want {
		t.Errorf("log line: %q, want %q", got, want)
	}
}

// An HTTP/1.1 request asking to upgrade to h2c (RFC 7540 3.2) is served
// in HTTP/1.1 and its server never sees the upgrade: Upgrade: h2c was
// passed on alone once Connection and HTTP2-Settings were dropped; HAProxy
// 2.6 drops it too (a fresh-user trial). Another protocol's upgrade
// (WebSocket) still goes through.
func TestH2CUpgradeNotPassed(t *testing.T) {
	heads := make(chan string, 2)
	up := tcpServer(t, func(c *net.TCPConn) {
		br := bufio.NewReader(c)
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		var b strings.Builder
		req.Header.Write(&b)
		heads <- b.String()
		io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
	})
	_, addr := startProxy(t, testConfig(conf.ModeHTTP, []string{up}, nil))
	resp := dialRaw(t, addr).do(t, "GET / HTTP/1.1\r\nHost: a\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAAQAAP__\r\n\r\n")
	if resp.StatusCode != 200 || bodyOf(resp) != "ok" {
		t.Fatalf("got %d", resp.StatusCode)
	}
	h := <-heads
	for _, name := range []string{"Upgrade", "Http2-Settings", "Connection"} {
		if strings.Contains(h, name+":") {
			t.Errorf("the server got %s: %q", name, h)
		}
	}
	rc := dialRaw(t, addr)
	io.WriteString(rc.c, "GET /ws HTTP/1.1\r\nHost: a\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n")
	h = <-heads
	if !strings.Contains(h, "Upgrade: websocket") {
		t.Errorf("a WebSocket upgrade lost its Upgrade field: %q", h)
	}
}
