package tlsx

import (
	"crypto/tls"
	"strings"
	"testing"

	"github.com/fulcrum-proxy/fulcrum/internal/testcert"
)

// TestSNISelection covers HAProxy's rules: exact before wildcard, one
// label per wildcard, negative filters, the default certificate, filters
// replacing the certificate's names, and ECDSA over RSA when the client
// can use it.
func TestSNISelection(t *testing.T) {
	f := newFixture(t)
	f.cert("default.pem", testcert.Options{Serial: 1}, "default.example.com")
	f.cert("wild.pem", testcert.Options{Serial: 2}, "*.example.com")
	f.cert("exact.pem", testcert.Options{Serial: 3}, "www.example.com")
	f.cert("other.pem", testcert.Options{Serial: 4}, "other.test")
	f.cert("rsa.pem", testcert.Options{Serial: 5, Key: testcert.RSA}, "dual.example.org")
	f.cert("ecdsa.pem", testcert.Options{Serial: 6}, "dual.example.org")
	f.write("list.txt", "# filters replace the certificate's names\n"+
		"other.pem [alpn x-other] alias.test *.alias.test !no.alias.test\n\n"+
		"rsa.pem\necdsa.pem\n")
	_, b := f.bind(func(l *Loader, bc *BindConfig) error {
		for _, c := range []string{"default.pem", "wild.pem", "exact.pem"} {
			if _, err := l.AddCrt(bc, c); err != nil {
				return err
			}
		}
		_, err := l.AddCrtList(bc, "list.txt")
		return err
	})
	rsaOnly := []uint16{tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256}
	cases := []struct {
		name    string
		sni     string
		ciphers []uint16 // TLS 1.2 client offering only these (nil: TLS 1.3 default client)
		serial  int64
		alpn    string
	}{
		{"exact", "www.example.com", nil, 3, ""},
		{"exact case-insensitive", "WWW.Example.COM", nil, 3, ""},
		{"wildcard", "api.example.com", nil, 2, ""},
		{"wildcard one label only", "a.b.example.com", nil, 1, ""},
		{"wildcard not the apex", "example.com", nil, 1, ""},
		{"no sni", "", nil, 1, ""},
		{"unknown", "nowhere.test", nil, 1, ""},
		{"filter instead of names", "alias.test", nil, 4, "x-other"},
		{"certificate's own name ignored with filters", "other.test", nil, 1, ""},
		{"filter wildcard", "x.alias.test", nil, 4, "x-other"},
		{"negative filter", "no.alias.test", nil, 1, ""},
		{"ecdsa preferred", "dual.example.org", nil, 6, ""},
		{"rsa for a client without ecdsa", "dual.example.org", rsaOnly, 5, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := f.client(c.sni)
			cfg.InsecureSkipVerify = true // the default certificate does not match every name
			cfg.NextProtos = []string{"x-other", "http/1.1"}
			if c.ciphers != nil {
				cfg.MaxVersion, cfg.CipherSuites = tls.VersionTLS12, c.ciphers
			}
			st, err := handshake(t, b, cfg)
			if err != nil {
				t.Fatalf("handshake: %v", err)
			}
			if got := st.PeerCertificates[0].SerialNumber.Int64(); got != c.serial {
				t.Fatalf("got serial %d, want %d", got, c.serial)
			}
			if st.NegotiatedProtocol != c.alpn {
				t.Fatalf("got ALPN %q, want %q", st.NegotiatedProtocol, c.alpn)
			}
		})
	}
}

func TestStrictSNI(t *testing.T) {
	f := newFixture(t)
	f.cert("a.pem", testcert.Options{}, "a.test")
	_, b := f.bind(func(l *Loader, bc *BindConfig) error {
		bc.StrictSNI = true
		_, err := l.AddCrt(bc, "a.pem")
		return err
	})
	if _, err := handshake(t, b, f.client("a.test")); err != nil {
		t.Fatalf("a.test: %v", err)
	}
	for _, sni := range []string{"b.test", ""} {
		cfg := f.client(sni)
		cfg.InsecureSkipVerify = true
		_, err := handshake(t, b, cfg)
		if err == nil {
			t.Fatalf("%q: handshake succeeded under strict-sni", sni)
		}
		// HAProxy's alert (112, measured by a trial), not internal_error.
		if !strings.Contains(err.Error(), "remote error: tls: unrecognized name") {
			t.Errorf("%q: %v, want the unrecognized_name alert", sni, err)
		}
	}
}

// TestDirectory: a crt directory loads its PEM files in name order, skips
// hidden and companion files, and the first is the default.
func TestDirectory(t *testing.T) {
	f := newFixture(t)
	f.cert("certs/b.pem", testcert.Options{Serial: 2}, "b.test")
	f.cert("certs/a.pem", testcert.Options{Serial: 1}, "a.test")
	f.write("certs/a.pem.key", "not a certificate")
	f.write("certs/.hidden", "not a certificate")
	s, b := f.bind(func(l *Loader, bc *BindConfig) error {
		_, err := l.AddCrt(bc, "certs/")
		return err
	})
	if names := s.ListNames(); len(names) != 1 || names[0] != "certs" {
		t.Fatalf("got lists %q, want [certs]", names)
	}
	l, _ := s.List("certs/")
	if len(l.Entries) != 2 || l.Entries[0].Cert != "certs/a.pem" || l.Entries[1].Cert != "certs/b.pem" {
		t.Fatalf("got entries %+v", l.Entries)
	}
	for sni, want := range map[string]int64{"b.test": 2, "x.test": 1} {
		cfg := f.client(sni)
		cfg.InsecureSkipVerify = true
		st, err := handshake(t, b, cfg)
		if err != nil || st.PeerCertificates[0].SerialNumber.Int64() != want {
			t.Fatalf("%s: got %v, want serial %d", sni, err, want)
		}
	}
}

// A client none of whose ALPN protocols the line offers completes its
// handshake without ALPN (HTTP/1.1), as HAProxy 2.6 does (a fresh-user
// trial: "openssl s_client -alpn foo" got "No ALPN negotiated" and a 200
// there, alert 120 here); one with a protocol in common still gets it.
func TestALPNNoOverlap(t *testing.T) {
	f := newFixture(t)
	f.cert("site.pem", testcert.Options{Serial: 1}, "site.test")
	f.write("list.txt", "site.pem [alpn h2,http/1.1]\n")
	_, b := f.bind(func(l *Loader, bc *BindConfig) error {
		_, err := l.AddCrtList(bc, "list.txt")
		return err
	})
	for _, c := range []struct {
		offer []string
		want  string
	}{
		{[]string{"foo"}, ""},
		{[]string{"spdy/3", "foo"}, ""},
		{[]string{"foo", "http/1.1"}, "http/1.1"},
		{[]string{"h2", "http/1.1"}, "h2"},
	} {
		cfg := f.client("site.test")
		cfg.InsecureSkipVerify = true
		cfg.NextProtos = c.offer
		st, err := handshake(t, b, cfg)
		if err != nil {
			t.Errorf("offering %q: %v", c.offer, err)
			continue
		}
		if st.NegotiatedProtocol != c.want {
			t.Errorf("offering %q: got ALPN %q, want %q", c.offer, st.NegotiatedProtocol, c.want)
		}
	}
}
