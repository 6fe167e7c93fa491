package proxy

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/fulcrum-proxy/fulcrum/conf"
)

func TestLocalHandler(t *testing.T) {
	u := newUpstream(t, "s1")
	cfg := testConfig(conf.ModeHTTP, []string{u.addr()}, nil)
	p, err := New(cfg, nopLogger())
	if err != nil {
		t.Fatal(err)
	}
	p.Frontends[0].SetLocalHandler("/stats", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(201)
		fmt.Fprintf(w, "%s %s from %s body=%q", r.Method, r.URL.String(), strings.Split(r.RemoteAddr, ":")[0], b)
	}))
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Shutdown(contextBackground()) })
	addr := p.Frontends[0].Addrs()[0].String()
	rc := dialRaw(t, addr)
	resp := rc.do(t, "POST /stats;csv?x=1 HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello")
	if got, want := bodyOf(resp), `POST /stats;csv?x=1 from 127.0.0.1 body="hello"`; resp.StatusCode != 201 || got != want {
		t.Errorf("got %d %q, want 201 %q", resp.StatusCode, got, want)
	}
	// The same connection still proxies other paths.
	resp = rc.do(t, "GET /app HTTP/1.1\r\nHost: x\r\n\r\n")
	if b := bodyOf(resp); resp.StatusCode != 200 || strings.TrimSpace(b) != "s1" {
		t.Errorf("proxied request after local one: got %d %q", resp.StatusCode, b)
	}
	if u.requests.Load() != 1 {
		t.Errorf("upstream requests: got %d, want 1", u.requests.Load())
	}
	waitFor(t, time.Second, "counters", func() bool { return p.Snapshot().Frontends[0].Hrsp2xx == 2 })
}

// TestLocalHandlerH2: a local answer to an HTTP/2 stream sees the request
// as net/http would (method, URL with its query, a field, the client's
// address, the body) and its response goes back whole; the connection
// goes on proxying.
func TestLocalHandlerH2(t *testing.T) {
	u := newUpstream(t, "s1")
	cfg := testConfig(conf.ModeHTTP, []string{u.addr()}, nil)
	cfg.Frontends[0].BindOptions = []*conf.Bind{{Addr: "127.0.0.1:0", Proto: "h2"}}
	p, err := New(cfg, nopLogger())
	if err != nil {
		t.Fatal(err)
	}
	p.Frontends[0].SetLocalHandler("/stats", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "text/plain")
		w.Header().Set("X-Local", "yes")
		w.WriteHeader(201)
		fmt.Fprintf(w, "%s %s %s from %s x-a=%q body=%q", r.Proto, r.Method, r.URL.String(),
			strings.Split(r.RemoteAddr, ":")[0], r.Header.Get("X-A"), b)
	}))
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Shutdown(contextBackground()) })
	addr := p.Frontends[0].Addrs()[0].String()
	tr := h2cTransport()
	defer tr.CloseIdleConnections()
	req, _ := http.NewRequest("POST", "http://"+addr+"/stats;csv?x=1", strings.NewReader("hello"))
	req.Header.Set("X-A", "1")
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	want := `HTTP/2.0 POST /stats;csv?x=1 from 127.0.0.1 x-a="1" body="hello"`
	if resp.StatusCode != 201 || string(b) != want || resp.Header.Get("X-Local") != "yes" {
		t.Errorf("got %d %q (X-Local %q), want 201 %q", resp.StatusCode, b, resp.Header.Get("X-Local"), want)
	}
	resp, err = tr.RoundTrip(mustReq(t, "http://"+addr+"/app"))
	if err != nil {
		t.Fatal(err)
	}
	b, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || strings.TrimSpace(string(b)) != "s1" {
		t.Errorf("proxied request after the local one: got %d %q", resp.StatusCode, b)
	}
}

// A local answer bigger than the client's write buffer (the HTML stats
// page) counts all its bytes in the frontend's bytes out, as a small one.
func TestLocalHandlerCountsBigBody(t *testing.T) {
	u := newUpstream(t, "s1")
	cfg := testConfig(conf.ModeHTTP, []string{u.addr()}, nil)
	p, err := New(cfg, nopLogger())
	if err != nil {
		t.Fatal(err)
	}
	body := strings.Repeat("0123456789abcdef", 4096) // 64 KiB
	p.Frontends[0].SetLocalHandler("/stats", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, body)
	}))
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Shutdown(contextBackground()) })
	c, err := net.Dial("tcp", p.Frontends[0].Addrs()[0].String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	io.WriteString(c, "GET /stats HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
	got, err := io.ReadAll(c)
	if err != nil || !strings.HasSuffix(string(got), body) {
		t.Fatalf("read %d bytes (%v), want the head and the 64 KiB body", len(got), err)
	}
	waitFor(t, 5*time.Second, "bytes out counted", func() bool { return p.Snapshot().Frontends[0].Bout == int64(len(got)) })
}

// A request a local handler (the stats page) answers is logged as HAProxy
// 2.6 logs its stats applet's (measured: 0/0/0/0/0 200 ... LR--): Tw, Tc
// and Tr 0, flags LR.
func TestLocalHandlerLogLine(t *testing.T) {
	u := newUpstream(t, "s1")
	buf := &syncBuffer{}
	p, err := New(testConfig(conf.ModeHTTP, []string{u.addr()}, nil), zerolog.New(buf).Level(zerolog.InfoLevel))
	if err != nil {
		t.Fatal(err)
	}
	p.Frontends[0].SetLocalHandler("/stats", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "stats")
	}))
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Shutdown(contextBackground()) })
	rc := dialRaw(t, p.Frontends[0].Addrs()[0].String())
	if resp := rc.do(t, "GET /stats HTTP/1.1\r\nHost: x\r\n\r\n"); resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	waitFor(t, 5*time.Second, "the log line", func() bool { return len(buf.lines()) == 1 })
	l := buf.lines()[0]
	if l["termination_state"] != "LR" || l["Tw"] != float64(0) || l["Tc"] != float64(0) || l["Tr"] != float64(0) || l["status"] != float64(200) {
		t.Errorf("log line %v, want 200 LR with Tw Tc Tr 0", l)
	}
}
