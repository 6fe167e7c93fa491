package acl

import (
	"strings"
	"testing"
)

func httpRules(t *testing.T, acls [][2]string, texts ...string) *Rules {
	t.Helper()
	sc := NewRegistry("t.toml").NewScope()
	for _, a := range acls {
		if err := sc.Define(a[0], a[1], 1); err != nil {
			t.Fatal(err)
		}
	}
	rs := &Rules{}
	for _, text := range texts {
		r, err := sc.HTTPRule(text, 1)
		if err != nil {
			t.Fatalf("%q: %v", text, err)
		}
		rs.HTTP = append(rs.HTTP, r)
	}
	return rs
}

// TestHTTPRules checks the order of evaluation, allow, and that header
// edits are seen by later rules.
func TestHTTPRules(t *testing.T) {
	rs := httpRules(t, [][2]string{{"admin", "path_beg /admin"}},
		"set-header X-Tag one",
		"add-header X-Tag two",
		"allow if { path /free }",
		"deny deny_status 429 if { hdr(x-tag) two } admin",
		"del-header User-Agent",
		"set-path /v2%[path]",
		"set-header X-Src %[src]:%[src_port] if { path_beg /v2 }",
		"return status 200 content-type text/plain string ok if { path_beg /v2/ret }",
	)
	r := newRequest("10.0.0.1:9", "GET /admin/x", "Host", "h", "X-Tag", "zero")
	if rule := rs.EvalHTTP(r); rule == nil || rule.Action != ActDeny || rule.Status != 429 {
		t.Fatalf("admin: got %+v, want deny 429", rule)
	}
	r = newRequest("10.0.0.1:9", "GET /free", "X-Tag", "zero")
	if rule := rs.EvalHTTP(r); rule != nil {
		t.Fatalf("/free: got %+v, want allow (nil)", rule)
	}
	r = newRequest("10.0.0.1:9", "GET /page?q=1", "User-Agent", "x", "X-Tag", "zero")
	if rule := rs.EvalHTTP(r); rule != nil {
		t.Fatalf("/page: got %+v, want nil", rule)
	}
	if string(r.URI) != "/v2/page?q=1" || !r.Edits.URIChanged() {
		t.Errorf("set-path: got %q", r.URI)
	}
	var got []string
	for i := range r.Headers.NumHeaders() {
		if !r.Edits.Hidden(i) {
			n, v := r.Headers.HeaderAt(i)
			got = append(got, string(n)+": "+string(v))
		}
	}
	for i := range r.Edits.NumAdded() {
		if n, v, ok := r.Edits.AddedAt(i); ok {
			got = append(got, string(n)+": "+string(v))
		}
	}
	want := "X-Tag: one|X-Tag: two|X-Src: 10.0.0.1:9"
	if strings.Join(got, "|") != want {
		t.Errorf("headers: got %q, want %q", strings.Join(got, "|"), want)
	}
	r = newRequest("10.0.0.1:9", "GET /ret")
	rule := rs.EvalHTTP(r)
	if rule == nil || string(rule.Response) != "HTTP/1.1 200 OK\r\ncontent-length: 2\r\ncontent-type: text/plain\r\n\r\nok" {
		t.Errorf("return: got %+v", rule)
	}
}

// TestRedirect checks redirect responses against HAProxy 2.6's bytes.
func TestRedirect(t *testing.T) {
	tests := []struct{ rule, uri, want string }{
		{"redirect location /new code 301", "/loc?x=1", "HTTP/1.1 301 Moved Permanently\r\ncontent-length: 0\r\nlocation: /new\r\n\r\n"},
		{"redirect prefix /pfx", "/pre/a?b=1", "HTTP/1.1 302 Found\r\ncontent-length: 0\r\nlocation: /pfx/pre/a?b=1\r\ncache-control: no-cache\r\n\r\n"},
		{"redirect scheme https", "/sch/x?y", "HTTP/1.1 302 Found\r\ncontent-length: 0\r\nlocation: https://ex.com/sch/x?y\r\ncache-control: no-cache\r\n\r\n"},
		{"redirect prefix /p2 drop-query append-slash", "/dq/z?q=1", "HTTP/1.1 302 Found\r\ncontent-length: 0\r\nlocation: /p2/dq/z/\r\ncache-control: no-cache\r\n\r\n"},
		{"redirect location /x code 308", "/", "HTTP/1.1 308 Permanent Redirect\r\ncontent-length: 0\r\nlocation: /x\r\n\r\n"},
		{"redirect location /x code 307", "/", "HTTP/1.1 307 Temporary Redirect\r\ncontent-length: 0\r\nlocation: /x\r\ncache-control: no-cache\r\n\r\n"},
	}
	for _, tt := range tests {
		t.Run(tt.rule, func(t *testing.T) {
			rs := httpRules(t, nil, tt.rule)
			r := newRequest("1.1.1.1:1", "GET "+tt.uri, "Host", "ex.com")
			rule := rs.EvalHTTP(r)
			if got := string(rule.AppendRedirect(nil, r)); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

// TestTCPRules checks accept and reject at connection.
func TestTCPRules(t *testing.T) {
	sc := NewRegistry("t").NewScope()
	rs := &Rules{}
	for _, text := range []string{"connection accept if { src 10.0.0.1 }", "connection reject if { src 10.0.0.0/8 }"} {
		r, err := sc.TCPRule(text, 1)
		if err != nil {
			t.Fatal(err)
		}
		rs.TCPConnection = append(rs.TCPConnection, r)
	}
	for ip, want := range map[string]bool{"10.0.0.1": true, "10.0.0.2": false, "192.0.2.1": true} {
		r := newRequest(ip+":1", "GET /")
		r.HTTP = false
		if got := rs.AcceptConnection(r); got != want {
			t.Errorf("%s: got %v, want %v", ip, got, want)
		}
	}
}

// TestHTTPRuleWithoutAction: "if TRUE" (a condition and no action) made
// HTTPRule index an empty list and panic; it is an error.
func TestHTTPRuleWithoutAction(t *testing.T) {
	for _, text := range []string{"if TRUE", "unless { path / }"} {
		if _, err := NewRegistry("t").NewScope().HTTPRule(text, 1); err == nil || !strings.Contains(err.Error(), "missing action") {
			t.Errorf("%q: got %v, want a missing action", text, err)
		}
	}
}
