package proxy

import (
	"bufio"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"testing"

	"github.com/fulcrum-proxy/fulcrum/conf"
	"github.com/fulcrum-proxy/fulcrum/internal/testcert"
	"github.com/fulcrum-proxy/fulcrum/proxy/tlsx"
)

// edgeBenchProxy starts a proxy whose bind has the given edge, in front
// of a fast upstream, and returns its address.
func edgeBenchProxy(b *testing.B, acceptProxy bool, tlsCfg *tlsx.BindConfig, loader *tlsx.Loader) string {
	cfg := testConfig(conf.ModeHTTP, []string{fastUpstream(b)}, nil)
	cfg.Backends[0].HTTPReuse = "always"
	cfg.Frontends[0].BindOptions = []*conf.Bind{{Addr: "127.0.0.1:0", AcceptProxy: acceptProxy, TLS: tlsCfg}}
	cfg.TLS = loader
	p, err := New(cfg, nopLogger())
	if err != nil {
		b.Fatal(err)
	}
	if err := p.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { p.Shutdown(contextBackground()) })
	return p.Frontends[0].Addrs()[0].String()
}

// oneRequest sends the bench request on c and reads the response.
func oneRequest(b *testing.B, c net.Conn) {
	if _, err := io.WriteString(c, benchRequest); err != nil {
		b.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		b.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
}

// BenchmarkEdgeTLSNewConn: a new TLS connection per request through the
// proxy (full handshake, ECDSA P-256 or RSA 2048, or resumed with a
// session ticket), client and proxy on this machine: the handshake path
// of edge.go end to end.
func BenchmarkEdgeTLSNewConn(b *testing.B) {
	dir := b.TempDir()
	ca := testcert.NewCA(b, "Bench CA", testcert.Options{})
	testcert.Write(b, dir, "ec.pem", ca.Server(b, testcert.Options{}, "ec.test").PEM(true))
	testcert.Write(b, dir, "rsa.pem", ca.Server(b, testcert.Options{Key: testcert.RSA}, "rsa.test").PEM(true))
	l := tlsx.NewLoader(dir)
	bc := &tlsx.BindConfig{HTTP1Only: true}
	for _, n := range []string{"ec.pem", "rsa.pem"} {
		if _, err := l.AddCrt(bc, n); err != nil {
			b.Fatal(err)
		}
	}
	addr := edgeBenchProxy(b, false, bc, l)
	for _, c := range []struct {
		name, sni string
		resume    bool
	}{{"ecdsa", "ec.test", false}, {"rsa2048", "rsa.test", false}, {"ecdsa-resumed", "ec.test", true}} {
		b.Run(c.name, func(b *testing.B) {
			cfg := &tls.Config{RootCAs: ca.Pool(), ServerName: c.sni}
			if c.resume {
				cfg.ClientSessionCache = tls.NewLRUClientSessionCache(8)
			}
			b.ReportAllocs()
			resumed := 0
			for b.Loop() {
				conn, err := tls.Dial("tcp", addr, cfg)
				if err != nil {
					b.Fatal(err)
				}
				oneRequest(b, conn) // also reads the session ticket before it
				if conn.ConnectionState().DidResume {
					resumed++
				}
				conn.Close()
			}
			b.ReportMetric(float64(resumed)/float64(b.N), "resumed/op")
		})
	}
}

// BenchmarkEdgeProxyHeader: a new connection per request with a PROXY v1
// header, through the proxy (the peek, the parse, the exact read).
func BenchmarkEdgeProxyHeader(b *testing.B) {
	addr := edgeBenchProxy(b, true, nil, nil)
	hdr := proxyLine("192.0.2.1:40000", "198.51.100.1:80")
	b.ReportAllocs()
	for b.Loop() {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			b.Fatal(err)
		}
		io.WriteString(conn, hdr)
		oneRequest(b, conn)
		conn.Close()
	}
}
