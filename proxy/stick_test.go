package proxy

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fulcrum-proxy/fulcrum/conf"
	"github.com/fulcrum-proxy/fulcrum/proxy/http1"
	"github.com/fulcrum-proxy/fulcrum/proxy/stick"
)

// stickProxy starts a proxy from a TOML config; %s in text are replaced
// by the upstreams' addresses in order.
func stickProxy(t *testing.T, text string, ups ...*upstream) (*Proxy, string) {
	t.Helper()
	args := make([]any, len(ups))
	for i, u := range ups {
		args[i] = u.addr()
	}
	cfg, err := conf.Parse("test.toml", []byte(fmt.Sprintf(text, args...)))
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	return startProxy(t, cfg)
}

// clientFrom returns an HTTP client whose connections come from src.
func clientFrom(src string) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}, Timeout: 5 * time.Second}
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		DialContext:       d.DialContext,
		DisableKeepAlives: true,
	}}
}

// stickGet sends one request and returns the status, the X-Server header and
// the response.
func stickGet(t *testing.T, c *http.Client, url string, hdr ...string) (int, string, *http.Response) {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, resp.Header.Get("X-Server"), resp
}

const threeServers = `
[[backend.server]]
name = "s1"
address = "%s"
cookie = "s1"
[[backend.server]]
name = "s2"
address = "%s"
cookie = "s2"
[[backend.server]]
name = "s3"
address = "%s"
cookie = "s3"
`

func TestStickOnSrc(t *testing.T) {
	ups := []*upstream{newUpstream(t, "s1"), newUpstream(t, "s2"), newUpstream(t, "s3")}
	p, addr := stickProxy(t, `
[[frontend]]
name = "www"
bind = ["127.0.0.1:0"]
default_backend = "web"
[[backend]]
name = "web"
balance = "roundrobin"
stick_table = { type = "ip", size = 100, expire = "30m" }
stick = ["on src"]
`+threeServers, ups...)
	url := "http://" + addr + "/"
	srcs := []string{"127.0.0.2", "127.0.0.3", "127.0.0.4"}
	home := map[string]string{}
	for i := range 100 {
		src := srcs[i%3]
		code, srv, _ := stickGet(t, clientFrom(src), url)
		if code != 200 {
			t.Fatalf("request %d from %s: status %d", i, src, code)
		}
		if h, ok := home[src]; ok && h != srv {
			t.Fatalf("request %d from %s went to %s, its server is %s", i, src, srv, h)
		}
		home[src] = srv
	}
	seen := map[string]bool{}
	for _, s := range home {
		seen[s] = true
	}
	if len(seen) != 3 {
		t.Fatalf("3 clients on %d servers, want 3 (round robin): %v", len(seen), home)
	}
	tbl := p.Table("web")
	if tbl.Used() != 3 || !tbl.Stores(stick.ServerID) || !tbl.Stores(stick.ServerKey) {
		t.Fatalf("table: used %d, server_id %v, server_key %v", tbl.Used(), tbl.Stores(stick.ServerID), tbl.Stores(stick.ServerKey))
	}

	// The server of the first client goes DOWN: it moves and stays.
	be := p.Backend("web")
	old := home[srcs[0]]
	be.SetOp(be.Server(old), OpDown)
	var moved string
	for i := range 30 {
		code, srv, _ := stickGet(t, clientFrom(srcs[0]), url)
		if code != 200 || srv == old {
			t.Fatalf("request %d after DOWN: status %d on %s", i, code, srv)
		}
		if moved != "" && srv != moved {
			t.Fatalf("moved client went to %s then %s", moved, srv)
		}
		moved = srv
	}
	// Back UP, it stays on its new server (the entry was updated).
	be.SetOp(be.Server(old), OpUp)
	if _, srv, _ := stickGet(t, clientFrom(srcs[0]), url); srv != moved {
		t.Fatalf("after the old server came back: %s, want %s", srv, moved)
	}
	// A DRAIN server keeps its persistent clients; MAINT does not.
	be.SetAdmin(be.Server(moved), AdminDrain)
	if _, srv, _ := stickGet(t, clientFrom(srcs[0]), url); srv != moved {
		t.Fatalf("DRAIN: went to %s, want %s", srv, moved)
	}
	be.SetAdmin(be.Server(moved), AdminMaint)
	if _, srv, _ := stickGet(t, clientFrom(srcs[0]), url); srv == moved {
		t.Fatalf("MAINT: still sent to %s", srv)
	}
}

func TestTrackRatesAndLimit(t *testing.T) {
	release := make(chan struct{})
	u := newUpstream(t, "s1")
	u.handler = func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			<-release
		}
		w.Header().Set("X-Server", "s1")
		if r.URL.Path == "/missing" {
			w.WriteHeader(404)
		}
	}
	cfg, err := conf.Parse("test.toml", []byte(fmt.Sprintf(`
[[frontend]]
name = "www"
bind = ["127.0.0.1:0"]
default_backend = "web"
stick_table = { type = "ip", size = 1000, expire = "1m", store = ["conn_cur", "conn_cnt", "http_req_cnt", "http_req_rate(10s)", "http_err_cnt"] }
http_request = ["track-sc0 src", "deny deny_status 429 if { sc_http_req_rate(0) gt 5 }"]
[[backend]]
name = "web"
[[backend.server]]
name = "s1"
address = "%s"
`, u.addr())))
	if err != nil {
		t.Fatal(err)
	}
	p, err := New(cfg, nopLogger())
	if err != nil {
		t.Fatal(err)
	}
	clk := struct {
		sync.Mutex
		t time.Time
	}{t: time.Unix(1_700_000_000, 0)}
	p.tables.clock.now = func() time.Time { clk.Lock(); defer clk.Unlock(); return clk.t }
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ctx, c := context.WithTimeout(contextBackground(), 5*time.Second); defer c(); p.Shutdown(ctx) })
	url := "http://" + p.Frontends[0].Addrs()[0].String()
	c := clientFrom("127.0.0.5")
	tbl := p.Table("www")
	k, _ := tbl.ParseKey("127.0.0.5")
	value := func(d stick.DataType) int64 {
		e := tbl.Lookup(k)
		if e == nil {
			t.Fatal("no entry for 127.0.0.5")
		}
		defer tbl.Release(e)
		v, _ := tbl.Value(e, d)
		return v
	}

	// One request in flight: conn_cur 1.
	done := make(chan int)
	go func() {
		code, _, _ := stickGet(t, c, url+"/slow")
		done <- code
	}()
	waitFor(t, 5*time.Second, "the slow request to be tracked", func() bool {
		e := tbl.Lookup(k)
		if e == nil {
			return false
		}
		defer tbl.Release(e)
		v, _ := tbl.Value(e, stick.ConnCur)
		return v == 1
	})
	close(release)
	if code := <-done; code != 200 {
		t.Fatalf("slow request: %d", code)
	}
	for range 3 {
		stickGet(t, c, url+"/")
	}
	stickGet(t, c, url+"/missing")
	// The entry is updated when the request ends, just after its response
	// is flushed: wait for the last one to be counted.
	waitFor(t, 5*time.Second, "the last request to be counted", func() bool {
		return value(stick.HTTPErrCnt) == 1 && value(stick.ConnCur) == 0
	})
	if r, n, cur, errs := value(stick.HTTPReqRate), value(stick.HTTPReqCnt), value(stick.ConnCur), value(stick.HTTPErrCnt); r != 5 || n != 5 || cur != 0 || errs != 1 {
		t.Fatalf("http_req_rate %d http_req_cnt %d conn_cur %d http_err_cnt %d, want 5 5 0 1", r, n, cur, errs)
	}
	// The 6th request in the period is over the limit of 5.
	code, _, resp := stickGet(t, c, url+"/")
	if code != 429 {
		t.Fatalf("6th request: %d, want 429", code)
	}
	_ = resp
	// Byte for byte, HAProxy's 429 page.
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.5")}}
	rc, err := d.Dial("tcp", p.Frontends[0].Addrs()[0].String())
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	rc.SetDeadline(time.Now().Add(5 * time.Second))
	io.WriteString(rc, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	want := http1.DenyResponse(429)
	got := make([]byte, len(want))
	if _, err := io.ReadFull(rc, got); err != nil || string(got) != string(want) {
		t.Fatalf("429 response %q (%v), want %q", got, err, want)
	}
	// The period passes: the rate falls and requests pass again.
	clk.Lock()
	clk.t = clk.t.Add(25 * time.Second)
	clk.Unlock()
	if code, _, _ := stickGet(t, c, url+"/"); code != 200 {
		t.Fatalf("after the period: %d, want 200", code)
	}
}

func TestTrackFullTable(t *testing.T) {
	release := make(chan struct{})
	u := newUpstream(t, "s1")
	u.handler = func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			<-release
		}
	}
	p, addr := stickProxy(t, `
[[frontend]]
name = "www"
bind = ["127.0.0.1:0"]
default_backend = "web"
http_request = ["track-sc1 hdr(x-user) table users"]
[[table]]
name = "users"
type = "string"
size = 10
store = ["http_req_cnt"]
[[backend]]
name = "web"
[[backend.server]]
name = "s1"
address = "%s"
`, u)
	url := "http://" + addr
	c := &http.Client{Timeout: 10 * time.Second}
	tbl := p.Table("users")
	// 20 distinct keys: never more than 10 entries.
	for i := range 20 {
		if code, _, _ := stickGet(t, c, url+"/", "X-User", fmt.Sprintf("u%d", i)); code != 200 {
			t.Fatalf("u%d: %d", i, code)
		}
		if tbl.Used() > 10 {
			t.Fatalf("used %d > 10", tbl.Used())
		}
	}
	// A request releases its entry just after its response is flushed:
	// wait until none is in use, so that the held keys below can all purge
	// their way in.
	waitFor(t, 5*time.Second, "the entries released", func() bool { return !strings.Contains(dumpTable(tbl), "use=1") })
	// 10 long requests hold 10 entries; purges cannot touch them.
	var wg sync.WaitGroup
	for i := range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			stickGet(t, c, url+"/slow", "X-User", fmt.Sprintf("held%d", i))
		}()
	}
	waitFor(t, 5*time.Second, "10 held entries", func() bool {
		return len(tbl.Entries([]stick.Filter{{Type: stick.HTTPReqCnt, Op: stick.OpGe, Value: 1}}, nil)) == 10 &&
			strings.Count(dumpTable(tbl), "use=1") == 10
	})
	// An 11th key gets no entry and is still served.
	if code, _, _ := stickGet(t, c, url+"/", "X-User", "late"); code != 200 {
		t.Fatalf("late: %d", code)
	}
	if tbl.NoEntry() != 1 || tbl.Used() != 10 {
		t.Fatalf("noEntry %d used %d, want 1 10", tbl.NoEntry(), tbl.Used())
	}
	close(release)
	wg.Wait()
	for i := range 10 {
		k, _ := tbl.ParseKey(fmt.Sprintf("held%d", i))
		e := tbl.Lookup(k)
		if e == nil {
			t.Fatalf("held%d purged while in use", i)
		}
		tbl.Release(e)
	}
}

func dumpTable(t *stick.Table) string {
	var b []byte
	for _, e := range t.Entries(nil, nil) {
		b = t.AppendEntry(b, e)
	}
	return string(b)
}

func TestCookieInsert(t *testing.T) {
	ups := []*upstream{newUpstream(t, "s1"), newUpstream(t, "s2"), newUpstream(t, "s3")}
	var sawCookie sync.Map
	for _, u := range ups {
		name := u.name
		u.handler = func(w http.ResponseWriter, r *http.Request) {
			if _, err := r.Cookie("SRV"); err == nil {
				sawCookie.Store(name, true)
			}
			w.Header().Set("X-Server", name)
		}
	}
	p, addr := stickProxy(t, `
[[frontend]]
name = "www"
bind = ["127.0.0.1:0"]
default_backend = "web"
[[backend]]
name = "web"
cookie = { name = "SRV", mode = "insert", indirect = true, nocache = true, httponly = true }
`+threeServers, ups...)
	url := "http://" + addr + "/"
	c := &http.Client{Timeout: 10 * time.Second}
	_, srv, resp := stickGet(t, c, url)
	if got, want := resp.Header.Get("Set-Cookie"), "SRV="+srv+"; path=/; HttpOnly"; got != want {
		t.Fatalf("first response: Set-Cookie %q, want %q", got, want)
	}
	if resp.Header.Get("Cache-Control") != "private" {
		t.Fatalf("nocache: Cache-Control %q", resp.Header.Get("Cache-Control"))
	}
	for i := range 10 {
		_, got, resp := stickGet(t, c, url, "Cookie", "a=1; SRV=s2; b=2")
		if got != "s2" || resp.Header.Get("Set-Cookie") != "" {
			t.Fatalf("request %d with SRV=s2: on %s, Set-Cookie %q", i, got, resp.Header.Get("Set-Cookie"))
		}
	}
	if _, ok := sawCookie.Load("s2"); ok {
		t.Fatal("indirect: the server saw the persistence cookie")
	}
	be := p.Backend("web")
	be.SetOp(be.Server("s2"), OpDown)
	_, got, resp := stickGet(t, c, url, "Cookie", "SRV=s2")
	if got == "s2" || resp.Header.Get("Set-Cookie") != "SRV="+got+"; path=/; HttpOnly" {
		t.Fatalf("s2 DOWN: on %s, Set-Cookie %q", got, resp.Header.Get("Set-Cookie"))
	}
}

func TestCookieDates(t *testing.T) {
	var b [5]byte
	for _, v := range []int64{0, 1, 425_000_000, 1<<30 - 1} {
		if got := b64tos30(s30tob64(v, b[:])); got != v {
			t.Fatalf("%d -> %q -> %d", v, s30tob64(v, b[:]), got)
		}
	}
	if b64tos30([]byte("ab")) != -1 || b64tos30([]byte("ab!cd")) != -1 {
		t.Fatal("bad dates decode")
	}
	v := []byte("a=1; SRV=s1; b=2")
	s, e, val := cookieFind(v, []byte("SRV"))
	if string(val) != "s1" || string(cookieRemove(v, s, e)) != "a=1; b=2" {
		t.Fatalf("find %q remove %q", val, cookieRemove(v, s, e))
	}
}

func TestStickTCP(t *testing.T) {
	var lns []net.Listener
	for i := range 2 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ln.Close() })
		lns = append(lns, ln)
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				fmt.Fprintf(c, "s%d\n", i+1)
				c.Close()
			}
		}()
	}
	cfg, err := conf.Parse("test.toml", []byte(fmt.Sprintf(`
[defaults]
mode = "tcp"
[[frontend]]
name = "tcp"
bind = ["127.0.0.1:0"]
default_backend = "db"
[[backend]]
name = "db"
stick_table = { type = "ip", size = 10 }
stick = ["on src"]
[[backend.server]]
name = "s1"
address = "%s"
[[backend.server]]
name = "s2"
address = "%s"
`, lns[0].Addr(), lns[1].Addr())))
	if err != nil {
		t.Fatal(err)
	}
	_, addr := startProxy(t, cfg)
	read := func(src string) string {
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}, Timeout: 5 * time.Second}
		c, err := d.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(5 * time.Second))
		b, _ := io.ReadAll(c)
		return string(b)
	}
	for _, src := range []string{"127.0.0.6", "127.0.0.7"} {
		first := read(src)
		for range 5 {
			if got := read(src); got != first {
				t.Fatalf("%s: %q then %q", src, first, got)
			}
		}
	}
}
