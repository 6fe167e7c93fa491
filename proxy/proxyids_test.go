package proxy

import (
	"path/filepath"
	"testing"
)

// TestProxyIDs: frontends and backends are numbered in declaration order
// from 1, or from 2 when the configuration has a stats socket (HAProxy
// 2.6's own Runtime API proxy, GLOBAL, takes 1; a fresh-user trial found
// every iid one lower than HAProxy's on the same haproxy.cfg, so that
// `show stat 3 -1 -1` listed another backend).
func TestProxyIDs(t *testing.T) {
	const body = `
[[frontend]]
name = "fe"
bind = ["127.0.0.1:0"]
default_backend = "be"

[[backend]]
name = "be"
[[backend.server]]
name = "s1"
address = "127.0.0.1:1"

[[backend]]
name = "api"
[[backend.server]]
name = "s1"
address = "127.0.0.1:1"
`
	dir := t.TempDir()
	socket := "[[global.stats_socket]]\npath = " + `"` + filepath.Join(dir, "admin.sock") + `"` + "\n"
	for _, c := range []struct {
		name, text string
		want       [3]int
	}{
		{"no socket", body, [3]int{1, 2, 3}},
		{"a stats socket", socket + body, [3]int{2, 3, 4}},
	} {
		p, err := New(loadConfig(t, dir, c.text), nopLogger())
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		t.Cleanup(func() { p.Shutdown(contextBackground()) })
		got := [3]int{p.Frontends[0].ID, p.Backends[0].ID, p.Backends[1].ID}
		if got != c.want {
			t.Errorf("%s: fe, be, api ids %v, want %v", c.name, got, c.want)
		}
	}
}
