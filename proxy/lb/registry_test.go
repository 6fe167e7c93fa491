package lb

import (
	"errors"
	"os"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	cases := []struct {
		expr    string
		name    string // "" when an error is expected
		http    bool
		dynamic [2]bool // with map-based, with consistent
		err     string
	}{
		{expr: "roundrobin", name: "roundrobin", dynamic: [2]bool{true, true}},
		{expr: "static-rr", name: "static-rr"},
		{expr: "leastconn", name: "leastconn", dynamic: [2]bool{true, true}},
		{expr: "first", name: "first", dynamic: [2]bool{true, true}},
		{expr: "source", name: "source", dynamic: [2]bool{false, true}},
		{expr: "uri len 8 depth 2 whole path-only", name: "uri", http: true, dynamic: [2]bool{false, true}},
		{expr: "url_param userid", name: "url_param", http: true, dynamic: [2]bool{false, true}},
		{expr: "hdr(Host) use_domain_only", name: "hdr", http: true, dynamic: [2]bool{false, true}},
		{expr: "random", name: "random", dynamic: [2]bool{true, true}},
		{expr: "random(3)", name: "random", dynamic: [2]bool{true, true}},
		{expr: "hash req.cook(SRV)", name: "hash", http: true, dynamic: [2]bool{false, true}},
		{expr: "hash src", name: "hash", dynamic: [2]bool{false, true}},
		{expr: "  uri   whole ", name: "uri", http: true, dynamic: [2]bool{false, true}},

		{expr: "", err: "needs an algorithm, one of first, hash, hdr, leastconn, random, roundrobin, source, static-rr, uri, url_param (rdp-cookie: not supported yet)"},
		{expr: "round-robin", err: `unknown algorithm "round-robin" (did you mean "roundrobin"?), must be one of first, hash, hdr, leastconn, random, roundrobin, source, static-rr, uri, url_param (rdp-cookie: not supported yet)`},
		{expr: "roundrobin extra", err: `roundrobin takes no arguments, got "roundrobin extra"`},
		{expr: "leastconn(2)", err: `leastconn takes no (argument), got "leastconn(2)"`},
		{expr: "hdr", err: `hdr needs an argument: hdr(NAME) [use_domain_only], got "hdr"`},
		{expr: "hdr()", err: `empty (argument), got "hdr()"`},
		{expr: "hdr(Host", err: `unclosed parenthesis, got "hdr(Host"`},
		{expr: "hdr(Host) whole", err: `only "use_domain_only" may follow, got "hdr(Host) whole"`},
		{expr: "random(0)", err: `random(N) needs a number N of at least 1, got "random(0)"`},
		{expr: "random(x)", err: `random(N) needs a number N of at least 1, got "random(x)"`},
		{expr: "uri len", err: `uri len needs a number of at least 1, got "uri len"`},
		{expr: "uri depth -1", err: `uri depth needs a number of at least 1, got "uri depth -1"`},
		{expr: "uri deep", err: `uri takes len N, depth N, whole and path-only, not "deep", got "uri deep"`},
		{expr: "url_param", err: `url_param needs a parameter name, got "url_param"`},
		{expr: "url_param a b", err: `url_param takes a name and optionally check_post, got "url_param a b"`},
		{expr: "url_param a check_post", err: `url_param check_post: not supported yet, got "url_param a check_post"`},
		{expr: "rdp-cookie", err: `rdp-cookie: not supported yet, got "rdp-cookie"`},
		{expr: "rdp-cookie(mstshash)", err: `rdp-cookie: not supported yet, got "rdp-cookie(mstshash)"`},
		{expr: "hash", err: `hash needs a sample expression, e.g. "hash req.cook(SRV)", got "hash"`},
		{expr: "hash a b", err: `hash takes one sample expression, without spaces, got "hash a b"`},
		{expr: "hash req.body", err: `hash: unknown or unsupported sample fetch "req.body", supported: base, method, path, query, req.cook(NAME), req.hdr(NAME), src, url, url_param(NAME), got "hash req.body"`},
		{expr: "hash hdr", err: `hash: hdr needs an argument: hdr(NAME), got "hash hdr"`},
		{expr: "hash src(1)", err: `hash: src takes no argument, got "hash src(1)"`},
		{expr: "hash path,sha1", err: `hash: unknown or unsupported converter "sha1", supported: lower, got "hash path,sha1"`},
	}
	consistent, _ := ParseHashType("consistent")
	for _, tc := range cases {
		b, err := Parse(tc.expr)
		if tc.err != "" {
			if err == nil || err.Error() != tc.err {
				t.Errorf("%q: got error %v, want %s", tc.expr, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", tc.expr, err)
			continue
		}
		got := [2]bool{b.IsDynamic(HashType{}), b.IsDynamic(consistent)}
		if b.Entry.Name != tc.name || b.HTTP != tc.http || got != tc.dynamic {
			t.Errorf("%q: got %s http=%v dynamic=%v, want %s http=%v dynamic=%v",
				tc.expr, b.Entry.Name, b.HTTP, got, tc.name, tc.http, tc.dynamic)
		}
	}
}

func TestParseNotSupported(t *testing.T) {
	for _, expr := range []string{"rdp-cookie", "url_param x check_post"} {
		if _, err := Parse(expr); !errors.Is(err, ErrNotSupported) {
			t.Errorf("%q: got %v, want ErrNotSupported", expr, err)
		}
	}
	if _, err := Parse("rdp-cookie extra(x"); errors.Is(err, ErrNotSupported) {
		t.Errorf("a syntax error must win over not supported, got %v", err)
	}
}

// TestRegistryDocumented: every entry has its documentation fields, and
// every runnable one builds an algorithm.
func TestRegistryDocumented(t *testing.T) {
	for _, e := range Entries() {
		if e.Doc == "" || !strings.HasPrefix(e.Syntax, e.Name) {
			t.Errorf("%s: Doc %q, Syntax %q", e.Name, e.Doc, e.Syntax)
		}
	}
	if got := strings.Join(Names(), " "); got != "first hash hdr leastconn random rdp-cookie roundrobin source static-rr uri url_param" {
		t.Errorf("Names: got %s", got)
	}
}

// TestDocsListEveryAlgorithm: docs/algorithms.md has a row for every name
// of the registry, so the decision guide cannot fall behind it.
func TestDocsListEveryAlgorithm(t *testing.T) {
	doc, err := os.ReadFile("../../docs/algorithms.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range Names() {
		if !strings.Contains(string(doc), "\n| `"+name) {
			t.Errorf("docs/algorithms.md has no row for %s", name)
		}
	}
}
