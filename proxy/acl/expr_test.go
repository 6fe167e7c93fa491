package acl

import (
	"strings"
	"testing"
)

// TestMatch runs a table of expressions against requests: every fetch and
// match method, flags, files, CIDR v4/v6 and negation.
func TestMatch(t *testing.T) {
	ipFile := writeFile(t, "ips.acl", "# blocklist\n10.0.0.0/8\n\n192.168.1.10\n2001:db8::/32\n")
	hostFile := writeFile(t, "hosts.lst", "WWW.Example.com\napi.example.com\n")
	std := newRequest("192.168.1.10:5555", "GET /api/v1/users?id=42&lang=en",
		"Host", "www.Example.com",
		"User-Agent", "curl/8.0",
		"Cookie", "SID=abc; theme=dark",
		"X-Multi", "a, b",
		"X-Multi", "c",
		"X-Forwarded-For", "10.1.2.3",
		"X-Empty", "",
	)
	v6 := newRequest("[2001:db8::1]:40000", "POST /upload")
	mapped := newRequest("[::ffff:10.9.8.7]:1", "GET /")
	noQuery := newRequest("10.0.0.1:1", "GET /index.html")
	absolute := newRequest("10.0.0.1:1", "GET http://example.com/a/b?x=1")
	http10 := newRequest("10.0.0.1:1", "GET /")
	http10.Version = []byte("1.0")

	tests := []struct {
		name string
		acls [][2]string
		cond string
		req  *Request
		want bool
	}{
		// src / dst, IPv4 and IPv6, CIDR, mapped addresses
		{"src exact", nil, "{ src 192.168.1.10 }", std, true},
		{"src cidr v4", nil, "{ src 192.168.0.0/16 }", std, true},
		{"src cidr v4 miss", nil, "{ src 10.0.0.0/8 }", std, false},
		{"src dotted mask", nil, "{ src 192.168.1.0/255.255.255.0 }", std, true},
		{"src several", nil, "{ src 10.0.0.0/8 192.168.1.0/24 }", std, true},
		{"src v6 pattern v4 client", nil, "{ src ::1 2001:db8::/32 }", std, false},
		{"src cidr v6", nil, "{ src 2001:db8::/32 }", v6, true},
		{"src cidr v6 miss", nil, "{ src 2001:db9::/32 }", v6, false},
		{"src v4-mapped client", nil, "{ src 10.0.0.0/8 }", mapped, true},
		{"src v4-mapped pattern", nil, "{ src ::ffff:10.0.0.0/104 }", mapped, true},
		{"src -f file v4", nil, "{ src -f " + ipFile + " }", std, true},
		{"src -f file v6", nil, "{ src -f " + ipFile + " }", v6, true},
		{"src -f file miss", nil, "{ src -f " + ipFile + " }", newRequest("8.8.8.8:1", "GET /"), false},
		{"src_port", nil, "{ src_port 5555 }", std, true},
		{"src_port ge", nil, "{ src_port ge 5000 }", std, true},
		{"src_port lt", nil, "{ src_port lt 5000 }", std, false},
		{"src_port range", nil, "{ src_port 5000:6000 }", std, true},
		{"src_port operator persists", nil, "{ src_port gt 6000 7000 }", std, false},
		{"dst", nil, "{ dst 127.0.0.0/8 }", std, true},
		{"dst_port", nil, "{ dst_port 8080 }", std, true},
		{"dst_port eq", nil, "{ dst_port eq 80 }", std, false},

		// method, version, ssl_fc
		{"method", nil, "{ method GET }", std, true},
		{"method case", nil, "{ method get }", std, false},
		{"method -i", nil, "{ method -i get }", std, true},
		{"req.ver", nil, "{ req.ver 1.1 }", std, true},
		{"req.ver 1.0", nil, "{ req.ver 1.0 }", http10, true},
		{"ssl_fc false", nil, "{ ssl_fc }", std, false},
		{"not ssl_fc", nil, "!{ ssl_fc }", std, true},

		// path, url, query, url_param
		{"path", nil, "{ path /api/v1/users }", std, true},
		{"path without query", nil, "{ path /api/v1/users?id=42&lang=en }", std, false},
		{"path_beg", nil, "{ path_beg /api }", std, true},
		{"path_beg miss", nil, "{ path_beg /admin }", std, false},
		{"path_end", nil, "{ path_end /users }", std, true},
		{"path_sub", nil, "{ path_sub v1 }", std, true},
		{"path_dir", nil, "{ path_dir v1 }", std, true},
		{"path_dir two", nil, "{ path_dir /api/v1 }", std, true},
		{"path_dir partial", nil, "{ path_dir pi }", std, false},
		{"path_reg", nil, "{ path_reg ^/api/v[0-9]+/ }", std, true},
		{"path_reg miss", nil, "{ path_reg ^/API }", std, false},
		{"path_reg -i", nil, "{ path_reg -i ^/API }", std, true},
		{"path_len", nil, "{ path_len 13 }", std, true},
		{"path_len gt", nil, "{ path_len gt 20 }", std, false},
		{"path -m beg case", nil, "{ path -m beg /API }", std, false},
		{"path -i -m beg", nil, "{ path -i -m beg /API }", std, true},
		{"path -m sub", nil, "{ path -m sub /v1/ }", std, true},
		{"path -m end -i", nil, "{ path -m end -i /USERS }", std, true},
		{"path -m dir", nil, "{ path -m dir users }", std, true},
		{"path -m len", nil, "{ path -m len 10:20 }", std, true},
		{"path -m found", nil, "{ path -m found }", std, true},
		{"path -m str", nil, "{ path -m str /api/v1/users }", std, true},
		{"path of absolute uri", nil, "{ path /a/b }", absolute, true},
		{"url", nil, "{ url /api/v1/users?id=42&lang=en }", std, true},
		{"url_beg", nil, "{ url_beg /api/v1/users? }", std, true},
		{"url_sub", nil, "{ url_sub lang=en }", std, true},
		{"query", nil, "{ query id=42&lang=en }", std, true},
		{"query found", nil, "{ query -m found }", std, true},
		{"query absent", nil, "{ query -m found }", noQuery, false},
		{"url_param", nil, "{ url_param(id) 42 }", std, true},
		{"urlp", nil, "{ urlp(lang) en }", std, true},
		{"url_param missing", nil, "{ url_param(nope) -m found }", std, false},
		{"url_param int", nil, "{ url_param(id) -m int gt 40 }", std, true},
		{"url_param int miss", nil, "{ url_param(lang) -m int gt 40 }", std, false},

		// headers
		{"hdr host -i", nil, "{ hdr(host) -i www.example.com }", std, true},
		{"hdr host case", nil, "{ hdr(host) www.example.com }", std, false},
		{"hdr name case-insensitive", nil, "{ hdr(HOST) -i www.example.com }", std, true},
		{"hdr_dom", nil, "{ hdr_dom(host) -i example.com }", std, true},
		{"hdr_dom label", nil, "{ hdr_dom(host) -i example }", std, true},
		{"hdr_dom partial", nil, "{ hdr_dom(host) -i xample.com }", std, false},
		{"hdr_end", nil, "{ hdr_end(host) -i .com }", std, true},
		{"hdr_beg", nil, "{ hdr_beg(user-agent) curl/ }", std, true},
		{"hdr_sub", nil, "{ hdr_sub(user-agent) /8 }", std, true},
		{"hdr_reg", nil, "{ hdr_reg(user-agent) ^curl/[0-9] }", std, true},
		{"hdr_len", nil, "{ hdr_len(host) 15 }", std, true},
		{"hdr -m len", nil, "{ hdr(host) -m len 15 }", std, true},
		{"hdr every value", nil, "{ hdr(x-multi) c }", std, true},
		{"hdr comma value", nil, "{ hdr(x-multi) b }", std, true},
		{"hdr occ 1", nil, "{ hdr(x-multi,1) a }", std, true},
		{"hdr occ 1 miss", nil, "{ hdr(x-multi,1) b }", std, false},
		{"hdr occ 2", nil, "{ hdr(x-multi,2) b }", std, true},
		{"hdr occ -1", nil, "{ hdr(x-multi,-1) c }", std, true},
		{"hdr occ -3", nil, "{ hdr(x-multi,-3) a }", std, true},
		{"hdr occ out of range", nil, "{ hdr(x-multi,4) -m found }", std, false},
		{"hdr empty value found", nil, "{ hdr(x-empty) -m found }", std, true},
		{"hdr empty value len", nil, "{ hdr(x-empty) -m len 0 }", std, true},
		{"hdr absent", nil, "{ hdr(x-nope) -m found }", std, false},
		{"req.hdr alias", nil, "{ req.hdr(host) -i www.example.com }", std, true},
		{"hdr_ip", nil, "{ hdr_ip(x-forwarded-for) 10.0.0.0/8 }", std, true},
		{"hdr -m ip", nil, "{ hdr(x-forwarded-for) -m ip 10.1.2.3 }", std, true},
		{"hdr -m ip not an ip", nil, "{ hdr(host) -m ip 10.0.0.0/8 }", std, false},
		{"hdr -f -i", nil, "{ hdr(host) -i -f " + hostFile + " }", std, true},
		{"hdr -f case", nil, "{ hdr(host) -f " + hostFile + " }", std, false},
		{"hdr -f exact", nil, "{ hdr(host) -f " + hostFile + " }", newRequest("1.1.1.1:1", "GET /", "Host", "api.example.com"), true},
		{"hdr -f miss", nil, "{ hdr(host) -f " + hostFile + " }", newRequest("1.1.1.1:1", "GET /", "Host", "other.com"), false},
		{"req.hdr_cnt", nil, "{ req.hdr_cnt(x-multi) eq 3 }", std, true},
		{"hdr_cnt", nil, "{ hdr_cnt(host) 1 }", std, true},
		{"req.hdr_cnt absent", nil, "{ req.hdr_cnt(x-nope) 0 }", std, true},
		{"req.hdr_cnt all", nil, "{ req.hdr_cnt ge 7 }", std, true},
		{"host", nil, "{ host -i www.example.com }", std, true},
		{"host absent", nil, "{ host -m found }", noQuery, false},

		// cookies
		{"req.cook", nil, "{ req.cook(SID) abc }", std, true},
		{"cook second", nil, "{ cook(theme) dark }", std, true},
		{"req.cook name case-sensitive", nil, "{ req.cook(sid) -m found }", std, false},
		{"cook_beg", nil, "{ cook_beg(theme) da }", std, true},

		// conditions
		{"named", [][2]string{{"api", "path_beg /api"}}, "api", std, true},
		{"negated", [][2]string{{"api", "path_beg /api"}}, "!api", std, false},
		{"negated separate", [][2]string{{"api", "path_beg /api"}}, "! api", std, false},
		{"and", [][2]string{{"api", "path_beg /api"}, {"get", "method GET"}}, "api get", std, true},
		{"and miss", [][2]string{{"api", "path_beg /api"}, {"post", "method POST"}}, "api post", std, false},
		{"or", [][2]string{{"adm", "path_beg /admin"}, {"get", "method GET"}}, "adm || get", std, true},
		{"or word", [][2]string{{"adm", "path_beg /admin"}, {"get", "method GET"}}, "adm or get", std, true},
		{"or both miss", [][2]string{{"adm", "path_beg /admin"}, {"post", "method POST"}}, "adm || post", std, false},
		{"definitions OR", [][2]string{{"x", "path_beg /admin"}, {"x", "method GET"}}, "x", std, true},
		{"anonymous and named", [][2]string{{"internal", "src 10.0.0.0/8"}}, "{ path_beg /api } !internal", std, true},
		{"unless", nil, "unless { path_beg /api }", std, false},
		{"unless miss", nil, "unless { path_beg /admin }", std, true},
		{"TRUE", nil, "TRUE", std, true},
		{"FALSE", nil, "FALSE", std, false},
		{"METH_GET", nil, "METH_GET", std, true},
		{"HTTP_1.1", nil, "HTTP_1.1", std, true},
		{"LOCALHOST", nil, "LOCALHOST", std, false},
		{"quoted pattern", nil, `{ hdr(user-agent) "curl/8.0" }`, std, true},
		{"regex escape kept", nil, `{ path_reg \.php$ }`, newRequest("1.1.1.1:1", "GET /x.php"), true},
		{"regex escape kept miss", nil, `{ path_reg \.php$ }`, newRequest("1.1.1.1:1", "GET /xphp"), false},
		{"escaped space", nil, `{ hdr(x-a) a\ b }`, newRequest("1.1.1.1:1", "GET /", "X-A", "a b"), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := compileCond(t, NewRegistry("test.toml"), tt.acls, tt.cond)
			if err != nil {
				t.Fatalf("compile %q: %v", tt.cond, err)
			}
			if got := c.Eval(tt.req); got != tt.want {
				t.Errorf("%q: got %v, want %v", tt.cond, got, tt.want)
			}
		})
	}
}

// TestConnectionStage checks that layer-7 fetches find nothing before the
// request is read (tcp_request connection).
func TestConnectionStage(t *testing.T) {
	r := newRequest("10.0.0.1:1", "GET /api")
	r.HTTP = false
	c, err := compileCond(t, NewRegistry("t"), nil, "{ path -m found }")
	if err != nil {
		t.Fatal(err)
	}
	if c.Eval(r) {
		t.Errorf("path found at connection stage: got true, want false")
	}
}

// TestParseErrors checks the messages of bad expressions and conditions.
func TestParseErrors(t *testing.T) {
	tests := []struct {
		name string
		acls [][2]string
		cond string
		want string
	}{
		{"unknown fetch", [][2]string{{"a", "pathx /a"}}, "a", "unknown fetch method 'pathx'"},
		{"unknown suffix", [][2]string{{"a", "path_foo /a"}}, "a", "unknown fetch method 'path_foo'"},
		{"suffix not derivable", [][2]string{{"a", "src_beg 1"}}, "a", "unknown fetch method 'src_beg'"},
		{"unknown ACL", nil, "nope", "unknown ACL 'nope'"},
		{"bad regex", [][2]string{{"a", "path_reg ^(x"}}, "a", "regex '^(x' is invalid"},
		{"bad ip", [][2]string{{"a", "src 1.2.3.4/33"}}, "a", "'1.2.3.4/33' is not a valid IPv4 or IPv6 address."},
		{"bad int", [][2]string{{"a", "src_port abc"}}, "a", "'abc' is not a number"},
		{"unknown method", [][2]string{{"a", "path -m nope x"}}, "a", "unknown match method 'nope'"},
		{"incompatible method", [][2]string{{"a", "src -m len 3"}}, "a", "match method 'len' cannot be used with fetch 'src'"},
		{"no pattern", [][2]string{{"a", "path_beg"}}, "a", "no pattern to match against"},
		{"found with pattern", [][2]string{{"a", "path -m found /x"}}, "a", "takes no pattern"},
		{"missing arg", [][2]string{{"a", "hdr -m found"}}, "a", "expects an argument"},
		{"bad occ", [][2]string{{"a", "hdr(x,y) z"}}, "a", "occurrence must be an integer"},
		{"unknown flag", [][2]string{{"a", "path -z /x"}}, "a", "unknown flag '-z'"},
		{"missing file", [][2]string{{"a", "src -f /nonexistent/x.acl"}}, "a", "failed to open pattern file"},
		{"unclosed brace", nil, "{ path /x", "missing '}'"},
		{"empty condition", nil, "", "missing condition"},
		{"dangling or", [][2]string{{"a", "path /x"}}, "a ||", "missing ACL after '||'"},
		{"leading or", [][2]string{{"a", "path /x"}}, "|| a", "missing ACL before '||'"},
		{"unmatched quote", nil, `{ path "/x }`, "unmatched double quote"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := compileCond(t, NewRegistry("t"), tt.acls, tt.cond)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got error %v, want one containing %q", err, tt.want)
			}
		})
	}
}

// TestFileLineError checks that a bad line of a -f file is reported with
// its line number.
func TestFileLineError(t *testing.T) {
	f := writeFile(t, "bad.acl", "10.0.0.1\n# comment\nnot-an-ip\n")
	_, err := compileCond(t, NewRegistry("t"), [][2]string{{"a", "src -f " + f}}, "a")
	if err == nil || !strings.Contains(err.Error(), "line 3: 'not-an-ip' is not a valid IPv4 or IPv6 address.") {
		t.Errorf("got %v, want the bad line 3", err)
	}
}
