package stats

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/fulcrum-proxy/fulcrum/conf"
	"github.com/fulcrum-proxy/fulcrum/proxy"
	"github.com/rs/zerolog"
	"golang.org/x/crypto/bcrypt"
)

// testProxy builds (without starting) a proxy with one backend "web" of
// three servers, for admin actions.
func testProxy(t *testing.T) *proxy.Proxy {
	t.Helper()
	cfg := &conf.Config{
		Frontends: []*conf.Frontend{{Name: "fe", Binds: []string{"127.0.0.1:0"}, Mode: conf.ModeHTTP, DefaultBackend: "web"}},
		Backends: []*conf.Backend{{Name: "web", Mode: conf.ModeHTTP, Balance: "roundrobin", Servers: []*conf.Server{
			{Name: "s1", Address: "127.0.0.1:1", Weight: 1},
			{Name: "s2", Address: "127.0.0.1:2", Weight: 1},
			{Name: "s3", Address: "127.0.0.1:3", Weight: 1},
		}}},
	}
	p, err := proxy.New(cfg, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func get(t *testing.T, h http.Handler, target string, mod func(*http.Request)) *httptest.ResponseRecorder {
	t.Helper()
	r := httptest.NewRequest("GET", target, nil)
	if mod != nil {
		mod(r)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

// TestPageFormats checks the ;csv, ;json, ;typed and ;norefresh options and
// HAProxy's response headers.
func TestPageFormats(t *testing.T) {
	snap := testSnapshot()
	pg := newPage(func() *proxy.Snapshot { return snap }, nil, PageConfig{URI: "/stats", Refresh: 10 * time.Second})
	for _, tc := range []struct {
		name, target, ctype, refresh, body string
	}{
		{"html", "/stats", "text/html; charset=utf-8", "10", "<!DOCTYPE html>"},
		{"csv", "/stats;csv", "text/plain", "10", "# pxname,svname,"},
		{"csv norefresh", "/stats;csv;norefresh", "text/plain", "", "# pxname,svname,"},
		{"json", "/stats;json", "application/json", "10", `[[{"objType":"Frontend"`},
		{"typed", "/stats;typed", "text/plain", "10", "F.1.0.0.pxname.1:KNS:str:fe_web\n"},
		{"query in front", "/stats?stats;csv", "text/plain", "10", "# pxname,svname,"},
		{"html norefresh", "/stats;norefresh", "text/html; charset=utf-8", "", "<!DOCTYPE html>"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := get(t, pg, tc.target, nil)
			if w.Code != 200 {
				t.Fatalf("got status %d, want 200", w.Code)
			}
			h := w.Header()
			if got := h.Get("Content-Type"); got != tc.ctype {
				t.Errorf("content-type: got %q, want %q", got, tc.ctype)
			}
			if got := h.Get("Refresh"); got != tc.refresh {
				t.Errorf("refresh: got %q, want %q", got, tc.refresh)
			}
			if got := h.Get("Cache-Control"); got != "no-cache" {
				t.Errorf("cache-control: got %q, want no-cache", got)
			}
			if !strings.HasPrefix(w.Body.String(), tc.body) {
				t.Errorf("body starts %q, want %q", w.Body.String()[:min(60, w.Body.Len())], tc.body)
			}
		})
	}
	t.Run("addr and algo hidden", func(t *testing.T) {
		body := get(t, pg, "/stats;csv", nil).Body.String()
		if strings.Contains(body, "127.0.0.1:") || strings.Contains(body, "roundrobin") {
			t.Errorf("the HTTP CSV shows addr or algo")
		}
	})
	t.Run("meta refresh", func(t *testing.T) {
		if body := get(t, pg, "/stats", nil).Body.String(); !strings.Contains(body, `<meta http-equiv="refresh" content="10">`) {
			t.Errorf("no meta refresh")
		}
		if body := get(t, pg, "/stats;norefresh", nil).Body.String(); strings.Contains(body, `http-equiv="refresh"`) {
			t.Errorf("meta refresh with ;norefresh")
		}
	})
}

// TestPageHTML checks that every server is on the page with its state class.
func TestPageHTML(t *testing.T) {
	snap := testSnapshot()
	pg := newPage(func() *proxy.Snapshot { return snap }, nil, PageConfig{URI: "/stats"})
	body := get(t, pg, "/stats", nil).Body.String()
	for _, tc := range []struct{ server, class string }{
		{"web/s1", "up"}, {"web/s2", "going-down"}, {"web/s3", "down"}, {"web/s4", "going-up"},
		{"web/s5", "nocheck"}, {"web/s6", "maint"}, {"web/s7", "drain"}, {"web/b1", "nocheck backup"},
		{"be_tcp/c1", "nocheck"}, {"be_tcp/c2", "nolb"}, {"be_down/d1", "down"},
	} {
		want := `<tr class="` + tc.class + `" data-server="` + tc.server + `"`
		if !strings.Contains(body, want) {
			t.Errorf("no %s", want)
		}
	}
	for _, want := range []string{"DOWN 1/2", "UP 2/3", "2m41s MAINT", "L7STS/503 in 1ms", "Statistics Report for fulcrum"} {
		if !strings.Contains(body, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if strings.Contains(body, `method="post"`) {
		t.Errorf("an admin form without admin")
	}
}

// TestPageEscapesNames: a server named <script> appears escaped.
func TestPageEscapesNames(t *testing.T) {
	snap := testSnapshot()
	snap.Backends[0].Servers[0].Name = `<script>alert("x")</script>`
	snap.Backends[0].Name = `we"b<b>`
	pg := newPage(func() *proxy.Snapshot { return snap }, nil, PageConfig{URI: "/stats"})
	body := get(t, pg, "/stats", nil).Body.String()
	if strings.Contains(body, "<script>") || strings.Contains(body, "<b>") {
		t.Errorf("a name is not escaped")
	}
	if !strings.Contains(body, "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;") {
		t.Errorf("the escaped name is missing")
	}
}

// TestPageAuth checks basic authentication with plain and bcrypt passwords.
func TestPageAuth(t *testing.T) {
	hash, err := bcrypt.GenerateFromPassword([]byte("s3cret"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	snap := testSnapshot()
	pg := newPage(func() *proxy.Snapshot { return snap }, nil,
		PageConfig{URI: "/stats", Auth: []string{"admin:change-me", "ops:" + string(hash)}})
	for _, tc := range []struct {
		name, user, pass string
		want             int
	}{
		{"none", "", "", 401},
		{"plain", "admin", "change-me", 200},
		{"plain wrong", "admin", "nope", 401},
		{"bcrypt", "ops", "s3cret", 200},
		{"bcrypt wrong", "ops", "change-me", 401},
		{"unknown user", "eve", "s3cret", 401},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := get(t, pg, "/stats;csv", func(r *http.Request) {
				if tc.user != "" {
					r.SetBasicAuth(tc.user, tc.pass)
				}
			})
			if w.Code != tc.want {
				t.Errorf("got %d, want %d", w.Code, tc.want)
			}
			if tc.want == 401 && !strings.HasPrefix(w.Header().Get("WWW-Authenticate"), "Basic ") {
				t.Errorf("no basic challenge")
			}
		})
	}
}

func post(t *testing.T, h http.Handler, form string, mod func(*http.Request)) *httptest.ResponseRecorder {
	t.Helper()
	r := httptest.NewRequest("POST", "/stats", strings.NewReader(form))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	r.RemoteAddr = "127.0.0.1:5000"
	if mod != nil {
		mod(r)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

// TestPageAdmin checks admin actions: result codes as HAProxy's, state
// changes through the core, refusals without admin rights or from
// another site.
func TestPageAdmin(t *testing.T) {
	p := testProxy(t)
	fromLocal := func(r *http.Request) bool { return strings.HasPrefix(r.RemoteAddr, "127.0.0.1:") }
	pg := newPage(p.Snapshot, p, PageConfig{URI: "/stats", Admin: fromLocal, Auth: []string{"admin:pw"}})
	auth := func(r *http.Request) { r.SetBasicAuth("admin", "pw") }
	state := func(name string) string {
		snap := p.Snapshot()
		for _, s := range snap.Backends[0].Servers {
			if s.Name == name {
				return s.Status()
			}
		}
		return "?"
	}
	for _, tc := range []struct {
		name   string
		form   string
		mod    func(*http.Request)
		code   int
		st     string
		server string
		want   string
	}{
		{"no auth", "b=web&s=s1&action=maint", nil, 401, "", "s1", "no check"},
		{"not an admin address", "b=web&s=s1&action=maint", func(r *http.Request) { auth(r); r.RemoteAddr = "10.1.2.3:4" }, 303, "DENY", "s1", "no check"},
		{"cross-site origin", "b=web&s=s1&action=maint", func(r *http.Request) { auth(r); r.Header.Set("Origin", "http://evil.example") }, 403, "", "s1", "no check"},
		{"cross-site fetch", "b=web&s=s1&action=maint", func(r *http.Request) { auth(r); r.Header.Set("Sec-Fetch-Site", "cross-site") }, 403, "", "s1", "no check"},
		{"maint by iid", "b=%232&s=s1&action=maint", func(r *http.Request) { auth(r); r.Header.Set("Origin", "http://example.com") }, 303, "DONE", "s1", "MAINT"},
		{"ready by name", "action=ready&s=s1&b=web", func(r *http.Request) { auth(r); r.Header.Set("Sec-Fetch-Site", "same-origin") }, 303, "DONE", "s1", "no check"},
		{"drain two", "b=web&s=s2&s=s3&action=drain", auth, 303, "DONE", "s3", "DRAIN"},
		{"health down", "b=web&s=s2&action=hdown", auth, 303, "DONE", "s2", "DOWN"},
		{"health up", "b=web&s=s2&action=hrunn", auth, 303, "DONE", "s2", "DRAIN"},
		{"health nolb", "b=web&s=s2&action=hnolb", auth, 303, "DONE", "s2", "NOLB"},
		{"health up after nolb", "b=web&s=s2&action=hrunn", auth, 303, "DONE", "s2", "DRAIN"},
		{"agent without agent", "b=web&s=s1&action=adown", auth, 303, "NONE", "s1", "no check"},
		{"enable health without check", "b=web&s=s1&action=ehlth", auth, 303, "NONE", "s1", "no check"},
		{"no server", "b=web&action=maint", auth, 303, "NONE", "s1", "no check"},
		{"nothing to do", "b=web&s=s1&action=dhlth", auth, 303, "NONE", "s1", "no check"},
		{"unknown server", "b=web&s=nosrv&action=maint", auth, 303, "ERRP", "s1", "no check"},
		{"unknown action", "b=web&s=s1&action=bogus", auth, 303, "ERRP", "s1", "no check"},
		{"unknown backend", "b=%2399&s=s1&action=maint", auth, 303, "ERRP", "s1", "no check"},
		{"one unknown", "b=web&s=s1&s=nosrv&action=maint", auth, 303, "PART", "s1", "MAINT"},
		{"too large", "b=web&action=maint&s=" + strings.Repeat("x", maxAdminBody), auth, 303, "EXCD", "s1", "MAINT"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := post(t, pg, tc.form, tc.mod)
			if w.Code != tc.code {
				t.Fatalf("got status %d, want %d", w.Code, tc.code)
			}
			if tc.st != "" {
				if got, want := w.Header().Get("Location"), "/stats;st="+tc.st; got != want {
					t.Errorf("location: got %q, want %q", got, want)
				}
			}
			if got := state(tc.server); got != tc.want {
				t.Errorf("%s: got %q, want %q", tc.server, got, tc.want)
			}
		})
	}
	t.Run("result box and form", func(t *testing.T) {
		body := get(t, pg, "/stats;st=DONE", func(r *http.Request) { auth(r); r.RemoteAddr = "127.0.0.1:9" }).Body.String()
		if !strings.Contains(body, "Action processed successfully.") {
			t.Errorf("no result box")
		}
		for _, want := range []string{`<form class="admin" method="post" action="/stats">`, `name="b" value="#2"`,
			`<input type="checkbox" name="s" value="s1">`, `<option value="drain">`} {
			if !strings.Contains(body, want) {
				t.Errorf("page lacks %q", want)
			}
		}
	})
}

// TestPageAdminChange: with PageConfig.Change, an action applies to the
// proxy Change gives (the one serving after a reload), not to the page's
// own, and runs inside Change (which holds reloads off).
func TestPageAdminChange(t *testing.T) {
	old, cur := testProxy(t), testProxy(t)
	calls := 0
	change := func(apply func(*proxy.Proxy)) {
		calls++
		apply(cur)
	}
	pg := newPage(old.Snapshot, old, PageConfig{URI: "/stats", Admin: func(*http.Request) bool { return true }, Change: change})
	w := post(t, pg, "b=web&s=s1&action=maint", nil)
	if got, want := w.Header().Get("Location"), "/stats;st=DONE"; got != want {
		t.Fatalf("location: got %q, want %q", got, want)
	}
	if calls != 1 {
		t.Errorf("Change called %d times, want 1", calls)
	}
	if got := cur.Backend("web").Server("s1").Admin(); got != proxy.AdminMaint {
		t.Errorf("current proxy's s1: got %v, want MAINT", got)
	}
	if got := old.Backend("web").Server("s1").Admin(); got == proxy.AdminMaint {
		t.Errorf("the page's own (replaced) proxy's s1 changed to MAINT")
	}
}

// TestPageConcurrent renders the page and acts on it from several
// goroutines at once (run with -race).
func TestPageConcurrent(t *testing.T) {
	p := testProxy(t)
	pg := newPage(p.Snapshot, p, PageConfig{URI: "/stats", Admin: func(*http.Request) bool { return true }})
	srv := httptest.NewServer(pg)
	defer srv.Close()
	done := make(chan error, 8)
	for i := range 8 {
		go func() {
			var err error
			for j := 0; j < 20 && err == nil; j++ {
				var resp *http.Response
				if i%2 == 0 {
					resp, err = http.Get(srv.URL + "/stats;csv")
				} else {
					action := []string{"drain", "ready", "maint"}[j%3]
					c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
					resp, err = c.PostForm(srv.URL+"/stats", url.Values{"b": {"web"}, "s": {"s1", "s2"}, "action": {action}})
				}
				if err == nil {
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
			}
			done <- err
		}()
	}
	for range 8 {
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
}

// TestPageMobile checks what keeps the page readable on a phone: the
// viewport meta and tables that scroll sideways in their own box.
func TestPageMobile(t *testing.T) {
	snap := testSnapshot()
	body := get(t, newPage(func() *proxy.Snapshot { return snap }, nil, PageConfig{URI: "/stats"}), "/stats", nil).Body.String()
	if !strings.Contains(body, `<meta name="viewport" content="width=device-width, initial-scale=1">`) {
		t.Errorf("no viewport meta")
	}
	if n, want := len(regexp.MustCompile(`<div class="scroll"`).FindAllString(body, -1)), 6; n != want {
		t.Errorf("got %d scrolling boxes, want %d (one per table)", n, want)
	}
	if strings.Contains(body, "<script") {
		t.Errorf("the page uses JavaScript")
	}
}
