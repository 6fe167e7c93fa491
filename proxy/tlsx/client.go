package tlsx

// TLS to servers: the client side of connections to a server with `ssl`,
// as HAProxy's server keywords set it (verify, ca-file, sni, verifyhost,
// alpn, crt). One Client per server holds the settings and the session
// cache that lets reconnections resume; each connection gets a copy of
// its tls.Config with its own server name.

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
)

// ClientOptions are a server's TLS settings.
type ClientOptions struct {
	// Verify checks the server's certificate: its chain against CAs (nil:
	// the system's roots) and its names against the SNI sent, else
	// against VerifyHost when set; with neither, names are not checked
	// (HAProxy's verify required). False accepts any certificate.
	Verify     bool
	CAs        *x509.CertPool
	VerifyHost string
	ALPN       []string
	Cert       *tls.Certificate // client certificate, nil for none
	// NoSessionReuse makes every connection a full handshake (HAProxy's
	// no-ssl-reuse); by default sessions are resumed.
	NoSessionReuse bool
}

// Client is the TLS of connections to one server. Safe for concurrent use.
type Client struct {
	base *tls.Config
}

// sessionCacheSize is how many sessions a server's cache keeps: one per
// SNI value in use, which is usually one.
const sessionCacheSize = 64

// NewClient returns the TLS side of connections to a server set up as o.
func NewClient(o ClientOptions) *Client {
	c := &tls.Config{
		MinVersion: DefaultMinVersion,
		MaxVersion: DefaultMaxVersion,
		NextProtos: o.ALPN,
		// crypto/tls would check the names against ServerName itself, and
		// insist on one: the check is verifyServer's, HAProxy's way.
		InsecureSkipVerify: true,
		// A renegotiation request from a server is refused, as at the
		// edge.
		Renegotiation: tls.RenegotiateNever,
	}
	if o.Cert != nil {
		c.Certificates = []tls.Certificate{*o.Cert}
	}
	if !o.NoSessionReuse {
		c.ClientSessionCache = tls.NewLRUClientSessionCache(sessionCacheSize)
	}
	if o.Verify {
		roots, host := o.CAs, o.VerifyHost
		c.VerifyConnection = func(cs tls.ConnectionState) error {
			return verifyServer(cs, roots, host)
		}
	}
	return &Client{base: c}
}

// Config returns the tls.Config of a new connection sending sni as its
// server name ("" sends none). The session cache is shared.
func (cl *Client) Config(sni string) *tls.Config {
	c := cl.base.Clone()
	c.ServerName = sni
	return c
}

// ErrNoServerCert is the failure of a server that presented no
// certificate under verify required.
var ErrNoServerCert = errors.New("the server presented no certificate")

// ErrMismatchSNI marks a server certificate whose names do not match the
// SNI sent (no verifyhost): HAProxy's CO_ER_SSL_MISMATCH_SNI, after
// which it does not retry (the name may come from the client, who must
// not make the proxy hammer the server).
var ErrMismatchSNI = errors.New("certificate names do not match the SNI sent")

// verifyServer checks a server's certificate chain against roots (nil:
// the system's) and its names against the SNI sent, else against host
// (none: names are not checked, as HAProxy without sni nor verifyhost).
// It runs for resumed sessions too, on the certificates they carry.
func verifyServer(cs tls.ConnectionState, roots *x509.CertPool, host string) error {
	if len(cs.PeerCertificates) == 0 {
		return ErrNoServerCert
	}
	name := cs.ServerName
	if name == "" {
		name = host
	}
	opts := x509.VerifyOptions{Roots: roots, DNSName: name, Intermediates: x509.NewCertPool()}
	for _, c := range cs.PeerCertificates[1:] {
		opts.Intermediates.AddCert(c)
	}
	if _, err := cs.PeerCertificates[0].Verify(opts); err != nil {
		var he x509.HostnameError
		if cs.ServerName != "" && host == "" && errors.As(err, &he) {
			return fmt.Errorf("server certificate: %w (%w)", err, ErrMismatchSNI)
		}
		return fmt.Errorf("server certificate: %w", err)
	}
	return nil
}
