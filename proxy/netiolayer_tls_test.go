package proxy

import (
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"golang.org/x/net/http2"

	"github.com/fulcrum-proxy/fulcrum/proxy/netio/epoll"
)

// With tune_netio = "epoll", a TLS bind of an http mode frontend is served
// by the layer (crypto/tls over the layer's connection), with its server
// connection moved there too, and the ssl_fc fetches see the handshake.
// HTTP/2 is served there too: a TLS bind whose ALPN offers h2, to clients
// of either protocol, and a proto h2 bind.
func TestNetIOEpollTLSHTTP(t *testing.T) {
	t.Setenv(NetIOEnv, "")
	e := newTLSEnv(t)
	up := headerEcho(t)
	p := e.start(t, fmt.Sprintf(`
[global]
tune_netio = "epoll"
[[frontend]]
name = "www"
bind = ["127.0.0.1:0 ssl crt a.pem alpn http/1.1", "127.0.0.1:0 ssl crt a.pem alpn h2,http/1.1", "127.0.0.1:0 proto h2"]
default_backend = "web"
http_request = [
  "set-header X-SSL %%[ssl_fc]",
  "set-header X-SNI %%[ssl_fc_sni]",
  "set-header X-ALPN %%[ssl_fc_alpn]",
]
[[backend]]
name = "web"
[[backend.server]]
name = "s1"
address = "%s"
`, up.addr()), nil)
	if p.group == nil {
		t.Fatal("no epoll group with tune_netio = epoll")
	}
	fe := p.Frontends[0]
	addrs := fe.Addrs()
	cfg := e.clientTLS("a.test")
	cfg.NextProtos = []string{"http/1.1"}
	layerOf := func(bind string) string {
		fe.mu.Lock()
		defer fe.mu.Unlock()
		for cc := range fe.conns.all() {
			if *cc.bind != bind {
				continue
			}
			tc, ok := cc.c.(*tls.Conn)
			if !ok {
				return fmt.Sprintf("%T", cc.c)
			}
			return fmt.Sprintf("%T", tc.NetConn())
		}
		return "none"
	}
	c, err := tls.Dial("tcp", addrs[0].String(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for i := range 2 {
		if got, want := getOn(t, c), "X-Alpn: http/1.1\nX-Sni: a.test\nX-Ssl: 1"; got != want {
			t.Fatalf("request %d: headers\n%s\nwant\n%s", i, got, want)
		}
	}
	if got := layerOf(addrs[0].String()); got != "*epoll.Conn" {
		t.Errorf("TLS bind: the connection under TLS is a %s, want *epoll.Conn", got)
	}
	waitFor(t, 5*time.Second, "the pooled server connection", func() bool {
		return p.Backends[0].Servers()[0].up.Pool.Len() == 1
	})
	if n := p.group.Conns(); n != 2 {
		t.Errorf("connections on the epoll layer: %d, want 2 (the TLS client and its server)", n)
	}
	if n := up.conns.Load(); n != 1 {
		t.Errorf("server connections %d, want 1 (reused)", n)
	}

	c2, err := tls.Dial("tcp", addrs[1].String(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	if got := getOn(t, c2); got != "X-Alpn: http/1.1\nX-Sni: a.test\nX-Ssl: 1" {
		t.Fatalf("the h2-offering bind: headers\n%s", got)
	}
	if got := layerOf(addrs[1].String()); got != "*epoll.Conn" {
		t.Errorf("the bind offering h2: the connection under TLS is a %s, want *epoll.Conn", got)
	}
	c2.Close()
	waitFor(t, 5*time.Second, "the HTTP/1.1 client of the h2 bind to go", func() bool { return layerOf(addrs[1].String()) == "none" })

	// HTTP/2 over TLS (ALPN h2) and with prior knowledge, on the layer.
	h2tls := e.clientTLS("a.test")
	h2tls.NextProtos = []string{"h2"}
	for i, tc := range []struct {
		rt   *http2.Transport
		url  string
		want string
	}{
		{&http2.Transport{TLSClientConfig: h2tls}, "https://" + addrs[1].String() + "/", "X-Alpn: h2\nX-Sni: a.test\nX-Ssl: 1"},
		{h2cTransport(), "http://" + addrs[2].String() + "/", "X-Alpn: \nX-Sni: \nX-Ssl: 0"},
	} {
		resp, err := (&http.Client{Transport: tc.rt, Timeout: 10 * time.Second}).Get(tc.url)
		if err != nil {
			t.Fatalf("HTTP/2 %s: %v", tc.url, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.ProtoMajor != 2 || string(body) != tc.want {
			t.Errorf("HTTP/2 %s: %s %q, want HTTP/2 %q", tc.url, resp.Proto, body, tc.want)
		}
		if got := layerOf(addrs[1+i].String()); got != "*epoll.Conn" {
			t.Errorf("HTTP/2 %s: the connection is a %s, want *epoll.Conn", tc.url, got)
		}
		tc.rt.CloseIdleConnections()
	}
}

// readRecorder keeps what is read through it.
type readRecorder struct {
	net.Conn
	mu  sync.Mutex
	got []byte
}

func (r *readRecorder) Read(b []byte) (int, error) {
	n, err := r.Conn.Read(b)
	r.mu.Lock()
	r.got = append(r.got, b[:n]...)
	r.mu.Unlock()
	return n, err
}

// lastRecordType returns the content type of the last whole TLS record
// in b (TLS 1.2: alerts are 21 in clear), or -1.
func lastRecordType(b []byte) int {
	last := -1
	for len(b) >= 5 {
		n := 5 + (int(b[3])<<8 | int(b[4]))
		if len(b) < n {
			break
		}
		last = int(b[0])
		b = b[n:]
	}
	return last
}

// With tune_netio = "epoll", TLS terminated in tcp mode relays both ways
// on the layer, and a server's half-close reaches the client as a
// close_notify followed by the end of the TCP stream (the layer's
// connection shuts its write half under TLS); the client can still send,
// and its own close reaches the server.
func TestNetIOEpollTLSTCPCloseNotify(t *testing.T) {
	t.Setenv(NetIOEnv, "")
	e := newTLSEnv(t)
	rest := make(chan string, 1)
	srv := tcpServer(t, func(c *net.TCPConn) {
		c.SetDeadline(time.Now().Add(10 * time.Second))
		b := make([]byte, 4)
		if _, err := io.ReadFull(c, b); err != nil {
			rest <- "error: " + err.Error()
			return
		}
		c.Write([]byte("pong"))
		c.CloseWrite()
		more, err := io.ReadAll(c)
		if err != nil {
			rest <- "error: " + err.Error()
			return
		}
		rest <- string(more)
	})
	p := e.start(t, fmt.Sprintf(`
[global]
tune_netio = "epoll"
[defaults]
mode = "tcp"
[[frontend]]
name = "tls"
bind = ["127.0.0.1:0 ssl crt a.pem"]
default_backend = "b"
[[backend]]
name = "b"
[[backend.server]]
name = "s1"
address = "%s"
`, srv), nil)
	raw, err := net.Dial("tcp", p.Frontends[0].Addrs()[0].String())
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	raw.SetDeadline(time.Now().Add(10 * time.Second))
	rec := &readRecorder{Conn: raw}
	cfg := e.clientTLS("a.test")
	cfg.MaxVersion = tls.VersionTLS12 // record types in clear
	c := tls.Client(rec, cfg)
	if _, err := io.WriteString(c, "ping"); err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(c)
	if err != nil || string(got) != "pong" {
		t.Fatalf("client read %q, %v; want pong, nil", got, err)
	}
	rec.mu.Lock()
	typ := lastRecordType(rec.got)
	rec.mu.Unlock()
	if typ != 21 {
		t.Fatalf("last record from the proxy: type %d, want 21 (the close_notify alert)", typ)
	}
	if n, err := raw.Read(make([]byte, 1)); n != 0 || err != io.EOF {
		t.Fatalf("after close_notify: read %d, %v; want the end of the TCP stream", n, err)
	}
	fe := p.Frontends[0]
	fe.mu.Lock()
	for cc := range fe.conns.all() {
		if tc, ok := cc.c.(*tls.Conn); !ok {
			t.Errorf("client connection %T, want *tls.Conn", cc.c)
		} else if _, ok := tc.NetConn().(*epoll.Conn); !ok {
			t.Errorf("under TLS: %T, want *epoll.Conn", tc.NetConn())
		}
	}
	fe.mu.Unlock()
	io.WriteString(c, "more")
	c.CloseWrite()
	raw.(*net.TCPConn).CloseWrite()
	select {
	case got := <-rest:
		if got != "more" {
			t.Fatalf("server read %q after its half-close, want more", got)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the server did not see the client's end")
	}
	waitFor(t, 5*time.Second, "the session's connections to close", func() bool { return p.group.Conns() == 0 })
}
