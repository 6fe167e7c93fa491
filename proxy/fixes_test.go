package proxy

import (
	"bufio"
	"context"
	"errors"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/fulcrum-proxy/fulcrum/conf"
	"github.com/fulcrum-proxy/fulcrum/proxy/stick"
)

// An HTTP/1.0 request without Host used to be forwarded as HTTP/1.1, which
// requires Host: servers refused it. The version is now kept.
func TestHTTP10RequestKeepsItsVersion(t *testing.T) {
	lines := make(chan string, 1)
	srv := tcpServer(t, func(c *net.TCPConn) {
		line, _ := bufio.NewReader(c).ReadString('\n')
		lines <- strings.TrimSpace(line)
		c.Write([]byte("HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok"))
	})
	_, addr := startProxy(t, testConfig(conf.ModeHTTP, []string{srv}, nil))
	resp := dialRaw(t, addr).do(t, "GET /x HTTP/1.0\r\n\r\n")
	if resp.StatusCode != 200 {
		t.Fatalf("status %d, want 200", resp.StatusCode)
	}
	if got := <-lines; got != "GET /x HTTP/1.0" {
		t.Errorf("server saw %q, want %q", got, "GET /x HTTP/1.0")
	}
}

// A 400 or 408 sent by a server used to be logged as <BADREQ>, which is
// only for requests the proxy could not parse.
func TestServer400LogsItsRequest(t *testing.T) {
	u := newUpstream(t, "s1")
	u.handler = func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(400) }
	_, addr, buf := startLoggedProxy(t, testConfig(conf.ModeHTTP, []string{u.addr()}, nil))
	if resp := dialRaw(t, addr).do(t, "GET /bad HTTP/1.1\r\nHost: x\r\n\r\n"); resp.StatusCode != 400 {
		t.Fatalf("status %d, want 400", resp.StatusCode)
	}
	waitFor(t, 2*time.Second, "the log line", func() bool { return len(buf.lines()) >= 1 })
	if l := buf.lines()[0]; l["request"] != "GET /bad HTTP/1.1" || l["server"] != "s1" {
		t.Errorf("log line: %v", l)
	}
}

// hard_stop_after used to close only the client side: a request waiting on
// a hung server kept the stop waiting until timeout_server.
func TestHardStopClosesServerSide(t *testing.T) {
	hung := tcpServer(t, func(c *net.TCPConn) {
		c.Read(make([]byte, 4096))
		c.Read(make([]byte, 1)) // until the proxy closes
	})
	cfg := testConfig(conf.ModeHTTP, []string{hung}, nil)
	cfg.Backends[0].TimeoutServer = time.Minute
	p, err := New(cfg, nopLogger())
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	rc := dialRaw(t, p.Frontends[0].Addrs()[0].String())
	rc.c.Write([]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"))
	waitFor(t, 5*time.Second, "the request at the server", func() bool { return p.Snapshot().Backends[0].Scur == 1 })
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- p.Shutdown(ctx) }()
	select {
	case err := <-done:
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Shutdown: %v, want the hard-stop deadline", err)
		}
	case <-time.After(20 * time.Second): // timeout_server is a minute
		t.Fatal("Shutdown still waiting on the hung server")
	}
}

// bytes_in_cnt used to count only the request head: a tracked POST counts
// its body too.
func TestTrackBytesInCountsTheBody(t *testing.T) {
	u := newUpstream(t, "s1")
	p, addr := stickProxy(t, `
[[frontend]]
name = "www"
bind = ["127.0.0.1:0"]
default_backend = "web"
stick_table = { type = "ip", size = 10, expire = "1m", store = ["bytes_in_cnt"] }
http_request = ["track-sc0 src"]
[[backend]]
name = "web"
[[backend.server]]
name = "s1"
address = "%s"
`, u)
	const head = "POST /up HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n"
	if resp := dialRaw(t, addr).do(t, head+strings.Repeat("a", 1000)); resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	tbl := p.Table("www")
	k, _ := tbl.ParseKey("127.0.0.1")
	want := int64(len(head) + 1000)
	var got int64
	waitFor(t, 5*time.Second, "bytes_in_cnt", func() bool {
		e := tbl.Lookup(k)
		if e == nil {
			return false
		}
		defer tbl.Release(e)
		got, _ = tbl.Value(e, stick.BytesInCnt)
		return got == want
	})
}
