package acl

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"
)

// blocklist writes n distinct /32 and /24 entries: 10.x.y.z and 172.16-31.
func blocklist(t testing.TB, n int) string {
	var b strings.Builder
	for i := range n {
		if i%10 == 0 {
			fmt.Fprintf(&b, "172.%d.%d.0/24\n", 16+i/65536%16, i/256%256)
			continue
		}
		fmt.Fprintf(&b, "10.%d.%d.%d\n", i>>16&255, i>>8&255, i&255)
	}
	return writeFile(t, "block.acl", b.String())
}

// TestSetRuntime checks Add, Del, DelID, Clear and Lookup on a 100,000-entry
// file set: each change is seen by the next evaluation.
func TestSetRuntime(t *testing.T) {
	file := blocklist(t, 100000)
	reg := NewRegistry("fulcrum.toml")
	c, err := compileCond(t, reg, [][2]string{{"blocked", "src -f " + file}}, "blocked")
	if err != nil {
		t.Fatal(err)
	}
	set := reg.Lookup(file)
	if set == nil || set.ID() != 0 || reg.Lookup("#0") != set {
		t.Fatalf("set by file and #0: got %v", set)
	}
	if got := set.Len(); got != 100000 {
		t.Fatalf("entries: got %d, want 100000", got)
	}
	if want := "pattern loaded from file '" + file + "' used by acl at file 'fulcrum.toml' line 1."; set.Description() != want {
		t.Errorf("description: got %q, want %q", set.Description(), want)
	}
	if own := reg.Lookup("#1"); own == nil || own.Description() != "acl 'src' file 'fulcrum.toml' line 1." || own.File() != "" {
		t.Errorf("#1: got %+v", own)
	}
	req := func(ip string) *Request { return newRequest(ip+":1000", "GET /") }
	for _, tc := range []struct {
		ip   string
		want bool
	}{{"10.0.0.1", true}, {"10.1.134.159", true}, {"172.16.5.77", true}, {"203.0.113.7", false}, {"10.0.0.0", false}} {
		if got := c.Eval(req(tc.ip)); got != tc.want {
			t.Errorf("%s: got %v, want %v", tc.ip, got, tc.want)
		}
	}
	if _, err := set.Add("notanip"); err == nil || err.Error() != "'notanip' is not a valid IPv4 or IPv6 address." {
		t.Errorf("Add(notanip): got %v", err)
	}
	e, err := set.Add("203.0.113.7")
	if err != nil {
		t.Fatal(err)
	}
	if !c.Eval(req("203.0.113.7")) {
		t.Errorf("after add: got false, want true")
	}
	if p, ok := set.Lookup("203.0.113.7"); !ok || p != "203.0.113.7" {
		t.Errorf("Lookup: got %q %v", p, ok)
	}
	if set.Del("203.0.113.8") {
		t.Errorf("Del of an absent pattern: got true")
	}
	if !set.DelID(e.ID) || c.Eval(req("203.0.113.7")) {
		t.Errorf("after DelID: still blocked")
	}
	set.Add("203.0.113.0/24")
	set.Add("203.0.113.0/24")
	if !set.Del("203.0.113.0/24") || c.Eval(req("203.0.113.9")) {
		t.Errorf("Del removes every copy: still blocked")
	}
	if !set.Del("10.0.0.1") || c.Eval(req("10.0.0.1")) {
		t.Errorf("Del of a file entry: still blocked")
	}
	// Two spellings of one network: removing one keeps the other.
	set.Add("198.51.100.1")
	set.Add("198.51.100.1/32")
	set.Del("198.51.100.1")
	if !c.Eval(req("198.51.100.1")) {
		t.Errorf("198.51.100.1/32 remains: got false, want true")
	}
	set.Clear()
	if set.Len() != 0 || c.Eval(req("10.1.134.159")) {
		t.Errorf("after Clear: got %d entries", set.Len())
	}
}

// TestSetStrings checks runtime changes of string, regex and integer sets.
func TestSetStrings(t *testing.T) {
	reg := NewRegistry("f.toml")
	c, err := compileCond(t, reg, [][2]string{{"h", "hdr(host) -i a.example.com"}, {"p", "path_reg ^/x"}, {"n", "src_port gt 100"}}, "h || p || n")
	if err != nil {
		t.Fatal(err)
	}
	r := newRequest("1.2.3.4:50", "GET /y", "Host", "B.example.com")
	if c.Eval(r) {
		t.Fatal("matched before add")
	}
	h := reg.Lookup("#0")
	if _, err := h.Add("B.EXAMPLE.COM"); err != nil || !c.Eval(r) {
		t.Errorf("after add to -i set: err %v, match %v", err, c.Eval(r))
	}
	h.Clear()
	p := reg.Lookup("#1")
	if _, err := p.Add("^(y"); err == nil {
		t.Errorf("bad regex accepted")
	}
	p.Add("^/y")
	if !c.Eval(r) {
		t.Errorf("after regex add: no match")
	}
	p.Del("^/y")
	n := reg.Lookup("#2")
	if _, err := n.Add("40:60"); err != nil || !c.Eval(r) {
		t.Errorf("after int range add: err %v", err)
	}
	if kind, icase := h.MatchKind(); kind != "str" || !icase {
		t.Errorf("MatchKind: got %s %v", kind, icase)
	}
	if got := reg.Lookup("#3"); got != nil {
		t.Errorf("#3: got %v, want nil", got)
	}
	if got := reg.Lookup("nope"); got != nil {
		t.Errorf("by unknown file: got %v, want nil", got)
	}
}

// TestSetConcurrent changes a set while requests are evaluated (run under
// -race).
func TestSetConcurrent(t *testing.T) {
	reg := NewRegistry("f.toml")
	c, err := compileCond(t, reg, [][2]string{{"b", "src 10.0.0.0/8"}}, "b")
	if err != nil {
		t.Fatal(err)
	}
	set := reg.Lookup("#0")
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range 500 {
			ip := netip.AddrFrom4([4]byte{192, 0, byte(i >> 8), byte(i)}).String()
			set.Add(ip)
			set.Del(ip)
		}
	}()
	r := newRequest("10.1.1.1:1", "GET /")
	for range 2000 {
		if !c.Eval(r) {
			t.Fatal("10.1.1.1 stopped matching")
		}
	}
	<-done
}
