package haproxycfg

import (
	"strings"
	"testing"
)

// TestImportEnv: environment variables are expanded where HAProxy 2.6
// expands them (checked beside haproxy 2.6.12: an unquoted ${FE_PORT} in
// a bind and $FE_PORT both listened on the value; an unquoted
// $6$salt$hash password stayed as written, with a variable of the salt's
// name set; "$6..." inside double quotes was refused), each line noted
// with the names; without an Env the lines are not converted, as before.
func TestImportEnv(t *testing.T) {
	const hash = "$6$abcdefgh$KQeXafAQAaOoKTevphVU215RvJdgzyfASRasIOuh12hO8u0r1bGW92ZnTmC9IjsiQ8VPiTXBiZF49dFL1U4wX/"
	cfg := `global
    stats socket ${SOCK} mode 600 level admin
userlist L
    user admin password ` + hash + `
defaults
    mode http
    timeout connect 1s
    timeout client 1s
    timeout server 1s
frontend www
    bind 127.0.0.1:${FE_PORT}
    http-request set-header X-Env "${VALUE}"
    http-request set-header X-Default "${UNSET-fallback}/$UNSET2"
    default_backend web
backend web
    server s1 ${UP_HOST}:$UP_PORT
`
	env := map[string]string{"SOCK": "/run/f.sock", "FE_PORT": "31555", "VALUE": `a "b" $c`, "UP_HOST": "127.0.0.1",
		"UP_PORT": "31556", "abcdefgh": "X"}
	r, err := Import([]byte(cfg), Options{Name: "env.cfg", Env: func(n string) (string, bool) { v, ok := env[n]; return v, ok }})
	if err != nil {
		t.Fatal(err)
	}
	out := string(r.TOML)
	for _, want := range []string{
		`path = "/run/f.sock"`,
		`"127.0.0.1:31555"`,
		`'set-header X-Env "a \"b\" \$c"'`,
		`"set-header X-Default \"fallback/\""`,
		`address = "127.0.0.1:31556"`,
		`password = "` + hash + `"`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the output lacks %s:\n%s", want, out)
		}
	}
	var got []string
	for _, n := range r.Notes {
		got = append(got, n.String())
	}
	want := []string{
		"2: stats socket: converted, differs: environment variables expanded from the environment (SOCK)",
		"11: bind: converted, differs: environment variables expanded from the environment (FE_PORT)",
		"12: http-request: converted, differs: environment variables expanded from the environment (VALUE)",
		"13: http-request: converted, differs: environment variables expanded from the environment (UNSET, UNSET2); not set, so empty: UNSET2",
		"16: server: converted, differs: environment variables expanded from the environment (UP_HOST, UP_PORT)",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("notes:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	// A line the expansion leaves unconvertible (a port from a variable
	// that is not set) has its reason noted, not the expansion.
	r, err = Import([]byte(cfg), Options{Name: "env.cfg", Env: func(n string) (string, bool) {
		if n == "UP_PORT" {
			return "", false
		}
		v, ok := env[n]
		return v, ok
	}})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range r.Notes {
		if n.Line == 16 && n.Kind != Unsupported {
			t.Errorf("line 16: %v, want only its not supported note", n)
		}
	}

	// Without an Env (the fuzz harness's other runs), and a name HAProxy
	// refuses.
	r, err = Import([]byte("frontend www\n    bind 127.0.0.1:8080\n    http-request set-header A \"${V}\"\n    http-request set-header B \"$6x\"\n    default_backend web\nbackend web\n    server s1 127.0.0.1:1\n"),
		Options{Name: "env.cfg"})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Notes) != 2 || r.Notes[0].Why != "environment variables (write the value)" {
		t.Errorf("without Env: %v", r.Notes)
	}
	r, err = Import([]byte("frontend www\n    bind 127.0.0.1:8080\n    http-request set-header B \"$6x\"\n    default_backend web\nbackend web\n    server s1 127.0.0.1:1\n"),
		Options{Name: "env.cfg", Env: func(string) (string, bool) { return "", false }})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Notes) != 1 || r.Notes[0].Kind != Unsupported || !strings.Contains(r.Notes[0].Why, "forbidden first character") {
		t.Errorf("a refused name: %v", r.Notes)
	}
}

// TestImportAbortOnClose: option abortonclose is converted (it was refused
// as not supported, which stopped run -c haproxy.cfg; fresh-user trial),
// in defaults and backends, and "no option" too.
func TestImportAbortOnClose(t *testing.T) {
	r, err := Import([]byte(`defaults
    mode http
    option abortonclose
frontend www
    bind 127.0.0.1:8080
    default_backend web
backend web
    server s1 127.0.0.1:1
backend api
    no option abortonclose
    server s1 127.0.0.1:2
`), Options{Name: "a.cfg"})
	if err != nil {
		t.Fatal(err)
	}
	out := string(r.TOML)
	if len(r.Notes) != 0 || !strings.Contains(out, "[defaults]\nmode = \"http\"\nabortonclose = true\n") || !strings.Contains(out, "abortonclose = false") {
		t.Errorf("notes %v, output:\n%s", r.Notes, out)
	}
}
