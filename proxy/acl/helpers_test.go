package acl

import (
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// testHeaders is a header list for tests, converted once.
type testHeaders [][2][]byte

func (h testHeaders) NumHeaders() int                     { return len(h) }
func (h testHeaders) HeaderAt(i int) (name, value []byte) { return h[i][0], h[i][1] }

func headers(kv ...string) testHeaders {
	var h testHeaders
	for i := 0; i+1 < len(kv); i += 2 {
		h = append(h, [2][]byte{[]byte(kv[i]), []byte(kv[i+1])})
	}
	return h
}

// newRequest builds an HTTP request view: "METHOD URI" and header pairs.
func newRequest(src, line string, kv ...string) *Request {
	method, uri, _ := strings.Cut(line, " ")
	return &Request{
		Src:     netip.MustParseAddrPort(src),
		Dst:     netip.MustParseAddrPort("127.0.0.1:8080"),
		HTTP:    true,
		Method:  []byte(method),
		URI:     []byte(uri),
		Version: []byte("1.1"),
		Headers: headers(kv...),
		Edits:   &Edits{},
	}
}

// compileCond defines acls (name = expr, a name may repeat) in a new scope
// and compiles cond.
func compileCond(t testing.TB, reg *Registry, acls [][2]string, cond string) (*Cond, error) {
	t.Helper()
	sc := reg.NewScope()
	for _, a := range acls {
		if err := sc.Define(a[0], a[1], 1); err != nil {
			return nil, err
		}
	}
	unless := false
	if rest, ok := strings.CutPrefix(cond, "unless "); ok {
		cond, unless = rest, true
	}
	return sc.Condition(cond, unless, 1)
}

// writeFile writes a pattern file in a temporary directory and returns its
// path.
func writeFile(t testing.TB, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}
