package conf

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fulcrum-proxy/fulcrum/internal/testcert"
)

// TestBindCertificates: certificates that cannot be loaded are errors on
// the bind's line with the reason; an expired one loads with a warning;
// the model carries the bind's options.
func TestBindCertificates(t *testing.T) {
	dir := t.TempDir()
	ca := testcert.NewCA(t, "Test CA", testcert.Options{})
	good := ca.Server(t, testcert.Options{}, "a.test")
	other := ca.Server(t, testcert.Options{}, "b.test")
	expired := ca.Server(t, testcert.Options{NotBefore: time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC),
		NotAfter: time.Date(2021, 1, 1, 0, 0, 0, 0, time.UTC)}, "old.test")
	testcert.Write(t, dir, "good.pem", good.PEM(true))
	testcert.Write(t, dir, "nokey.pem", good.CertPEM)
	testcert.Write(t, dir, "mismatch.pem", append(append([]byte{}, good.CertPEM...), other.KeyPEM...))
	testcert.Write(t, dir, "text.pem", []byte("hello\n"))
	testcert.Write(t, dir, "expired.pem", expired.PEM(true))
	testcert.Write(t, dir, "ca.pem", ca.PEM)
	testcert.Write(t, dir, "list.txt", []byte("good.pem [alpn h2 verify required] a.test\nnokey.pem\n"))
	testcert.Write(t, dir, "badlist.txt", []byte("good.pem [bogus 1]\n"))
	cfg := `[[frontend]]
name = "www"
mode = "http"
bind = [
  "127.0.0.1:9001 ssl crt good.pem alpn h2,http/1.1 verify optional ca-file ca.pem accept-proxy",
  "127.0.0.1:9002 ssl crt nokey.pem",
  "127.0.0.1:9003 ssl crt mismatch.pem",
  "127.0.0.1:9004 ssl crt text.pem",
  "127.0.0.1:9005 ssl crt expired.pem",
  "127.0.0.1:9006 ssl crt-list list.txt",
  "127.0.0.1:9007 ssl crt-list badlist.txt",
  "127.0.0.1:9008 ssl crt good.pem verify required",
]
`
	path := filepath.Join(dir, "fulcrum.toml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Load(path)
	want := []string{
		path + ":6: frontend \"www\": bind #2: crt \"nokey.pem\": no private key found",
		path + ":7: frontend \"www\": bind #3: crt \"mismatch.pem\": private key does not match the certificate",
		path + ":8: frontend \"www\": bind #4: crt \"text.pem\": not a PEM file",
		path + ":10: frontend \"www\": bind #6: crt-list \"list.txt\": line 2: \"nokey.pem\": no private key found",
		path + ":11: frontend \"www\": bind #7: crt-list \"badlist.txt\": line 1: unknown ssl keyword bogus",
		path + ":12: frontend \"www\": bind #8: verify required needs a ca-file to verify client certificates against",
	}
	if err == nil || err.Error() != strings.Join(want, "\n") {
		t.Fatalf("got:\n%v\nwant:\n%s", err, strings.Join(want, "\n"))
	}

	// Without the bad binds: valid, with the expired warning, and the
	// options in the model (h2 is offered: http mode speaks it).
	cfg = `[[frontend]]
name = "www"
bind = [
  "127.0.0.1:9001 ssl crt good.pem alpn h2,http/1.1 verify optional ca-file ca.pem accept-proxy",
  "127.0.0.1:9005 ssl crt expired.pem",
  "127.0.0.1:9009 proto h2",
]
timeout_client = "7s"
`
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	var warns []string
	for _, w := range c.Warnings {
		warns = append(warns, w.Error())
	}
	wantWarns := []string{
		path + ":5: frontend \"www\": bind #2: crt \"expired.pem\": certificate expired on 2021-01-01 00:00:00 UTC (notAfter), loaded anyway",
	}
	if strings.Join(warns, "\n") != strings.Join(wantWarns, "\n") {
		t.Fatalf("warnings:\n%s\nwant:\n%s", strings.Join(warns, "\n"), strings.Join(wantWarns, "\n"))
	}
	fe := c.Frontends[0]
	if got := strings.Join(fe.Binds, " "); got != "127.0.0.1:9001 127.0.0.1:9005 127.0.0.1:9009" {
		t.Fatalf("binds: got %q", got)
	}
	b := fe.BindOptions[0]
	if !b.AcceptProxy || b.TLS == nil || b.TLS.Settings.ALPNText != "h2,http/1.1" || b.TLS.Where != path+":4" {
		t.Fatalf("bind #1: got %+v", b)
	}
	if fe.BindOptions[2].TLS != nil || fe.BindOptions[2].AcceptProxy || fe.BindOptions[2].Proto != "h2" {
		t.Fatalf("bind #3: got %+v", fe.BindOptions[2])
	}
	if fe.TimeoutClientHS != 7*time.Second {
		t.Fatalf("timeout_client_hs: got %v, want timeout_client's 7s", fe.TimeoutClientHS)
	}
	if len(c.TLS.Certs()) != 2 {
		t.Fatalf("loaded %d certificates, want 2", len(c.TLS.Certs()))
	}
}
