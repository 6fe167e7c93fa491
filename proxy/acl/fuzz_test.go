package acl

import "testing"

// FuzzParse feeds arbitrary text to the ACL, condition and rule parsers
// (http_request, http_response, tcp_request): they must return an error or
// a rule, never panic, and a compiled condition or rule must evaluate,
// a response rule against a response. The seed corpus is in
// testdata/fuzz/FuzzParse.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"path_beg /api",
		"hdr(host) -i -m dom example.com",
		"src 10.0.0.0/8 ::1 2001:db8::/32",
		"src_port ge 1024 lt 10 1:2 :3 4:",
		`hdr(user-agent) "a b" 'c d' e\ f`,
		"{ path_reg ^/(a|b) } !x || { method GET }",
		"deny deny_status 429 if { path_beg /admin } !x",
		"redirect prefix /p code 301 drop-query append-slash if x",
		"set-header X-A %[src]:%[hdr(host,1)]%%",
		"return status 404 content-type text/plain string \"nope\"",
		"if TRUE",
		"set-status 503 reason \"Down for maintenance\" if { status 500:599 }",
		"deny deny_status 403 unless { res.hdr(content-type) -m beg text/ } || { shdr_cnt(x) gt 1 }",
		"set-header Strict-Transport-Security \"max-age=63072000\" if { ssl_fc }",
		"add-header X-S %[status]/%[res.ver]/%[shdr(server,-1)]",
		"auth realm Admin unless { http_auth(L1) }",
		"http_auth_group(L1) G1 G2",
		"set-header X-U %[http_auth_user]/%[http_auth_type]/%[http_auth_bearer(x-t)]/%[http_auth_group(L1)]",
		"sc-inc-gpc0(0) if { sc0_clr_gpc1 gt 1 } { sc_inc_gpc0(2) ge 0 }",
		"sc-set-gpt0(1) 42 unless { sc_get_gpt0(1) eq 42 }",
		"deny if { src_get_gpc0(abuse) gt 1 } || { src_inc_gpc1 ge 0 } { src_kbytes_in(t) lt 3 }",
	} {
		f.Add(s)
	}
	r := newRequest("10.0.0.1:1", "GET /api/x?a=1", "Host", "example.com", "Cookie", "a=b", "Authorization", "Basic dTpw", "X-T", "Bearer t")
	ul := NewUserlist("L1")
	ul.AddUser("u", "p", false)
	ul.AddToGroup("u", "G1")
	res := withResponse(newRequest("10.0.0.1:1", "GET /api/x?a=1", "Host", "example.com"), 503,
		"Server", "a", "Content-Type", "text/html", "X", "1", "x", "2")
	f.Fuzz(func(t *testing.T, s string) {
		reg := NewRegistry("fuzz.toml")
		reg.SetUserlists(map[string]*Userlist{"L1": ul})
		sc := reg.NewScope()
		if err := sc.Define("x", s, 1); err == nil {
			sc.named["x"].eval(r)
		} else {
			sc.Define("x", "path /", 1)
		}
		if c, err := sc.Condition(s, false, 1); err == nil {
			c.Eval(r)
		}
		if rule, err := sc.HTTPRule(s, 1); err == nil {
			(&Rules{HTTP: []*Rule{rule}}).EvalHTTP(r)
			if rule.Action == ActRedirect {
				rule.AppendRedirect(nil, r)
			}
		}
		if rule, err := sc.HTTPResponseRule(s, 1); err == nil {
			res.Res.Edits.Reset(res.Res.Headers.NumHeaders())
			(&Rules{HTTPResponse: []*Rule{rule}}).EvalHTTPResponse(res)
			res.Res.Edits.Status()
		}
		sc.TCPRule(s, 1)
	})
}
