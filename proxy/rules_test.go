package proxy

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fulcrum-proxy/fulcrum/conf"
)

// loadConfig parses a TOML config written in dir (so that -f paths are read
// from there), failing the test on any problem.
func loadConfig(t *testing.T, dir, text string) *conf.Config {
	t.Helper()
	file := filepath.Join(dir, "fulcrum.toml")
	cfg, err := conf.Parse(file, []byte(text))
	if err != nil {
		t.Fatalf("config:\n%s\nerrors:\n%v", text, err)
	}
	return cfg
}

// noRedirect is a client that returns redirects instead of following them.
var noRedirect = &http.Client{
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	Timeout:       10 * time.Second,
}

func get(t *testing.T, url, host string, hdr ...string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	if host != "" {
		req.Host = host
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := noRedirect.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// TestRouting routes by Host and path prefix across three backends
// through the real proxy; a request no rule routes and no default takes
// gets HAProxy's 503.
func TestRouting(t *testing.T) {
	web, api, static := newUpstream(t, "web"), newUpstream(t, "api"), newUpstream(t, "static")
	cfg := loadConfig(t, t.TempDir(), fmt.Sprintf(`
[[frontend]]
name = "www"
bind = ["127.0.0.1:0"]
acl.host_api = "hdr(host) -i api.example.com"
acl.is_api = "path_beg /api/"
acl.is_static = ["path_beg /static/", "path_end .css .js"]
acl.host_www = "hdr_dom(host) -i www.example.com"
use_backend = [
  { backend = "api", if = "host_api || host_www is_api" },
  { backend = "static", if = "is_static" },
  { backend = "web", if = "host_www" },
]
[[backend]]
name = "web"
[[backend.server]]
name = "w1"
address = "%s"
[[backend]]
name = "api"
[[backend.server]]
name = "a1"
address = "%s"
[[backend]]
name = "static"
[[backend.server]]
name = "s1"
address = "%s"
`, web.addr(), api.addr(), static.addr()))
	p, addr := startProxy(t, cfg)
	tests := []struct{ host, path, want string }{
		{"api.example.com", "/", "api"},
		{"API.Example.Com", "/anything", "api"},
		{"www.example.com", "/api/users", "api"},
		{"www.example.com:8080", "/static/app.js", "static"},
		{"other.example.com", "/site.css", "static"},
		{"www.example.com", "/index.html", "web"},
	}
	for _, tt := range tests {
		resp, body := get(t, "http://"+addr+tt.path, tt.host)
		if resp.StatusCode != 200 || resp.Header.Get("X-Server") != tt.want {
			t.Errorf("%s%s: got %d from %q (%q), want %s", tt.host, tt.path, resp.StatusCode, resp.Header.Get("X-Server"), body, tt.want)
		}
	}
	resp, body := get(t, "http://"+addr+"/", "nowhere.example.com")
	if resp.StatusCode != 503 || body != errorPage(503) {
		t.Errorf("unrouted: got %d %q, want 503 and HAProxy's page", resp.StatusCode, body)
	}
	if got := p.Backend("api").Counters.ReqTot.Load(); got != 3 {
		t.Errorf("api req_tot: got %d, want 3", got)
	}
}

// TestHTTPRequestActions observes deny, return, redirect and header edits
// with a real client; a deny counts in dreq and keeps the connection open.
func TestHTTPRequestActions(t *testing.T) {
	web := newUpstream(t, "web")
	web.handler = func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "path=%s proto=%s debug=%q via=%s", r.URL.RequestURI(), r.Header.Get("X-Forwarded-Proto"), r.Header.Get("X-Debug"), strings.Join(r.Header.Values("X-Via"), ","))
	}
	cfg := loadConfig(t, t.TempDir(), fmt.Sprintf(`
[[frontend]]
name = "www"
bind = ["127.0.0.1:0"]
default_backend = "web"
acl.internal = "src 10.0.0.0/8"
http_request = [
  "deny if { path_beg /admin } !internal",
  "deny deny_status 429 if { path_beg /slow }",
  "return status 200 content-type text/plain string \"pong\" if { path /ping }",
  "redirect scheme https code 301 if { path_beg /secure }",
  "redirect prefix /new if { path_beg /old }",
  "set-header X-Forwarded-Proto http",
  "del-header X-Debug",
  "set-path /v2%%[path] if { path_beg /app }",
]
[[backend]]
name = "web"
http_request = ["add-header X-Via fulcrum", "deny deny_status 404 if { path_end .bak }"]
[[backend.server]]
name = "w1"
address = "%s"
`, web.addr()))
	p, addr := startProxy(t, cfg)
	fe, be := p.Frontend("www"), p.Backend("web")

	rc := dialRaw(t, addr)
	resp := rc.do(t, "GET /admin/x HTTP/1.1\r\nHost: h\r\n\r\n")
	if resp.StatusCode != 403 || bodyOf(resp) != errorPage(403) {
		t.Errorf("deny: got %d, want 403 with HAProxy's page", resp.StatusCode)
	}
	// The connection stays open after a deny, as HAProxy 2.6.
	resp = rc.do(t, "GET /slow HTTP/1.1\r\nHost: h\r\n\r\n")
	if resp.StatusCode != 429 || bodyOf(resp) != errorPage(429) {
		t.Errorf("deny_status 429: got %d", resp.StatusCode)
	}
	if got := fe.Counters.Dreq.Load(); got != 2 {
		t.Errorf("frontend dreq: got %d, want 2", got)
	}
	resp = rc.do(t, "GET /ping HTTP/1.1\r\nHost: h\r\n\r\n")
	if resp.StatusCode != 200 || bodyOf(resp) != "pong" || resp.Header.Get("Content-Type") != "text/plain" {
		t.Errorf("return: got %d %q", resp.StatusCode, bodyOf(resp))
	}
	r, _ := get(t, "http://"+addr+"/secure/a?b=1", "example.com")
	if r.StatusCode != 301 || r.Header.Get("Location") != "https://example.com/secure/a?b=1" {
		t.Errorf("redirect scheme: got %d %q", r.StatusCode, r.Header.Get("Location"))
	}
	r, _ = get(t, "http://"+addr+"/old/x", "example.com")
	if r.StatusCode != 302 || r.Header.Get("Location") != "/new/old/x" || r.Header.Get("Cache-Control") != "no-cache" {
		t.Errorf("redirect prefix: got %d %q", r.StatusCode, r.Header.Get("Location"))
	}
	_, body := get(t, "http://"+addr+"/app/page?q=1", "example.com", "X-Forwarded-Proto", "https", "X-Debug", "1")
	if want := `path=/v2/app/page?q=1 proto=http debug="" via=fulcrum`; body != want {
		t.Errorf("edits seen by the server: got %q, want %q", body, want)
	}
	r, _ = get(t, "http://"+addr+"/db.bak", "example.com")
	if r.StatusCode != 404 || be.Counters.Dreq.Load() != 1 {
		t.Errorf("backend deny: got %d, backend dreq %d", r.StatusCode, be.Counters.Dreq.Load())
	}
}

// TestBlocklistRuntime loads a 100,000-entry -f list, then blocks and
// unblocks the client through the API the Runtime API uses: each change
// applies to the next request.
func TestBlocklistRuntime(t *testing.T) {
	dir := t.TempDir()
	var b strings.Builder
	for i := range 100000 {
		fmt.Fprintf(&b, "10.%d.%d.%d\n", i>>16&255, i>>8&255, i&255)
	}
	if err := os.WriteFile(filepath.Join(dir, "blocked.acl"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	web := newUpstream(t, "web")
	cfg := loadConfig(t, dir, fmt.Sprintf(`
[[frontend]]
name = "www"
bind = ["127.0.0.1:0"]
default_backend = "web"
acl.blocked = "src -f ./blocked.acl"
http_request = ["deny if blocked"]
[[backend]]
name = "web"
[[backend.server]]
name = "w1"
address = "%s"
`, web.addr()))
	p, addr := startProxy(t, cfg)
	set := p.ACL().Lookup("./blocked.acl")
	if set == nil || set != p.ACL().Lookup("#0") || set.Len() != 100000 {
		t.Fatalf("set #0: got %v", set)
	}
	rc := dialRaw(t, addr)
	status := func() int { return rc.do(t, "GET / HTTP/1.1\r\nHost: h\r\n\r\n").StatusCode }
	if got := status(); got != 200 {
		t.Fatalf("before add: got %d, want 200", got)
	}
	if _, err := set.Add("127.0.0.1"); err != nil {
		t.Fatal(err)
	}
	if got := status(); got != 403 {
		t.Errorf("after add acl: got %d, want 403", got)
	}
	if !set.Del("127.0.0.1") {
		t.Fatal("del: not found")
	}
	if got := status(); got != 200 {
		t.Errorf("after del acl: got %d, want 200", got)
	}
}

// TestTCPRequestReject closes connections a tcp_request rule rejects,
// with a reset as HAProxy 2.6 (a client that sent nothing reads
// ECONNRESET, not an end of file: a fresh-user trial saw the difference).
func TestTCPRequestReject(t *testing.T) {
	web := newUpstream(t, "web")
	cfg := loadConfig(t, t.TempDir(), fmt.Sprintf(`
[[frontend]]
name = "www"
bind = ["127.0.0.1:0"]
default_backend = "web"
tcp_request = ["connection reject if { src 127.0.0.0/8 } !{ dst_port 1 }"]
[[backend]]
name = "web"
[[backend.server]]
name = "w1"
address = "%s"
`, web.addr()))
	p, addr := startProxy(t, cfg)
	// (the reset may come before the dial has looked at the socket: the
	// dial then fails with it)
	c, err := net.Dial("tcp", addr)
	if err == nil {
		defer c.Close()
		c.SetDeadline(time.Now().Add(5 * time.Second))
		var n int
		if n, err = c.Read(make([]byte, 1)); n != 0 {
			t.Errorf("rejected connection: read %d bytes", n)
		}
	}
	if !errors.Is(err, syscall.ECONNRESET) {
		t.Errorf("rejected connection: %v; want a reset", err)
	}
	waitFor(t, 5e9, "the denied connection counted", func() bool { return p.Frontend("www").DeniedConn.Load() == 1 })
	if got := p.Frontend("www").DeniedConn.Load(); got != 1 {
		t.Errorf("denied connections: got %d, want 1", got)
	}
	if web.requests.Load() != 0 {
		t.Errorf("the server saw %d requests", web.requests.Load())
	}
}
