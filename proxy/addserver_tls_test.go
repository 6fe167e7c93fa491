package proxy

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/fulcrum-proxy/fulcrum/conf"
	"github.com/fulcrum-proxy/fulcrum/internal/testcert"
	"github.com/fulcrum-proxy/fulcrum/internal/testutil"
	"github.com/fulcrum-proxy/fulcrum/proxy/proxyproto"
)

// addLine adds the server of an `add server` line to b as the Runtime API
// does (conf.ParseServerLine with the configuration's LineEnv, then
// AddServer) and puts it in READY.
func addLine(t *testing.T, p *Proxy, b *Backend, name, line string) *Server {
	t.Helper()
	sc, l, err := conf.ParseServerLine(name, strings.Fields(line), p.Conf.ServerLineEnv(b.Conf.Mode))
	if err != nil {
		t.Fatalf("%s: %v", line, err)
	}
	s, err := p.AddServer(b, sc, l.ID)
	if err != nil {
		t.Fatal(err)
	}
	b.SetAdmin(s, AdminReady)
	return s
}

// TestAddServerTLS (issue 19, point 1): a server added at runtime with
// ssl, verify required, a ca-file relative to the configuration's
// directory and sni str(www.test) connects over TLS as a server of the
// file does: the upstream sees SNI www.test; one whose ca-file did not
// sign the upstream's certificate fails the connection (503, SC); an sni
// read from the request keys the idle pool by its value.
func TestAddServerTLS(t *testing.T) {
	e := newTLSEnv(t)
	other := testcert.NewCA(t, "Other CA", testcert.Options{})
	testcert.Write(t, e.dir, "other.pem", other.PEM)
	www := newTLSUpstream(t, e.ca.Server(t, testcert.Options{}, "www.test").TLS(), nil)
	wild := newTLSUpstream(t, e.b.TLS(), nil)
	logs := &testutil.SyncBuffer{}
	p := e.start(t, `
[defaults]
retries = 0
timeout_connect = "2s"
[[frontend]]
name = "www"
bind = ["127.0.0.1:0"]
use_backend = [{ backend = "wild", if = "{ hdr_end(host) .b.test }" }]
default_backend = "web"
[[backend]]
name = "web"
[[backend]]
name = "wild"
http_reuse = "always"
`, logs)
	addr := p.Frontends[0].Addrs()[0].String()
	web := p.Backend("web")
	d1 := addLine(t, p, web, "d1", www.addr()+" ssl verify required ca-file ca.pem sni str(www.test)")
	if code, body := getHost(t, addr, "x.example", "/"); code != 200 || body != "sni=www.test alpn= client= host=x.example" {
		t.Fatalf("through d1: %d %q", code, body)
	}
	web.SetAdmin(d1, AdminMaint)
	d2 := addLine(t, p, web, "d2", www.addr()+" ssl ca-file other.pem sni str(www.test)")
	if code, _ := getHost(t, addr, "x.example", "/"); code != 503 {
		t.Fatalf("through d2 (another CA): got %d, want 503", code)
	}
	waitFor(t, 5*time.Second, "d2's access line", func() bool {
		return regexp.MustCompile(`"backend":"web","server":"d2","status":503,.*"termination_state":"SC"`).MatchString(logs.String())
	})
	if !regexp.MustCompile(`"server":"d2".*"sni":"www.test".*certificate signed by unknown authority`).MatchString(logs.String()) {
		t.Errorf("no handshake failure for d2 in:\n%s", logs.String())
	}
	if got := d2.Counters.Econ.Load(); got != 1 {
		t.Errorf("d2 econ: got %d, want 1", got)
	}

	// sni req.hdr(host): one TLS connection per name, reused for it.
	w1 := addLine(t, p, p.Backend("wild"), "w1", wild.addr()+" ssl ca-file ca.pem sni req.hdr(host)")
	seen := map[string]bool{}
	for _, host := range []string{"x.b.test", "y.b.test", "x.b.test", "y.b.test"} {
		if code, body := getHost(t, addr, host, "/"); code != 200 || body != "sni="+host+" alpn= client= host="+host {
			t.Fatalf("%s: %d %q", host, code, body)
		}
		seen[host] = true
		waitFor(t, 5*time.Second, "the connection back in the pool", func() bool { return w1.up.Pool.Len() == len(seen) })
	}
	if got := wild.conns.Load(); got != 2 {
		t.Errorf("upstream TLS connections: got %d, want 2 (one per SNI)", got)
	}
}

// TestAddServerSendProxyV2: a server added with send-proxy-v2 receives a
// PROXY v2 header carrying the client's addresses.
func TestAddServerSendProxyV2(t *testing.T) {
	e := newTLSEnv(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	got := make(chan string, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			got <- err.Error()
			return
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(10 * time.Second))
		h, err := proxyproto.Read(c)
		if err != nil {
			got <- err.Error()
			return
		}
		req, err := http.ReadRequest(bufio.NewReader(c))
		if err != nil {
			got <- err.Error()
			return
		}
		fmt.Fprint(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")
		got <- fmt.Sprintf("v%d %s->%s %s %s", h.Version, h.Src, h.Dst, req.Method, req.URL)
	}()
	p := e.start(t, `
[[frontend]]
name = "www"
bind = ["127.0.0.1:0"]
default_backend = "web"
[[backend]]
name = "web"
`, nil)
	addLine(t, p, p.Backend("web"), "d1", ln.Addr().String()+" send-proxy-v2")
	c, err := net.Dial("tcp", p.Frontends[0].Addrs()[0].String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if body := getOn(t, c); body != "ok" {
		t.Fatalf("body %q", body)
	}
	want := fmt.Sprintf("v2 %s->%s GET /", c.LocalAddr(), c.RemoteAddr())
	if s := <-got; s != want {
		t.Fatalf("the server received %q, want %q", s, want)
	}
}

// TestAddedTLSServerPersists (issue 19, point 2): a server added with TLS
// keywords is written in the state file with them, and comes back with
// them, its CA file read again from the configuration's directory, after
// a restart (and is carried by a reload): requests through it go over
// TLS with its SNI.
func TestAddedTLSServerPersists(t *testing.T) {
	e := newTLSEnv(t)
	www := newTLSUpstream(t, e.ca.Server(t, testcert.Options{}, "www.test").TLS(), nil)
	text := `
[[frontend]]
name = "www"
bind = ["127.0.0.1:0"]
default_backend = "web"
[[backend]]
name = "web"
`
	p := e.start(t, text, nil)
	d1 := addLine(t, p, p.Backend("web"), "d1", www.addr()+" ssl ca-file ca.pem sni str(www.test) verifyhost www.test alpn http/1.1 check-send-proxy")
	line := AddedServerLine(d1)
	if want := "# add server web/d1 " + www.addr() + " ssl ca-file ca.pem verifyhost www.test sni str(www.test) alpn http/1.1 check-send-proxy enabled"; line != want {
		t.Fatalf("state file line:\n%s\nwant\n%s", line, want)
	}

	// A reload carries it as it is.
	cfg, err := conf.Load(filepath.Join(e.dir, "fulcrum.toml"))
	if err != nil {
		t.Fatal(err)
	}
	next, err := NewFrom(p, cfg, nopLogger())
	if err != nil {
		t.Fatal(err)
	}
	if c := next.Backend("web").Server("d1"); c == nil || c.Conf.TLS == nil || c.Conf.TLS.SNI == nil || c.tlsc == nil {
		t.Fatalf("after reload: %+v", c)
	}
	next.Shutdown(contextBackground())

	// A restart reads it from the state file.
	cfg, err = conf.Load(filepath.Join(e.dir, "fulcrum.toml"))
	if err != nil {
		t.Fatal(err)
	}
	p2, err := New(cfg, nopLogger())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p2.Shutdown(contextBackground()) })
	res, err := p2.LoadServerState(strings.NewReader(stateHeader + stateLineID("d1", d1.ID, 2, 0, 1, 1) + line + "\n"))
	if err != nil || res.Added != 1 {
		t.Fatalf("state file: %+v %v", res, err)
	}
	r := p2.Backend("web").Server("d1")
	if tl := r.Conf.TLS; tl == nil || tl.CAs == nil || tl.SNIText != "str(www.test)" || tl.VerifyHost != "www.test" || !r.Conf.CheckSendProxy {
		t.Fatalf("restored d1: %+v", r.Conf)
	}
	if err := p2.Start(); err != nil {
		t.Fatal(err)
	}
	if code, body := getHost(t, p2.Frontends[0].Addrs()[0].String(), "x.example", "/"); code != 200 || body != "sni=www.test alpn=http/1.1 client= host=x.example" {
		t.Fatalf("through the restored d1: %d %q", code, body)
	}
}
