package proxy

import (
	"crypto/tls"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/fulcrum-proxy/fulcrum/conf"
)

// BenchmarkProxyServerByALPN is one request of an HTTP/1.1 keep-alive
// client through fulcrum to an HTTPS server speaking HTTP/2 (Go's), its
// streams multiplexed on pooled connections: the server written with
// proto = "h2" (proto-h2), and with alpn "h2,http/1.1" and no proto
// (by-alpn), which speaks HTTP/2 because the handshake selected it. The
// two should cost the same per request: ALPN is read once per connection.
func BenchmarkProxyServerByALPN(b *testing.B) {
	up := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("ok"))
	}))
	up.EnableHTTP2 = true
	up.TLS = &tls.Config{NextProtos: []string{"h2", "http/1.1"}}
	up.Config.ErrorLog = log.New(io.Discard, "", 0)
	up.StartTLS()
	b.Cleanup(up.Close)
	for _, c := range []struct{ name, key string }{{"proto-h2", `proto = "h2"`}, {"by-alpn", `alpn = "h2,http/1.1"`}} {
		b.Run(c.name, func(b *testing.B) {
			cfg, err := conf.Parse(filepath.Join(b.TempDir(), "fulcrum.toml"), []byte(fmt.Sprintf(`
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
verify = "none"
%s
`, up.Listener.Addr(), c.key)))
			if err != nil {
				b.Fatal(err)
			}
			p, err := New(cfg, nopLogger())
			if err != nil {
				b.Fatal(err)
			}
			if err := p.Start(); err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { p.Shutdown(contextBackground()) })
			addr := p.Frontends[0].Addrs()[0].String()
			keepAliveClients(b, addr, 2)
		})
	}
}
