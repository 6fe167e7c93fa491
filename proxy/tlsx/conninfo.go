package tlsx

import (
	"crypto/tls"
	"crypto/x509"
)

// ConnInfo is what the fetches (ssl_fc_*, ssl_c_*) and the logs read of a
// client connection's TLS, taken once when its handshake completes.
type ConnInfo struct {
	Protocol string // "TLSv1.3" (ssl_fc_protocol)
	Cipher   string // OpenSSL's name (ssl_fc_cipher)
	SNI      string // as sent by the client (ssl_fc_sni), "" when none
	ALPN     string // negotiated protocol (ssl_fc_alpn), "" when none
	Resumed  bool   // an abbreviated handshake resumed a session
	// Served is the certificate the bind served, nil when unknown (the
	// handshake did not ask: WithServedCert).
	Served *x509.Certificate

	// ClientCert is the client's certificate, nil when it sent none (also
	// on a resumed session that had one: crypto/tls restores it).
	ClientCert *x509.Certificate
	SubjectDN  DN     // ssl_c_s_dn(entry) and ssl_c_s_dn(,0,rfc2253)
	IssuerDN   DN     // likewise ssl_c_i_dn
	Subject    string // SubjectDN in one line, "/CN=a/O=b" (ssl_c_s_dn)
	Issuer     string // IssuerDN in one line (ssl_c_i_dn)
	Serial     string // ssl_c_serial, upper-case hex
	// Verify is the verification result of the client certificate:
	// always 0 on an established connection, since a certificate that
	// fails verification fails the handshake (HAProxy without
	// ca-ignore-err / crt-ignore-err behaves the same).
	Verify int
}

// NewConnInfo extracts the fetches' view of an established connection.
func NewConnInfo(cs *tls.ConnectionState) *ConnInfo {
	ci := &ConnInfo{
		Protocol: VersionName(cs.Version),
		Cipher:   CipherName(cs.CipherSuite),
		SNI:      cs.ServerName,
		ALPN:     cs.NegotiatedProtocol,
		Resumed:  cs.DidResume,
	}
	if len(cs.PeerCertificates) > 0 {
		c := cs.PeerCertificates[0]
		ci.ClientCert = c
		ci.SubjectDN = ParseDN(c.RawSubject)
		ci.IssuerDN = ParseDN(c.RawIssuer)
		ci.Subject, ci.Issuer = ci.SubjectDN.OneLine(), ci.IssuerDN.OneLine()
		ci.Serial = HexUpper(c.SerialNumber.Bytes())
	}
	return ci
}
