package http1

import (
	"bufio"
	"io"
	"strings"
	"testing"
)

// headEnd finds the end of a head where readHead does: for every prefix
// of a set of heads, a head readHead reads whole ends where headEnd says;
// where headEnd says a head ends, readHead needs no more bytes (it reads
// the head, or fails on what it has: the epoll layer's callback reads it
// without blocking).
func TestHeadEndMatchesReadHead(t *testing.T) {
	heads := []string{
		"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
		"HTTP/1.1 204 No Content\n\nrest",
		"\r\n\nHTTP/1.1 200 OK\r\nA: b\r\n\r\n",
		"HTTP/1.1 200 OK\r\nA: b\n\r\nX",
		"HTTP/1.1 200 OK\r\r\nA: b\r\n\r\n",
		"\r\r\n\r\n",
		"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\n\r\n",
		"garbage without end\r\nstill\r\n",
	}
	for _, h := range heads {
		for n := 0; n <= len(h); n++ {
			p := h[:n]
			br := bufio.NewReader(strings.NewReader(p))
			var hd head
			err := hd.readHead(br, true)
			end := headEnd([]byte(p))
			switch {
			case err == nil && end != n-br.Buffered():
				t.Errorf("headEnd(%q) = %d, readHead read %d", p, end, n-br.Buffered())
			case end >= 0 && (err == io.EOF || err == io.ErrUnexpectedEOF):
				t.Errorf("headEnd(%q) = %d, readHead needs more (%v)", p, end, err)
			}
		}
	}
}
