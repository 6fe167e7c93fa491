package acl

import "testing"

// TestStrFetch: str(<string>) is its constant, at any stage, as HAProxy's.
func TestStrFetch(t *testing.T) {
	sc := NewRegistry("").NewScope()
	e, err := sc.SampleExpr("str(www.test)")
	if err != nil {
		t.Fatal(err)
	}
	if e.L7() {
		t.Error("str is not an HTTP fetch")
	}
	if v, ok := e.Fetch(&Request{}); !ok || v.Kind != ValueStr || string(v.Str) != "www.test" {
		t.Errorf("got %+v %v", v, ok)
	}
	if _, err := sc.SampleExpr("str"); err == nil {
		t.Error("str without its argument compiled")
	}
	// As an ACL's fetch, matched as a string.
	c, err := sc.Condition("{ str(abc) -m beg ab }", false, 1)
	if err != nil {
		t.Fatal(err)
	}
	if !c.Eval(&Request{}) {
		t.Error("str(abc) -m beg ab does not match")
	}
}
