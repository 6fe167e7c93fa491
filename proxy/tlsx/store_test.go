package tlsx

import (
	"crypto/tls"
	"crypto/x509/pkix"
	"errors"
	"io"
	"net"
	"testing"

	"github.com/fulcrum-proxy/fulcrum/internal/testcert"
)

func serialOf(t *testing.T, b *Bind, f *fixture, sni string) int64 {
	t.Helper()
	st, err := handshake(t, b, f.client(sni))
	if err != nil {
		t.Fatalf("handshake %s: %v", sni, err)
	}
	return st.PeerCertificates[0].SerialNumber.Int64()
}

func txnMsg(err error) string {
	var te *TxnError
	if errors.As(err, &te) {
		return te.Msg
	}
	if err != nil {
		return "not a TxnError: " + err.Error()
	}
	return ""
}

// TestTransaction: set keeps the new certificate aside, commit serves it
// from the next handshake, abort drops it; the replies are HAProxy's.
func TestTransaction(t *testing.T) {
	f := newFixture(t)
	f.cert("a.pem", testcert.Options{Serial: 1}, "a.test")
	f.cert("b.pem", testcert.Options{Serial: 7}, "b.test")
	f.write("list.txt", "a.pem\n")
	s, b := f.bind(func(l *Loader, bc *BindConfig) error {
		for _, c := range []string{"a.pem", "b.pem"} {
			if _, err := l.AddCrt(bc, c); err != nil {
				return err
			}
		}
		_, err := l.AddCrtList(bc, "list.txt")
		return err
	})
	next := f.ca.Server(t, testcert.Options{Serial: 2}, "a.test")

	if created, err := s.SetCert("a.pem", next.PEM(true)); err != nil || !created {
		t.Fatalf("set: created=%v err=%v", created, err)
	}
	if got := serialOf(t, b, f, "a.test"); got != 1 {
		t.Fatalf("before commit: got serial %d, want 1", got)
	}
	if ci, ok := s.CertInfo("*a.pem"); !ok || !ci.Txn || ci.Status != "Unused" || ci.Cert.Serial() != "02" {
		t.Fatalf("transaction: got %+v %v", ci, ok)
	}
	if created, err := s.SetCert("a.pem", next.PEM(false)); err != nil || created {
		t.Fatalf("update: created=%v err=%v", created, err)
	}
	errs := []struct {
		name string
		err  error
		want string
	}{
		{"set another", func() error { _, err := s.SetCert("b.pem", next.PEM(true)); return err }(),
			"The ongoing transaction is about 'a.pem' but you are trying to set 'b.pem'\n"},
		{"commit another", func() error { _, err := s.Commit("b.pem"); return err }(),
			"The ongoing transaction is about 'a.pem' but you are trying to set 'b.pem'\n"},
		{"abort another", s.Abort("b.pem"),
			"The ongoing transaction is about 'a.pem' but you are trying to abort a transaction for 'b.pem'\n"},
		{"delete in transaction", s.DelCert("a.pem"), "certificate 'a.pem' in use, can't be deleted!\n"},
	}
	for _, e := range errs {
		if got := txnMsg(e.err); got != e.want {
			t.Errorf("%s: got %q, want %q", e.name, got, e.want)
		}
	}
	n, err := s.Commit("a.pem")
	if err != nil || n != 2 {
		t.Fatalf("commit: %d instances, %v; want 2 (a crt and a crt-list line)", n, err)
	}
	if got := serialOf(t, b, f, "a.test"); got != 2 {
		t.Fatalf("after commit: got serial %d, want 2", got)
	}
	for name, want := range map[string]string{
		"commit again": txnMsg(func() error { _, err := s.Commit("a.pem"); return err }()),
		"abort again":  txnMsg(s.Abort("a.pem")),
	} {
		if want != "No ongoing transaction! !\n" && want != "No ongoing transaction!\n" {
			t.Errorf("%s: got %q", name, want)
		}
	}

	// abort leaves the served certificate as it was.
	third := f.ca.Server(t, testcert.Options{Serial: 3}, "a.test")
	if _, err := s.SetCert("a.pem", third.PEM(true)); err != nil {
		t.Fatal(err)
	}
	if err := s.Abort("a.pem"); err != nil {
		t.Fatal(err)
	}
	if got := serialOf(t, b, f, "a.test"); got != 2 {
		t.Fatalf("after abort: got serial %d, want 2", got)
	}
	if _, ok := s.CertInfo("*a.pem"); ok {
		t.Fatal("transaction still shown after abort")
	}
}

// TestSetCertRefused: a payload without a certificate is refused at set;
// one without a key, or with another certificate's key, at commit (as
// HAProxy 2.6), and the served certificate stays.
func TestSetCertRefused(t *testing.T) {
	f := newFixture(t)
	f.cert("a.pem", testcert.Options{Serial: 1}, "a.test")
	s, b := f.bind(func(l *Loader, bc *BindConfig) error { _, err := l.AddCrt(bc, "a.pem"); return err })
	other := f.ca.Server(t, testcert.Options{}, "a.test")
	mismatch := append(append([]byte{}, other.CertPEM...), f.ca.Server(t, testcert.Options{}, "x").KeyPEM...)
	cases := []struct {
		name, cert string
		payload    []byte
		set        string // reply of set, "" when accepted
		commit     string
	}{
		{"unknown", "nope.pem", other.PEM(true), "Can't replace a certificate which is not referenced by the configuration!\n", ""},
		{"garbage", "a.pem", []byte("hello\n"), "unable to load certificate from file 'a.pem'.\nCan't load the payload\n", ""},
		{"key only", "a.pem", other.KeyPEM, "unable to load certificate from file 'a.pem'.\nCan't load the payload\n", ""},
		{"no key", "a.pem", other.CertPEM, "", "The transaction must contain at least a certificate and a private key!\n"},
		{"mismatch", "a.pem", mismatch, "", "inconsistencies between private key and certificate loaded 'a.pem'.\n"},
	}
	for _, c := range cases {
		_, err := s.SetCert(c.cert, c.payload)
		if got := txnMsg(err); got != c.set {
			t.Errorf("%s: set: got %q, want %q", c.name, got, c.set)
			continue
		}
		if c.set != "" {
			continue
		}
		if _, err := s.Commit(c.cert); txnMsg(err) != c.commit {
			t.Errorf("%s: commit: got %q, want %q", c.name, txnMsg(err), c.commit)
		}
		if err := s.Abort(c.cert); err != nil {
			t.Fatal(err)
		}
	}
	if got := serialOf(t, b, f, "a.test"); got != 1 {
		t.Fatalf("got serial %d, want 1 (unchanged)", got)
	}
}

// TestCrtListEdits: new ssl cert, set, commit, add ssl crt-list serves
// it; del ssl crt-list takes it back; the default certificate stays.
func TestCrtListEdits(t *testing.T) {
	f := newFixture(t)
	f.cert("a.pem", testcert.Options{Serial: 1}, "a.test")
	f.write("list.txt", "a.pem\n")
	s, b := f.bind(func(l *Loader, bc *BindConfig) error { _, err := l.AddCrtList(bc, "list.txt"); return err })
	n := f.ca.Server(t, testcert.Options{Serial: 9}, "n.test")
	if err := s.NewCert("n.pem"); err != nil {
		t.Fatal(err)
	}
	if got := txnMsg(s.NewCert("n.pem")); got != "Certificate 'n.pem' already exists!\n" {
		t.Fatalf("new twice: got %q", got)
	}
	if _, err := s.AddEntry("list.txt", &Entry{Cert: "n.pem"}); txnMsg(err) != "certificate 'n.pem' is empty!" {
		got := txnMsg(err)
		t.Fatalf("add empty: got %q", got)
	}
	if _, err := s.SetCert("n.pem", n.PEM(true)); err != nil {
		t.Fatal(err)
	}
	if k, err := s.Commit("n.pem"); err != nil || k != 0 {
		t.Fatalf("commit unused: %d %v", k, err)
	}
	if ci, _ := s.CertInfo("n.pem"); ci.Status != "Unused" {
		t.Fatalf("got status %q, want Unused", ci.Status)
	}
	e, _, err := ParseCrtLine("n.pem [alpn h2] n.test", nil)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := s.AddEntry("list.txt", e); err != nil || n != 1 {
		t.Fatal(err)
	}
	if got := serialOf(t, b, f, "n.test"); got != 9 {
		t.Fatalf("after add: got serial %d, want 9", got)
	}
	l, _ := s.List("list.txt")
	if got := l.Entries[1].Text(true); got != "n.pem:2 [alpn h2] n.test" {
		t.Fatalf("got entry %q", got)
	}
	if ci, _ := s.CertInfo("n.pem"); ci.Status != "Used" {
		t.Fatalf("got status %q, want Used", ci.Status)
	}
	if got := txnMsg(s.DelCert("n.pem")); got != "certificate 'n.pem' in use, can't be deleted!\n" {
		t.Fatalf("del used: got %q", got)
	}
	if got := txnMsg(s.DelEntry("list.txt", "a.pem", 0)); got !=
		"certificate 'a.pem' cannot be deleted, it is used as default certificate by the following frontends:\n\t- test.toml:1\n" {
		t.Fatalf("del default: got %q", got)
	}
	if got := txnMsg(s.DelEntry("list.txt", "n.pem", 5)); got !=
		"found a certificate 'n.pem' but the line number is incorrect, please specify a correct line number preceded by colons (2)!" {
		t.Fatalf("del bad line: got %q", got)
	}
	if err := s.DelEntry("list.txt", "n.pem", 2); err != nil {
		t.Fatal(err)
	}
	cfg := f.client("n.test")
	cfg.InsecureSkipVerify = true
	if st, err := handshake(t, b, cfg); err != nil || st.PeerCertificates[0].SerialNumber.Int64() != 1 {
		t.Fatalf("after del: got %v", err)
	}
	if err := s.DelCert("n.pem"); err != nil {
		t.Fatal(err)
	}
}

// TestReloadKeepsRuntimeChanges: a committed certificate survives a
// reload (a new store from prev) while the file on disk is unchanged, and
// the file wins once it changed.
func TestReloadKeepsRuntimeChanges(t *testing.T) {
	f := newFixture(t)
	f.cert("a.pem", testcert.Options{Serial: 1}, "a.test")
	load := func(prev *Store) (*Store, *Bind) {
		l := NewLoader(f.dir)
		bc := &BindConfig{}
		if _, err := l.AddCrt(bc, "a.pem"); err != nil {
			t.Fatal(err)
		}
		s := NewStore(l, prev)
		return s, s.NewBind(bc)
	}
	s1, _ := load(nil)
	if _, err := s1.SetCert("a.pem", f.ca.Server(t, testcert.Options{Serial: 2}, "a.test").PEM(true)); err != nil {
		t.Fatal(err)
	}
	if _, err := s1.Commit("a.pem"); err != nil {
		t.Fatal(err)
	}
	s2, b2 := load(s1)
	if got := serialOf(t, b2, f, "a.test"); got != 2 {
		t.Fatalf("reload, file unchanged: got serial %d, want 2 (the runtime one)", got)
	}
	s3, b3 := load(s2)
	if got := serialOf(t, b3, f, "a.test"); got != 2 {
		t.Fatalf("second reload: got serial %d, want 2", got)
	}
	f.cert("a.pem", testcert.Options{Serial: 3}, "a.test")
	_, b4 := load(s3)
	if got := serialOf(t, b4, f, "a.test"); got != 3 {
		t.Fatalf("reload, file changed: got serial %d, want 3 (the file's)", got)
	}
}

// TestClientCertificates: verify required refuses a client without a
// certificate or with one from another CA; the connection's info carries
// the DN, issuer and serial.
func TestClientCertificates(t *testing.T) {
	f := newFixture(t)
	f.cert("a.pem", testcert.Options{}, "a.test")
	testcert.Write(t, f.dir, "ca.pem", f.ca.PEM)
	_, b := f.bind(func(l *Loader, bc *BindConfig) error {
		if _, err := bc.Settings.ParseOption("verify", "required", nil); err != nil {
			return err
		}
		if _, err := bc.Settings.ParseOption("ca-file", "ca.pem", l.LoadCA); err != nil {
			return err
		}
		_, err := l.AddCrt(bc, "a.pem")
		return err
	})
	good := f.ca.Client(t, testcert.Options{Serial: 0x1abc}, pkix.Name{CommonName: "alice", Organization: []string{"Fulcrum"}, Country: []string{"FR"}})
	other := testcert.NewCA(t, "Other CA", testcert.Options{}).Client(t, testcert.Options{}, pkix.Name{CommonName: "mallory"})
	if _, err := handshake(t, b, f.client("a.test")); err == nil {
		t.Fatal("no client certificate: handshake succeeded")
	}
	cfg := f.client("a.test")
	cfg.Certificates = []tls.Certificate{other.TLS()}
	if _, err := handshake(t, b, cfg); err == nil {
		t.Fatal("certificate of another CA: handshake succeeded")
	}
	// The server side's view, through a real handshake.
	c1, c2 := net.Pipe()
	defer c1.Close()
	defer c2.Close()
	srv := b.Server(c2)
	done := make(chan error, 1)
	go func() { done <- srv.Handshake() }()
	cfg = f.client("a.test")
	cfg.Certificates = []tls.Certificate{good.TLS()}
	cl := tls.Client(c1, cfg)
	if err := cl.Handshake(); err != nil {
		t.Fatal(err)
	}
	go io.Copy(io.Discard, cl) // the tickets the server sends
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	cs := srv.ConnectionState()
	ci := NewConnInfo(&cs)
	want := ConnInfo{Protocol: "TLSv1.3", Cipher: ci.Cipher, SNI: "a.test", Subject: "/C=FR/O=Fulcrum/CN=alice", Issuer: "/CN=Test CA", Serial: "1ABC"}
	if ci.Protocol != want.Protocol || ci.SNI != want.SNI || ci.Subject != want.Subject || ci.Issuer != want.Issuer || ci.Serial != want.Serial {
		t.Fatalf("got %+v, want %+v", ci, want)
	}
	if v, _ := ci.SubjectDN.Entry("CN", 0); v != "alice" {
		t.Fatalf("CN: got %q", v)
	}
	if got := ci.SubjectDN.RFC2253(); got != "CN=alice,O=Fulcrum,C=FR" {
		t.Fatalf("rfc2253: got %q", got)
	}
}
