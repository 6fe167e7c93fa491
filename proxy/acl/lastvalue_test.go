package acl

import "testing"

// TestSampleLastValue: where one value is wanted (a track-sc or stick key,
// a format), the header and cookie fetches give the last occurrence, as
// HAProxy's sample fetches (configuration.txt 7.3.6: "the last
// comma-separated value"); an explicit occurrence and the other fetches
// keep theirs, and a condition still tries every value. A fresh-user
// trial found the first value used: a client's own X-Forwarded-For before
// the one its CDN appended set its rate-limit key.
func TestSampleLastValue(t *testing.T) {
	sc := NewRegistry("").NewScope()
	r := newRequest("10.0.0.1:1000", "GET /?id=1&id=2",
		"X-Forwarded-For", "1.2.3.4, 5.6.7.8",
		"X-Api-Key", "first", "X-Api-Key", "second",
		"Cookie", "sid=a; x=1", "Cookie", "sid=b")
	for expr, want := range map[string]string{
		"req.hdr(x-forwarded-for)":   "5.6.7.8",
		"hdr(x-api-key)":             "second",
		"hdr(x-forwarded-for,1)":     "1.2.3.4",
		"req.hdr(x-forwarded-for,2)": "5.6.7.8",
		"req.cook(sid)":              "b",
		"url_param(id)":              "1",
	} {
		e, err := sc.SampleExpr(expr)
		if err != nil {
			t.Fatal(err)
		}
		if v, ok := e.Fetch(r); !ok || string(v.Str) != want {
			t.Errorf("%s: %q (%v), want %q", expr, v.Str, ok, want)
		}
	}
	f, err := sc.parseFormat("%[hdr(x-api-key)]/%[req.cook(sid)]", false)
	if err != nil {
		t.Fatal(err)
	}
	if got := string(f.append(nil, r)); got != "second/b" {
		t.Errorf("format: %q, want second/b", got)
	}
	c, err := sc.Condition("{ hdr(x-forwarded-for) 1.2.3.4 }", false, 1)
	if err != nil {
		t.Fatal(err)
	}
	if !c.Eval(r) {
		t.Error("a condition no longer sees the first value")
	}
}
