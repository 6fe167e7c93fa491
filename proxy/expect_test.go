package proxy

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/fulcrum-proxy/fulcrum/conf"
)

// Expect: 100-continue is passed on to HTTP/1 servers and their 100
// Continue relayed, as HAProxy 2.6 does without http-buffer-request
// (measured side by side: a server with an upload limit answers 413 at
// once and the client uploads nothing).

// expectServer is an upstream that reads request heads and hands each to
// answer with its connection's reader, until the proxy closes.
func expectServer(t *testing.T, answer func(c *net.TCPConn, br *bufio.Reader, req *http.Request)) string {
	return tcpServer(t, func(c *net.TCPConn) {
		br := bufio.NewReader(c)
		for {
			req, err := http.ReadRequest(br)
			if err != nil {
				return
			}
			answer(c, br, req)
		}
	})
}

// The server gets the Expect field, its 100 (with its own field) reaches
// the client before any body byte is sent, the body follows, and the
// client connection serves a second request.
func TestExpectPassedOn(t *testing.T) {
	expects := make(chan string, 2)
	up := expectServer(t, func(c *net.TCPConn, br *bufio.Reader, req *http.Request) {
		expects <- req.Header.Get("Expect")
		if req.Method == "POST" {
			io.WriteString(c, "HTTP/1.1 100 Continue\r\nX-Interim: server\r\n\r\n")
		}
		b, _ := io.ReadAll(req.Body)
		fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s", len(b), b)
	})
	p, addr, logs := startLoggedProxy(t, testConfig(conf.ModeHTTP, []string{up}, nil))
	rc := dialRaw(t, addr)
	rc.c.SetDeadline(time.Now().Add(10 * time.Second))
	io.WriteString(rc.c, "POST /up HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n")
	resp, err := http.ReadResponse(rc.br, nil)
	if err != nil || resp.StatusCode != 100 || resp.Header.Get("X-Interim") != "server" {
		t.Fatalf("got %v, %v; want the server's 100 Continue", resp, err)
	}
	if e := <-expects; e != "100-continue" {
		t.Errorf("the server got Expect %q, want 100-continue", e)
	}
	io.WriteString(rc.c, "hello")
	resp, err = http.ReadResponse(rc.br, nil)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("got %v, %v; want 200", resp, err)
	}
	if b := bodyOf(resp); b != "hello" {
		t.Errorf("echoed %q, want hello", b)
	}
	wantFlags(t, waitLogLine(t, logs, 200), "--")
	resp = rc.do(t, "GET /again HTTP/1.1\r\nHost: x\r\n\r\n")
	if resp.StatusCode != 200 {
		t.Fatalf("second request: %d", resp.StatusCode)
	}
	if e := <-expects; e != "" {
		t.Errorf("the GET carried Expect %q", e)
	}
	// The 100 counts in the server's hrsp_1xx only, as HAProxy's.
	fe, be, srv := &p.Frontends[0].Counters, &p.Backends[0].Counters, &p.Backends[0].Servers()[0].Counters
	if a, b, c := fe.Hrsp[1].Load(), be.Hrsp[1].Load(), srv.Hrsp[1].Load(); a != 0 || b != 0 || c != 1 {
		t.Errorf("hrsp_1xx frontend %d backend %d server %d, want 0 0 1", a, b, c)
	}
}

// A server with an upload limit answers 413 at once: the client gets it
// without sending a byte of its body, with Connection: close, and the
// proxy closes (the body the client may still send is not read).
func TestExpectRefusedAtOnce(t *testing.T) {
	up := expectServer(t, func(c *net.TCPConn, br *bufio.Reader, req *http.Request) {
		io.WriteString(c, "HTTP/1.1 413 Payload Too Large\r\nContent-Length: 5\r\n\r\nbig!\n")
	})
	p, addr, logs := startLoggedProxy(t, testConfig(conf.ModeHTTP, []string{up}, nil))
	rc := dialRaw(t, addr)
	rc.c.SetDeadline(time.Now().Add(10 * time.Second))
	io.WriteString(rc.c, "POST /up HTTP/1.1\r\nHost: x\r\nContent-Length: 10485760\r\nExpect: 100-continue\r\n\r\n")
	resp, err := http.ReadResponse(rc.br, nil)
	if err != nil {
		t.Fatalf("read response: %v", err)
	}
	if b := bodyOf(resp); resp.StatusCode != 413 || b != "big!\n" {
		t.Fatalf("got %d %q, want the server's 413 before the body", resp.StatusCode, b)
	}
	if !resp.Close {
		t.Errorf("the 413 keeps the connection (header %v); want Connection: close", resp.Header)
	}
	if b, err := io.ReadAll(rc.br); len(b) != 0 || err != nil {
		t.Errorf("after the 413: %q, %v; want the proxy's FIN", b, err)
	}
	line := waitLogLine(t, logs, 413)
	wantFlags(t, line, "--")
	if be := &p.Backends[0].Counters; be.CliAbrt.Load() != 0 || be.SrvAbrt.Load() != 0 {
		t.Errorf("cli_abrt %d srv_abrt %d, want 0 0", be.CliAbrt.Load(), be.SrvAbrt.Load())
	}
}

// After the server's 100 the body takes longer than timeout_server, sent
// in pieces: the final answer is awaited as the first head was, from the
// last write to the server, not timed out from the 100 (504).
func TestExpectLongUpload(t *testing.T) {
	up := expectServer(t, func(c *net.TCPConn, br *bufio.Reader, req *http.Request) {
		io.WriteString(c, "HTTP/1.1 100 Continue\r\n\r\n")
		n, _ := io.Copy(io.Discard, req.Body)
		fmt.Fprintf(c, "HTTP/1.1 201 Created\r\nContent-Length: %d\r\n\r\n%d", len(fmt.Sprint(n)), n)
	})
	cfg := testConfig(conf.ModeHTTP, []string{up}, nil)
	cfg.Backends[0].TimeoutServer = time.Second
	_, addr, logs := startLoggedProxy(t, cfg)
	rc := dialRaw(t, addr)
	rc.c.SetDeadline(time.Now().Add(20 * time.Second))
	const pieces = 12
	fmt.Fprintf(rc.c, "POST /up HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\nExpect: 100-continue\r\n\r\n", pieces*4)
	resp, err := http.ReadResponse(rc.br, nil)
	if err != nil || resp.StatusCode != 100 {
		t.Fatalf("got %v, %v; want 100", resp, err)
	}
	for range pieces {
		time.Sleep(150 * time.Millisecond) // the client's pace: 1.8 s in all, past timeout_server
		io.WriteString(rc.c, "abcd")
	}
	resp, err = http.ReadResponse(rc.br, nil)
	if err != nil {
		t.Fatalf("read response: %v", err)
	}
	if b := bodyOf(resp); resp.StatusCode != 201 || b != "48" {
		t.Fatalf("got %d %q, want 201 \"48\"", resp.StatusCode, b)
	}
	wantFlags(t, waitLogLine(t, logs, 201), "--")
}

// An HTTP/1.0 request's Expect is not passed on (RFC 9110 10.1.1: a
// server ignores it in HTTP/1.0), nor is a bodiless request's.
func TestExpectDroppedWithoutBody(t *testing.T) {
	expects := make(chan string, 2)
	up := expectServer(t, func(c *net.TCPConn, br *bufio.Reader, req *http.Request) {
		expects <- req.Header.Get("Expect")
		io.Copy(io.Discard, req.Body)
		io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
	})
	_, addr, _ := startLoggedProxy(t, testConfig(conf.ModeHTTP, []string{up}, nil))
	for _, req := range []string{
		"POST /a HTTP/1.0\r\nHost: x\r\nContent-Length: 2\r\nExpect: 100-continue\r\n\r\nok",
		"GET /b HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nConnection: close\r\n\r\n",
	} {
		rc := dialRaw(t, addr)
		rc.c.SetDeadline(time.Now().Add(10 * time.Second))
		io.WriteString(rc.c, req)
		b, _ := io.ReadAll(rc.br)
		if !strings.HasPrefix(string(b), "HTTP/1.1 200") || strings.Contains(string(b), " 100 ") {
			t.Errorf("%q: got %q", req, b)
		}
		if e := <-expects; e != "" {
			t.Errorf("%q: the server got Expect %q", req, e)
		}
	}
}

// A server whose last response was HTTP/1.0 ignores Expect (RFC 9110
// 10.1.1): the proxy answers the 100 itself rather than have the client
// wait out its expect timeout on every upload (curl: 1 s each, found by
// a fresh-user trial), and does not pass the field on.
func TestExpectHTTP10Server(t *testing.T) {
	expects := make(chan string, 2)
	up := expectServer(t, func(c *net.TCPConn, br *bufio.Reader, req *http.Request) {
		expects <- req.Header.Get("Expect")
		b, _ := io.ReadAll(req.Body)
		fmt.Fprintf(c, "HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: %d\r\n\r\n%s", len(b), b)
	})
	_, addr, _ := startLoggedProxy(t, testConfig(conf.ModeHTTP, []string{up}, nil))
	rc := dialRaw(t, addr)
	if resp := rc.do(t, "GET /learn HTTP/1.1\r\nHost: x\r\n\r\n"); resp.StatusCode != 200 {
		t.Fatalf("GET: %d", resp.StatusCode)
	}
	<-expects
	rc.c.SetDeadline(time.Now().Add(10 * time.Second))
	io.WriteString(rc.c, "POST /up HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n")
	resp, err := http.ReadResponse(rc.br, nil)
	if err != nil || resp.StatusCode != 100 {
		t.Fatalf("got %v, %v; want the proxy's 100 Continue", resp, err)
	}
	io.WriteString(rc.c, "hello")
	resp, err = http.ReadResponse(rc.br, nil)
	if err != nil || resp.StatusCode != 200 || bodyOf(resp) != "hello" {
		t.Fatalf("got %v, %v; want 200 hello", resp, err)
	}
	if e := <-expects; e != "" {
		t.Errorf("the HTTP/1.0 server got Expect %q", e)
	}
}
