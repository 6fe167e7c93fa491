package proxy

import (
	"net/http"
	"strings"
	"testing"

	"github.com/fulcrum-proxy/fulcrum/conf"
	"github.com/fulcrum-proxy/fulcrum/proxy/stick"
)

// The general purpose counters in rules, HAProxy's abuse pattern:
// sc-inc-gpc0(0) counts a client's hits on a path, a deny reads
// sc_get_gpc0(0) (later requests to any path are refused), sc-set-gpt0
// tags the entry, sc-inc-gpc1 in http_response counts the server's
// errors, sc0_clr_gpc1 clears them and gives the old value. A fresh-user
// trial found none of these actions and fetches, so that traffic could
// never move gpc0.
func TestGPCRules(t *testing.T) {
	web := newUpstream(t, "web")
	web.handler = func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/missing" {
			w.WriteHeader(404)
		}
	}
	p, _ := clockedProxy(t, `
[[frontend]]
name = "www"
bind = ["127.0.0.1:0"]
default_backend = "web"
stick_table = { type = "ip", size = 100, store = ["gpc0", "gpc0_rate(10s)", "gpc1", "gpt0"] }
http_request = [
  "track-sc0 src",
  "sc-set-gpt0(0) 7 if { path /tag }",
  "sc-inc-gpc0(0) if { path_beg /login }",
  "deny deny_status 403 if { sc_get_gpc0(0) gt 2 }",
  "deny deny_status 429 if { path /errors } { sc0_clr_gpc1 gt 1 }",
]
http_response = ["sc-inc-gpc1(0) if { status 404 }"]
[[backend]]
name = "web"
[[backend.server]]
name = "s1"
address = "%s"
`, web.addr())
	addr := "http://" + p.Frontends[0].Addrs()[0].String()
	tbl := p.Table("www")
	get := func(path string) int { return statusOf(t, http.DefaultClient, addr+path) }
	ds := []stick.DataType{stick.GPT0, stick.GPC0, stick.GPC0Rate, stick.GPC1}
	if got := get("/tag"); got != 200 {
		t.Fatalf("/tag: %d", got)
	}
	wantEntry(t, tbl, "127.0.0.1", ds, 7, 0, 0, 0)
	for _, path := range []string{"/missing", "/missing", "/missing"} {
		if got := get(path); got != 404 {
			t.Fatalf("%s: %d, want the server's 404", path, got)
		}
	}
	wantEntry(t, tbl, "127.0.0.1", ds, 7, 0, 0, 3)
	// sc0_clr_gpc1 gives 3 and clears: the deny's condition holds once.
	if got := get("/errors"); got != 429 {
		t.Fatalf("/errors: %d, want 429 (gpc1 was 3)", got)
	}
	wantEntry(t, tbl, "127.0.0.1", ds, 7, 0, 0, 0)
	if got := get("/errors"); got != 200 {
		t.Fatalf("/errors again: %d, want 200 (gpc1 cleared)", got)
	}
	for i, want := range []int{200, 200, 403} {
		if got := get("/login"); got != want {
			t.Fatalf("/login #%d: %d, want %d", i+1, got, want)
		}
	}
	if got := get("/"); got != 403 {
		t.Fatalf("/ after three logins: %d, want 403", got)
	}
	wantEntry(t, tbl, "127.0.0.1", ds, 7, 3, 3, 0)
}

// The src_* fetches read and count a client address's entry in a table
// without tracking it, as HAProxy's: a shared [[table]] "abuse" that one
// rule flags (src_inc_gpc0) and another reads (src_get_gpc0), the
// frontend's own table by default (src_http_req_cnt), src_clr_gpc0
// giving the old value. A table the configuration lacks is refused.
func TestSrcFetches(t *testing.T) {
	web := newUpstream(t, "web")
	p, _ := clockedProxy(t, `
[[table]]
name = "abuse"
type = "ip"
size = 100
store = ["gpc0", "gpc0_rate(10s)"]
[[frontend]]
name = "www"
bind = ["127.0.0.1:0"]
default_backend = "web"
stick_table = { type = "ip", size = 100, store = ["http_req_cnt"] }
http_request = [
  "track-sc0 src",
  "deny deny_status 403 if { src_get_gpc0(abuse) gt 1 }",
  "deny deny_status 429 if { path /scan } { src_inc_gpc0(abuse) ge 0 }",
  "deny deny_status 410 if { path /count } { src_http_req_cnt gt 3 }",
  "deny deny_status 404 if { path /clear } { src_clr_gpc0(abuse) eq 1 }",
]
[[backend]]
name = "web"
[[backend.server]]
name = "s1"
address = "%s"
`, web.addr())
	addr := "http://" + p.Frontends[0].Addrs()[0].String()
	get := func(path string) int { return statusOf(t, http.DefaultClient, addr+path) }
	abuse := p.Table("abuse")
	// /count: http_req_cnt of the frontend's own table, 1, 2, 3, then 4.
	for i, want := range []int{200, 200, 200, 410} {
		if got := get("/count"); got != want {
			t.Fatalf("/count #%d: %d, want %d", i+1, got, want)
		}
	}
	if got := get("/scan"); got != 429 {
		t.Fatalf("/scan: %d, want 429", got)
	}
	wantEntry(t, abuse, "127.0.0.1", []stick.DataType{stick.GPC0, stick.GPC0Rate}, 1, 1)
	// gpc0 1: /clear gives 1 (404) and clears.
	if got := get("/clear"); got != 404 {
		t.Fatalf("/clear: %d, want 404", got)
	}
	for range 2 {
		get("/scan")
	}
	if got := get("/"); got != 403 {
		t.Fatalf("/ after two scans: %d, want 403", got)
	}

	_, err := conf.Parse("t.toml", []byte(`
[[frontend]]
name = "www"
bind = ["127.0.0.1:0"]
mode = "http"
http_request = ["deny if { src_get_gpc0(nope) gt 0 }"]
default_backend = "web"
[[backend]]
name = "web"
[[backend.server]]
name = "s1"
address = "127.0.0.1:1"
`))
	if err == nil || !strings.Contains(err.Error(), "fetch 'src_get_gpc0': no stick table named 'nope'") {
		t.Errorf("an unknown table: %v", err)
	}
}

// A table storing gpc0_rate without gpc0 still counts the rate on
// sc-inc-gpc0 and src_inc_gpc0, as HAProxy 2.6 (a fresh-user trial saw it
// stay at 0: a deny on sc_gpc0_rate never fired).
func TestGPCRateAlone(t *testing.T) {
	web := newUpstream(t, "web")
	p, _ := clockedProxy(t, `
[[frontend]]
name = "www"
bind = ["127.0.0.1:0"]
default_backend = "web"
stick_table = { type = "ip", size = 100, store = ["gpc0_rate(10s)", "gpc1_rate(10s)"] }
http_request = [
  "track-sc0 src",
  "sc-inc-gpc0(0)",
  "deny deny_status 429 if { path /src } { src_inc_gpc1 ge 0 }",
  "deny deny_status 403 if { sc_gpc0_rate(0) gt 2 }",
]
[[backend]]
name = "web"
[[backend.server]]
name = "s1"
address = "%s"
`, web.addr())
	addr := "http://" + p.Frontends[0].Addrs()[0].String()
	for i, want := range []int{200, 200, 403} {
		if got := statusOf(t, http.DefaultClient, addr+"/"); got != want {
			t.Fatalf("request %d: %d, want %d", i+1, got, want)
		}
	}
	if got := statusOf(t, http.DefaultClient, addr+"/src"); got != 429 {
		t.Fatalf("/src: %d, want 429 (src_inc_gpc1 on a table storing its rate only)", got)
	}
	wantEntry(t, p.Table("www"), "127.0.0.1", []stick.DataType{stick.GPC0Rate, stick.GPC1Rate}, 4, 1)
}

// http_err_cnt counts what HAProxy 2.6 counts as the client's errors
// (measured side by side): a deny whatever its status, a failed
// authentication, a 4xx from the server; not a return rule's answer,
// whatever its status. intercepted counts the frontend's return,
// redirect and auth answers, not its denies. A fresh-user trial saw
// fulcrum count by status.
func TestHTTPErrCntByAction(t *testing.T) {
	web := newUpstream(t, "web")
	web.handler = func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/missing" {
			w.WriteHeader(404)
		}
	}
	p, _ := clockedProxy(t, `
[[userlist]]
name = "L"
user = [{ name = "u", insecure_password = "p" }]
[[frontend]]
name = "www"
bind = ["127.0.0.1:0"]
default_backend = "web"
stick_table = { type = "ip", size = 100, store = ["http_err_cnt"] }
http_request = [
  "track-sc0 src",
  "deny deny_status 503 if { path /d503 }",
  "deny deny_status 200 if { path /d200 }",
  "return status 404 content-type text/plain string nope if { path /r404 }",
  "redirect location /x if { path /redir }",
  "auth realm A if { path /auth } !{ http_auth(L) }",
]
[[backend]]
name = "web"
[[backend.server]]
name = "s1"
address = "%s"
`, web.addr())
	addr := "http://" + p.Frontends[0].Addrs()[0].String()
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	ds := []stick.DataType{stick.HTTPErrCnt}
	for _, c := range []struct {
		path      string
		status    int
		err       int64
		intercept int64
	}{
		{"/d503", 503, 1, 0},
		{"/d200", 200, 2, 0},
		{"/r404", 404, 2, 1},
		{"/redir", 302, 2, 2},
		{"/missing", 404, 3, 2},
		{"/auth", 401, 4, 3},
		{"/ok", 200, 4, 3},
	} {
		if got := statusOf(t, client, addr+c.path); got != c.status {
			t.Fatalf("%s: %d, want %d", c.path, got, c.status)
		}
		wantEntry(t, p.Table("www"), "127.0.0.1", ds, c.err)
		waitFor(t, 5e9, "intercepted", func() bool { return p.Snapshot().Frontends[0].Obs.Intercepted == c.intercept })
	}
}

// statusOf sends GET url with client and returns the response's status.
func statusOf(t *testing.T, client *http.Client, url string) int {
	t.Helper()
	resp, err := client.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}
