package proxy

import (
	"bufio"
	"crypto/tls"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fulcrum-proxy/fulcrum/internal/testcert"
	"github.com/fulcrum-proxy/fulcrum/internal/testutil"
)

// tlsUpstream is a real HTTPS server (Go's crypto/tls) serving cert. It
// answers with what the TLS connection carried: "sni=NAME alpn=PROTO
// client=CN host=HOST", and counts its TLS connections.
type tlsUpstream struct {
	*httptest.Server
	conns atomic.Int64
}

func newTLSUpstream(t *testing.T, cert tls.Certificate, setup func(*tls.Config)) *tlsUpstream {
	t.Helper()
	u := &tlsUpstream{}
	u.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cn := ""
		if len(r.TLS.PeerCertificates) > 0 {
			cn = r.TLS.PeerCertificates[0].Subject.CommonName
		}
		fmt.Fprintf(w, "sni=%s alpn=%s client=%s host=%s", r.TLS.ServerName, r.TLS.NegotiatedProtocol, cn, r.Host)
	}))
	u.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	if setup != nil {
		setup(u.TLS)
	}
	startTLSCounted(t, u.Server, &u.conns)
	return u
}

// startTLSCounted starts s over TLS (its TLS config set), counting its
// connections in conns and dropping its error log; it stops with t.
func startTLSCounted(t *testing.T, s *httptest.Server, conns *atomic.Int64) {
	s.Config.ConnState = func(c net.Conn, st http.ConnState) {
		if st == http.StateNew {
			conns.Add(1)
		}
	}
	s.Config.ErrorLog = log.New(io.Discard, "", 0)
	s.StartTLS()
	t.Cleanup(s.Close)
}

func (u *tlsUpstream) addr() string { return u.Listener.Addr().String() }

// getHost sends GET path with Host host over a new plain connection to addr
// and returns the status and body.
func getHost(t *testing.T, addr, host, path string) (int, string) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: %s\r\n\r\n", path, host)
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("response: %v", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestServerTLS (issue 18, point 2): a server with ssl and verify
// required (the default) against ca_file, sni req.hdr(host), alpn and a
// client certificate passes; one whose certificate another CA signed
// fails the connection: 503 with SC in the access log, and a log line
// naming the server and the reason; verify none passes it; verify
// required without ca_file checks against the system's roots (which do
// not know the test CA).
func TestServerTLS(t *testing.T) {
	e := newTLSEnv(t)
	other := testcert.NewCA(t, "Other CA", testcert.Options{})
	mtls := newTLSUpstream(t, e.a.TLS(), func(c *tls.Config) {
		c.ClientAuth = tls.RequireAndVerifyClientCert
		c.ClientCAs = e.ca.Pool()
		c.NextProtos = []string{"http/1.1"}
	})
	rogue := newTLSUpstream(t, other.Server(t, testcert.Options{}, "a.test").TLS(), nil)
	testcert.Write(t, e.dir, "client.pem", e.client.PEM(true))
	logs := &testutil.SyncBuffer{}
	p := e.start(t, fmt.Sprintf(`
[defaults]
retries = 0
timeout_connect = "2s"
[[frontend]]
name = "www"
bind = ["127.0.0.1:0"]
use_backend = [
  { backend = "rogue", if = "{ path_beg /rogue }" },
  { backend = "rogue_none", if = "{ path_beg /none }" },
  { backend = "system", if = "{ path_beg /system }" },
]
default_backend = "good"
[[backend]]
name = "good"
[[backend.server]]
name = "s1"
address = "%[1]s"
ssl = true
ca_file = "ca.pem"
sni = "req.hdr(host)"
alpn = "http/1.1"
crt = "client.pem"
[[backend]]
name = "rogue"
[[backend.server]]
name = "r1"
address = "%[2]s"
ssl = true
verify = "required"
ca_file = "ca.pem"
sni = "req.hdr(host)"
[[backend]]
name = "rogue_none"
[[backend.server]]
name = "r2"
address = "%[2]s"
ssl = true
verify = "none"
sni = "req.hdr(host)"
[[backend]]
name = "system"
[[backend.server]]
name = "s2"
address = "%[1]s"
ssl = true
crt = "client.pem"
`, mtls.addr(), rogue.addr()), logs)
	addr := p.Frontends[0].Addrs()[0].String()

	if code, body := getHost(t, addr, "a.test", "/"); code != 200 || body != "sni=a.test alpn=http/1.1 client=alice host=a.test" {
		t.Fatalf("good server: %d %q", code, body)
	}
	if code, body := getHost(t, addr, "a.test", "/none"); code != 200 || body != "sni=a.test alpn= client= host=a.test" {
		t.Fatalf("verify none: %d %q", code, body)
	}
	if code, _ := getHost(t, addr, "a.test", "/rogue"); code != 503 {
		t.Fatalf("server signed by another CA: got %d, want 503", code)
	}
	if code, _ := getHost(t, addr, "a.test", "/system"); code != 503 {
		t.Fatalf("test CA against the system's roots: got %d, want 503", code)
	}
	// The SNI sent is checked against the certificate's names too.
	if code, _ := getHost(t, addr, "c.test", "/"); code != 503 {
		t.Fatalf("a name the certificate does not carry: got %d, want 503", code)
	}
	// Access lines are written once each request is released, which may
	// come after the client has its response: wait for all five. Their
	// order is the releases', so each is found by its backend.
	var access, fails []string
	waitFor(t, 5*time.Second, "5 access lines and 3 handshake failures", func() bool {
		access, fails = nil, nil
		for _, l := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
			switch {
			case strings.Contains(l, `"message":"SSL handshake failure with server"`):
				fails = append(fails, l)
			case strings.Contains(l, `"termination_state"`):
				access = append(access, l)
			}
		}
		return len(access) >= 5 && len(fails) >= 3
	})
	if len(access) != 5 || len(fails) != 3 {
		t.Fatalf("want 5 access lines and 3 handshake failures, got:\n%s", logs.String())
	}
	for _, want := range []string{
		`"backend":"good","server":"s1","status":200,.*"termination_state":"--"`,
		`"backend":"rogue_none","server":"r2","status":200,.*"termination_state":"--"`,
		`"backend":"rogue","server":"r1","status":503,.*"termination_state":"SC"`,
		`"backend":"system","server":"s2","status":503,.*"termination_state":"SC"`,
		`"backend":"good","server":"s1","status":503,.*"termination_state":"SC"`,
	} {
		n := 0
		for _, l := range access {
			if regexp.MustCompile(want).MatchString(l) {
				n++
			}
		}
		if n != 1 {
			t.Fatalf("%d access lines match /%s/, want 1:\n%s", n, want, strings.Join(access, "\n"))
		}
	}
	for i, want := range []string{
		`"server":"r1".*"sni":"a.test".*certificate signed by unknown authority`,
		`"server":"s2".*certificate signed by unknown authority`,
		`"server":"s1".*"sni":"c.test".*not c.test`,
	} {
		if !regexp.MustCompile(want).MatchString(fails[i]) {
			t.Fatalf("failure line %d: want /%s/ in %s", i, want, fails[i])
		}
	}
	be := p.Backend("rogue")
	if got := be.Servers()[0].Counters.Econ.Load(); got != 1 {
		t.Fatalf("rogue econ: got %d, want 1", got)
	}
	// show stat's ssl columns (HAProxy's ssl module): per server and
	// backend, handshakes that succeeded and failed.
	snap := p.Snapshot()
	for _, want := range []struct {
		backend string
		ssl     SSLValues
	}{
		{"good", SSLValues{Sess: 1, FailedHandshake: 1}}, // a.test, then c.test refused
		{"rogue", SSLValues{FailedHandshake: 1}},
		{"rogue_none", SSLValues{Sess: 1}},
		{"system", SSLValues{FailedHandshake: 1}},
	} {
		for _, bs := range snap.Backends {
			if bs.Name != want.backend {
				continue
			}
			if bs.SSL != want.ssl || bs.Servers[0].SSL != want.ssl {
				t.Errorf("%s: backend ssl %+v, server ssl %+v; want %+v", want.backend, bs.SSL, bs.Servers[0].SSL, want.ssl)
			}
		}
	}
	// Full handshakes with servers are counted (SslBackendKeyRate; its
	// value depends on when the second turns, its highest does not).
	if got := p.ssl.BeKeyRateMax.Load(); got < 1 {
		t.Fatalf("SslBackendMaxKeyRate: got %d, want at least 1", got)
	}
	// CumSslConns counts the five TLS connections to servers (the
	// frontend is plaintext), failed handshakes included, as HAProxy's
	// totalsslconns (a trial saw it not move for server connections).
	if got := p.ssl.Cum.Load(); got != 5 {
		t.Errorf("CumSslConns: got %d, want 5", got)
	}
}

// TestServerTLSPoolBySNI (issue 18, point 2): under http_reuse always,
// idle TLS connections to a server are reused, but only by requests whose
// sni value is the one the connection was made with: each request's
// server sees the SNI of its own Host, and a connection per name is made.
func TestServerTLSPoolBySNI(t *testing.T) {
	e := newTLSEnv(t)
	both := e.ca.Server(t, testcert.Options{}, "a.test", "b.test")
	up := newTLSUpstream(t, both.TLS(), nil)
	p := e.start(t, fmt.Sprintf(`
[[frontend]]
name = "www"
bind = ["127.0.0.1:0"]
default_backend = "web"
[[backend]]
name = "web"
http_reuse = "always"
[[backend.server]]
name = "s1"
address = "%s"
ssl = true
ca_file = "ca.pem"
sni = "req.hdr(host)"
`, up.addr()), nil)
	addr := p.Frontends[0].Addrs()[0].String()
	srv := p.Backend("web").Servers()[0]
	seen := map[string]bool{}
	for i, host := range []string{"a.test", "b.test", "a.test", "b.test", "b.test", "a.test"} {
		code, body := getHost(t, addr, host, "/")
		if want := fmt.Sprintf("sni=%s alpn= client= host=%s", host, host); code != 200 || body != want {
			t.Fatalf("request %d: got %d %q, want 200 %q", i, code, body, want)
		}
		seen[host] = true
		// The connection goes back to the pool once the response went
		// out: wait for it, so that the next request can find it.
		waitFor(t, 5*time.Second, "the connection back in the pool", func() bool { return srv.up.Pool.Len() == len(seen) })
	}
	if got := up.conns.Load(); got != 2 {
		t.Fatalf("the server saw %d TLS connections, want 2 (one per SNI, reused)", got)
	}
}

// TestServerTLSTCPMode: a tcp backend's ssl server gets the client's SNI
// through sni ssl_fc_sni, and the bytes both ways.
func TestServerTLSTCPMode(t *testing.T) {
	e := newTLSEnv(t)
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{e.b.TLS()}})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	done := make(chan struct{})
	go func() {
		defer close(done)
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		tc := c.(*tls.Conn)
		if tc.Handshake() != nil {
			return
		}
		line, _ := bufio.NewReader(tc).ReadString('\n')
		fmt.Fprintf(tc, "%s via %s", strings.TrimSpace(line), tc.ConnectionState().ServerName)
	}()
	p := e.start(t, fmt.Sprintf(`
[defaults]
mode = "tcp"
[[frontend]]
name = "tls"
bind = ["127.0.0.1:0 ssl crt b.pem"]
default_backend = "echo"
[[backend]]
name = "echo"
[[backend.server]]
name = "s1"
address = "%s"
ssl = true
ca_file = "ca.pem"
sni = "ssl_fc_sni"
`, ln.Addr()), nil)
	c, err := tls.Dial("tcp", p.Frontends[0].Addrs()[0].String(), e.clientTLS("www.b.test"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprint(c, "hello\n")
	got, _ := io.ReadAll(c)
	if string(got) != "hello via www.b.test" {
		t.Fatalf("got %q", got)
	}
	<-done
}

// A server certificate whose names do not match the SNI sent (no
// verifyhost) is not retried, as HAProxy 2.6's back_handle_st_cer for
// CO_ER_SSL_MISMATCH_SNI: the name may come from the client (sni
// req.hdr(host)), who must not make the proxy hammer the server. The 503
// comes after one attempt (HAProxy: 2 ms, where fulcrum took three
// turn-around delays), with the retries shown as spent in the log. Other
// handshake failures are retried as before.
func TestServerTLSMismatchSNINotRetried(t *testing.T) {
	e := newTLSEnv(t)
	up := newTLSUpstream(t, e.a.TLS(), nil)
	logs := &testutil.SyncBuffer{}
	p := e.start(t, fmt.Sprintf(`
[defaults]
retries = 3
timeout_connect = "200ms"
[[frontend]]
name = "www"
bind = ["127.0.0.1:0"]
default_backend = "good"
[[backend]]
name = "good"
[[backend.server]]
name = "s1"
address = "%s"
ssl = true
ca_file = "ca.pem"
sni = "req.hdr(host)"
`, up.addr()), logs)
	addr := p.Frontends[0].Addrs()[0].String()
	if code, _ := getHost(t, addr, "c.test", "/"); code != 503 {
		t.Fatalf("a name the certificate does not carry: got %d, want 503", code)
	}
	var line string
	waitFor(t, 5*time.Second, "the access line", func() bool {
		for _, l := range strings.Split(logs.String(), "\n") {
			if strings.Contains(l, `"termination_state"`) {
				line = l
				return true
			}
		}
		return false
	})
	if !strings.Contains(line, `"retries":3`) || !strings.Contains(line, `"termination_state":"SC"`) {
		t.Errorf("access line %s: want SC with retries 3", line)
	}
	if n := strings.Count(logs.String(), "SSL handshake failure with server"); n != 1 {
		t.Errorf("%d handshakes failed, want 1 (no retry)", n)
	}
	sv := &p.Backends[0].Servers()[0].Counters
	if sv.Wretr.Load() != 0 || sv.Econ.Load() != 1 {
		t.Errorf("wretr %d econ %d, want 0 and 1", sv.Wretr.Load(), sv.Econ.Load())
	}
	// The right name still works.
	if code, _ := getHost(t, addr, "a.test", "/"); code != 200 {
		t.Fatalf("a.test: got %d", code)
	}
}
