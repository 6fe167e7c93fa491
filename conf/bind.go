package conf

// Bind lines: an address followed by HAProxy's bind options, written as in
// haproxy.cfg so that lines can be copied from there:
//
//	bind = ["127.0.0.1:8443 ssl crt /etc/fulcrum/certs/ alpn h2,http/1.1"]
//
// The TLS options are read here and their values by proxy/tlsx, which
// loads the certificates now: a file that cannot be loaded is an error on
// the bind's line, an expired certificate a warning.

import (
	"strings"

	"github.com/fulcrum-proxy/fulcrum/proxy/tlsx"
)

// Bind is one element of a frontend's bind list.
type Bind struct {
	Addr string // host:port
	Line int    // line of the bind element
	// AcceptProxy: every connection starts with a PROXY protocol header
	// (v1 or v2), whose addresses become the connection's; a connection
	// without a valid one is closed.
	AcceptProxy bool
	// TLS is the bind's TLS, nil without "ssl".
	TLS *tlsx.BindConfig
	// Proto is "h2" with HAProxy's "proto h2": the bind speaks HTTP/2
	// without negotiating it (prior knowledge on plaintext, or forced
	// after a TLS handshake); "h1" with "proto h1": HTTP/1 only, no
	// implicit upgrade to HTTP/2; "" speaks HTTP/1.1, or what ALPN chose,
	// or on plaintext HTTP/2 to a client that opens with its preface.
	Proto string
}

// unsupportedBindOptions are HAProxy bind keywords fulcrum does not
// implement: a line copied with one gets "not supported" rather than
// "unknown".
var unsupportedBindOptions = map[string]bool{
	"allow-0rtt": true, "backlog": true, "ca-ignore-err": true, "ca-sign-file": true, "ca-sign-pass": true,
	"ca-verify-file": true, "crl-file": true, "crt-ignore-err": true, "defer-accept": true, "ecdhe": true,
	"expose-fd": true, "force-sslv3": true, "force-tlsv10": true, "force-tlsv11": true, "force-tlsv12": true,
	"force-tlsv13": true, "generate-certificates": true, "gid": true, "group": true, "id": true, "interface": true,
	"level": true, "maxconn": true, "mode": true, "mss": true, "name": true, "namespace": true, "nice": true,
	"no-ca-names": true, "no-sslv3": true, "no-tlsv10": true, "no-tlsv11": true, "no-tlsv12": true, "no-tlsv13": true,
	"npn": true, "prefer-client-ciphers": true, "process": true, "severity-output": true,
	"tcp-ut": true, "tfo": true, "thread": true, "tls-ticket-keys": true, "transparent": true,
	"uid": true, "user": true, "v4v6": true, "v6only": true, "accept-netscaler-cip": true,
}

// parseBind reads one bind element at s: its address, checked, and its
// options. TLS files are loaded through s's loader. It returns nil when
// the element has an error (reported).
func parseBind(s scope, text string) *Bind {
	words := strings.Fields(text)
	if len(words) == 0 {
		s.errorf("empty bind")
		return nil
	}
	b := &Bind{Addr: words[0], Line: s.line()}
	before := len(s.c.errs)
	checkHostPort(s, b.Addr, true)
	if len(s.c.errs) > before {
		return nil
	}
	var bc tlsx.BindConfig
	ssl := false
	var tlsWords []string // options that need ssl, for the message
	loader := s.c.tlsLoader()
	for i := 1; i < len(words); i++ {
		kw := words[i]
		arg := func() (string, bool) {
			if i+1 >= len(words) {
				s.errorf("'%s' needs an argument, got %q", kw, text)
				return "", false
			}
			i++
			return words[i], true
		}
		switch kw {
		case "ssl":
			ssl = true
		case "accept-proxy":
			b.AcceptProxy = true
		case "proto":
			v, ok := arg()
			if !ok {
				return nil
			}
			if v != "h2" && v != "h1" {
				s.errorf("proto: \"h2\" (HTTP/2 without negotiation) or \"h1\" (HTTP/1 only: no implicit HTTP/2 upgrade), got %q", v)
				return nil
			}
			b.Proto = v
		case "no-tls-tickets":
			bc.Settings.NoTickets = true
			tlsWords = append(tlsWords, kw)
		case "strict-sni":
			bc.StrictSNI = true
			tlsWords = append(tlsWords, kw)
		case "crt", "crt-list":
			v, ok := arg()
			if !ok {
				return nil
			}
			tlsWords = append(tlsWords, kw)
			var warnings []string
			var err error
			if kw == "crt" {
				warnings, err = loader.AddCrt(&bc, v)
			} else {
				warnings, err = loader.AddCrtList(&bc, v)
			}
			for _, w := range warnings {
				s.warnf("%s %q: %s", kw, v, w)
			}
			if err != nil {
				s.errorf("%s %q: %v", kw, v, err)
				return nil
			}
		default:
			if tlsx.OptionArgs(kw) >= 0 {
				v, ok := arg()
				if !ok {
					return nil
				}
				tlsWords = append(tlsWords, kw)
				warnings, err := bc.Settings.ParseOption(kw, v, loader.LoadCA)
				for _, w := range warnings {
					s.warnf("%s", w)
				}
				if err != nil {
					s.errorf("%v", err)
					return nil
				}
				continue
			}
			if unsupportedBindOptions[kw] {
				s.errorf("bind option '%s' is not supported yet", kw)
				return nil
			}
			s.errorf("unknown bind option '%s' in %q", kw, text)
			return nil
		}
	}
	if !ssl {
		if len(tlsWords) > 0 {
			s.errorf("'%s' needs 'ssl' on the bind", tlsWords[0])
			return nil
		}
		return b
	}
	bc.Where = s.c.where(b.Line)
	if err := loader.Check(&bc); err != nil {
		s.errorf("%v", err)
		return nil
	}
	b.TLS = &bc
	return b
}

// checkALPN checks what each bind speaks against its frontend's mode,
// once the frontends inherited their mode: "proto h2" needs http mode. An
// http mode frontend serves HTTP/2 to the clients whose ALPN chose h2
// (alpn h2,http/1.1) and HTTP/1.1 to the others; a tcp mode frontend
// passes h2 through to its servers and offers it as written.
func (f *fileSection) checkALPN(s scope) {
	for i, fe := range f.Frontends {
		for j, b := range fe.binds {
			if b != nil && b.Proto == "h2" && *fe.Mode != ModeHTTP {
				s.at("frontend").item(i).at("bind").item(j).errorf("proto h2 needs mode \"http\"")
			}
		}
		// As HAProxy: "'option disable-h2-upgrade' ignored for frontend
		// ... as it requires HTTP mode", inherited or not.
		if *fe.Mode != ModeHTTP && fe.DisableH2Upgrade != nil && *fe.DisableH2Upgrade {
			s.at("frontend").item(i).at("disable_h2_upgrade").warnf("ignored in mode %q: the HTTP/2 upgrade is an http frontend's", *fe.Mode)
		}
	}
}
