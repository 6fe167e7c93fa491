package proxy

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fulcrum-proxy/fulcrum/conf"
	"github.com/fulcrum-proxy/fulcrum/proxy/netio"
)

// Faults (issue 11, point 4), each observed by a real client against the
// real proxy on loopback: what the client gets, the counters of the
// frontend, backend and server, and the access log's termination state.
// The expected counters are what HAProxy 2.6.12 counts in the same case
// (measured on loopback with the same faults); where fulcrum differs on
// purpose, the test says so. File descriptor exhaustion is in
// faults_linux_test.go.

// faultCounts are the counters a fault moves.
type faultCounts struct {
	Ereq, Eresp, CliAbrt, SrvAbrt int64
	Hrsp2xx, Hrsp4xx, Hrsp5xx     int64
}

func countsOf(v CounterValues) faultCounts {
	return faultCounts{v.Ereq, v.Eresp, v.CliAbrt, v.SrvAbrt, v.Hrsp2xx, v.Hrsp4xx, v.Hrsp5xx}
}

// waitCounts waits until the frontend, backend and first server of p show
// the given counters (they are updated around the reply, so a client may
// see its reply an instant before they are).
func waitCounts(t *testing.T, p *Proxy, fe, be, srv faultCounts) {
	t.Helper()
	var got [3]faultCounts
	want := [3]faultCounts{fe, be, srv}
	deadline := time.Now().Add(5 * time.Second)
	for {
		snap := p.Snapshot()
		got = [3]faultCounts{countsOf(snap.Frontends[0].CounterValues),
			countsOf(snap.Backends[0].CounterValues), countsOf(snap.Backends[0].Servers[0].CounterValues)}
		if got == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("counters:\n got  fe %+v\n      be %+v\n      srv %+v\n want fe %+v\n      be %+v\n      srv %+v",
				got[0], got[1], got[2], want[0], want[1], want[2])
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// waitLogLine waits for the access-log line with the given status (-1:
// none sent) and returns it.
func waitLogLine(t *testing.T, buf *syncBuffer, status int) map[string]any {
	t.Helper()
	var line map[string]any
	waitFor(t, 5*time.Second, fmt.Sprintf("the log line of status %d", status), func() bool {
		for _, l := range buf.lines() {
			if l["status"] == float64(status) && l["termination_state"] != nil {
				line = l
				return true
			}
		}
		return false
	})
	return line
}

// wantFlags checks a log line's termination state.
func wantFlags(t *testing.T, line map[string]any, flags string) {
	t.Helper()
	if line["termination_state"] != flags {
		t.Errorf("termination_state %v, want %s (line %v)", line["termination_state"], flags, line)
	}
}

// expectClosed checks that the proxy closed the client connection: nothing
// more comes (no second response), and the read ends without a timeout.
func expectClosed(t *testing.T, rc *rawClient) {
	t.Helper()
	rc.c.SetReadDeadline(time.Now().Add(10 * time.Second))
	b, err := io.ReadAll(rc.br)
	if len(b) > 0 || netio.IsTimeout(err) {
		t.Errorf("after the reply: read %q, %v; want the connection closed", b, err)
	}
}

// faultServer is an upstream that serves GET /ok normally (keep-alive) and
// hands any other request to fault once its head and body are read.
func faultServer(t *testing.T, fault func(c *net.TCPConn, req *http.Request)) string {
	return tcpServer(t, func(c *net.TCPConn) {
		br := bufio.NewReader(c)
		for {
			req, err := http.ReadRequest(br)
			if err != nil {
				return
			}
			if _, err := io.Copy(io.Discard, req.Body); err != nil {
				return
			}
			if req.URL.Path != "/ok" {
				fault(c, req)
				return
			}
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nok\n")
		}
	})
}

// reset closes c with an RST instead of a FIN.
func reset(c *net.TCPConn) {
	c.SetLinger(0)
	c.Close()
}

// wantServed checks that the proxy still serves a request on a new
// connection after a fault.
func wantServed(t *testing.T, addr string) {
	t.Helper()
	resp := dialRaw(t, addr).do(t, "GET /ok HTTP/1.1\r\nHost: x\r\n\r\n")
	if resp.StatusCode != 200 || bodyOf(resp) != "ok\n" {
		t.Errorf("after the fault: status %d, want 200 ok", resp.StatusCode)
	}
}

// An upstream that resets the connection before any response byte: the
// client gets HAProxy's 502 page and the connection stays open for its
// next request, as HAProxy 2.6 keeps it (it used to close: a fresh-user
// trial saw curl reuse HAProxy's connection and not fulcrum's). HAProxy
// 2.6 counts eresp on the server and the backend (twice for a reset: once
// for the connection error and once for the missing response; fulcrum
// counts the one failed response once) and hrsp_5xx on the frontend and
// the backend, not on the server, which sent no status; SH in the log.
// A request that asked to close gets the page with connection: close.
func TestFaultServerResetBeforeResponse(t *testing.T) {
	up := faultServer(t, func(c *net.TCPConn, _ *http.Request) { reset(c) })
	p, addr, logs := startLoggedProxy(t, testConfig(conf.ModeHTTP, []string{up}, nil))
	rc := dialRaw(t, addr)
	resp := rc.do(t, "GET /reset HTTP/1.1\r\nHost: x\r\n\r\n")
	if body := bodyOf(resp); resp.StatusCode != 502 || body != errorPage(502) || resp.Close {
		t.Errorf("got %d %q close=%v, want HAProxy's 502 page, the connection kept", resp.StatusCode, body, resp.Close)
	}
	if resp := rc.do(t, "GET /ok HTTP/1.1\r\nHost: x\r\n\r\n"); resp.StatusCode != 200 {
		t.Errorf("the next request on the connection: %d, want 200", resp.StatusCode)
	}
	resp = rc.do(t, "GET /reset HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
	if resp.StatusCode != 502 || !resp.Close {
		t.Errorf("with Connection: close: %d close=%v, want 502 and connection: close", resp.StatusCode, resp.Close)
	}
	expectClosed(t, rc)
	waitCounts(t, p,
		faultCounts{Hrsp2xx: 1, Hrsp5xx: 2},
		faultCounts{Eresp: 2, Hrsp2xx: 1, Hrsp5xx: 2},
		faultCounts{Eresp: 2, Hrsp2xx: 1})
	wantFlags(t, waitLogLine(t, logs, 502), "SH")
	wantServed(t, addr)
}

// An upstream that resets the connection after the response head and part
// of the body: the client has the head and the part, then the connection
// closes, so it sees a short body (never a hang, never a second response).
// HAProxy 2.6 counts eresp and srv_abrt on the server and the backend, and
// the status (2xx) that was relayed; SD in the log.
func TestFaultServerResetMidBody(t *testing.T) {
	for _, tc := range []struct {
		name, head, part string
	}{
		{"content-length", "HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n", strings.Repeat("x", 1000)},
		{"chunked", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", "10\r\n0123456789abcdef\r\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sent := make(chan struct{}) // the client has the part
			up := faultServer(t, func(c *net.TCPConn, _ *http.Request) {
				io.WriteString(c, tc.head+tc.part)
				select {
				case <-sent:
				case <-time.After(10 * time.Second):
				}
				reset(c)
			})
			p, addr, logs := startLoggedProxy(t, testConfig(conf.ModeHTTP, []string{up}, nil))
			rc := dialRaw(t, addr)
			rc.c.SetDeadline(time.Now().Add(10 * time.Second))
			io.WriteString(rc.c, "GET /cut HTTP/1.1\r\nHost: x\r\n\r\n")
			resp, err := http.ReadResponse(rc.br, nil)
			if err != nil {
				t.Fatalf("reading the head: %v", err)
			}
			// The part reaches the client while the server is still
			// connected: the proxy streams what it has.
			n := 1000
			if resp.ContentLength < 0 {
				n = 16
			}
			if _, err := io.ReadFull(resp.Body, make([]byte, n)); err != nil {
				t.Fatalf("reading the first %d body bytes: %v", n, err)
			}
			close(sent)
			rest, err := io.ReadAll(resp.Body)
			if !errors.Is(err, io.ErrUnexpectedEOF) {
				t.Errorf("rest of the body: %d bytes, %v; want io.ErrUnexpectedEOF", len(rest), err)
			}
			expectClosed(t, rc)
			waitCounts(t, p,
				faultCounts{Hrsp2xx: 1},
				faultCounts{Eresp: 1, SrvAbrt: 1, Hrsp2xx: 1},
				faultCounts{Eresp: 1, SrvAbrt: 1, Hrsp2xx: 1})
			wantFlags(t, waitLogLine(t, logs, 200), "SD")
			wantServed(t, addr)
		})
	}
}

// An upstream that accepts and reads the request but never answers: 504
// after timeout_server. HAProxy 2.6: eresp on the server and the backend,
// hrsp_5xx on the frontend and the backend; sH.
func TestFaultServerNeverAnswers(t *testing.T) {
	up := faultServer(t, func(c *net.TCPConn, _ *http.Request) {
		c.Read(make([]byte, 1)) // until the proxy closes
	})
	cfg := testConfig(conf.ModeHTTP, []string{up}, nil)
	cfg.Backends[0].TimeoutServer = 200 * time.Millisecond
	p, addr, logs := startLoggedProxy(t, cfg)
	rc := dialRaw(t, addr)
	start := time.Now()
	resp := rc.do(t, "GET /hang HTTP/1.1\r\nHost: x\r\n\r\n")
	if body := bodyOf(resp); resp.StatusCode != 504 || body != errorPage(504) {
		t.Errorf("got %d %q, want HAProxy's 504 page", resp.StatusCode, body)
	}
	if d := time.Since(start); d < 200*time.Millisecond {
		t.Errorf("504 after %v, before timeout_server (200ms)", d)
	}
	expectClosed(t, rc)
	waitCounts(t, p,
		faultCounts{Hrsp5xx: 1},
		faultCounts{Eresp: 1, Hrsp5xx: 1},
		faultCounts{Eresp: 1})
	line := waitLogLine(t, logs, 504)
	wantFlags(t, line, "sH")
	// The proxy's 504 counts in the server's bout too, as HAProxy adds
	// a stream's bytes to its target server's (trials E and H).
	fe, srv := p.Frontends[0].Counters.Bout.Load(), p.Backends[0].Servers()[0].Counters.Bout.Load()
	if fe == 0 || srv != fe || float64(srv) != line["bytes_read"] {
		t.Errorf("bout frontend %d server %d, log %v: want the 504's bytes on both", fe, srv, line["bytes_read"])
	}
	wantServed(t, addr)
}

// Slow clients. A request head that does not complete within
// timeout_http_request gets 408, however the bytes trickle in (the timeout
// runs from the first byte, it is not an inactivity timeout), and so does a
// connection that sends nothing. HAProxy 2.6 counts both as a request
// (req_tot), a request error (ereq) and a 4xx on the frontend; cR and
// <BADREQ> in the log. A client that stops in the middle of its body is
// cut after timeout_client (cD, cli_abrt, no reply: the request is half
// sent). HAProxy 2.6 does not apply timeout client there and waits for
// timeout server instead (504 sH, blaming the server); fulcrum blames the
// client.
func TestFaultSlowClient(t *testing.T) {
	up := faultServer(t, func(c *net.TCPConn, _ *http.Request) {})
	cfg := func() *conf.Config {
		cfg := testConfig(conf.ModeHTTP, []string{up}, nil)
		cfg.Frontends[0].TimeoutHTTPRequest = 200 * time.Millisecond
		cfg.Frontends[0].TimeoutClient = 200 * time.Millisecond
		return cfg
	}
	t.Run("trickled head", func(t *testing.T) {
		p, addr, logs := startLoggedProxy(t, cfg())
		start := time.Now() // before the proxy can arm its timeout
		rc := dialRaw(t, addr)
		head := "GET / HTTP/1.1\r\nHost: x\r\nX-Slow: " + strings.Repeat("s", 1000)
		done := make(chan struct{})
		trickled := make(chan struct{})
		go func() { // one byte every 10ms, never the end of the head
			defer close(trickled)
			tick := time.NewTicker(10 * time.Millisecond)
			defer tick.Stop()
			for i := 0; i < len(head); i++ {
				select {
				case <-done:
					return
				case <-tick.C:
				}
				if _, err := rc.c.Write([]byte{head[i]}); err != nil {
					return
				}
			}
		}()
		defer func() { close(done); <-trickled }()
		rc.c.SetReadDeadline(time.Now().Add(10 * time.Second))
		resp, err := http.ReadResponse(rc.br, nil)
		if err != nil || resp.StatusCode != 408 {
			t.Fatalf("got %v, %v; want 408", resp, err)
		}
		if d := time.Since(start); d < 200*time.Millisecond {
			t.Errorf("408 after %v, before timeout_http_request (200ms)", d)
		}
		if b, _ := io.ReadAll(resp.Body); string(b) != errorPage(408) || !resp.Close {
			t.Errorf("body %q close=%v, want HAProxy's 408 page with connection: close", b, resp.Close)
		}
		expectClosed(t, rc)
		waitCounts(t, p, faultCounts{Ereq: 1, Hrsp4xx: 1}, faultCounts{}, faultCounts{})
		if n := p.Snapshot().Frontends[0].ReqTot; n != 1 {
			t.Errorf("frontend req_tot %d, want 1", n)
		}
		l := waitLogLine(t, logs, 408)
		wantFlags(t, l, "cR")
		if l["request"] != "<BADREQ>" {
			t.Errorf("request %v, want <BADREQ>", l["request"])
		}
		wantServed(t, addr)
	})
	t.Run("nothing sent", func(t *testing.T) {
		p, addr, logs := startLoggedProxy(t, cfg())
		rc := dialRaw(t, addr)
		rc.c.SetReadDeadline(time.Now().Add(10 * time.Second))
		resp, err := http.ReadResponse(rc.br, nil)
		if err != nil || resp.StatusCode != 408 {
			t.Fatalf("got %v, %v; want 408", resp, err)
		}
		io.Copy(io.Discard, resp.Body)
		expectClosed(t, rc)
		waitCounts(t, p, faultCounts{Ereq: 1, Hrsp4xx: 1}, faultCounts{}, faultCounts{})
		if n := p.Snapshot().Frontends[0].ReqTot; n != 1 {
			t.Errorf("frontend req_tot %d, want 1", n)
		}
		wantFlags(t, waitLogLine(t, logs, 408), "cR")
	})
	t.Run("idle mid-body", func(t *testing.T) {
		// While the response is awaited, timeout_client does not end a
		// body that stops coming; timeout_server does: 504 sH, as
		// HAProxy 2.6 (measured: client 1s, server 3s: 504 sH at 3s).
		c := cfg()
		c.Backends[0].TimeoutServer = 600 * time.Millisecond // longer than the client's 200ms
		p, addr, logs := startLoggedProxy(t, c)
		rc := dialRaw(t, addr)
		rc.c.SetReadDeadline(time.Now().Add(10 * time.Second))
		io.WriteString(rc.c, "POST /up HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n0123456789")
		resp, err := http.ReadResponse(rc.br, nil)
		if err != nil || resp.StatusCode != 504 {
			t.Fatalf("got %v, %v; want 504", resp, err)
		}
		io.Copy(io.Discard, resp.Body)
		expectClosed(t, rc) // the body was half read
		waitCounts(t, p,
			faultCounts{Hrsp5xx: 1},
			faultCounts{Eresp: 1, Hrsp5xx: 1},
			faultCounts{Eresp: 1})
		wantFlags(t, waitLogLine(t, logs, 504), "sH")
		wantServed(t, addr)
	})
}

// A 1 MB header: the proxy answers 400 as soon as the head passes its
// limit (64 KiB), without reading the rest first, and closes. HAProxy 2.6
// answers 400 too (not 431) and counts ereq and a 4xx on the frontend; PR
// and <BADREQ> in the log. The client, still sending, must get the 400 and
// a clean end, not a reset that would destroy the reply before it reads it.
func TestFaultHugeHeader(t *testing.T) {
	head := "GET / HTTP/1.1\r\nHost: x\r\nX-Big: " + strings.Repeat("b", 1<<20) + "\r\n\r\n"
	u := newUpstream(t, "s1")
	check := func(t *testing.T, p *Proxy, rc *rawClient, logs *syncBuffer) {
		t.Helper()
		rc.c.SetReadDeadline(time.Now().Add(10 * time.Second))
		resp, err := http.ReadResponse(rc.br, nil)
		if err != nil {
			t.Fatalf("reading the reply: %v", err)
		}
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 400 || string(b) != errorPage(400) || !resp.Close {
			t.Errorf("got %d %q close=%v, want HAProxy's 400 page with connection: close", resp.StatusCode, b, resp.Close)
		}
		expectClosed(t, rc)
		waitCounts(t, p, faultCounts{Ereq: 1, Hrsp4xx: 1}, faultCounts{}, faultCounts{})
		l := waitLogLine(t, logs, 400)
		wantFlags(t, l, "PR")
		if l["request"] != "<BADREQ>" {
			t.Errorf("request %v, want <BADREQ>", l["request"])
		}
		if n := u.requests.Load(); n != 0 {
			t.Errorf("upstream saw %d requests, want 0", n)
		}
	}
	t.Run("sent whole", func(t *testing.T) {
		p, addr, logs := startLoggedProxy(t, testConfig(conf.ModeHTTP, []string{u.addr()}, nil))
		rc := dialRaw(t, addr)
		wrote := make(chan error, 1)
		go func() {
			_, err := io.WriteString(rc.c, head)
			wrote <- err
		}()
		check(t, p, rc, logs)
		rc.c.Close() // ends the write if the proxy stopped reading
		<-wrote
	})
	t.Run("first 128 KiB, then waiting", func(t *testing.T) {
		// timeout_http_request is 5s: a proxy that waited for the end of
		// the head would answer 408, not 400.
		p, addr, logs := startLoggedProxy(t, testConfig(conf.ModeHTTP, []string{u.addr()}, nil))
		rc := dialRaw(t, addr)
		if _, err := io.WriteString(rc.c, head[:128<<10]); err != nil {
			t.Fatal(err)
		}
		check(t, p, rc, logs)
	})
}

// Request smuggling shapes are refused with 400 before anything reaches a
// server, and the connection closes. TestBadRequests covers CL with TE,
// two different Content-Length and a folded X- header; these are the
// other shapes. HAProxy 2.6 accepts some of them (it drops the
// Content-Length of a CL+TE request, unfolds obs-fold, accepts "gzip,
// chunked", identical Content-Length lists and Transfer-Encoding on
// HTTP/1.0); fulcrum refuses them all, as RFC 9112 allows.
func TestFaultSmuggling(t *testing.T) {
	cases := []struct{ name, raw string }{
		{"TE then CL", "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n0\r\n\r\n"},
		{"CL list", "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 3, 3\r\n\r\nabc"},
		{"CL with a plus sign", "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: +3\r\n\r\nabc"},
		{"CL negative", "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: -3\r\n\r\nabc"},
		{"CL with an inner space", "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 3 3\r\n\r\nabc"},
		{"CL in hex", "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 0x3\r\n\r\nabc"},
		{"CL empty", "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: \r\n\r\n"},
		{"CL too large", "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999999999999\r\n\r\n"},
		{"space before the colon of CL", "POST / HTTP/1.1\r\nHost: x\r\nContent-Length : 3\r\n\r\nabc"},
		{"TE gzip, chunked", "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n"},
		{"TE chunked, gzip", "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked, gzip\r\n\r\n0\r\n\r\n"},
		{"TE chunked twice", "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked, chunked\r\n\r\n0\r\n\r\n"},
		{"two TE fields", "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"},
		{"TE identity", "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: identity\r\n\r\n"},
		{"TE xchunked", "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: xchunked\r\n\r\n0\r\n\r\n"},
		{"TE with a vertical tab", "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding:\x0bchunked\r\n\r\n0\r\n\r\n"},
		{"space before the colon of TE", "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding : chunked\r\n\r\n0\r\n\r\n"},
		{"folded TE", "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding:\r\n chunked\r\n\r\n0\r\n\r\n"},
		{"TE on HTTP/1.0", "POST / HTTP/1.0\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n" +
			"23\r\nGET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n\r\n0\r\n\r\n"},
		{"bare CR in a value", "GET / HTTP/1.1\r\nHost: x\r\nX-A: a\rTransfer-Encoding: chunked\r\n\r\n"},
		{"NUL in a value", "GET / HTTP/1.1\r\nHost: x\r\nX-A: a\x00b\r\n\r\n"},
		{"two Host fields", "GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n"},
		{"absolute target naming another host", "GET http://evil/abs HTTP/1.1\r\nHost: x\r\n\r\n"},
		{"absolute target, userinfo and port", "GET http://x@evil:80/ HTTP/1.1\r\nHost: x\r\n\r\n"},
		// A chunked body broken in what came with the head: HAProxy 2.6's
		// parser sees the whole buffer and refuses the request before it
		// connects (checked on loopback: PR--, fe/<NOSRV>, "<BADREQ>").
		{"bad chunk size with the head", "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n"},
		{"bad second chunk with the head", "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\nzz\r\n\r\n"},
		{"chunk longer than its size with the head", "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nhello\r\n0\r\n\r\n"},
	}
	u := newUpstream(t, "s1")
	p, addr, logs := startLoggedProxy(t, testConfig(conf.ModeHTTP, []string{u.addr()}, nil))
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rc := dialRaw(t, addr)
			resp := rc.do(t, tc.raw)
			if resp.StatusCode != 400 || !resp.Close {
				t.Errorf("got %d close=%v, want 400 with connection: close", resp.StatusCode, resp.Close)
			}
			expectClosed(t, rc)
		})
	}
	n := int64(len(cases))
	waitCounts(t, p, faultCounts{Ereq: n, Hrsp4xx: n}, faultCounts{}, faultCounts{})
	waitFor(t, 5*time.Second, "every log line", func() bool { return len(logs.lines()) >= len(cases) })
	for _, l := range logs.lines() {
		if l["status"] != 400.0 || l["termination_state"] != "PR" || l["request"] != "<BADREQ>" {
			t.Errorf("log line %v, want 400 PR <BADREQ>", l)
		}
	}
	if n := u.requests.Load(); n != 0 {
		t.Errorf("upstream saw %d requests, want 0", n)
	}
	if n := u.conns.Load(); n != 0 {
		t.Errorf("upstream saw %d connections, want 0", n)
	}
	wantServedBy(t, addr, u)
}

// wantServedBy checks that a request through addr reaches u.
func wantServedBy(t *testing.T, addr string, u *upstream) {
	t.Helper()
	resp := dialRaw(t, addr).do(t, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	if resp.StatusCode != 200 || bodyOf(resp) != u.name+"\n" {
		t.Errorf("a valid request: status %d, want 200 from %s", resp.StatusCode, u.name)
	}
}

// A chunked request body whose framing breaks after the head was
// forwarded (the broken chunk comes once the server has the head): the
// server connection is closed, so the server never gets a complete
// request, and the client gets 400. HAProxy 2.6 does the same and counts
// ereq on the frontend and the 4xx on the frontend and the backend; PH in
// the log (checked on loopback: "be/s1 0/0/0/-1/301 400 206 - - PH--").
// Broken with the head, the request is refused before it is forwarded
// (TestFaultSmuggling).
func TestFaultBadChunkInRequestBody(t *testing.T) {
	got := make(chan string, 1)
	headSeen := make(chan struct{})
	up := tcpServer(t, func(c *net.TCPConn) {
		br := bufio.NewReader(c)
		if _, err := http.ReadRequest(br); err != nil {
			got <- "no head: " + err.Error()
			return
		}
		close(headSeen)
		b, _ := io.ReadAll(br) // the body's bytes, until the proxy closes
		got <- string(b)
	})
	p, addr, logs := startLoggedProxy(t, testConfig(conf.ModeHTTP, []string{up}, nil))
	rc := dialRaw(t, addr)
	rc.c.SetDeadline(time.Now().Add(10 * time.Second))
	io.WriteString(rc.c, "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n")
	select {
	case <-headSeen:
	case b := <-got:
		t.Fatalf("the server got %q", b)
	case <-time.After(10 * time.Second):
		t.Fatal("the head never reached the server")
	}
	io.WriteString(rc.c, "zz\r\n\r\n")
	resp, err := http.ReadResponse(rc.br, nil)
	if err != nil {
		t.Fatalf("read response: %v", err)
	}
	io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != 400 || !resp.Close {
		t.Errorf("got %d close=%v, want 400 with connection: close", resp.StatusCode, resp.Close)
	}
	expectClosed(t, rc)
	waitCounts(t, p, faultCounts{Ereq: 1, Hrsp4xx: 1}, faultCounts{Hrsp4xx: 1}, faultCounts{})
	wantFlags(t, waitLogLine(t, logs, 400), "PH")
	select {
	case b := <-got:
		if strings.Contains(b, "zz") || strings.HasSuffix(b, "0\r\n\r\n") {
			t.Errorf("the server got %q", b)
		}
	case <-time.After(10 * time.Second):
		t.Errorf("the server connection stayed open")
	}
}

// An upstream that resets the connection while the client's body is being
// forwarded (it read the head only): the client gets 502 and the
// connection closes. As HAProxy 2.6's forwarding phase (return_srv_abort):
// srv_abrt on the frontend, the backend and the server, hrsp_5xx on the
// frontend and the backend, no cli_abrt (the client did nothing wrong);
// SD in the log.
func TestFaultServerResetDuringUpload(t *testing.T) {
	up := tcpServer(t, func(c *net.TCPConn) {
		br := bufio.NewReader(c)
		req, err := http.ReadRequest(br) // the head only
		if err != nil {
			return
		}
		if req.URL.Path == "/ok" {
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 3\r\nConnection: close\r\n\r\nok\n")
			c.Close()
			return
		}
		reset(c)
	})
	p, addr, logs := startLoggedProxy(t, testConfig(conf.ModeHTTP, []string{up}, nil))
	rc := dialRaw(t, addr)
	const size = 32 << 20 // more than the socket buffers: the proxy is still sending when the reset comes
	rc.c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := fmt.Fprintf(rc.c, "POST /up HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n", size); err != nil {
		t.Fatal(err)
	}
	sent := make(chan struct{})
	go func() {
		defer close(sent)
		buf := make([]byte, 64<<10)
		for n := 0; n < size; n += len(buf) {
			if _, err := rc.c.Write(buf); err != nil {
				return // the proxy closed the connection after its 502
			}
		}
	}()
	resp, err := http.ReadResponse(rc.br, nil)
	if err != nil {
		t.Fatalf("read response: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 502 || string(body) != errorPage(502) || !resp.Close {
		t.Errorf("got %d %q close=%v, want HAProxy's 502 page with connection: close", resp.StatusCode, body, resp.Close)
	}
	<-sent
	waitCounts(t, p,
		faultCounts{SrvAbrt: 1, Hrsp5xx: 1},
		faultCounts{SrvAbrt: 1, Hrsp5xx: 1},
		faultCounts{SrvAbrt: 1})
	wantFlags(t, waitLogLine(t, logs, 502), "SD")
	wantServed(t, addr)
}

// After a request with a body (whose reading arms the longer
// timeout_client), the next request head is again bounded by
// timeout_http_request, with or without a timeout_client: a slow-loris
// cannot escape it by sending one POST first.
func TestFaultSlowHeadAfterBody(t *testing.T) {
	up := faultServer(t, func(c *net.TCPConn, _ *http.Request) {})
	for _, tc := range []struct {
		name   string
		client time.Duration
	}{{"timeout_client longer", 30 * time.Second}, {"no timeout_client", 0}} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig(conf.ModeHTTP, []string{up}, nil)
			cfg.Frontends[0].TimeoutHTTPRequest = 200 * time.Millisecond
			cfg.Frontends[0].TimeoutClient = tc.client
			_, addr := startProxy(t, cfg)
			rc := dialRaw(t, addr)
			for _, req := range []string{
				"POST /ok HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello",
				"POST /ok HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
			} {
				if resp := rc.do(t, req); resp.StatusCode != 200 {
					t.Fatalf("%q: status %d", req, resp.StatusCode)
				}
			}
			start := time.Now()
			io.WriteString(rc.c, "GET /ok HTTP/1.1\r\nHost: x\r\n") // and nothing more
			rc.c.SetReadDeadline(time.Now().Add(10 * time.Second))
			resp, err := http.ReadResponse(rc.br, nil)
			if err != nil || resp.StatusCode != 408 {
				t.Fatalf("got %v, %v; want 408", resp, err)
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("408 after %v, want it after timeout_http_request (200ms)", d)
			}
		})
	}
}

// An absolute-form target whose authority is the Host (any case) is
// served: only a mismatch is refused.
func TestAbsoluteTargetMatchingHost(t *testing.T) {
	u := newUpstream(t, "s1")
	_, addr := startProxy(t, testConfig(conf.ModeHTTP, []string{u.addr()}, nil))
	rc := dialRaw(t, addr)
	for _, raw := range []string{
		"GET http://x/abs HTTP/1.1\r\nHost: x\r\n\r\n",
		"GET HTTP://X:8080/?q HTTP/1.1\r\nHost: x:8080\r\n\r\n",
	} {
		if resp := rc.do(t, raw); resp.StatusCode != 200 || bodyOf(resp) != "s1\n" {
			t.Errorf("%q: status %d, want 200 from s1", raw, resp.StatusCode)
		}
	}
}

// Two identical Content-Length fields are accepted and forwarded as one,
// as HAProxy merges them; differing ones are refused (TestFaultSmuggling).
func TestDuplicateContentLengthForwardedOnce(t *testing.T) {
	heads := make(chan string, 1)
	up := tcpServer(t, func(c *net.TCPConn) {
		br := bufio.NewReader(c)
		var head strings.Builder
		for {
			line, err := br.ReadString('\n')
			if err != nil {
				return
			}
			head.WriteString(line)
			if line == "\r\n" {
				break
			}
		}
		io.ReadFull(br, make([]byte, 3))
		heads <- head.String()
		io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nok\n")
	})
	_, addr := startProxy(t, testConfig(conf.ModeHTTP, []string{up}, nil))
	resp := dialRaw(t, addr).do(t, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nContent-Length: 3\r\n\r\nabc")
	if resp.StatusCode != 200 {
		t.Fatalf("status %d, want 200", resp.StatusCode)
	}
	if head := <-heads; strings.Count(strings.ToLower(head), "content-length:") != 1 {
		t.Errorf("the server got %q, want one Content-Length", head)
	}
}

// A TCP session an operator kills (`shutdown session`) is logged K-, as
// HAProxy 2.6 logs it (measured on loopback: `tcplog` shows K-), and
// counts no abort on either side.
func TestShutdownSessionLogsKilled(t *testing.T) {
	up := tcpServer(t, func(c *net.TCPConn) { io.Copy(c, c) })
	p, addr, logs := startLoggedProxy(t, testConfig(conf.ModeTCP, []string{up}, nil))
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	io.WriteString(c, "ping")
	if b := make([]byte, 4); mustReadFull(t, c, b) != "ping" {
		t.Fatal("no echo")
	}
	ss := p.Sessions()
	if len(ss) != 1 || !p.ShutdownSession(ss[0].ID) {
		t.Fatalf("sessions %+v: want one to shut down", ss)
	}
	if _, err := io.ReadAll(c); err != nil {
		t.Fatalf("after the shutdown: %v, want the connection closed", err)
	}
	waitFor(t, 5*time.Second, "the session's log line", func() bool { return len(logs.lines()) > 0 })
	wantFlags(t, logs.lines()[0], "K-") // a TCP line has no status
	waitCounts(t, p, faultCounts{}, faultCounts{}, faultCounts{})
}

func mustReadFull(t *testing.T, c net.Conn, b []byte) string {
	t.Helper()
	if _, err := io.ReadFull(c, b); err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// `shutdown sessions server` ends an HTTP request with the phase it was
// in, as HAProxy 2.6 (measured on loopback with a server that holds its
// answer): KH and eresp on the backend and the server while the response
// head is awaited, and the client gets the 502 with connection: close
// (the request is not retried on a new server connection, though its
// pooled one closed); KD and srv_abrt once the head was relayed, the
// client's connection cut; no cli_abrt either way.
func TestShutdownSessionsPhases(t *testing.T) {
	for _, tc := range []struct {
		path, flags   string
		eresp, srvAbr int64
	}{
		{"/head", "KH", 1, 0},
		{"/data", "KD", 0, 1},
	} {
		t.Run(tc.path, func(t *testing.T) {
			got := make(chan struct{}, 1)
			hold := make(chan struct{})
			defer close(hold)
			var requests atomic.Int64
			up := tcpServer(t, func(c *net.TCPConn) {
				br := bufio.NewReader(c)
				for {
					req, err := http.ReadRequest(br)
					if err != nil {
						return
					}
					requests.Add(1)
					switch req.URL.Path {
					case "/ok":
						io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
						continue
					case "/data":
						io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\nsome")
					}
					got <- struct{}{}
					<-hold
					return
				}
			})
			p, addr, logs := startLoggedProxy(t, testConfig(conf.ModeHTTP, []string{up}, nil))
			rc := dialRaw(t, addr)
			rc.c.SetDeadline(time.Now().Add(10 * time.Second))
			// A first request leaves the server connection pooled: the
			// killed one reuses it.
			io.WriteString(rc.c, "GET /ok HTTP/1.1\r\nHost: x\r\n\r\n")
			if resp, err := http.ReadResponse(rc.br, nil); err != nil || resp.StatusCode != 200 {
				t.Fatalf("GET /ok: %v", err)
			} else {
				io.Copy(io.Discard, resp.Body)
			}
			io.WriteString(rc.c, "GET "+tc.path+" HTTP/1.1\r\nHost: x\r\n\r\n")
			<-got
			if tc.path == "/data" {
				if _, err := http.ReadResponse(rc.br, nil); err != nil {
					t.Fatalf("response head: %v", err)
				}
			}
			srv := p.Backends[0].Servers()[0]
			if n := p.ShutdownSessions(srv); n != 1 {
				t.Fatalf("%d sessions shut down, want 1", n)
			}
			if tc.path == "/head" {
				resp, err := http.ReadResponse(rc.br, nil)
				if err != nil || resp.StatusCode != 502 || !resp.Close {
					t.Fatalf("after the kill: %v, %v; want a 502 with connection: close", resp, err)
				}
				io.Copy(io.Discard, resp.Body)
			}
			// The connection ends (a kept one would time out here).
			if n, err := io.Copy(io.Discard, rc.br); netio.IsTimeout(err) || n >= 100000 {
				t.Errorf("after the kill: the client connection stays open (%d bytes read, %v)", n, err)
			}
			waitFor(t, 5*time.Second, "the log lines", func() bool { return len(logs.lines()) == 2 })
			wantFlags(t, logs.lines()[1], tc.flags)
			if n := requests.Load(); n != 2 {
				t.Errorf("the server got %d requests, want 2 (no retry of the killed one)", n)
			}
			be, sv := &p.Backends[0].Counters, &srv.Counters
			for _, c := range []*Counters{be, sv} {
				if c.Eresp.Load() != tc.eresp || c.SrvAbrt.Load() != tc.srvAbr || c.CliAbrt.Load() != 0 {
					t.Errorf("eresp %d srv_abrt %d cli_abrt %d, want %d %d 0", c.Eresp.Load(), c.SrvAbrt.Load(), c.CliAbrt.Load(), tc.eresp, tc.srvAbr)
				}
			}
		})
	}
}
