package tlsx

import (
	"crypto/x509"
	"errors"
	"strings"
	"testing"
)

// FuzzCrtLine: a crt-list line (from a file, or `add ssl crt-list` on
// the Runtime API) never panics the parser, and what it accepts renders
// back (show ssl crt-list) to a line that parses to the same entry.
func FuzzCrtLine(f *testing.F) {
	for _, s := range []string{
		"certs/a.pem [alpn h2,http/1.1 ssl-min-ver TLSv1.2 verify optional] a.test *.b.test !x.b.test",
		"a.pem", "a.pem []", "a.pem [ciphers ECDHE-RSA-AES128-GCM-SHA256:DHE-RSA-AES128-SHA] x",
		"[a.pem]", "a.pem [alpn", "a.pem ] x", "a.pem [ssl-max-ver TLSv1.2 ssl-min-ver TLSv1.3]",
		"a.pem [ciphersuites TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256 curves X25519:P-256]",
	} {
		f.Add(s)
	}
	noCA := func(string) (*x509.CertPool, error) { return nil, errors.New("no ca-file in fuzzing") }
	f.Fuzz(func(t *testing.T, line string) {
		e, _, err := ParseCrtLine(line, noCA)
		if err != nil || e == nil {
			return
		}
		text := e.Text(false)
		e2, _, err := ParseCrtLine(text, noCA)
		if err != nil || e2 == nil {
			t.Fatalf("%q rendered as %q: %v", line, text, err)
		}
		if e2.Text(false) != text || e2.Cert != e.Cert || strings.Join(e2.Filters, " ") != strings.Join(e.Filters, " ") {
			t.Fatalf("%q rendered as %q, which parses to %q", line, text, e2.Text(false))
		}
	})
}

// FuzzParseCert: a `set ssl cert` payload never panics the loader.
func FuzzParseCert(f *testing.F) {
	f.Add([]byte("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"))
	f.Add([]byte("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n"))
	f.Add([]byte("garbage"))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, keyErr, err := parseBundle("x.pem", data)
		if err == nil && c == nil {
			t.Fatal("no certificate and no error")
		}
		if err == nil && keyErr == nil && c.TLS == nil {
			t.Fatal("accepted without a key pair")
		}
	})
}
