package proxy

// Sending the PROXY protocol to servers (send_proxy, send_proxy_v2,
// proxy_v2_options, check_send_proxy), as HAProxy 2.6's make_proxy_line
// (src/connection.c) writes it: the client connection's addresses as the
// frontend sees them (those of a PROXY header it received, with
// accept-proxy), and in version 2 the ALPN the client negotiated and the
// TLVs the options ask for, in HAProxy's order: CRC32C, ALPN, AUTHORITY,
// UNIQUE_ID, SSL (with its sub-TLVs VERSION, CN, KEY_ALG, SIG_ALG, CIPHER).
// A health check has no client: it sends "PROXY UNKNOWN" or a LOCAL
// header, with the TLVs that need no client.

import (
	"crypto/ecdsa"
	"crypto/rsa"
	"crypto/x509"
	"encoding/binary"
	"fmt"
	"net/netip"
	"strconv"

	"github.com/fulcrum-proxy/fulcrum/proxy/proxyproto"
	"github.com/fulcrum-proxy/fulcrum/proxy/tlsx"
)

// ppOptions are a server's proxy_v2_options, as bits.
type ppOptions uint16

const (
	ppSSL ppOptions = 1 << iota
	ppCertCN
	ppSSLCipher
	ppCertSig
	ppCertKey
	ppAuthority
	ppCRC32C
	ppUniqueID
)

// parsePPOptions reads proxy_v2_options (conf checked the names). As in
// HAProxy, cert-cn, ssl-cipher, cert-sig and cert-key imply ssl: they are
// sub-TLVs of the SSL TLV.
func parsePPOptions(names []string) ppOptions {
	var o ppOptions
	for _, n := range names {
		switch n {
		case "ssl":
			o |= ppSSL
		case "cert-cn":
			o |= ppSSL | ppCertCN
		case "ssl-cipher":
			o |= ppSSL | ppSSLCipher
		case "cert-sig":
			o |= ppSSL | ppCertSig
		case "cert-key":
			o |= ppSSL | ppCertKey
		case "authority":
			o |= ppAuthority
		case "crc32c":
			o |= ppCRC32C
		case "unique-id":
			o |= ppUniqueID
		}
	}
	return o
}

// The client byte of the SSL TLV and its sub-TLV types
// (proxy-protocol.txt, section 2.2.5).
const (
	pp2ClientSSL      = 0x01
	pp2ClientCertConn = 0x02
	pp2ClientCertSess = 0x04

	pp2SubtypeSSLVersion = 0x21
	pp2SubtypeSSLCN      = 0x22
	pp2SubtypeSSLCipher  = 0x23
	pp2SubtypeSSLSigAlg  = 0x24
	pp2SubtypeSSLKeyAlg  = 0x25
)

// ppClient is what a PROXY header says of the client connection: its
// addresses (invalid for a health check, which sends LOCAL), its TLS (nil
// on a plain connection) and the stream's unique id.
type ppClient struct {
	src, dst netip.AddrPort
	tls      *tlsx.ConnInfo
	uniqueID string
}

// appendProxyHeader appends the PROXY header of protocol version (1 or 2)
// with options opts for client c to b.
func appendProxyHeader(b []byte, version int, opts ppOptions, c *ppClient) []byte {
	h := proxyproto.Header{Version: version, Src: c.src, Dst: c.dst}
	if c.src.IsValid() && c.dst.IsValid() {
		h.Command = proxyproto.Proxy
	}
	if version == 1 {
		return h.AppendV1(b)
	}
	var tlvs [6]proxyproto.TLV
	h.TLVs = tlvs[:0]
	if opts&ppCRC32C != 0 {
		h.TLVs = append(h.TLVs, proxyproto.TLV{Type: proxyproto.TypeCRC32C})
	}
	ci := c.tls
	if ci != nil && ci.ALPN != "" {
		h.TLVs = append(h.TLVs, proxyproto.TLV{Type: proxyproto.TypeALPN, Value: []byte(ci.ALPN)})
	}
	if opts&ppAuthority != 0 && ci != nil && ci.SNI != "" {
		h.TLVs = append(h.TLVs, proxyproto.TLV{Type: proxyproto.TypeAuthority, Value: []byte(ci.SNI)})
	}
	if opts&ppUniqueID != 0 && c.src.IsValid() {
		// HAProxy sends it, empty without a unique-id-format, for a
		// stream; a health check has none.
		h.TLVs = append(h.TLVs, proxyproto.TLV{Type: proxyproto.TypeUniqueID, Value: []byte(c.uniqueID)})
	}
	if opts&ppSSL != 0 {
		h.TLVs = append(h.TLVs, proxyproto.TLV{Type: proxyproto.TypeSSL, Value: sslTLV(opts, ci)})
	}
	return h.AppendV2(b)
}

// sslTLV is the value of the SSL TLV: the client byte, the verify result
// (0: a certificate that fails verification fails the handshake), then
// the sub-TLVs of a TLS connection.
func sslTLV(opts ppOptions, ci *tlsx.ConnInfo) []byte {
	v := make([]byte, 5, 64)
	if ci == nil {
		return v
	}
	v[0] = pp2ClientSSL
	if ci.ClientCert != nil {
		v[0] |= pp2ClientCertSess
		if !ci.Resumed {
			v[0] |= pp2ClientCertConn
		}
		binary.BigEndian.PutUint32(v[1:], uint32(ci.Verify))
	}
	sub := func(t byte, s string) {
		if s != "" {
			v = append(v, t, byte(len(s)>>8), byte(len(s)))
			v = append(v, s...)
		}
	}
	sub(pp2SubtypeSSLVersion, ci.Protocol)
	if opts&ppCertCN != 0 && ci.ClientCert != nil {
		sub(pp2SubtypeSSLCN, ci.ClientCert.Subject.CommonName)
	}
	if opts&ppCertKey != 0 {
		sub(pp2SubtypeSSLKeyAlg, keyAlgorithm(ci.Served))
	}
	if opts&ppCertSig != 0 {
		sub(pp2SubtypeSSLSigAlg, signatureAlgorithm(ci.Served))
	}
	if opts&ppSSLCipher != 0 {
		sub(pp2SubtypeSSLCipher, ci.Cipher)
	}
	return v
}

// keyAlgorithm names the key of certificate c as HAProxy's
// ssl_sock_get_pkey_algo: "RSA2048", "EC256"; "" for others.
func keyAlgorithm(c *x509.Certificate) string {
	if c == nil {
		return ""
	}
	switch k := c.PublicKey.(type) {
	case *rsa.PublicKey:
		return "RSA" + strconv.Itoa(k.N.BitLen())
	case *ecdsa.PublicKey:
		return "EC" + strconv.Itoa(k.Curve.Params().BitSize)
	}
	return ""
}

// signatureAlgorithm names the signature algorithm of certificate c as
// OpenSSL's short names (OBJ_nid2sn), which HAProxy sends.
func signatureAlgorithm(c *x509.Certificate) string {
	if c == nil {
		return ""
	}
	switch c.SignatureAlgorithm {
	case x509.SHA1WithRSA:
		return "RSA-SHA1"
	case x509.SHA256WithRSA:
		return "RSA-SHA256"
	case x509.SHA384WithRSA:
		return "RSA-SHA384"
	case x509.SHA512WithRSA:
		return "RSA-SHA512"
	case x509.SHA256WithRSAPSS, x509.SHA384WithRSAPSS, x509.SHA512WithRSAPSS:
		return "RSASSA-PSS"
	case x509.ECDSAWithSHA1:
		return "ecdsa-with-SHA1"
	case x509.ECDSAWithSHA256:
		return "ecdsa-with-SHA256"
	case x509.ECDSAWithSHA384:
		return "ecdsa-with-SHA384"
	case x509.ECDSAWithSHA512:
		return "ecdsa-with-SHA512"
	case x509.PureEd25519:
		return "ED25519"
	}
	return fmt.Sprint(c.SignatureAlgorithm)
}
