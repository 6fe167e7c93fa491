package main

import (
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/fulcrum-proxy/fulcrum/cli"
	"github.com/fulcrum-proxy/fulcrum/internal/testutil"
)

// TestShowErrorsAndHistogram: after a smuggling-shaped request (two
// Content-Length headers with a Transfer-Encoding between them), the
// one-shot `fulcrumctl show errors` prints the Runtime API's reply as is
// (the frontend, the source, the position of the second Content-Length
// and the dump of the bytes, the smuggled request included); after a few
// requests, `fulcrumctl show histogram web` draws the response times as
// bars with their percentiles.
func TestShowErrorsAndHistogram(t *testing.T) {
	e := startProxy(t, nil)
	addr := strings.TrimPrefix(e.url, "http://")
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	c.SetDeadline(time.Now().Add(5 * time.Second))
	smuggle := "POST /smuggle HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\nContent-Length: 6\r\n\r\n" +
		"0\r\n\r\nGET /admin HTTP/1.1\r\n\r\n"
	io.WriteString(c, smuggle)
	status, _ := io.ReadAll(c)
	c.Close()
	if !strings.HasPrefix(string(status), "HTTP/1.1 400 ") {
		t.Fatalf("the smuggling-shaped request got %q, want a 400", status)
	}
	code, out, errs := ctl(t, "", "-s", e.sock, "show", "errors")
	if code != 0 || errs != "" {
		t.Fatalf("show errors: exit %d, %s", code, errs)
	}
	raw, err := cli.Run(cli.Addr(e.sock), "show errors", 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	// The reply's first line holds the date of the call: compare the rest.
	_, rawEvents, _ := strings.Cut(raw, "\n")
	_, outEvents, _ := strings.Cut(out, "\n")
	if strings.TrimRight(outEvents, "\n") != strings.TrimRight(rawEvents, "\n") {
		t.Errorf("fulcrumctl show errors differs from the socket's reply:\n%s\nsocket:\n%s", out, raw)
	}
	for _, want := range []string{
		"Total events captured on [", "] : 1\n",
		"] frontend fe_web (#1): invalid request\n",
		"  backend <NONE> (#-1), server <NONE> (#-1), event #0, src 127.0.0.1:",
		"  len 129, wraps at ",
		", error at position 96\n", // the second length's value, as HAProxy 2.6 says
		"  00000  POST /smuggle HTTP/1.1\\r\\n\n",
		"  00080  Content-Length: 6\\r\\n\n",
		"  00106  GET /admin HTTP/1.1\\r\\n\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("show errors lacks %q:\n%s", want, out)
		}
	}

	for range 5 {
		resp, err := http.Get(e.url + "/")
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	// A client has its response an instant before the proxy records the
	// request: wait for the five.
	testutil.WaitFor(t, 10*time.Second, "5 requests in the histogram", func() bool {
		code, out, errs = ctl(t, "", "-s", e.sock, "show", "histogram", "web", "total")
		return code != 0 || errs != "" || strings.HasPrefix(out, "web total: 5,")
	})
	if code != 0 || errs != "" {
		t.Fatalf("show histogram: exit %d, %s", code, errs)
	}
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if !strings.HasPrefix(lines[0], "web total: 5, p50 ") || !strings.Contains(lines[0], ", p99.9 ") {
		t.Errorf("show histogram's first line: %q\n%s", lines[0], out)
	}
	bars := 0
	for _, l := range lines[1:] {
		if strings.Contains(l, "│") {
			bars++
		}
	}
	if bars == 0 || bars != len(lines)-1 {
		t.Errorf("show histogram: %d bars in %d lines:\n%s", bars, len(lines)-1, out)
	}
	if code, out, _ := ctl(t, "", "--raw", "-s", e.sock, "show", "histogram", "web", "total"); code != 0 ||
		!strings.HasPrefix(out, "# histogram web: latency since start, us\n") || !strings.Contains(out, "\ntotal,5,") {
		t.Errorf("--raw show histogram: %d %q", code, out)
	}
}
