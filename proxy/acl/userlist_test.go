package acl

import (
	"encoding/base64"
	"strings"
	"testing"

	"golang.org/x/crypto/bcrypt"
)

// Hashes of "tigerpass" made by `openssl passwd -6|-5|-1 -salt SALT`.
const (
	sha512Tiger = "$6$saltsalt$sP4gWhG2benTRotkePXxG3jnAX6.Lvzhxt.HtL67bNhPQj010ZdsT6.F2ecCt6SWsAj9KzcWW01lJyOsR9h7x0"
	sha256Tiger = "$5$s5salt$/SOvXR21QAll5yLkDlLcXJ1VIyeeLp20xVyB4mMHmw4"
	md5Tiger    = "$1$m5salt$cx/PukC2B8LEWtTgu9HMH/"
)

func basic(user, pass string) string {
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+pass))
}

// testUserlist is configuration.txt's example L1: G1 = tiger, scott;
// G2 = scott, xdb.
func testUserlist(t *testing.T, tigerHash string) *Userlist {
	t.Helper()
	ul := NewUserlist("L1")
	for _, u := range []struct {
		name, pass string
		hashed     bool
	}{{"tiger", tigerHash, true}, {"scott", "elgato", false}, {"xdb", "hello", false}} {
		if err := ul.AddUser(u.name, u.pass, u.hashed); err != nil {
			t.Fatal(err)
		}
	}
	for _, m := range [][2]string{{"tiger", "G1"}, {"scott", "G1"}, {"scott", "G2"}, {"xdb", "G2"}, {"scott", "G2"}} {
		if err := ul.AddToGroup(m[0], m[1]); err != nil {
			t.Fatal(err)
		}
	}
	return ul
}

func TestUserlistCheck(t *testing.T) {
	bc, err := bcrypt.GenerateFromPassword([]byte("tigerpass"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range []string{sha512Tiger, sha256Tiger, md5Tiger, string(bc), strings.Replace(string(bc), "$2a$", "$2y$", 1)} {
		ul := testUserlist(t, h)
		for _, c := range []struct {
			user, pass string
			want       bool
		}{
			{"tiger", "tigerpass", true},
			{"tiger", "tigerpass", true}, // from the cache
			{"tiger", "tigerpas", false},
			{"tiger", "", false},
			{"scott", "elgato", true},
			{"scott", "elgat", false},
			{"scott", "elgato ", false},
			{"nobody", "elgato", false},
			{"", "", false},
		} {
			if got := ul.Check([]byte(c.user), []byte(c.pass)); got != c.want {
				t.Errorf("%.4s: Check(%q, %q) = %v, want %v", h, c.user, c.pass, got, c.want)
			}
		}
		if n := len(ul.verified); n != 1 {
			t.Errorf("%.4s: %d credentials cached, want 1 (tiger's)", h, n)
		}
	}
}

func TestUserlistRejects(t *testing.T) {
	ul := NewUserlist("L")
	for _, c := range []struct{ pass, want string }{
		{"abJnggxhB/yWI", "unsupported password hash (DES or unknown)"},
		{"$y$j9T$abc$def", "unsupported password hash (yescrypt/scrypt)"},
		{"$6$saltonly$", "invalid password hash"},
		{"$2y$99$abc", "invalid bcrypt password hash"},
	} {
		err := ul.AddUser("u", c.pass, true)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("AddUser(%q): %v, want %q", c.pass, err, c.want)
		}
	}
	if err := ul.AddUser("u", "x", false); err != nil {
		t.Fatal(err)
	}
	if err := ul.AddUser("u", "y", false); err == nil || err.Error() != `duplicate user "u"` {
		t.Errorf("duplicate: %v", err)
	}
	if err := ul.AddToGroup("v", "G"); err == nil || err.Error() != `no such user "v"` {
		t.Errorf("unknown user: %v", err)
	}
}

// TestHTTPAuthFetches: http_auth and http_auth_group against the
// Authorization field, as HAProxy's get_http_auth reads it.
func TestHTTPAuthFetches(t *testing.T) {
	reg := NewRegistry("test.toml")
	reg.SetUserlists(map[string]*Userlist{"L1": testUserlist(t, sha512Tiger)})
	acls := [][2]string{
		{"ok", "http_auth(L1)"},
		{"g1", "http_auth_group(L1) G1"},
		{"g2", "http_auth_group(L1) G2 G3"},
	}
	conds := map[string]*Cond{}
	for _, name := range []string{"ok", "g1", "g2"} {
		c, err := compileCond(t, reg, acls, name)
		if err != nil {
			t.Fatal(err)
		}
		conds[name] = c
	}
	for _, c := range []struct {
		auth       []string // Authorization lines
		ok, g1, g2 bool
	}{
		{nil, false, false, false},
		{[]string{basic("tiger", "tigerpass")}, true, true, false},
		{[]string{basic("scott", "elgato")}, true, true, true},
		{[]string{basic("xdb", "hello")}, true, false, true},
		{[]string{basic("xdb", "nope")}, false, false, false},
		{[]string{"basic " + base64.StdEncoding.EncodeToString([]byte("xdb:hello"))}, true, false, true},
		{[]string{"Basic   " + base64.StdEncoding.EncodeToString([]byte("xdb:hello")) + " "}, true, false, true},
		{[]string{"Bearer abc"}, false, false, false},
		{[]string{"Basic !!!notbase64"}, false, false, false},
		{[]string{"Basic " + base64.StdEncoding.EncodeToString([]byte("xdbhello"))}, false, false, false},
		{[]string{"Basic"}, false, false, false},
		// Only the first line counts, as in HAProxy.
		{[]string{basic("xdb", "nope"), basic("xdb", "hello")}, false, false, false},
		// A password with a colon: the user ends at the first one.
		{[]string{basic("scott", "elgato:x")}, false, false, false},
	} {
		var kv []string
		for _, a := range c.auth {
			kv = append(kv, "Authorization", a)
		}
		r := newRequest("10.0.0.1:1234", "GET /", kv...)
		got := [3]bool{conds["ok"].Eval(r), conds["g1"].Eval(r), conds["g2"].Eval(r)}
		if want := [3]bool{c.ok, c.g1, c.g2}; got != want {
			t.Errorf("%q: ok, g1, g2 = %v, want %v", c.auth, got, want)
		}
	}

	// As a sample (outside an ACL), http_auth_group is the user's name.
	sc := reg.NewScope()
	e, err := sc.SampleExpr("http_auth_group(L1)")
	if err != nil {
		t.Fatal(err)
	}
	r := newRequest("10.0.0.1:1234", "GET /", "Authorization", basic("scott", "elgato"))
	if v, ok := e.Fetch(r); !ok || v.Kind != ValueStr || string(v.Str) != "scott" {
		t.Errorf("http_auth_group(L1) sample = %+v, %v; want scott", v, ok)
	}
	if _, err := compileCond(t, reg, nil, "{ http_auth(L2) }"); err == nil || err.Error() != "fetch 'http_auth': no such userlist 'L2'" {
		t.Errorf("unknown userlist: %v", err)
	}
	if _, err := compileCond(t, reg, nil, "{ http_auth }"); err == nil {
		t.Error("http_auth without a userlist compiled")
	}
}

func TestAuthRule(t *testing.T) {
	reg := NewRegistry("test.toml")
	sc := reg.NewScope()
	sc.SetProxy("fe1")
	for _, c := range []struct{ text, realm, err string }{
		{"auth", "fe1", ""},
		{"auth realm Admin", "Admin", ""},
		{`auth realm "Secret Zone" if TRUE`, "Secret Zone", ""},
		{"auth realm", "", "'auth': missing realm value"},
		{"auth foo bar", "", "'auth': unsupported option 'foo' (supported: realm <realm>)"},
	} {
		r, err := sc.HTTPRule(c.text, 1)
		switch {
		case c.err != "":
			if err == nil || err.Error() != c.err {
				t.Errorf("%q: error %v, want %q", c.text, err, c.err)
			}
		case err != nil:
			t.Errorf("%q: %v", c.text, err)
		case r.Action != ActAuth || r.Status != 401 || r.Realm() != c.realm:
			t.Errorf("%q: action %d status %d realm %q", c.text, r.Action, r.Status, r.Realm())
		}
	}
	rs := &Rules{}
	r, _ := sc.HTTPRule("auth unless { src 10.0.0.0/8 }", 1)
	rs.HTTP = append(rs.HTTP, r)
	if got := rs.EvalHTTP(newRequest("192.0.2.1:1", "GET /")); got != r {
		t.Errorf("EvalHTTP: %v, want the auth rule", got)
	}
	if got := rs.EvalHTTP(newRequest("10.1.2.3:1", "GET /")); got != nil {
		t.Errorf("EvalHTTP from 10/8: %v, want nil", got)
	}
}

// FuzzBasicAuth: any Authorization value is read without a panic, and
// credentials encoded as a client encodes them come back whole.
func FuzzBasicAuth(f *testing.F) {
	f.Add("Basic c2NvdHQ6ZWxnYXRv", "u", "p")
	f.Add("basic   =", "", ":")
	f.Add("Basic", "a:b", "")
	f.Fuzz(func(t *testing.T, raw, user, pass string) {
		basicAuth(newRequest("10.0.0.1:1", "GET /", "Authorization", raw))
		if strings.Contains(user, ":") {
			return
		}
		u, p, ok := basicAuth(newRequest("10.0.0.1:1", "GET /", "Authorization", basic(user, pass)))
		if !ok || string(u) != user || string(p) != pass {
			t.Fatalf("basic(%q, %q) read back as %q, %q, %v", user, pass, u, p, ok)
		}
	})
}

// TestAuthInfoFetches: http_auth_type, http_auth_user, http_auth_pass and
// http_auth_bearer give what the client sent, unchecked, as HAProxy 2.6.
func TestAuthInfoFetches(t *testing.T) {
	sc := NewRegistry("test.toml").NewScope()
	names := []string{"http_auth_type", "http_auth_user", "http_auth_pass", "http_auth_bearer", "http_auth_bearer(x-token)"}
	var exprs []*Expr
	for _, n := range names {
		e, err := sc.SampleExpr(n)
		if err != nil {
			t.Fatal(err)
		}
		exprs = append(exprs, e)
	}
	const none = "<none>"
	for _, c := range []struct {
		kv   []string
		want [5]string
	}{
		{nil, [5]string{none, none, none, none, none}},
		{[]string{"Authorization", basic("nobody", "pw:x")}, [5]string{"Basic", "nobody", "pw:x", none, none}},
		{[]string{"Authorization", "bearer   eyJ.abc "}, [5]string{"Bearer", none, none, "eyJ.abc", none}},
		// A value is trimmed, so no space is left after the scheme.
		{[]string{"Authorization", "Bearer "}, [5]string{none, none, none, none, none}},
		{[]string{"Authorization", "Digest username=x"}, [5]string{none, none, none, none, none}},
		{[]string{"Authorization", "Basic !!"}, [5]string{none, none, none, none, none}},
		{[]string{"X-Token", "Bearer t0k", "Authorization", basic("a", "")}, [5]string{"Basic", "a", "", none, "t0k"}},
		{[]string{"X-Token", "Basic t0k"}, [5]string{none, none, none, none, none}},
	} {
		r := newRequest("10.0.0.1:1", "GET /", c.kv...)
		var got [5]string
		for i, e := range exprs {
			got[i] = none
			if v, ok := e.Fetch(r); ok {
				got[i] = string(v.Str)
			}
		}
		if got != c.want {
			t.Errorf("%q:\n got %q\nwant %q", c.kv, got, c.want)
		}
	}
}
