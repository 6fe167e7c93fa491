package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fulcrum-proxy/fulcrum/conf"
	"github.com/fulcrum-proxy/fulcrum/conf/haproxycfg"
	"github.com/fulcrum-proxy/fulcrum/internal/testcert"
	"github.com/fulcrum-proxy/fulcrum/proxy/peers"
)

// haproxyCfg is an haproxy.cfg with one line fulcrum runs differently
// (httpslog), one it has built in (splice-auto) and, with tls, one it does
// not run (a TLS server checked against a revocation list).
func haproxyCfg(tls bool) string {
	s := `global
    daemon
defaults
    mode http
    option splice-auto
    option httpslog
    timeout connect 5s
frontend www
    bind 127.0.0.1:0
    default_backend web
backend web
    server s1 127.0.0.1:9001 check
`
	if tls {
		s += "    server s2 127.0.0.1:9443 ssl verify none crl-file crl.pem\n"
	}
	return s
}

func TestImportCommand(t *testing.T) {
	in := writeFile(t, "haproxy.cfg", haproxyCfg(true))
	out := filepath.Join(t.TempDir(), "fulcrum.toml")
	var stdout, stderr bytes.Buffer
	if code := run([]string{"fulcrum", "import", in, "-o", out}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	if stdout.Len() != 0 {
		t.Errorf("stdout with -o: %q", stdout.String())
	}
	want := []string{
		in + `:2: daemon: ignored: fulcrum runs in the foreground: run it under a service manager (systemd)`,
		in + `:5: option splice-auto: built in: fulcrum splices large bodies and TCP bulk transfers by itself`,
		in + `:6: option httpslog: converted, differs: httpslog's TLS fields are not logged: the httplog format is used`,
		in + `:13: server: not supported: "crl-file crl.pem": certificate revocation lists: a revoked certificate would be accepted`,
		in + `: 4 lines noted, 1 of them not supported (yet); each is explained in a comment in ` + out,
	}
	if got := strings.Split(strings.TrimSpace(stderr.String()), "\n"); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("stderr:\n%s\nwant:\n%s", stderr.String(), strings.Join(want, "\n"))
	}
	toml, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(toml), "# server s2 127.0.0.1:9443 ssl verify none crl-file crl.pem") {
		t.Errorf("the line not converted is not kept as a comment:\n%s", toml)
	}
	stdout.Reset()
	stderr.Reset()
	if code := run([]string{"fulcrum", "check", "-c", out}, &stdout, &stderr); code != 0 || stdout.String() != "configuration is valid\n" {
		t.Errorf("check of the output: exit %d, %s%s", code, stdout.String(), stderr.String())
	}

	// A file with nothing to note says so.
	clean := writeFile(t, "clean.cfg", "frontend www\n    bind 127.0.0.1:8080\n    default_backend web\nbackend web\n    server s1 127.0.0.1:9001\n")
	stderr.Reset()
	if code := run([]string{"fulcrum", "import", clean, "-o", out}, &bytes.Buffer{}, &stderr); code != 0 || stderr.String() != clean+": every line converted into "+out+"\n" {
		t.Errorf("a clean file: exit %d, stderr %q", code, stderr.String())
	}

	// One line noted: "line", not "lines".
	one := writeFile(t, "one.cfg", "global\n    daemon\nfrontend www\n    bind 127.0.0.1:8080\n    default_backend web\nbackend web\n    server s1 127.0.0.1:9001\n")
	stderr.Reset()
	if code := run([]string{"fulcrum", "import", one, "-o", out}, &bytes.Buffer{}, &stderr); code != 0 ||
		!strings.HasSuffix(stderr.String(), one+": 1 line noted, 0 of them not supported (yet); each is explained in a comment in "+out+"\n") {
		t.Errorf("one line noted: exit %d, stderr %q", code, stderr.String())
	}

	// To stdout; --strict fails on the line not supported; usage errors exit 2.
	stdout.Reset()
	if code := run([]string{"fulcrum", "import", in}, &stdout, &bytes.Buffer{}); code != 0 || !strings.Contains(stdout.String(), `name = "s1"`) {
		t.Errorf("to stdout: exit %d, %q", code, stdout.String())
	}
	if code := run([]string{"fulcrum", "import", "--strict", in}, &bytes.Buffer{}, &bytes.Buffer{}); code != 1 {
		t.Errorf("--strict with a line not supported: exit %d, want 1", code)
	}
	stderr.Reset()
	if code := run([]string{"fulcrum", "import"}, &bytes.Buffer{}, &stderr); code != 2 || !strings.Contains(stderr.String(), "give one HAProxy configuration file") {
		t.Errorf("no file: exit %d, %q, want 2", code, stderr.String())
	}
}

// TestCheckHAProxyFile: check recognises an haproxy.cfg by its content; a
// line fulcrum would not run is an error, the others are listed.
func TestCheckHAProxyFile(t *testing.T) {
	bad := writeFile(t, "lb.conf", haproxyCfg(true))
	var stdout, stderr bytes.Buffer
	code := run([]string{"fulcrum", "check", "-c", bad}, &stdout, &stderr)
	// Every note in line order, the error among them.
	want := bad + `:2: daemon: ignored: fulcrum runs in the foreground: run it under a service manager (systemd)
` + bad + `:5: option splice-auto: built in: fulcrum splices large bodies and TCP bulk transfers by itself
` + bad + `:6: option httpslog: converted, differs: httpslog's TLS fields are not logged: the httplog format is used
` + bad + `:13: server: not supported: "crl-file crl.pem": certificate revocation lists: a revoked certificate would be accepted
`
	if code != 1 || stdout.Len() != 0 || stderr.String() != want {
		t.Errorf("exit %d, stdout %q, stderr:\n%s\nwant exit 1 and:\n%s", code, stdout.String(), stderr.String(), want)
	}
	good := writeFile(t, "haproxy.cfg", haproxyCfg(false))
	stdout.Reset()
	stderr.Reset()
	if code := run([]string{"fulcrum", "check", "-c", good}, &stdout, &stderr); code != 0 || stdout.String() != "configuration is valid\n" {
		t.Errorf("valid haproxy.cfg: exit %d, stdout %q, stderr %q", code, stdout.String(), stderr.String())
	}
	// loadConfig is what run and reloads use: the model is the import's.
	cfg, err := loadConfig(good, "")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.File != good || cfg.Backends[0].Servers[0].Name != "s1" || !cfg.Backends[0].Servers[0].Check || cfg.Backends[0].TimeoutConnect != 5*time.Second {
		t.Errorf("model of the haproxy.cfg: %+v", cfg.Backends[0])
	}
	var errs *conf.Errors
	if _, err := loadConfig(bad, ""); err == nil || !errorsAs(err, &errs) || len(errs.List) != 1 || errs.List[0].Line != 13 {
		t.Errorf("loadConfig of a file with a line not supported: %v", err)
	}
}

func errorsAs(err error, target **conf.Errors) bool {
	return errors.As(err, target)
}

// TestDefaultConfigFile: without -c, run and check read the default file
// when it exists, and run says which file it read; without it they say
// how to give one (exit 2).
func TestDefaultConfigFile(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "none.toml")
	var stderr bytes.Buffer
	if code := runWith([]string{"fulcrum", "check"}, &bytes.Buffer{}, &stderr, missing); code != 2 || !strings.Contains(stderr.String(), "give one with -c FILE (without -c, "+missing+" is read when it exists)") {
		t.Errorf("check without a file: exit %d, %q", code, stderr.String())
	}
	path := writeFile(t, "fulcrum.toml", `
[[frontend]]
name = "www"
bind = ["127.0.0.1:0"]
`)
	var stdout bytes.Buffer
	if code := runWith([]string{"fulcrum", "check"}, &stdout, &bytes.Buffer{}, path); code != 0 || stdout.String() != "configuration is valid\n" {
		t.Errorf("check of the default file: exit %d, %q", code, stdout.String())
	}

	cmd := exec.Command(os.Args[0], "run")
	cmd.Env = append(os.Environ(), "FULCRUM_TEST_MAIN=1", "FULCRUM_TEST_DEFAULT_CONFIG="+path)
	pipe, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cmd.Process.Kill()
		cmd.Wait()
	}()
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pipe)
		for sc.Scan() {
			var m map[string]any
			if json.Unmarshal(sc.Bytes(), &m) == nil && m["message"] == "configuration read" {
				found <- m["file"].(string)
			}
		}
		close(found)
	}()
	select {
	case f := <-found:
		if f != path {
			t.Errorf("run logged that it read %q, want %q", f, path)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("run did not say which configuration it read")
	}
}

// TestCheckHAProxyPeersAndWarnings: check -c haproxy.cfg treats a peers
// section without this instance as HAProxy 2.6 does (removed, noted; the
// file is valid), keeps it with --localpeer naming a member, and prints
// the check's warnings once, at the HAProxy file's line.
func TestCheckHAProxyPeersAndWarnings(t *testing.T) {
	ca := testcert.NewCA(t, "test CA", testcert.Options{})
	crt := testcert.Write(t, t.TempDir(), "site.pem", ca.Server(t, testcert.Options{}, "localhost").PEM(true))
	cfg := writeFile(t, "lb.cfg", `peers mesh
    peer fulcrum-test-a 127.0.0.1:10001
    peer fulcrum-test-b 127.0.0.1:10002
frontend www
    bind 127.0.0.1:0 ssl crt `+crt+` ciphers ECDHE-RSA-AES128-GCM-SHA256:FOO-BAR
    default_backend app
backend app
    stick-table type ip size 1k peers mesh
    stick on src
    server s1 127.0.0.1:9001
`)
	var stdout, stderr bytes.Buffer
	code := run([]string{"fulcrum", "check", "-c", cfg}, &stdout, &stderr)
	want := cfg + `:1: peers: ignored: HAProxy 2.6 removes this section too: no peer is named "` + peers.LocalPeer() + `", this instance's name (-L/--localpeer, else the global localpeer, else the host name); the tables naming it are not shared
` + cfg + `:5: bind: converted, differs: fulcrum check: ciphers: cipher FOO-BAR is not available in crypto/tls, skipped
` + cfg + `:8: stick-table: ignored: peers "mesh" is removed (line 1): this table is not shared
`
	if code != 0 || stdout.String() != "configuration is valid\n" || stderr.String() != want {
		t.Errorf("exit %d, stdout %q, stderr:\n%s\nwant exit 0 and:\n%s", code, stdout.String(), stderr.String(), want)
	}
	stdout.Reset()
	stderr.Reset()
	code = run([]string{"fulcrum", "check", "-c", cfg, "--localpeer", "fulcrum-test-b"}, &stdout, &stderr)
	want = cfg + `:5: bind: converted, differs: fulcrum check: ciphers: cipher FOO-BAR is not available in crypto/tls, skipped
`
	if code != 0 || stdout.String() != "configuration is valid\n" || stderr.String() != want {
		t.Errorf("--localpeer fulcrum-test-b: exit %d, stdout %q, stderr:\n%s\nwant exit 0 and:\n%s", code, stdout.String(), stderr.String(), want)
	}
	// run uses the same model: the section is kept for its member.
	c, err := loadConfig(cfg, "fulcrum-test-b")
	if err != nil || len(c.Peers) != 1 || c.Warnings[0].Line != 5 {
		t.Errorf("loadConfig with --localpeer: %v, peers %d, warnings %v", err, len(c.Peers), c.Warnings)
	}
}

// TestNoteLines: the summary counts lines, not notes: a line with two
// notes is one line, refused when either note is.
func TestNoteLines(t *testing.T) {
	notes := []haproxycfg.Note{
		{Line: 3, Kind: haproxycfg.Unsupported}, {Line: 3, Kind: haproxycfg.Differs},
		{Line: 7, Kind: haproxycfg.Ignored}, {Line: 9, Kind: haproxycfg.Differs}, {Line: 9, Kind: haproxycfg.NotYet},
	}
	if noted, refused := noteLines(notes); noted != 3 || refused != 2 {
		t.Errorf("noteLines = %d, %d; want 3, 2", noted, refused)
	}
}
