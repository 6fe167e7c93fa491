package tlsx

// TLS settings: the options HAProxy writes on a bind line and inside the
// brackets of a crt-list line (alpn, ssl-min-ver, ssl-max-ver, ciphers,
// ciphersuites, curves, verify, ca-file). Server-side TLS (round 2 of the
// TLS issue) reuses Settings and its parsers for server lines.

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"strings"
)

// Verify is the client certificate policy (HAProxy's verify).
type Verify uint8

// Verify values; VerifyUnset inherits (a crt-list line from its bind, a
// bind from the default, none).
const (
	VerifyUnset Verify = iota
	VerifyNone
	VerifyOptional
	VerifyRequired
)

func (v Verify) String() string {
	return [...]string{"", "none", "optional", "required"}[v]
}

// Default protocol versions: TLS 1.2 and 1.3.
const (
	DefaultMinVersion = tls.VersionTLS12
	DefaultMaxVersion = tls.VersionTLS13
)

// Settings are TLS options. The zero value of a field means "not set":
// a crt-list line inherits it from its bind, a bind from the defaults.
type Settings struct {
	MinVersion, MaxVersion uint16        // 0: unset
	Ciphers                []uint16      // TLS <= 1.2 suites; nil: crypto/tls's defaults
	CiphersText            string        // `ciphers` as written
	CipherSuitesText       string        // `ciphersuites` as written (checked: all three)
	Curves                 []tls.CurveID // nil: crypto/tls's defaults
	CurvesText             string
	ALPN                   []string // protocols offered; nil: no ALPN
	ALPNText               string   // as written
	Verify                 Verify
	CAFile                 string         // as written
	CAs                    *x509.CertPool // loaded from CAFile
	NoTickets              bool           // no-tls-tickets
}

// ErrUnknownOption is returned by ParseOption for a keyword it does not
// handle.
var ErrUnknownOption = errors.New("unknown option")

// OptionArgs returns how many arguments keyword kw takes, or -1 when
// ParseOption does not handle it.
func OptionArgs(kw string) int {
	switch kw {
	case "alpn", "ssl-min-ver", "ssl-max-ver", "ciphers", "ciphersuites", "curves", "verify", "ca-file":
		return 1
	}
	return -1
}

// ParseOption sets option kw to arg in s. loadCA reads a ca-file (the
// caller resolves its path). Warnings are for values accepted with a
// caveat (a cipher crypto/tls lacks).
func (s *Settings) ParseOption(kw, arg string, loadCA func(string) (*x509.CertPool, error)) (warnings []string, err error) {
	switch kw {
	case "alpn":
		var protos []string
		for _, p := range strings.Split(arg, ",") {
			if p == "" || len(p) > 255 {
				return nil, fmt.Errorf("alpn: bad protocol name in %q", arg)
			}
			protos = append(protos, p)
		}
		s.ALPN, s.ALPNText = protos, arg
	case "ssl-min-ver", "ssl-max-ver":
		v, err := ParseVersion(arg)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", kw, err)
		}
		if kw == "ssl-min-ver" {
			s.MinVersion = v
		} else {
			s.MaxVersion = v
		}
	case "ciphers":
		ids, w, err := ParseCiphers(arg)
		if err != nil {
			return w, fmt.Errorf("ciphers: %w", err)
		}
		s.Ciphers, s.CiphersText = ids, arg
		for _, x := range w {
			warnings = append(warnings, "ciphers: "+x)
		}
	case "ciphersuites":
		if err := ParseCipherSuites(arg); err != nil {
			return nil, fmt.Errorf("ciphersuites: %w", err)
		}
		s.CipherSuitesText = arg
	case "curves":
		c, err := ParseCurves(arg)
		if err != nil {
			return nil, fmt.Errorf("curves: %w", err)
		}
		s.Curves, s.CurvesText = c, arg
	case "verify":
		switch arg {
		case "none":
			s.Verify = VerifyNone
		case "optional":
			s.Verify = VerifyOptional
		case "required":
			s.Verify = VerifyRequired
		default:
			return nil, fmt.Errorf("verify: must be one of none, optional, required, got %q", arg)
		}
	case "ca-file":
		pool, err := loadCA(arg)
		if err != nil {
			return nil, fmt.Errorf("ca-file %q: %w", arg, err)
		}
		s.CAFile, s.CAs = arg, pool
	default:
		return nil, ErrUnknownOption
	}
	return warnings, nil
}

// LoadCAFile reads a PEM file of CA certificates.
func LoadCAFile(fsPath string) (*x509.CertPool, error) {
	data, err := os.ReadFile(fsPath)
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, fmt.Errorf("cannot read: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(data) {
		return nil, errors.New("no PEM certificate in it")
	}
	return pool, nil
}

// Check reports settings that cannot work together: versions in the
// wrong order, verify without a CA file to verify against.
func (s *Settings) Check() error {
	if err := s.checkVersions(); err != nil {
		return err
	}
	if (s.Verify == VerifyOptional || s.Verify == VerifyRequired) && s.CAs == nil {
		return fmt.Errorf("verify %s needs a ca-file to verify client certificates against", s.Verify)
	}
	return nil
}

// checkVersions checks that the minimum version is not above the maximum.
func (s *Settings) checkVersions() error {
	lo, hi := s.MinVersion, s.MaxVersion
	if lo == 0 {
		lo = DefaultMinVersion
	}
	if hi == 0 {
		hi = DefaultMaxVersion
	}
	if lo > hi {
		return fmt.Errorf("ssl-min-ver %s is above ssl-max-ver %s", VersionName(lo), VersionName(hi))
	}
	return nil
}

// Over returns s with the fields set in o replacing its own: a crt-list
// line's options over its bind's.
func (s Settings) Over(o *Settings) Settings {
	if o == nil {
		return s
	}
	if o.MinVersion != 0 {
		s.MinVersion = o.MinVersion
	}
	if o.MaxVersion != 0 {
		s.MaxVersion = o.MaxVersion
	}
	if o.Ciphers != nil {
		s.Ciphers, s.CiphersText = o.Ciphers, o.CiphersText
	}
	if o.CipherSuitesText != "" {
		s.CipherSuitesText = o.CipherSuitesText
	}
	if o.Curves != nil {
		s.Curves, s.CurvesText = o.Curves, o.CurvesText
	}
	if o.ALPN != nil {
		s.ALPN, s.ALPNText = o.ALPN, o.ALPNText
	}
	if o.Verify != VerifyUnset {
		s.Verify = o.Verify
	}
	if o.CAs != nil {
		s.CAFile, s.CAs = o.CAFile, o.CAs
	}
	if o.NoTickets {
		s.NoTickets = true
	}
	return s
}

// apply sets the server-side fields of c from s.
func (s *Settings) apply(c *tls.Config) {
	c.MinVersion, c.MaxVersion = s.MinVersion, s.MaxVersion
	if c.MinVersion == 0 {
		c.MinVersion = DefaultMinVersion
	}
	if c.MaxVersion == 0 {
		c.MaxVersion = DefaultMaxVersion
	}
	c.CipherSuites = s.Ciphers
	c.CurvePreferences = s.Curves
	c.NextProtos = s.ALPN
	c.SessionTicketsDisabled = s.NoTickets
	c.ClientCAs = s.CAs
	switch s.Verify {
	case VerifyOptional:
		c.ClientAuth = tls.VerifyClientCertIfGiven
	case VerifyRequired:
		c.ClientAuth = tls.RequireAndVerifyClientCert
	default:
		c.ClientAuth = tls.NoClientCert
	}
}

// Text renders the options set in s as a crt-list line's brackets show
// them, in HAProxy's order (dump_crtlist_sslconf): alpn, verify, ca-file,
// ciphers, ciphersuites, curves, ssl-min-ver, ssl-max-ver.
func (s *Settings) Text() string {
	var parts []string
	add := func(k, v string) {
		if v != "" {
			parts = append(parts, k+" "+v)
		}
	}
	add("alpn", s.ALPNText)
	add("verify", s.Verify.String())
	add("ca-file", s.CAFile)
	add("ciphers", s.CiphersText)
	add("ciphersuites", s.CipherSuitesText)
	add("curves", s.CurvesText)
	add("ssl-min-ver", VersionName(s.MinVersion))
	add("ssl-max-ver", VersionName(s.MaxVersion))
	return strings.Join(parts, " ")
}
