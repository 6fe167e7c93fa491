package http1

import (
	"bufio"
	"bytes"
	"io"
	"net/http"
	"strconv"

	"github.com/fulcrum-proxy/fulcrum/proxy/stream"
)

// Local answers: requests that a frontend answers itself (the stats page,
// /metrics) instead of sending them to a backend, as HAProxy's `stats uri`.
// They are rare and small, so they go through net/http's types: the request
// head already parsed is re-read by http.ReadRequest and the response is
// buffered whole before it is written.

// serveLocal answers the current request with h. It returns true when the
// client connection stays usable.
func (s *session) serveLocal(h http.Handler) bool {
	// A chunked body is read by net/http itself, which may buffer past its
	// end: the connection is then closed after the response.
	var body io.Reader = s.br
	closeAfter := s.req.connClose || s.req.chunked || s.cl.StoppingForGood()
	if !s.req.chunked {
		n := s.req.contentLength
		if n < 0 {
			n = 0
		}
		body = io.LimitReader(s.br, n)
	}
	r, err := http.ReadRequest(bufio.NewReader(io.MultiReader(bytes.NewReader(s.req.buf), body)))
	if err != nil {
		return s.fail(stream.BadRequest)
	}
	r.RemoteAddr = s.cl.Src().String()
	w := &localResponse{header: http.Header{}}
	h.ServeHTTP(w, r)
	io.Copy(io.Discard, r.Body) // what the handler left unread
	if w.status == 0 {
		w.status = http.StatusOK
	}

	cw := &countingWriter{w: s.bw} // the response's bytes, flushed or not
	cw.WriteString("HTTP/1.1 ")
	cw.WriteString(strconv.Itoa(w.status))
	cw.WriteByte(' ')
	cw.WriteString(http.StatusText(w.status))
	cw.WriteString("\r\n")
	w.header.Del("Content-Length")
	w.header.Del("Connection")
	w.header.Del("Transfer-Encoding")
	w.header.Write(cw)
	cw.WriteString("content-length: ")
	cw.WriteString(strconv.Itoa(w.body.Len()))
	cw.WriteString("\r\n")
	if closeAfter {
		cw.WriteString("connection: close\r\n")
	}
	cw.WriteString("\r\n")
	if r.Method != http.MethodHead {
		cw.Write(w.body.Bytes())
	}
	s.x.Replied(w.status, cw.n)
	err = s.flushClient()
	s.x.LocalDone(err)
	return err == nil && !closeAfter
}

// countingWriter writes to a bufio.Writer and counts the bytes given to
// it: the buffer's own count (Buffered) misses what a big body flushed.
type countingWriter struct {
	w *bufio.Writer
	n int64
}

func (c *countingWriter) Write(b []byte) (int, error) {
	n, err := c.w.Write(b)
	c.n += int64(n)
	return n, err
}

func (c *countingWriter) WriteString(s string) (int, error) {
	n, err := c.w.WriteString(s)
	c.n += int64(n)
	return n, err
}

func (c *countingWriter) WriteByte(b byte) error {
	err := c.w.WriteByte(b)
	if err == nil {
		c.n++
	}
	return err
}

// localResponse is the http.ResponseWriter of a local request: the whole
// response is kept in memory, then written at once.
type localResponse struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (w *localResponse) Header() http.Header { return w.header }

func (w *localResponse) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
}

func (w *localResponse) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.body.Write(p)
}
