package proxy

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/fulcrum-proxy/fulcrum/internal/testutil"
)

// rawExchange writes raw on c and reads one response; it returns the
// status line and the header lines ("name: value", in order, lower-case
// names as sent), and the body.
func rawExchange(t *testing.T, br *bufio.Reader, c net.Conn, raw string) (status string, hdrs []string, body string) {
	t.Helper()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c, raw); err != nil {
		t.Fatal(err)
	}
	line, err := br.ReadString('\n')
	if err != nil {
		t.Fatalf("status line: %v", err)
	}
	status = strings.TrimRight(line, "\r\n")
	n := 0
	for {
		l, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("head: %v", err)
		}
		l = strings.TrimRight(l, "\r\n")
		if l == "" {
			break
		}
		name, value, _ := strings.Cut(l, ": ")
		if strings.EqualFold(name, "content-length") {
			fmt.Sscan(value, &n)
		}
		if strings.EqualFold(name, "date") {
			continue
		}
		hdrs = append(hdrs, strings.ToLower(name)+": "+value)
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(br, b); err != nil {
		t.Fatalf("body: %v", err)
	}
	return status, hdrs, string(b)
}

// TestHTTPResponseRules: the backend's http_response rules run before the
// frontend's, edit the head the client gets (status line included), and a
// deny replaces the response with its page, counts dresp on the frontend,
// the backend and the server, logs PH with Tr -1 and keeps the client
// connection, as HAProxy 2.6 does (checked on loopback with the same rules).
func TestHTTPResponseRules(t *testing.T) {
	up := newUpstream(t, "web")
	up.handler = func(w http.ResponseWriter, r *http.Request) {
		w.Header()["X-Secret"] = []string{"s3", "s4"}
		w.Header().Set("X-Path", r.URL.Path)
		io.WriteString(w, "hello\n")
	}
	logs := &testutil.SyncBuffer{}
	e := newTLSEnv(t)
	p := e.start(t, fmt.Sprintf(`
[[frontend]]
name = "www"
bind = ["127.0.0.1:0"]
default_backend = "web"
http_response = [
  "add-header X-Order frontend",
  "deny if { res.hdr(x-path) /deny }",
  "deny deny_status 403 if { res.hdr(x-path) /deny403 }",
]
[[backend]]
name = "web"
http_response = [
  "add-header X-Order backend",
  "del-header X-Secret",
  "set-header X-Status %%[status]",
  "set-status 201 if { res.hdr(x-path) /created }",
  "set-status 404 reason \"Nope Nope\" if { res.hdr(x-path) /nope }",
  "add-header X-Status2 %%[status]",
]
[[backend.server]]
name = "s1"
address = "%s"
`, up.addr()), logs)
	c, err := net.Dial("tcp", p.Frontends[0].Addrs()[0].String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	br := bufio.NewReader(c)
	common := "content-length: 6|content-type: text/plain; charset=utf-8" // after X-Path, as Go writes them
	tests := []struct {
		path, status, hdrs, body string
	}{
		{"/created", "HTTP/1.1 201 Created", "x-path: /created|" + common + "|x-order: backend|x-status: 200|x-status2: 201|x-order: frontend", "hello\n"},
		{"/nope", "HTTP/1.1 404 Nope Nope", "x-path: /nope|" + common + "|x-order: backend|x-status: 200|x-status2: 404|x-order: frontend", "hello\n"},
		{"/deny", "HTTP/1.1 502 Bad Gateway", "content-length: 107|cache-control: no-cache|content-type: text/html", errorPage(502)},
		{"/plain", "HTTP/1.1 200 OK", "x-path: /plain|" + common + "|x-order: backend|x-status: 200|x-status2: 200|x-order: frontend", "hello\n"},
		{"/deny403", "HTTP/1.1 403 Forbidden", "content-length: 93|cache-control: no-cache|content-type: text/html", errorPage(403)},
		{"/again", "HTTP/1.1 200 OK", "x-path: /again|" + common + "|x-order: backend|x-status: 200|x-status2: 200|x-order: frontend", "hello\n"},
	}
	for _, tt := range tests {
		// One connection throughout: a deny keeps it open.
		status, hdrs, body := rawExchange(t, br, c, "GET "+tt.path+" HTTP/1.1\r\nHost: x\r\n\r\n")
		if status != tt.status || strings.Join(hdrs, "|") != tt.hdrs || body != tt.body {
			t.Errorf("%s: got %q %q %q\nwant %q %q %q", tt.path, status, strings.Join(hdrs, "|"), body, tt.status, tt.hdrs, tt.body)
		}
	}
	fe, be, srv := &p.Frontends[0].Counters, &p.Backend("web").Counters, &p.Backend("web").Servers()[0].Counters
	for name, got := range map[string]int64{"frontend": fe.Dresp.Load(), "backend": be.Dresp.Load(), "server": srv.Dresp.Load()} {
		if got != 2 {
			t.Errorf("%s dresp: got %d, want 2", name, got)
		}
	}
	// The server sent six 200s; the client got 2xx four times, a 404, a
	// 502 and a 403 (HAProxy: server hrsp_2xx 6, backend and frontend
	// the statuses sent).
	if got := srv.Hrsp[2].Load(); got != 6 {
		t.Errorf("server hrsp_2xx: got %d, want 6", got)
	}
	if h2, h4, h5 := fe.Hrsp[2].Load(), fe.Hrsp[4].Load(), fe.Hrsp[5].Load(); h2 != 3 || h4 != 2 || h5 != 1 {
		t.Errorf("frontend hrsp 2xx/4xx/5xx: got %d/%d/%d, want 3/2/1", h2, h4, h5)
	}
	if fe.Eresp.Load()+be.Eresp.Load() != 0 {
		t.Errorf("eresp: got %d, want 0", be.Eresp.Load())
	}
	waitFor(t, 5*time.Second, "the log of the denied response", func() bool {
		return strings.Contains(logs.String(), `"status":502`)
	})
	for _, l := range strings.Split(logs.String(), "\n") {
		if strings.Contains(l, `"status":502`) && !(strings.Contains(l, `"termination_state":"PH"`) && strings.Contains(l, `"Tr":-1`)) {
			t.Errorf("denied response log: got %s, want PH and Tr -1", l)
		}
		if strings.Contains(l, `"status":201`) && !strings.Contains(l, `"termination_state":"--"`) {
			t.Errorf("set-status log: got %s", l)
		}
	}
}

// TestTLSRedirectAndHSTS: the rules operators write around TLS, end to
// end on one frontend with a plain and a TLS bind: plaintext gets a 301 to
// https, TLS reaches the server with X-Forwarded-Proto and comes back with
// Strict-Transport-Security; the access log carries the TLS version,
// cipher and SNI.
func TestTLSRedirectAndHSTS(t *testing.T) {
	e := newTLSEnv(t)
	up := headerEcho(t)
	logs := &testutil.SyncBuffer{}
	p := e.start(t, fmt.Sprintf(`
[[frontend]]
name = "www"
bind = ["127.0.0.1:0", "127.0.0.1:0 ssl crt a.pem"]
default_backend = "web"
http_request = [
  "redirect scheme https code 301 unless { ssl_fc }",
  "set-header X-Forwarded-Proto https if { ssl_fc }",
]
http_response = ['set-header Strict-Transport-Security "max-age=63072000" if { ssl_fc }']
[[backend]]
name = "web"
[[backend.server]]
name = "s1"
address = "%s"
`, up.addr()), logs)
	addrs := p.Frontends[0].Addrs()
	resp, body := get(t, "http://"+addrs[0].String()+"/login?next=/", "a.test")
	if resp.StatusCode != 301 || resp.Header.Get("Location") != "https://a.test/login?next=/" || body != "" {
		t.Errorf("plaintext: got %d %q %q, want 301 to https://a.test/login?next=/", resp.StatusCode, resp.Header.Get("Location"), body)
	}
	if resp.Header.Get("Strict-Transport-Security") != "" || up.requests.Load() != 0 {
		t.Errorf("plaintext: got HSTS %q and %d requests upstream, want none", resp.Header.Get("Strict-Transport-Security"), up.requests.Load())
	}
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: e.clientTLS("a.test")}, Timeout: 10 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	defer client.CloseIdleConnections()
	tresp, err := client.Get("https://" + addrs[1].String() + "/login?next=/")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(tresp.Body)
	tresp.Body.Close()
	if tresp.StatusCode != 200 || string(b) != "X-Forwarded-Proto: https" {
		t.Errorf("TLS: got %d %q, want 200 and X-Forwarded-Proto https", tresp.StatusCode, b)
	}
	if got := tresp.Header.Get("Strict-Transport-Security"); got != "max-age=63072000" {
		t.Errorf("TLS: got HSTS %q, want max-age=63072000", got)
	}
	waitFor(t, 5*time.Second, "the two requests' log lines", func() bool {
		return strings.Contains(logs.String(), `"ssl_version"`) && strings.Contains(logs.String(), `"status":301`)
	})
	var tlsLine, plainLine string
	for _, l := range strings.Split(logs.String(), "\n") {
		switch {
		case strings.Contains(l, `"status":200`):
			tlsLine = l
		case strings.Contains(l, `"status":301`):
			plainLine = l
		}
	}
	if !strings.Contains(tlsLine, `"ssl_version":"TLSv1.3","ssl_cipher":"TLS_AES_128_GCM_SHA256","ssl_sni":"a.test"`) {
		t.Errorf("TLS log line: got %s, want ssl_version, ssl_cipher and ssl_sni", tlsLine)
	}
	if plainLine == "" || strings.Contains(plainLine, "ssl_") {
		t.Errorf("plaintext log line: got %q, want one without TLS fields", plainLine)
	}
}
