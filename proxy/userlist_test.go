package proxy

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/fulcrum-proxy/fulcrum/internal/testutil"
)

// authConfig is configuration.txt's userlist example behind HAProxy's
// usual pair of rules; the server echoes the user http_auth_group found.
const authConfig = `
[[userlist]]
name = "L1"
group = [{ name = "G1", users = ["tiger", "scott"] }, { name = "G2", users = ["xdb", "scott"] }]
user = [
  # openssl passwd -6 -salt saltsalt tigerpass
  { name = "tiger", password = "$6$saltsalt$sP4gWhG2benTRotkePXxG3jnAX6.Lvzhxt.HtL67bNhPQj010ZdsT6.F2ecCt6SWsAj9KzcWW01lJyOsR9h7x0" },
  { name = "scott", insecure_password = "elgato" },
  { name = "xdb", insecure_password = "hello" },
]

[[frontend]]
name = "www"
bind = ["127.0.0.1:0"%s]
default_backend = "web"
acl = { auth_ok = "http_auth_group(L1) G1", any_ok = "http_auth(L1)" }
http_request = [
  "auth realm Secret\\ Zone unless any_ok",
  "deny unless auth_ok",
  "set-header X-User %%[http_auth_group(L1)]",
]

[[backend]]
name = "web"
[[backend.server]]
name = "w1"
address = "%s"
`

// TestHTTPRequestAuth: http_request auth answers HAProxy 2.6's 401 byte
// for byte (testdata/auth401.http, recorded from HAProxy 2.6.12 with the
// same userlist and rules) and keeps the connection; valid credentials of
// a G1 user reach the server, those of a user outside G1 are denied.
func TestHTTPRequestAuth(t *testing.T) {
	web := newUpstream(t, "web")
	web.handler = func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "user=%s", r.Header.Get("X-User"))
	}
	cfg := loadConfig(t, t.TempDir(), fmt.Sprintf(authConfig, "", web.addr()))
	p, addr := startProxy(t, cfg)
	want, err := os.ReadFile("testdata/auth401.http")
	if err != nil {
		t.Fatal(err)
	}
	rc := dialRaw(t, addr)
	rc.c.SetDeadline(time.Now().Add(10 * time.Second))
	io.WriteString(rc.c, "GET / HTTP/1.1\r\nHost: h\r\n\r\n")
	got := make([]byte, len(want))
	if _, err := io.ReadFull(rc.br, got); err != nil || !bytes.Equal(got, want) {
		t.Fatalf("401: got %q (%v)\nwant %q", got, err, want)
	}
	auth := func(user, pass string) string {
		return fmt.Sprintf("GET / HTTP/1.1\r\nHost: h\r\nAuthorization: Basic %s\r\n\r\n", base64.StdEncoding.EncodeToString([]byte(user+":"+pass)))
	}
	// Same connection: it stayed open, as HAProxy keeps it.
	for _, c := range []struct {
		user, pass string
		status     int
		body       string
	}{
		{"scott", "elgato", 200, "user=scott"},
		{"tiger", "tigerpass", 200, "user=tiger"},
		{"tiger", "tigerpass", 200, "user=tiger"},
		{"tiger", "nope", 401, errorPage(401)},
		{"xdb", "hello", 403, errorPage(403)},
	} {
		resp := rc.do(t, auth(c.user, c.pass))
		if resp.StatusCode != c.status || bodyOf(resp) != c.body {
			t.Errorf("%s:%s: %d, want %d %q", c.user, c.pass, resp.StatusCode, c.status, c.body)
		}
	}
	fe := p.Frontend("www")
	if got := fe.Counters.Dreq.Load(); got != 1 {
		t.Errorf("frontend dreq %d, want 1 (the 403; a 401 is not a deny)", got)
	}
	if got := web.requests.Load(); got != 3 {
		t.Errorf("server requests %d, want 3", got)
	}

	// curl, as an operator tries it.
	curl := testutil.NeedTool(t, "curl", "curl")
	out, err := exec.Command(curl, "-s", "-i", "-u", "scott:elgato", "http://"+addr+"/").Output()
	if err != nil || !strings.HasSuffix(string(out), "user=scott") {
		t.Errorf("curl -u scott:elgato: %q, %v", out, err)
	}
	out, err = exec.Command(curl, "-s", "-o", "/dev/null", "-w", "%{http_code} %header{www-authenticate}", "http://"+addr+"/").Output()
	if err != nil || string(out) != `401 Basic realm="Secret Zone"` {
		t.Errorf("curl without credentials: %q, %v", out, err)
	}
}

// TestHTTPRequestAuthH2: an HTTP/2 client gets the same challenge.
func TestHTTPRequestAuthH2(t *testing.T) {
	web := newUpstream(t, "web")
	web.handler = func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "user=%s", r.Header.Get("X-User"))
	}
	cfg := loadConfig(t, t.TempDir(), fmt.Sprintf(authConfig, `, "127.0.0.1:0 proto h2"`, web.addr()))
	p, _ := startProxy(t, cfg)
	addr := p.Frontends[0].Addrs()[1].String()
	c := &http.Client{Transport: h2cTransport(), Timeout: 10 * time.Second}
	resp, err := c.Get("http://" + addr + "/")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 401 || resp.Header.Get("Www-Authenticate") != `Basic realm="Secret Zone"` || string(body) != errorPage(401) {
		t.Errorf("h2 without credentials: %d %q %q", resp.StatusCode, resp.Header, body)
	}
	req, _ := http.NewRequest("GET", "http://"+addr+"/", nil)
	req.SetBasicAuth("scott", "elgato")
	resp, err = c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(body) != "user=scott" {
		t.Errorf("h2 with credentials: %d %q", resp.StatusCode, body)
	}
}
