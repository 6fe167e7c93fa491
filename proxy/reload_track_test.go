package proxy

import (
	"context"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/fulcrum-proxy/fulcrum/conf"
	"github.com/fulcrum-proxy/fulcrum/proxy/stick"
)

// TestReloadTrackOnConnectionFromBefore: a request that arrives after a
// reload on a connection accepted before it (its first request, or the
// next one of a keep-alive connection) runs on the new configuration: a
// track-sc rule counts it in the new frontend's table, which a reload that
// changed the table's size rebuilt, not in the old one the reload retired.
// Found by a fresh-user trial (200 requests through a reload, 199
// counted).
func TestReloadTrackOnConnectionFromBefore(t *testing.T) {
	u := newUpstream(t, "s1")
	defer u.Close()
	text := `
[[frontend]]
name = "www"
bind = ["%s"]
default_backend = "web"
stick_table = { type = "ip", size = %d, store = ["http_req_cnt"] }
http_request = ["track-sc0 src"]
[[backend]]
name = "web"
[[backend.server]]
name = "s1"
address = "%s"
`
	parse := func(bind string, size int) *conf.Config {
		cfg, err := conf.Parse("t.toml", []byte(fmt.Sprintf(text, bind, size, u.addr())))
		if err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	count := func(p *Proxy) int64 {
		tb := p.Table("www")
		k, err := tb.ParseKey("127.0.0.1")
		if err != nil {
			t.Fatal(err)
		}
		es := tb.Entries(nil, &k)
		if len(es) == 0 {
			return 0
		}
		v, _ := tb.Value(es[0], stick.HTTPReqCnt)
		return v
	}
	for _, before := range []int{0, 1} {
		t.Run(fmt.Sprintf("%d requests before", before), func(t *testing.T) {
			p, err := New(parse("127.0.0.1:0", 100), zerolog.Nop())
			if err != nil {
				t.Fatal(err)
			}
			if err := p.Start(); err != nil {
				t.Fatal(err)
			}
			addr := p.Frontends[0].Addrs()[0].String()
			rc := dialRaw(t, addr)
			for range before {
				if r := rc.do(t, "GET /a HTTP/1.1\r\nHost: x\r\n\r\n"); r.StatusCode != 200 {
					t.Fatalf("status %d", r.StatusCode)
				}
			}
			waitFor(t, 5*time.Second, "the connection accepted", func() bool { return p.Frontends[0].Counters.Scur.Load() == 1 })
			next := reloadTo(t, p, parse(addr, 200))
			retired := make(chan error, 1)
			go func() { retired <- next.Retire(context.Background(), p) }()
			if r := rc.do(t, "GET /b HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"); r.StatusCode != 200 {
				t.Fatalf("status %d", r.StatusCode)
			}
			io.Copy(io.Discard, rc.br)
			if err := <-retired; err != nil {
				t.Fatal(err)
			}
			// A rebuilt table without peers starts empty
			// (TestReloadStickTables): the request after the reload is
			// the only one the new table counts.
			if got := count(next); got != 1 {
				t.Errorf("new table: http_req_cnt %d, want 1 (the request after the reload)", got)
			}
			if got := next.Frontends[0].Counters.ReqTot.Load(); got != int64(before+1) {
				t.Errorf("frontend req_tot %d, want %d", got, before+1)
			}
			next.Shutdown(context.Background())
		})
	}
}
