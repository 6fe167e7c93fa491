package haproxycfg

import (
	"strings"
	"testing"
)

// TestTLSVersions resolves HAProxy's version options into the range
// fulcrum's bind takes.
func TestTLSVersions(t *testing.T) {
	cases := []struct {
		opts   string
		lo, hi string
		err    string
	}{
		{"", "", "", ""},
		{"no-sslv3 no-tlsv10 no-tlsv11", "", "", ""},
		{"ssl-min-ver TLSv1.2", "TLSv1.2", "", ""},
		{"ssl-min-ver TLSv1.0 no-tlsv10", "TLSv1.1", "", ""},
		{"no-tlsv13", "", "TLSv1.2", ""},
		{"force-tlsv12", "TLSv1.2", "TLSv1.2", ""},
		{"ssl-min-ver TLSv1.3 no-tlsv13", "", "", "no TLS version left enabled"},
		{"ssl-min-ver TLSv1.1 no-tlsv12", "", "", "TLS versions with a gap"},
		{"ssl-max-ver TLSv1.3", "", "TLSv1.3", ""},
	}
	for _, c := range cases {
		v := newVersions()
		words := strings.Fields(c.opts)
		for i := 0; i < len(words); i++ {
			o := &optCtx{bind: &bindBuild{vers: v}, name: words[i]}
			var args []string
			if strings.HasPrefix(words[i], "ssl-") {
				i++
				args = []string{words[i]}
			}
			if err := versionOpt(o, args); err != nil {
				t.Fatalf("%q: %v", c.opts, err)
			}
			v = o.bind.vers
		}
		lo, hi, err := v.resolve()
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%q: error %v, want %q", c.opts, err, c.err)
			}
			continue
		}
		if err != nil || lo != c.lo || hi != c.hi {
			t.Errorf("%q: %q %q %v, want %q %q", c.opts, lo, hi, err, c.lo, c.hi)
		}
	}
}

// TestJoinBase joins crt-base and ca-base as HAProxy does.
func TestJoinBase(t *testing.T) {
	for _, c := range [][3]string{
		{"", "site.pem", "site.pem"},
		{"/etc/ssl", "site.pem", "/etc/ssl/site.pem"},
		{"/etc/ssl/", "certs/", "/etc/ssl/certs/"},
		{"/etc/ssl", "/abs.pem", "/abs.pem"},
		{"/etc/ssl", "@system-ca", "@system-ca"},
	} {
		if got := joinBase(c[0], c[1]); got != c[2] {
			t.Errorf("joinBase(%q, %q) = %q, want %q", c[0], c[1], got, c[2])
		}
	}
}

// TestTLSNotConverted: the TLS lines fulcrum cannot run as asked are
// left out whole, with their reason, and the rest of the file converts.
func TestTLSNotConverted(t *testing.T) {
	cfg := `global
    crt-base tls
defaults
    mode http
frontend www
    bind 127.0.0.1:8443 ssl crt www.pem ca-file tls/ca.pem verify required crl-file tls/ca.pem
    bind 127.0.0.1:8444 ssl crt www.pem ssl-min-ver TLSv1.1 no-tlsv12
    bind 127.0.0.1:8445 ssl crt-list tls/list.txt
    bind 127.0.0.1:8446 ssl crt www.pem generate-certificates
    bind 127.0.0.1:8080
    default_backend app
backend app
    server a1 10.0.0.1:443 ssl verify required ca-file tls/ca.pem crl-file tls/ca.pem
    server a2 10.0.0.2:80
`
	r, err := Import([]byte(cfg), Options{Name: "t.cfg", Dir: corpusDir})
	if err != nil {
		t.Fatal(err)
	}
	got := notesText("t.cfg", r)
	want := `t.cfg:6: bind: not supported: "crl-file tls/ca.pem": certificate revocation lists: a revoked certificate would be accepted
t.cfg:7: bind: not supported: TLS versions with a gap: fulcrum takes a range (ssl-min-ver, ssl-max-ver)
t.cfg:8: bind: converted, differs: crt-list tls/list.txt: fulcrum does not join crt-base to the relative paths the list names (it reads them from the configuration's directory): write them in full
t.cfg:9: bind: not supported: "generate-certificates": certificates generated on the fly
t.cfg:13: server: not supported: "crl-file tls/ca.pem": certificate revocation lists: a revoked certificate would be accepted
`
	if got != want {
		t.Errorf("notes:\n%s\nwant:\n%s", got, want)
	}
	// What is not a comment: the plain bind and the server a2 only.
	var keys []string
	for _, l := range strings.Split(string(r.TOML), "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			keys = append(keys, l)
		}
	}
	wantKeys := `[global] [defaults] mode = "http" [[frontend]] name = "www" bind = [ "127.0.0.1:8445 ssl crt-list tls/list.txt", "127.0.0.1:8080", ] default_backend = "app" ` +
		`[[backend]] name = "app" [[backend.server]] name = "a2" address = "10.0.0.2:80"`
	if got := strings.Join(keys, " "); got != wantKeys {
		t.Errorf("keys:\n%s\nwant:\n%s", got, wantKeys)
	}
}
