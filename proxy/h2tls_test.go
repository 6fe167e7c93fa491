package proxy

import (
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/http2"

	"github.com/fulcrum-proxy/fulcrum/internal/testutil"
)

// TestH2OverTLS: an ssl bind with "alpn h2,http/1.1" speaks HTTP/2 to
// the clients whose ALPN chose h2 (curl --http2, Go's HTTP/2 transport)
// and HTTP/1.1 to the others; a bind with "ssl ... proto h2" speaks
// HTTP/2 whatever ALPN says.
func TestH2OverTLS(t *testing.T) {
	curl := testutil.NeedTool(t, "curl", "curl")
	e := newTLSEnv(t)
	up := newUpstream(t, "s1")
	var logs testutil.SyncBuffer
	p := e.start(t, fmt.Sprintf(`
[[frontend]]
name = "www"
bind = ["127.0.0.1:0 ssl crt a.pem alpn h2,http/1.1", "127.0.0.1:0 ssl crt a.pem proto h2"]
default_backend = "web"
[[backend]]
name = "web"
[[backend.server]]
name = "s1"
address = %q
`, up.addr()), &logs)
	addrs := p.Frontends[0].Addrs()
	alpnAddr, forcedAddr := addrs[0].String(), addrs[1].String()
	_, port, _ := net.SplitHostPort(alpnAddr)

	out, err := exec.Command(curl, "-sS", "--http2", "--cacert", e.dir+"/ca.pem", "--resolve", "a.test:"+port+":127.0.0.1",
		"-o", "-", "-w", "%{http_version}", "https://a.test:"+port+"/curl").CombinedOutput()
	if err != nil || string(out) != "s1\n2" {
		t.Errorf("curl --http2: got %q, %v; want the body and HTTP/2", out, err)
	}
	out, err = exec.Command(curl, "-sS", "--http1.1", "--cacert", e.dir+"/ca.pem", "--resolve", "a.test:"+port+":127.0.0.1",
		"-o", "-", "-w", "%{http_version}", "https://a.test:"+port+"/h1").CombinedOutput()
	if err != nil || string(out) != "s1\n1.1" {
		t.Errorf("curl --http1.1: got %q, %v; want the body and HTTP/1.1", out, err)
	}
	// Go's HTTP/2 transport, which offers only h2.
	tr := &http2.Transport{TLSClientConfig: e.clientTLS("a.test")}
	defer tr.CloseIdleConnections()
	req, _ := http.NewRequest("GET", "https://"+alpnAddr+"/go", nil)
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatalf("Go h2 client: %v", err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.ProtoMajor != 2 || string(b) != "s1\n" {
		t.Errorf("Go h2 client: got %s %q", resp.Proto, b)
	}
	// proto h2 without ALPN: a TLS client that negotiates nothing speaks
	// HTTP/2 all the same.
	c, err := tls.Dial("tcp", forcedAddr, e.clientTLS("a.test"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	io.WriteString(c, http2.ClientPreface)
	fr := http2.NewFramer(c, c)
	fr.WriteSettings()
	if f, err := fr.ReadFrame(); err != nil {
		t.Fatalf("no SETTINGS: %v", err)
	} else if _, ok := f.(*http2.SettingsFrame); !ok {
		t.Errorf("first frame: got %v, want SETTINGS", f)
	}
	waitFor(t, 5*time.Second, "3 log lines", func() bool { return strings.Count(logs.String(), `"termination_state"`) == 3 })
	for _, want := range []string{`"request":"GET /curl HTTP/2.0"`, `"request":"GET /h1 HTTP/1.1"`, `"request":"GET /go HTTP/2.0"`} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("log lacks %s", want)
		}
	}
}
