package runtime

import "testing"

// TestAddACLParseErrorPeriod: a pattern the ACL cannot parse is refused
// with the parser's message ended by a period, as HAProxy's CLI ends it
// ("'x' is not a number." for an integer fetch, the IP message already
// has its period and gets no second one).
func TestAddACLParseErrorPeriod(t *testing.T) {
	e := startEnv(t, `
[[frontend]]
name = "fe"
bind = ["127.0.0.1:0"]
mode = "http"
default_backend = "web"
acl = { port = "dst_port 80", bad = "src 10.0.0.1" }
http_request = ["deny if port", "deny if bad"]

[[backend]]
name = "web"
mode = "http"
[[backend.server]]
name = "s1"
address = "127.0.0.1:18081"
`)
	for _, tc := range []struct{ line, want string }{
		{"add acl #1 1.2.3.4", "'1.2.3.4' is not a number.\n\n"},
		{"add acl #0 notanip", "'notanip' is not a valid IPv4 or IPv6 address.\n\n"},
	} {
		if got := e.run(t, LevelAdmin, tc.line); got != tc.want {
			t.Errorf("%s: got %q, want %q", tc.line, got, tc.want)
		}
	}
}
