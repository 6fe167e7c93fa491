package http1

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"strconv"
	"strings"

	"github.com/fulcrum-proxy/fulcrum/proxy/netio"
	"github.com/fulcrum-proxy/fulcrum/proxy/stream"
)

// HTTP/1.1 message heads: reading, parsing and the hop-by-hop rules. A head
// is read whole into a per-session buffer; names and values are slices of
// that buffer, valid until the next head is read into it.

// header is one header field, both parts slices of a head's buffer, and
// what the proxy does with it when forwarding the message.
type header struct {
	name, value []byte
	kind        hdrKind
}

// hdrKind classifies a header field for forwarding.
type hdrKind uint8

const (
	hdrEndToEnd     hdrKind = iota // forwarded as it is
	hdrHop                         // connection-specific (RFC 9110 section 7.6.1): never forwarded
	hdrListed                      // named by the Connection field: not forwarded
	hdrUpgradeField                // Upgrade: forwarded only when the message upgrades
)

// maxHeaderBytes bounds a request or response head.
const maxHeaderBytes = 64 << 10

// defaultMaxHdr is HAProxy's tune.http.maxhdr default: a message may have
// at most 101 lines counting its start line, so 100 header fields.
const defaultMaxHdr = 101

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
	continued     bool // a 100 Continue was sent to the client (answered, or relayed from the server)
	expectFwd     bool // Expect: 100-continue was passed on to the server (session.passExpect)
	host          []byte

	// maxHdr is the most lines (start line and header fields) a head may
	// have, as HAProxy's tune.http.maxhdr; 0 means defaultMaxHdr. Kept
	// across reset.
	maxHdr int

	// Scratch space of markListed, kept across messages.
	bucket []int32
	chain  []int32
}

// Head is a request or response head, exported for tests and benchmarks
// of the packages around the engine (a minimal client or server).
type Head = head

// Read reads a head from br (see readHead).
func (h *head) Read(br *bufio.Reader, isResp bool) error { return h.readHead(br, isResp) }

// Parse parses the head read (see parse).
func (h *head) Parse(isResp bool) error { return h.parse(isResp) }

// ContentLength returns the parsed Content-Length, -1 when absent.
func (h *head) ContentLength() int64 { return h.contentLength }

// reset returns an empty head that keeps h's buffers (capped, so that one
// huge head does not stay pinned in a pooled session).
func (h *head) reset() head {
	if cap(h.buf) > 2*netio.BufSize {
		return head{maxHdr: h.maxHdr}
	}
	return head{buf: h.buf[:0], headers: h.headers[:0], maxHdr: h.maxHdr, bucket: h.bucket[:0], chain: h.chain[:0]}
}

var (
	errHeadTooLarge = errors.New("message head too large")
	errBadHead      = errors.New("malformed message head")
	errSmuggling    = errors.New("conflicting or invalid message length")
	errTooManyHdrs  = errors.New("too many header fields")
	// errBadChunk is a chunked body whose framing is broken: a bad size
	// line, data not followed by CRLF, or a bad trailer field.
	errBadChunk = errors.New("malformed chunked body")
)

// readHead reads lines from br up to and including the empty line ending a
// head, into h.buf. It returns io.EOF when br is at EOF before any byte, and
// io.ErrUnexpectedEOF when the stream ends inside the head. The start line
// is checked as soon as it is complete (isResp selects its grammar): one
// that cannot start an HTTP/1.x message, an HTTP/0.9 request line among
// them, fails with errBadHead at once instead of waiting for an empty line
// that will never come.
func (h *head) readHead(br *bufio.Reader, isResp bool) error {
	h.buf = h.buf[:0]
	started := false
	if !isResp {
		// What has arrived of the request line is checked before waiting
		// for its end: bytes that no request line holds (a TLS
		// ClientHello on a plaintext port, binary junk) get a 400 at once,
		// as HAProxy's, instead of a 408 once the head timeout passes.
		if _, err := br.Peek(1); err == nil {
			p, _ := br.Peek(br.Buffered())
			if !plausibleRequestStart(p) {
				return errBadHead
			}
		}
	}
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
		if !started {
			started = true
			first := bytes.TrimSuffix(bytes.TrimSuffix(h.buf, []byte("\n")), []byte("\r"))
			if bytes.IndexByte(first, 0) >= 0 || bytes.IndexByte(first, '\r') >= 0 {
				return errBadHead
			}
			if err := h.parseStart(first, isResp); err != nil {
				return err
			}
		}
		if n := len(h.buf); (n >= 2 && h.buf[n-2] == '\n') || (n >= 3 && string(h.buf[n-3:]) == "\n\r\n") {
			return nil
		}
	}
}

// plausibleRequestStart reports whether p, the first bytes received of a
// request (possibly after empty lines), can begin a request line: a
// method of token characters, then a space, then visible characters and
// spaces, a CR only before the LF.
func plausibleRequestStart(p []byte) bool {
	for len(p) > 0 && (p[0] == '\r' || p[0] == '\n') {
		p = p[1:] // empty lines before a request are ignored
	}
	inMethod := true
	for i, c := range p {
		switch {
		case c == '\n':
			return true // the line is whole: parseStart judges it
		case c == '\r':
			if i+1 < len(p) && p[i+1] != '\n' {
				return false
			}
		case inMethod && c == ' ':
			if i == 0 {
				return false
			}
			inMethod = false
		case inMethod:
			if !tokenChars[c] {
				return false
			}
		case c < ' ' || c >= 0x7f:
			return false
		}
	}
	return true
}

// What parse does with a field, by its name (knownName).
const (
	nameOther            = iota // forwarded as it is
	nameContentLength           // Content-Length
	nameTransferEncoding        // Transfer-Encoding
	nameConnection              // Connection
	nameUpgrade                 // Upgrade
	nameHop                     // Keep-Alive, Proxy-Connection, TE, Trailer
	nameHost                    // Host
	nameExpect                  // Expect
)

// knownName returns what parse does with a field named name (ASCII case
// ignored): one of the name* constants. Only the known name of name's
// length is compared, not each known name in turn.
func knownName(name []byte) int {
	switch len(name) {
	case 2:
		if bytes.EqualFold(name, hdrTE) {
			return nameHop
		}
	case 4:
		if bytes.EqualFold(name, hdrHost) {
			return nameHost
		}
	case 6:
		if bytes.EqualFold(name, hdrExpect) {
			return nameExpect
		}
	case 7:
		if bytes.EqualFold(name, hdrUpgrade) {
			return nameUpgrade
		}
		if bytes.EqualFold(name, hdrTrailer) {
			return nameHop
		}
	case 10:
		if bytes.EqualFold(name, hdrConnection) {
			return nameConnection
		}
		if bytes.EqualFold(name, hdrKeepAlive) {
			return nameHop
		}
	case 14:
		if bytes.EqualFold(name, hdrContentLength) {
			return nameContentLength
		}
	case 16:
		if bytes.EqualFold(name, hdrProxyConnection) {
			return nameHop
		}
	case 17:
		if bytes.EqualFold(name, hdrTransferEncoding) {
			return nameTransferEncoding
		}
	}
	return nameOther
}

// parse splits h.buf into the start line and headers and derives the
// framing fields. isResp selects the start-line grammar. It classifies
// every field for forwarding (header.kind) in time linear in the head's
// size, and fails with errTooManyHdrs past h.maxHdr lines.
func (h *head) parse(isResp bool) error {
	h.headers = h.headers[:0]
	h.contentLength = -1
	h.chunked, h.connClose, h.connKeepAlive, h.connUpgrade, h.connOther = false, false, false, false, false
	h.http10, h.expect100, h.continued, h.expectFwd, h.host, h.status = false, false, false, false, nil, 0
	maxHdr := h.maxHdr
	if maxHdr <= 0 {
		maxHdr = defaultMaxHdr
	}
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
		// The start line counts as one, as in HAProxy's tune.http.maxhdr.
		if len(h.headers)+2 > maxHdr {
			return errTooManyHdrs
		}
		c := bytes.IndexByte(line, ':')
		if c <= 0 || !isToken(line[:c]) {
			return errBadHead
		}
		name, value := line[:c], trimOWS(line[c+1:])
		kind := hdrEndToEnd
		switch knownName(name) {
		case nameContentLength:
			n, ok := parseDecimal(value)
			if !ok || (sawCL && n != h.contentLength) {
				return errSmuggling
			}
			if sawCL {
				// The same length twice: forwarded once, as HAProxy
				// merges them (RFC 9112 section 6.3 allows it).
				continue
			}
			sawCL = true
			h.contentLength = n
		case nameTransferEncoding:
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
			// Only "chunked" as the final coding frames a response; a
			// value that is not a list of codings is refused (502), as
			// HAProxy: a client could frame it either way.
			chunked, ok := lastCodingChunked(value)
			if !ok {
				return errSmuggling
			}
			h.chunked = chunked
		case nameConnection:
			kind = hdrHop
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
		case nameUpgrade:
			if onlyH2C(value) {
				// HTTP/2 by upgrade (RFC 7540 3.2) is not done, nor
				// passed on: dropped, as HAProxy 2.6 drops it.
				kind = hdrHop
				break
			}
			upgradeHdr = true
			kind = hdrUpgradeField
		case nameHop:
			kind = hdrHop
		case nameHost:
			// Two Host fields: which one routes (hdr(host)) and which one
			// the server honours could differ (RFC 9112 section 3.2: 400).
			if h.host != nil && !isResp {
				return errBadHead
			}
			h.host = value
		case nameExpect:
			h.expect100 = bytes.EqualFold(value, tok100Continue)
		}
		h.headers = append(h.headers, header{name: name, value: value, kind: kind})
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
	// An interim (1xx) or 204 response has no body, and may not say it
	// has one (RFC 9110 sections 8.6 and 6.4.1): its Content-Length and
	// Transfer-Encoding fields are not forwarded, as HAProxy 2.6 drops
	// them (measured on loopback), so that a client trusting them does
	// not take what follows for their body.
	if isResp && (h.status < 200 && h.status != 101 || h.status == 204) {
		for i := range h.headers {
			switch knownName(h.headers[i].name) {
			case nameContentLength, nameTransferEncoding:
				h.headers[i].kind = hdrHop
			}
		}
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
	if h.connOther {
		h.markListed()
	}
	return nil
}

// lastCodingChunked checks a response's Transfer-Encoding value, a list of
// transfer-codings (token *(OWS ";" OWS parameter), RFC 9112 section 6.1)
// where empty elements are ignored (RFC 9110 section 5.6.1: "chunked," is
// chunked). It reports whether the last coding is chunked, and ok false
// when an element is not a coding or there is none ("chunked x"), or
// when chunked is not the last one ("chunked, identity").
func lastCodingChunked(v []byte) (chunked, ok bool) {
	for len(v) > 0 {
		el := v
		if i := bytes.IndexByte(v, ','); i >= 0 {
			el, v = v[:i], v[i+1:]
		} else {
			v = nil
		}
		name := el
		if i := bytes.IndexByte(el, ';'); i >= 0 {
			name = el[:i]
			for _, c := range el[i+1:] {
				if (c < ' ' && c != '\t') || c == 0x7f {
					return false, false
				}
			}
		}
		name = trimOWS(name)
		if len(name) == 0 {
			if len(trimOWS(el)) != 0 {
				return false, false // parameters without a coding
			}
			continue
		}
		if !isToken(name) || chunked {
			// chunked before another coding, or twice (RFC 9112 7.1:
			// never applied more than once): a client could frame it
			// by the chunked as well as read it to the close; HAProxy
			// refuses it too (502).
			return false, false
		}
		chunked, ok = bytes.EqualFold(name, tokChunked), true
	}
	return chunked, ok
}

// neverListed are the fields that a Connection field cannot make
// hop-by-hop: the ones that frame the message (Content-Length,
// Transfer-Encoding) and the ones the proxy routes or persists on (Host,
// Cookie). Dropping them while the body is still forwarded, or after the
// rules used them, would make the server read another message than the
// proxy did (issue 16: "Connection: Content-Length" smuggled the body as a
// second request). HAProxy 2.6 keeps every field Connection lists.
var neverListed = [][]byte{hdrContentLength, hdrTransferEncoding, hdrHost, hdrCookie}

// markListed marks the fields named by the Connection fields as hdrListed
// (RFC 9110 section 7.6.1), except neverListed ones and Upgrade (which
// follows the upgrade). It indexes the field names in a hash table first,
// so its cost is linear in the number of fields plus the length of the
// Connection values, however many fields and tokens a client sends.
func (h *head) markListed() {
	n := len(h.headers)
	size := 8
	for size < 2*n {
		size <<= 1
	}
	h.bucket = slicesGrow(h.bucket, size)
	h.chain = slicesGrow(h.chain, n)
	for i := range h.bucket {
		h.bucket[i] = -1
	}
	mask := uint32(size - 1)
	for i, f := range h.headers {
		b := foldHash(f.name) & mask
		h.chain[i] = h.bucket[b]
		h.bucket[b] = int32(i)
	}
	for _, f := range h.headers {
		if !bytes.EqualFold(f.name, hdrConnection) {
			continue
		}
		forEachToken(f.value, func(t []byte) {
			if bytes.EqualFold(t, tokClose) || bytes.EqualFold(t, tokKeepAlive) || bytes.EqualFold(t, tokUpgrade) {
				return
			}
			for _, p := range neverListed {
				if bytes.EqualFold(t, p) {
					return
				}
			}
			for j := h.bucket[foldHash(t)&mask]; j >= 0; j = h.chain[j] {
				if g := &h.headers[j]; g.kind == hdrEndToEnd && bytes.EqualFold(g.name, t) {
					g.kind = hdrListed
				}
			}
		})
	}
}

// slicesGrow returns s with length n, reusing its array when large enough.
func slicesGrow(s []int32, n int) []int32 {
	if cap(s) < n {
		return make([]int32, n)
	}
	return s[:n]
}

// foldHash is FNV-1a over the ASCII-lowercased bytes of b.
func foldHash(b []byte) uint32 {
	h := uint32(2166136261)
	for _, c := range b {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		h ^= uint32(c)
		h *= 16777619
	}
	return h
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
		if len(a) != 8 || !bytes.HasPrefix(a, []byte("HTTP/1.")) || a[7] < '0' || a[7] > '9' || len(code) != 3 {
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
	if !isToken(a) || !validTarget(uri) {
		return errBadHead
	}
	if string(a) == "PRI" {
		// Reserved for the HTTP/2 preface (RFC 9113, 3.4): HAProxy
		// refuses it in HTTP/1 with a 400 too.
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

// validTarget reports whether a request target may be forwarded, as
// HAProxy 2.6 judges it (issue 16, point 6): not empty; no control byte,
// space, DEL, '#' (a fragment is never sent, RFC 9112 section 3.2) or byte
// of 0x80 and above (not percent-encoded); and an absolute-form target
// has a path before its query ("http://a?x" is refused).
func validTarget(uri []byte) bool {
	if len(uri) == 0 {
		return false
	}
	for _, c := range uri {
		if badTargetByte[c] {
			return false
		}
	}
	if i := bytes.Index(uri, []byte("://")); i > 0 && isToken(uri[:i]) {
		rest := uri[i+3:]
		if end := bytes.IndexAny(rest, "/?"); end >= 0 && rest[end] == '?' {
			return false // a query without a path
		}
	}
	return true
}

// ValidMethod reports whether an HTTP/2 request's :method is a token, as
// an HTTP/1 request line needs it: HAProxy 2.6 answers 400 otherwise
// (measured).
func ValidMethod(method string) bool { return isToken([]byte(method)) }

// ValidH2Target reports whether an HTTP/2 request's :path (not
// CONNECT's) may be forwarded, as HAProxy 2.6 judges it (measured: it
// resets the stream otherwise): in origin form ("/" first, or "*" for
// OPTIONS), with none of the bytes an HTTP/1 target may not hold
// (validTarget). An HTTP/1.1 server would otherwise get
// "GET /a b HTTP/1.1".
func ValidH2Target(method, path string) bool {
	if path == "*" {
		return method == "OPTIONS"
	}
	if path == "" || path[0] != '/' {
		return false
	}
	for i := 0; i < len(path); i++ {
		if badTargetByte[path[i]] {
			return false
		}
	}
	return true
}

// badTargetByte[c] is true when c may not appear as itself in a request
// target (see validTarget).
var badTargetByte = func() (t [256]bool) {
	for c := range 256 {
		t[c] = c <= ' ' || c == 0x7f || c == '#' || c >= 0x80
	}
	return t
}()

// Header names and tokens compared on every message.
var (
	hdrContentLength    = []byte("Content-Length")
	hdrTransferEncoding = []byte("Transfer-Encoding")
	hdrConnection       = []byte("Connection")
	hdrKeepAlive        = []byte("Keep-Alive")
	hdrProxyConnection  = []byte("Proxy-Connection")
	hdrUpgrade          = []byte("Upgrade")
	hdrHost             = []byte("Host")
	hdrCookie           = []byte("Cookie")
	hdrExpect           = []byte("Expect")
	hdrTE               = []byte("TE")
	hdrTrailer          = []byte("Trailer")
	tokChunked          = []byte("chunked")
	tokClose            = []byte("close")
	tokKeepAlive        = []byte("keep-alive")
	tokUpgrade          = []byte("upgrade")
	tok100Continue      = []byte("100-continue")
)

// isHopByHop reports whether f must not be forwarded: the fields RFC 9110
// section 7.6.1 names as connection-specific and the fields the Connection
// field lists (but never neverListed ones; see markListed). Upgrade is
// kept when the message upgrades (keepUpgrade). Transfer-Encoding is kept:
// chunked bodies are forwarded chunked.
func (f *header) isHopByHop(keepUpgrade bool) bool {
	switch f.kind {
	case hdrHop, hdrListed:
		return true
	case hdrUpgradeField:
		return !keepUpgrade
	}
	return false
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

// onlyH2C reports whether an Upgrade field's protocols are all h2c.
func onlyH2C(value []byte) bool {
	only := true
	forEachToken(value, func(t []byte) {
		only = only && bytes.EqualFold(t, tokH2C)
	})
	return only
}

var tokH2C = []byte("h2c")

func trimOWS(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t') {
		b = b[1:]
	}
	for len(b) > 0 && (b[len(b)-1] == ' ' || b[len(b)-1] == '\t') {
		b = b[:len(b)-1]
	}
	return b
}

// parseDecimal parses a non-negative decimal below 10^18 (at most 18
// significant digits: leading zeros are not counted, as HAProxy's
// Content-Length parser bounds the value, not the digits).
func parseDecimal(b []byte) (int64, bool) {
	if len(b) == 0 {
		return 0, false
	}
	var n int64
	for _, c := range b {
		if c < '0' || c > '9' || n >= 1e17 {
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

// maxChunkLine bounds a chunk-size line, extensions included.
const maxChunkLine = 4 << 10

// copyChunked relays one chunked body from src to dst, parsing it strictly
// and writing it anew rather than as received (issue 16, point 2): each
// chunk goes out as its size in hexadecimal, CRLF, the data and CRLF,
// without its extensions; the last chunk and the trailer fields, each
// checked as a header field, end it. A size line that is not
// 1*HEXDIG *WSP [";" ext] CRLF (no sign, no leading space, no bare CR or
// LF, at most 13 digits as HAProxy), data not followed by exactly CRLF, a
// malformed trailer field, or more than maxHdr trailer lines fail with
// errBadChunk before anything of the broken part is written, so a server
// or client never sees framing that another reader could take differently.
// It returns the bytes written to dst.
func copyChunked(dst *bufio.Writer, src *bufio.Reader, flush func() error, maxHdr int) (int64, error) {
	var total int64
	var sizeBuf [20]byte
	for {
		// What was copied goes out before waiting for the next chunk: a
		// streamed body (server-sent events, long polling) must not lag a
		// chunk behind, nor its head wait for the first chunk.
		if src.Buffered() == 0 && dst.Buffered() > 0 && flush != nil {
			if err := flush(); err != nil {
				return total, err
			}
		}
		line, err := readChunkLine(src)
		if err != nil {
			return total, err
		}
		size, ok := parseChunkSize(line)
		if !ok {
			return total, errBadChunk
		}
		if size == 0 {
			return copyTrailers(dst, src, total, maxHdr)
		}
		hex := strconv.AppendInt(sizeBuf[:0], size, 16)
		hex = append(hex, '\r', '\n')
		n, err := dst.Write(hex)
		total += int64(n)
		if err != nil {
			return total, err
		}
		n2, err := copyBuffered(dst, src, size, flush)
		total += n2
		if err != nil {
			return total, err
		}
		crlf, err := src.Peek(2)
		if err != nil {
			return total, noEOF(err)
		}
		if crlf[0] != '\r' || crlf[1] != '\n' {
			return total, errBadChunk
		}
		src.Discard(2)
		n, err = dst.Write(crlf)
		total += int64(n)
		if err != nil {
			return total, err
		}
	}
}

// readChunkLine reads one line of a chunked body, up to and including its
// LF, and returns it without CRLF; a line that does not end in CRLF or is
// longer than maxChunkLine is errBadChunk.
func readChunkLine(src *bufio.Reader) ([]byte, error) {
	line, err := src.ReadSlice('\n')
	if err != nil {
		if err == bufio.ErrBufferFull {
			return nil, errBadChunk
		}
		return nil, noEOF(err)
	}
	if len(line) > maxChunkLine || len(line) < 2 || line[len(line)-2] != '\r' {
		return nil, errBadChunk
	}
	return line[:len(line)-2], nil
}

// noEOF turns io.EOF in the middle of a body into io.ErrUnexpectedEOF.
func noEOF(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// copyTrailers reads the trailer section that follows the last chunk, up
// to its empty line, checks each field as a header field and writes the
// last chunk, the fields and the empty line to dst. total is what was
// written before; the new total is returned.
func copyTrailers(dst *bufio.Writer, src *bufio.Reader, total int64, maxHdr int) (int64, error) {
	if maxHdr <= 0 {
		maxHdr = defaultMaxHdr
	}
	n, err := dst.WriteString("0\r\n")
	total += int64(n)
	if err != nil {
		return total, err
	}
	size := 0
	for lines := 0; ; lines++ {
		tl, err := readChunkLine(src)
		if err != nil {
			return total, err
		}
		if len(tl) == 0 {
			n, err := dst.WriteString("\r\n")
			return total + int64(n), err
		}
		size += len(tl)
		if lines+1 >= maxHdr || size > maxHeaderBytes || !validField(tl) {
			return total, errBadChunk
		}
		n, _ := dst.Write(tl)
		total += int64(n)
		n, err = dst.WriteString("\r\n")
		total += int64(n)
		if err != nil {
			return total, err
		}
	}
}

// validField reports whether line (without its CRLF) is a well-formed
// header field: a token, a colon, and a value without control bytes other
// than HTAB (RFC 9110 section 5.5); no obsolete folding.
func validField(line []byte) bool {
	c := bytes.IndexByte(line, ':')
	if c <= 0 || !isToken(line[:c]) {
		return false
	}
	for _, b := range line[c+1:] {
		if (b < ' ' && b != '\t') || b == 0x7f {
			return false
		}
	}
	return true
}

// parseChunkSize parses a chunk-size line without its CRLF: 1*HEXDIG, then
// optional spaces or tabs, then optionally ";" and extensions without
// control bytes other than HTAB. Sizes of 2^52 and above (more than 13
// significant hexadecimal digits; leading zeros are not counted) are
// refused, as HAProxy's h1_parse_chunk_size.
func parseChunkSize(line []byte) (int64, bool) {
	var n int64
	i := 0
	for ; i < len(line); i++ {
		d := unhex(line[i])
		if d < 0 {
			break
		}
		if n >= 1<<48 {
			return 0, false // a 14th significant digit (leading zeros are free, as HAProxy's)
		}
		n = n<<4 | int64(d)
	}
	if i == 0 {
		return 0, false
	}
	for i < len(line) && (line[i] == ' ' || line[i] == '\t') {
		i++
	}
	if i == len(line) {
		return n, true
	}
	if line[i] != ';' {
		return 0, false
	}
	for _, b := range line[i+1:] {
		if (b < ' ' && b != '\t') || b == 0x7f {
			return 0, false
		}
	}
	return n, true
}

// unhex returns the value of the hexadecimal digit c, or -1.
func unhex(c byte) int {
	switch {
	case '0' <= c && c <= '9':
		return int(c - '0')
	case 'a' <= c && c <= 'f':
		return int(c-'a') + 10
	case 'A' <= c && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
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

// NumHeaders and HeaderAt make a head the acl.Headers of its request.
func (h *head) NumHeaders() int { return len(h.headers) }

// HeaderAt returns header line i of h.
func (h *head) HeaderAt(i int) (name, value []byte) {
	f := &h.headers[i]
	return f.name, f.value
}

var _ stream.Headers = (*head)(nil)
