package proxy

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"runtime"
	"testing"
	"time"

	"github.com/fulcrum-proxy/fulcrum/conf"
	"github.com/fulcrum-proxy/fulcrum/proxy/netio/epoll"
)

// epollConfig is testConfig on the epoll layer (tune_netio = "epoll"),
// whatever NetIOEnv says.
func epollConfig(t *testing.T, mode conf.Mode, addrs []string) *conf.Config {
	t.Helper()
	t.Setenv(NetIOEnv, "")
	cfg := testConfig(mode, addrs, nil)
	cfg.Global.NetIO = "epoll"
	return cfg
}

// clientConns returns the connections fe serves.
func clientConns(fe *Frontend) []net.Conn {
	fe.mu.Lock()
	defer fe.mu.Unlock()
	var out []net.Conn
	for cc := range fe.conns.all() {
		out = append(out, cc.c)
	}
	return out
}

// With tune_netio = "epoll", a keep-alive HTTP client and its pooled
// server connection are both served by the epoll layer, the server
// connection is reused across requests, and a reload keeps the layer:
// the listener is handed over with its pollers, the idle client moves to
// the new proxy and is served there, and the pollers end with the last
// proxy (goleak in TestMain).
func TestNetIOEpollHTTPKeepAliveAndReload(t *testing.T) {
	u := newUpstream(t, "s1")
	p, err := New(epollConfig(t, conf.ModeHTTP, []string{u.addr()}), nopLogger())
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	stopped := false
	var cur *Proxy = p
	t.Cleanup(func() {
		if !stopped {
			cur.Shutdown(contextBackground())
		}
	})
	if p.group == nil {
		t.Fatal("no epoll group with tune_netio = epoll")
	}
	addr := p.Frontends[0].Addrs()[0].String()
	rc := dialRaw(t, addr)
	for i := range 3 {
		if got := bodyOf(rc.do(t, "GET /x HTTP/1.1\r\nHost: x\r\n\r\n")); got != "s1\n" {
			t.Fatalf("request %d: body %q, want s1", i, got)
		}
	}
	if n := u.conns.Load(); n != 1 {
		t.Errorf("server connections: %d, want 1 (reused)", n)
	}
	for _, c := range clientConns(p.Frontends[0]) {
		if _, ok := c.(*epoll.Conn); !ok {
			t.Errorf("client connection is a %T, want *epoll.Conn", c)
		}
	}
	waitFor(t, 5*time.Second, "the pooled server connection", func() bool {
		return p.Backends[0].Servers()[0].up.Pool.Len() == 1
	})
	if n := p.group.Conns(); n != 2 {
		t.Errorf("connections on the epoll layer: %d, want 2 (client and server)", n)
	}

	g := p.group
	p2 := reloadTo(t, p, keepBind(epollConfig(t, conf.ModeHTTP, []string{u.addr()}), p))
	cur = p2
	if p2.group != g {
		t.Error("the reload made a new epoll group, want the old one shared")
	}
	if err := p2.Retire(contextBackground(), p); err != nil {
		t.Fatal(err)
	}
	if got := bodyOf(rc.do(t, "GET /moved HTTP/1.1\r\nHost: x\r\n\r\n")); got != "s1\n" {
		t.Fatalf("the moved client: body %q, want s1", got)
	}
	if got := bodyOf(dialRaw(t, addr).do(t, "GET /new HTTP/1.1\r\nHost: x\r\n\r\n")); got != "s1\n" {
		t.Fatalf("a new client after the reload: body %q, want s1", got)
	}
	if n := u.requests.Load(); n != 5 {
		t.Errorf("upstream requests: %d, want 5", n)
	}
	if err := p2.Shutdown(contextBackground()); err != nil {
		t.Fatal(err)
	}
	stopped = true
	if g.Ref() {
		t.Error("the epoll group is still open after the last proxy stopped")
	}
}

// With tune_netio = "epoll", a TCP session relays both ways on the epoll
// layer and propagates the client's half-close: the server sees the end,
// answers, closes, and the client reads everything then the end.
func TestNetIOEpollTCPHalfClose(t *testing.T) {
	up := tcpServer(t, func(c *net.TCPConn) {
		b, _ := io.ReadAll(c)
		c.Write(append([]byte("got:"), b...))
	})
	p, addr := startProxy(t, epollConfig(t, conf.ModeTCP, []string{up}))
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	io.WriteString(c, "ping")
	waitFor(t, 5*time.Second, "both sides on the epoll layer", func() bool { return p.group.Conns() == 2 })
	for _, cc := range clientConns(p.Frontends[0]) {
		if _, ok := cc.(*epoll.Conn); !ok {
			t.Errorf("client connection is a %T, want *epoll.Conn", cc)
		}
	}
	c.(*net.TCPConn).CloseWrite()
	got, err := io.ReadAll(bufio.NewReader(c))
	if err != nil || string(got) != "got:ping" {
		t.Fatalf("client read %q, %v; want got:ping, nil", got, err)
	}
	waitFor(t, 5*time.Second, "the session's connections to close", func() bool { return p.group.Conns() == 0 })
}

// TestNetIOLayerChoice: tune_netio = "go" serves Go's connections with no
// epoll group; an unset tune_netio, parsed or the zero value, serves the
// clients on the epoll layer on Linux (conf.DefaultNetIO, "uring": the
// epoll layer, mode tcp relayed on io_uring); the listening sockets say
// the same (Frontend.NetIOs).
func TestNetIOLayerChoice(t *testing.T) {
	t.Setenv(NetIOEnv, "")
	u := newUpstream(t, "s1")
	parsed, err := conf.Parse("d.toml", []byte(fmt.Sprintf(`
[[frontend]]
name = "www"
bind = ["127.0.0.1:0"]
mode = "http"
default_backend = "web"
[[backend]]
name = "web"
[[backend.server]]
name = "s1"
address = %q
`, u.addr())))
	if err != nil {
		t.Fatal(err)
	}
	goCfg := testConfig(conf.ModeHTTP, []string{u.addr()}, nil)
	goCfg.Global.NetIO = "go"
	defaultLayer := conf.DefaultNetIO
	if defaultLayer == "uring" {
		defaultLayer = "epoll"
	}
	for _, tc := range []struct {
		name  string
		cfg   *conf.Config
		layer string
	}{
		{"go", goCfg, "go"},
		{"parsed default", parsed, defaultLayer},
		{"zero value", testConfig(conf.ModeHTTP, []string{u.addr()}, nil), defaultLayer},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.layer == "epoll" && runtime.GOOS != "linux" {
				t.Fatal("the default is epoll off Linux")
			}
			p, addr := startProxy(t, tc.cfg)
			if onEpoll := p.group != nil && p.epoll; onEpoll != (tc.layer == "epoll") {
				t.Fatalf("epoll group in use: %v, want layer %s", onEpoll, tc.layer)
			}
			if got := p.Frontends[0].NetIOs(); len(got) != 1 || got[0] != tc.layer {
				t.Errorf("NetIOs: %v, want [%s]", got, tc.layer)
			}
			rc := dialRaw(t, addr)
			if got := bodyOf(rc.do(t, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")); got != "s1\n" {
				t.Fatalf("body %q", got)
			}
			for _, c := range clientConns(p.Frontends[0]) {
				_, isEpoll := c.(*epoll.Conn)
				_, isTCP := c.(*net.TCPConn)
				if tc.layer == "epoll" && !isEpoll || tc.layer == "go" && !isTCP {
					t.Errorf("client connection is a %T, want the %s layer's", c, tc.layer)
				}
			}
		})
	}
}
