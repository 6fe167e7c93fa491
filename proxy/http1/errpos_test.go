package http1

import (
	"testing"
)

// TestErrorPosition checks the offending byte found for each kind of
// message the parser refuses (HAProxy's positions where it refuses the
// same: 96 and 39 in testdata/runtime/haproxy/show-errors.txt).
func TestErrorPosition(t *testing.T) {
	for _, tc := range []struct {
		name   string
		msg    string
		resp   bool
		pos    int
		reason string
	}{
		{"two lengths", "POST /smuggle HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\nContent-Length: 6\r\n\r\n0\r\n\r\n", false, 96, "Content-Length fields with different values"},
		{"space in a name", "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nBad Header\r\nX: \x01y\r\n\r\nhello", true, 39, "invalid character in header name"},
		{"length and chunked", "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n", false, 54, "Content-Length and Transfer-Encoding both present"},
		{"gzip coding", "POST / HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", false, 36, "Transfer-Encoding other than one \"chunked\""},
		{"chunked HTTP/1.0", "POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n", false, 17, "Transfer-Encoding in an HTTP/1.0 request"},
		{"two hosts", "GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", false, 25, "two Host fields"},
		{"folding", "GET / HTTP/1.1\r\nX: a\r\n b\r\n\r\n", false, 22, "obsolete line folding"},
		{"bad method", "GE(T / HTTP/1.1\r\n\r\n", false, 2, "invalid character in method"},
		{"no version", "BROKEN\r\n\r\n", false, 6, "request line without target"},
		{"bad version", "GET / HTTP/2.0\r\n\r\n", false, 6, "invalid version"},
		{"NUL", "GET / HTTP/1.1\r\nX: a\x00b\r\n\r\n", false, 20, "NUL or CR inside a line"},
		{"bad status", "HTTP/1.1 20 OK\r\n\r\n", true, 9, "invalid status code"},
		{"host differs from target", "GET http://a/ HTTP/1.1\r\nHost: b\r\n\r\n", false, 30, "Host differs from the absolute-form target's authority"},
		{"fragment in target", "GET /a#b HTTP/1.1\r\n\r\n", false, 6, "invalid character in target"},
		{"query without path", "GET http://a?x HTTP/1.1\r\n\r\n", false, 12, "query without a path in an absolute-form target"},
		{"too many fields", "GET / HTTP/1.1\r\nA: 1\r\nB: 2\r\nC: 3\r\n\r\n", false, 28, "too many header fields (tune_http_maxhdr)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var h head
			h.buf = []byte(tc.msg)
			maxHdr := 0
			if tc.name == "too many fields" {
				maxHdr = 3 // the start line and two fields
			}
			h.maxHdr = maxHdr
			if err := h.parse(tc.resp); err == nil {
				t.Fatalf("the parser accepts %q", tc.msg)
			}
			pos, why := ErrorPosition([]byte(tc.msg), tc.resp, maxHdr, nil)
			if pos != tc.pos || why != tc.reason {
				t.Errorf("got %d %q, want %d %q", pos, why, tc.pos, tc.reason)
			}
		})
	}
}

// FuzzErrorPosition: on any bytes the parser refuses, the position found
// is inside the message, and nothing panics (the bytes are a client's or
// a server's).
func FuzzErrorPosition(f *testing.F) {
	for _, s := range []string{
		"POST /smuggle HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\nContent-Length: 6\r\n\r\n",
		"HTTP/1.1 200 OK\r\nBad Header\r\n\r\n", "GET / HTTP/1.1\r\n\r\n", "\r\n\r\n", "G\x00T", "",
	} {
		f.Add([]byte(s), false)
		f.Add([]byte(s), true)
	}
	f.Fuzz(func(t *testing.T, b []byte, resp bool) {
		var h head
		h.buf = b
		if h.parse(resp) == nil {
			return
		}
		pos, why := ErrorPosition(b, resp, 0, nil)
		if pos < 0 || pos > len(b) || why == "" {
			t.Fatalf("position %d (%q) for %q", pos, why, b)
		}
	})
}

// TestKnownName: each name parse acts on is known in any case, and a
// name of the same length, a prefix or an extension of one is not.
func TestKnownName(t *testing.T) {
	for _, c := range []struct {
		name string
		want int
	}{
		{"Content-Length", nameContentLength}, {"content-LENGTH", nameContentLength},
		{"Transfer-Encoding", nameTransferEncoding}, {"transfer-encoding", nameTransferEncoding},
		{"Connection", nameConnection}, {"CONNECTION", nameConnection},
		{"Upgrade", nameUpgrade}, {"upgrade", nameUpgrade},
		{"Keep-Alive", nameHop}, {"Proxy-Connection", nameHop}, {"te", nameHop}, {"TRAILER", nameHop},
		{"Host", nameHost}, {"host", nameHost}, {"Expect", nameExpect}, {"EXPECT", nameExpect},
		{"Content-Type", nameOther}, {"Content-Lengths", nameOther}, {"Content-Lengt", nameOther},
		{"Hosts", nameOther}, {"Hast", nameOther}, {"T", nameOther}, {"TF", nameOther},
		{"Connectio_", nameOther}, {"Trailers", nameOther}, {"", nameOther},
		{"Transfer-Encodinh", nameOther}, {"Proxy-Connectiom", nameOther}, {"Keep-Alivf", nameOther},
	} {
		if got := knownName([]byte(c.name)); got != c.want {
			t.Errorf("knownName(%q) = %d, want %d", c.name, got, c.want)
		}
	}
}
