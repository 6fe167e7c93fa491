package runtime

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fulcrum-proxy/fulcrum/proxy/http1"
)

// badServer answers every request with the invalid response of the HAProxy
// capture (a header line without ':', a control byte in a value).
func badServer(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			br := bufio.NewReader(c)
			for {
				line, err := br.ReadString('\n')
				if err != nil || line == "\r\n" {
					break
				}
			}
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nBad Header\r\nX: \x01y\r\n\r\nhello")
			c.Close()
		}
	}()
	t.Cleanup(func() {
		l.Close()
		<-done
	})
	return l.Addr().String()
}

// send writes raw to addr and reads the reply until the proxy closes.
func send(t *testing.T, addr, raw string) string {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	io.WriteString(c, raw)
	b, _ := io.ReadAll(c)
	return string(b)
}

// maskErrors replaces what differs between two runs of the same traffic:
// dates, source ports, event numbers, proxy ids, and HAProxy's buffer
// sizes and H1 flag lines (fulcrum prints its parser's reason instead).
func maskErrors(s string) string {
	for _, m := range []struct{ re, to string }{
		{`\[\d\d/\w+/\d{4}:\d\d:\d\d:\d\d\.\d{3}\]`, "[DATE]"},
		{`src 127\.0\.0\.1:\d+`, "src 127.0.0.1:PORT"},
		{`event #\d+`, "event #N"},
		{`\(#\d+\)`, "(#ID)"},
		{`\d+ free,`, "N free,"},
		{`wraps at \d+`, "wraps at N"},
		{`(?m)^  H1 [^\n]*\n`, ""},
		{`Total events captured on \[DATE\] : \d+`, "Total events captured on [DATE] : N"},
	} {
		s = regexp.MustCompile(m.re).ReplaceAllString(s, m.to)
	}
	return s
}

// TestShowErrorsAsHAProxy sends HAProxy's capture's smuggling-shaped
// request (two different Content-Length around a Transfer-Encoding) and
// gets its invalid response, then compares `show errors` with HAProxy
// 2.6's reply for the same traffic (testdata/runtime/haproxy/show-errors.txt):
// the same bytes at the same offsets, the same error positions.
func TestShowErrorsAsHAProxy(t *testing.T) {
	bad := badServer(t)
	e := startEnv(t, fmt.Sprintf(`
[[frontend]]
name = "www"
bind = ["127.0.0.1:0"]
default_backend = "web"
use_backend = [{ backend = "badsrv", if = "{ path_beg /bad }" }]

[[backend]]
name = "web"
[[backend.server]]
name = "s1"
address = "127.0.0.1:1"

[[backend]]
name = "badsrv"
[[backend.server]]
name = "b1"
address = %q
`, bad))
	if got := e.run(t, LevelOperator, "show errors"); !strings.HasSuffix(got, "] : 0\n\n") {
		t.Fatalf("before any error: got %q", got)
	}
	addr := e.p.Frontends[0].Addrs()[0].String()
	if r := send(t, addr, "GET /bad HTTP/1.1\r\nHost: 127.0.0.1:41880\r\nUser-Agent: curl/7.88.1\r\nAccept: */*\r\n\r\n"); !strings.HasPrefix(r, "HTTP/1.1 502") {
		t.Fatalf("bad response: got %q", r)
	}
	const smuggle = "POST /smuggle HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\nContent-Length: 6\r\n\r\n0\r\n\r\nGET /admin HTTP/1.1\r\n\r\n"
	if r := send(t, addr, smuggle); !strings.HasPrefix(r, "HTTP/1.1 400") {
		t.Fatalf("smuggling request: got %q", r)
	}
	got := e.run(t, LevelOperator, "show errors")
	want, err := os.ReadFile("../testdata/runtime/haproxy/show-errors.txt")
	if err != nil {
		t.Fatal(err)
	}
	if m, w := maskErrors(got), maskErrors(string(want)); m != w {
		t.Errorf("show errors differs from HAProxy's\ngot (masked):\n%s\nwant (masked):\n%s\ngot:\n%s", m, w, got)
	}
	for _, line := range []string{
		"  H1 error: Content-Length fields with different values :\n",
		"  H1 error: invalid character in header name :\n",
		"  len 129, wraps at 65536, error at position 96\n",
		"Total events captured on [",
	} {
		if !strings.Contains(got, line) {
			t.Errorf("show errors lacks %q", line)
		}
	}
	// The filters: by name (either side), by id, by direction.
	for _, tc := range []struct {
		cmd        string
		req, resp  bool
		errorReply string
	}{
		{"show errors www", true, true, ""},
		{"show errors badsrv", false, true, ""},
		{"show errors www request", true, false, ""},
		{"show errors response", false, true, ""},
		{"show errors -1 request", true, false, ""},
		{"show errors nosuch", false, false, "No such proxy.\n\n"},
	} {
		out := e.run(t, LevelOperator, tc.cmd)
		if tc.errorReply != "" {
			if out != tc.errorReply {
				t.Errorf("%s: got %q, want %q", tc.cmd, out, tc.errorReply)
			}
			continue
		}
		if gotReq := strings.Contains(out, "invalid request"); gotReq != tc.req {
			t.Errorf("%s: request shown %v, want %v", tc.cmd, gotReq, tc.req)
		}
		if gotResp := strings.Contains(out, "invalid response"); gotResp != tc.resp {
			t.Errorf("%s: response shown %v, want %v", tc.cmd, gotResp, tc.resp)
		}
	}
}

// TestDumpTextLine checks HAProxy's text dump: 70 characters on a first
// line, continuation lines marked "+", escapes.
func TestDumpTextLine(t *testing.T) {
	buf := []byte("GET /" + strings.Repeat("a", 150) + " HTTP/1.1\r\nX-Bin: \x00\x7f\xff\xe9t\xc3\xa9\tz\\\r\n\r\n")
	var b []byte
	for line, ptr := 0, 0; ptr < len(buf); {
		b, ptr, line = dumpTextLine(b, buf, ptr, line)
	}
	want := "  00000  GET /" + strings.Repeat("a", 65) + "\n" +
		"  00070+ " + strings.Repeat("a", 70) + "\n" +
		"  00140+ " + strings.Repeat("a", 15) + " HTTP/1.1\\r\\n\n" +
		"  00166  X-Bin: \\x00\\x7F\\xFF\\xE9t\\xC3\\xA9\\tz\\\\\\r\\n\n" +
		"  00185  \\r\\n\n"
	if string(b) != want {
		t.Errorf("got:\n%s\nwant:\n%s", b, want)
	}
}

// undumpLine reverses dumpTextLine's escapes on a dump line's text.
func undumpLine(t *testing.T, s string) []byte {
	t.Helper()
	var out []byte
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' {
			out = append(out, s[i])
			continue
		}
		if i+1 >= len(s) {
			t.Fatalf("a lone backslash ends %q", s)
		}
		i++
		switch s[i] {
		case 't':
			out = append(out, '\t')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 'e':
			out = append(out, 0x1b)
		case '\\':
			out = append(out, '\\')
		case 'x':
			if i+2 >= len(s) {
				t.Fatalf("short \\x escape in %q", s)
			}
			v, err := strconv.ParseUint(s[i+1:i+3], 16, 8)
			if err != nil || strings.ToUpper(s[i+1:i+3]) != s[i+1:i+3] {
				t.Fatalf("bad \\x escape in %q", s)
			}
			out = append(out, byte(v))
			i += 2
		default:
			t.Fatalf("unknown escape \\%c in %q", s[i], s)
		}
	}
	return out
}

// FuzzDumpText: the dump of any bytes (a client's or a server's, as
// `show errors` keeps them) is lines of at most 80 columns of printable
// ASCII, each starting with its offset, that give the bytes back.
func FuzzDumpText(f *testing.F) {
	for _, s := range []string{"GET / HTTP/1.1\r\nHost: a\r\n\r\n", "\x00\xff\\\x1b\t", strings.Repeat("\xe9", 40), "", "\n\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, buf []byte) {
		buf = buf[:min(len(buf), http1.MaxErrorCapture)] // what is kept: 5-digit offsets
		var b []byte
		n := 0
		for line, ptr := 0, 0; ptr < len(buf); n++ {
			next := 0
			b, next, line = dumpTextLine(b, buf, ptr, line)
			if next <= ptr {
				t.Fatalf("no progress at %d", ptr)
			}
			ptr = next
		}
		var back []byte
		lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
		if len(buf) == 0 {
			lines = nil
		}
		if len(lines) != n {
			t.Fatalf("%d lines written, %d found", n, len(lines))
		}
		for _, l := range lines {
			if len(l) > 80 {
				t.Fatalf("line of %d columns: %q", len(l), l)
			}
			for i := 0; i < len(l); i++ {
				if l[i] < 0x20 || l[i] >= 0x7f {
					t.Fatalf("unprintable byte in %q", l)
				}
			}
			if len(l) < 9 || l[:2] != "  " || (l[7] != ' ' && l[7] != '+') || l[8] != ' ' {
				t.Fatalf("line %q: not \"  OFFSET[ +] \"", l)
			}
			if off, err := strconv.Atoi(l[2:7]); err != nil || off != len(back) {
				t.Fatalf("line %q: offset %d (%v), want %d", l, off, err, len(back))
			}
			back = append(back, undumpLine(t, l[9:])...)
		}
		if string(back) != string(buf) {
			t.Fatalf("the dump gives back %q, want %q", back, buf)
		}
	})
}
