package proxy

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/fulcrum-proxy/fulcrum/internal/testutil"
)

// runTool runs a client program with a deadline and returns its combined
// output.
func runTool(t *testing.T, stdin string, name string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	if err != nil && ctx.Err() != nil {
		t.Fatalf("%s timed out:\n%s", name, out)
	}
	return string(out)
}

// TestCurlSNI: curl, trusting the test CA, reaches two names on one TLS
// bind and gets each name's certificate, and the response.
func TestCurlSNI(t *testing.T) {
	curl := testutil.NeedTool(t, "curl", "curl")
	e := newTLSEnv(t)
	up := newUpstream(t, "s1")
	p := e.start(t, fmt.Sprintf(`
[[frontend]]
name = "www"
bind = ["127.0.0.1:0 ssl crt a.pem crt b.pem"]
default_backend = "web"
[[backend]]
name = "web"
[[backend.server]]
name = "s1"
address = "%s"
`, up.addr()), nil)
	port := p.Frontends[0].Addrs()[0].String()
	port = port[strings.LastIndexByte(port, ':')+1:]
	for _, c := range []struct{ host, subject string }{
		{"a.test", "subject: CN=a.test"},
		{"api.b.test", "subject: CN=b.test"},
	} {
		out := runTool(t, "", curl, "-sv", "--cacert", e.dir+"/ca.pem", "--resolve", c.host+":"+port+":127.0.0.1",
			"https://"+c.host+":"+port+"/")
		if !strings.Contains(out, c.subject) || !strings.Contains(out, "SSL certificate verify ok") || !strings.HasSuffix(out, "s1\n") {
			t.Fatalf("curl %s: want %q, verified, and the body s1; got:\n%s", c.host, c.subject, out)
		}
	}
}

// TestOpenSSLALPN: openssl s_client offering h2 and http/1.1 negotiates
// h2 on an http mode bind (fulcrum serves HTTP/2 there) and on a tcp mode
// bind, which passes it through.
func TestOpenSSLALPN(t *testing.T) {
	openssl := testutil.NeedTool(t, "openssl", "openssl")
	e := newTLSEnv(t)
	echo := tcpServer(t, echoConn)
	p := e.start(t, fmt.Sprintf(`
[[frontend]]
name = "www"
mode = "http"
bind = ["127.0.0.1:0 ssl crt a.pem crt b.pem alpn h2,http/1.1"]
[[frontend]]
name = "tcp"
mode = "tcp"
bind = ["127.0.0.1:0 ssl crt a.pem crt b.pem alpn h2,http/1.1"]
default_backend = "echo"
[[backend]]
name = "echo"
mode = "tcp"
[[backend.server]]
name = "e1"
address = "%s"
`, echo), nil)
	for i, want := range []string{"ALPN protocol: h2", "ALPN protocol: h2"} {
		addr := p.Frontends[i].Addrs()[0].String()
		out := runTool(t, "", openssl, "s_client", "-connect", addr, "-servername", "x.b.test",
			"-alpn", "h2,http/1.1", "-CAfile", e.dir+"/ca.pem", "-verify_return_error")
		if !strings.Contains(out, want) || !strings.Contains(out, "subject=CN = b.test") || !strings.Contains(out, "Verify return code: 0 (ok)") {
			t.Fatalf("%s: want %q, subject CN = b.test and verified; got:\n%s", p.Frontends[i].Name, want, out)
		}
	}
}
