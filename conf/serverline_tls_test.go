package conf

import (
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/fulcrum-proxy/fulcrum/internal/testcert"
)

// TestServerLineTLS: a server line's TLS and PROXY keywords give the
// server what the file's keys give it, files read from LineEnv.Dir, and
// Keywords writes them back to a line that reads the same.
func TestServerLineTLS(t *testing.T) {
	dir := t.TempDir()
	ca := testcert.NewCA(t, "Test CA", testcert.Options{})
	testcert.Write(t, dir, "certs/ca.pem", ca.PEM)
	cl := ca.Client(t, testcert.Options{}, ca.Cert.Subject)
	testcert.Write(t, dir, "certs/client.pem", cl.PEM(true))
	env := &LineEnv{Dir: dir, Mode: ModeHTTP}

	line := "127.0.0.1:8443 ssl ca-file certs/ca.pem sni str(www.test) verifyhost www.test alpn h2,http/1.1 " +
		"crt certs/client.pem send-proxy-v2 proxy-v2-options ssl,authority"
	s, _, err := ParseServerLine("n1", strings.Fields(line), env)
	if err != nil {
		t.Fatal(err)
	}
	tl := s.TLS
	switch {
	case !s.SSL || !s.CheckSSL || tl == nil:
		t.Fatalf("ssl %v check_ssl %v tls %v", s.SSL, s.CheckSSL, tl)
	case !tl.Verify || tl.CAs == nil || tl.CAFile != "certs/ca.pem" || tl.VerifyHost != "www.test":
		t.Errorf("verify %v cas %v ca_file %q verifyhost %q", tl.Verify, tl.CAs != nil, tl.CAFile, tl.VerifyHost)
	case tl.SNI == nil || tl.SNIText != "str(www.test)":
		t.Errorf("sni %v %q", tl.SNI, tl.SNIText)
	case !reflect.DeepEqual(tl.ALPN, []string{"h2", "http/1.1"}): // offered as written, as the file's
		t.Errorf("alpn %q", tl.ALPN)
	case tl.Cert == nil || tl.CrtFile != "certs/client.pem":
		t.Errorf("crt %v %q", tl.Cert != nil, tl.CrtFile)
	case s.SendProxy != 2 || !s.CheckSendProxy || !reflect.DeepEqual(s.ProxyV2Options, []string{"ssl", "authority"}):
		t.Errorf("send_proxy %d check %v options %q", s.SendProxy, s.CheckSendProxy, s.ProxyV2Options)
	}
	want := "127.0.0.1:8443 ssl ca-file certs/ca.pem verifyhost www.test sni str(www.test) alpn h2,http/1.1 " +
		"crt certs/client.pem send-proxy-v2 proxy-v2-options ssl,authority"
	if got := strings.Join(s.Keywords(0, false), " "); got != want {
		t.Errorf("written back as\n%s\nwant\n%s", got, want)
	}

	// Relative paths are the env's directory's: from elsewhere, no file.
	if _, _, err := ParseServerLine("n1", strings.Fields(line), &LineEnv{Dir: t.TempDir()}); err == nil ||
		err.Error() != "'ca-file' : unable to load certs/ca.pem." {
		t.Errorf("from another directory: %v", err)
	}
	// An absolute path reads from anywhere.
	abs := filepath.Join(dir, "certs/ca.pem")
	if s, _, err := ParseServerLine("n1", []string{"127.0.0.1:1", "ssl", "ca-file", abs}, nil); err != nil || s.TLS.CAs == nil {
		t.Errorf("absolute ca-file: %v", err)
	}

	for _, c := range []struct{ line, want string }{
		// Without ca-file: the system's roots, verify required (as the
		// file's; HAProxy 2.6 refuses it).
		{"127.0.0.1:1 ssl", "127.0.0.1:1 ssl"},
		{"127.0.0.1:1 ssl verify none", "127.0.0.1:1 ssl verify none"},
		{"127.0.0.1:1 ssl ca-file @system-ca", "127.0.0.1:1 ssl"},
		{"127.0.0.1:1 check check-ssl verify none", "127.0.0.1:1 check check-ssl verify none"},
		{"127.0.0.1:1 send-proxy", "127.0.0.1:1 send-proxy"},
		{"127.0.0.1:1 send-proxy send-proxy-v2", "127.0.0.1:1 send-proxy-v2"},
		{"127.0.0.1:1 check-send-proxy", "127.0.0.1:1 check-send-proxy"},
		// TLS settings without ssl or check-ssl do nothing, as the file's.
		{"127.0.0.1:1 verify none sni str(x) alpn h2", "127.0.0.1:1"},
		// HTTP/2: h2c, and over TLS with ALPN h2 (offered by default).
		{"127.0.0.1:1 proto h2", "127.0.0.1:1 proto h2"},
		{"127.0.0.1:1 ssl verify none proto h2", "127.0.0.1:1 proto h2 ssl verify none alpn h2"},
		{"127.0.0.1:1 ssl verify none alpn h2,http/1.1 proto h2", "127.0.0.1:1 proto h2 ssl verify none alpn h2,http/1.1"},
	} {
		s, _, err := ParseServerLine("n1", strings.Fields(c.line), nil)
		if err != nil {
			t.Errorf("%s: %v", c.line, err)
			continue
		}
		if got := strings.Join(s.Keywords(0, false), " "); got != c.want {
			t.Errorf("%s: written back as %q, want %q", c.line, got, c.want)
		}
	}

	// An sni reading the request needs an http backend, as the file's.
	_, _, err = ParseServerLine("n1", strings.Fields("127.0.0.1:1 ssl sni req.hdr(host)"), &LineEnv{Mode: ModeTCP})
	if want := "error detected while parsing sni expression : 'req.hdr(host)' needs mode http (a tcp backend sees no HTTP request)"; err == nil || err.Error() != want {
		t.Errorf("L7 sni in tcp mode: %v", err)
	}
	// proto h2: only h2, in http mode, and offered by alpn over TLS.
	for _, c := range []struct {
		line string
		mode Mode
		want string
	}{
		{"127.0.0.1:1 proto h1", ModeHTTP, "'proto' : unknown protocol 'h1' (fulcrum supports h2)."},
		{"127.0.0.1:1 proto", ModeHTTP, "'proto' : missing value."},
		{"127.0.0.1:1 proto h2", ModeTCP, "'proto' : MUX protocol 'h2' is not usable in a backend of mode tcp."},
		{"127.0.0.1:1 ssl alpn http/1.1 proto h2", ModeHTTP, "'alpn' : 'http/1.1' does not offer h2, which 'proto h2' needs over TLS."},
	} {
		if _, _, err := ParseServerLine("n1", strings.Fields(c.line), &LineEnv{Mode: c.mode}); err == nil || err.Error() != c.want {
			t.Errorf("%s: got %v, want %q", c.line, err, c.want)
		}
	}
	// A crt file that is not a certificate.
	testcert.Write(t, dir, "bad.pem", []byte("nothing"))
	if _, _, err := ParseServerLine("n1", strings.Fields("127.0.0.1:1 ssl crt bad.pem"), env); err == nil ||
		!strings.HasPrefix(err.Error(), "unable to load SSL certificate 'bad.pem'") {
		t.Errorf("bad crt: %v", err)
	}
}
