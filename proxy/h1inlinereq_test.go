package proxy

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fulcrum-proxy/fulcrum/conf"
	"github.com/rs/zerolog"
)

// The request phase on the reaper (http1 onRequest): a keep-alive
// connection's next request, once its previous one was finished by the
// reaper, is read, routed and sent there when it is simple and a pooled
// connection to a server with a free slot is at hand; else a worker goes
// on from where the reaper stopped (or serves the request whole).

// wantReq checks fe's requests sent by the reaper and handed to a worker
// after it began them: next requests of keep-alive connections (sent,
// handed), and first requests of new connections (fsent, fhanded), which
// are a worker's with H1InlineFirstEnv=0.
func wantReq(t *testing.T, fe *Frontend, sent, handed, fsent, fhanded int64) {
	t.Helper()
	if os.Getenv(H1InlineEnv) == "0" || os.Getenv(H1InlineReqEnv) == "0" {
		sent, handed = 0, 0
	}
	if os.Getenv(H1InlineEnv) != "0" && os.Getenv(H1InlineReqEnv) != "0" && os.Getenv(H1InlineFirstEnv) != "0" {
		sent, handed = sent+fsent, handed+fhanded
	}
	if s, h := fe.h1inl.Sent.Load(), fe.h1inl.Handed.Load(); s != sent || h != handed {
		t.Fatalf("requests: %d sent by the reaper, %d handed to a worker, want %d and %d", s, h, sent, handed)
	}
}

// Keep-alive requests after the first are served wholly by the reaper
// (sent and finished there) on one server connection; the counters are as
// usual. With H1InlineReqEnv=0 the reaper finishes responses only.
func TestInlineReqServed(t *testing.T) {
	for _, on := range []bool{true, false} {
		t.Run(map[bool]string{true: "on", false: "off"}[on], func(t *testing.T) {
			if !on {
				t.Setenv(H1InlineReqEnv, "0")
			}
			up, conns := countingUpstream(t)
			p, fe, addr := inlineProxy(t, up, nil)
			rc := dialRaw(t, addr)
			const n = 20
			for i := range n {
				r := rc.do(t, "GET /r"+strconv.Itoa(i)+" HTTP/1.1\r\nHost: x\r\n\r\n")
				if b := bodyOf(r); r.StatusCode != 200 || b != "/r"+strconv.Itoa(i) {
					t.Fatalf("request %d: %d %q", i, r.StatusCode, b)
				}
			}
			if on {
				wantReq(t, fe, n-1, 0, 0, 1)
			} else {
				wantReq(t, fe, 0, 0, 0, 0)
			}
			wantInline(t, fe, n, 0)
			if got := conns.get(); got != 1 {
				t.Fatalf("%d server connections, want 1", got)
			}
			srv := p.Backends[0].Servers()[0]
			if got := srv.Counters.Hrsp[2].Load(); got != n {
				t.Fatalf("server 2xx %d, want %d", got, n)
			}
			if got := fe.Counters.Hrsp[2].Load(); got != n {
				t.Fatalf("frontend 2xx %d, want %d", got, n)
			}
			if got := srv.Counters.Stot.Load(); got != n {
				t.Fatalf("server stot %d, want %d", got, n)
			}
			if got := p.Backends[0].Counters.Stot.Load(); got != n {
				t.Fatalf("backend stot %d, want %d", got, n)
			}
		})
	}
}

// countingUpstream answers each request with its path as the body, on
// keep-alive connections.
func countingUpstream(t *testing.T) (string, *counter) {
	return scriptUpstream(t, func(_ int, c net.Conn, br *bufio.Reader) {
		for {
			req, err := http.ReadRequest(br)
			if err != nil {
				return
			}
			body, _ := io.ReadAll(req.Body)
			out := req.URL.Path
			if len(body) > 0 {
				out += ":" + string(body)
			}
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: "+strconv.Itoa(len(out))+"\r\n\r\n"+out)
		}
	})
}

// A head in two parts: the reaper leaves it to a worker (nothing begun);
// a body, a deny rule, the stats page: the reaper hands the request on
// after its head; the next simple request is the reaper's again.
func TestInlineReqFallbacks(t *testing.T) {
	if os.Getenv(H1InlineEnv) == "0" {
		t.Skip("it waits for the client parked on the reaper: nothing parks with " + H1InlineEnv + "=0")
	}
	up, _ := countingUpstream(t)
	cfg := epollConfig(t, conf.ModeHTTP, []string{up})
	cfg.Backends[0].HTTPReuse = "always"
	{
		rules, err := conf.Parse("deny.toml", []byte(`
[[frontend]]
name = "f"
bind = ["127.0.0.1:0"]
default_backend = "b"
http_request = ["deny if { path /deny }"]
[[backend]]
name = "b"
[[backend.server]]
name = "s"
address = "127.0.0.1:1"
`))
		if err != nil {
			t.Fatal(err)
		}
		cfg.Frontends[0].Rules = rules.Frontends[0].Rules
	}
	p, err := New(cfg, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	p.Frontends[0].SetLocalHandler("/stats", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		io.WriteString(w, "<html>local")
	}))
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		p.Shutdown(ctx)
	})
	fe, addr := p.Frontends[0], p.Frontends[0].Addrs()[0].String()
	rc := dialRaw(t, addr)
	if b := bodyOf(rc.do(t, "GET /a HTTP/1.1\r\nHost: x\r\n\r\n")); b != "/a" {
		t.Fatalf("first: %q", b)
	}
	// Half a head: the reaper's wake-up dispatches a worker, which waits
	// for the rest.
	waitFor(t, 10*time.Second, "the client parked", func() bool { return p.group.Awaiting() == 1 })
	io.WriteString(rc.c, "GET /b HTTP/1.1\r\nHo")
	waitFor(t, 10*time.Second, "a worker reading", func() bool { return p.group.Awaiting() == 0 })
	if b := bodyOf(rc.do(t, "st: x\r\n\r\n")); b != "/b" {
		t.Fatalf("two parts: %q", b)
	}
	wantReq(t, fe, 0, 0, 0, 1)
	// Each fallback's answer comes from a worker: the next request is a
	// worker's too; the one after, the reaper's.
	if b := bodyOf(rc.do(t, "POST /c HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc")); b != "/c:abc" {
		t.Fatalf("body: %q", b)
	}
	wantReq(t, fe, 0, 1, 0, 1)
	if b := bodyOf(rc.do(t, "GET /e1 HTTP/1.1\r\nHost: x\r\n\r\n")); b != "/e1" {
		t.Fatalf("e1: %q", b)
	}
	if r := rc.do(t, "GET /deny HTTP/1.1\r\nHost: x\r\n\r\n"); r.StatusCode != 403 {
		t.Fatalf("deny: %d", r.StatusCode)
	}
	wantReq(t, fe, 0, 2, 0, 1)
	if b := bodyOf(rc.do(t, "GET /e2 HTTP/1.1\r\nHost: x\r\n\r\n")); b != "/e2" {
		t.Fatalf("e2: %q", b)
	}
	if r := rc.do(t, "GET /stats HTTP/1.1\r\nHost: x\r\n\r\n"); r.StatusCode != 200 {
		t.Fatalf("stats: %d", r.StatusCode)
	} else if b := bodyOf(r); !strings.Contains(b, "<html") {
		t.Fatalf("stats page: %.200q", b)
	}
	wantReq(t, fe, 0, 3, 0, 1)
	if b := bodyOf(rc.do(t, "GET /e3 HTTP/1.1\r\nHost: x\r\n\r\n")); b != "/e3" {
		t.Fatalf("e3: %q", b)
	}
	if b := bodyOf(rc.do(t, "GET /d HTTP/1.1\r\nHost: x\r\n\r\n")); b != "/d" {
		t.Fatalf("after: %q", b)
	}
	wantReq(t, fe, 1, 3, 0, 1)
	// Credentials (a password check may be long): a worker's.
	if b := bodyOf(rc.do(t, "GET /f HTTP/1.1\r\nHost: x\r\nAuthorization: Basic YTpi\r\n\r\n")); b != "/f" {
		t.Fatalf("auth: %q", b)
	}
	wantReq(t, fe, 1, 4, 0, 1)
	if got := fe.Counters.Dreq.Load(); got != 1 {
		t.Fatalf("denied %d, want 1", got)
	}
	if got := p.Backends[0].Servers()[0].Counters.Hrsp[2].Load(); got != 8 {
		t.Fatalf("server 2xx %d, want 8", got)
	}
}

// Pipelined requests: the reaper sends the first, the second waits in the
// client's reader and a worker serves it after; the responses are in order.
func TestInlineReqPipelined(t *testing.T) {
	if os.Getenv(H1InlineEnv) == "0" {
		t.Skip("it waits for the client parked on the reaper: nothing parks with " + H1InlineEnv + "=0")
	}
	up, _ := countingUpstream(t)
	p, fe, addr := inlineProxy(t, up, nil)
	rc := dialRaw(t, addr)
	if b := bodyOf(rc.do(t, "GET /a HTTP/1.1\r\nHost: x\r\n\r\n")); b != "/a" {
		t.Fatalf("first: %q", b)
	}
	waitFor(t, 10*time.Second, "the client parked", func() bool { return p.group.Awaiting() == 1 })
	rc.c.SetDeadline(time.Now().Add(10 * time.Second))
	io.WriteString(rc.c, "GET /b HTTP/1.1\r\nHost: x\r\n\r\nGET /c HTTP/1.1\r\nHost: x\r\n\r\n")
	for _, want := range []string{"/b", "/c"} {
		r, err := http.ReadResponse(rc.br, nil)
		if err != nil {
			t.Fatal(err)
		}
		if b := bodyOf(r); b != want {
			t.Fatalf("got %q, want %q", b, want)
		}
	}
	wantReq(t, fe, 1, 0, 0, 1)
	wantInline(t, fe, 3, 0)
}

// A server at its maxconn with a request held: the next request, which
// the reaper cannot assign without a queue, goes to a worker where serve
// takes a slot (it queues), and is served when the slot frees.
func TestInlineReqQueued(t *testing.T) {
	held := make(chan struct{}, 1)
	answer, release := gate()
	up, _ := scriptUpstream(t, func(_ int, c net.Conn, br *bufio.Reader) {
		for {
			req, err := http.ReadRequest(br)
			if err != nil {
				return
			}
			if req.URL.Path == "/hold" {
				held <- struct{}{}
				<-answer
			}
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: "+strconv.Itoa(len(req.URL.Path))+"\r\n\r\n"+req.URL.Path)
		}
	})
	t.Cleanup(release)
	p, fe, addr := inlineProxy(t, up, func(cfg *conf.Config) {
		cfg.Backends[0].Servers[0].MaxConn = 1
	})
	rc := dialRaw(t, addr)
	if b := bodyOf(rc.do(t, "GET /a HTTP/1.1\r\nHost: x\r\n\r\n")); b != "/a" {
		t.Fatalf("first: %q", b)
	}
	// The client has the response before the server connection is back
	// in the pool: wait for it there, or /hold may find none (and dial).
	srv := p.Backends[0].Servers()[0]
	waitFor(t, 10*time.Second, "the server connection in the pool", func() bool {
		safe, unsafe := srv.IdleConns()
		return safe+unsafe == 1
	})
	other := dialRaw(t, addr)
	other.c.SetDeadline(time.Now().Add(10 * time.Second))
	io.WriteString(other.c, "GET /hold HTTP/1.1\r\nHost: x\r\n\r\n")
	<-held
	rc.c.SetDeadline(time.Now().Add(10 * time.Second))
	io.WriteString(rc.c, "GET /b HTTP/1.1\r\nHost: x\r\n\r\n")
	be := p.Backends[0]
	waitFor(t, 10*time.Second, "the request queued", func() bool { return be.queue.Len(-1) == 1 })
	release()
	for _, c := range []struct {
		rc   *rawClient
		want string
	}{{other, "/hold"}, {rc, "/b"}} {
		r, err := http.ReadResponse(c.rc.br, nil)
		if err != nil {
			t.Fatal(err)
		}
		if b := bodyOf(r); b != c.want {
			t.Fatalf("got %q, want %q", b, c.want)
		}
	}
	wantReq(t, fe, 0, 1, 1, 1)
	if got := be.Servers()[0].Counters.Stot.Load(); got != 3 {
		t.Fatalf("server stot %d, want 3", got)
	}
}

// No pooled connection (another client's request holds the only one):
// the reaper assigns the server and a worker dials, from there.
func TestInlineReqNoPooledConn(t *testing.T) {
	held := make(chan struct{}, 1)
	answer, release := gate()
	up, conns := scriptUpstream(t, func(_ int, c net.Conn, br *bufio.Reader) {
		for {
			req, err := http.ReadRequest(br)
			if err != nil {
				return
			}
			if req.URL.Path == "/hold" {
				held <- struct{}{}
				<-answer
			}
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: "+strconv.Itoa(len(req.URL.Path))+"\r\n\r\n"+req.URL.Path)
		}
	})
	t.Cleanup(release)
	p, fe, addr := inlineProxy(t, up, nil)
	rc := dialRaw(t, addr)
	if b := bodyOf(rc.do(t, "GET /a HTTP/1.1\r\nHost: x\r\n\r\n")); b != "/a" {
		t.Fatalf("first: %q", b)
	}
	// The client has the response before the server connection is back
	// in the pool: wait for it there, or /hold may find none (and dial).
	srv := p.Backends[0].Servers()[0]
	waitFor(t, 10*time.Second, "the server connection in the pool", func() bool {
		safe, unsafe := srv.IdleConns()
		return safe+unsafe == 1
	})
	other := dialRaw(t, addr)
	other.c.SetDeadline(time.Now().Add(10 * time.Second))
	io.WriteString(other.c, "GET /hold HTTP/1.1\r\nHost: x\r\n\r\n")
	<-held
	if b := bodyOf(rc.do(t, "GET /b HTTP/1.1\r\nHost: x\r\n\r\n")); b != "/b" {
		t.Fatalf("second: %q", b)
	}
	if os.Getenv(H1InlineEnv) != "0" && os.Getenv(H1InlineReqEnv) != "0" && os.Getenv(H1InlineFirstEnv) != "0" &&
		fe.h1inl.Sent.Load() == 0 && fe.h1inl.Handed.Load() == 2 {
		// On a loaded machine /hold may be served by a worker from its
		// start, the reaper beginning nothing (seen 4 times in 200 runs
		// beside two busy loops, before and after 2026-12-04's changes;
		// not looked into further): what matters here is that /b, with
		// no pooled connection left, dials (2 connections).
		t.Logf("/hold was served by a worker")
	} else {
		wantReq(t, fe, 0, 1, 1, 1)
	}
	if got := conns.get(); got != 2 {
		t.Fatalf("%d server connections, want 2", got)
	}
	release()
	r, err := http.ReadResponse(other.br, nil)
	if err != nil {
		t.Fatal(err)
	}
	if b := bodyOf(r); b != "/hold" {
		t.Fatalf("held: %q", b)
	}
	if got := srv.Counters.Stot.Load(); got != 3 {
		t.Fatalf("server stot %d, want 3", got)
	}
}

// timeout http-request while the connection waits for its next request:
// closed silently at its end; a client that closes: closed, nothing left.
func TestInlineReqIdleEnds(t *testing.T) {
	up, _ := countingUpstream(t)
	_, fe, addr := inlineProxy(t, up, func(cfg *conf.Config) {
		cfg.Frontends[0].TimeoutHTTPRequest = 300 * time.Millisecond
	})
	rc := dialRaw(t, addr)
	if b := bodyOf(rc.do(t, "GET /a HTTP/1.1\r\nHost: x\r\n\r\n")); b != "/a" {
		t.Fatalf("first: %q", b)
	}
	start := time.Now()
	rc.c.SetDeadline(time.Now().Add(10 * time.Second))
	n, err := rc.br.Read(make([]byte, 1))
	if took := time.Since(start); n != 0 || err != io.EOF || took < 250*time.Millisecond {
		t.Fatalf("idle end: %d, %v after %v; want EOF after 300ms", n, err, took)
	}
	rc2 := dialRaw(t, addr)
	if b := bodyOf(rc2.do(t, "GET /b HTTP/1.1\r\nHost: x\r\n\r\n")); b != "/b" {
		t.Fatalf("second client: %q", b)
	}
	rc2.c.Close()
	waitFor(t, 10*time.Second, "the clients closed", func() bool { return fe.Counters.Scur.Load() == 0 })
	wantReq(t, fe, 0, 0, 1, 1)
	if got := fe.Counters.Hrsp[4].Load(); got != 0 {
		t.Fatalf("4xx %d, want 0", got)
	}
}

// A request the reaper sent: its log line is the usual one; `shutdown
// session` while its response is awaited kills it (K-), as a worker's.
func TestInlineReqLogAndShutdownSession(t *testing.T) {
	held := make(chan struct{}, 1)
	answer, release := gate()
	up, _ := scriptUpstream(t, func(_ int, c net.Conn, br *bufio.Reader) {
		for {
			req, err := http.ReadRequest(br)
			if err != nil {
				return
			}
			if req.URL.Path == "/hold" {
				held <- struct{}{}
				<-answer
			}
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: "+strconv.Itoa(len(req.URL.Path))+"\r\n\r\n"+req.URL.Path)
		}
	})
	t.Cleanup(release)
	cfg := epollConfig(t, conf.ModeHTTP, []string{up})
	cfg.Backends[0].HTTPReuse = "always"
	p, addr, logs := startLoggedProxy(t, cfg)
	fe := p.Frontends[0]
	rc := dialRaw(t, addr)
	for _, path := range []string{"/one", "/two"} {
		if b := bodyOf(rc.do(t, "GET "+path+" HTTP/1.1\r\nHost: x\r\n\r\n")); b != path {
			t.Fatalf("got %q", b)
		}
	}
	waitFor(t, 5*time.Second, "two log lines", func() bool { return len(logs.lines()) == 2 })
	for i, path := range []string{"/one", "/two"} {
		line := logs.lines()[i]
		wantFlags(t, line, "--")
		if line["status"] != float64(200) || line["request"] != "GET "+path+" HTTP/1.1" || line["server"] != "s1" {
			t.Fatalf("log line %d: %v", i, line)
		}
	}
	wantReq(t, fe, 1, 0, 0, 1)
	rc.c.SetDeadline(time.Now().Add(10 * time.Second))
	io.WriteString(rc.c, "GET /hold HTTP/1.1\r\nHost: x\r\n\r\n")
	<-held
	waitParked(t, p)
	wantReq(t, fe, 2, 0, 0, 1)
	killed := 0
	for _, s := range p.Sessions() {
		if s.Active && s.Server == "s1" && p.ShutdownSession(s.ID) {
			killed++
		}
	}
	release()
	if killed != 1 {
		t.Fatalf("%d sessions shut down, want 1 (%+v)", killed, p.Sessions())
	}
	if _, err := io.ReadAll(rc.br); err != nil {
		t.Fatalf("after the shutdown: %v, want the connection closed", err)
	}
	waitFor(t, 5*time.Second, "the killed request's log line", func() bool { return len(logs.lines()) == 3 })
	// KH, or KD when the server's answer (released just after the kill)
	// was read before the closed connections were seen.
	if f, _ := logs.lines()[2]["termination_state"].(string); f != "KH" && f != "KD" {
		t.Fatalf("termination state %q, want KH or KD", f)
	}
	waitFor(t, 5*time.Second, "the client closed", func() bool { return fe.Counters.Scur.Load() == 0 })
}

// A client that half-closes right after its next request (its end of the
// stream may reach the reaper with the request) still has the request
// sent by the reaper, its response, then the connection's close.
func TestInlineReqHalfClosed(t *testing.T) {
	up, _ := countingUpstream(t)
	_, fe, addr := inlineProxy(t, up, nil)
	rc := dialRaw(t, addr)
	if r := rc.do(t, "GET /first HTTP/1.1\r\nHost: x\r\n\r\n"); r.StatusCode != 200 {
		t.Fatalf("first request: %d", r.StatusCode)
	}
	if os.Getenv(H1InlineEnv) != "0" {
		waitFor(t, 5*time.Second, "the connection to wait for its next request on the reaper", func() bool { return fe.h1inl.Finished.Load() == 1 })
	}
	rc.c.SetDeadline(time.Now().Add(10 * time.Second))
	io.WriteString(rc.c, "GET /last HTTP/1.1\r\nHost: x\r\n\r\n")
	rc.c.(*net.TCPConn).CloseWrite()
	resp, err := http.ReadResponse(rc.br, nil)
	if err != nil {
		t.Fatalf("read response: %v", err)
	}
	if b, _ := io.ReadAll(resp.Body); resp.StatusCode != 200 || string(b) != "/last" {
		t.Fatalf("last request: %d %q", resp.StatusCode, b)
	}
	if rest, err := io.ReadAll(rc.br); err != nil || len(rest) != 0 {
		t.Fatalf("after the last response: %q %v, want the close", rest, err)
	}
	wantReq(t, fe, 1, 0, 0, 1)
}

// The reaper's callbacks read the clock once for all they do (setClock);
// a request they hand to a worker reads it again. Each request here is
// begun by the reaper: a body hands it on after its head (the worker
// sends it), a chunked response hands its relay on; the server answers
// each after 150 ms: their Tr and Ta must show it (a clock left set would
// give 0).
func TestInlineClockHandedOn(t *testing.T) {
	const delay = 150 * time.Millisecond
	up, _ := scriptUpstream(t, func(_ int, c net.Conn, br *bufio.Reader) {
		for {
			req, err := http.ReadRequest(br)
			if err != nil {
				return
			}
			io.Copy(io.Discard, req.Body)
			if req.URL.Path != "/first" {
				time.Sleep(delay) // the server's answer time, what the log must show
			}
			if req.URL.Path == "/chunked" {
				io.WriteString(c, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n")
				continue
			}
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
		}
	})
	cfg := epollConfig(t, conf.ModeHTTP, []string{up})
	cfg.Backends[0].HTTPReuse = "always"
	_, addr, logs := startLoggedProxy(t, cfg)
	rc := dialRaw(t, addr)
	for _, req := range []string{
		"GET /first HTTP/1.1\r\nHost: x\r\n\r\n",
		"POST /body HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc",
		"GET /chunked HTTP/1.1\r\nHost: x\r\n\r\n",
		"GET /plain HTTP/1.1\r\nHost: x\r\n\r\n",
	} {
		if r := rc.do(t, req); r.StatusCode != 200 {
			t.Fatalf("%q: status %d", req, r.StatusCode)
		}
	}
	waitFor(t, 5*time.Second, "four log lines", func() bool { return len(logs.lines()) == 4 })
	for _, line := range logs.lines() {
		if line["request"] == "GET /first HTTP/1.1" {
			continue // answered at once
		}
		tr, _ := line["Tr"].(float64)
		ta, _ := line["Ta"].(float64)
		if tr < float64(delay.Milliseconds()) || ta < tr {
			t.Errorf("%v: Tr %v, Ta %v: want Tr >= %d and Ta >= Tr", line["request"], tr, ta, delay.Milliseconds())
		}
	}
}

// A response whose head comes before its body (Content-Length, small
// enough to be waited for by the pollers): Tr is the time to the head,
// as HAProxy's, not to the end of the body (a fresh-user trial saw Tr
// equal to Ta on every such response). The server sends each body only
// once the pollers, having read the head, handed the response to a
// worker (the Continued count), and bodyDelay after that: Ta - Tr must
// hold it.
func TestInlineTrIsHeadTime(t *testing.T) {
	if os.Getenv(H1InlineEnv) == "0" {
		t.Skip("the pollers read no response with " + H1InlineEnv + "=0")
	}
	const bodyDelay = 200 * time.Millisecond
	headRead := make(chan struct{}, 1)
	up, _ := scriptUpstream(t, func(_ int, c net.Conn, br *bufio.Reader) {
		for {
			if _, err := http.ReadRequest(br); err != nil {
				return
			}
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n")
			<-headRead
			time.Sleep(bodyDelay) // the gap between head and body, what Tr must not include
			io.WriteString(c, "ok")
		}
	})
	cfg := epollConfig(t, conf.ModeHTTP, []string{up})
	cfg.Backends[0].HTTPReuse = "always"
	p, addr, logs := startLoggedProxy(t, cfg)
	handed := &p.Frontends[0].h1inl.Continued
	rc := dialRaw(t, addr)
	const n = 3
	for i := range n {
		before := handed.Load()
		got := make(chan *http.Response, 1)
		go func() { got <- rc.do(t, "GET / HTTP/1.1\r\nHost: x\r\n\r\n") }()
		waitFor(t, 5*time.Second, "the head read and handed on", func() bool { return handed.Load() > before })
		headRead <- struct{}{}
		if r := <-got; r.StatusCode != 200 || bodyOf(r) != "ok" {
			t.Fatalf("request %d: status %d", i, r.StatusCode)
		}
	}
	waitFor(t, 5*time.Second, "the log lines", func() bool { return len(logs.lines()) == n })
	for i, line := range logs.lines() {
		tr, _ := line["Tr"].(float64)
		ta, _ := line["Ta"].(float64)
		if ta-tr < float64(bodyDelay.Milliseconds()-2) {
			t.Errorf("request %d: Tr %v, Ta %v: want Ta - Tr >= %d (the body came that long after the head)", i, tr, ta, bodyDelay.Milliseconds()-2)
		}
	}
}
