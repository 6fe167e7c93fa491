package acl

import (
	"strings"
	"testing"
)

// responseRules compiles http_response rules in one scope.
func responseRules(t *testing.T, texts ...string) *Rules {
	t.Helper()
	sc := NewRegistry("t.toml").NewScope()
	rs := &Rules{}
	for _, text := range texts {
		r, err := sc.HTTPResponseRule(text, 1)
		if err != nil {
			t.Fatalf("%q: %v", text, err)
		}
		rs.HTTPResponse = append(rs.HTTPResponse, r)
	}
	return rs
}

// withResponse gives r a response: status and header pairs.
func withResponse(r *Request, status int, kv ...string) *Request {
	r.Res = Response{Status: status, Version: []byte("1.1"), Headers: headers(kv...), Edits: &Edits{}}
	return r
}

// visible lists the response's header lines after the edits, "n: v".
func visible(res *Response) string {
	var got []string
	for i := range res.Headers.NumHeaders() {
		if !res.Edits.Hidden(i) {
			n, v := res.Headers.HeaderAt(i)
			got = append(got, string(n)+": "+string(v))
		}
	}
	for i := range res.Edits.NumAdded() {
		if n, v, ok := res.Edits.AddedAt(i); ok {
			got = append(got, string(n)+": "+string(v))
		}
	}
	return strings.Join(got, "|")
}

// TestHTTPResponseRules runs the sequence checked against HAProxy 2.6 on
// loopback: del-header, add-header twice, then set-header when
// res.hdr_cnt sees both added lines; %[status] before and after
// set-status.
func TestHTTPResponseRules(t *testing.T) {
	tests := []struct {
		name       string
		rules      []string
		status     int
		hdrs       []string
		wantHdrs   string
		wantStatus int    // 0: unchanged
		wantReason string // with wantStatus
		wantDeny   int    // 0: no deny
	}{
		{name: "edits see earlier edits",
			rules:    []string{"del-header X-Secret", "add-header X-A a1", "add-header X-A a2", "set-header X-A a3 if { res.hdr_cnt(x-a) eq 2 }"},
			status:   200,
			hdrs:     []string{"Content-Length", "6", "X-Secret", "s3", "x-secret", "s4"},
			wantHdrs: "Content-Length: 6|X-A: a3"},
		{name: "status before and after set-status",
			rules:      []string{"set-header X-Status %[status]", "set-status 201", "add-header X-Status2 %[status]"},
			status:     200,
			wantHdrs:   "X-Status: 200|X-Status2: 201",
			wantStatus: 201, wantReason: "Created"},
		{name: "set-status with a reason",
			rules:      []string{"set-status 404 reason \"Nope Nope\""},
			status:     200,
			wantStatus: 404, wantReason: "Nope Nope"},
		{name: "set-status of an unknown code gets its class's reason",
			rules:      []string{"set-status 599"},
			status:     200,
			wantStatus: 599, wantReason: "Server Error"},
		{name: "deny defaults to 502",
			rules:    []string{"add-header X-Before 1", "deny", "add-header X-After 1"},
			status:   200,
			wantHdrs: "X-Before: 1", wantDeny: 502},
		{name: "deny_status on a status condition",
			rules:  []string{"deny deny_status 403 if { status 500:599 }"},
			status: 503, wantDeny: 403},
		{name: "deny unless a header",
			rules:  []string{"deny unless { res.hdr(content-type) -m beg text/ }"},
			status: 200, hdrs: []string{"Content-Type", "text/html; charset=utf-8"}},
		{name: "allow ends the section's rules",
			rules:  []string{"allow if { status 200 }", "deny"},
			status: 200},
		{name: "HSTS on TLS only (plain connection)",
			rules:  []string{`set-header Strict-Transport-Security "max-age=63072000" if { ssl_fc }`},
			status: 200},
		{name: "shdr and request fetches",
			rules:    []string{"set-header X-Echo %[shdr(x-in)]-%[method]-%[path] if { shdr_beg(x-in) ab } { res.ver 1.1 }"},
			status:   200,
			hdrs:     []string{"X-In", "abc"},
			wantHdrs: "X-In: abc|X-Echo: abc-GET-/p"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rs := responseRules(t, tt.rules...)
			r := withResponse(newRequest("10.0.0.1:9", "GET /p?q", "Host", "h"), tt.status, tt.hdrs...)
			rule := rs.EvalHTTPResponse(r)
			switch {
			case tt.wantDeny == 0 && rule != nil:
				t.Fatalf("got deny %d, want none", rule.Status)
			case tt.wantDeny != 0 && (rule == nil || rule.Action != ActDeny || rule.Status != tt.wantDeny):
				t.Fatalf("got %+v, want deny %d", rule, tt.wantDeny)
			}
			if got := visible(&r.Res); got != tt.wantHdrs && !(tt.wantHdrs == "" && got == strings.Join(pairs(tt.hdrs), "|")) {
				t.Errorf("headers: got %q, want %q", got, tt.wantHdrs)
			}
			code, reason, ok := r.Res.Edits.Status()
			if tt.wantStatus == 0 && ok {
				t.Errorf("status: got %d, want unchanged", code)
			}
			if tt.wantStatus != 0 && (code != tt.wantStatus || string(reason) != tt.wantReason) {
				t.Errorf("status: got %d %q, want %d %q", code, reason, tt.wantStatus, tt.wantReason)
			}
		})
	}
}

// pairs renders header pairs as visible does.
func pairs(kv []string) []string {
	var out []string
	for i := 0; i+1 < len(kv); i += 2 {
		out = append(out, kv[i]+": "+kv[i+1])
	}
	return out
}

// TestResponseFetchesOutsideResponses checks that no request-time rule may
// read the response, and that response fetches find nothing before one.
func TestResponseFetchesOutsideResponses(t *testing.T) {
	sc := NewRegistry("t.toml").NewScope()
	if err := sc.Define("is_err", "status ge 500", 1); err != nil {
		t.Fatal(err)
	}
	for _, text := range []string{"deny if is_err", "deny if { res.hdr(x) a }", "set-header X %[status]"} {
		if _, err := sc.HTTPRule(text, 1); err == nil || !strings.Contains(err.Error(), "response") {
			t.Errorf("http_request %q: got %v, want an error about the response", text, err)
		}
	}
	if _, err := sc.Condition("is_err", false, 1); err == nil {
		t.Error("use_backend on a response fetch: got no error")
	}
	if _, err := sc.SampleExpr("res.hdr(x)"); err == nil {
		t.Error("sample expression on a response fetch: got no error")
	}
	if _, err := sc.HTTPResponseRule("deny if is_err", 1); err != nil {
		t.Errorf("http_response on a response fetch: %v", err)
	}
	c, err := (&Scope{reg: NewRegistry("t"), named: map[string]*namedACL{}}).parseCond([]string{"{", "status", "200", "}"}, false, 1)
	if err != nil {
		t.Fatal(err)
	}
	if c.Eval(newRequest("1.1.1.1:1", "GET /")) {
		t.Error("status matched a request without a response")
	}
}

// TestHTTPResponseRuleErrors checks the parser's refusals.
func TestHTTPResponseRuleErrors(t *testing.T) {
	tests := []struct{ rule, want string }{
		{"", "empty rule"},
		{"if TRUE", "missing action before 'if'"},
		{"redirect location /x", "unknown http_response action 'redirect'"},
		{"set-status", "'set-status' expects <status> [reason <str>]"},
		{"set-status 42", "between 100 and 999, got '42'"},
		{"set-status 200 because x", "'set-status' expects <status> [reason <str>]"},
		{"deny deny_status 418", "status 418 has no built-in error page"},
		{"deny deny_status", "'deny deny_status' expects a status code"},
		{"set-header X", "'set-header' expects <name> <fmt>"},
		{"set-header X:Y v", "invalid header name 'X:Y'"},
		{"del-header", "'del-header' expects <name>"},
		{"add-header X %[nope]", "unknown fetch method 'nope'"},
		{"deny if { status }", "no pattern to match against"},
	}
	for _, tt := range tests {
		t.Run(tt.rule, func(t *testing.T) {
			_, err := NewRegistry("t").NewScope().HTTPResponseRule(tt.rule, 1)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %v, want %q", err, tt.want)
			}
		})
	}
}

// TestReason checks HAProxy 2.6's reason phrases, as seen on loopback.
func TestReason(t *testing.T) {
	for code, want := range map[int]string{200: "OK", 302: "Moved Temporarily", 413: "Request Entity Too Large",
		422: "Unprocessable Content", 506: "Variant also negotiate", 599: "Server Error", 299: "Success", 600: "Other"} {
		if got := Reason(code); got != want {
			t.Errorf("%d: got %q, want %q", code, got, want)
		}
	}
}
