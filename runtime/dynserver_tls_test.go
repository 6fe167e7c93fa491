package runtime

import (
	"crypto/tls"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/fulcrum-proxy/fulcrum/conf"
	"github.com/fulcrum-proxy/fulcrum/internal/testcert"
	"github.com/fulcrum-proxy/fulcrum/proxy"
)

// addServerTLSDiffs are the commands of add-server-tls.txt whose reply
// differs from HAProxy 2.6's on purpose: fulcrum's added servers read
// their TLS keywords as the file's servers read their keys.
var addServerTLSDiffs = map[string]string{
	"add server web/t8 127.0.0.1:1 ssl":                               "without ca-file the system's roots verify, as for the file's servers; HAProxy 2.6 refuses",
	"add server tb/t17 127.0.0.1:1 ssl verify none sni req.hdr(host)": "an sni reading the request needs an http backend, as for the file's servers",
}

// TestHAProxyAddServerTLS replays HAProxy 2.6's transcript of add server
// with TLS and PROXY protocol keywords (add-server-tls.txt) against
// fulcrum on the same layout, reply by reply, except addServerTLSDiffs.
func TestHAProxyAddServerTLS(t *testing.T) {
	e := startEnv(t, addServerConfig)
	data, err := os.ReadFile("../testdata/runtime/haproxy/add-server-tls.txt")
	if err != nil {
		t.Fatal(err)
	}
	tr := parseTranscript(t, "\n"+goldenSep+string(data))
	compared := 0
	for _, s := range tr.steps {
		got := e.run(t, s.level, s.cmd)
		if _, ok := addServerTLSDiffs[s.cmd]; ok {
			continue
		}
		compared++
		if got != s.reply {
			t.Errorf("echo %q | socat ./run/admin.sock\ngot:\n%q\nHAProxy 2.6:\n%q", s.cmd, got, s.reply)
		}
	}
	if compared < 15 {
		t.Errorf("only %d replies compared", compared)
	}
	for cmd := range addServerTLSDiffs {
		if !strings.Contains(string(data), `"`+cmd+`"`) {
			t.Errorf("addServerTLSDiffs lists %q, which the transcript does not have", cmd)
		}
	}
	// What was added carries its keywords.
	s := e.p.Backend("web").Server("t15")
	if s == nil || !s.Conf.SSL || s.Conf.TLS == nil || s.Conf.TLS.SNIText != "str(www.test)" || s.Conf.SendProxy != 2 {
		t.Fatalf("web/t15: %+v", s)
	}
	// srv_use_ssl is 1 for a server with ssl (t8 is fulcrum's), as HAProxy 2.6 shows t15
	// (a check-ssl alone, as t20, does not set it).
	useSSL := map[string]string{}
	for _, l := range strings.Split(e.run(t, LevelAdmin, "show servers state web"), "\n") {
		if f := strings.Fields(l); len(f) == 25 {
			useSSL[f[3]] = f[20]
		}
	}
	if want := map[string]string{"s1": "0", "s2": "0", "t8": "1", "t15": "1", "t18": "1", "t19": "0", "t20": "0"}; !reflect.DeepEqual(useSSL, want) {
		t.Errorf("srv_use_ssl: got %v, want %v", useSSL, want)
	}
	for _, c := range []struct{ cmd, want string }{
		{"add server web/t8 127.0.0.1:1 ssl", "New server registered.\n\n"},
		{"add server tb/t17 127.0.0.1:1 ssl verify none sni req.hdr(host)",
			"error detected while parsing sni expression : 'req.hdr(host)' needs mode http (a tcp backend sees no HTTP request)\n\n"},
	} {
		e2 := startEnv(t, addServerConfig)
		if got := e2.run(t, LevelAdmin, c.cmd); got != c.want {
			t.Errorf("%s: got %q, want %q", c.cmd, got, c.want)
		}
	}
}

// startFileEnv writes text to dir/fulcrum.toml, loads it and starts the
// proxy and its Runtime API.
func startFileEnv(t *testing.T, dir, text string) *testEnv {
	t.Helper()
	path := filepath.Join(dir, "fulcrum.toml")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := conf.Load(path)
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	return startEnvConf(t, c)
}

// TestAddServerTLSSocket (issue 19, point 1) through the Runtime API: an
// added server with ssl, verify required, a ca-file relative to the
// configuration file's directory and sni str(www.test) serves requests
// over TLS once enabled, with that SNI; one whose CA did not sign the
// upstream's certificate answers 503. Nothing is added on an error.
func TestAddServerTLSSocket(t *testing.T) {
	dir, err := os.MkdirTemp("", "rt") // short: the sockets live there
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	ca := testcert.NewCA(t, "Test CA", testcert.Options{})
	other := testcert.NewCA(t, "Other CA", testcert.Options{})
	testcert.Write(t, dir, "certs/ca.pem", ca.PEM)
	testcert.Write(t, dir, "certs/other.pem", other.PEM)
	up := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "sni=%s", r.TLS.ServerName)
	}))
	up.TLS = &tls.Config{Certificates: []tls.Certificate{ca.Server(t, testcert.Options{}, "www.test").TLS()}}
	up.Config.ErrorLog = log.New(io.Discard, "", 0) // the rogue handshake's failure
	up.StartTLS()
	t.Cleanup(up.Close)
	e := startFileEnv(t, dir, `
[defaults]
retries = 0
[[frontend]]
name = "www"
bind = ["127.0.0.1:0"]
default_backend = "web"
[[backend]]
name = "web"
`)
	addr := up.Listener.Addr().String()
	for _, c := range []struct{ cmd, want string }{
		{"add server web/bad " + addr + " ssl ca-file ca.pem", "'ca-file' : unable to load ca.pem.\n\n"},
		{"add server web/good " + addr + " ssl verify required ca-file certs/ca.pem sni str(www.test)", "New server registered.\n\n"},
		{"enable server web/good", "\n"},
	} {
		if got := e.run(t, LevelAdmin, c.cmd); got != c.want {
			t.Fatalf("%s: got %q, want %q", c.cmd, got, c.want)
		}
	}
	if e.p.Backend("web").Server("bad") != nil {
		t.Fatal("web/bad was added despite its error")
	}
	get := func() (int, string) {
		c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
		resp, err := c.Get("http://" + e.p.Frontends[0].Addrs()[0].String() + "/")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := get(); code != 200 || body != "sni=www.test" {
		t.Fatalf("through web/good: %d %q", code, body)
	}
	for _, cmd := range []string{
		"disable server web/good",
		"add server web/rogue " + addr + " ssl ca-file certs/other.pem sni str(www.test) enabled",
	} {
		e.run(t, LevelAdmin, cmd)
	}
	if code, _ := get(); code != 503 {
		t.Fatalf("through web/rogue: got %d, want 503", code)
	}
	if got := e.p.Backend("web").Server("rogue").Counters.Econ.Load(); got != 1 {
		t.Errorf("web/rogue econ %d, want 1", got)
	}
}

// TestConfigDiffWritesBackTLS: the table config-diff writes for servers
// added with TLS and PROXY keywords loads as those servers, whatever the
// default_server gives.
func TestConfigDiffWritesBackTLS(t *testing.T) {
	dir, err := os.MkdirTemp("", "rt")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	ca := testcert.NewCA(t, "Test CA", testcert.Options{})
	testcert.Write(t, dir, "ca.pem", ca.PEM)
	testcert.Write(t, dir, "client.pem", ca.Client(t, testcert.Options{}, ca.Cert.Subject).PEM(true))
	text := `
[[frontend]]
name = "www"
bind = ["127.0.0.1:0"]
default_backend = "web"

[[backend]]
name = "web"

[backend.default_server]
ssl = true
verify = "none"
sni = "req.hdr(host)"
alpn = "http/1.1"
send_proxy = true

[[backend.server]]
name = "s1"
address = "127.0.0.1:18081"
`
	e := startFileEnv(t, dir, text)
	for _, cmd := range []string{
		"add server web/d1 127.0.0.1:9101",
		"add server web/d2 127.0.0.1:9102 ssl verify required ca-file ca.pem sni str(www.test) verifyhost www.test crt client.pem send-proxy-v2 proxy-v2-options authority,crc32c",
		"add server web/d3 127.0.0.1:9103 check check-ssl verify none check-send-proxy",
		"add server web/d4 127.0.0.1:9104 ssl alpn h2,http/1.1 send-proxy",
	} {
		if got := e.run(t, LevelAdmin, cmd); got != "New server registered.\n\n" {
			t.Fatalf("%s: %q", cmd, got)
		}
	}
	diff := e.run(t, LevelAdmin, "show config-diff")
	var tables []string
	for _, part := range strings.Split(diff, "[[backend.server]]\n")[1:] {
		table, _, _ := strings.Cut(part, "\n\n")
		tables = append(tables, "[[backend.server]]\n"+table+"\n")
	}
	if len(tables) != 4 {
		t.Fatalf("%d tables in\n%s", len(tables), diff)
	}
	if want := "[[backend.server]]\nname = \"d2\"\naddress = \"127.0.0.1:9102\"\ndisabled = true\n" +
		"verify = \"required\"\nca_file = \"ca.pem\"\nsni = \"str(www.test)\"\nverifyhost = \"www.test\"\n" +
		"alpn = \"\"\ncrt = \"client.pem\"\nsend_proxy_v2 = true\nproxy_v2_options = [\"authority\", \"crc32c\"]\n"; tables[1] != want {
		t.Errorf("d2's table:\n%s\nwant:\n%s", tables[1], want)
	}
	path := filepath.Join(dir, "back.toml")
	if err := os.WriteFile(path, []byte(text+"\n"+strings.Join(tables, "\n")), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := conf.Load(path)
	if err != nil {
		t.Fatalf("the tables do not load: %v\n%s", err, strings.Join(tables, "\n"))
	}
	b := e.p.Backend("web")
	for _, sc := range cfg.Backends[0].Servers[1:] {
		s := b.Server(sc.Name)
		want := *s.Conf
		want.Disabled = s.Admin() == proxy.AdminMaint
		got := *sc
		got.Line = 0
		// The loaded parts (pools, certificates, compiled sni) are
		// compared by presence, the rest as written.
		if (got.TLS == nil) != (want.TLS == nil) {
			t.Errorf("%s: TLS %v, want %v", sc.Name, got.TLS != nil, want.TLS != nil)
			continue
		}
		if got.TLS != nil {
			gt, wt := *got.TLS, *want.TLS
			if (gt.CAs == nil) != (wt.CAs == nil) || (gt.Cert == nil) != (wt.Cert == nil) || (gt.SNI == nil) != (wt.SNI == nil) {
				t.Errorf("%s: loaded parts differ: %+v, want %+v", sc.Name, gt, wt)
			}
			gt.CAs, wt.CAs, gt.Cert, wt.Cert, gt.SNI, wt.SNI = nil, nil, nil, nil, nil, nil
			got.TLS, want.TLS = &gt, &wt
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s written back:\n got %+v\nwant %+v", sc.Name, got, want)
		}
	}
}
