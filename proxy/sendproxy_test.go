package proxy

import (
	"bufio"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fulcrum-proxy/fulcrum/internal/testutil"
	"github.com/fulcrum-proxy/fulcrum/proxy/proxyproto"
	"github.com/fulcrum-proxy/fulcrum/proxy/tlsx"
)

// TestAppendProxyHeader: the headers sent to servers, read back by the
// parser accept-proxy uses: v1 with the client's addresses; v2 with the
// ALPN and the TLVs of proxy_v2_options in HAProxy's order; and what a
// health check sends (no client: UNKNOWN, LOCAL).
func TestAppendProxyHeader(t *testing.T) {
	c := &ppClient{
		src: netip.MustParseAddrPort("192.0.2.7:4242"),
		dst: netip.MustParseAddrPort("198.51.100.1:443"),
		tls: &tlsx.ConnInfo{Protocol: "TLSv1.3", Cipher: "TLS_AES_128_GCM_SHA256", SNI: "a.test", ALPN: "http/1.1"},
	}
	if got := string(appendProxyHeader(nil, 1, 0, c)); got != "PROXY TCP4 192.0.2.7 198.51.100.1 4242 443\r\n" {
		t.Fatalf("v1: %q", got)
	}
	if got := string(appendProxyHeader(nil, 1, 0, &ppClient{})); got != "PROXY UNKNOWN\r\n" {
		t.Fatalf("v1 check: %q", got)
	}
	opts := parsePPOptions([]string{"crc32c", "authority", "unique-id", "ssl-cipher"})
	b := appendProxyHeader(nil, 2, opts, c)
	h, n, err := proxyproto.Parse(b)
	if err != nil || n != len(b) {
		t.Fatalf("v2: parse %d of %d bytes: %v", n, len(b), err)
	}
	if h.Command != proxyproto.Proxy || h.Src != c.src || h.Dst != c.dst {
		t.Fatalf("v2: got %v %v -> %v", h.Command, h.Src, h.Dst)
	}
	var types []byte
	for _, tlv := range h.TLVs {
		types = append(types, tlv.Type)
	}
	if want := []byte{proxyproto.TypeCRC32C, proxyproto.TypeALPN, proxyproto.TypeAuthority, proxyproto.TypeUniqueID, proxyproto.TypeSSL}; string(types) != string(want) {
		t.Fatalf("v2 TLV types % x, want % x", types, want)
	}
	alpn, _ := h.TLV(proxyproto.TypeALPN)
	auth, _ := h.TLV(proxyproto.TypeAuthority)
	ssl, _ := h.TLV(proxyproto.TypeSSL)
	// client SSL, verify 0, VERSION "TLSv1.3", CIPHER.
	wantSSL := "\x01\x00\x00\x00\x00" + "\x21\x00\x07TLSv1.3" + "\x23\x00\x16TLS_AES_128_GCM_SHA256"
	if string(alpn) != "http/1.1" || string(auth) != "a.test" || string(ssl) != wantSSL {
		t.Fatalf("v2 TLVs: alpn %q authority %q ssl %q", alpn, auth, ssl)
	}
	h, _, err = proxyproto.Parse(appendProxyHeader(nil, 2, opts, &ppClient{}))
	if err != nil || h.Command != proxyproto.Local {
		t.Fatalf("v2 check: %v %v", h.Command, err)
	}
}

// startHAProxy runs HAProxy 2.6 with cfg, whose "fd@N" binds (N from 3)
// are the listeners opened here, one per entry of nbind; it returns their
// addresses and HAProxy's output (its log goes to stdout).
func startHAProxy(t *testing.T, cfg string, nbind int) ([]string, *testutil.SyncBuffer) {
	t.Helper()
	haproxy := testutil.NeedTool(t, "haproxy", "haproxy")
	var files []*os.File
	var addrs []string
	for range nbind {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		f, err := ln.(*net.TCPListener).File()
		ln.Close()
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
		addrs = append(addrs, ln.Addr().String())
	}
	path := filepath.Join(t.TempDir(), "haproxy.cfg")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	out := &testutil.SyncBuffer{}
	cmd := exec.Command(haproxy, "-db", "-f", path)
	cmd.Stdout, cmd.Stderr, cmd.ExtraFiles = out, out, files
	err := cmd.Start()
	for _, f := range files {
		f.Close()
	}
	if err != nil {
		t.Fatalf("haproxy: %v", err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		if t.Failed() {
			t.Logf("haproxy output:\n%s", out.String())
		}
	})
	return addrs, out
}

// TestSendProxyToHAProxy (issue 18, point 5): fulcrum's send_proxy and
// send_proxy_v2 (with a CRC32C TLV, which HAProxy checks) in front of
// HAProxy 2.6's accept-proxy binds: the client address fulcrum got from
// its own accept-proxy bind reaches HAProxy, whose forwardfor tells the
// upstream and whose log shows it.
func TestSendProxyToHAProxy(t *testing.T) {
	up := headerEcho(t)
	haddrs, hout := startHAProxy(t, fmt.Sprintf(`global
    nbthread 1
    log stdout format raw local0
defaults
    mode http
    log global
    option httplog
    option forwardfor
    timeout connect 5s
    timeout client 10s
    timeout server 10s
frontend v1
    bind fd@3 accept-proxy
    default_backend up
frontend v2
    bind fd@4 accept-proxy
    default_backend up
backend up
    server u %s
`, up.addr()), 2)
	e := newTLSEnv(t)
	p := e.start(t, fmt.Sprintf(`
[[frontend]]
name = "www"
bind = ["127.0.0.1:0 accept-proxy"]
forwardfor = false
use_backend = [{ backend = "v2", if = "{ path_beg /v2 }" }]
default_backend = "v1"
[[backend]]
name = "v1"
[[backend.server]]
name = "h1"
address = "%s"
send_proxy = true
[[backend]]
name = "v2"
[[backend.server]]
name = "h2"
address = "%s"
send_proxy_v2 = true
proxy_v2_options = ["crc32c", "unique-id"]
`, haddrs[0], haddrs[1]), nil)
	addr := p.Frontends[0].Addrs()[0].String()
	for _, c := range []struct{ path, src string }{
		{"/v1", "192.0.2.7:4242"},
		{"/v2", "192.0.2.8:4343"},
		{"/v2", "[2001:db8::9]:4444"},
	} {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		ap := netip.MustParseAddrPort(c.src)
		fam := "TCP4"
		dst := "127.0.0.1"
		if ap.Addr().Is6() {
			fam, dst = "TCP6", "::1"
		}
		conn.SetDeadline(time.Now().Add(10 * time.Second))
		fmt.Fprintf(conn, "PROXY %s %s %s %d 80\r\nGET %s HTTP/1.1\r\nHost: x\r\n\r\n", fam, ap.Addr(), dst, ap.Port(), c.path)
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatalf("%s from %s: %v", c.path, c.src, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		conn.Close()
		if want := "X-Forwarded-For: " + ap.Addr().String(); resp.StatusCode != 200 || string(b) != want {
			t.Fatalf("%s from %s: got %d %q, want 200 %q", c.path, c.src, resp.StatusCode, b, want)
		}
		// HAProxy's httplog line starts with the client's address.
		want := fmt.Sprintf("%s:%d [", ap.Addr(), ap.Port())
		waitFor(t, 5*time.Second, "HAProxy's log line for "+c.src, func() bool { return strings.Contains(hout.String(), want) })
	}
}

// TestSendProxyV2TLVs: a TLS client's connection, behind fulcrum's
// accept-proxy TLS bind, reaches a receiver (reading with the parser of
// accept-proxy) with the client's address and, as proxy_v2_options asks,
// its ALPN, SNI (authority), TLS version, cipher and served key and
// signature algorithms, then the request; the TLS connection to the
// server (ssl) follows the header.
func TestSendProxyV2TLVs(t *testing.T) {
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
		var b strings.Builder
		fmt.Fprintf(&b, "%s->%s", h.Src, h.Dst)
		for _, tlv := range h.TLVs {
			fmt.Fprintf(&b, " %02x=%q", tlv.Type, tlv.Value)
		}
		tc := tls.Server(c, &tls.Config{Certificates: []tls.Certificate{e.b.TLS()}})
		req, err := http.ReadRequest(bufio.NewReader(tc))
		if err != nil {
			got <- b.String() + " " + err.Error()
			return
		}
		fmt.Fprintf(&b, " %s %s", req.Method, req.URL)
		fmt.Fprint(tc, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")
		got <- b.String()
	}()
	p := e.start(t, fmt.Sprintf(`
[[frontend]]
name = "www"
bind = ["127.0.0.1:0 accept-proxy ssl crt a.pem alpn http/1.1"]
default_backend = "web"
[[backend]]
name = "web"
[[backend.server]]
name = "s1"
address = "%s"
send_proxy_v2 = true
proxy_v2_options = ["ssl", "authority", "ssl-cipher", "cert-key", "cert-sig"]
ssl = true
ca_file = "ca.pem"
verifyhost = "b.test"
`, ln.Addr()), nil)
	raw, err := net.Dial("tcp", p.Frontends[0].Addrs()[0].String())
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	fmt.Fprint(raw, "PROXY TCP4 192.0.2.7 198.51.100.1 4242 443\r\n")
	cfg := e.clientTLS("a.test")
	cfg.NextProtos = []string{"http/1.1"}
	c := tls.Client(raw, cfg)
	if body := getOn(t, c); body != "ok" {
		t.Fatalf("body %q", body)
	}
	want := `192.0.2.7:4242->198.51.100.1:443 01="http/1.1" 02="a.test" 20="\x01\x00\x00\x00\x00!\x00\aTLSv1.3%\x00\x05EC256$\x00\x11ecdsa-with-SHA256#\x00\x16TLS_AES_128_GCM_SHA256" GET /`
	if s := <-got; s != want {
		t.Fatalf("the server received\n%s\nwant\n%s", s, want)
	}
}
