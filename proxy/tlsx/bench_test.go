package tlsx

import (
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"testing"

	"github.com/fulcrum-proxy/fulcrum/internal/testcert"
)

// benchHandshakes runs b.N handshakes of a client with cfg against bind,
// over net.Pipe: the server side (selection by SNI, key exchange,
// signature) and the client side both count.
func benchHandshakes(b *testing.B, bind *Bind, cfg *tls.Config) {
	b.ReportAllocs()
	resumed := 0
	for b.Loop() {
		r, err := oneHandshake(bind, cfg)
		if err != nil {
			b.Fatal(err)
		}
		if r {
			resumed++
		}
	}
	b.ReportMetric(float64(resumed)/float64(b.N), "resumed/op")
}

// oneHandshake runs one handshake over net.Pipe; with a client session
// cache, it waits for the session ticket so that the next one resumes.
func oneHandshake(bind *Bind, cfg *tls.Config) (resumed bool, err error) {
	c1, c2 := net.Pipe()
	defer c1.Close()
	defer c2.Close()
	srv := bind.Server(c2)
	done := make(chan error, 1)
	go func() { done <- srv.Handshake() }()
	cl := tls.Client(c1, cfg)
	if err := cl.Handshake(); err != nil {
		return false, err
	}
	read := make(chan struct{})
	go func() { io.Copy(io.Discard, cl); close(read) }() // TLS 1.3 tickets
	err = <-done
	srv.Close() // after the tickets: the client has read them
	<-read
	return cl.ConnectionState().DidResume, err
}

// BenchmarkHandshake: full handshakes with an ECDSA P-256 and an RSA 2048
// certificate, and resumed ones (session tickets), on a bind of 3
// certificates.
func BenchmarkHandshake(b *testing.B) {
	ca := testcert.NewCA(b, "Bench CA", testcert.Options{})
	dir := b.TempDir()
	testcert.Write(b, dir, "ec.pem", ca.Server(b, testcert.Options{}, "ec.test").PEM(true))
	testcert.Write(b, dir, "rsa.pem", ca.Server(b, testcert.Options{Key: testcert.RSA}, "rsa.test").PEM(true))
	testcert.Write(b, dir, "wild.pem", ca.Server(b, testcert.Options{}, "*.wild.test").PEM(true))
	l := NewLoader(dir)
	bc := &BindConfig{}
	for _, n := range []string{"ec.pem", "rsa.pem", "wild.pem"} {
		if _, err := l.AddCrt(bc, n); err != nil {
			b.Fatal(err)
		}
	}
	bind := NewStore(l, nil).NewBind(bc)
	for _, c := range []struct {
		name, sni string
		resume    bool
	}{
		{"ecdsa", "ec.test", false},
		{"rsa2048", "rsa.test", false},
		{"ecdsa-resumed", "ec.test", true},
	} {
		b.Run(c.name, func(b *testing.B) {
			cfg := &tls.Config{RootCAs: ca.Pool(), ServerName: c.sni}
			if c.resume {
				cfg.ClientSessionCache = tls.NewLRUClientSessionCache(1)
				if _, err := oneHandshake(bind, cfg); err != nil { // a first session to resume
					b.Fatal(err)
				}
			}
			benchHandshakes(b, bind, cfg)
		})
	}
}

// BenchmarkSNILookup: the certificate lookup of a bind of 1,000 names
// (exact, then wildcard, then the default).
func BenchmarkSNILookup(b *testing.B) {
	ca := testcert.NewCA(b, "Bench CA", testcert.Options{})
	leaf := ca.Server(b, testcert.Options{}, "x.test")
	s := NewStore(NewLoader(""), nil)
	c, err := ParseCert("x.pem", leaf.PEM(true))
	if err != nil {
		b.Fatal(err)
	}
	s.certs["x.pem"] = c
	l := &CrtList{Name: "l"}
	for i := range 1000 {
		l.Entries = append(l.Entries, &Entry{Cert: "x.pem", Filters: []string{fmt.Sprintf("host%d.test", i), fmt.Sprintf("*.zone%d.test", i)}})
	}
	s.lists["l"] = l
	bind := s.NewBind(&BindConfig{Sources: []Source{{List: "l"}}})
	hellos := []*tls.ClientHelloInfo{{ServerName: "host500.test"}, {ServerName: "a.zone999.test"}, {ServerName: "nowhere.test"}}
	b.ReportAllocs()
	for b.Loop() {
		for _, h := range hellos {
			if bind.table.Load().lookup(h) == nil {
				b.Fatal("no certificate")
			}
		}
	}
}
