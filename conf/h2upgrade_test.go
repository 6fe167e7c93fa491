package conf

import (
	"strings"
	"testing"
)

// TestDisableH2UpgradeTCPWarns: disable_h2_upgrade in a tcp frontend is
// accepted with a warning, as HAProxy's "ignored ... as it requires HTTP
// mode"; in an http frontend without one.
func TestDisableH2UpgradeTCPWarns(t *testing.T) {
	for _, tc := range []struct{ mode, warn string }{
		{"tcp", `t.toml:6: warning: frontend "f": disable_h2_upgrade: ignored in mode "tcp": the HTTP/2 upgrade is an http frontend's`},
		{"http", ""},
	} {
		cfg, err := Parse("t.toml", []byte(`[[frontend]]
name = "f"
mode = "`+tc.mode+`"
bind = ["127.0.0.1:0"]
default_backend = "b"
disable_h2_upgrade = true
[[backend]]
name = "b"
mode = "`+tc.mode+`"
[[backend.server]]
name = "s"
address = "127.0.0.1:1"
`))
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, w := range cfg.Warnings {
			got = append(got, w.Warning())
		}
		if want := tc.warn; strings.Join(got, "\n") != want {
			t.Errorf("mode %s: warnings %q, want %q", tc.mode, got, want)
		}
	}
}
