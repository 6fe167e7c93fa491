package conf

// A server's TLS and PROXY protocol keys, HAProxy's server keywords in
// snake_case (ssl, verify, ca_file, sni, verifyhost, alpn, crt, check_ssl;
// send_proxy, send_proxy_v2, proxy_v2_options, check_send_proxy): checked
// and loaded once every server has inherited its default_server, so that a
// CA file or a client certificate that cannot be read, or an sni
// expression that does not compile, is an error on the line that sets it.

import (
	"crypto/tls"
	"crypto/x509"
	"path/filepath"
	"slices"
	"strings"

	"github.com/fulcrum-proxy/fulcrum/proxy/acl"
	"github.com/fulcrum-proxy/fulcrum/proxy/tlsx"
)

// ServerTLS is the TLS of a server's connections (HAProxy's server ssl
// keywords), set when the server has ssl or check_ssl.
type ServerTLS struct {
	// Verify says the server's certificate is verified (verify required,
	// the default): its chain against CAs, and its names against the SNI
	// sent, else against VerifyHost when set (HAProxy's rule: without
	// either, the names are not checked).
	Verify     bool
	CAs        *x509.CertPool // nil: the system's roots
	CAFile     string         // as written, "" for the system's roots
	VerifyHost string
	// SNI is the sni expression, evaluated per connection (nil: no SNI
	// is sent); SNIText as written.
	SNI     *acl.Expr
	SNIText string
	ALPN    []string // offered protocols, nil: no ALPN
	// Cert is the client certificate (crt), nil for none; CrtFile as
	// written.
	Cert    *tls.Certificate
	CrtFile string
}

// proxyV2Options are the values proxy_v2_options accepts, HAProxy's.
var proxyV2Options = []string{"ssl", "cert-cn", "ssl-cipher", "cert-sig", "cert-key", "authority", "crc32c", "unique-id"}

// checkServers checks and loads every server's TLS and PROXY protocol
// keys, once they inherited their default_server and their backend its
// mode. sni expressions compile in a scope of reg.
func (f *fileSection) checkServers(s scope, reg *acl.Registry) {
	for i, be := range f.Backends {
		item := s.at("backend").item(i)
		for j, srv := range be.Servers {
			srv.tls = srv.serverParams.checkTLS(item.at("server").item(j), *be.Mode, reg)
		}
		for j, st := range be.ServerTemplates {
			st.tls = st.serverParams.checkTLS(item.at("server_template").item(j), *be.Mode, reg)
		}
	}
}

// checkTLS checks one server's (or server template's) TLS and PROXY keys
// at s and returns what the model needs, nil without ssl and check_ssl.
func (sp *serverParams) checkTLS(s scope, mode Mode, reg *acl.Registry) *ServerTLS {
	if sp.ProxyV2Options != nil {
		for k, o := range sp.ProxyV2Options {
			if !slices.Contains(proxyV2Options, o) {
				s.at("proxy_v2_options").item(k).errorf("unknown option %q (one of %s)", o, strings.Join(proxyV2Options, ", "))
			}
		}
		if len(sp.ProxyV2Options) > 0 && !*sp.SendProxyV2 {
			// HAProxy would send a version 1 line then (pp_opts without
			// SRV_PP_V2): surely not what was meant.
			s.at("proxy_v2_options").errorf("needs send_proxy_v2 = true")
		}
	}
	if !*sp.SSL && !*sp.CheckSSL {
		return nil
	}
	t := &ServerTLS{Verify: *sp.Verify == "required", VerifyHost: *sp.VerifyHost, CAFile: *sp.CAFile}
	loader := s.c.tlsLoader()
	if t.CAFile != "" && t.CAFile != "@system-ca" {
		pool, err := loader.LoadCA(t.CAFile)
		if err != nil {
			s.at("ca_file").errorf("%q: %v", t.CAFile, err)
		}
		t.CAs = pool
	}
	if t.CAFile == "@system-ca" {
		t.CAFile = ""
	}
	if *sp.SNI != "" {
		e, err := reg.NewScope().SampleExpr(*sp.SNI)
		switch {
		case err != nil:
			s.at("sni").errorf("%v", err)
		case e.L7() && mode != ModeHTTP:
			s.at("sni").errorf("'%s' needs mode http (a tcp backend sees no HTTP request)", *sp.SNI)
		default:
			t.SNI, t.SNIText = e, *sp.SNI
		}
	}
	if *sp.ALPN != "" {
		var set tlsx.Settings
		if _, err := set.ParseOption("alpn", *sp.ALPN, nil); err != nil {
			s.at("alpn").errorf("%s", strings.TrimPrefix(err.Error(), "alpn: "))
		}
		t.ALPN = set.ALPN
	}
	switch h2 := *sp.Proto == "h2"; {
	case h2 && *sp.SSL && *sp.ALPN == "":
		t.ALPN = []string{"h2"} // what an HTTP/2 server over TLS needs
	case h2 && *sp.SSL && !slices.Contains(t.ALPN, "h2"):
		s.at("alpn").errorf("%q does not offer h2, which proto = \"h2\" needs over TLS", *sp.ALPN)
	}
	if *sp.Crt != "" {
		p := *sp.Crt
		if !filepath.IsAbs(p) && loader.Dir != "" {
			p = filepath.Join(loader.Dir, p)
		}
		c, err := tlsx.LoadCert(*sp.Crt, p)
		switch {
		case err != nil:
			s.at("crt").errorf("%q: %v", *sp.Crt, err)
		case c.Empty() || c.TLS == nil:
			s.at("crt").errorf("%q: no certificate in it", *sp.Crt)
		default:
			if c.Expired(loader.Now) {
				s.at("crt").warnf("%q: the certificate expired on %s", *sp.Crt, c.Leaf.NotAfter.UTC().Format("2006-01-02"))
			}
			t.Cert, t.CrtFile = c.TLS, *sp.Crt
		}
	}
	return t
}

// sendProxy returns the server's send_proxy version: 0 none, 1 or 2 (v2
// wins over v1 when both are set, as in HAProxy).
func (sp *serverParams) sendProxy() int {
	switch {
	case *sp.SendProxyV2:
		return 2
	case *sp.SendProxy:
		return 1
	}
	return 0
}
