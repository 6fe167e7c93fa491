package proxy

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"testing"
)

// Strict HTTP/1.1 framing (RFC 9112) for the differential test: the
// recording upstream reads what a proxy sends with it, and the test's
// clients read what a proxy answers with it. It accepts only what a
// sender is allowed to send, so that a proxy's output that it refuses is
// output some other parser may frame differently: every line ends in
// CRLF, no obs-fold, no whitespace before a field's colon, no control
// character in a field value, one unambiguous length (Content-Length
// digits only, equal if repeated; Transfer-Encoding codings that are
// tokens, with chunked once and
// last, never beside Content-Length, never on HTTP/1.0), chunk-size
// `1*HEXDIG` of at most 16 digits followed by well-formed extensions and
// CRLF, chunk data followed by CRLF, and trailer fields that are valid
// field lines.

// strictField is one field line, the value trimmed of OWS.
type strictField struct{ name, value string }

// strictMsg is one message framed by strictReader.
type strictMsg struct {
	line          string // the start line, without CRLF
	method        string // requests
	target        string // requests
	proto         string
	status        int // responses
	fields        []strictField
	trailers      []strictField
	body          []byte
	chunked       bool
	untilClose    bool // a response body delimited by the connection's end
	tunnel        bool // a 101: what follows is not HTTP
	close         bool // the sender closes after it (Connection: close, or HTTP/1.0 without keep-alive)
	contentLength int64
}

// get returns the values of the fields named name, in order.
func (m *strictMsg) get(name string) []string {
	var v []string
	for _, f := range m.fields {
		if strings.EqualFold(f.name, name) {
			v = append(v, f.value)
		}
	}
	return v
}

// first returns the first value of the field named name, or "".
func (m *strictMsg) first(name string) string {
	if v := m.get(name); len(v) > 0 {
		return v[0]
	}
	return ""
}

// errStrictIncomplete is returned when the stream ends inside a message:
// the sender aborted, which is not a framing violation.
var errStrictIncomplete = errors.New("stream ended inside a message")

// strictViolation is a framing violation: a strict recipient refuses the
// message and closes the connection.
type strictViolation struct{ reason string }

func (v *strictViolation) Error() string { return "framing violation: " + v.reason }

func violation(format string, args ...any) error {
	return &strictViolation{fmt.Sprintf(format, args...)}
}

// isViolation reports whether err is a strictViolation.
func isViolation(err error) bool {
	var v *strictViolation
	return errors.As(err, &v)
}

// strictMaxHead bounds a head (and a trailer section), as a server's
// buffer would.
const strictMaxHead = 256 << 10

// strictReader frames HTTP/1.1 messages strictly from br.
type strictReader struct {
	br *bufio.Reader
	// leaveUntilClose makes readResponse return after the head of a
	// response delimited by the connection's end, its body unread: a
	// client must half-close before reading it, or wait for ever.
	leaveUntilClose bool
}

// line reads one line ending in CRLF and returns it without the CRLF.
// atStart says that a clean EOF before any byte is io.EOF (a message
// boundary); anywhere else an EOF is errStrictIncomplete. *budget is
// decremented by the line's length and must stay positive.
func (r *strictReader) line(atStart bool, budget *int) (string, error) {
	var b []byte
	for {
		part, err := r.br.ReadSlice('\n')
		b = append(b, part...)
		if *budget -= len(part); *budget < 0 {
			return "", violation("head or trailer section over %d bytes", strictMaxHead)
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if err != nil {
			if len(b) == 0 && atStart && err == io.EOF {
				return "", io.EOF
			}
			if err == io.EOF || err == io.ErrUnexpectedEOF {
				return "", errStrictIncomplete
			}
			return "", err
		}
		break
	}
	if len(b) < 2 || b[len(b)-2] != '\r' {
		return "", violation("line ending in a bare LF: %q", clip(b))
	}
	b = b[:len(b)-2]
	if i := bytes.IndexByte(b, '\r'); i >= 0 {
		return "", violation("bare CR inside a line: %q", clip(b))
	}
	if i := bytes.IndexByte(b, 0); i >= 0 {
		return "", violation("NUL inside a line: %q", clip(b))
	}
	return string(b), nil
}

// fields reads field lines up to the empty line ending a head or a
// trailer section.
func (r *strictReader) fields(budget *int) ([]strictField, error) {
	var out []strictField
	for {
		l, err := r.line(false, budget)
		if err != nil {
			return out, err
		}
		if l == "" {
			return out, nil
		}
		f, err := parseStrictField(l)
		if err != nil {
			return out, err
		}
		out = append(out, f)
	}
}

// parseStrictField parses `field-name ":" OWS field-value OWS`.
func parseStrictField(l string) (strictField, error) {
	if l[0] == ' ' || l[0] == '\t' {
		return strictField{}, violation("obs-fold line %q", clip([]byte(l)))
	}
	name, value, ok := strings.Cut(l, ":")
	if !ok || !strictToken([]byte(name)) {
		return strictField{}, violation("bad field name in %q", clip([]byte(l)))
	}
	// NUL, CR and LF never pass line(); other control characters in a
	// value are invalid but may be kept (RFC 9110 section 5.5), and the
	// framing fields, parsed as tokens and digits, refuse them anyway.
	value = strings.Trim(value, " \t")
	return strictField{name, value}, nil
}

// readRequest frames one request. It returns io.EOF at a clean boundary.
func (r *strictReader) readRequest() (*strictMsg, error) {
	budget := strictMaxHead
	l, err := r.line(true, &budget)
	if err != nil {
		return nil, err
	}
	m := &strictMsg{line: l}
	parts := strings.Split(l, " ")
	if len(parts) != 3 {
		return m, violation("request line %q is not three parts", clip([]byte(l)))
	}
	m.method, m.target, m.proto = parts[0], parts[1], parts[2]
	if !strictToken([]byte(m.method)) {
		return m, violation("method %q", m.method)
	}
	for i := 0; i < len(m.target); i++ {
		if c := m.target[i]; c <= ' ' || c >= 0x7f || c == '#' {
			return m, violation("byte %#x in request target %q", c, clip([]byte(m.target)))
		}
	}
	if m.target == "" {
		return m, violation("empty target")
	}
	if m.proto != "HTTP/1.1" && m.proto != "HTTP/1.0" {
		return m, violation("version %q", m.proto)
	}
	if m.fields, err = r.fields(&budget); err != nil {
		return m, err
	}
	if err := m.frame(false, ""); err != nil {
		return m, err
	}
	return m, r.body(m)
}

// readResponse frames one response to a request with method (a HEAD
// response has no body). It returns io.EOF at a clean boundary.
func (r *strictReader) readResponse(method string) (*strictMsg, error) {
	budget := strictMaxHead
	l, err := r.line(true, &budget)
	if err != nil {
		return nil, err
	}
	m := &strictMsg{line: l}
	proto, rest, ok := strings.Cut(l, " ")
	// A control byte in the reason phrase is invalid but harmless: a
	// client ignores the phrase (RFC 9112 section 4), and NUL, CR and LF
	// never pass line().
	code, _, ok2 := strings.Cut(rest, " ")
	if !ok || !ok2 || (proto != "HTTP/1.1" && proto != "HTTP/1.0") || len(code) != 3 {
		return m, violation("status line %q", clip([]byte(l)))
	}
	m.proto = proto
	if m.status, err = strconv.Atoi(code); err != nil || m.status < 100 || code[0] == '+' {
		return m, violation("status code %q", code)
	}
	if m.fields, err = r.fields(&budget); err != nil {
		return m, err
	}
	if err := m.frame(true, method); err != nil {
		return m, err
	}
	if m.untilClose && r.leaveUntilClose {
		return m, nil
	}
	return m, r.body(m)
}

// frame derives the body framing of m from its fields (RFC 9112 section
// 6), refusing every ambiguous combination.
func (m *strictMsg) frame(isResp bool, method string) error {
	m.contentLength = -1
	var codings []string
	for _, v := range m.get("Transfer-Encoding") {
		for _, c := range strings.Split(v, ",") {
			c = strings.Trim(c, " \t")
			if c == "" {
				continue // empty list elements are allowed (RFC 9110 section 5.6.1)
			}
			if !strictToken([]byte(c)) {
				return violation("transfer coding %q in %q", c, v)
			}
			codings = append(codings, strings.ToLower(c))
		}
	}
	for i, c := range codings {
		if c == "chunked" && i != len(codings)-1 {
			return violation("chunked is not the final transfer coding: %q", codings)
		}
	}
	hasTE := len(codings) > 0
	m.chunked = hasTE && codings[len(codings)-1] == "chunked"
	for _, v := range m.get("Content-Length") {
		for _, n := range strings.Split(v, ",") {
			n = strings.Trim(n, " \t")
			if n == "" || strings.Trim(n, "0123456789") != "" || len(strings.TrimLeft(n, "0")) > 18 {
				return violation("Content-Length %q", v)
			}
			cl, _ := strconv.ParseInt(n, 10, 64)
			if m.contentLength >= 0 && cl != m.contentLength {
				return violation("Content-Length values differ: %q", m.get("Content-Length"))
			}
			m.contentLength = cl
		}
	}
	if hasTE && m.contentLength >= 0 {
		return violation("both Transfer-Encoding and Content-Length")
	}
	if hasTE && m.proto == "HTTP/1.0" {
		return violation("Transfer-Encoding on HTTP/1.0")
	}
	conn := strings.ToLower(strings.Join(m.get("Connection"), ","))
	keepAlive := false
	for _, t := range strings.Split(conn, ",") {
		switch strings.Trim(t, " \t") {
		case "close":
			m.close = true
		case "keep-alive":
			keepAlive = true
		}
	}
	if m.proto == "HTTP/1.0" && !keepAlive {
		m.close = true
	}
	if !isResp {
		if hasTE && !m.chunked {
			return violation("request transfer coding %q does not end in chunked", codings)
		}
		return nil
	}
	switch {
	case m.status == 101:
		m.tunnel, m.chunked, m.contentLength = true, false, -1
	case method == "HEAD" || m.status < 200 || m.status == 204 || m.status == 304:
		m.chunked, m.contentLength = false, -1
	case hasTE && !m.chunked, !hasTE && m.contentLength < 0:
		m.untilClose = true
	}
	return nil
}

// body reads m's body as m.frame decided.
func (r *strictReader) body(m *strictMsg) error {
	switch {
	case m.chunked:
		return r.chunked(m)
	case m.contentLength > 0:
		m.body = make([]byte, 0, min(m.contentLength, 1<<20))
		n, err := io.Copy(&sliceWriter{&m.body}, io.LimitReader(r.br, m.contentLength))
		if err == nil && n < m.contentLength {
			err = errStrictIncomplete
		}
		return err
	case m.untilClose:
		var err error
		m.body, err = io.ReadAll(r.br)
		return err
	}
	return nil
}

// chunked reads a chunked body and its trailer section.
func (r *strictReader) chunked(m *strictMsg) error {
	budget := strictMaxHead
	for {
		l, err := r.line(false, &budget)
		if err != nil {
			return err
		}
		size, err := parseStrictChunkSize(l)
		if err != nil {
			return err
		}
		if size == 0 {
			// Trailer fields are checked as field lines. One that frames
			// or routes (Content-Length, Host) is not refused: a server
			// must not merge it into the header section (RFC 9110
			// section 6.5.1), so it frames nothing.
			tr, err := r.fields(&budget)
			m.trailers = tr
			return err
		}
		// Read the data in bounded pieces: a chunk may announce far more
		// than ever arrives (the fuzzer's 0x1000000001 asked for 64 GiB).
		for left := size; left > 0; {
			n := min(left, 64<<10)
			data, err := r.br.Peek(int(min(n, int64(r.br.Size()))))
			if len(data) == 0 {
				if err == nil {
					err = io.ErrUnexpectedEOF
				}
				return errStrictIncomplete
			}
			m.body = append(m.body, data...)
			r.br.Discard(len(data))
			left -= int64(len(data))
		}
		crlf := make([]byte, 2)
		n, _ := io.ReadFull(r.br, crlf)
		if n < 2 && (n == 0 || crlf[0] == '\r') {
			return errStrictIncomplete
		}
		if string(crlf) != "\r\n" {
			return violation("chunk data not followed by CRLF but %q", crlf[:n])
		}
		budget = strictMaxHead
	}
}

// parseStrictChunkSize parses `chunk-size [ chunk-ext ]` (RFC 9112
// section 7.1): 1 to 16 hex digits, then `*( BWS ";" BWS name [ BWS "="
// BWS ( token / quoted-string ) ] )`.
func parseStrictChunkSize(l string) (int64, error) {
	i := 0
	for i < len(l) && isHex(l[i]) {
		i++
	}
	if i == 0 || i > 16 {
		return 0, violation("chunk size line %q", clip([]byte(l)))
	}
	size, err := strconv.ParseUint(l[:i], 16, 64)
	if err != nil || size > math.MaxInt64 {
		return 0, violation("chunk size %q", l[:i])
	}
	rest := l[i:]
	for {
		rest = strings.TrimLeft(rest, " \t")
		if rest == "" {
			return int64(size), nil
		}
		if rest[0] != ';' {
			return 0, violation("chunk size line %q", clip([]byte(l)))
		}
		rest = strings.TrimLeft(rest[1:], " \t")
		n := tokenPrefix(rest)
		if n == 0 {
			return 0, violation("chunk extension name in %q", clip([]byte(l)))
		}
		rest = strings.TrimLeft(rest[n:], " \t")
		if rest == "" || rest[0] != '=' {
			continue
		}
		rest = strings.TrimLeft(rest[1:], " \t")
		if rest != "" && rest[0] == '"' {
			end := quotedEnd(rest)
			if end < 0 {
				return 0, violation("chunk extension quoted string in %q", clip([]byte(l)))
			}
			rest = rest[end:]
			continue
		}
		if n = tokenPrefix(rest); n == 0 {
			return 0, violation("chunk extension value in %q", clip([]byte(l)))
		}
		rest = rest[n:]
	}
}

// tokenPrefix returns the length of the token at the start of s.
func tokenPrefix(s string) int {
	n := 0
	for n < len(s) && strictTokenChars[s[n]] {
		n++
	}
	return n
}

// quotedEnd returns the length of the quoted-string at the start of s, or
// -1 (RFC 9110 section 5.6.4).
func quotedEnd(s string) int {
	for i := 1; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"':
			return i + 1
		case c == '\\':
			if i+1 >= len(s) || (s[i+1] < ' ' && s[i+1] != '\t') || s[i+1] == 0x7f {
				return -1
			}
			i++
		case (c < ' ' && c != '\t') || c == 0x7f:
			return -1
		}
	}
	return -1
}

// strictToken reports whether b is an RFC 9110 token (section 5.6.2).
func strictToken(b []byte) bool {
	if len(b) == 0 {
		return false
	}
	for _, c := range b {
		if !strictTokenChars[c] {
			return false
		}
	}
	return true
}

// strictTokenChars[c] is true when c may appear in a token.
var strictTokenChars = func() (t [256]bool) {
	for c := '!'; c < 0x7f; c++ {
		t[c] = !strings.ContainsRune(`"(),/:;<=>?@[\]{}`, c)
	}
	return t
}()

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// sliceWriter appends to a byte slice.
type sliceWriter struct{ b *[]byte }

func (w *sliceWriter) Write(p []byte) (int, error) {
	*w.b = append(*w.b, p...)
	return len(p), nil
}

// clip shortens b for a message.
func clip(b []byte) []byte {
	if len(b) > 80 {
		return append(b[:80:80], "..."...)
	}
	return b
}

// TestStrictReader pins the framer the differential test's verdicts rest
// on: what it accepts (and the body it frames), what it refuses as a
// violation, and an aborted message.
func TestStrictReader(t *testing.T) {
	const h = "POST / HTTP/1.1\r\nHost: a\r\n"
	cases := []struct {
		name, in string
		body     string // framed body, when accepted
		err      string // "violation", "incomplete" or "" (accepted)
	}{
		{"plain", "GET / HTTP/1.1\r\nHost: a\r\n\r\n", "", ""},
		{"length", h + "Content-Length: 5\r\n\r\nhello", "hello", ""},
		{"length list of equal values", h + "Content-Length: 5, 005\r\n\r\nhello", "hello", ""},
		{"chunked with extensions and a trailer", h + "Transfer-Encoding: chunked\r\n\r\n5 ;a=\"b;c\"\r\nhello\r\n0\r\nX: y\r\n\r\n", "hello", ""},
		{"codings ending in chunked", h + "Transfer-Encoding: gzip, chunked,\r\n\r\n0\r\n\r\n", "", ""},
		{"control byte kept in a value", h + "X: a\x0bb\r\n\r\n", "", ""},
		{"bare LF", "GET / HTTP/1.1\nHost: a\r\n\r\n", "", "violation"},
		{"bare CR", h + "X: a\rb\r\n\r\n", "", "violation"},
		{"NUL", h + "X: a\x00\r\n\r\n", "", "violation"},
		{"obs-fold", h + "X: a\r\n b\r\n\r\n", "", "violation"},
		{"space before colon", h + "Content-Length : 5\r\n\r\nhello", "", "violation"},
		{"length and chunked", h + "Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", "", "violation"},
		{"lengths differ", h + "Content-Length: 5\r\nContent-Length: 6\r\n\r\nhello!", "", "violation"},
		{"length with sign", h + "Content-Length: +5\r\n\r\nhello", "", "violation"},
		{"coding not chunked last", h + "Transfer-Encoding: chunked, gzip\r\n\r\n0\r\n\r\n", "", "violation"},
		{"xchunked", h + "Transfer-Encoding: xchunked\r\n\r\n0\r\n\r\n", "", "violation"},
		{"chunked on HTTP/1.0", "POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", "", "violation"},
		{"chunk size with sign", h + "Transfer-Encoding: chunked\r\n\r\n+5\r\nhello\r\n0\r\n\r\n", "", "violation"},
		{"chunk size after a space", h + "Transfer-Encoding: chunked\r\n\r\n 5\r\nhello\r\n0\r\n\r\n", "", "violation"},
		{"chunk size of 17 digits", h + "Transfer-Encoding: chunked\r\n\r\n00000000000000005\r\nhello\r\n0\r\n\r\n", "", "violation"},
		{"chunk data without CRLF", h + "Transfer-Encoding: chunked\r\n\r\n1\r\nA\n105\r\n", "", "violation"},
		{"unclosed quote in an extension", h + "Transfer-Encoding: chunked\r\n\r\n5;a=\"b\r\nhello\r\n0\r\n\r\n", "", "violation"},
		{"trailer line of a bare CR", h + "Transfer-Encoding: chunked\r\n\r\n0\r\n\r\r\n\r\n", "", "violation"},
		{"length in the trailers frames nothing", h + "Transfer-Encoding: chunked\r\n\r\n0\r\nContent-Length: 5\r\n\r\n", "", ""},
		{"fragment in the target", "GET /#a HTTP/1.1\r\nHost: a\r\n\r\n", "", "violation"},
		{"raw byte in the target", "GET /\xe9 HTTP/1.1\r\nHost: a\r\n\r\n", "", "violation"},
		{"two spaces in the request line", "GET  / HTTP/1.1\r\nHost: a\r\n\r\n", "", "violation"},
		{"version 1.2", "GET / HTTP/1.2\r\nHost: a\r\n\r\n", "", "violation"},
		{"body cut short", h + "Content-Length: 5\r\n\r\nhel", "", "incomplete"},
		{"last chunk missing", h + "Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n", "", "incomplete"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := &strictReader{br: bufio.NewReader(strings.NewReader(c.in))}
			m, err := r.readRequest()
			got := ""
			switch {
			case isViolation(err):
				got = "violation"
			case err == errStrictIncomplete:
				got = "incomplete"
			case err != nil:
				t.Fatalf("got error %v", err)
			}
			if got != c.err {
				t.Fatalf("got %q (%v), want %q", got, err, c.err)
			}
			if got == "" && string(m.body) != c.body {
				t.Errorf("got body %q, want %q", m.body, c.body)
			}
		})
	}
	resp := []struct {
		name, method, in string
		body             string
		err              string
		tunnel, until    bool
	}{
		{"HEAD has no body", "HEAD", "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n", "", "", false, false},
		{"204 has no body", "GET", "HTTP/1.1 204 No Content\r\nContent-Length: 5\r\n\r\n", "", "", false, false},
		{"delimited by the close", "GET", "HTTP/1.1 200 OK\r\n\r\nbody", "body", "", false, true},
		{"not chunked last: delimited by the close", "GET", "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\nbody", "body", "", false, true},
		{"101 starts a tunnel", "GET", "HTTP/1.1 101 Switching Protocols\r\nUpgrade: x\r\n\r\nraw", "", "", true, false},
		{"status line without its second space", "GET", "HTTP/1.1 200\r\nContent-Length: 0\r\n\r\n", "", "violation", false, false},
		{"four-digit status", "GET", "HTTP/1.1 2000 OK\r\nContent-Length: 0\r\n\r\n", "", "violation", false, false},
	}
	for _, c := range resp {
		t.Run(c.name, func(t *testing.T) {
			r := &strictReader{br: bufio.NewReader(strings.NewReader(c.in))}
			m, err := r.readResponse(c.method)
			if got := isViolation(err); got != (c.err == "violation") || (!got && err != nil) {
				t.Fatalf("got error %v, want %q", err, c.err)
			}
			if c.err == "" && (string(m.body) != c.body || m.tunnel != c.tunnel || m.untilClose != c.until) {
				t.Errorf("got body %q tunnel %v until close %v, want %q %v %v", m.body, m.tunnel, m.untilClose, c.body, c.tunnel, c.until)
			}
		})
	}
}
