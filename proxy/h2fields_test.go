package proxy

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"slices"
	"testing"

	"github.com/fulcrum-proxy/fulcrum/proxy/http1"
)

// rawH1Upstream answers every request on 127.0.0.1:0 with resp as it is.
func rawH1Upstream(t *testing.T, resp string) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	t.Cleanup(func() { l.Close(); <-done })
	go func() {
		defer close(done)
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				br := bufio.NewReader(c)
				var h http1.Head
				for h.Read(br, false) == nil {
					if _, err := io.WriteString(c, resp); err != nil {
						return
					}
				}
			}()
		}
	}()
	return l.Addr().String()
}

// TestH2ResponseFieldsAsSent: an HTTP/2 client gets the fields of an
// HTTP/1.1 server's response as the server sent them: no Date and no
// sniffed Content-Type added where the server sent none (x/net/http2's
// Server would add both), and the server's own passed on.
func TestH2ResponseFieldsAsSent(t *testing.T) {
	bare := rawH1Upstream(t, "HTTP/1.1 200 OK\r\nContent-Length: 15\r\n\r\n<html>hi</html>")
	full := rawH1Upstream(t, "HTTP/1.1 200 OK\r\nDate: Tue, 01 Dec 2026 00:00:00 GMT\r\nContent-Type: text/plain\r\nContent-Length: 15\r\n\r\n<html>hi</html>")
	for _, c := range []struct {
		addr        string
		date, ctype []string
	}{
		{bare, nil, nil},
		{full, []string{"Tue, 01 Dec 2026 00:00:00 GMT"}, []string{"text/plain"}},
	} {
		_, addr := startProxy(t, h2Config([]string{c.addr}, ""))
		tr := h2cTransport()
		req, _ := http.NewRequest("GET", "http://"+addr+"/", nil)
		resp, err := tr.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		tr.CloseIdleConnections()
		if string(body) != "<html>hi</html>" {
			t.Errorf("body %q", body)
		}
		if got := resp.Header["Date"]; !slices.Equal(got, c.date) {
			t.Errorf("Date: got %q, want %q", got, c.date)
		}
		if got := resp.Header["Content-Type"]; !slices.Equal(got, c.ctype) {
			t.Errorf("Content-Type: got %q, want %q", got, c.ctype)
		}
	}
}

// TestH2ResponseFieldsDirect: the fields of an HTTP/1.1 response relayed
// to an HTTP/2 client without the header map (http2's direct heads and
// their HPACK cache): names in any case, repeated names in their order,
// an empty value, more fields than the cache has places, and the
// connection-specific ones left out; the same on every request of a
// connection, as the cache answers for the repeated heads.
func TestH2ResponseFieldsDirect(t *testing.T) {
	head := "HTTP/1.1 200 OK\r\nServer: up\r\nX-Dup: 1\r\nConnection: keep-alive\r\nKeep-Alive: timeout=5\r\n" +
		"x-dup: 2\r\nX-Empty:\r\nProxy-Connection: x\r\nContent-Type: text/plain\r\n"
	want := http.Header{"Server": {"up"}, "X-Dup": {"1", "2"}, "X-Empty": {""}, "Content-Type": {"text/plain"},
		"Content-Length": {"2"}}
	for i := range 20 {
		name := "X-F" + string(rune('a'+i))
		head += name + ": v" + string(rune('a'+i)) + "\r\n"
		want[name] = []string{"v" + string(rune('a'+i))}
	}
	up := rawH1Upstream(t, head+"Content-Length: 2\r\n\r\nok")
	_, addr := startProxy(t, h2Config([]string{up}, ""))
	tr := h2cTransport()
	defer tr.CloseIdleConnections()
	for i := range 5 {
		req, _ := http.NewRequest("GET", "http://"+addr+"/", nil)
		resp, err := tr.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(body) != "ok" {
			t.Errorf("request %d: body %q", i, body)
		}
		if len(resp.Header) != len(want) {
			t.Errorf("request %d: %d fields %v, want %d", i, len(resp.Header), resp.Header, len(want))
		}
		for k, v := range want {
			if got := resp.Header[k]; !slices.Equal(got, v) {
				t.Errorf("request %d: %s: %q, want %q", i, k, got, v)
			}
		}
	}
}
