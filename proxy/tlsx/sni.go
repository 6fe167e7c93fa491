package tlsx

// Certificate selection by SNI, HAProxy's rules (ssl_sock_switchctx_cbk):
//
//   - The names of a crt-list line are its filters, or without filters the
//     certificate's DNS subject alternative names and common names. A
//     name "*.example.com" is a wildcard: it matches one label before
//     ".example.com" (a.example.com, not example.com nor a.b.example.com).
//   - The client's server name, lower-cased, is looked up among the exact
//     names, then among the wildcards (by what follows its first dot); a
//     wildcard match is skipped when the same line has a negative filter
//     "!name" for exactly that name.
//   - Among the matches, the first ECDSA certificate, the first RSA one
//     and the first other one are kept (exact names first, then
//     wildcards, each in configuration order), and the ECDSA one is served
//     when the client supports it, else the RSA one, else the other one.
//     (HAProxy reads the client's signature algorithms and ciphers for
//     "supports"; crypto/tls's ClientHelloInfo.SupportsCertificate asks
//     the same question, TLS 1.3 included.)
//   - No match, or no server name: the bind's default certificate, the
//     first one it loads; with strict-sni the handshake fails instead.

import (
	"crypto/tls"
	"slices"
	"strings"
)

// sniCtx is one crt-list line (or `crt` file) of a bind, ready to serve:
// its certificate and the tls.Config of its merged settings.
type sniCtx struct {
	cert *Cert
	conf *tls.Config
	// bare is conf without ALPN, for a client none of whose protocols
	// the line offers (nil when it offers none).
	bare  *tls.Config
	kt    KeyType
	neg   []string // the line's negative filters, without '!'
	entry *Entry   // the crt-list line, nil for a `crt` file
}

// sniTable is a bind's certificates by name. It is built whole and never
// changed: a runtime change builds a new one (Bind.rebuild).
type sniTable struct {
	exact  map[string][]*sniCtx
	wild   map[string][]*sniCtx // key: ".example.com" for *.example.com
	def    *sniCtx
	strict bool
}

// add indexes ctx under names (lower-case), skipping a name the same
// line already gave (a common name repeated as a subject alternative name).
func (t *sniTable) add(ctx *sniCtx, names []string) {
	for _, n := range names {
		if strings.HasPrefix(n, "!") {
			ctx.neg = append(ctx.neg, n[1:])
			continue
		}
		m, key := t.exact, n
		if strings.HasPrefix(n, "*") {
			m, key = t.wild, n[1:]
		}
		if slices.Contains(m[key], ctx) {
			continue
		}
		m[key] = append(m[key], ctx)
	}
}

// lookup returns the line whose certificate serves hello, nil when none
// does and strict-sni is set.
func (t *sniTable) lookup(hello *tls.ClientHelloInfo) *sniCtx {
	if hello.ServerName == "" {
		if t.strict {
			return nil
		}
		return t.def
	}
	name := strings.ToLower(hello.ServerName)
	var first [3]*sniCtx // by KeyType
	for _, c := range t.exact[name] {
		if first[c.kt] == nil {
			first[c.kt] = c
		}
	}
	if i := strings.IndexByte(name, '.'); i >= 0 {
		for _, c := range t.wild[name[i:]] {
			if first[c.kt] == nil && !slices.Contains(c.neg, name) {
				first[c.kt] = c
			}
		}
	}
	ecd, rsa, oth := first[KeyECDSA], first[KeyRSA], first[KeyOther]
	switch {
	case ecd != nil && (rsa == nil && oth == nil || hello.SupportsCertificate(ecd.cert.TLS) == nil):
		return ecd
	case rsa != nil:
		return rsa
	case oth != nil:
		return oth
	case t.strict:
		return nil
	}
	return t.def
}
