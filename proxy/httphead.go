package proxy

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"strconv"
	"strings"
)

// HTTP/1.1 message heads: reading, parsing and the hop-by-hop rules. A head
// is read whole into a per-session buffer; names and values are slices of
// that buffer, valid until the next head is read into it.

// header is one header field, both parts slices of a head's buffer.
type header struct {
	name, value []byte
}

// head is a parsed request or response head.
type head struct {
	buf     []byte
	line    [3][]byte // request: method, uri, proto; response: proto, code, reason
	headers []header

	status        int   // responses only
	contentLength int64 // -1 when absent
	chunked       bool
	connClose     bool // "Connection: close", or HTTP/1.0 without keep-alive
	connKeepAlive bool // "Connection: keep-alive" given
	connUpgrade   bool // "Connection: upgrade" given with an Upgrade header
	connOther     bool // Connection lists other header names (hop-by-hop too)
	http10        bool
	expect100     bool
	host          []byte
}

// reset returns an empty head that keeps h's buffers (capped, so that one
// huge head does not stay pinned in a pooled session).
func (h *head) reset() head {
	if cap(h.buf) > 2*bufSize {
		return head{}
	}
	return head{buf: h.buf[:0], headers: h.headers[:0]}
}

var (
	errHeadTooLarge = errors.New("message head too large")
	errBadHead      = errors.New("malformed message head")
	errSmuggling    = errors.New("conflicting or invalid message length")
)

// readHead reads lines from br up to and including the empty line ending a
// head, into h.buf. It returns io.EOF when br is at EOF before any byte, and
// io.ErrUnexpectedEOF when the stream ends inside the head.
func (h *head) readHead(br *bufio.Reader) error {
	h.buf = h.buf[:0]
	for {
		line, err := br.ReadSlice('\n')
		if len(h.buf)+len(line) > maxHeaderBytes {
			return errHeadTooLarge
		}
		h.buf = append(h.buf, line...)
		switch {
		case err == bufio.ErrBufferFull:
			continue
		case err == io.EOF && len(h.buf) == 0:
			return io.EOF
		case err == io.EOF:
			return io.ErrUnexpectedEOF
		case err != nil:
			return err
		}
		// Leading empty lines before a request line are ignored (RFC 9112
		// section 2.2).
		if len(h.buf) <= 2 && (string(h.buf) == "\r\n" || string(h.buf) == "\n") {
			h.buf = h.buf[:0]
			continue
		}
		if n := len(h.buf); (n >= 2 && h.buf[n-2] == '\n') || (n >= 3 && string(h.buf[n-3:]) == "\n\r\n") {
			return nil
		}
	}
}

// parse splits h.buf into the start line and headers and derives the
// framing fields. isResp selects the start-line grammar.
func (h *head) parse(isResp bool) error {
	h.headers = h.headers[:0]
	h.contentLength = -1
	h.chunked, h.connClose, h.connKeepAlive, h.connUpgrade, h.connOther = false, false, false, false, false
	h.http10, h.expect100, h.host, h.status = false, false, nil, 0
	rest := h.buf
	first := true
	sawCL := false
	sawTE := false
	var upgradeHdr bool
	for len(rest) > 0 {
		i := bytes.IndexByte(rest, '\n')
		if i < 0 {
			return errBadHead
		}
		line := rest[:i]
		rest = rest[i+1:]
		if len(line) > 0 && line[len(line)-1] == '\r' {
			line = line[:len(line)-1]
		}
		if len(line) == 0 {
			break
		}
		// NUL and a CR not ending the line are never forwarded (RFC 9110
		// section 5.5): a server or client that ends the line there would
		// read another message than we did.
		if bytes.IndexByte(line, 0) >= 0 || bytes.IndexByte(line, '\r') >= 0 {
			return errBadHead
		}
		if first {
			first = false
			if err := h.parseStart(line, isResp); err != nil {
				return err
			}
			continue
		}
		if line[0] == ' ' || line[0] == '\t' {
			return errBadHead // obsolete line folding (RFC 9112 section 5.2)
		}
		c := bytes.IndexByte(line, ':')
		if c <= 0 || !isToken(line[:c]) {
			return errBadHead
		}
		name, value := line[:c], trimOWS(line[c+1:])
		h.headers = append(h.headers, header{name, value})
		switch {
		case bytes.EqualFold(name, hdrContentLength):
			n, ok := parseDecimal(value)
			if !ok || (sawCL && n != h.contentLength) {
				return errSmuggling
			}
			if sawCL {
				// The same length twice: forwarded once, as HAProxy
				// merges them (RFC 9112 section 6.3 allows it).
				h.headers = h.headers[:len(h.headers)-1]
			}
			sawCL = true
			h.contentLength = n
		case bytes.EqualFold(name, hdrTransferEncoding):
			if !isResp {
				// A request body is chunked, once, or refused: another
				// coding, a list ("gzip, chunked", "chunked, chunked") or
				// a second field is a shape that servers may frame
				// differently (RFC 9112 section 6.1).
				if sawTE || !bytes.EqualFold(value, tokChunked) {
					return errSmuggling
				}
				sawTE, h.chunked = true, true
				break
			}
			sawTE = true
			// Only "chunked" as the final coding frames a response.
			v := value
			if j := bytes.LastIndexByte(v, ','); j >= 0 {
				v = trimOWS(v[j+1:])
			}
			h.chunked = bytes.EqualFold(v, tokChunked)
		case bytes.EqualFold(name, hdrConnection):
			forEachToken(value, func(t []byte) {
				switch {
				case bytes.EqualFold(t, tokClose):
					h.connClose = true
				case bytes.EqualFold(t, tokKeepAlive):
					h.connKeepAlive = true
				case bytes.EqualFold(t, tokUpgrade):
					h.connUpgrade = true
				default:
					h.connOther = true
				}
			})
		case bytes.EqualFold(name, hdrUpgrade):
			upgradeHdr = true
		case bytes.EqualFold(name, hdrHost):
			// Two Host fields: which one routes (hdr(host)) and which one
			// the server honours could differ (RFC 9112 section 3.2: 400).
			if h.host != nil && !isResp {
				return errBadHead
			}
			h.host = value
		case bytes.EqualFold(name, hdrExpect):
			h.expect100 = bytes.EqualFold(value, tok100Continue)
		}
	}
	if first {
		return errBadHead
	}
	// A message with both Content-Length and Transfer-Encoding is a request
	// smuggling shape (RFC 9112 section 6.3): refused.
	if sawTE && sawCL {
		return errSmuggling
	}
	// An HTTP/1.0 request cannot be chunked (RFC 9112 section 6.1): an
	// HTTP/1.0 server would ignore Transfer-Encoding and read the body as
	// the next request.
	if sawTE && h.http10 && !isResp {
		return errSmuggling
	}
	if sawTE && !h.chunked {
		h.contentLength = -1
	}
	// An absolute-form target names the host itself; a Host field that
	// says otherwise is refused, as HAProxy 2.6 does, since the rules
	// route on Host and a server may honour the target.
	if !isResp && h.host != nil {
		if auth, ok := authorityOf(h.line[1]); ok && !bytes.EqualFold(auth, h.host) {
			return errBadHead
		}
	}
	h.connUpgrade = h.connUpgrade && upgradeHdr
	if h.http10 && !h.connKeepAlive {
		h.connClose = true
	}
	return nil
}

// parseStart parses a request line or a status line.
func (h *head) parseStart(line []byte, isResp bool) error {
	sp1 := bytes.IndexByte(line, ' ')
	if sp1 <= 0 {
		return errBadHead
	}
	a, rest := line[:sp1], line[sp1+1:]
	if isResp {
		// HTTP-version SP status-code SP [reason-phrase]
		code := rest
		var reason []byte
		if sp2 := bytes.IndexByte(rest, ' '); sp2 >= 0 {
			code, reason = rest[:sp2], rest[sp2+1:]
		}
		if !bytes.HasPrefix(a, []byte("HTTP/1.")) || len(code) != 3 {
			return errBadHead
		}
		n, ok := parseDecimal(code)
		if !ok || n < 100 {
			return errBadHead
		}
		h.line = [3][]byte{a, code, reason}
		h.status = int(n)
		h.http10 = string(a) == "HTTP/1.0"
		return nil
	}
	sp2 := bytes.LastIndexByte(rest, ' ')
	if sp2 <= 0 {
		return errBadHead
	}
	uri, proto := rest[:sp2], rest[sp2+1:]
	if !isToken(a) || len(uri) == 0 || bytes.ContainsFunc(uri, isCTLOrSpace) {
		return errBadHead
	}
	switch string(proto) {
	case "HTTP/1.1":
	case "HTTP/1.0":
		h.http10 = true
	default:
		return errBadHead
	}
	h.line = [3][]byte{a, uri, proto}
	return nil
}

// authorityOf returns the authority of an absolute-form request target
// ("http://example.com:8080/path" -> "example.com:8080"); ok is false for
// the other forms.
func authorityOf(uri []byte) (auth []byte, ok bool) {
	i := bytes.Index(uri, []byte("://"))
	if i <= 0 || !isToken(uri[:i]) {
		return nil, false
	}
	auth = uri[i+3:]
	if j := bytes.IndexAny(auth, "/?#"); j >= 0 {
		auth = auth[:j]
	}
	if k := bytes.LastIndexByte(auth, '@'); k >= 0 {
		auth = auth[k+1:] // userinfo is not part of the host
	}
	return auth, true
}

// isCTLOrSpace reports whether r may not appear in a request target
// (RFC 9112 section 3.2), as HAProxy refuses it.
func isCTLOrSpace(r rune) bool { return r <= ' ' || r == 0x7f }

// Header names and tokens compared on every message.
var (
	hdrContentLength    = []byte("Content-Length")
	hdrTransferEncoding = []byte("Transfer-Encoding")
	hdrConnection       = []byte("Connection")
	hdrKeepAlive        = []byte("Keep-Alive")
	hdrProxyConnection  = []byte("Proxy-Connection")
	hdrUpgrade          = []byte("Upgrade")
	hdrHost             = []byte("Host")
	hdrExpect           = []byte("Expect")
	hdrTE               = []byte("TE")
	hdrTrailer          = []byte("Trailer")
	tokChunked          = []byte("chunked")
	tokClose            = []byte("close")
	tokKeepAlive        = []byte("keep-alive")
	tokUpgrade          = []byte("upgrade")
	tok100Continue      = []byte("100-continue")
)

// isHopByHop reports whether a header must not be forwarded: the fields
// RFC 9110 section 7.6.1 names as connection-specific, and any field listed
// in the message's Connection header. Upgrade is kept when the message
// asks for a protocol upgrade (keepUpgrade). Transfer-Encoding is kept:
// chunked bodies are forwarded as they are.
func (h *head) isHopByHop(name []byte, keepUpgrade bool) bool {
	switch {
	case bytes.EqualFold(name, hdrConnection), bytes.EqualFold(name, hdrKeepAlive),
		bytes.EqualFold(name, hdrProxyConnection), bytes.EqualFold(name, hdrTE),
		bytes.EqualFold(name, hdrTrailer):
		return true
	case bytes.EqualFold(name, hdrUpgrade):
		return !keepUpgrade
	}
	if !h.connOther {
		return false
	}
	listed := false
	for _, f := range h.headers {
		if bytes.EqualFold(f.name, hdrConnection) {
			forEachToken(f.value, func(t []byte) {
				if bytes.EqualFold(t, name) && !bytes.EqualFold(t, tokUpgrade) {
					listed = true
				}
			})
		}
	}
	return listed
}

// Header returns the value of the first header named name.
func (h *head) Header(name string) (string, bool) {
	for _, f := range h.headers {
		if bytes.EqualFold(f.name, []byte(name)) {
			return string(f.value), true
		}
	}
	return "", false
}

// forEachToken calls fn for each comma-separated token of v, trimmed.
func forEachToken(v []byte, fn func([]byte)) {
	for len(v) > 0 {
		i := bytes.IndexByte(v, ',')
		var t []byte
		if i < 0 {
			t, v = v, nil
		} else {
			t, v = v[:i], v[i+1:]
		}
		if t = trimOWS(t); len(t) > 0 {
			fn(t)
		}
	}
}

func trimOWS(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t') {
		b = b[1:]
	}
	for len(b) > 0 && (b[len(b)-1] == ' ' || b[len(b)-1] == '\t') {
		b = b[:len(b)-1]
	}
	return b
}

// parseDecimal parses a non-negative decimal of at most 18 digits.
func parseDecimal(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 18 {
		return 0, false
	}
	var n int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	return n, true
}

// isToken reports whether b is an RFC 9110 token.
func isToken(b []byte) bool {
	if len(b) == 0 {
		return false
	}
	for _, c := range b {
		if !tokenChars[c] {
			return false
		}
	}
	return true
}

// tokenChars[c] is true when c may appear in a token (RFC 9110 section 5.6.2).
var tokenChars = func() (t [256]bool) {
	for c := '!'; c < 0x7f; c++ {
		t[c] = !strings.ContainsRune(`"(),/:;<=>?@[\]{}`, c)
	}
	return t
}()

// copyChunked copies one chunked body from src to dst as it is (sizes,
// extensions and trailers included) and returns the bytes written. It checks
// the framing as it goes and fails with errBadHead on a malformed chunk.
func copyChunked(dst *bufio.Writer, src *bufio.Reader, flush func() error) (int64, error) {
	var total int64
	for {
		// What was copied goes out before waiting for the next chunk: a
		// streamed body (server-sent events, long polling) must not lag a
		// chunk behind, nor its head wait for the first chunk.
		if src.Buffered() == 0 && dst.Buffered() > 0 && flush != nil {
			if err := flush(); err != nil {
				return total, err
			}
		}
		line, err := src.ReadSlice('\n')
		if err != nil {
			if err == bufio.ErrBufferFull {
				return total, errBadHead
			}
			return total, err
		}
		size, ok := parseChunkSize(line)
		if !ok {
			return total, errBadHead
		}
		n, _ := dst.Write(line)
		total += int64(n)
		if size == 0 {
			// Trailer section, up to the empty line.
			for {
				tl, err := src.ReadSlice('\n')
				if err != nil {
					return total, err
				}
				n, err := dst.Write(tl)
				total += int64(n)
				if err != nil {
					return total, err
				}
				if len(tl) <= 2 && (tl[0] == '\n' || tl[0] == '\r') {
					return total, nil
				}
			}
		}
		n2, err := copyBuffered(dst, src, size+2, flush) // data and its CRLF
		total += n2
		if err != nil {
			return total, err
		}
	}
}

// parseChunkSize parses "HEX[;ext]\r\n".
func parseChunkSize(line []byte) (int64, bool) {
	line = bytes.TrimRight(line, "\r\n")
	if i := bytes.IndexByte(line, ';'); i >= 0 {
		line = line[:i]
	}
	line = trimOWS(line)
	if len(line) == 0 || len(line) > 15 {
		return 0, false
	}
	n, err := strconv.ParseInt(string(line), 16, 64)
	return n, err == nil && n >= 0
}

// copyBuffered copies exactly n bytes from src to dst through dst's buffer,
// calling flush whenever src has nothing more buffered (so a streamed body
// reaches its reader as it arrives, and a small one leaves in one write).
func copyBuffered(dst *bufio.Writer, src *bufio.Reader, n int64, flush func() error) (int64, error) {
	var done int64
	for done < n {
		if src.Buffered() == 0 && dst.Buffered() > 0 && flush != nil {
			if err := flush(); err != nil {
				return done, err
			}
		}
		want := n - done
		p, err := src.Peek(1)
		if len(p) == 0 {
			if err == nil {
				err = io.ErrUnexpectedEOF
			}
			return done, err
		}
		avail := int64(src.Buffered())
		if avail > want {
			avail = want
		}
		chunk, _ := src.Peek(int(avail))
		w, werr := dst.Write(chunk)
		src.Discard(w)
		done += int64(w)
		if werr != nil {
			return done, werr
		}
	}
	return done, nil
}
