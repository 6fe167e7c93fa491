package conf

// A server line's TLS and PROXY protocol keywords (HAProxy 2.6 takes them
// on `add server`): ssl, verify, ca-file, verifyhost, sni, alpn, crt,
// check-ssl; send-proxy, send-proxy-v2, proxy-v2-options,
// check-send-proxy. The server gets what a [[backend.server]] with the
// same keys gets (server_tls.go): the CA file and the client certificate
// are read, and the sni expression compiled, when the line is read, so
// that a file that cannot be read is the line's error and nothing is
// added. Relative paths are read from LineEnv.Dir, the configuration
// file's directory, as the file's ca_file and crt are.

import (
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/fulcrum-proxy/fulcrum/proxy/acl"
	"github.com/fulcrum-proxy/fulcrum/proxy/tlsx"
)

// LineEnv is what a server line's TLS keywords are read against.
type LineEnv struct {
	// Dir is the directory relative ca-file and crt paths are read
	// from: the configuration file's (filepath.Dir of Config.File);
	// "" reads them from the working directory.
	Dir string
	// ACL is the registry sni expressions compile in (Config.ACL); nil
	// compiles them in a registry of their own.
	ACL *acl.Registry
	// Mode is the backend's: an sni expression reading the HTTP request
	// and proto h2 need ModeHTTP. "" is ModeHTTP.
	Mode Mode
}

// lineTLS is what a server line says of TLS and of the PROXY protocol.
type lineTLS struct {
	ssl, checkSSL                              bool
	verify, caFile, verifyHost, sni, alpn, crt string
	sendProxy, sendProxyV2, checkSendProxy     bool
}

// finishTLS sets the server's TLS and PROXY protocol fields from the
// line's keywords, loading its files and compiling its sni as env says.
// The error, a *ServerLineError, is HAProxy 2.6's text where it has one.
func (l *lineParse) finishTLS(env *LineEnv) error {
	t, s := &l.tls, l.s
	switch {
	case t.sendProxyV2:
		s.SendProxy = 2
	case t.sendProxy:
		s.SendProxy = 1
	}
	if len(s.ProxyV2Options) > 0 && s.SendProxy != 2 {
		// As the file's proxy_v2_options: without send-proxy-v2 HAProxy
		// would send a version 1 line, surely not what was meant.
		return lineErr("'proxy-v2-options' needs 'send-proxy-v2'.")
	}
	s.CheckSendProxy = t.checkSendProxy || s.SendProxy != 0
	s.SSL, s.CheckSSL = t.ssl, t.ssl || t.checkSSL
	if !s.CheckSSL {
		return nil // the other TLS keywords do nothing then, as in the file
	}
	if env == nil {
		env = &LineEnv{}
	}
	mode := env.Mode
	if mode == "" {
		mode = ModeHTTP
	}
	st := &ServerTLS{Verify: t.verify != "none", VerifyHost: t.verifyHost, CAFile: t.caFile}
	if st.CAFile == "@system-ca" {
		st.CAFile = ""
	}
	if st.CAFile != "" {
		pool, err := tlsx.NewLoader(env.Dir).LoadCA(st.CAFile)
		if err != nil {
			return lineErr("'ca-file' : unable to load %s.", st.CAFile)
		}
		st.CAs = pool
	}
	if t.sni != "" {
		reg := env.ACL
		if reg == nil {
			reg = acl.NewRegistry("")
		}
		e, err := reg.NewScope().SampleExpr(t.sni)
		switch {
		case err != nil:
			// HAProxy's text names the fetch, not the expression again.
			msg := strings.TrimSuffix(err.Error(), " in sample expression '"+t.sni+"'")
			return lineErr("error detected while parsing sni expression : %s", msg)
		case e.L7() && mode != ModeHTTP:
			return lineErr("error detected while parsing sni expression : '%s' needs mode http (a tcp backend sees no HTTP request)", t.sni)
		}
		st.SNI, st.SNIText = e, t.sni
	}
	if t.alpn != "" {
		var set tlsx.Settings
		if _, err := set.ParseOption("alpn", t.alpn, nil); err != nil {
			return lineErr("'alpn' : %s.", strings.TrimPrefix(err.Error(), "alpn: "))
		}
		st.ALPN = set.ALPN
	}
	switch h2 := s.Proto == "h2"; {
	case h2 && t.ssl && t.alpn == "":
		st.ALPN = []string{"h2"} // as the file's servers with proto = "h2"
	case h2 && t.ssl && !slices.Contains(st.ALPN, "h2"):
		return lineErr("'alpn' : '%s' does not offer h2, which 'proto h2' needs over TLS.", t.alpn)
	}
	if t.crt != "" {
		p := t.crt
		if !filepath.IsAbs(p) && env.Dir != "" {
			p = filepath.Join(env.Dir, p)
		}
		if _, err := os.Stat(p); err != nil {
			return lineErr("unable to stat SSL certificate '%s'.", t.crt)
		}
		c, err := tlsx.LoadCert(t.crt, p)
		switch {
		case err != nil:
			return lineErr("unable to load SSL certificate '%s': %v.", t.crt, err)
		case c.Empty() || c.TLS == nil:
			return lineErr("unable to load SSL certificate '%s': no certificate in it.", t.crt)
		}
		st.Cert, st.CrtFile = c.TLS, t.crt
	}
	s.TLS = st
	return nil
}

// tlsKeywords returns the TLS and PROXY protocol keywords of a server
// line for s, which ParseServerLine reads back to the same settings.
func (s *Server) tlsKeywords() []string {
	var w []string
	if s.SSL {
		w = append(w, "ssl")
	} else if s.CheckSSL {
		w = append(w, "check-ssl")
	}
	if t := s.TLS; t != nil && s.CheckSSL {
		if !t.Verify {
			w = append(w, "verify", "none")
		}
		if t.CAFile != "" {
			w = append(w, "ca-file", t.CAFile)
		}
		if t.VerifyHost != "" {
			w = append(w, "verifyhost", t.VerifyHost)
		}
		if t.SNIText != "" {
			w = append(w, "sni", t.SNIText)
		}
		if len(t.ALPN) > 0 {
			w = append(w, "alpn", strings.Join(t.ALPN, ","))
		}
		if t.CrtFile != "" {
			w = append(w, "crt", t.CrtFile)
		}
	}
	switch s.SendProxy {
	case 1:
		w = append(w, "send-proxy")
	case 2:
		w = append(w, "send-proxy-v2")
		if len(s.ProxyV2Options) > 0 {
			w = append(w, "proxy-v2-options", strings.Join(s.ProxyV2Options, ","))
		}
	default:
		if s.CheckSendProxy {
			w = append(w, "check-send-proxy")
		}
	}
	return w
}

// ServerLineEnv returns the LineEnv of a server line added to a backend
// of mode mode in c: relative paths from c's file's directory (as its
// servers' ca_file and crt), sni compiled in c's registry.
func (c *Config) ServerLineEnv(mode Mode) *LineEnv {
	env := &LineEnv{ACL: c.ACL, Mode: mode}
	if c.File != "" {
		env.Dir = filepath.Dir(c.File)
	}
	return env
}
