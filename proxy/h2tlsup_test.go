package proxy

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/fulcrum-proxy/fulcrum/internal/testcert"
	"github.com/fulcrum-proxy/fulcrum/internal/testutil"
)

// h2TLSUpstream is a real HTTPS server offering protos by ALPN (Go's
// HTTP/2 server when they hold h2). It answers with what it saw:
// "proto=HTTP/2.0 alpn=h2 sni=NAME host=HOST path=PATH", and counts its
// connections.
type h2TLSUpstream struct {
	*httptest.Server
	conns atomic.Int64
}

func newH2TLSUpstream(t *testing.T, cert tls.Certificate, protos ...string) *h2TLSUpstream {
	t.Helper()
	u := &h2TLSUpstream{}
	u.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "proto=%s alpn=%s sni=%s host=%s path=%s", r.Proto, r.TLS.NegotiatedProtocol, r.TLS.ServerName, r.Host, r.URL.Path)
	}))
	u.EnableHTTP2 = true
	u.TLS = &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: protos}
	startTLSCounted(t, u.Server, &u.conns)
	return u
}

func (u *h2TLSUpstream) addr() string { return u.Listener.Addr().String() }

// TestH2ServerOverTLS (issue 17, point 3: proto h2 with ssl): HTTP/1.1
// clients, curl --http2 over TLS and curl --http2-prior-knowledge reach
// an HTTPS server speaking HTTP/2 (ALPN h2), with the SNI of their Host
// (sni req.hdr(host)); under http_reuse always the streams share one
// connection per SNI value; a server whose ALPN selects http/1.1 fails
// the connection (503, SC, a log line naming the protocol), as does one
// whose certificate another CA signed (503, SC, econ).
func TestH2ServerOverTLS(t *testing.T) {
	curl := testutil.NeedTool(t, "curl", "curl")
	e := newTLSEnv(t)
	both := e.ca.Server(t, testcert.Options{}, "a.test", "b.test")
	h2up := newH2TLSUpstream(t, both.TLS(), "h2", "http/1.1")
	h1up := newH2TLSUpstream(t, both.TLS(), "http/1.1")
	other := testcert.NewCA(t, "Other CA", testcert.Options{})
	rogue := newH2TLSUpstream(t, other.Server(t, testcert.Options{}, "a.test").TLS(), "h2")
	logs := &testutil.SyncBuffer{}
	p := e.start(t, fmt.Sprintf(`
[defaults]
retries = 0
timeout_connect = "2s"
[[frontend]]
name = "www"
bind = ["127.0.0.1:0", "127.0.0.1:0 proto h2", "127.0.0.1:0 ssl crt a.pem alpn h2,http/1.1"]
use_backend = [
  { backend = "h1only", if = "{ path_beg /h1only }" },
  { backend = "rogue", if = "{ path_beg /rogue }" },
]
default_backend = "web"
[[backend]]
name = "web"
http_reuse = "always"
[[backend.server]]
name = "s1"
address = "%[1]s"
ssl = true
proto = "h2"
ca_file = "ca.pem"
sni = "req.hdr(host)"
[[backend]]
name = "h1only"
[[backend.server]]
name = "s2"
address = "%[2]s"
ssl = true
proto = "h2"
alpn = "h2,http/1.1"
ca_file = "ca.pem"
sni = "req.hdr(host)"
[[backend]]
name = "rogue"
[[backend.server]]
name = "s3"
address = "%[3]s"
ssl = true
proto = "h2"
ca_file = "ca.pem"
sni = "req.hdr(host)"
`, h2up.addr(), h1up.addr(), rogue.addr()), logs)
	addrs := p.Frontends[0].Addrs()
	plain, prior, tlsAddr := addrs[0].String(), addrs[1].String(), addrs[2].String()
	_, tlsPort, _ := net.SplitHostPort(tlsAddr)

	want := func(host, path string) string {
		return fmt.Sprintf("proto=HTTP/2.0 alpn=h2 sni=%s host=%s path=%s", host, host, path)
	}
	for i, host := range []string{"a.test", "b.test", "a.test", "b.test"} {
		if code, body := getHost(t, plain, host, "/h1"); code != 200 || body != want(host, "/h1") {
			t.Fatalf("HTTP/1.1 client, request %d: got %d %q, want 200 %q", i, code, body, want(host, "/h1"))
		}
	}
	out, err := exec.Command(curl, "-sS", "--http2-prior-knowledge", "-H", "Host: b.test", "-o", "-", "-w", " %{http_version}",
		"http://"+prior+"/prior").CombinedOutput()
	if err != nil || string(out) != want("b.test", "/prior")+" 2" {
		t.Errorf("curl --http2-prior-knowledge: got %q, %v; want %q", out, err, want("b.test", "/prior")+" 2")
	}
	// curl's own SNI is a.test (fulcrum's certificate), its :authority
	// (Host) a.test:PORT, here replaced by b.test: the server's SNI.
	out, err = exec.Command(curl, "-sS", "--http2", "--cacert", e.dir+"/ca.pem", "--resolve", "a.test:"+tlsPort+":127.0.0.1",
		"-H", "Host: b.test", "-o", "-", "-w", " %{http_version}", "https://a.test:"+tlsPort+"/tls").CombinedOutput()
	wantTLS := want("b.test", "/tls") + " 2"
	if err != nil || string(out) != wantTLS {
		t.Errorf("curl --http2 over TLS: got %q, %v; want %q", out, err, wantTLS)
	}
	if code, _ := getHost(t, plain, "a.test", "/h1only"); code != 503 {
		t.Errorf("a server selecting http/1.1: got %d, want 503", code)
	}
	if code, _ := getHost(t, plain, "a.test", "/rogue"); code != 503 {
		t.Errorf("a server signed by another CA: got %d, want 503", code)
	}

	var access, refused, fails []string
	waitFor(t, 5*time.Second, "8 access lines, a refusal and a handshake failure", func() bool {
		access, refused, fails = nil, nil, nil
		for _, l := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
			switch {
			case strings.Contains(l, `"message":"server connection refused: no HTTP/2"`):
				refused = append(refused, l)
			case strings.Contains(l, `"message":"SSL handshake failure with server"`):
				fails = append(fails, l)
			case strings.Contains(l, `"termination_state"`):
				access = append(access, l)
			}
		}
		return len(access) >= 8 && len(refused) >= 1 && len(fails) >= 1
	})
	if len(access) != 8 || len(refused) != 1 || len(fails) != 1 {
		t.Fatalf("want 8 access lines, 1 refusal, 1 handshake failure; got:\n%s", logs.String())
	}
	for _, c := range []struct {
		re string
		n  int
	}{
		{`"backend":"web","server":"s1","status":200,.*"termination_state":"--"`, 6},
		{`"backend":"h1only","server":"s2","status":503,.*"termination_state":"SC"`, 1},
		{`"backend":"rogue","server":"s3","status":503,.*"termination_state":"SC"`, 1},
	} {
		n := 0
		for _, l := range access {
			if regexp.MustCompile(c.re).MatchString(l) {
				n++
			}
		}
		if n != c.n {
			t.Errorf("%d access lines match /%s/, want %d:\n%s", n, c.re, c.n, strings.Join(access, "\n"))
		}
	}
	if !regexp.MustCompile(`"server":"s2".*the server selected ALPN \\"http/1.1\\", not h2`).MatchString(refused[0]) {
		t.Errorf("refusal line: %s", refused[0])
	}
	if !regexp.MustCompile(`"server":"s3".*"sni":"a.test".*certificate signed by unknown authority`).MatchString(fails[0]) {
		t.Errorf("handshake failure line: %s", fails[0])
	}
	for name, want := range map[string]int64{"h1only": 1, "rogue": 1} {
		if got := p.Backend(name).Servers()[0].Counters.Econ.Load(); got != want {
			t.Errorf("%s: econ %d, want %d", name, got, want)
		}
	}
	// One HTTP/2 connection per SNI value sent (a.test, b.test), every
	// stream of the same name on it, whichever client sent it.
	if got := h2up.conns.Load(); got != 2 {
		t.Errorf("the server saw %d connections, want 2 (one per SNI)", got)
	}
	if got := p.Backend("web").Servers()[0].up.H2.Len(); got != 2 {
		t.Errorf("the pool holds %d connections, want 2", got)
	}
}

// TestGRPCOverTLS (issue 17, point 3): gRPC unary and bidirectional
// streaming calls through fulcrum to a gRPC server over TLS (grpc-go's
// server insists on ALPN h2), with the SNI set by sni.
func TestGRPCOverTLS(t *testing.T) {
	e := newTLSEnv(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var sni atomic.Value
	tc := &tls.Config{Certificates: []tls.Certificate{e.a.TLS()}, GetConfigForClient: func(hi *tls.ClientHelloInfo) (*tls.Config, error) {
		sni.Store(hi.ServerName)
		return nil, nil
	}}
	s := &grpcServer{name: "tls", addr: l.Addr().String()}
	gs := grpc.NewServer(grpc.ForceServerCodec(rawCodec{}), grpc.Creds(credentials.NewTLS(tc)))
	gs.RegisterService(&echoService, s)
	done := make(chan struct{})
	go func() { defer close(done); gs.Serve(l) }()
	t.Cleanup(func() { gs.Stop(); <-done })

	p := e.start(t, fmt.Sprintf(`
[[frontend]]
name = "grpc"
bind = ["127.0.0.1:0 proto h2"]
default_backend = "grpc"
[[backend]]
name = "grpc"
[[backend.server]]
name = "g1"
address = "%s"
ssl = true
proto = "h2"
ca_file = "ca.pem"
sni = "str(a.test)"
`, s.addr), nil)
	cc := grpcClient(t, p.Frontends[0].Addrs()[0].String())
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if got, err := unary(ctx, cc, "echo:hi"); err != nil || got != "tls:hi" {
		t.Fatalf("unary: got %q, %v; want \"tls:hi\"", got, err)
	}
	st, err := cc.NewStream(ctx, &echoService.Streams[2], "/test.Echo/Bidi")
	if err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		m := []byte(fmt.Sprint("ping", i))
		if err := st.SendMsg(&m); err != nil {
			t.Fatal(err)
		}
		var out []byte
		if err := st.RecvMsg(&out); err != nil || string(out) != string(m) {
			t.Fatalf("bidi round %d: got %q, %v", i, out, err)
		}
	}
	st.CloseSend()
	var out []byte
	if err := st.RecvMsg(&out); err != io.EOF {
		t.Errorf("bidi end: got %v, want EOF", err)
	}
	if got := s.calls.Load(); got < 1 {
		t.Errorf("the server counted %d calls", got)
	}
	if got, _ := sni.Load().(string); got != "a.test" {
		t.Errorf("the server saw SNI %q, want a.test", got)
	}
}

// TestAddServerH2TLS: a server added at runtime with `ssl ... proto h2`
// speaks HTTP/2 over TLS as a server of the file does (ALPN h2, the SNI
// of its sni); one added with alpn h2,http/1.1 but without proto speaks
// what ALPN chose, as a server of the file does: HTTP/2 to a server
// selecting h2 (multiplexed: one connection for two requests under
// http_reuse always), HTTP/1.1 to one selecting http/1.1. `del server`
// closes a deleted server's HTTP/2 connections.
func TestAddServerH2TLS(t *testing.T) {
	e := newTLSEnv(t)
	up := newH2TLSUpstream(t, e.a.TLS(), "h2", "http/1.1")
	h1up := newH2TLSUpstream(t, e.a.TLS(), "http/1.1")
	p := e.start(t, `
[[frontend]]
name = "www"
bind = ["127.0.0.1:0"]
default_backend = "web"
use_backend = [{ backend = "h1", if = "{ path_beg /h1 }" }]
[[backend]]
name = "web"
[[backend]]
name = "h1"
http_reuse = "always"
`, nil)
	addr := p.Frontends[0].Addrs()[0].String()
	d1 := addLine(t, p, p.Backend("web"), "d1", up.addr()+" ssl ca-file ca.pem sni str(a.test) proto h2")
	if d1.up.H2 == nil || !d1.up.TLS {
		t.Fatalf("d1: h2 pool %v, tls %v", d1.up.H2 != nil, d1.up.TLS)
	}
	if code, body := getHost(t, addr, "x.example", "/h2"); code != 200 || body != "proto=HTTP/2.0 alpn=h2 sni=a.test host=x.example path=/h2" {
		t.Fatalf("through d1: %d %q", code, body)
	}
	d2 := addLine(t, p, p.Backend("h1"), "d2", up.addr()+" ssl ca-file ca.pem sni str(a.test) alpn h2,http/1.1")
	if d2.up.H2 == nil || !d2.up.ByALPN || d1.up.ByALPN {
		t.Fatalf("d2: h2 pool %v, by ALPN %v; d1 by ALPN %v", d2.up.H2 != nil, d2.up.ByALPN, d1.up.ByALPN)
	}
	before := up.conns.Load()
	for range 2 {
		if code, body := getHost(t, addr, "x.example", "/h1"); code != 200 || body != "proto=HTTP/2.0 alpn=h2 sni=a.test host=x.example path=/h1" {
			t.Fatalf("through d2: %d %q", code, body)
		}
	}
	if got := up.conns.Load() - before; got != 1 || d2.up.H2.Len() != 1 {
		t.Errorf("d2: %d new connections, %d pooled; want 1, 1", got, d2.up.H2.Len())
	}
	p.Backend("h1").SetAdmin(d2, AdminMaint)
	// Deleted, its HTTP/2 connection is closed with its idle ones (once
	// the last request released its session, just after its response).
	waitFor(t, 5*time.Second, "d2 without sessions", func() bool { return p.Backend("h1").Removable(d2) == nil })
	if err := p.DeleteServer(d2); err != nil || d2.up.H2.Len() != 0 {
		t.Fatalf("del server d2: %v, %d HTTP/2 connections left", err, d2.up.H2.Len())
	}
	addLine(t, p, p.Backend("h1"), "d3", h1up.addr()+" ssl ca-file ca.pem sni str(a.test) alpn h2,http/1.1")
	if code, body := getHost(t, addr, "x.example", "/h1"); code != 200 || body != "proto=HTTP/1.1 alpn=http/1.1 sni=a.test host=x.example path=/h1" {
		t.Fatalf("through d3: %d %q", code, body)
	}
}

// TestH2ServerOverTLSAsHAProxy: HAProxy 2.6 and fulcrum with the same
// server lines. "ssl proto h2 alpn h2" speaks HTTP/2 over TLS in both;
// "proto h2" to a server whose ALPN selects http/1.1 is a connection
// failure in both (503, SC: HAProxy forces its h2 mux and fails on the
// preface, fulcrum refuses the connection at the handshake). Without
// proto, "alpn h2,http/1.1" picks the protocol by ALPN in both: HTTP/2
// to a server selecting h2, HTTP/1.1 to one selecting http/1.1.
func TestH2ServerOverTLSAsHAProxy(t *testing.T) {
	e := newTLSEnv(t)
	h2up := newH2TLSUpstream(t, e.a.TLS(), "h2", "http/1.1")
	h1up := newH2TLSUpstream(t, e.a.TLS(), "http/1.1")
	lines := map[string]string{
		"h2":     h2up.addr() + " ssl verify none proto h2 alpn h2",
		"h1only": h1up.addr() + " ssl verify none proto h2 alpn h2,http/1.1",
		"alpn":   h2up.addr() + " ssl verify none alpn h2,http/1.1",
		"alpnh1": h1up.addr() + " ssl verify none alpn h2,http/1.1",
	}
	hcfg := `
defaults
    mode http
    retries 0
    timeout connect 2s
    timeout client 10s
    timeout server 10s
frontend fe
    bind fd@3
    use_backend %[path,field(2,/)]
`
	tcfg := `
[defaults]
retries = 0
timeout_connect = "2s"
[[frontend]]
name = "fe"
bind = ["127.0.0.1:0"]
default_backend = "h2"
use_backend = [
  { backend = "h1only", if = "{ path_beg /h1only/ }" },
  { backend = "alpn", if = "{ path_beg /alpn/ }" },
  { backend = "alpnh1", if = "{ path_beg /alpnh1/ }" },
]
`
	p := e.start(t, tcfg+`
[[backend]]
name = "h2"
[[backend]]
name = "h1only"
[[backend]]
name = "alpn"
[[backend]]
name = "alpnh1"
`, nil)
	for _, name := range []string{"h2", "h1only", "alpn", "alpnh1"} {
		hcfg += fmt.Sprintf("backend %s\n    server s %s\n", name, lines[name])
		addLine(t, p, p.Backend(name), "s", lines[name]) // the same line, added at runtime
	}
	haddrs, _ := startHAProxy(t, hcfg, 1)
	faddr := p.Frontends[0].Addrs()[0].String()
	for _, c := range []struct {
		path             string
		code             int
		haproxy, fulcrum string // the body's start
	}{
		{"/h2/", 200, "proto=HTTP/2.0 alpn=h2", "proto=HTTP/2.0 alpn=h2"},
		{"/h1only/", 503, "", ""},
		{"/alpn/", 200, "proto=HTTP/2.0 alpn=h2", "proto=HTTP/2.0 alpn=h2"},
		{"/alpnh1/", 200, "proto=HTTP/1.1 alpn=http/1.1", "proto=HTTP/1.1 alpn=http/1.1"},
	} {
		for who, addr := range map[string]string{"haproxy": haddrs[0], "fulcrum": faddr} {
			var want string
			if who == "haproxy" {
				want = c.haproxy
			} else {
				want = c.fulcrum
			}
			code, body := getHost(t, addr, "a.test", c.path)
			if code != c.code || !strings.HasPrefix(body, want) {
				t.Errorf("%s %s: got %d %q, want %d %q...", who, c.path, code, body, c.code, want)
			}
		}
	}
}

// TestH2ServerTLSCheckConn: a proto h2 server's HTTP checks over TLS
// (check_ssl) speak HTTP/1.1, so their handshake offers no h2 (an HTTP/2
// server would select it, and the check's HTTP/1.1 request would fail),
// while its traffic still offers h2; so do those of a server that picks
// its protocol by ALPN (no proto); gRPC health checks offer h2 only.
func TestH2ServerTLSCheckConn(t *testing.T) {
	e := newTLSEnv(t)
	up := newH2TLSUpstream(t, e.a.TLS(), "h2", "http/1.1")
	p := e.start(t, fmt.Sprintf(`
[[frontend]]
name = "www"
bind = ["127.0.0.1:0"]
default_backend = "web"
[[backend]]
name = "web"
[[backend.server]]
name = "s1"
address = "%[1]s"
ssl = true
proto = "h2"
alpn = "h2,http/1.1"
ca_file = "ca.pem"
verifyhost = "a.test"
[[backend]]
name = "grpc"
[backend.check]
check_proto = "grpc"
[[backend.server]]
name = "g1"
address = "%[1]s"
ssl = true
proto = "h2"
alpn = "h2,http/1.1"
ca_file = "ca.pem"
verifyhost = "a.test"
[[backend]]
name = "auto"
[[backend.server]]
name = "a1"
address = "%[1]s"
ssl = true
alpn = "h2,http/1.1"
ca_file = "ca.pem"
verifyhost = "a.test"
`, up.addr()), nil)
	check := func(srv *Server) string {
		c, err := net.Dial("tcp", up.addr())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		cc, hs, err := srv.CheckConn(c, time.Now().Add(5*time.Second))
		if err != nil || !hs {
			t.Fatalf("check handshake: %v %v", hs, err)
		}
		return cc.(*tls.Conn).ConnectionState().NegotiatedProtocol
	}
	srv := p.Backend("web").Servers()[0]
	if got := check(srv); got != "http/1.1" {
		t.Errorf("the HTTP check's ALPN selected %q, want http/1.1", got)
	}
	if got := check(p.Backend("grpc").Servers()[0]); got != "h2" {
		t.Errorf("the gRPC check's ALPN selected %q, want h2", got)
	}
	if got := srv.tlsc.Config("").NextProtos; strings.Join(got, ",") != "h2,http/1.1" {
		t.Errorf("the server's traffic now offers %q, want h2,http/1.1", got)
	}
	auto := p.Backend("auto").Servers()[0]
	if !auto.up.ByALPN {
		t.Fatal("a1 does not pick its protocol by ALPN")
	}
	if got := check(auto); got != "http/1.1" {
		t.Errorf("a1's HTTP check's ALPN selected %q, want http/1.1", got)
	}
	if got := auto.tlsc.Config("").NextProtos; strings.Join(got, ",") != "h2,http/1.1" {
		t.Errorf("a1's traffic now offers %q, want h2,http/1.1", got)
	}
}
