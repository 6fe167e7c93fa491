package proxy

import (
	"testing"

	"github.com/fulcrum-proxy/fulcrum/conf"
	"github.com/rs/zerolog"
)

// TestFullConnDerived: a backend without fullconn gets 10% (rounded up)
// of the maxconn of the frontends that reach it, a frontend without one
// counting the global maxconn, and without that the limit derived from
// the descriptor limit, as HAProxy 2.6 does (at ulimit -n 20000 it shows
// a frontend slim of 9986 and a backend slim of 999): not 1.
func TestFullConnDerived(t *testing.T) {
	build := func(global string) *Proxy {
		t.Helper()
		cfg, err := conf.Parse("fullconn.toml", []byte(global+`
[[frontend]]
name = "small"
bind = ["127.0.0.1:0"]
maxconn = 95
default_backend = "web"
use_backend = [{ backend = "api", if = "{ path_beg /api }" }]

[[frontend]]
name = "big"
bind = ["127.0.0.1:0"]
default_backend = "web"

[[backend]]
name = "web"
[[backend.server]]
name = "s1"
address = "127.0.0.1:1"

[[backend]]
name = "api"
[[backend.server]]
name = "a1"
address = "127.0.0.1:1"

[[backend]]
name = "fixed"
fullconn = 42
[[backend.server]]
name = "f1"
address = "127.0.0.1:1"
`))
		if err != nil {
			t.Fatal(err)
		}
		p, err := New(cfg, zerolog.Nop())
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	p := build("[global]\nmaxconn = 1000\n")
	for be, want := range map[string]int{"web": 110, "api": 10, "fixed": 42} { // (95+1000)/10, 95/10, as set
		if got := p.Backend(be).FullConn(); got != want {
			t.Errorf("global maxconn 1000: %s: fullconn %d, want %d", be, got, want)
		}
	}
	fd := derivedMaxConn()
	if fd == 0 {
		t.Skip("no descriptor limit on this platform")
	}
	p = build("")
	if got, want := p.Backend("web").FullConn(), (95+fd+9)/10; got != want || got <= 1 {
		t.Errorf("no global maxconn: web: fullconn %d, want %d ((95 + %d) / 10, rounded up)", got, want, fd)
	}
	if got, want := p.Backend("api").FullConn(), 10; got != want {
		t.Errorf("no global maxconn: api: fullconn %d, want %d", got, want)
	}
}
