package acl

// The TLS fetches of the client connection (ssl_fc_*, ssl_c_*): HAProxy's
// names and types, read from the connection's tlsx.ConnInfo. On a plain
// connection they find no sample, except ssl_fc which is false; the ssl_c_*
// fetches find none when the client sent no certificate, except
// ssl_c_used (false) and ssl_c_verify (0).

import (
	"fmt"
	"strconv"
	"strings"
	"unsafe"
)

// parseDNArgs reads the arguments of ssl_c_s_dn and ssl_c_i_dn:
// [entry[,occ[,format]]], where format is "rfc2253" (HAProxy's only one).
func parseDNArgs(f *fetch, args string) (*fetch, error) {
	parts := strings.Split(args, ",")
	if len(parts) > 3 {
		return nil, fmt.Errorf("fetch '%s' takes at most 3 arguments, got %q", f.def.name, f.text)
	}
	f.name = []byte(strings.TrimSpace(parts[0]))
	if len(parts) > 1 {
		n, err := strconv.Atoi(strings.TrimSpace(parts[1]))
		if err != nil {
			return nil, fmt.Errorf("fetch '%s': occurrence must be an integer, got %q", f.def.name, parts[1])
		}
		f.occ = n
	}
	if len(parts) > 2 {
		switch strings.TrimSpace(parts[2]) {
		case "rfc2253":
			f.rfc = true
		case "":
		default:
			return nil, fmt.Errorf("fetch '%s': unknown format %q, only rfc2253 is supported", f.def.name, parts[2])
		}
	}
	return f, nil
}

// strSample views s as a string sample without copying: samples are only
// read.
func strSample(s string) sample {
	return sample{t: typeStr, s: unsafe.Slice(unsafe.StringData(s), len(s))}
}

// fetchTLS returns the TLS fetch f of r's connection.
func fetchTLS(r *Request, f *fetch, it *iter) (sample, bool) {
	ci := r.TLS
	switch f.def.id {
	case fSSLCUsed:
		return once(it, sample{t: typeBool, n: boolInt(ci != nil && ci.ClientCert != nil)})
	case fSSLCVerify:
		if ci == nil {
			return sample{}, false
		}
		return once(it, sample{t: typeInt, n: int64(ci.Verify)})
	}
	if ci == nil {
		return sample{}, false
	}
	var v string
	switch f.def.id {
	case fSSLSNI:
		v = ci.SNI
	case fSSLProtocol:
		v = ci.Protocol
	case fSSLCipher:
		v = ci.Cipher
	case fSSLALPN:
		v = ci.ALPN
	case fSSLCSerial:
		v = ci.Serial
	case fSSLCSDN, fSSLCIDN:
		if ci.ClientCert == nil {
			return sample{}, false
		}
		dn, one := ci.SubjectDN, ci.Subject
		if f.def.id == fSSLCIDN {
			dn, one = ci.IssuerDN, ci.Issuer
		}
		switch {
		case len(f.name) > 0:
			e, ok := dn.Entry(string(f.name), f.occ)
			if !ok {
				return sample{}, false
			}
			v = e
		case f.rfc:
			v = dn.RFC2253()
		default:
			v = one
		}
	}
	if v == "" {
		return sample{}, false
	}
	return once(it, strSample(v))
}

func boolInt(b bool) int64 {
	if b {
		return 1
	}
	return 0
}
