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
