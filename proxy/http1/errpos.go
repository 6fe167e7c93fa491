package http1

// Captured protocol errors, for HAProxy's `show errors`: where the engine
// refuses a message, captureError hands the core the bytes as received
// (the head and what followed it in the buffer, up to 16 KiB) and the
// position of the first offending byte, found by scanning them with the
// parser's rules (ErrorPosition) so that the parser itself does no
// reporting work on its fast path.

import (
	"bufio"
	"bytes"
	"errors"
)

// MaxErrorCapture is the most bytes captured per error (HAProxy keeps one
// buffer, 16 KiB).
const MaxErrorCapture = 16 << 10

// MaxHeadBytes is the largest message head the engine reads: the buffer
// size `show errors` reports.
const MaxHeadBytes = maxHeaderBytes

// isParseError reports whether err is the parser refusing a message
// (rather than a timeout or a connection going away).
func isParseError(err error) bool {
	return errors.Is(err, errBadHead) || errors.Is(err, errHeadTooLarge) || errors.Is(err, errSmuggling) ||
		errors.Is(err, errTooManyHdrs)
}

// captureError hands the core a message h refused with err: its bytes as
// read and what br holds after them, and the offending byte. Other errors
// are not captured.
func (s *session) captureError(h *head, br *bufio.Reader, isResp bool, err error) {
	if !isParseError(err) {
		return
	}
	n := min(len(h.buf), MaxErrorCapture)
	buf := append([]byte(nil), h.buf[:n]...)
	if br != nil && n < MaxErrorCapture {
		if rest, _ := br.Peek(min(br.Buffered(), MaxErrorCapture-n)); len(rest) > 0 {
			buf = append(buf, rest...)
		}
	}
	pos, why := ErrorPosition(buf, isResp, h.maxHdr, err)
	s.x.BadMessage(isResp, buf, pos, why)
}

// ErrorPosition finds the first byte of b that the parser refuses (its
// rules, in its order), and why; maxHdr is tune_http_maxhdr (0: the
// default) and err the parser's error, for the cases the scan does not pin
// down. The position is len(b) when the message ended before it was
// complete.
func ErrorPosition(b []byte, isResp bool, maxHdr int, err error) (int, string) {
	if errors.Is(err, errHeadTooLarge) {
		return min(len(b), maxHeaderBytes), "message head too large"
	}
	if maxHdr <= 0 {
		maxHdr = defaultMaxHdr
	}
	off, lines := 0, 0
	first := true
	cl0, te0, host0 := -1, -1, -1
	var clVal, target []byte
	http10 := false
	for off < len(b) {
		i := bytes.IndexByte(b[off:], '\n')
		if i < 0 {
			return len(b), "incomplete message head"
		}
		line := b[off : off+i]
		if len(line) > 0 && line[len(line)-1] == '\r' {
			line = line[:len(line)-1]
		}
		if len(line) == 0 {
			if first {
				off += i + 1
				continue // leading empty lines are ignored
			}
			break
		}
		if j := bytes.IndexAny(line, "\x00\r"); j >= 0 {
			return off + j, "NUL or CR inside a line"
		}
		lines++
		if first {
			first = false
			if pos, why := startLineError(line, isResp); pos >= 0 {
				return off + pos, why
			}
			if !isResp {
				sp1, sp2 := bytes.IndexByte(line, ' '), bytes.LastIndexByte(line, ' ')
				target = line[sp1+1 : sp2]
				http10 = bytes.HasSuffix(line, []byte("HTTP/1.0"))
			}
			off += i + 1
			continue
		}
		if line[0] == ' ' || line[0] == '\t' {
			return off, "obsolete line folding"
		}
		if lines > maxHdr {
			return off, "too many header fields (tune_http_maxhdr)"
		}
		c := bytes.IndexByte(line, ':')
		for j := 0; j < len(line) && (c < 0 || j < c); j++ {
			if !tokenChars[line[j]] {
				return off + j, "invalid character in header name"
			}
		}
		if c <= 0 {
			return off + len(line), "header line without ':'"
		}
		name := line[:c]
		vstart := c + 1
		for vstart < len(line) && (line[vstart] == ' ' || line[vstart] == '\t') {
			vstart++
		}
		value := trimOWS(line[c+1:])
		switch {
		case bytes.EqualFold(name, hdrContentLength):
			if _, ok := parseDecimal(value); !ok {
				return off + vstart, "invalid Content-Length"
			}
			if cl0 >= 0 && !bytes.Equal(value, clVal) {
				return off + vstart, "Content-Length fields with different values"
			}
			if cl0 < 0 {
				cl0, clVal = off, value
			}
		case bytes.EqualFold(name, hdrTransferEncoding):
			if !isResp && (te0 >= 0 || !bytes.EqualFold(value, tokChunked)) {
				return off + vstart, "Transfer-Encoding other than one \"chunked\""
			}
			if te0 < 0 {
				te0 = off
			}
		case bytes.EqualFold(name, hdrHost) && !isResp:
			if host0 >= 0 {
				return off, "two Host fields"
			}
			host0 = off + vstart
			if auth, ok := authorityOf(target); ok && !bytes.EqualFold(auth, value) {
				return host0, "Host differs from the absolute-form target's authority"
			}
		}
		off += i + 1
	}
	if first {
		return 0, "empty message"
	}
	// The checks the parser makes once the head is read.
	switch {
	case cl0 >= 0 && te0 >= 0:
		return max(cl0, te0), "Content-Length and Transfer-Encoding both present"
	case te0 >= 0 && http10 && !isResp:
		return te0, "Transfer-Encoding in an HTTP/1.0 request"
	}
	return min(off, len(b)), "invalid message"
}

// startLineError returns the position of the first invalid byte of a
// request or status line (-1 when valid) and why.
func startLineError(line []byte, isResp bool) (int, string) {
	sp1 := bytes.IndexByte(line, ' ')
	if isResp {
		if !bytes.HasPrefix(line, []byte("HTTP/1.")) || sp1 != 8 {
			return 0, "invalid version in status line"
		}
		code := line[sp1+1:]
		if j := bytes.IndexByte(code, ' '); j >= 0 {
			code = code[:j]
		}
		if n, ok := parseDecimal(code); !ok || len(code) != 3 || n < 100 {
			return sp1 + 1, "invalid status code"
		}
		return -1, ""
	}
	for j := 0; j < len(line) && (sp1 < 0 || j < sp1); j++ {
		if !tokenChars[line[j]] {
			return j, "invalid character in method"
		}
	}
	if sp1 <= 0 {
		return len(line), "request line without target"
	}
	sp2 := bytes.LastIndexByte(line, ' ')
	if sp2 <= sp1 {
		return len(line), "request line without version"
	}
	if sp2 == sp1+1 {
		return sp2, "empty target"
	}
	uri := line[sp1+1 : sp2]
	for j, c := range uri {
		if badTargetByte[c] {
			return sp1 + 1 + j, "invalid character in target"
		}
	}
	if i := bytes.Index(uri, []byte("://")); i > 0 && isToken(uri[:i]) {
		rest := uri[i+3:]
		if end := bytes.IndexAny(rest, "/?"); end >= 0 && rest[end] == '?' {
			return sp1 + 1 + i + 3 + end, "query without a path in an absolute-form target"
		}
	}
	if v := string(line[sp2+1:]); v != "HTTP/1.1" && v != "HTTP/1.0" {
		return sp2 + 1, "invalid version"
	}
	return -1, ""
}
