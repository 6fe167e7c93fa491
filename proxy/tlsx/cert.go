package tlsx

// Certificates as HAProxy loads a `crt` file: one PEM file holding the
// certificate, its chain and its private key, in any order.

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"time"
)

// Cert is a loaded certificate: what one `crt` file (or a runtime
// payload) holds, parsed. A Cert never changes once made; a runtime
// change makes a new one.
type Cert struct {
	// Name is the certificate's name as the configuration writes it (the
	// `crt` path, or a directory's path joined with the file name), the
	// key of `show ssl cert` and `set ssl cert`.
	Name string
	// Leaf and Chain are the certificate and the ones after it in the
	// file; TLS is the pair crypto/tls serves. Nil for an empty entry
	// (`new ssl cert` before any `set ssl cert`).
	Leaf  *x509.Certificate
	Chain []*x509.Certificate
	TLS   *tls.Certificate
	// SHA1 is the leaf's fingerprint (show ssl cert).
	SHA1 [20]byte
	// Disk is the SHA-256 of the file as it was on disk when the
	// configuration loaded it, nil when it was not read from a file: a
	// reload keeps a runtime change unless the file on disk changed.
	Disk []byte
}

// Empty reports whether c holds no certificate (a `new ssl cert` entry).
func (c *Cert) Empty() bool { return c.Leaf == nil }

// KeyType is how HAProxy's SNI selection classes a certificate by its key.
type KeyType uint8

// Key types, in HAProxy's preference order (ECDSA, then RSA, then others).
const (
	KeyECDSA KeyType = iota
	KeyRSA
	KeyOther
)

// KeyType returns the class of c's key.
func (c *Cert) KeyType() KeyType {
	switch c.Leaf.PublicKey.(type) {
	case *ecdsa.PublicKey:
		return KeyECDSA
	case *rsa.PublicKey:
		return KeyRSA
	}
	return KeyOther
}

// Algorithm returns the key's algorithm and size as HAProxy prints them:
// "EC256", "RSA2048", "ED25519".
func (c *Cert) Algorithm() string {
	switch k := c.Leaf.PublicKey.(type) {
	case *ecdsa.PublicKey:
		return fmt.Sprintf("EC%d", k.Curve.Params().BitSize)
	case *rsa.PublicKey:
		return fmt.Sprintf("RSA%d", k.N.BitLen())
	case ed25519.PublicKey:
		return "ED25519"
	}
	return "unknown"
}

// Names returns the names the certificate answers SNI for when its
// crt-list line has no filter, as HAProxy: the DNS names of the subject
// alternative names, then the subject's common names; lower-cased.
func (c *Cert) Names() []string {
	var out []string
	for _, n := range c.Leaf.DNSNames {
		out = append(out, strings.ToLower(n))
	}
	for _, atv := range c.Leaf.Subject.Names {
		if atv.Type.Equal(oidCommonName) {
			if s, ok := atv.Value.(string); ok {
				out = append(out, strings.ToLower(s))
			}
		}
	}
	return out
}

// Expired reports whether c's validity has ended at now.
func (c *Cert) Expired(now time.Time) bool { return c.Leaf != nil && now.After(c.Leaf.NotAfter) }

// Reasons a file cannot be loaded as a certificate.
var (
	ErrNoCert      = errors.New("no certificate found")
	ErrNoKey       = errors.New("no private key found")
	ErrKeyMismatch = errors.New("private key does not match the certificate")
)

// LoadCert reads the PEM file at path (fsPath: where to open it) and
// parses it as the certificate named name. Errors say what is wrong:
// missing or unreadable file, not PEM, no certificate, no key, key
// mismatch, encrypted key.
func LoadCert(name, fsPath string) (*Cert, error) {
	data, err := os.ReadFile(fsPath)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, fmt.Errorf("cannot read: %w", err)
	}
	c, err := ParseCert(name, data)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(data)
	c.Disk = sum[:]
	return c, nil
}

// ParseCert parses data, a PEM bundle of a certificate, its chain and its
// private key (PKCS#1, PKCS#8 or SEC 1), as the certificate named name.
func ParseCert(name string, data []byte) (*Cert, error) {
	c, keyErr, err := parseBundle(name, data)
	if err != nil {
		return nil, err
	}
	if keyErr != nil {
		return nil, keyErr
	}
	return c, nil
}

// parseBundle parses data as ParseCert does, but returns the certificate
// even when the key is missing or does not match (keyErr, ErrNoKey or
// ErrKeyMismatch; c.TLS is then nil): a `set ssl cert` payload is taken
// so, and its commit refused, as HAProxy does. err is for data without a
// usable certificate.
func parseBundle(name string, data []byte) (c *Cert, keyErr, err error) {
	var certs []*x509.Certificate
	var key crypto.Signer
	rest := data
	sawPEM := false
	for {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			break
		}
		sawPEM = true
		switch {
		case b.Type == "CERTIFICATE":
			x, err := x509.ParseCertificate(b.Bytes)
			if err != nil {
				return nil, nil, fmt.Errorf("bad certificate: %v", err)
			}
			certs = append(certs, x)
		case strings.HasSuffix(b.Type, "PRIVATE KEY"):
			if key != nil {
				return nil, nil, errors.New("more than one private key")
			}
			if b.Type == "ENCRYPTED PRIVATE KEY" || b.Headers["Proc-Type"] != "" {
				return nil, nil, errors.New("encrypted private keys are not supported")
			}
			k, err := parseKey(b)
			if err != nil {
				return nil, nil, err
			}
			key = k
		}
		// Other blocks (DH PARAMETERS, EC PARAMETERS...) are skipped, as
		// HAProxy skips what it does not use.
	}
	switch {
	case !sawPEM:
		return nil, nil, errors.New("not a PEM file")
	case len(certs) == 0:
		return nil, nil, ErrNoCert
	}
	c = &Cert{Name: name, Leaf: certs[0], Chain: certs[1:], SHA1: sha1.Sum(certs[0].Raw)}
	switch {
	case key == nil:
		return c, ErrNoKey, nil
	case !publicKeysEqual(certs[0].PublicKey, key.Public()):
		return c, ErrKeyMismatch, nil
	}
	tc := &tls.Certificate{PrivateKey: key, Leaf: certs[0]}
	for _, x := range certs {
		tc.Certificate = append(tc.Certificate, x.Raw)
	}
	c.TLS = tc
	return c, nil, nil
}

// parseKey decodes a private key block.
func parseKey(b *pem.Block) (crypto.Signer, error) {
	var k any
	var err error
	switch b.Type {
	case "RSA PRIVATE KEY":
		k, err = x509.ParsePKCS1PrivateKey(b.Bytes)
	case "EC PRIVATE KEY":
		k, err = x509.ParseECPrivateKey(b.Bytes)
	default:
		k, err = x509.ParsePKCS8PrivateKey(b.Bytes)
	}
	if err != nil {
		return nil, fmt.Errorf("bad private key: %v", err)
	}
	s, ok := k.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("unsupported private key type %T", k)
	}
	return s, nil
}

// publicKeysEqual compares two public keys.
func publicKeysEqual(a, b crypto.PublicKey) bool {
	k, ok := a.(interface{ Equal(crypto.PublicKey) bool })
	return ok && k.Equal(b)
}

// Serial returns the leaf's serial number as HAProxy prints it: the
// big-endian bytes in upper-case hex ("05", "1234").
func (c *Cert) Serial() string { return HexUpper(c.Leaf.SerialNumber.Bytes()) }

// HexUpper returns b in upper-case hex, "00" for an empty slice.
func HexUpper(b []byte) string {
	if len(b) == 0 {
		return "00"
	}
	const digits = "0123456789ABCDEF"
	out := make([]byte, 2*len(b))
	for i, x := range b {
		out[2*i], out[2*i+1] = digits[x>>4], digits[x&15]
	}
	return string(out)
}

// Same reports whether c and d hold the same certificate and key
// material (their PEM may differ).
func (c *Cert) Same(d *Cert) bool {
	if c.Empty() || d.Empty() {
		return c.Empty() == d.Empty()
	}
	if !bytes.Equal(c.Leaf.Raw, d.Leaf.Raw) || len(c.Chain) != len(d.Chain) {
		return false
	}
	for i := range c.Chain {
		if !bytes.Equal(c.Chain[i].Raw, d.Chain[i].Raw) {
			return false
		}
	}
	return true
}
