package proxy

// tcp_request connection track-sc0/1/2: entries tracked for the whole
// connection, through the real proxy.

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/fulcrum-proxy/fulcrum/conf"
	"github.com/fulcrum-proxy/fulcrum/proxy/netio"
	"github.com/fulcrum-proxy/fulcrum/proxy/stick"
)

// clockedProxy starts a proxy from TOML text (%s: the arguments) whose
// stick tables read a clock the test moves (frozen otherwise), so that
// rates are exact.
func clockedProxy(t *testing.T, text string, args ...any) (p *Proxy, advance func(time.Duration)) {
	t.Helper()
	cfg, err := conf.Parse("test.toml", []byte(fmt.Sprintf(text, args...)))
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	p, err = New(cfg, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	now := time.Unix(1_700_000_000, 0)
	p.tables.clock.now = func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		p.Shutdown(ctx)
	})
	return p, func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
}

// entryValues reads data types of the entry of key (ok false: no entry).
func entryValues(tbl *stick.Table, key string, ds ...stick.DataType) (vs []int64, ok bool) {
	k, err := tbl.ParseKey(key)
	if err != nil {
		panic(err)
	}
	e := tbl.Lookup(k)
	if e == nil {
		return nil, false
	}
	defer tbl.Release(e)
	for _, d := range ds {
		v, _ := tbl.Value(e, d)
		vs = append(vs, v)
	}
	return vs, true
}

// wantEntry waits until the entry of key has exactly want for ds.
func wantEntry(t *testing.T, tbl *stick.Table, key string, ds []stick.DataType, want ...int64) {
	t.Helper()
	var got []int64
	deadline := time.Now().Add(5 * time.Second)
	for {
		got, _ = entryValues(tbl, key, ds...)
		if fmt.Sprint(got) == fmt.Sprint(want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("entry %s: %v = %v, want %v", key, ds, got, want)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// dialFrom connects to addr from the local address src.
func dialFrom(t *testing.T, src, addr string) net.Conn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}, Timeout: 5 * time.Second}
	c, err := d.Dial("tcp", addr)
	if errors.Is(err, syscall.ECONNRESET) {
		// A connection the proxy rejected, reset before the dial looked
		// at its socket: what the test reads from it is the reset.
		return resetConn{err}
	}
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(10 * time.Second))
	return c
}

// wantClosed checks that the proxy closed c without a byte.
func wantClosed(t *testing.T, c net.Conn, what string) {
	t.Helper()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	if n, err := c.Read(make([]byte, 1)); n != 0 || err == nil || netio.IsTimeout(err) {
		t.Fatalf("%s: read %d bytes, err %v; want closed by the proxy", what, n, err)
	}
}

// TestTCPTrackConnLimit is the classic per-address connection limit:
// track-sc0 src, then reject beyond 2 concurrent connections.
func TestTCPTrackConnLimit(t *testing.T) {
	web := newUpstream(t, "web")
	p, _ := clockedProxy(t, `
[[frontend]]
name = "www"
bind = ["127.0.0.1:0"]
default_backend = "web"
stick_table = { type = "ip", size = 100, expire = "1m", store = ["conn_cur", "conn_cnt", "conn_rate(10s)", "sess_cnt"] }
tcp_request = ["connection track-sc0 src", "connection reject if { sc0_conn_cur gt 2 }"]
[[backend]]
name = "web"
[[backend.server]]
name = "s1"
address = "%s"
`, web.addr())
	fe := p.Frontend("www")
	addr := fe.Addrs()[0].String()
	tbl := p.Table("www")
	ds := []stick.DataType{stick.ConnCur, stick.ConnCnt, stick.ConnRate, stick.SessCnt}
	const src = "127.0.0.21"
	open := func() *rawClient {
		t.Helper()
		c := dialFrom(t, src, addr)
		rc := &rawClient{c: c, br: bufio.NewReader(c)}
		if resp := rc.do(t, "GET / HTTP/1.1\r\nHost: h\r\n\r\n"); resp.StatusCode != 200 {
			t.Fatalf("status %d, want 200", resp.StatusCode)
		}
		return rc
	}
	c1, c2 := open(), open()
	wantEntry(t, tbl, src, ds, 2, 2, 2, 2)

	// The third concurrent connection is tracked, seen over the limit,
	// rejected, and leaves the entry at once.
	c3 := dialFrom(t, src, addr)
	io.WriteString(c3, "GET / HTTP/1.1\r\nHost: h\r\n\r\n")
	wantClosed(t, c3, "third connection")
	waitFor(t, 5*time.Second, "the denied connection counted", func() bool { return fe.DeniedConn.Load() == 1 })
	wantEntry(t, tbl, src, ds, 2, 3, 3, 2)
	if n := web.requests.Load(); n != 2 {
		t.Fatalf("the server saw %d requests, want 2", n)
	}

	// Closing one makes room for one.
	c1.c.Close()
	wantEntry(t, tbl, src, ds, 1, 3, 3, 2)
	c4 := open()
	wantEntry(t, tbl, src, ds, 2, 4, 4, 3)
	// Still at the limit: the next is rejected; c2 and c4 keep working.
	c5 := dialFrom(t, src, addr)
	wantClosed(t, c5, "fifth connection")
	waitFor(t, 5*time.Second, "the second denied connection", func() bool { return fe.DeniedConn.Load() == 2 })
	for _, rc := range []*rawClient{c2, c4} {
		if resp := rc.do(t, "GET / HTTP/1.1\r\nHost: h\r\n\r\n"); resp.StatusCode != 200 {
			t.Fatalf("open connection: status %d, want 200", resp.StatusCode)
		}
	}
	// Another address has its own count.
	other := dialFrom(t, "127.0.0.22", addr)
	rc := &rawClient{c: other, br: bufio.NewReader(other)}
	if resp := rc.do(t, "GET / HTTP/1.1\r\nHost: h\r\n\r\n"); resp.StatusCode != 200 {
		t.Fatalf("other address: status %d", resp.StatusCode)
	}
	c2.c.Close()
	c4.c.Close()
	other.Close()
	wantEntry(t, tbl, src, ds, 0, 5, 5, 3)
	wantEntry(t, tbl, "127.0.0.22", ds, 0, 1, 1, 1)
	if got := fe.DeniedConn.Load(); got != 2 {
		t.Fatalf("denied connections %d, want 2", got)
	}
	// The stats' dcon column reads it from the snapshot.
	if got := p.Snapshot().Frontends[0].DeniedConn; got != 2 {
		t.Errorf("snapshot DeniedConn %d, want 2", got)
	}
}

// TestTCPTrackConnRate limits the connection rate of an address with
// sc1_conn_rate on a table named by the rule.
func TestTCPTrackConnRate(t *testing.T) {
	web := newUpstream(t, "web")
	p, advance := clockedProxy(t, `
[[frontend]]
name = "www"
bind = ["127.0.0.1:0"]
default_backend = "web"
tcp_request = ["connection track-sc1 src table rates", "connection reject if { sc1_conn_rate gt 3 }"]
[[table]]
name = "rates"
type = "ip"
size = 100
store = ["conn_rate(10s)", "conn_cur"]
[[backend]]
name = "web"
[[backend.server]]
name = "s1"
address = "%s"
`, web.addr())
	addr := p.Frontends[0].Addrs()[0].String()
	tbl := p.Table("rates")
	ds := []stick.DataType{stick.ConnRate, stick.ConnCur}
	const src = "127.0.0.23"
	try := func() bool {
		c := dialFrom(t, src, addr)
		defer c.Close()
		io.WriteString(c, "GET / HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n")
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == 200
	}
	for i, want := range []bool{true, true, true, false, false} {
		if got := try(); got != want {
			t.Fatalf("connection %d: served %v, want %v", i+1, got, want)
		}
		wantEntry(t, tbl, src, ds, int64(i+1), 0)
	}
	// Two periods later the rate has fallen: served again.
	advance(25 * time.Second)
	if !try() {
		t.Fatal("after the period: rejected")
	}
	wantEntry(t, tbl, src, ds, 1, 0)
	if got := p.Frontends[0].DeniedConn.Load(); got != 2 {
		t.Fatalf("denied connections %d, want 2", got)
	}
}

// TestTCPTrackKeepAlive: an entry tracked at connection stays tracked for
// the connection's requests, which count on it; an http_request track-sc
// on the same slot does nothing; sc0_* fetches see it; conn_cur falls to
// 0 when the connection closes, whatever ended it.
func TestTCPTrackKeepAlive(t *testing.T) {
	u := newUpstream(t, "s1")
	u.handler = func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Sc0", r.Header.Get("X-Sc0"))
		if r.URL.Path == "/missing" {
			w.WriteHeader(404)
		}
	}
	p, _ := clockedProxy(t, `
[[frontend]]
name = "www"
bind = ["127.0.0.1:0"]
default_backend = "web"
stick_table = { type = "ip", size = 100, expire = "1m", store = ["conn_cur", "conn_cnt", "sess_cnt", "http_req_cnt", "http_req_rate(10s)", "http_err_cnt", "bytes_in_cnt"] }
tcp_request = ["connection track-sc0 src"]
http_request = ["track-sc0 src", "set-header X-Sc0 %%[sc0_http_req_cnt]/%%[sc0_conn_cur]/%%[sc0_conn_cnt]"]
[[backend]]
name = "web"
retries = 0 # the dead server below fails at once, without turn-around delays
[[backend.server]]
name = "s1"
address = "%s"
`, u.addr())
	addr := p.Frontends[0].Addrs()[0].String()
	tbl := p.Table("www")
	const src = "127.0.0.24"
	ds := []stick.DataType{stick.ConnCur, stick.ConnCnt, stick.SessCnt, stick.HTTPReqCnt, stick.HTTPReqRate, stick.HTTPErrCnt, stick.BytesInCnt}

	c := dialFrom(t, src, addr)
	rc := &rawClient{c: c, br: bufio.NewReader(c)}
	const n = 5
	var in int64
	for i := 1; i <= n+1; i++ {
		path, code := "/p", 200
		if i == n+1 {
			path, code = "/missing", 404
		}
		req := "GET " + path + " HTTP/1.1\r\nHost: h\r\n\r\n"
		in += int64(len(req))
		resp := rc.do(t, req)
		if resp.StatusCode != code {
			t.Fatalf("request %d: status %d, want %d", i, resp.StatusCode, code)
		}
		// The request is counted before the rules run; the connection
		// counts once.
		if got, want := resp.Header.Get("X-Sc0"), fmt.Sprintf("%d/1/1", i); got != want {
			t.Fatalf("request %d: sc0 http_req_cnt/conn_cur/conn_cnt %q, want %q", i, got, want)
		}
	}
	// While open: one connection, n+1 requests, one error, every byte in.
	wantEntry(t, tbl, src, ds, 1, 1, 1, n+1, n+1, 1, in)
	c.Close()
	wantEntry(t, tbl, src, ds, 0, 1, 1, n+1, n+1, 1, in)

	// A bad request closes the connection: counted as a request and an
	// error, and the connection leaves the entry.
	bad := dialFrom(t, src, addr)
	io.WriteString(bad, "NOT HTTP\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(bad), nil)
	if err != nil || resp.StatusCode != 400 {
		t.Fatalf("bad request: %v %v, want 400", resp, err)
	}
	wantEntry(t, tbl, src, ds[:6], 0, 2, 2, n+2, n+2, 2)

	// A connection that sends nothing and goes away: HAProxy 2.6 counts
	// it as a request that failed (400 CR--), on tracked entries too.
	silent := dialFrom(t, src, addr)
	wantEntry(t, tbl, src, ds[:3], 1, 3, 3)
	silent.Close()
	wantEntry(t, tbl, src, ds[:6], 0, 3, 3, n+3, n+3, 3)

	// The server is gone: a 503 on an open connection, which stays open
	// (as HAProxy's) until the request that asks to close.
	u.Close()
	dead := dialFrom(t, src, addr)
	rc = &rawClient{c: dead, br: bufio.NewReader(dead)}
	if resp := rc.do(t, "GET /p HTTP/1.1\r\nHost: h\r\n\r\n"); resp.StatusCode != 503 {
		t.Fatalf("dead server: status %d, want 503", resp.StatusCode)
	}
	if resp := rc.do(t, "GET /p HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n"); resp.StatusCode != 503 {
		t.Fatalf("dead server: status %d, want 503", resp.StatusCode)
	}
	wantClosed(t, dead, "after the 503 that asked to close")
	wantEntry(t, tbl, src, ds[:6], 0, 4, 4, n+5, n+5, 3)
}

const tcpTrackConfig = `
[defaults]
mode = "tcp"
[[frontend]]
name = "tcp"
bind = ["127.0.0.1:0"]
default_backend = "echo"
stick_table = { type = "ip", size = 10, store = ["conn_cur", "conn_cnt", "sess_cnt", "bytes_in_cnt", "bytes_out_cnt"] }
tcp_request = ["connection track-sc2 src", "connection reject if { sc2_conn_cur gt 1 }"]
[[backend]]
name = "echo"
retries = 0 # a dead server fails at once, without turn-around delays
[[backend.server]]
name = "s1"
address = "%s"
`

// echo writes msg on c and reads it back.
func echo(t *testing.T, c net.Conn, br *bufio.Reader, msg string) {
	t.Helper()
	if _, err := io.WriteString(c, msg); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, len(msg))
	if _, err := io.ReadFull(br, got); err != nil || string(got) != msg {
		t.Fatalf("echo: %q %v, want %q", got, err, msg)
	}
}

// TestTCPTrackTCPMode: in tcp mode the connection's entry counts its
// bytes and conn_cur returns to 0 when it closes, also when no server
// could be reached.
func TestTCPTrackTCPMode(t *testing.T) {
	up := tcpServer(t, echoConn)
	p, _ := clockedProxy(t, tcpTrackConfig, up)
	addr := p.Frontends[0].Addrs()[0].String()
	tbl := p.Table("tcp")
	const src = "127.0.0.25"
	ds := []stick.DataType{stick.ConnCur, stick.ConnCnt, stick.SessCnt, stick.BytesInCnt, stick.BytesOutCnt}

	c1 := dialFrom(t, src, addr)
	br := bufio.NewReader(c1)
	echo(t, c1, br, "hello\n")
	echo(t, c1, br, "again\n")
	wantEntry(t, tbl, src, ds[:3], 1, 1, 1)
	c2 := dialFrom(t, src, addr)
	wantClosed(t, c2, "second connection")
	wantEntry(t, tbl, src, ds[:3], 1, 2, 1)
	c1.Close()
	wantEntry(t, tbl, src, ds, 0, 2, 1, 12, 12)
	if got := p.Frontends[0].DeniedConn.Load(); got != 1 {
		t.Fatalf("denied connections %d, want 1", got)
	}

	// No server: the connection fails after it was tracked; the entry is
	// left as it was found.
	dead, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	deadAddr := dead.Addr().String()
	dead.Close()
	p2, _ := clockedProxy(t, tcpTrackConfig, deadAddr)
	c := dialFrom(t, src, p2.Frontends[0].Addrs()[0].String())
	wantClosed(t, c, "no server")
	wantEntry(t, p2.Table("tcp"), src, ds, 0, 1, 1, 0, 0)
}

// TestTCPTrackReload: a reload keeps the table (same definition) and the
// new proxy's rules track on it, while a connection the old proxy tracked
// keeps its entry until it closes.
func TestTCPTrackReload(t *testing.T) {
	up := tcpServer(t, echoConn)
	parse := func() *conf.Config {
		cfg, err := conf.Parse("t.toml", []byte(fmt.Sprintf(tcpTrackConfig, up)))
		if err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	old, err := New(parse(), zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	if err := old.Start(); err != nil {
		t.Fatal(err)
	}
	addr := old.Frontends[0].Addrs()[0].String()
	tbl := old.Table("tcp")
	ds := []stick.DataType{stick.ConnCur, stick.ConnCnt}
	c1 := dialFrom(t, "127.0.0.26", addr)
	br1 := bufio.NewReader(c1)
	echo(t, c1, br1, "before\n")

	next := reloadTo(t, old, keepBind(parse(), old))
	defer next.Shutdown(context.Background())
	if next.Table("tcp") != tbl {
		t.Fatal("the reload did not keep the table")
	}
	retired := make(chan error, 1)
	go func() { retired <- next.Retire(context.Background(), old) }()
	echo(t, c1, br1, "during\n") // still on the old proxy, still tracked
	wantEntry(t, tbl, "127.0.0.26", ds, 1, 1)
	// The new proxy tracks on the kept table: a second connection from the
	// address is over the limit of 1.
	c2 := dialFrom(t, "127.0.0.26", addr)
	wantClosed(t, c2, "second connection after the reload")
	c3 := dialFrom(t, "127.0.0.27", addr)
	echo(t, c3, bufio.NewReader(c3), "new\n")
	wantEntry(t, tbl, "127.0.0.27", ds, 1, 1)
	c1.Close()
	if err := <-retired; err != nil {
		t.Fatalf("Retire: %v", err)
	}
	c3.Close()
	wantEntry(t, tbl, "127.0.0.26", ds, 0, 2)
	wantEntry(t, tbl, "127.0.0.27", ds, 0, 1)
	if got := next.Frontends[0].DeniedConn.Load(); got != 1 {
		t.Fatalf("new proxy's denied connections %d, want 1", got)
	}
}

// BenchmarkAcceptConn measures the tcp_request connection stage of one
// connection: the rules, and with track-sc the entry's whole life (tracked,
// counted as a session, released at close).
func BenchmarkAcceptConn(b *testing.B) {
	for _, bc := range []struct{ name, rules string }{
		{"reject-rule", `"connection reject if { src 10.0.0.0/8 }"`},
		{"track-limit", `"connection track-sc0 src", "connection reject if { sc0_conn_cur gt 1000 }"`},
	} {
		b.Run(bc.name, func(b *testing.B) {
			cfg, err := conf.Parse("b.toml", []byte(`
[[frontend]]
name = "www"
bind = ["127.0.0.1:0"]
default_backend = "web"
stick_table = { type = "ip", size = 1000, expire = "1m", store = ["conn_cur", "conn_cnt", "conn_rate(10s)", "sess_cnt"] }
tcp_request = [`+bc.rules+`]
[[backend]]
name = "web"
[[backend.server]]
name = "s1"
address = "127.0.0.1:1"
`))
			if err != nil {
				b.Fatal(err)
			}
			p, err := New(cfg, zerolog.Nop())
			if err != nil {
				b.Fatal(err)
			}
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				b.Fatal(err)
			}
			defer ln.Close()
			c, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			fe := p.Frontends[0]
			cc := &clientConn{c: c, src: c.LocalAddr().(*net.TCPAddr).AddrPort()}
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				if !fe.acceptConn(cc) {
					b.Fatal("rejected")
				}
				cc.st.release()
			}
		})
	}
}

// resetConn is a connection reset while it was dialed: every operation
// fails with the reset.
type resetConn struct{ err error }

func (c resetConn) Read([]byte) (int, error)         { return 0, c.err }
func (c resetConn) Write([]byte) (int, error)        { return 0, c.err }
func (c resetConn) Close() error                     { return nil }
func (c resetConn) LocalAddr() net.Addr              { return nil }
func (c resetConn) RemoteAddr() net.Addr             { return nil }
func (c resetConn) SetDeadline(time.Time) error      { return nil }
func (c resetConn) SetReadDeadline(time.Time) error  { return nil }
func (c resetConn) SetWriteDeadline(time.Time) error { return nil }
