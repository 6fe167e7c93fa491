package acl

import (
	"testing"
)

// BenchmarkRules evaluates a frontend of 20 typical rules per request:
// a 100,000-entry IP blocklist (-f), admin protection by source, header
// edits, and host + path routing to three backends. No rate limit: it
// needs stick tables (not implemented yet), and a placeholder would
// measure nothing real.
func BenchmarkRules(b *testing.B) {
	file := blocklist(b, 100000)
	sc := NewRegistry("bench.toml").NewScope()
	acls := [][2]string{
		{"blocked", "src -f " + file},
		{"internal", "src 127.0.0.0/8 10.0.0.0/8 192.168.0.0/16"},
		{"host_www", "hdr(host) -i www.example.com example.com"},
		{"host_api", "hdr(host) -i api.example.com"},
		{"host_static", "hdr_end(host) -i .static.example.com"},
		{"is_api", "path_beg /api/ /v1/ /v2/"},
		{"is_static", "path_end .css .js .png .jpg"},
		{"is_admin", "path_beg /admin"},
	}
	for _, a := range acls {
		if err := sc.Define(a[0], a[1], 1); err != nil {
			b.Fatal(err)
		}
	}
	rs := &Rules{}
	for _, text := range []string{
		"deny if blocked",
		"deny deny_status 403 if is_admin !internal",
		"deny if { method TRACE CONNECT }",
		"deny if { req.hdr_cnt(host) gt 1 }",
		"redirect scheme https code 301 if { path_beg /login } !{ ssl_fc }",
		"return status 200 content-type text/plain string ok if { path /healthz }",
		"set-header X-Forwarded-Proto http",
		"del-header X-Debug",
		"add-header X-Via fulcrum if is_api",
		"set-header X-Client %[src] if host_api",
		"deny if { url_param(debug) -m found } !internal",
		"deny deny_status 400 if { hdr_len(user-agent) gt 512 }",
		"allow if internal",
		"deny if { path_reg \\.\\./ }",
	} {
		r, err := sc.HTTPRule(text, 1)
		if err != nil {
			b.Fatal(err)
		}
		rs.HTTP = append(rs.HTTP, r)
	}
	for _, u := range [][2]string{
		{"api", "host_api || host_www is_api"},
		{"static", "host_static || is_static"},
		{"web", "host_www"},
		{"web", "{ hdr(host) -m found } !blocked"},
		{"api", "{ path_beg /graphql }"},
		{"static", "{ path_beg /assets/ }"},
	} {
		c, err := sc.Condition(u[1], false, 1)
		if err != nil {
			b.Fatal(err)
		}
		rs.UseBackend = append(rs.UseBackend, UseBackendRule{Backend: u[0], Cond: c})
	}
	if n := len(rs.HTTP) + len(rs.UseBackend); n != 20 {
		b.Fatalf("got %d rules, want 20", n)
	}
	r := newRequest("203.0.113.50:40000", "GET /api/users/42?page=2",
		"Host", "api.example.com",
		"User-Agent", "Mozilla/5.0 (X11; Linux x86_64) Gecko/20100101 Firefox/126.0",
		"Accept", "application/json",
		"Accept-Encoding", "gzip, deflate, br",
		"Cookie", "SID=abcdef0123456789; theme=dark",
	)
	uri := r.URI
	hdrs := r.Headers.(testHeaders)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		r.URI = uri
		r.Edits.Reset(len(hdrs))
		if rule := rs.EvalHTTP(r); rule != nil {
			b.Fatalf("request stopped by %q", rule.Text)
		}
		if i := rs.SelectBackend(r); i != 0 {
			b.Fatalf("got backend %d, want 0", i)
		}
	}
}

// BenchmarkHTTPAuth evaluates `http_auth_group(L1) G1` per request with
// the same Basic credentials: a user whose password is a $6$ hash (paid
// once, then remembered) and one in clear.
func BenchmarkHTTPAuth(b *testing.B) {
	for _, c := range []struct{ name, user, pass string }{
		{"sha512", "tiger", "tigerpass"},
		{"insecure", "scott", "elgato"},
	} {
		b.Run(c.name, func(b *testing.B) {
			reg := NewRegistry("bench.toml")
			ul := NewUserlist("L1")
			ul.AddUser("tiger", sha512Tiger, true)
			ul.AddUser("scott", "elgato", false)
			ul.AddToGroup("tiger", "G1")
			ul.AddToGroup("scott", "G1")
			reg.SetUserlists(map[string]*Userlist{"L1": ul})
			cond, err := compileCond(b, reg, [][2]string{{"ok", "http_auth_group(L1) G1"}}, "ok")
			if err != nil {
				b.Fatal(err)
			}
			r := newRequest("10.0.0.1:1", "GET /", "Host", "h", "Authorization", basic(c.user, c.pass))
			b.ReportAllocs()
			for b.Loop() {
				if !cond.Eval(r) {
					b.Fatal("refused")
				}
			}
		})
	}
}
