package main

import (
	"context"
	"crypto/tls"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/fulcrum-proxy/fulcrum/conf"
	"github.com/fulcrum-proxy/fulcrum/internal/testcert"
	"github.com/fulcrum-proxy/fulcrum/proxy"
	"github.com/fulcrum-proxy/fulcrum/runtime"
	"github.com/rs/zerolog"
)

// TestCertUpdate: `cert update` replaces the certificate live and prints
// the new serial and expiry; `show ssl cert` and `cert show` print the
// certificates as a table with the days left; a file without a key is
// refused and the served certificate stays.
func TestCertUpdate(t *testing.T) {
	dir, err := os.MkdirTemp("", "fcert") // short: socket paths are limited
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	ca := testcert.NewCA(t, "Test CA", testcert.Options{})
	now := time.Now()
	testcert.Write(t, dir, "site.pem", ca.Server(t, testcert.Options{Serial: 0x11, NotAfter: now.Add(30*24*time.Hour + time.Hour)}, "www.test").PEM(true))
	next := ca.Server(t, testcert.Options{Serial: 0x22, NotAfter: now.Add(90*24*time.Hour + time.Hour)}, "www.test")
	nextFile := testcert.Write(t, dir, "next.pem", next.PEM(true))
	nokey := testcert.Write(t, dir, "nokey.pem", next.CertPEM)
	testcert.Write(t, dir, "fulcrum.toml", []byte(`
[[frontend]]
name = "www"
bind = ["127.0.0.1:0 ssl crt site.pem"]
`))
	c, err := conf.Load(filepath.Join(dir, "fulcrum.toml"))
	if err != nil {
		t.Fatal(err)
	}
	p, err := proxy.New(c, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		p.Shutdown(ctx)
	})
	api := runtime.New(p, zerolog.Nop(), runtime.Options{Version: "0.0.0-test"})
	t.Cleanup(func() { api.Close() })
	sock := filepath.Join(dir, "admin.sock")
	if err := api.Listen(runtime.Socket{Path: sock, Level: runtime.LevelAdmin}); err != nil {
		t.Fatal(err)
	}
	served := func() int64 {
		t.Helper()
		conn, err := tls.Dial("tcp", p.Frontends[0].Addrs()[0].String(), &tls.Config{RootCAs: ca.Pool(), ServerName: "www.test"})
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		return conn.ConnectionState().PeerCertificates[0].SerialNumber.Int64()
	}

	code, out, _ := ctl(t, "", "-s", sock, "show", "ssl", "cert")
	row := regexp.MustCompile(`site\.pem\s+│\s+Used\s+│\s+11\s+│\s+\w{3} [ \d]\d \d\d:\d\d:\d\d \d{4} GMT\s+│\s+30\s+│\s+/CN=www\.test`)
	if code != 0 || !row.MatchString(out) || !strings.Contains(strings.ToUpper(out), "DAYS LEFT") {
		t.Fatalf("show ssl cert: code %d, want a row for site.pem with 30 days left:\n%s", code, out)
	}

	code, _, errOut := ctl(t, "", "-s", sock, "cert", "update", "site.pem", nokey)
	if code != 1 || !strings.Contains(errOut, "The transaction must contain at least a certificate and a private key!") {
		t.Fatalf("update without a key: code %d, stderr:\n%s", code, errOut)
	}
	if got := served(); got != 0x11 {
		t.Fatalf("after a refused update: serial %x, want 11", got)
	}
	code, out, errOut = ctl(t, "", "-s", sock, "cert", "update", "site.pem", nextFile)
	if code != 0 || !regexp.MustCompile(`^site\.pem: committed, serial 22, notAfter .* GMT \(90 days\)\n$`).MatchString(out) {
		t.Fatalf("update: code %d, stdout %q, stderr %q", code, out, errOut)
	}
	if got := served(); got != 0x22 {
		t.Fatalf("after the update: serial %x, want 22", got)
	}
	code, out, _ = ctl(t, "", "-s", sock, "cert", "show")
	if code != 0 || !strings.Contains(out, "22") || !regexp.MustCompile(`│\s+90\s+│`).MatchString(out) {
		t.Fatalf("cert show: code %d:\n%s", code, out)
	}

	// On a fleet (here two sockets of the same process), every member
	// gets the file and reports, and `cert show` has an instance column.
	sock2 := filepath.Join(dir, "other.sock")
	if err := api.Listen(runtime.Socket{Path: sock2, Level: runtime.LevelAdmin}); err != nil {
		t.Fatal(err)
	}
	code, out, errOut = ctl(t, "", "-s", sock, "-s", sock2, "cert", "update", "site.pem", nextFile)
	if code != 0 || !regexp.MustCompile(`^admin\.sock: site\.pem: committed, serial 22, notAfter .* GMT \(90 days\)\nother\.sock: site\.pem: committed, serial 22, `).MatchString(out) {
		t.Fatalf("fleet update: code %d, stdout %q, stderr %q", code, out, errOut)
	}
	code, out, _ = ctl(t, "", "-s", sock, "-s", sock2, "cert", "show")
	fleetRow := `│\s+site\.pem\s+│\s+Used\s+│\s+22\s+│.*│\s+90\s+│`
	if code != 0 || !strings.Contains(strings.ToUpper(out), "INSTANCE") ||
		!regexp.MustCompile(`admin\.sock\s+`+fleetRow).MatchString(out) || !regexp.MustCompile(`other\.sock\s+`+fleetRow).MatchString(out) {
		t.Fatalf("fleet cert show: code %d:\n%s", code, out)
	}
}
