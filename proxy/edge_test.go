package proxy

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509/pkix"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/fulcrum-proxy/fulcrum/conf"
	"github.com/fulcrum-proxy/fulcrum/internal/testcert"
	"github.com/fulcrum-proxy/fulcrum/internal/testutil"
	"github.com/fulcrum-proxy/fulcrum/proxy/netio/epoll"
	"github.com/fulcrum-proxy/fulcrum/proxy/proxyproto"
	"github.com/rs/zerolog"
)

// tlsEnv is a directory of certificates for edge tests: a CA, server
// certificates for a.test (ECDSA) and b.test with *.b.test (RSA 2048),
// and a client certificate.
type tlsEnv struct {
	dir    string
	ca     *testcert.CA
	a, b   *testcert.Leaf
	client *testcert.Leaf
}

func newTLSEnv(t *testing.T) *tlsEnv {
	t.Helper()
	e := &tlsEnv{dir: t.TempDir(), ca: testcert.NewCA(t, "Test CA", testcert.Options{})}
	e.a = e.ca.Server(t, testcert.Options{Serial: 0xa1}, "a.test")
	e.b = e.ca.Server(t, testcert.Options{Serial: 0xb1, Key: testcert.RSA}, "b.test", "*.b.test")
	e.client = e.ca.Client(t, testcert.Options{Serial: 0xc1}, pkix.Name{CommonName: "alice", Organization: []string{"Fulcrum"}})
	testcert.Write(t, e.dir, "a.pem", e.a.PEM(true))
	testcert.Write(t, e.dir, "b.pem", e.b.PEM(true))
	testcert.Write(t, e.dir, "ca.pem", e.ca.PEM)
	return e
}

// start loads the TOML config text (written in the env's directory, so
// that certificate paths are relative to it) and starts the proxy. The
// log goes to logw when non-nil.
func (e *tlsEnv) start(t *testing.T, text string, logw io.Writer) *Proxy {
	t.Helper()
	path := filepath.Join(e.dir, "fulcrum.toml")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := conf.Load(path)
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	log := zerolog.Nop()
	if logw != nil {
		log = zerolog.New(logw)
	}
	p, err := New(cfg, log)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		p.Shutdown(ctx)
	})
	return p
}

// clientTLS trusts the env's CA and asks for sni.
func (e *tlsEnv) clientTLS(sni string) *tls.Config {
	return &tls.Config{RootCAs: e.ca.Pool(), ServerName: sni}
}

// headerEcho is an upstream that answers with the request's headers whose
// names start with X-, one "Name: value" line each.
func headerEcho(t *testing.T) *upstream {
	u := newUpstream(t, "echo")
	u.handler = func(w http.ResponseWriter, r *http.Request) {
		var lines []string
		for k, v := range r.Header {
			if strings.HasPrefix(k, "X-") {
				lines = append(lines, k+": "+strings.Join(v, ","))
			}
		}
		fmt.Fprint(w, strings.Join(sortStrings(lines), "\n"))
	}
	return u
}

func sortStrings(s []string) []string {
	for i := range s {
		for j := i + 1; j < len(s); j++ {
			if s[j] < s[i] {
				s[i], s[j] = s[j], s[i]
			}
		}
	}
	return s
}

// getOn sends one GET / over c and returns the body.
func getOn(t *testing.T, c net.Conn) string {
	t.Helper()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprint(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("response: %v", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// TestTLSFetches: a TLS bind serves each SNI name its certificate, and the
// rules see the connection's TLS through the ssl_fc_* fetches; a plain
// bind of the same frontend has ssl_fc false and none of the others.
func TestTLSFetches(t *testing.T) {
	e := newTLSEnv(t)
	up := headerEcho(t)
	p := e.start(t, fmt.Sprintf(`
[[frontend]]
name = "www"
bind = ["127.0.0.1:0 ssl crt a.pem crt b.pem alpn http/1.1", "127.0.0.1:0"]
default_backend = "web"
http_request = [
  "set-header X-SSL %%[ssl_fc]",
  "set-header X-SNI %%[ssl_fc_sni]",
  "set-header X-Proto %%[ssl_fc_protocol]",
  "set-header X-Cipher %%[ssl_fc_cipher]",
  "set-header X-ALPN %%[ssl_fc_alpn]",
  "set-header X-Used %%[ssl_c_used]",
  "set-header X-Is-B 1 if { ssl_fc_sni_end .b.test }",
]
[[backend]]
name = "web"
[[backend.server]]
name = "s1"
address = "%s"
`, up.addr()), nil)
	addrs := p.Frontends[0].Addrs()
	cases := []struct {
		sni    string
		serial int64
		want   string
	}{
		{"a.test", 0xa1, "X-Alpn: http/1.1\nX-Cipher: TLS_AES_128_GCM_SHA256\nX-Proto: TLSv1.3\nX-Sni: a.test\nX-Ssl: 1\nX-Used: 0"},
		{"www.b.test", 0xb1, "X-Alpn: http/1.1\nX-Cipher: TLS_AES_128_GCM_SHA256\nX-Is-B: 1\nX-Proto: TLSv1.3\nX-Sni: www.b.test\nX-Ssl: 1\nX-Used: 0"},
	}
	for _, c := range cases {
		cfg := e.clientTLS(c.sni)
		cfg.NextProtos = []string{"h2", "http/1.1"}
		cfg.CipherSuites = nil
		conn, err := tls.Dial("tcp", addrs[0].String(), cfg)
		if err != nil {
			t.Fatalf("%s: %v", c.sni, err)
		}
		if got := conn.ConnectionState().PeerCertificates[0].SerialNumber.Int64(); got != c.serial {
			t.Fatalf("%s: got serial %x, want %x", c.sni, got, c.serial)
		}
		if got := getOn(t, conn); got != c.want {
			t.Fatalf("%s: got headers\n%s\nwant\n%s", c.sni, got, c.want)
		}
		conn.Close()
	}
	plain, err := net.Dial("tcp", addrs[1].String())
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	// set-header with an empty sample sets an empty value, as HAProxy.
	if got := getOn(t, plain); got != "X-Alpn: \nX-Cipher: \nX-Proto: \nX-Sni: \nX-Ssl: 0\nX-Used: 0" {
		t.Fatalf("plain: got headers\n%s", got)
	}
	ssl := p.ssl
	// The key rate is over a one-second period: the two handshakes may
	// fall on both sides of a period's end (a loaded machine), and the
	// earlier one then weighs less than a whole.
	if r := ssl.KeyRate.Rate(time.Now()); ssl.Cum.Load() != 2 || r < 1 || r > 2 || ssl.Resumed.Load() != 0 {
		t.Fatalf("ssl counters: cum %d, key rate %d, resumed %d; want 2, 1 or 2, 0", ssl.Cum.Load(), r, ssl.Resumed.Load())
	}
	waitFor(t, 5*time.Second, "CurrSslConns back to 0", func() bool { return ssl.Cur.Load() == 0 })
	if got := p.Snapshot().Frontends[0].SSL; got != (SSLValues{Sess: 2}) {
		t.Errorf("frontend ssl columns: %+v, want 2 sessions", got)
	}
}

// TestClientCertHeader: under verify required a client without a
// certificate is refused and counted; one with a certificate gets through
// and its DN reaches the server in a header.
func TestClientCertHeader(t *testing.T) {
	e := newTLSEnv(t)
	up := headerEcho(t)
	logs := &testutil.SyncBuffer{}
	p := e.start(t, fmt.Sprintf(`
[[frontend]]
name = "www"
bind = ["127.0.0.1:0 ssl crt a.pem verify required ca-file ca.pem"]
default_backend = "web"
http_request = [
  "set-header X-DN %%[ssl_c_s_dn]",
  "set-header X-Issuer %%[ssl_c_i_dn]",
  "set-header X-CN %%[ssl_c_s_dn(CN)]",
  "set-header X-Serial %%[ssl_c_serial]",
  "set-header X-Used %%[ssl_c_used]",
  "set-header X-Verify %%[ssl_c_verify]",
]
[[backend]]
name = "web"
[[backend.server]]
name = "s1"
address = "%s"
`, up.addr()), logs)
	addr := p.Frontends[0].Addrs()[0].String()
	if c, err := tls.Dial("tcp", addr, e.clientTLS("a.test")); err == nil {
		// TLS 1.3: the client's handshake ends before the server refuses.
		c.SetDeadline(time.Now().Add(5 * time.Second))
		_, err = c.Read(make([]byte, 1))
		c.Close()
		if err == nil {
			t.Fatal("no client certificate: read succeeded")
		}
	}
	waitFor(t, 5*time.Second, "the refused handshake counted", func() bool { return p.Frontends[0].SSL.FailedHandshake.Load() == 1 })
	waitFor(t, 5*time.Second, "the refused handshake logged", func() bool {
		return strings.Contains(logs.String(), "SSL handshake failure")
	})
	// A certificate of another CA: HAProxy 2.6 logs "SSL client
	// certificate not trusted" (measured by a trial), not the general
	// failure.
	rogue := e.clientTLS("a.test")
	mallory := testcert.NewCA(t, "Other CA", testcert.Options{}).Client(t, testcert.Options{}, pkix.Name{CommonName: "mallory"}).TLS()
	rogue.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
		return &mallory, nil // sent though the server names other CAs
	}
	if c, err := tls.Dial("tcp", addr, rogue); err == nil {
		c.SetDeadline(time.Now().Add(5 * time.Second))
		_, err = c.Read(make([]byte, 1))
		c.Close()
		if err == nil {
			t.Fatal("a certificate of another CA: read succeeded")
		}
	}
	waitFor(t, 5*time.Second, "the untrusted certificate logged", func() bool {
		return strings.Contains(logs.String(), "SSL client certificate not trusted")
	})
	cfg := e.clientTLS("a.test")
	cfg.Certificates = []tls.Certificate{e.client.TLS()}
	c, err := tls.Dial("tcp", addr, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	want := "X-Cn: alice\nX-Dn: /O=Fulcrum/CN=alice\nX-Issuer: /CN=Test CA\nX-Serial: C1\nX-Used: 1\nX-Verify: 0"
	if got := getOn(t, c); got != want {
		t.Fatalf("got headers\n%s\nwant\n%s", got, want)
	}
	if got := p.Snapshot().Frontends[0].SSL; got != (SSLValues{Sess: 1, FailedHandshake: 2}) {
		t.Errorf("frontend ssl columns: %+v, want 1 session and 2 failed handshakes", got)
	}
}

// TestTLSTCPMode: TLS terminated in tcp mode in front of an echo server,
// with half-closes passed on.
func TestTLSTCPMode(t *testing.T) {
	e := newTLSEnv(t)
	echo := tcpServer(t, echoConn)
	p := e.start(t, fmt.Sprintf(`
[defaults]
mode = "tcp"
[[frontend]]
name = "tls"
bind = ["127.0.0.1:0 ssl crt a.pem alpn h2,http/1.1"]
default_backend = "echo"
[[backend]]
name = "echo"
[[backend.server]]
name = "e1"
address = "%s"
`, echo), nil)
	cfg := e.clientTLS("a.test")
	cfg.NextProtos = []string{"h2"}
	c, err := tls.Dial("tcp", p.Frontends[0].Addrs()[0].String(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if got := c.ConnectionState().NegotiatedProtocol; got != "h2" {
		t.Fatalf("tcp mode: got ALPN %q, want h2 (passed through)", got)
	}
	c.SetDeadline(time.Now().Add(10 * time.Second))
	msg := strings.Repeat("0123456789", 10000)
	go func() {
		io.WriteString(c, msg)
		c.CloseWrite()
	}()
	got, err := io.ReadAll(c)
	if err != nil || string(got) != msg {
		t.Fatalf("echo: got %d bytes, %v; want %d", len(got), err, len(msg))
	}
}

// TestHandshakeTimeout: a client that never completes its handshake is
// closed after timeout_client_hs, counted and logged.
func TestHandshakeTimeout(t *testing.T) {
	e := newTLSEnv(t)
	logs := &testutil.SyncBuffer{}
	p := e.start(t, `
[[frontend]]
name = "www"
bind = ["127.0.0.1:0 ssl crt a.pem"]
timeout_client_hs = "200ms"
`, logs)
	c, err := net.Dial("tcp", p.Frontends[0].Addrs()[0].String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.Write([]byte{0x16, 0x03, 0x01}) // the start of a record, then silence
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	start := time.Now()
	if _, err := c.Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("got %v, want the connection closed", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("closed after %v", d)
	}
	waitFor(t, 5*time.Second, "the failure counted", func() bool { return p.Frontends[0].SSL.FailedHandshake.Load() == 1 })
	waitFor(t, 5*time.Second, "the log line", func() bool { return strings.Contains(logs.String(), "Timeout during SSL handshake") })
}

// proxyLine is a PROXY v1 header from src to dst.
func proxyLine(src, dst string) string {
	h := proxyproto.Header{Command: proxyproto.Proxy, Src: netip.MustParseAddrPort(src), Dst: netip.MustParseAddrPort(dst)}
	return string(h.AppendV1(nil))
}

// TestAcceptProxy: the address of a PROXY header (v1, v2) is the client's
// address for X-Forwarded-For, src fetches, stick tables and show sess; a
// LOCAL header keeps the socket's; a connection without a valid header,
// or whose header is late, is closed, counted and logged.
func TestAcceptProxy(t *testing.T) {
	e := newTLSEnv(t)
	up := headerEcho(t)
	logs := &testutil.SyncBuffer{}
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close() })
	p := e.start(t, fmt.Sprintf(`
[[frontend]]
name = "www"
log = [{ target = "%s", facility = "local0" }]
bind = ["127.0.0.1:0 accept-proxy", "127.0.0.1:0 accept-proxy ssl crt a.pem"]
timeout_client_hs = "300ms"
forwardfor = true
default_backend = "web"
stick_table = { type = "ip", size = 100, store = ["conn_cnt"] }
tcp_request = ["connection track-sc0 src"]
http_request = ["set-header X-Src %%[src]:%%[src_port]", "set-header X-Dst %%[dst]:%%[dst_port]", "set-header X-SSL %%[ssl_fc]"]
[[backend]]
name = "web"
[[backend.server]]
name = "s1"
address = "%s"
`, pc.LocalAddr(), up.addr()), logs)
	fe := p.Frontends[0]
	plainAddr, tlsAddr := fe.Addrs()[0].String(), fe.Addrs()[1].String()
	v2 := proxyproto.Header{Command: proxyproto.Proxy, Src: netip.MustParseAddrPort("[2001:db8::7]:4444"),
		Dst: netip.MustParseAddrPort("[2001:db8::1]:80")}
	cases := []struct {
		name, header, want string
	}{
		{"v1", proxyLine("192.0.2.10:5555", "198.51.100.1:443"),
			"X-Dst: 198.51.100.1:443\nX-Forwarded-For: 192.0.2.10\nX-Src: 192.0.2.10:5555\nX-Ssl: 0"},
		{"v2", string(v2.AppendV2(nil)),
			"X-Dst: 2001:db8::1:80\nX-Forwarded-For: 2001:db8::7\nX-Src: 2001:db8::7:4444\nX-Ssl: 0"},
		{"v1 unknown", "PROXY UNKNOWN\r\n", ""},
	}
	for _, c := range cases {
		conn, err := net.Dial("tcp", plainAddr)
		if err != nil {
			t.Fatal(err)
		}
		io.WriteString(conn, c.header)
		got := getOn(t, conn)
		if c.want == "" {
			local := conn.LocalAddr().(*net.TCPAddr).AddrPort()
			c.want = fmt.Sprintf("X-Dst: %s\nX-Forwarded-For: 127.0.0.1\nX-Src: 127.0.0.1:%d\nX-Ssl: 0", plainAddr, local.Port())
		}
		if got != c.want {
			t.Fatalf("%s: got\n%s\nwant\n%s", c.name, got, c.want)
		}
		if c.name == "v1" {
			// The connection, idle, is listed under its relayed address.
			var found bool
			for _, s := range p.Sessions() {
				found = found || s.Src.String() == "192.0.2.10:5555"
			}
			if !found {
				t.Fatalf("show sess: %+v has no 192.0.2.10:5555", p.Sessions())
			}
		}
		conn.Close()
	}
	// PROXY then TLS on the second bind.
	raw, err := net.Dial("tcp", tlsAddr)
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(raw, proxyLine("192.0.2.20:6666", "198.51.100.1:443"))
	tc := tls.Client(raw, e.clientTLS("a.test"))
	if got := getOn(t, tc); got != "X-Dst: 198.51.100.1:443\nX-Forwarded-For: 192.0.2.20\nX-Src: 192.0.2.20:6666\nX-Ssl: 1" {
		t.Fatalf("proxy+tls: got\n%s", got)
	}
	tc.Close()
	// The stick table is keyed on the relayed addresses (an ip table
	// keeps IPv4 ones, as HAProxy's).
	tbl := p.tables.byName["www"]
	var dump strings.Builder
	for _, en := range tbl.Entries(nil, nil) {
		dump.Write(tbl.AppendEntry(nil, en))
	}
	for _, k := range []string{"key=192.0.2.10 ", "key=192.0.2.20 ", "key=127.0.0.1 "} {
		if !strings.Contains(dump.String(), k) {
			t.Errorf("stick table: no %s in\n%s", k, dump.String())
		}
	}
	// Refused: no header, bad header, truncated, late.
	for _, c := range []struct{ send, reason string }{
		{"GET / HTTP/1.1\r\nHost: x\r\n\r\n", "Received something which does not look like a PROXY protocol header"},
		{"PROXY TCP4 1.2.3.4 5.6.7.8 99999 80\r\n", "Received an invalid PROXY protocol header"},
		{"PROXY TCP4 1.2.3.4", "Timeout while waiting for PROXY protocol header"},
		{"", "Timeout while waiting for PROXY protocol header"},
	} {
		conn, err := net.Dial("tcp", plainAddr)
		if err != nil {
			t.Fatal(err)
		}
		io.WriteString(conn, c.send)
		conn.SetReadDeadline(time.Now().Add(5 * time.Second))
		if n, err := conn.Read(make([]byte, 100)); err == nil {
			t.Fatalf("%q: got %d bytes, want the connection closed", c.send, n)
		}
		conn.Close()
		if !strings.Contains(logs.String(), c.reason) {
			t.Fatalf("%q: no log line %q in\n%s", c.send, c.reason, logs.String())
		}
	}
	waitFor(t, 5*time.Second, "4 header errors", func() bool { return fe.ProxyErrors.Load() == 4 })
	// conn_tot counts them, stot does not (HAProxy's cum_conn, cum_sess).
	if s := p.Snapshot().Frontends[0]; s.Stot+s.ConnEarly != 8 || s.Stot != 4 {
		t.Errorf("conn_tot %d, stot %d; want 8 and 4 (3 plain and 1 TLS sessions)", s.Stot+s.ConnEarly, s.Stot)
	}
	// Each also reached the frontend's log target as HAProxy's line:
	// "ip:port [date] www/1: reason".
	re := regexp.MustCompile(`127\.0\.0\.1:\d+ \[\d\d/\w{3}/\d{4}:\d\d:\d\d:\d\d\.\d{3}\] www/1: (.*)$`)
	var got []string
	buf := make([]byte, 2048)
	for len(got) < 4 {
		pc.SetReadDeadline(time.Now().Add(5 * time.Second))
		n, _, err := pc.ReadFrom(buf)
		if err != nil {
			t.Fatalf("log target: %v after %q", err, got)
		}
		if m := re.FindSubmatch(bytes.TrimRight(buf[:n], "\n")); m != nil {
			got = append(got, string(m[1]))
		}
	}
	want := "Received something which does not look like a PROXY protocol header|Received an invalid PROXY protocol header|" +
		"Timeout while waiting for PROXY protocol header|Timeout while waiting for PROXY protocol header"
	if strings.Join(got, "|") != want {
		t.Errorf("log target: %q, want %q", got, want)
	}
}

// TestAcceptProxyKeepsSplice: in tcp mode the connection behind a PROXY
// header is still the *net.TCPConn the relay splices from.
func TestAcceptProxyKeepsSplice(t *testing.T) {
	e := newTLSEnv(t)
	echo := tcpServer(t, echoConn)
	p := e.start(t, fmt.Sprintf(`
[defaults]
mode = "tcp"
[[frontend]]
name = "tcp"
bind = ["127.0.0.1:0 accept-proxy"]
default_backend = "echo"
[[backend]]
name = "echo"
[[backend.server]]
name = "e1"
address = "%s"
`, echo), nil)
	c, err := net.Dial("tcp", p.Frontends[0].Addrs()[0].String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	io.WriteString(c, proxyLine("192.0.2.30:1000", "198.51.100.1:9")+"ping")
	buf := make([]byte, 4)
	if _, err := io.ReadFull(c, buf); err != nil || string(buf) != "ping" {
		t.Fatalf("echo: %q %v", buf, err)
	}
	fe := p.Frontends[0]
	fe.mu.Lock()
	for cc := range fe.conns.all() {
		// The socket itself, whose relay splices: Go's, or the epoll
		// layer's (tune_netio, FULCRUM_TUNE_NETIO).
		_, isTCP := cc.c.(*net.TCPConn)
		_, isEpoll := cc.c.(*epoll.Conn)
		if want := p.netIOMode(); (want == "epoll" || want == "uring") && !isEpoll || want == "go" && !isTCP {
			t.Errorf("client connection is a %T, want the socket of the %s layer", cc.c, want)
		}
		if cc.src.String() != "192.0.2.30:1000" {
			t.Errorf("src: got %v", cc.src)
		}
	}
	fe.mu.Unlock()
}

// TestReloadKeepsCommittedCert: a certificate committed through the store
// (the Runtime API's commit) is still served after a reload while its file
// is unchanged on disk; once the file changes, a reload serves the file.
// The TLS figures of show info carry on across the reload.
func TestReloadKeepsCommittedCert(t *testing.T) {
	e := newTLSEnv(t)
	text := `
[[frontend]]
name = "www"
bind = ["127.0.0.1:0 ssl crt a.pem"]
`
	p := e.start(t, text, nil)
	addr := p.Frontends[0].Addrs()[0].String()
	serial := func() int64 {
		t.Helper()
		c, err := tls.Dial("tcp", addr, e.clientTLS("a.test"))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		return c.ConnectionState().PeerCertificates[0].SerialNumber.Int64()
	}
	if got := serial(); got != 0xa1 {
		t.Fatalf("got serial %x, want a1", got)
	}
	next := e.ca.Server(t, testcert.Options{Serial: 0xa2}, "a.test")
	if _, err := p.Certs().SetCert("a.pem", next.PEM(true)); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Certs().Commit("a.pem"); err != nil {
		t.Fatal(err)
	}
	if got := serial(); got != 0xa2 {
		t.Fatalf("after commit: got serial %x, want a2", got)
	}
	reload := func(old *Proxy) *Proxy {
		t.Helper()
		cfg, err := conf.Load(filepath.Join(e.dir, "fulcrum.toml"))
		if err != nil {
			t.Fatal(err)
		}
		cfg.Frontends[0].Binds = []string{addr}
		np := reloadTo(t, old, cfg)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		np.Retire(ctx, old)
		t.Cleanup(func() { np.Shutdown(context.Background()) })
		return np
	}
	p2 := reload(p)
	if got := serial(); got != 0xa2 {
		t.Fatalf("after a reload, file unchanged: got serial %x, want a2 (the committed one)", got)
	}
	testcert.Write(t, e.dir, "a.pem", e.ca.Server(t, testcert.Options{Serial: 0xa3}, "a.test").PEM(true))
	p3 := reload(p2)
	if got := serial(); got != 0xa3 {
		t.Fatalf("after a reload, file changed: got serial %x, want a3 (the file's)", got)
	}
	if got := p3.ssl.Cum.Load(); got != 4 {
		t.Fatalf("CumSslConns: got %d, want 4 across the reloads", got)
	}
}

// TestSSLStatsResumed: a client that resumes its session counts in
// ssl_reused_sess as well as ssl_sess; a client that speaks no TLS to an
// ssl bind counts in ssl_failed_handshake (reloads keep the counts:
// TestReloadInheritsServerState).
func TestSSLStatsResumed(t *testing.T) {
	e := newTLSEnv(t)
	up := headerEcho(t)
	p := e.start(t, fmt.Sprintf(`
[[frontend]]
name = "www"
bind = ["127.0.0.1:0 ssl crt a.pem alpn http/1.1"]
default_backend = "web"
[[backend]]
name = "web"
[[backend.server]]
name = "s1"
address = "%s"
`, up.addr()), nil)
	addr := p.Frontends[0].Addrs()[0].String()
	cfg := e.clientTLS("a.test")
	cfg.ClientSessionCache = tls.NewLRUClientSessionCache(4)
	for i, wantResumed := range []bool{false, true} {
		conn, err := tls.Dial("tcp", addr, cfg)
		if err != nil {
			t.Fatal(err)
		}
		getOn(t, conn) // reads the session ticket too
		if got := conn.ConnectionState().DidResume; got != wantResumed {
			t.Fatalf("connection %d: resumed %v, want %v", i, got, wantResumed)
		}
		conn.Close()
	}
	plain, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(plain, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	io.Copy(io.Discard, plain)
	plain.Close()
	want := SSLValues{Sess: 2, ReusedSess: 1, FailedHandshake: 1}
	waitFor(t, 5*time.Second, "the failed handshake counted", func() bool { return p.Snapshot().Frontends[0].SSL == want })
}
