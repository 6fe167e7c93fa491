package conf

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// TestServerALPNOffersH2: a server with ssl and alpn "h2,http/1.1" but no
// proto offers its alpn as written, h2 included, without a warning (it
// speaks what ALPN chose, as HAProxy 2.6); proto = "h2" keeps offering h2
// only by default; a tcp backend's alpn is passed on as written too.
func TestServerALPNOffersH2(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "fulcrum.toml")
	cfg := `[[backend]]
name = "web"
[[backend.server]]
name = "auto"
address = "127.0.0.1:1"
ssl = true
verify = "none"
alpn = "h2,http/1.1"
[[backend.server]]
name = "h2"
address = "127.0.0.1:2"
ssl = true
verify = "none"
proto = "h2"
[[backend]]
name = "tcp"
mode = "tcp"
[[backend.server]]
name = "t"
address = "127.0.0.1:3"
ssl = true
verify = "none"
alpn = "h2,http/1.1"
`
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Warnings) != 0 {
		t.Errorf("warnings: %v", c.Warnings)
	}
	for _, want := range []struct {
		be, srv string
		alpn    []string
	}{
		{"web", "auto", []string{"h2", "http/1.1"}},
		{"web", "h2", []string{"h2"}},
		{"tcp", "t", []string{"h2", "http/1.1"}},
	} {
		var got []string
		for _, b := range c.Backends {
			for _, s := range b.Servers {
				if b.Name == want.be && s.Name == want.srv && s.TLS != nil {
					got = s.TLS.ALPN
				}
			}
		}
		if !reflect.DeepEqual(got, want.alpn) {
			t.Errorf("%s/%s: alpn %q, want %q", want.be, want.srv, got, want.alpn)
		}
	}
}
