package runtime

import (
	"bytes"
	"context"
	"crypto/x509/pkix"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"text/template"
	"time"

	"github.com/fulcrum-proxy/fulcrum/conf"
	"github.com/fulcrum-proxy/fulcrum/internal/testcert"
	"github.com/fulcrum-proxy/fulcrum/proxy"
	"github.com/rs/zerolog"
)

// The certificate commands' golden transcript, testdata/runtime/ssl/: the
// same certificates (certs/, list.txt, payload/) served by HAProxy 2.6
// (haproxy.cfg.tmpl) and by fulcrum (fulcrum.toml), the same commands, and
// HAProxy's replies in transcript.txt. TestSSLGoldenHAProxy checks that
// HAProxy still gives them (and, with -capture, makes new certificates and
// captures them); TestSSLGolden that fulcrum gives them byte for byte,
// but for sslDeviations.

var capture = flag.Bool("capture", false, "make new certificates in ../testdata/runtime/ssl and capture transcript.txt from HAProxy 2.6")

const sslDir = "../testdata/runtime/ssl"

// sslSteps are the commands of the transcript, in order; a step with a
// payload file sends it after " <<", one with a payload line sends that.
var sslSteps = []struct{ cmd, file, line string }{
	{cmd: "show ssl cert"},
	{cmd: "show ssl cert certs/a.pem"},
	{cmd: "show ssl cert certs/b.pem"},
	{cmd: "show ssl cert nope.pem"},
	{cmd: "show ssl crt-list"},
	{cmd: "show ssl crt-list list.txt"},
	{cmd: "show ssl crt-list -n list.txt"},
	{cmd: "show ssl crt-list certs/"},
	{cmd: "show ssl crt-list -n"},
	{cmd: "show ssl crt-list nolist.txt"},
	{cmd: "set ssl cert certs/a.pem"},
	{cmd: "set ssl cert certs/a.pem", file: "payload/garbage.txt"},
	{cmd: "set ssl cert certs/a.pem", file: "payload/a2.crt"},
	{cmd: "show ssl cert"},
	{cmd: "show ssl cert *certs/a.pem"},
	{cmd: "commit ssl cert certs/a.pem"},
	{cmd: "set ssl cert certs/a.pem", file: "payload/mismatch.pem"},
	{cmd: "commit ssl cert certs/a.pem"},
	{cmd: "set ssl cert certs/a.pem", file: "payload/a2.pem"},
	{cmd: "abort ssl cert certs/b.pem"},
	{cmd: "commit ssl cert certs/b.pem"},
	{cmd: "commit ssl cert certs/a.pem"},
	{cmd: "show ssl cert certs/a.pem"},
	{cmd: "commit ssl cert certs/a.pem"},
	{cmd: "abort ssl cert certs/a.pem"},
	{cmd: "set ssl cert certs/b.pem", file: "certs/b.pem"},
	{cmd: "abort ssl cert certs/b.pem"},
	{cmd: "set ssl cert nope.pem", file: "certs/b.pem"},
	{cmd: "new ssl cert certs/new.pem"},
	{cmd: "new ssl cert certs/new.pem"},
	{cmd: "show ssl cert certs/new.pem"},
	{cmd: "add ssl crt-list list.txt certs/new.pem"},
	{cmd: "set ssl cert certs/new.pem", file: "payload/new.pem"},
	{cmd: "commit ssl cert certs/new.pem"},
	{cmd: "show ssl cert certs/new.pem"},
	{cmd: "add ssl crt-list list.txt", line: "certs/new.pem [alpn http/1.1 ssl-min-ver TLSv1.2] new.example.com *.new.example.com"},
	{cmd: "add ssl crt-list list.txt", line: "certs/new.pem [bogus]"},
	{cmd: "show ssl crt-list -n list.txt"},
	{cmd: "del ssl cert certs/new.pem"},
	{cmd: "del ssl cert nope.pem"},
	{cmd: "add ssl crt-list list.txt certs/b.pem"},
	{cmd: "add ssl crt-list certs other/b.pem"},
	{cmd: "add ssl crt-list certs certs/b.pem"},
	{cmd: "add ssl crt-list nolist.txt certs/b.pem"},
	{cmd: "del ssl crt-list list.txt certs/b.pem"},
	{cmd: "del ssl crt-list list.txt certs/b.pem:9"},
	{cmd: "del ssl crt-list list.txt certs/b.pem:x"},
	{cmd: "del ssl crt-list list.txt certs/b.pem:3"},
	{cmd: "del ssl crt-list list.txt certs/zzz.pem"},
	{cmd: "del ssl crt-list nolist.txt certs/a.pem"},
	{cmd: "del ssl crt-list certs certs/a.pem"},
	{cmd: "del ssl crt-list list.txt certs/new.pem"},
	{cmd: "show ssl crt-list -n list.txt"},
	{cmd: "show ssl cert certs/new.pem"},
	{cmd: "del ssl cert certs/new.pem"},
	{cmd: "show ssl cert"},
	{cmd: "commit ssl cert"},
	{cmd: "abort ssl cert"},
	{cmd: "new ssl cert"},
	{cmd: "del ssl cert"},
	{cmd: "del ssl crt-list list.txt"},
	{cmd: "add ssl crt-list list.txt"},
}

// sslDeviations are fulcrum's replies where they depart from HAProxy 2.6's
// on purpose: the transform turns HAProxy's reply into fulcrum's.
var sslDeviations = []struct {
	why string
	fix func(cmd, reply string) string
}{
	{"2.6 prints a NUL byte after an alpn value (dump_crtlist_sslconf)", func(_, r string) string {
		return strings.ReplaceAll(r, "\x00", "")
	}},
	{"the default certificate's bind is named by its own configuration's file and line", func(_, r string) string {
		return regexp.MustCompile(`\t- \S+:\d+\n`).ReplaceAllString(r, "\t- CONFIG\n")
	}},
}

// sslTranscriptLine introduces a step in transcript.txt.
func sslStepLine(i int) string {
	s := sslSteps[i]
	switch {
	case s.file != "":
		return fmt.Sprintf("$ (echo \"%s <<\"; cat %s; echo) | socat stdio ./run/admin.sock\n", s.cmd, s.file)
	case s.line != "":
		return fmt.Sprintf("$ (echo \"%s <<\"; echo \"%s\"; echo) | socat stdio ./run/admin.sock\n", s.cmd, s.line)
	}
	return fmt.Sprintf("$ echo \"%s\" | socat stdio ./run/admin.sock\n", s.cmd)
}

// sslRaw is what the client sends for step i.
func sslRaw(t *testing.T, i int) string {
	s := sslSteps[i]
	switch {
	case s.file != "":
		data, err := os.ReadFile(filepath.Join(sslDir, s.file))
		if err != nil {
			t.Fatal(err)
		}
		return s.cmd + " <<\n" + string(data) + "\n"
	case s.line != "":
		return s.cmd + " <<\n" + s.line + "\n\n"
	}
	return s.cmd + "\n"
}

// readSSLTranscript returns the replies of transcript.txt, by step.
func readSSLTranscript(t *testing.T) []string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(sslDir, "transcript.txt"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	var replies []string
	for i := range sslSteps {
		head := sslStepLine(i)
		if !strings.HasPrefix(text, head) {
			t.Fatalf("transcript.txt: step %d: want %q, got %.80q", i+1, head, text)
		}
		text = text[len(head):]
		end := len(text)
		if i+1 < len(sslSteps) {
			end = strings.Index(text, sslStepLine(i+1))
			if end < 0 {
				t.Fatalf("transcript.txt: no step %d", i+2)
			}
		}
		replies = append(replies, text[:end])
		text = text[end:]
	}
	return replies
}

// runSSLSteps runs every step on the socket and returns the replies.
func runSSLSteps(t *testing.T, sock string) []string {
	var out []string
	for i := range sslSteps {
		out = append(out, dialRun(t, "unix", sock, sslRaw(t, i)))
	}
	return out
}

// TestSSLGolden: fulcrum's replies to the certificate commands are
// HAProxy 2.6's (transcript.txt), but for sslDeviations.
func TestSSLGolden(t *testing.T) {
	want := readSSLTranscript(t)
	dir := copySSLDir(t)
	c, err := conf.Load(filepath.Join(dir, "fulcrum.toml"))
	if err != nil {
		t.Fatal(err)
	}
	e := startEnvConf(t, c)
	got := runSSLSteps(t, e.socks[LevelAdmin])
	for i := range sslSteps {
		w := want[i]
		for _, d := range sslDeviations {
			w = d.fix(sslSteps[i].cmd, w)
		}
		g := sslDeviations[1].fix(sslSteps[i].cmd, got[i])
		if g != w {
			t.Errorf("step %d: %s\ngot:\n%s\nwant:\n%s", i+1, strings.TrimSuffix(sslStepLine(i), "\n"), g, w)
		}
	}
}

// TestSSLGoldenHAProxy: HAProxy 2.6 with the same certificates gives the
// replies of transcript.txt. With -capture, new certificates are made
// first and transcript.txt is written from HAProxy's replies.
func TestSSLGoldenHAProxy(t *testing.T) {
	haproxy := needTool(t, "haproxy", "haproxy")
	if *capture {
		makeSSLFixtures(t)
	}
	dir := copySSLDir(t)
	sock := startHAProxy(t, haproxy, dir)
	got := runSSLSteps(t, sock)
	if *capture {
		var b strings.Builder
		for i := range sslSteps {
			b.WriteString(sslStepLine(i))
			b.WriteString(got[i])
		}
		if err := os.WriteFile(filepath.Join(sslDir, "transcript.txt"), []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want := readSSLTranscript(t)
	for i := range sslSteps {
		if got[i] != want[i] {
			t.Errorf("step %d: %s\nHAProxy now:\n%s\ntranscript.txt:\n%s", i+1, strings.TrimSuffix(sslStepLine(i), "\n"), got[i], want[i])
		}
	}
}

// copySSLDir copies the fixture directory to a short temporary one (Unix
// socket paths are limited to 107 bytes) and returns it.
func copySSLDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "ssl")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.CopyFS(dir, os.DirFS(sslDir)); err != nil {
		t.Fatal(err)
	}
	return dir
}

// startEnvConf starts a proxy from a loaded configuration with the
// Runtime API on an admin socket (in c's directory) and returns it.
func startEnvConf(t *testing.T, c *conf.Config) *testEnv {
	t.Helper()
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
	dir := filepath.Dir(c.File)
	e := &testEnv{p: p, dir: dir, socks: map[Level]string{}}
	e.api = New(p, zerolog.Nop(), Options{Version: "0.0.0-test"})
	t.Cleanup(func() { e.api.Close() })
	for _, l := range []Level{LevelAdmin, LevelOperator, LevelUser} {
		path := filepath.Join(dir, l.String()+".sock")
		if err := e.api.Listen(Socket{Path: path, Level: l}); err != nil {
			t.Fatal(err)
		}
		e.socks[l] = path
	}
	return e
}

// startHAProxy runs haproxy on dir's haproxy.cfg.tmpl until the end of the
// test and returns its admin socket.
func startHAProxy(t *testing.T, haproxy, dir string) string {
	t.Helper()
	sock := filepath.Join(dir, "haproxy.sock")
	var cfg bytes.Buffer
	tmpl := template.Must(template.ParseFiles(filepath.Join(dir, "haproxy.cfg.tmpl")))
	if err := tmpl.Execute(&cfg, map[string]string{"Sock": sock, "Dir": dir}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "haproxy.cfg"), cfg.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	cmd := exec.Command(haproxy, "-db", "-f", "haproxy.cfg")
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-exited
	})
	deadline := time.Now().Add(10 * time.Second)
	for {
		if c, err := net.Dial("unix", sock); err == nil {
			c.Close()
			return sock
		}
		select {
		case <-exited:
			t.Fatalf("haproxy exited:\n%s", out.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("haproxy did not open %s:\n%s", sock, out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// makeSSLFixtures writes new certificates to testdata/runtime/ssl: an
// ECDSA one with a chain and a wildcard name (certs/a.pem), an RSA 2048 one
// without a chain (certs/b.pem), their replacements and broken payloads.
// Dates and serials are fixed; keys are new each time.
func makeSSLFixtures(t *testing.T) {
	t.Helper()
	nb := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	na := time.Date(2045, 1, 1, 0, 0, 0, 0, time.UTC)
	ca := testcert.NewCA(t, "Test CA", testcert.Options{Serial: 1, NotBefore: nb, NotAfter: na})
	a := ca.Server(t, testcert.Options{Serial: 0x1234, NotBefore: nb, NotAfter: na}, "a.example.com", "*.a.example.com")
	b := ca.Server(t, testcert.Options{Serial: 5, NotBefore: nb, NotAfter: na, Key: testcert.RSA,
		Subject: &pkix.Name{CommonName: "b.example.com", Organization: []string{"Fulcrum"}}}, "b.example.com")
	a2 := ca.Server(t, testcert.Options{Serial: 0x99, NotBefore: nb, NotAfter: na.AddDate(0, 6, 0)}, "a.example.com", "*.a.example.com")
	n := ca.Server(t, testcert.Options{Serial: 0x4242, NotBefore: nb, NotAfter: na}, "new.example.com")
	files := map[string][]byte{
		"certs/a.pem":          a.PEM(true),
		"certs/b.pem":          b.PEM(false),
		"payload/a2.pem":       a2.PEM(true),
		"payload/a2.crt":       a2.CertPEM,
		"payload/mismatch.pem": append(append([]byte{}, a2.CertPEM...), b.KeyPEM...),
		"payload/new.pem":      n.PEM(true),
		"payload/garbage.txt":  []byte("garbage\n"),
		"list.txt":             []byte("certs/a.pem [alpn h2 ssl-min-ver TLSv1.2] a.example.com !x.a.example.com\n# a comment\n\ncerts/b.pem\n"),
	}
	for name, data := range files {
		testcert.Write(t, sslDir, name, data)
	}
}

var _ = io.EOF
