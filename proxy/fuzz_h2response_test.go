package proxy

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/fulcrum-proxy/fulcrum/proxy/http1"
)

// FuzzH2Response has an HTTP/1.1 server answer an HTTP/2 client's GET
// /fuzz with arbitrary bytes (then close its connection), through a real
// frontend with a proto h2 bind and a backend with http_reuse always, and
// then answer two innocent GETs (with an X-Id field) on the same client connection: the
// response head relay (the HTTP/1 exchange kept by its server connection,
// its head buffers reused; heads encoded as fields through the
// connection's HPACK cache) is the path under test. Invariants:
//
//   - nothing panics, and every request ends within its deadline;
//   - whatever the fuzz response was, the client connection's HPACK
//     state stays right and the innocent requests get exactly their own
//     response: status 200, their X-Id echoed, their body, and the
//     server's fields as it sent them.
func FuzzH2Response(f *testing.F) {
	var fuzz atomic.Pointer[[]byte]
	empty := []byte{}
	fuzz.Store(&empty)
	up := rawScriptUpstream(f, func(id string) (string, bool) {
		if id == "" {
			return string(*fuzz.Load()), true
		}
		body := "innocent-" + id
		return fmt.Sprintf("HTTP/1.1 200 OK\r\nServer: up\r\nX-Id: %s\r\nContent-Type: text/plain\r\nContent-Length: %d\r\n\r\n%s",
			id, len(body), body), false
	})
	cfg := h2Config([]string{up}, "")
	fe, be := cfg.Frontends[0], cfg.Backends[0]
	fe.TimeoutClient, fe.TimeoutHTTPRequest = fuzzProxyTimeout, fuzzProxyTimeout
	be.TimeoutConnect, be.TimeoutServer = fuzzProxyTimeout, fuzzServerTimeout
	if fuzzing() {
		be.TimeoutServer = fuzzingServerTimeout
	}
	be.HTTPReuse = "always"
	_, addr := startProxy(f, cfg)
	for _, s := range []string{
		"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
		"HTTP/1.1 404 Not Found\r\nServer: up\r\nX-Id: other\r\nContent-Type: text/html\r\nContent-Length: 0\r\n\r\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTrailer: X-T\r\n\r\n2\r\nok\r\n0\r\nX-T: 1\r\n\r\n",
		"HTTP/1.1 200 OK\r\nCONNECTION: keep-alive\r\nKeep-Alive: timeout=5\r\nX-A: 1\r\nx-a: 2\r\nX-Empty:\r\nSet-Cookie: a=1\r\nSet-Cookie: b=2\r\n\r\nbody until close",
		"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokHTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n",
		"HTTP/1.1 103 Early Hints\r\nLink: </s.css>; rel=preload\r\nConnection: x\r\n\r\nHTTP/1.1 103 Early Hints\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
		"HTTP/1.1 200 OK\r\nX-Long: " + strings.Repeat("v", 5000) + "\r\nContent-Length: 0\r\n\r\n",
		"HTTP/1.1 200 OK\r\nBad Name: x\r\nX-Ctl: a\x01b\r\nContent-Length: 0\r\n\r\n",
		"HTTP/1.1 999 Odd\r\nContent-Length: 0\r\n\r\n",
		"garbage\r\n\r\n",
	} {
		f.Add([]byte(s))
	}
	n := 0
	f.Fuzz(func(t *testing.T, resp []byte) {
		resp = append([]byte(nil), resp...)
		fuzz.Store(&resp)
		defer hangWatch(fmt.Sprintf("response %q", resp), 3*diffDeadline).Stop()
		tr := h2cTransport()
		defer tr.CloseIdleConnections()
		ctx, cancel := context.WithTimeout(context.Background(), diffDeadline)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, "GET", "http://"+addr+"/fuzz", nil)
		if r, err := tr.RoundTrip(req); err == nil {
			io.Copy(io.Discard, r.Body)
			r.Body.Close()
		}
		for i := range 2 {
			n++
			id := fmt.Sprint(n)
			req, _ := http.NewRequestWithContext(ctx, "GET", "http://"+addr+"/ok", nil)
			req.Header.Set("X-Id", id)
			r, err := tr.RoundTrip(req)
			if err != nil {
				t.Fatalf("server response %q: innocent request %d: %v", resp, i, err)
			}
			body, err := io.ReadAll(r.Body)
			r.Body.Close()
			want := http.Header{"Server": {"up"}, "X-Id": {id}, "Content-Type": {"text/plain"}, "Content-Length": {fmt.Sprint(len("innocent-" + id))}}
			if err != nil || r.StatusCode != 200 || string(body) != "innocent-"+id || fmt.Sprint(r.Header) != fmt.Sprint(want) {
				if r.StatusCode == 504 && fuzzing() {
					t.Skipf("the innocent request timed out: %q", resp)
				}
				t.Fatalf("server response %q: innocent request %d got %d %v %q (%v), want 200 %v %q",
					resp, i, r.StatusCode, r.Header, body, err, want, "innocent-"+id)
			}
		}
	})
}

// rawScriptUpstream answers each request with what answer returns for its
// X-Id field ("" without one), written whole in one write, and closes the
// connection after it when answer says so (or when the request has a
// body).
func rawScriptUpstream(tb testing.TB, answer func(id string) (string, bool)) string {
	tb.Helper()
	return tcpServer(tb, func(c *net.TCPConn) {
		br := bufio.NewReader(c)
		for {
			var h http1.Head
			if h.Read(br, false) != nil || h.Parse(false) != nil || h.ContentLength() > 0 {
				return
			}
			id, _ := h.Header("x-id")
			out, closeAfter := answer(id)
			if _, err := io.WriteString(c, out); err != nil || closeAfter {
				return
			}
		}
	})
}
