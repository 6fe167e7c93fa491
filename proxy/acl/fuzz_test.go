package acl

import "testing"

// FuzzParse feeds arbitrary text to the ACL, condition and rule parsers:
// they must return an error or a rule, never panic, and a compiled
// condition must evaluate. The seed corpus is in testdata/fuzz/FuzzParse.
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
	} {
		f.Add(s)
	}
	r := newRequest("10.0.0.1:1", "GET /api/x?a=1", "Host", "example.com", "Cookie", "a=b")
	f.Fuzz(func(t *testing.T, s string) {
		reg := NewRegistry("fuzz.toml")
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
		sc.TCPRule(s, 1)
	})
}
