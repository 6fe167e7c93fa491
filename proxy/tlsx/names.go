package tlsx

// Protocol versions, cipher suites and curves by the names HAProxy's
// configuration and fetches use (OpenSSL's): "TLSv1.2",
// "ECDHE-RSA-AES128-GCM-SHA256", "TLS_AES_128_GCM_SHA256", "X25519".

import (
	"crypto/tls"
	"fmt"
	"slices"
	"strings"
)

// versions are the protocol versions by HAProxy's names (ssl-min-ver,
// ssl-max-ver, ssl_fc_protocol). SSLv3 is refused: crypto/tls has none.
var versions = []struct {
	name string
	v    uint16
}{
	{"TLSv1.0", tls.VersionTLS10},
	{"TLSv1.1", tls.VersionTLS11},
	{"TLSv1.2", tls.VersionTLS12},
	{"TLSv1.3", tls.VersionTLS13},
}

// ParseVersion returns the protocol version named name ("TLSv1.2").
func ParseVersion(name string) (uint16, error) {
	for _, v := range versions {
		if v.name == name {
			return v.v, nil
		}
	}
	if name == "SSLv3" {
		return 0, fmt.Errorf("SSLv3 is not supported (crypto/tls has TLSv1.0 to TLSv1.3)")
	}
	return 0, fmt.Errorf("unknown version %q: must be one of TLSv1.0, TLSv1.1, TLSv1.2, TLSv1.3", name)
}

// VersionName returns the name of version v, as ssl_fc_protocol: "TLSv1.3".
func VersionName(v uint16) string {
	for _, x := range versions {
		if x.v == v {
			return x.name
		}
	}
	return ""
}

// cipher is a cipher suite crypto/tls implements, with OpenSSL's name.
type cipher struct {
	openssl string
	id      uint16
	tls13   bool
}

// ciphers are every suite crypto/tls implements, by OpenSSL's names (the
// names of `ciphers` and `ciphersuites` and of ssl_fc_cipher).
var ciphers = []cipher{
	{"TLS_AES_128_GCM_SHA256", tls.TLS_AES_128_GCM_SHA256, true},
	{"TLS_AES_256_GCM_SHA384", tls.TLS_AES_256_GCM_SHA384, true},
	{"TLS_CHACHA20_POLY1305_SHA256", tls.TLS_CHACHA20_POLY1305_SHA256, true},
	{"ECDHE-ECDSA-AES128-GCM-SHA256", tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256, false},
	{"ECDHE-RSA-AES128-GCM-SHA256", tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256, false},
	{"ECDHE-ECDSA-AES256-GCM-SHA384", tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384, false},
	{"ECDHE-RSA-AES256-GCM-SHA384", tls.TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384, false},
	{"ECDHE-ECDSA-CHACHA20-POLY1305", tls.TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256, false},
	{"ECDHE-RSA-CHACHA20-POLY1305", tls.TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256, false},
	{"ECDHE-ECDSA-AES128-SHA256", tls.TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256, false},
	{"ECDHE-RSA-AES128-SHA256", tls.TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256, false},
	{"ECDHE-ECDSA-AES128-SHA", tls.TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA, false},
	{"ECDHE-RSA-AES128-SHA", tls.TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA, false},
	{"ECDHE-ECDSA-AES256-SHA", tls.TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA, false},
	{"ECDHE-RSA-AES256-SHA", tls.TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA, false},
	{"AES128-GCM-SHA256", tls.TLS_RSA_WITH_AES_128_GCM_SHA256, false},
	{"AES256-GCM-SHA384", tls.TLS_RSA_WITH_AES_256_GCM_SHA384, false},
	{"AES128-SHA256", tls.TLS_RSA_WITH_AES_128_CBC_SHA256, false},
	{"AES128-SHA", tls.TLS_RSA_WITH_AES_128_CBC_SHA, false},
	{"AES256-SHA", tls.TLS_RSA_WITH_AES_256_CBC_SHA, false},
	{"ECDHE-RSA-DES-CBC3-SHA", tls.TLS_ECDHE_RSA_WITH_3DES_EDE_CBC_SHA, false},
	{"DES-CBC3-SHA", tls.TLS_RSA_WITH_3DES_EDE_CBC_SHA, false},
	{"ECDHE-ECDSA-RC4-SHA", tls.TLS_ECDHE_ECDSA_WITH_RC4_128_SHA, false},
	{"ECDHE-RSA-RC4-SHA", tls.TLS_ECDHE_RSA_WITH_RC4_128_SHA, false},
	{"RC4-SHA", tls.TLS_RSA_WITH_RC4_128_SHA, false},
}

// CipherName returns OpenSSL's name of suite id, as ssl_fc_cipher:
// "ECDHE-RSA-AES128-GCM-SHA256", "TLS_AES_128_GCM_SHA256".
func CipherName(id uint16) string {
	for _, c := range ciphers {
		if c.id == id {
			return c.openssl
		}
	}
	return tls.CipherSuiteName(id)
}

// ParseCiphers reads a `ciphers` value (TLS 1.2 and below): cipher names
// separated by ':' (or ',' or spaces), in OpenSSL's syntax as far as
// names go. A name crypto/tls does not implement (DHE-RSA-..., as in
// Mozilla's intermediate list) is skipped with a warning, as OpenSSL
// skips what it lacks; "!NAME" and "-NAME" remove a name, and "@..."
// directives are ignored. OpenSSL's aliases and expressions (HIGH,
// ECDHE+AESGCM, DEFAULT) are refused: fulcrum does not guess what they
// would select. It fails when no usable suite is left.
func ParseCiphers(s string) (ids []uint16, warnings []string, err error) {
	for _, tok := range splitList(s) {
		neg := tok[0] == '!' || tok[0] == '-'
		name := strings.TrimLeft(tok, "!-+")
		switch {
		case tok[0] == '@' || name == "":
			continue
		case strings.HasPrefix(name, "TLS_"):
			return nil, nil, fmt.Errorf("%s is a TLSv1.3 suite: set it with ciphersuites", name)
		}
		c := findCipher(name)
		switch {
		case c != nil && c.tls13:
			return nil, nil, fmt.Errorf("%s is a TLSv1.3 suite: set it with ciphersuites", name)
		case c != nil && neg:
			ids = slices.DeleteFunc(ids, func(id uint16) bool { return id == c.id })
		case c != nil:
			if !slices.Contains(ids, c.id) {
				ids = append(ids, c.id)
			}
		case neg:
			// Removing what was never added: nothing to do.
		case strings.Contains(name, "+") || !strings.Contains(name, "-"):
			return nil, nil, fmt.Errorf("%q: OpenSSL cipher aliases and expressions are not supported, list cipher names", tok)
		default:
			warnings = append(warnings, fmt.Sprintf("cipher %s is not available in crypto/tls, skipped", name))
		}
	}
	if len(ids) == 0 {
		return nil, warnings, fmt.Errorf("no usable cipher in %q", s)
	}
	return ids, warnings, nil
}

// ParseCipherSuites checks a `ciphersuites` value (TLS 1.3 suites). crypto/tls
// always enables its three TLS 1.3 suites and cannot restrict them, so a
// list that leaves one out is refused rather than silently ignored.
func ParseCipherSuites(s string) error {
	var seen []string
	for _, name := range splitList(s) {
		c := findCipher(name)
		if c == nil || !c.tls13 {
			return fmt.Errorf("unknown TLSv1.3 suite %q: must be among TLS_AES_128_GCM_SHA256, TLS_AES_256_GCM_SHA384, TLS_CHACHA20_POLY1305_SHA256", name)
		}
		seen = append(seen, name)
	}
	for _, c := range ciphers {
		if c.tls13 && !slices.Contains(seen, c.openssl) {
			return fmt.Errorf("%s cannot be disabled: crypto/tls always enables its three TLSv1.3 suites (list all three, or set ssl-max-ver TLSv1.2)", c.openssl)
		}
	}
	return nil
}

func findCipher(name string) *cipher {
	for i := range ciphers {
		if ciphers[i].openssl == name {
			return &ciphers[i]
		}
	}
	return nil
}

// splitList splits an OpenSSL list on ':', ',' and spaces.
func splitList(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool { return r == ':' || r == ',' || r == ' ' })
}

// curves are the key exchange groups by OpenSSL's names (`curves`).
var curves = map[string]tls.CurveID{
	"X25519": tls.X25519, "P-256": tls.CurveP256, "P-384": tls.CurveP384, "P-521": tls.CurveP521,
	"prime256v1": tls.CurveP256, "secp256r1": tls.CurveP256, "secp384r1": tls.CurveP384, "secp521r1": tls.CurveP521,
	"X25519MLKEM768": tls.X25519MLKEM768,
}

// ParseCurves reads a `curves` value: group names separated by ':'.
func ParseCurves(s string) ([]tls.CurveID, error) {
	var out []tls.CurveID
	for _, name := range splitList(s) {
		c, ok := curves[name]
		if !ok {
			return nil, fmt.Errorf("unknown curve %q: must be among X25519, P-256, P-384, P-521, X25519MLKEM768", name)
		}
		out = append(out, c)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("empty curve list")
	}
	return out, nil
}
