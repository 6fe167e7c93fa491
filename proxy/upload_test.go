package proxy

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/fulcrum-proxy/fulcrum/conf"
)

// Responses that come while the request body is still going out reach
// the client at once, as HAProxy 2.6 forwards both directions together
// (measured on loopback with the same servers and clients, see each case).

// sendPartly sends a POST head announcing size body bytes and 64 KiB of
// them, and reads the response that comes before the rest: it fails the
// test when none does. It returns the connection, the status and body.
func sendPartly(t *testing.T, addr string, size int) (*rawClient, int, string) {
	t.Helper()
	rc := dialRaw(t, addr)
	rc.c.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintf(rc.c, "POST /up HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n", size)
	rc.c.Write(make([]byte, 64<<10))
	resp, err := http.ReadResponse(rc.br, nil)
	if err != nil {
		t.Fatalf("no response while the body was still to come: %v", err)
	}
	return rc, resp.StatusCode, bodyOf(resp)
}

// closing413 is an upstream that answers 413 with Connection: close to a
// request head and closes without reading the body (an upload limit).
func closing413(t *testing.T) string {
	return tcpServer(t, func(c *net.TCPConn) {
		br := bufio.NewReader(c)
		if _, err := http.ReadRequest(br); err != nil {
			return
		}
		io.WriteString(c, "HTTP/1.1 413 Payload Too Large\r\nContent-Length: 5\r\nConnection: close\r\n\r\nbig!\n")
		c.Close() // the body unread: a reset
	})
}

// A server that answers 413 after reading the head only, and keeps its
// connection: a client that sends part of its body and waits for the
// answer before sending more gets it at once (it timed out: the answer
// was held until the whole body had gone). The client then closes: the
// request ends CD with the server's 413 (HAProxy: 413 CD--).
func TestEarlyResponseDuringUpload(t *testing.T) {
	headSeen := make(chan struct{}, 1)
	up := tcpServer(t, func(c *net.TCPConn) {
		br := bufio.NewReader(c)
		if _, err := http.ReadRequest(br); err != nil {
			return
		}
		headSeen <- struct{}{}
		io.WriteString(c, "HTTP/1.1 413 Payload Too Large\r\nContent-Length: 5\r\n\r\nbig!\n")
		io.Copy(io.Discard, br) // until the proxy closes
	})
	p, addr, logs := startLoggedProxy(t, testConfig(conf.ModeHTTP, []string{up}, nil))
	rc, status, b := sendPartly(t, addr, 10<<20)
	if status != 413 || b != "big!\n" {
		t.Fatalf("got %d %q, want the server's 413", status, b)
	}
	<-headSeen
	rc.c.Close()
	line := waitLogLine(t, logs, 413)
	wantFlags(t, line, "CD")
	waitCounts(t, p, faultCounts{CliAbrt: 1, Hrsp4xx: 1}, faultCounts{CliAbrt: 1, Hrsp4xx: 1}, faultCounts{CliAbrt: 1, Hrsp4xx: 1})
}

// A server that answers 413 with Connection: close and closes without
// reading the body (an upload limit): the client, still sending, gets the
// 413, not a 502 (HAProxy: 413 SD--, the server stopped the transfer).
func TestEarlyResponseServerCloses(t *testing.T) {
	up := closing413(t)
	_, addr, logs := startLoggedProxy(t, testConfig(conf.ModeHTTP, []string{up}, nil))
	rc := dialRaw(t, addr)
	const size = 32 << 20 // more than the socket buffers take
	rc.c.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintf(rc.c, "POST /up HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n", size)
	go func() {
		buf := make([]byte, 64<<10)
		for n := 0; n < size; n += len(buf) {
			if _, err := rc.c.Write(buf); err != nil {
				return
			}
		}
	}()
	resp, err := http.ReadResponse(rc.br, nil)
	if err != nil {
		t.Fatalf("read response: %v", err)
	}
	if b := bodyOf(resp); resp.StatusCode != 413 || b != "big!\n" {
		t.Fatalf("got %d %q, want the server's 413", resp.StatusCode, b)
	}
	wantFlags(t, waitLogLine(t, logs, 413), "SD")
}

// A server that answers at once, then reads the whole body: the client
// has the answer before it sends the rest, the request ends well when the
// body has gone (HAProxy: 200 ----), the client connection stays usable,
// and its next request reuses the server connection.
func TestEarlyResponseThenBody(t *testing.T) {
	bodies := make(chan int, 2)
	up := tcpServer(t, func(c *net.TCPConn) {
		br := bufio.NewReader(c)
		for {
			req, err := http.ReadRequest(br)
			if err != nil {
				return
			}
			if req.Method == "GET" {
				io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nget\n")
				continue
			}
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nearly\n")
			n, _ := io.Copy(io.Discard, req.Body)
			bodies <- int(n)
		}
	})
	p, addr, logs := startLoggedProxy(t, testConfig(conf.ModeHTTP, []string{up}, nil))
	const size = 1 << 20
	rc, status, b := sendPartly(t, addr, size)
	if status != 200 || b != "early\n" {
		t.Fatalf("got %d %q", status, b)
	}
	if _, err := rc.c.Write(make([]byte, size-64<<10)); err != nil {
		t.Fatalf("the rest of the body: %v", err)
	}
	if n := <-bodies; n != size {
		t.Fatalf("the server got %d body bytes, want %d", n, size)
	}
	wantFlags(t, waitLogLine(t, logs, 200), "--")
	resp := rc.do(t, "GET /next HTTP/1.1\r\nHost: x\r\n\r\n")
	if b := bodyOf(resp); resp.StatusCode != 200 || b != "get\n" {
		t.Fatalf("next request on the connection: %d %q", resp.StatusCode, b)
	}
	// The body went out whole: the connection is pooled (RFC 9112 9.3:
	// the server read the rest, as this one did).
	snap := p.Snapshot()
	if got := snap.Backends[0].Servers[0].CounterValues.Obs.Reuse; got != 1 {
		t.Errorf("server connection reused %d times, want 1", got)
	}
	if got := snap.Backends[0].Servers[0].CounterValues.Obs.Connect; got != 1 {
		t.Errorf("server connections made %d, want 1", got)
	}
}

// A response that comes after the whole body: unchanged (the server
// connection goes back to its pool), and Tr, as HAProxy's, runs from the
// request's send, so the body's upload time is in it.
func TestUploadThenResponse(t *testing.T) {
	up := tcpServer(t, func(c *net.TCPConn) {
		br := bufio.NewReader(c)
		for {
			req, err := http.ReadRequest(br)
			if err != nil {
				return
			}
			n, _ := io.Copy(io.Discard, req.Body)
			fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s", len(fmt.Sprint(n)), fmt.Sprint(n))
		}
	})
	p, addr, logs := startLoggedProxy(t, testConfig(conf.ModeHTTP, []string{up}, nil))
	rc := dialRaw(t, addr)
	rc.c.SetDeadline(time.Now().Add(10 * time.Second))
	const gap = 300 * time.Millisecond
	io.WriteString(rc.c, "POST /up HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n4\r\nabcd\r\n")
	time.Sleep(gap) // the body's second half comes later: Tr includes the wait
	io.WriteString(rc.c, "2\r\nef\r\n0\r\n\r\n")
	resp, err := http.ReadResponse(rc.br, nil)
	if err != nil {
		t.Fatal(err)
	}
	if b := bodyOf(resp); b != "6" {
		t.Fatalf("server got %s body bytes, want 6", b)
	}
	line := waitLogLine(t, logs, 200)
	wantFlags(t, line, "--")
	// At least half the gap (the gap starts on the client before the
	// proxy has the head): Tr was 0 when it ran from the body's end.
	if tr, _ := line["Tr"].(float64); tr < float64(gap.Milliseconds()/2) {
		t.Errorf("Tr %v, want at least %d (from the request's send, as HAProxy)", line["Tr"], gap.Milliseconds()/2)
	}
	if bu, _ := line["bytes_uploaded"].(float64); bu <= 6 {
		t.Errorf("bytes_uploaded %v, want the head and the body", line["bytes_uploaded"])
	}
	resp = rc.do(t, "POST /two HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nxyz")
	if b := bodyOf(resp); b != "3" {
		t.Fatalf("second request: %q", b)
	}
	if got := p.Snapshot().Backends[0].Servers[0].CounterValues.Obs.Reuse; got != 1 {
		t.Errorf("server connection reused %d times, want 1", got)
	}
}

// A client that stops sending its body while the server waits for it: the
// request ends as before the uploads ran beside the response's wait
// (CD), and the server connection is closed with what it got.
func TestUploadClientGone(t *testing.T) {
	closed := make(chan string, 1)
	up := tcpServer(t, func(c *net.TCPConn) {
		br := bufio.NewReader(c)
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		b, _ := io.ReadAll(req.Body)
		closed <- string(b)
	})
	_, addr, logs := startLoggedProxy(t, testConfig(conf.ModeHTTP, []string{up}, nil))
	rc := dialRaw(t, addr)
	io.WriteString(rc.c, "POST /up HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\nabc")
	rc.c.Close()
	select {
	case b := <-closed:
		if !strings.HasPrefix(b, "abc") {
			t.Errorf("the server got %q", b)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the server connection stayed open")
	}
	var line map[string]any
	waitFor(t, 5*time.Second, "the log line", func() bool {
		for _, l := range logs.lines() {
			if l["termination_state"] != nil {
				line = l
				return true
			}
		}
		return false
	})
	wantFlags(t, line, "CD")
}

// An HTTP/2 client uploading to an HTTP/1.1 server that answers 413 and
// closes without reading the body: the client gets the 413 (it got a 502
// SD: the body's send failed before the response was read), and the
// rest of its body is refused (the stream ends, RST_STREAM NO_ERROR).
func TestEarlyResponseH2Client(t *testing.T) {
	up := closing413(t)
	_, addr, logs := startLogged(t, h2Config([]string{up}, ""))
	tr := h2cTransport()
	defer tr.CloseIdleConnections()
	pr, pw := io.Pipe()
	answered := make(chan struct{})
	go func() {
		pw.Write(make([]byte, 64<<10))
		<-answered // the rest only once the answer came: a client that waits
		pw.CloseWithError(io.ErrClosedPipe)
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "POST", "http://"+addr+"/up", pr)
	req.ContentLength = 10 << 20
	resp, err := tr.RoundTrip(req)
	close(answered)
	if err != nil {
		t.Fatalf("no answer while the body was still to come: %v", err)
	}
	if b := bodyOf(resp); resp.StatusCode != 413 || b != "big!\n" {
		t.Fatalf("got %d %q, want the server's 413", resp.StatusCode, b)
	}
	waitFor(t, 5*time.Second, "the log line", func() bool {
		for _, l := range logLines(t, logs) {
			if l["status"] == float64(413) {
				return true
			}
		}
		return false
	})
}

// A connection closed before its first byte is logged as HAProxy 2.6
// logs it (measured side by side): 400 CR-- "<BADREQ>", Ta and Tt from
// the accept (-1/-1/-1/-1/Tt), counted in req_tot, ereq and hrsp_4xx;
// with dontlognull it is not logged. A "\r\n" then a close is the same
// line (status 400, not -1), logged under dontlognull too.
func TestEmptyConnectionLogged(t *testing.T) {
	for _, dontLogNull := range []bool{false, true} {
		cfg := testConfig(conf.ModeHTTP, []string{"127.0.0.1:1"}, nil)
		cfg.Frontends[0].DontLogNull = dontLogNull
		p, addr, logs := startLoggedProxy(t, cfg)
		fe := p.Frontends[0]
		for i, sent := range []string{"", "\r\n"} {
			rc := dialRaw(t, addr)
			io.WriteString(rc.c, sent)
			if sent != "" {
				waitFor(t, 5*time.Second, "the bytes read", func() bool { return fe.Counters.Scur.Load() == 1 })
			}
			rc.c.Close()
			waitFor(t, 5*time.Second, "the request counted", func() bool {
				return fe.Counters.ReqTot.Load() == int64(i+1) && fe.Counters.Scur.Load() == 0
			})
		}
		if e, h := fe.Counters.Ereq.Load(), fe.Counters.Hrsp[4].Load(); e != 2 || h != 2 {
			t.Errorf("dontlognull %v: ereq %d, hrsp_4xx %d; want 2, 2", dontLogNull, e, h)
		}
		var lines []map[string]any
		for _, l := range logs.lines() {
			if l["termination_state"] != nil {
				lines = append(lines, l)
			}
		}
		want := 2
		if dontLogNull {
			want = 1 // the "\r\n" one: bytes came
		}
		if len(lines) != want {
			t.Fatalf("dontlognull %v: %d log lines, want %d: %v", dontLogNull, len(lines), want, lines)
		}
		for _, l := range lines {
			if l["status"] != float64(400) || l["termination_state"] != "CR" || l["request"] != "<BADREQ>" {
				t.Errorf("line %v, want 400 CR <BADREQ>", l)
			}
			if tt, _ := l["Tt"].(float64); tt < 0 || l["Ta"] != l["Tt"] {
				t.Errorf("Ta %v, Tt %v: want both the time since the accept", l["Ta"], l["Tt"])
			}
		}
	}
}

// A client still sending the body its server refused (413 and close):
// the proxy sends the 413, then drains what the client sends instead of
// resetting the connection under it (a reset made curl lose the 413 it
// had not read yet: "send failure" with no status, in a fresh-user
// trial), and closes its side (FIN).
func TestEarlyResponseLingers(t *testing.T) {
	up := closing413(t)
	_, addr, _ := startLoggedProxy(t, testConfig(conf.ModeHTTP, []string{up}, nil))
	rc, status, b := sendPartly(t, addr, 64<<20)
	if status != 413 || b != "big!\n" {
		t.Fatalf("got %d %q, want the server's 413", status, b)
	}
	// The client goes on sending for a while: the proxy reads it.
	chunk := make([]byte, 256<<10)
	for sent := 0; sent < 8<<20; sent += len(chunk) {
		if _, err := rc.c.Write(chunk); err != nil {
			t.Fatalf("after %d more bytes: %v (the connection was reset under the client)", sent, err)
		}
	}
	if b, err := io.ReadAll(rc.br); len(b) != 0 || err != nil {
		t.Errorf("after the 413: %q, %v; want the proxy's FIN", b, err)
	}
}
