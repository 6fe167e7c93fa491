package haproxycfg

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fulcrum-proxy/fulcrum/proxy/http1"
)

// An errorfile whose body is fulcrum's built-in page (Debian's stock
// /etc/haproxy/errors: HTTP/1.0 and CRLFs or not) is noted as converted
// with a difference (fulcrum sends its own head) and
// does not stop the import (Debian's stock haproxy.cfg failed fulcrum
// check: a fresh-user trial); another page, a missing file or an unknown
// code is not supported. chroot and pidfile are ignored.
func TestErrorfileBuiltin(t *testing.T) {
	dir := t.TempDir()
	page, _ := http1.ErrorPage(503)
	os.WriteFile(filepath.Join(dir, "503.http"), []byte("HTTP/1.0 503 Service Unavailable\r\nCache-Control: no-cache\r\n"+
		"Connection: close\r\nContent-Type: text/html\r\n\r\n"+page), 0o644)
	os.WriteFile(filepath.Join(dir, "custom.http"), []byte("HTTP/1.0 503 Service Unavailable\r\n\r\n<html>maintenance</html>\n"), 0o644)
	cfg := "global\n    chroot /var/lib/haproxy\n    pidfile /run/haproxy.pid\n" +
		"frontend www\n    bind 127.0.0.1:8080\n    default_backend web\n" +
		"    errorfile 503 503.http\n" + // line 7
		"    errorfile 503 custom.http\n" +
		"    errorfile 503 missing.http\n" +
		"    errorfile 599 503.http\n" + // line 10
		"backend web\n    server s1 127.0.0.1:1\n"
	r, err := Import([]byte(cfg), Options{Name: "e.cfg", Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	want := map[int]Kind{2: Ignored, 3: Ignored, 7: Differs, 8: Unsupported, 9: Unsupported, 10: Unsupported}
	got := map[int]Kind{}
	for _, n := range r.Notes {
		got[n.Line] = n.Kind
	}
	for line, k := range want {
		if got[line] != k {
			t.Errorf("line %d: %v, want %v (notes %v)", line, got[line], k, r.Notes)
		}
	}
}

// A misspelt keyword or option gets HAProxy's "did you mean" (a
// fresh-user trial: "option forwardfour" read "this option is not
// converted", as if it existed); an HAProxy option fulcrum does not
// convert still says so.
func TestTypoSuggestions(t *testing.T) {
	cfg := "frontend www\n    bind 127.0.0.1:8080\n    option forwardfour\n    option splice-auto\n" +
		"    balanse roundrobin\n    default_backend web\nbackend web\n    server s1 127.0.0.1:1\n"
	r, err := Import([]byte(cfg), Options{Name: "t.cfg"})
	if err != nil {
		t.Fatal(err)
	}
	want := map[int]string{
		3: "unknown option 'forwardfour'; did you mean 'forwardfor'?",
		5: "unknown keyword; did you mean 'balance'?",
	}
	got := map[int]string{}
	for _, n := range r.Notes {
		got[n.Line] = n.Why
	}
	for line, w := range want {
		if got[line] != w {
			t.Errorf("line %d: %q, want %q", line, got[line], w)
		}
	}
	if got[4] == "" || got[4] == want[3] {
		t.Errorf("line 4 (splice-auto): %q", got[4])
	}
}

// Without `timeout http-request`, HAProxy waits timeout client for a
// request head and between requests (fulcrum's own default is 10s): the
// importer writes timeout_http_request from timeout client where HAProxy
// has no http-request timeout of its own or from its defaults.
func TestHeadTimeoutFromClient(t *testing.T) {
	for _, c := range []struct {
		name, cfg string
		want      []string // the timeout_http_request lines, in order
	}{
		{"defaults", "defaults\n    mode http\n    timeout client 50s\nfrontend www\n    bind 127.0.0.1:8080\n    default_backend web\n",
			[]string{`timeout_http_request = "50s"`}},
		{"frontend's own", "defaults\n    mode http\n    timeout client 50s\nfrontend www\n    bind 127.0.0.1:8080\n    timeout client 30s\n    default_backend web\n",
			[]string{`timeout_http_request = "50s"`, `timeout_http_request = "30s"`}},
		{"set in defaults", "defaults\n    mode http\n    timeout client 50s\n    timeout http-request 10s\nfrontend www\n    bind 127.0.0.1:8080\n    timeout client 30s\n    default_backend web\n",
			[]string{`timeout_http_request = "10s"`}},
		{"set in the frontend", "defaults\n    mode http\nfrontend www\n    bind 127.0.0.1:8080\n    timeout client 30s\n    timeout http-request 5s\n    default_backend web\n",
			[]string{`timeout_http_request = "5s"`}},
	} {
		r, err := Import([]byte(c.cfg+"backend web\n    server s1 127.0.0.1:1\n"), Options{Name: "t.cfg"})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, l := range strings.Split(string(r.TOML), "\n") {
			if strings.HasPrefix(l, "timeout_http_request") {
				got = append(got, l)
			}
		}
		if strings.Join(got, "|") != strings.Join(c.want, "|") {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}
