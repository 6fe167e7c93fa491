package haproxycfg

import (
	"reflect"
	"testing"
)

func TestLexLine(t *testing.T) {
	tests := []struct {
		name, in string
		words    []string
		comment  string
		env      bool
		err      bool
	}{
		{"words", "server s1 10.0.0.1:80 check", []string{"server", "s1", "10.0.0.1:80", "check"}, "", false, false},
		{"tabs and a comment", "bind\t:80   # public", []string{"bind", ":80"}, "public", false, false},
		{"a hash inside a word starts the comment", "acl a path_end x#y", []string{"acl", "a", "path_end", "x"}, "y", false, false},
		{"escaped hash", `acl a path_sub \#frag`, []string{"acl", "a", "path_sub", "#frag"}, "", false, false},
		{"double quotes keep spaces", `acl a hdr(x) "two words"`, []string{"acl", "a", "hdr(x)", "two words"}, "", false, false},
		{"single quotes keep backslashes", `acl a hdr(x) 'a\b'`, []string{"acl", "a", "hdr(x)", `a\b`}, "", false, false},
		{"quotes inside a word", `a"b c"d`, []string{"ab cd"}, "", false, false},
		{"escapes", `x a\ b \\ \x41 \r`, []string{"x", "a b", `\`, "A", "\r"}, "", false, false},
		{"other backslashes are kept", `acl php path_reg \.php$`, []string{"acl", "php", "path_reg", `\.php$`}, "", false, false},
		{"environment variable", `bind "${ADDR}:80"`, []string{"bind", "${ADDR}:80"}, "", true, false},
		{"dollar not a variable", `http-request set-header X $1`, []string{"http-request", "set-header", "X", "$1"}, "", false, false},
		{"unquoted dollar name is kept (PARSE_OPT_DQUOTE)", `user alice password $6$salt$hash`, []string{"user", "alice", "password", "$6$salt$hash"}, "", false, false},
		{"unmatched double quote", `set "abc`, []string{"set"}, "", false, true},
		{"unmatched single quote", `set 'abc`, []string{"set"}, "", false, true},
		{"hash in quotes", `x "a#b"`, []string{"x", "a#b"}, "", false, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			words, comment, env, err := lexLine(tc.in)
			var got []string
			for _, w := range words {
				got = append(got, w.text)
			}
			if !reflect.DeepEqual(got, tc.words) || comment != tc.comment || env != tc.env || (err != nil) != tc.err {
				t.Errorf("lexLine(%q) = %q, %q, %v, %v; want %q, %q, %v, error %v", tc.in, got, comment, env, err, tc.words, tc.comment, tc.env, tc.err)
			}
		})
	}
}

// TestRest: rules are passed on as written, quotes and escapes included.
func TestRest(t *testing.T) {
	f := parseFile("x", "frontend f\n  http-request set-header X \"a b\" if { path_reg \\.php$ }   # c\n", nil)
	ln := f.sections[0].lines[0]
	if got, want := ln.rest(1), `set-header X "a b" if { path_reg \.php$ }`; got != want {
		t.Errorf("rest = %q, want %q", got, want)
	}
	if ln.comment != "c" {
		t.Errorf("comment = %q", ln.comment)
	}
}

func TestValues(t *testing.T) {
	for _, tc := range []struct {
		in, want string
		err      bool
	}{
		{"5000", "5s", false}, {"500", "500ms", false}, {"90000", "90s", false}, {"60000", "1m", false},
		{"3600000", "1h", false}, {"0", "0s", false}, {"1500ms", "1500ms", false}, {"30s", "30s", false},
		{"2m", "2m", false}, {"1d", "1d", false}, {"100us", "100us", false},
		{"", "", true}, {"5x", "", true}, {"s", "", true}, {"-5", "", true},
	} {
		got, err := haproxyTime(tc.in)
		if string(got) != tc.want || (err != nil) != tc.err {
			t.Errorf("haproxyTime(%q) = %q, %v; want %q, error %v", tc.in, got, err, tc.want, tc.err)
		}
	}
	for _, tc := range []struct {
		in   string
		want int
		err  bool
	}{{"100", 100, false}, {"200k", 204800, false}, {"1m", 1 << 20, false}, {"2g", 2 << 30, false}, {"x", 0, true}, {"-1", 0, true}} {
		got, err := haproxySize(tc.in)
		if got != tc.want || (err != nil) != tc.err {
			t.Errorf("haproxySize(%q) = %d, %v; want %d, error %v", tc.in, got, err, tc.want, tc.err)
		}
	}
}

func TestAddresses(t *testing.T) {
	binds := []struct {
		in   string
		want []string
		err  bool
	}{
		{"*:80", []string{"*:80"}, false},
		{":80", []string{":80"}, false},
		{"127.0.0.1:80,127.0.0.1:81", []string{"127.0.0.1:80", "127.0.0.1:81"}, false},
		{":::443", []string{"[::]:443"}, false},
		{"[::1]:443", []string{"[::1]:443"}, false},
		{"ipv4@0.0.0.0:80", []string{"0.0.0.0:80"}, false},
		{":8000-8002", []string{":8000", ":8001", ":8002"}, false},
		{":1-100", nil, true},
		{"unix@/run/x.sock", nil, true},
		{"/run/x.sock", nil, true},
		{"127.0.0.1", nil, true},
		{":99999", nil, true},
	}
	for _, tc := range binds {
		got, err := bindAddrs(tc.in)
		if !reflect.DeepEqual(got, tc.want) || (err != nil) != tc.err {
			t.Errorf("bindAddrs(%q) = %q, %v; want %q, error %v", tc.in, got, err, tc.want, tc.err)
		}
	}
	servers := []struct {
		in, want string
		err      bool
	}{
		{"10.0.0.1:80", "10.0.0.1:80", false},
		{"web1.example.com:8080", "web1.example.com:8080", false},
		{"[2001:db8::1]:80", "[2001:db8::1]:80", false},
		{"ipv6@2001:db8::2:80", "[2001:db8::2]:80", false},
		{"10.0.0.1", "", true},
		{"10.0.0.1:+1", "", true},
		{"unix@/x", "", true},
		{":80", "", true},
	}
	for _, tc := range servers {
		got, err := serverAddr(tc.in)
		if got != tc.want || (err != nil) != tc.err {
			t.Errorf("serverAddr(%q) = %q, %v; want %q, error %v", tc.in, got, err, tc.want, tc.err)
		}
	}
}

func TestTOMLString(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"plain", `"plain"`},
		{`path_reg \.php$`, `'path_reg \.php$'`},
		{`it's \d`, `"it's \\d"`},
		{"a\"b", `"a\"b"`},
		{"tab\there", `"tab\there"`},
		{"nl\n", `"nl\n"`},
		{"\x01", `"\u0001"`},
	} {
		if got := tomlString(tc.in); got != tc.want {
			t.Errorf("tomlString(%q) = %s, want %s", tc.in, got, tc.want)
		}
	}
}

func TestIsHAProxy(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want bool
	}{
		{"global\n  maxconn 10\n", true},
		{"# comment\n\nfrontend www\n bind :80\n", true},
		{"defaults\n", true},
		{"listen app\n", true},
		{"[global]\nmaxconn = 10\n", false},
		{"# a toml file\n[[frontend]]\n", false},
		{"global = 1\n", false},
		{"frontend = [1]\n", false},
		{"", false},
		{"bind :80\n", false},
	} {
		if got := IsHAProxy([]byte(tc.in)); got != tc.want {
			t.Errorf("IsHAProxy(%q) = %v, want %v", tc.in, got, tc.want)
		}
	}
}
