package proxy

import (
	"bufio"
	"crypto/tls"
	"io"
	"net"
	"testing"

	"github.com/fulcrum-proxy/fulcrum/conf"
	"github.com/fulcrum-proxy/fulcrum/internal/testcert"
	"github.com/fulcrum-proxy/fulcrum/proxy/http1"
	"github.com/fulcrum-proxy/fulcrum/proxy/tlsx"
)

// fastTLSUpstream is fastUpstream over TLS with cert.
func fastTLSUpstream(b *testing.B, cert tls.Certificate) string {
	l, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { l.Close() })
	const resp = "HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Type: text/plain\r\n\r\nok\n"
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				br := bufio.NewReader(c)
				var h http1.Head
				for {
					if err := h.Read(br, false); err != nil {
						return
					}
					if _, err := io.WriteString(c, resp); err != nil {
						return
					}
				}
			}()
		}
	}()
	return l.Addr().String()
}

// BenchmarkServerTLS: one request through the proxy to a TLS server
// (ECDSA P-256, verify required against its CA), per request: "pooled"
// reuses idle TLS server connections (http_reuse always, a keep-alive
// client); "new-resumed" makes a server connection per request that
// resumes the server's session (http_reuse never, a new client connection
// per request); "new-full" the same with full handshakes (no session
// cache, HAProxy's no-ssl-reuse).
func BenchmarkServerTLS(b *testing.B) {
	ca := testcert.NewCA(b, "Bench CA", testcert.Options{})
	up := fastTLSUpstream(b, ca.Server(b, testcert.Options{}, "up.test").TLS())
	for _, c := range []struct {
		name      string
		reuse     string
		keepAlive bool
		noResume  bool
	}{
		{"pooled", "always", true, false},
		{"new-resumed", "never", false, false},
		{"new-full", "never", false, true},
	} {
		b.Run(c.name, func(b *testing.B) {
			cfg := testConfig(conf.ModeHTTP, []string{up}, nil)
			be := cfg.Backends[0]
			be.HTTPReuse = c.reuse
			be.Servers[0].SSL = true
			be.Servers[0].TLS = &conf.ServerTLS{Verify: true, CAs: ca.Pool(), VerifyHost: "up.test"}
			p, err := New(cfg, nopLogger())
			if err != nil {
				b.Fatal(err)
			}
			if c.noResume {
				p.Backends[0].Servers()[0].tlsc = tlsx.NewClient(tlsx.ClientOptions{Verify: true, CAs: ca.Pool(), VerifyHost: "up.test", NoSessionReuse: true})
			}
			if err := p.Start(); err != nil {
				b.Fatal(err)
			}
			defer p.Shutdown(contextBackground())
			addr := p.Frontends[0].Addrs()[0].String()
			b.ReportAllocs()
			if !c.keepAlive {
				for b.Loop() {
					conn, err := net.Dial("tcp", addr)
					if err != nil {
						b.Fatal(err)
					}
					oneRequest(b, conn)
					conn.Close()
				}
				return
			}
			// A keep-alive client that allocates nothing per request: the
			// allocations reported are the proxy's.
			conn, err := net.Dial("tcp", addr)
			if err != nil {
				b.Fatal(err)
			}
			defer conn.Close()
			br := bufio.NewReader(conn)
			var h http1.Head
			for b.Loop() {
				if _, err := io.WriteString(conn, benchRequest); err != nil {
					b.Fatal(err)
				}
				if err := h.Read(br, true); err != nil {
					b.Fatal(err)
				}
				if err := h.Parse(true); err != nil {
					b.Fatal(err)
				}
				br.Discard(int(h.ContentLength()))
			}
		})
	}
}
