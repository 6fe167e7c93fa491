package check

import (
	"crypto/tls"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/fulcrum-proxy/fulcrum/conf"
	"github.com/fulcrum-proxy/fulcrum/internal/testcert"
	"github.com/fulcrum-proxy/fulcrum/proxy/proxyproto"
)

// tlsListener accepts TLS connections with cert; when pp is set, each
// connection first carries a PROXY header, whose command and version it
// sends on pp. Handshakes run until the listener closes.
func tlsListener(t *testing.T, cert tls.Certificate, pp chan<- string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				c.SetDeadline(time.Now().Add(5 * time.Second))
				if pp != nil {
					h, err := proxyproto.Read(c)
					switch {
					case err != nil:
						pp <- err.Error()
					case h.Command == proxyproto.Local:
						pp <- fmt.Sprintf("v%d LOCAL", h.Version)
					default:
						pp <- fmt.Sprintf("v%d PROXY %v", h.Version, h.Src)
					}
				}
				tls.Server(c, &tls.Config{Certificates: []tls.Certificate{cert}}).Handshake()
			}()
		}
	}()
	return ln.Addr().String()
}

// TestCheckSSL (issue 18, points 2 and 5): check_ssl makes a tcp check a
// TLS handshake, verified as the server's traffic is: L6OK when it passes,
// L6RSP when the certificate is another CA's; check_send_proxy sends a
// PROXY header with no client first (v1 "PROXY UNKNOWN", v2 LOCAL).
func TestCheckSSL(t *testing.T) {
	ca := testcert.NewCA(t, "Test CA", testcert.Options{})
	other := testcert.NewCA(t, "Other CA", testcert.Options{})
	good := ca.Server(t, testcert.Options{}, "s.test").TLS()
	pp1, pp2 := make(chan string, 10), make(chan string, 10)
	addrs := []string{
		tlsListener(t, good, nil),
		tlsListener(t, other.Server(t, testcert.Options{}, "s.test").TLS(), nil),
		tlsListener(t, good, pp1),
		tlsListener(t, good, pp2),
	}
	cfg := testConfig(addrs...)
	st := &conf.ServerTLS{Verify: true, CAs: ca.Pool(), VerifyHost: "s.test"}
	for i, s := range cfg.Backends[0].Servers {
		s.CheckSSL, s.TLS = true, st
		switch i {
		case 2:
			s.CheckSendProxy, s.SendProxy = true, 1
		case 3:
			s.CheckSendProxy, s.SendProxy = true, 2
		}
	}
	h := newHarness(t, cfg)
	got := map[string]Result{}
	for len(got) < 4 {
		ev := h.next()
		if _, ok := got[ev.server]; !ok {
			got[ev.server] = ev.r
		}
	}
	for name, want := range map[string]Result{
		"s1": {Status: StatusL6OK},
		"s2": {Status: StatusL6RSP, Info: "SSL handshake failure"},
		"s3": {Status: StatusL6OK},
		"s4": {Status: StatusL6OK},
	} {
		if r := got[name]; r.Status != want.Status || r.Info != want.Info {
			t.Errorf("%s: got %v %q, want %v %q", name, r.Status, r.Info, want.Status, want.Info)
		}
	}
	// "PROXY UNKNOWN" reads as a LOCAL header (proxy-protocol.txt).
	if s := <-pp1; s != "v1 LOCAL" {
		t.Errorf("check_send_proxy v1: got %q", s)
	}
	if s := <-pp2; s != "v2 LOCAL" {
		t.Errorf("check_send_proxy v2: got %q", s)
	}
}

// TestAddedServerCheckSSL (issue 19, point 1): a server added at runtime
// with check-ssl checks over TLS, verified against its ca-file as the
// file's servers are (L6OK, or L6RSP for another CA's certificate), with
// check-send-proxy's LOCAL header first.
func TestAddedServerCheckSSL(t *testing.T) {
	ca := testcert.NewCA(t, "Test CA", testcert.Options{})
	other := testcert.NewCA(t, "Other CA", testcert.Options{})
	dir := t.TempDir()
	testcert.Write(t, dir, "ca.pem", ca.PEM)
	good := ca.Server(t, testcert.Options{}, "s.test").TLS()
	pp := make(chan string, 10)
	s1 := tlsListener(t, good, nil)
	cfg := testConfig(s1)
	ck := cfg.Backends[0].Check // s1 is probed once, then not within the test
	ck.Inter, ck.FastInter, ck.DownInter = time.Hour, time.Hour, time.Hour
	h := newHarness(t, cfg)
	if ev := h.next(); ev.server != "s1" {
		t.Fatalf("first event from %s", ev.server)
	}
	env := &conf.LineEnv{Dir: dir, Mode: conf.ModeHTTP}
	for _, c := range []struct{ name, addr string }{
		{"n1", tlsListener(t, good, pp)},
		{"n2", tlsListener(t, other.Server(t, testcert.Options{}, "s.test").TLS(), nil)},
	} {
		sc, _, err := conf.ParseServerLine(c.name, []string{c.addr, "check", "check-ssl", "ca-file", "ca.pem",
			"verifyhost", "s.test", "check-send-proxy", "rise", "1", "enabled"}, env)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := h.p.AddServer(h.p.Backends[0], sc, 0); err != nil {
			t.Fatal(err)
		}
	}
	got := map[string]Result{}
	for len(got) < 2 {
		ev := h.next()
		if _, ok := got[ev.server]; !ok {
			got[ev.server] = ev.r
		}
	}
	for name, want := range map[string]Result{
		"n1": {Status: StatusL6OK},
		"n2": {Status: StatusL6RSP, Info: "SSL handshake failure"},
	} {
		if r := got[name]; r.Status != want.Status || r.Info != want.Info {
			t.Errorf("%s: got %v %q, want %v %q", name, r.Status, r.Info, want.Status, want.Info)
		}
	}
	if s := <-pp; s != "v1 LOCAL" {
		t.Errorf("check-send-proxy: got %q", s)
	}
}
