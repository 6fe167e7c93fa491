package proxy

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/fulcrum-proxy/fulcrum/conf"
)

// TestNoBodyStatusFraming: Content-Length and Transfer-Encoding on an
// interim (1xx) or 204 response are not forwarded, as HAProxy 2.6 drops
// them (a fresh-user trial saw fulcrum pass "204 + Content-Length: 5"
// on a kept-alive connection; HAProxy's bytes for the same server are
// the wanted ones below, less its lower-cased names); a 304 keeps its
// Content-Length (the length of what a 200 would carry), as HAProxy's.
// Each response is read byte for byte, then a second request on the same
// connection must get its own answer.
func TestNoBodyStatusFraming(t *testing.T) {
	const ok = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
	cases := []struct{ path, server, want string }{
		{"/204cl", "HTTP/1.1 204 No Content\r\nContent-Length: 5\r\nX-A: 1\r\n\r\n",
			"HTTP/1.1 204 No Content\r\nX-A: 1\r\n\r\n"},
		{"/204te", "HTTP/1.1 204 No Content\r\nTransfer-Encoding: chunked\r\nX-A: 1\r\n\r\n",
			"HTTP/1.1 204 No Content\r\nX-A: 1\r\n\r\n"},
		{"/100cl", "HTTP/1.1 100 Continue\r\nContent-Length: 5\r\n\r\n" + ok,
			"HTTP/1.1 100 Continue\r\n\r\n" + ok},
		{"/103te", "HTTP/1.1 103 Early Hints\r\nTransfer-Encoding: chunked\r\nLink: </a>\r\n\r\n" + ok,
			"HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n" + ok},
		{"/304cl", "HTTP/1.1 304 Not Modified\r\nContent-Length: 5\r\n\r\n",
			"HTTP/1.1 304 Not Modified\r\nContent-Length: 5\r\n\r\n"},
	}
	answers := map[string]string{"/next": ok}
	for _, c := range cases {
		answers[c.path] = c.server
	}
	up, _ := scriptUpstream(t, func(_ int, c net.Conn, br *bufio.Reader) {
		for {
			req, err := http.ReadRequest(br)
			if err != nil {
				return
			}
			io.WriteString(c, answers[req.URL.Path])
		}
	})
	cfg := epollConfig(t, conf.ModeHTTP, []string{up})
	cfg.Backends[0].HTTPReuse = "always"
	_, addr := startProxy(t, cfg)
	for _, c := range cases {
		rc := dialRaw(t, addr)
		rc.c.SetDeadline(time.Now().Add(10 * time.Second))
		io.WriteString(rc.c, "GET "+c.path+" HTTP/1.1\r\nHost: x\r\n\r\n")
		got := make([]byte, len(c.want))
		if n, err := io.ReadFull(rc.br, got); err != nil {
			t.Errorf("%s: read %q: %v; want %q", c.path, got[:n], err, c.want)
			continue
		}
		if string(got) != c.want {
			t.Errorf("%s: got %q, want %q", c.path, got, c.want)
			continue
		}
		if r := rc.do(t, "GET /next HTTP/1.1\r\nHost: x\r\n\r\n"); r.StatusCode != 200 || bodyOf(r) != "ok" {
			t.Errorf("%s: the next request got %d", c.path, r.StatusCode)
		}
	}
}
