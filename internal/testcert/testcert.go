// Package testcert makes the certificates that TLS tests use: a test CA,
// server certificates for any names (wildcards included), expired ones and
// client certificates, with ECDSA P-256 or RSA 2048 keys, all made with
// crypto/x509 at test time. It is internal: only the module's tests use it.
//
// The main types are CA, which signs, and Leaf, a signed certificate with
// its key. PEM renders a leaf as HAProxy loads a `crt` file: the
// certificate, its chain, then the private key.
package testcert

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// KeyType is the kind of key a certificate is made with.
type KeyType int

// Key types: ECDSA P-256 (the default) and RSA 2048.
const (
	ECDSA KeyType = iota
	RSA
)

// Options tune a certificate. The zero value gives an ECDSA P-256 key, a
// random serial and validity from an hour ago to a year from now.
type Options struct {
	Key       KeyType
	Serial    int64     // 0 = random
	NotBefore time.Time // zero = an hour ago
	NotAfter  time.Time // zero = a year from NotBefore
	// Subject overrides the subject (CommonName defaults to the first name).
	Subject *pkix.Name
}

// CA is a certificate authority for tests.
type CA struct {
	Cert *x509.Certificate
	Key  crypto.Signer
	PEM  []byte // the CA certificate, PEM
}

// Leaf is a certificate signed by a CA, with its key.
type Leaf struct {
	Cert    *x509.Certificate
	Key     crypto.Signer
	CertPEM []byte // the certificate alone
	KeyPEM  []byte // the private key (PKCS#8)
	Chain   []*x509.Certificate
}

// NewCA returns a self-signed CA named cn.
func NewCA(t testing.TB, cn string, o Options) *CA {
	t.Helper()
	key := newKey(t, o.Key)
	tmpl := template(o)
	tmpl.Subject = pkix.Name{CommonName: cn}
	if o.Subject != nil {
		tmpl.Subject = *o.Subject
	}
	tmpl.IsCA = true
	tmpl.BasicConstraintsValid = true
	tmpl.KeyUsage = x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		t.Fatalf("testcert: CA: %v", err)
	}
	cert, _ := x509.ParseCertificate(der)
	return &CA{Cert: cert, Key: key, PEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// Server returns a server certificate for names (DNS names or IP
// addresses; "*.example.com" is a wildcard). The first name is also the
// subject's CommonName unless o.Subject says otherwise.
func (ca *CA) Server(t testing.TB, o Options, names ...string) *Leaf {
	t.Helper()
	tmpl := template(o)
	if len(names) > 0 {
		tmpl.Subject = pkix.Name{CommonName: names[0]}
	}
	for _, n := range names {
		if ip := net.ParseIP(n); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, n)
		}
	}
	tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
	return ca.sign(t, tmpl, o)
}

// Client returns a client certificate whose subject is subject.
func (ca *CA) Client(t testing.TB, o Options, subject pkix.Name) *Leaf {
	t.Helper()
	tmpl := template(o)
	tmpl.Subject = subject
	tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	return ca.sign(t, tmpl, o)
}

// Intermediate returns a CA signed by ca.
func (ca *CA) Intermediate(t testing.TB, cn string, o Options) *CA {
	t.Helper()
	tmpl := template(o)
	tmpl.Subject = pkix.Name{CommonName: cn}
	tmpl.IsCA = true
	tmpl.BasicConstraintsValid = true
	tmpl.KeyUsage = x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature
	l := ca.sign(t, tmpl, o)
	return &CA{Cert: l.Cert, Key: l.Key, PEM: l.CertPEM}
}

func (ca *CA) sign(t testing.TB, tmpl *x509.Certificate, o Options) *Leaf {
	t.Helper()
	if o.Subject != nil {
		tmpl.Subject = *o.Subject
	}
	key := newKey(t, o.Key)
	if tmpl.KeyUsage == 0 {
		tmpl.KeyUsage = x509.KeyUsageDigitalSignature
		if o.Key == RSA {
			tmpl.KeyUsage |= x509.KeyUsageKeyEncipherment
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, key.Public(), ca.Key)
	if err != nil {
		t.Fatalf("testcert: sign: %v", err)
	}
	cert, _ := x509.ParseCertificate(der)
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatalf("testcert: key: %v", err)
	}
	return &Leaf{
		Cert:    cert,
		Key:     key,
		CertPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		KeyPEM:  pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder}),
		Chain:   []*x509.Certificate{ca.Cert},
	}
}

// PEM returns the leaf as a HAProxy crt file: certificate, then the
// chain (the signing CA) when withChain, then the private key.
func (l *Leaf) PEM(withChain bool) []byte {
	var b bytes.Buffer
	b.Write(l.CertPEM)
	if withChain {
		for _, c := range l.Chain {
			pem.Encode(&b, &pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})
		}
	}
	b.Write(l.KeyPEM)
	return b.Bytes()
}

// TLS returns the leaf as a tls.Certificate (client certificates).
func (l *Leaf) TLS() tls.Certificate {
	return tls.Certificate{Certificate: [][]byte{l.Cert.Raw}, PrivateKey: l.Key, Leaf: l.Cert}
}

// Pool returns a pool holding the CA certificate.
func (ca *CA) Pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(ca.Cert)
	return p
}

// Write writes data to dir/name (creating dir) and returns the path.
func Write(t testing.TB, dir, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func template(o Options) *x509.Certificate {
	serial := big.NewInt(o.Serial)
	if o.Serial == 0 {
		serial, _ = rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
		serial.Add(serial, big.NewInt(1))
	}
	nb := o.NotBefore
	if nb.IsZero() {
		nb = time.Now().Add(-time.Hour).Truncate(time.Second)
	}
	na := o.NotAfter
	if na.IsZero() {
		na = nb.AddDate(1, 0, 0)
	}
	return &x509.Certificate{SerialNumber: serial, NotBefore: nb, NotAfter: na}
}

func newKey(t testing.TB, k KeyType) crypto.Signer {
	t.Helper()
	var key crypto.Signer
	var err error
	if k == RSA {
		key, err = rsa.GenerateKey(rand.Reader, 2048)
	} else {
		key, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	}
	if err != nil {
		t.Fatalf("testcert: key: %v", err)
	}
	return key
}
