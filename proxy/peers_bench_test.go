package proxy

import (
	"fmt"
	"testing"
	"time"

	"github.com/fulcrum-proxy/fulcrum/conf"
	"github.com/fulcrum-proxy/fulcrum/proxy/stick"
)

// BenchmarkProxyHTTPKeepAliveTracked is BenchmarkProxyHTTPKeepAlive with
// every request tracked in a stick table (track-sc0 src, a rate checked
// by a deny rule), the table not shared, then shared with peers: a
// replication layer drains its changes every millisecond, as a peers
// mesh does. The difference is what replication costs the request path.
func BenchmarkProxyHTTPKeepAliveTracked(b *testing.B) {
	up := fastUpstream(b)
	for _, shared := range []bool{false, true} {
		name := "unshared"
		if shared {
			name = "shared"
		}
		b.Run(name, func(b *testing.B) {
			cfg, err := conf.Parse("bench.toml", []byte(fmt.Sprintf(`
[[frontend]]
name = "www"
bind = ["127.0.0.1:0"]
default_backend = "web"
http_request = ["track-sc0 src table t", "deny if { sc_http_req_rate(0) lt 0 }"]

[[backend]]
name = "web"
http_reuse = "always"

[[backend.server]]
name = "s1"
address = %q

[[table]]
name = "t"
type = "ip"
size = 1000
expire = "1m"
store = ["http_req_cnt", "http_req_rate(10s)"]
`, up)))
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
			if shared {
				t := p.Table("t")
				t.SetShared(true)
				stop, done := make(chan struct{}), make(chan struct{})
				go func() {
					defer close(done)
					tick := time.NewTicker(time.Millisecond)
					defer tick.Stop()
					for {
						select {
						case <-stop:
							return
						case <-tick.C:
							t.DrainUpdates(func(*stick.Entry) {})
						}
					}
				}()
				b.Cleanup(func() { close(stop); <-done })
			}
			addr := p.Frontends[0].Addrs()[0].String()
			keepAliveClients(b, addr, -1)
		})
	}
}
