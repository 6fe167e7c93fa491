package proxy

import (
	"fmt"
	"strings"
)

// The differential test's corpora (diff_test.go): request shapes a client
// sends, and responses a server answers with.

// reqShape is one request shape: the exact bytes a client sends on a new
// connection, and how many whole requests they hold, the upper bound of
// what may reach the upstream. A smuggled request always asks for /admin,
// which both proxies deny: a proxy that parses it sees it and answers 403,
// so only a request hidden from the proxy reaches the upstream.
type reqShape struct {
	name  string
	raw   string
	whole int
}

func (s reqShape) wholeRequests() int { return s.whole }

// smuggled is the request hidden in the shapes' bodies.
const smuggled = "GET /admin HTTP/1.1\r\nHost: a\r\n\r\n"

// postHead is the head of a POST with extra header lines (each ending in
// CRLF), up to and including the empty line.
func postHead(lines string) string {
	return "POST / HTTP/1.1\r\nHost: a\r\n" + lines + "\r\n"
}

// teVariants are Transfer-Encoding header lines meant as chunked, or
// obfuscations of it that parsers disagree on.
var teVariants = []struct{ name, line string }{
	{"plain", "Transfer-Encoding: chunked\r\n"},
	{"value-upper", "Transfer-Encoding: CHUNKED\r\n"},
	{"name-mixed-case", "tRANSFER-eNCODING: chunked\r\n"},
	{"no-space", "Transfer-Encoding:chunked\r\n"},
	{"space-before-colon", "Transfer-Encoding : chunked\r\n"},
	{"tab-before-colon", "Transfer-Encoding\t: chunked\r\n"},
	{"tab-value", "Transfer-Encoding:\tchunked\r\n"},
	{"trailing-space", "Transfer-Encoding: chunked \r\n"},
	{"line-folded-onto-host", " Transfer-Encoding: chunked\r\n"},
	{"value-folded", "Transfer-Encoding:\r\n chunked\r\n"},
	{"tab-folded-after-x", "X: y\r\n\tTransfer-Encoding: chunked\r\n"},
	{"xchunked", "Transfer-Encoding: xchunked\r\n"},
	{"chunkedx", "Transfer-Encoding: chunkedx\r\n"},
	{"chunk", "Transfer-Encoding: chunk\r\n"},
	{"quoted", "Transfer-Encoding: \"chunked\"\r\n"},
	{"chunked-identity", "Transfer-Encoding: chunked, identity\r\n"},
	{"identity-chunked", "Transfer-Encoding: identity, chunked\r\n"},
	{"gzip-chunked", "Transfer-Encoding: gzip, chunked\r\n"},
	{"chunked-gzip", "Transfer-Encoding: chunked, gzip\r\n"},
	{"chunked-chunked", "Transfer-Encoding: chunked, chunked\r\n"},
	{"two-fields", "Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n"},
	{"two-fields-identity", "Transfer-Encoding: chunked\r\nTransfer-Encoding: identity\r\n"},
	{"two-fields-x-first", "Transfer-Encoding: x\r\nTransfer-Encoding: chunked\r\n"},
	{"comma-first", "Transfer-Encoding: ,chunked\r\n"},
	{"comma-last", "Transfer-Encoding: chunked,\r\n"},
	{"vtab-after", "Transfer-Encoding: chunked\x0b\r\n"},
	{"vtab-before", "Transfer-Encoding:\x0bchunked\r\n"},
	{"vtab-in-name", "Transfer-Encoding\x0b: chunked\r\n"},
	{"nul-after", "Transfer-Encoding: chunked\x00\r\n"},
	{"parameter", "Transfer-Encoding: chunked;q=1\r\n"},
	{"underscore-name", "Transfer_Encoding: chunked\r\n"},
	{"bare-cr-after", "Transfer-Encoding: chunked\r\r\n"},
	{"bare-lf-line", "Transfer-Encoding: chunked\n"},
	{"empty", "Transfer-Encoding: \r\n"},
	{"identity", "Transfer-Encoding: identity\r\n"},
	{"space-inside", "Transfer-Encoding: chun ked\r\n"},
	{"high-byte-after", "Transfer-Encoding: chunked\xff\r\n"},
}

// teShapes crosses teVariants with three framings of a body that hides
// smuggled: chunked only (TE), Content-Length covering the whole body
// (CL.TE: a proxy framing by length forwards smuggled inside the body,
// a server framing by chunks reads it as a request), and Content-Length
// covering the chunk-size line only (TE.CL: the reverse).
func teShapes() []reqShape {
	var out []reqShape
	teBody := "0\r\n\r\n" + smuggled
	tecl := fmt.Sprintf("%x\r\n", len(smuggled))
	teclBody := tecl + smuggled + "\r\n0\r\n\r\n"
	for _, v := range teVariants {
		out = append(out,
			reqShape{"te-" + v.name, postHead(v.line) + teBody, 1},
			reqShape{"clte-" + v.name, postHead(fmt.Sprintf("Content-Length: %d\r\n", len(teBody))+v.line) + teBody, 1},
			reqShape{"tecl-" + v.name, postHead(v.line+fmt.Sprintf("Content-Length: %d\r\n", len(tecl))) + teclBody, 1},
		)
	}
	out = append(out,
		reqShape{"te-http10", "POST / HTTP/1.0\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n" + teBody, 1},
		reqShape{"te-http10-keepalive", "POST / HTTP/1.0\r\nHost: a\r\nConnection: keep-alive\r\nTransfer-Encoding: chunked\r\n\r\n" + teBody, 1},
		reqShape{"te-http10-cl", fmt.Sprintf("POST / HTTP/1.0\r\nHost: a\r\nContent-Length: %d\r\nTransfer-Encoding: chunked\r\n\r\n", len(teBody)) + teBody, 1},
		reqShape{"te-get", "GET / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n" + teBody, 1},
	)
	return out
}

// clShapes are Content-Length values and fields for a five-byte body
// followed by smuggled: a proxy that frames five bytes sees smuggled
// and denies it.
func clShapes() []reqShape {
	cases := []struct{ name, lines string }{
		{"plain", "Content-Length: 5\r\n"},
		{"plus", "Content-Length: +5\r\n"},
		{"minus", "Content-Length: -5\r\n"},
		{"extra-leading-space", "Content-Length:  5\r\n"},
		{"trailing-space", "Content-Length: 5 \r\n"},
		{"tab", "Content-Length:\t5\r\n"},
		{"list-same", "Content-Length: 5,5\r\n"},
		{"list-same-space", "Content-Length: 5, 5\r\n"},
		{"list-differ", "Content-Length: 5, 37\r\n"},
		{"list-trailing-comma", "Content-Length: 5,\r\n"},
		{"two-same", "Content-Length: 5\r\nContent-Length: 5\r\n"},
		{"two-differ", "Content-Length: 5\r\nContent-Length: 37\r\n"},
		{"two-differ-reversed", "Content-Length: 37\r\nContent-Length: 5\r\n"},
		{"hex", "Content-Length: 0x5\r\n"},
		{"leading-zeros", "Content-Length: 005\r\n"},
		{"many-leading-zeros", "Content-Length: 0000000000000000000005\r\n"},
		{"huge", "Content-Length: 99999999999999999999\r\n"},
		{"wraps-to-5", "Content-Length: 18446744073709551621\r\n"},
		{"int64-overflow", "Content-Length: 9223372036854775808\r\n"},
		{"decimal", "Content-Length: 5.0\r\n"},
		{"exponent", "Content-Length: 5e0\r\n"},
		{"empty", "Content-Length: \r\n"},
		{"space-inside", "Content-Length: 5 5\r\n"},
		{"vtab", "Content-Length: 5\x0b\r\n"},
		{"space-before-colon", "Content-Length : 5\r\n"},
		{"name-upper", "CONTENT-LENGTH: 5\r\n"},
		{"value-folded", "Content-Length:\r\n 5\r\n"},
		{"underscore-name", "Content_Length: 5\r\n"},
		{"nul", "Content-Length: 5\x00\r\n"},
		{"fullwidth-digit", "Content-Length: \uff15\r\n"},
		{"bare-lf-line", "Content-Length: 5\n"},
	}
	var out []reqShape
	for _, c := range cases {
		out = append(out, reqShape{"cl-" + c.name, postHead(c.lines) + "hello" + smuggled, 1})
	}
	out = append(out,
		reqShape{"cl-zero-then-body", postHead("Content-Length: 0\r\n") + smuggled, 1},
		reqShape{"cl-get-with-body", "GET / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nhello" + smuggled, 1},
		reqShape{"cl-body-is-request", postHead(fmt.Sprintf("Content-Length: %d\r\n", len(smuggled))) + smuggled, 1},
		reqShape{"cl-short-body", postHead("Content-Length: 10\r\n") + "hello", 0},
	)
	return out
}

// chunkShapes are chunked bodies with odd sizes, extensions, line ends
// and trailers, each followed by smuggled.
func chunkShapes() []reqShape {
	te := postHead("Transfer-Encoding: chunked\r\n")
	cases := []struct{ name, body string }{
		{"valid", "5\r\nhello\r\n0\r\n\r\n"},
		{"data-lf-then-size", "1\r\nA\n105\r\nhello\r\n0\r\n\r\n"},
		{"size-plus", "+5\r\nhello\r\n0\r\n\r\n"},
		{"size-leading-space", " 5\r\nhello\r\n0\r\n\r\n"},
		{"size-trailing-space", "5 \r\nhello\r\n0\r\n\r\n"},
		{"size-bare-cr", "5\r\r\nhello\r\n0\r\n\r\n"},
		{"size-bare-lf", "5\nhello\r\n0\r\n\r\n"},
		{"all-bare-lf", "5\nhello\n0\n\n"},
		{"data-bare-lf", "5\r\nhello\n0\r\n\r\n"},
		{"data-no-crlf", "5\r\nhello0\r\n\r\n"},
		{"data-longer-than-size", "3\r\nhello\r\n0\r\n\r\n"},
		{"data-shorter-than-size", "8\r\nhello\r\n0\r\n\r\n"},
		{"size-hex-prefix", "0x5\r\nhello\r\n0\r\n\r\n"},
		{"size-negative", "-5\r\nhello\r\n0\r\n\r\n"},
		{"size-wraps-to-5", "10000000000000005\r\nhello\r\n0\r\n\r\n"},
		{"size-all-f", "ffffffffffffffff\r\nhello\r\n0\r\n\r\n"},
		{"size-many-zeros", "00000000000000000005\r\nhello\r\n0\r\n\r\n"},
		{"size-upper-hex", "A\r\n0123456789\r\n0\r\n\r\n"},
		{"ext", "5;a=b\r\nhello\r\n0\r\n\r\n"},
		{"ext-quoted", "5;a=\"b\"\r\nhello\r\n0\r\n\r\n"},
		{"ext-quoted-semicolon", "5;a=\"b;c\"\r\nhello\r\n0\r\n\r\n"},
		{"ext-quote-unclosed", "5;a=\"\r\nhello\r\n0\r\n\r\n\"\r\n"},
		{"ext-bws", "5 ;a=b\r\nhello\r\n0\r\n\r\n"},
		{"ext-no-name", "5;\r\nhello\r\n0\r\n\r\n"},
		{"ext-bare-lf", "5;a\nhello\r\n0\r\n\r\n"},
		{"ext-space-in-value", "5;a=b c\r\nhello\r\n0\r\n\r\n"},
		{"ext-ctl", "5;a=\x01\r\nhello\r\n0\r\n\r\n"},
		{"ext-long", "5;" + strings.Repeat("a", 20000) + "\r\nhello\r\n0\r\n\r\n"},
		{"last-chunk-ext", "5\r\nhello\r\n0;a=b\r\n\r\n"},
		{"last-chunk-zeros", "5\r\nhello\r\n000\r\n\r\n"},
		{"trailer", "5\r\nhello\r\n0\r\nX-T: 1\r\n\r\n"},
		{"trailer-cr-cr-lf", "5\r\nhello\r\n0\r\n\r\r\n"},
		{"trailer-bare-lf-end", "5\r\nhello\r\n0\r\n\n"},
		{"trailer-folded", "5\r\nhello\r\n0\r\nX: a\r\n b\r\n\r\n"},
		{"trailer-no-colon", "5\r\nhello\r\n0\r\nXYZ\r\n\r\n"},
		{"trailer-content-length", "5\r\nhello\r\n0\r\nContent-Length: 5\r\n\r\n"},
		{"trailer-transfer-encoding", "5\r\nhello\r\n0\r\nTransfer-Encoding: chunked\r\n\r\n"},
		{"trailer-host", "5\r\nhello\r\n0\r\nHost: b\r\n\r\n"},
		{"trailer-nul", "5\r\nhello\r\n0\r\nX: a\x00\r\n\r\n"},
		{"trailer-space-before-colon", "5\r\nhello\r\n0\r\nX : a\r\n\r\n"},
		{"trailer-bare-cr", "5\r\nhello\r\n0\r\nX: a\rb\r\n\r\n"},
	}
	var out []reqShape
	for _, c := range cases {
		out = append(out, reqShape{"chunk-" + c.name, te + c.body + smuggled, 1})
	}
	// Trailer lines that a lenient server ends the section at, so that the
	// smuggled request is inside the trailers for the proxy.
	out = append(out,
		reqShape{"chunk-trailer-cr-cr-lf-hides-request", te + "5\r\nhello\r\n0\r\n\r\r\n" + smuggled, 1},
		reqShape{"chunk-trailer-lf-cr-hides-request", te + "5\r\nhello\r\n0\r\n\n\r" + smuggled, 1},
		reqShape{"chunk-no-last-chunk", te + "5\r\nhello\r\n", 0},
		reqShape{"chunk-eof-in-data", te + "5\r\nhel", 0},
	)
	return out
}

// connectionShapes list framing and routing headers in Connection.
func connectionShapes() []reqShape {
	clBody := fmt.Sprintf("Content-Length: %d\r\n", len(smuggled))
	chunkedBody := fmt.Sprintf("%x\r\n%s\r\n0\r\n\r\n", len(smuggled), smuggled)
	return []reqShape{
		{"conn-content-length", postHead("Connection: Content-Length\r\n"+clBody) + smuggled, 1},
		{"conn-content-length-after", postHead(clBody+"Connection: Content-Length\r\n") + smuggled, 1},
		{"conn-close-content-length", postHead("Connection: close, Content-Length\r\n"+clBody) + smuggled, 1},
		{"conn-keep-alive-content-length", postHead("Connection: keep-alive, content-length\r\n"+clBody) + smuggled, 1},
		{"conn-content-length-http10", fmt.Sprintf("POST / HTTP/1.0\r\nConnection: keep-alive, Content-Length\r\nContent-Length: %d\r\n\r\n", len(smuggled)) + smuggled, 1},
		{"conn-transfer-encoding", postHead("Connection: Transfer-Encoding\r\nTransfer-Encoding: chunked\r\n") + chunkedBody, 1},
		{"conn-transfer-encoding-empty-body", postHead("Connection: Transfer-Encoding\r\nTransfer-Encoding: chunked\r\n") + "0\r\n\r\n" + smuggled, 1},
		{"conn-host", "GET / HTTP/1.1\r\nHost: a\r\nConnection: Host\r\n\r\n", 1},
		{"conn-host-absolute", "GET http://a/ HTTP/1.1\r\nHost: a\r\nConnection: Host\r\n\r\n", 1},
		{"conn-expect", postHead("Expect: 100-continue\r\nConnection: Expect\r\nContent-Length: 5\r\n") + "hello", 1},
		{"conn-x-src", "GET / HTTP/1.1\r\nHost: a\r\nConnection: X-Src\r\n\r\n", 1},
		{"conn-upgrade-content-length", postHead("Connection: Upgrade, Content-Length\r\nUpgrade: websocket\r\n"+clBody) + smuggled, 1},
	}
}

// pipelineShapes send several requests at once, with bodies.
func pipelineShapes() []reqShape {
	get := func(path string) string { return "GET " + path + " HTTP/1.1\r\nHost: a\r\n\r\n" }
	return []reqShape{
		{"pipe-get-get", get("/1") + get("/2"), 2},
		{"pipe-post-cl-get", postHead("Content-Length: 5\r\n") + "hello" + get("/2"), 2},
		{"pipe-post-chunked-get", postHead("Transfer-Encoding: chunked\r\n") + "5\r\nhello\r\n0\r\n\r\n" + get("/2"), 2},
		{"pipe-three", get("/1") + postHead("Content-Length: 3\r\n") + "abc" + "GET /3 HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n", 3},
		{"pipe-get-cl-get", "GET /1 HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nhello" + get("/2"), 2},
		{"pipe-get-then-admin", get("/1") + smuggled, 1},
		{"pipe-chunked-body-is-request", postHead("Transfer-Encoding: chunked\r\n") + fmt.Sprintf("%x\r\n%s\r\n0\r\n\r\n", len(smuggled), smuggled), 1},
		{"pipe-head-get", "HEAD /1 HTTP/1.1\r\nHost: a\r\n\r\n" + get("/2"), 2},
		{"pipe-post-cl0-get", postHead("Content-Length: 0\r\n") + get("/2"), 2},
		{"pipe-get-bad-second", get("/1") + "GET /bad HTTP/1.1\r\nHost a\r\n\r\n", 1},
		{"pipe-expect-get", postHead("Expect: 100-continue\r\nContent-Length: 5\r\n") + "hello" + get("/2"), 2},
		{"pipe-http10-keepalive", "POST /1 HTTP/1.0\r\nConnection: keep-alive\r\nContent-Length: 5\r\n\r\nhello" + get("/2"), 2},
		{"pipe-http10-then-get", "GET /1 HTTP/1.0\r\n\r\n" + get("/2"), 2},
		{"pipe-close-then-get", "GET /1 HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n" + get("/2"), 2},
		{"pipe-large-body-get", postHead("Content-Length: 100000\r\n") + strings.Repeat("x", 100000) + get("/2"), 2},
		{"pipe-large-chunked-get", postHead("Transfer-Encoding: chunked\r\n") + "186a0\r\n" + strings.Repeat("x", 100000) + "\r\n0\r\n\r\n" + get("/2"), 2},
	}
}

// lineShapes are request lines and targets HAProxy 2.6 refuses or
// rewrites.
func lineShapes() []reqShape {
	h := "Host: a\r\n\r\n"
	return []reqShape{
		{"rl-hash-in-target", "GET /a#b HTTP/1.1\r\n" + h, 1},
		{"rl-hash-only", "GET # HTTP/1.1\r\n" + h, 1},
		{"rl-high-byte-path", "GET /\xe9 HTTP/1.1\r\n" + h, 1},
		{"rl-high-byte-query", "GET /?q=\xff HTTP/1.1\r\n" + h, 1},
		{"rl-absolute-no-path-query", "GET http://a?x HTTP/1.1\r\n" + h, 1},
		{"rl-absolute-no-path", "GET http://a HTTP/1.1\r\n" + h, 1},
		{"rl-absolute-host-mismatch", "GET http://b/ HTTP/1.1\r\n" + h, 1},
		{"rl-absolute-host-match", "GET http://a/ HTTP/1.1\r\n" + h, 1},
		{"rl-absolute-userinfo", "GET http://x@a/ HTTP/1.1\r\n" + h, 1},
		{"rl-absolute-admin", "GET http://a/admin HTTP/1.1\r\n" + h, 1},
		{"rl-absolute-scheme-upper-admin", "GET HTTP://a/admin HTTP/1.1\r\n" + h, 1},
		{"rl-absolute-https", "GET https://a/ HTTP/1.1\r\n" + h, 1},
		{"rl-absolute-no-host-field", "GET http://a/ HTTP/1.1\r\n\r\n", 1},
		{"rl-http09", "GET /\r\n", 0},
		{"rl-http09-empty-line", "GET /\r\n\r\n", 0},
		{"rl-no-version-trailing-space", "GET / \r\n" + h, 0},
		{"rl-no-version-with-fields", "GET /\r\n" + h, 0},
		{"rl-double-space", "GET  / HTTP/1.1\r\n" + h, 1},
		{"rl-space-in-target", "GET /a b HTTP/1.1\r\n" + h, 1},
		{"rl-tab-separators", "GET\t/\tHTTP/1.1\r\n" + h, 1},
		{"rl-trailing-space", "GET / HTTP/1.1 \r\n" + h, 1},
		{"rl-leading-space", " GET / HTTP/1.1\r\n" + h, 1},
		{"rl-leading-crlf", "\r\nGET / HTTP/1.1\r\n" + h, 1},
		{"rl-version-11x", "GET / HTTP/1.1x\r\n" + h, 1},
		{"rl-version-12", "GET / HTTP/1.2\r\n" + h, 1},
		{"rl-version-20", "GET / HTTP/2.0\r\n" + h, 1},
		{"rl-version-lower", "GET / http/1.1\r\n" + h, 1},
		{"rl-version-leading-zero", "GET / HTTP/01.1\r\n" + h, 1},
		{"rl-http10-no-host", "GET / HTTP/1.0\r\n\r\n", 1},
		{"rl-method-lower", "get / HTTP/1.1\r\n" + h, 1},
		{"rl-method-bad-char", "G(T / HTTP/1.1\r\n" + h, 1},
		{"rl-connect", "CONNECT a:443 HTTP/1.1\r\nHost: a:443\r\n\r\n" + smuggled, 1},
		{"rl-options-star", "OPTIONS * HTTP/1.1\r\n" + h, 1},
		{"rl-get-star", "GET * HTTP/1.1\r\n" + h, 1},
		{"rl-nul-in-target", "GET /\x00 HTTP/1.1\r\n" + h, 1},
		{"rl-ctl-in-target", "GET /\x01 HTTP/1.1\r\n" + h, 1},
		{"rl-del-in-target", "GET /\x7f HTTP/1.1\r\n" + h, 1},
		{"rl-bare-lf", "GET / HTTP/1.1\nHost: a\n\n", 1},
		{"rl-bare-cr", "GET / HTTP/1.1\rHost: a\r\n\r\n", 1},
		{"rl-admin-percent-encoded", "GET /%61dmin HTTP/1.1\r\n" + h, 1},
		{"rl-long-target", "GET /" + strings.Repeat("a", 70000) + " HTTP/1.1\r\n" + h, 1},
		{"rl-empty-lines-only", "\r\n\r\n", 0},
		{"rl-tls-client-hello", "\x16\x03\x01\x00\xa5\x01\x00\x00\xa1\x03\x03", 0},
	}
}

// headerShapes are field lines that HAProxy refuses, and header counts
// around its limit of 101 fields (tune.http.maxhdr).
func headerShapes() []reqShape {
	get := "GET / HTTP/1.1\r\nHost: a\r\n"
	many := func(n int) string {
		var b strings.Builder
		b.WriteString("GET / HTTP/1.1\r\nHost: a\r\n")
		for i := 1; i < n; i++ {
			fmt.Fprintf(&b, "X-%d: %d\r\n", i, i)
		}
		return b.String() + "\r\n"
	}
	return []reqShape{
		{"hdr-host-missing", "GET / HTTP/1.1\r\n\r\n", 1},
		{"hdr-host-two", "GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 1},
		{"hdr-host-two-same", "GET / HTTP/1.1\r\nHost: a\r\nHost: a\r\n\r\n", 1},
		{"hdr-host-empty", "GET / HTTP/1.1\r\nHost: \r\n\r\n", 1},
		{"hdr-host-space", "GET / HTTP/1.1\r\nHost: a b\r\n\r\n", 1},
		{"hdr-host-list", "GET / HTTP/1.1\r\nHost: a, b\r\n\r\n", 1},
		{"hdr-space-in-name", get + "Foo Bar: x\r\n\r\n", 1},
		{"hdr-no-colon", get + "Foo\r\n\r\n", 1},
		{"hdr-empty-name", get + ": x\r\n\r\n", 1},
		{"hdr-nul-in-value", get + "X: a\x00b\r\n\r\n", 1},
		{"hdr-bare-cr-in-value", get + "X: a\rb\r\n\r\n", 1},
		{"hdr-vtab-in-value", get + "X: a\x0bb\r\n\r\n", 1},
		{"hdr-formfeed-in-value", get + "X: a\x0cb\r\n\r\n", 1},
		{"hdr-del-in-value", get + "X: a\x7fb\r\n\r\n", 1},
		{"hdr-high-byte-in-value", get + "X: \xff\r\n\r\n", 1},
		{"hdr-obs-fold", get + "X: a\r\n b\r\n\r\n", 1},
		{"hdr-long-value", get + "X: " + strings.Repeat("a", 70000) + "\r\n\r\n", 1},
		{"hdr-count-100", many(100), 1},
		{"hdr-count-101", many(101), 1},
		{"hdr-count-102", many(102), 1},
		{"hdr-count-200", many(200), 1},
		{"hdr-count-2000", many(2000), 1},
		{"hdr-many-connection-listed", func() string {
			s := many(100)
			return s[:len(s)-2] + "Connection: x\r\n\r\n"
		}(), 1},
		{"hdr-ends-bare-lf", get + "X: a\n\n", 1},
	}
}

// expectShapes are Expect variants.
func expectShapes() []reqShape {
	return []reqShape{
		{"expect-cl", postHead("Expect: 100-continue\r\nContent-Length: 5\r\n") + "hello", 1},
		{"expect-chunked", postHead("Expect: 100-continue\r\nTransfer-Encoding: chunked\r\n") + "5\r\nhello\r\n0\r\n\r\n", 1},
		{"expect-no-body", "GET / HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\n\r\n", 1},
		{"expect-case", postHead("Expect: 100-Continue\r\nContent-Length: 5\r\n") + "hello", 1},
		{"expect-other", postHead("Expect: something\r\nContent-Length: 5\r\n") + "hello", 1},
		{"expect-list", postHead("Expect: 100-continue, something\r\nContent-Length: 5\r\n") + "hello", 1},
		{"expect-http10", "POST / HTTP/1.0\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\nhello", 1},
		{"expect-body-is-request", postHead(fmt.Sprintf("Expect: 100-continue\r\nContent-Length: %d\r\n", len(smuggled))) + smuggled, 1},
	}
}

// wsKey completes a WebSocket upgrade request (RFC 6455 section 4.1):
// HAProxy refuses one without it.
const wsKey = "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"

// wsAccept is the server's answer to wsKey (RFC 6455 section 1.3): HAProxy
// checks it.
const wsAccept = "Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n"

// upgradeShapes ask for a protocol upgrade that the upstream does not
// grant (it answers 200): what follows the head is the next request.
func upgradeShapes() []reqShape {
	return []reqShape{
		{"upg-websocket", "GET / HTTP/1.1\r\nHost: a\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n" + wsKey + "\r\n" + smuggled, 1},
		{"upg-websocket-no-key", "GET / HTTP/1.1\r\nHost: a\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n" + smuggled, 1},
		{"upg-websocket-post-chunked", postHead("Connection: Upgrade\r\nUpgrade: websocket\r\n"+wsKey+"Transfer-Encoding: chunked\r\n") + fmt.Sprintf("%x\r\n%s\r\n0\r\n\r\n", len(smuggled), smuggled), 1},
		{"upg-h2c", "GET / HTTP/1.1\r\nHost: a\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAAQAAP__\r\n\r\n" + smuggled, 1},
		{"upg-without-connection", "GET / HTTP/1.1\r\nHost: a\r\nUpgrade: websocket\r\n" + wsKey + "\r\n" + smuggled, 1},
		{"upg-connection-only", "GET / HTTP/1.1\r\nHost: a\r\nConnection: Upgrade\r\n\r\n" + smuggled, 1},
		{"upg-post-body", postHead(fmt.Sprintf("Connection: Upgrade\r\nUpgrade: websocket\r\n%sContent-Length: %d\r\n", wsKey, len(smuggled))) + smuggled, 1},
		{"upg-http10", "GET / HTTP/1.0\r\nConnection: Upgrade, keep-alive\r\nUpgrade: websocket\r\n" + wsKey + "\r\n" + smuggled, 1},
	}
}

// diffRequestShapes is the request corpus.
var diffRequestShapes = func() []reqShape {
	var out []reqShape
	for _, f := range []func() []reqShape{teShapes, clShapes, chunkShapes, connectionShapes, pipelineShapes, lineShapes, headerShapes, expectShapes, upgradeShapes, fuzzFoundShapes} {
		out = append(out, f()...)
	}
	return out
}()

// fuzzFoundShapes are inputs FuzzHTTPRequest found, minimised, or quoted
// in issue 16.
func fuzzFoundShapes() []reqShape {
	return []reqShape{
		// A target "#" (issue 16 point 6), found in 12 s.
		{"fuzz-hash-target-http10", "0 # HTTP/1.0\n\n", 1},
		// Issue 16 point 2 quotes this input: it smuggles only after its
		// predecessors left a server connection desynchronised.
		{"fuzz-issue16-trailer-cr", "0000 * HTTP/1.1\r\n0000:00000000000000000100009Transfer-Encoding: chunked\r\n\r\n0\r\n\r\r\n\r\n", 1},
	}
}

// respShape is one server response shape: the bytes the upstream answers
// the first client's request with, the request it answers (GET, HEAD, or
// an UPGRADE to websocket), and whether the server closes after.
type respShape struct {
	name       string
	req        string // "GET" (default), "HEAD" or "UPGRADE"
	resp       string
	closeAfter bool
}

// request returns the method and the bytes of the first client's request.
func (s respShape) request() (string, string) {
	switch s.req {
	case "HEAD":
		return "HEAD", "HEAD /resp/" + s.name + " HTTP/1.1\r\nHost: a\r\n\r\n"
	case "UPGRADE":
		return "GET", "GET /resp/" + s.name + " HTTP/1.1\r\nHost: a\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n" + wsKey + "\r\n"
	}
	return "GET", "GET /resp/" + s.name + " HTTP/1.1\r\nHost: a\r\n\r\n"
}

// poison is a response a server sends beyond the one asked for: a proxy
// that pools the connection gives it to the next client.
const poison = "HTTP/1.1 200 OK\r\nX-Poison: 1\r\nContent-Length: 6\r\n\r\npoison"

const (
	okCL      = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
	okChunked = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
)

// diffResponseShapes is the response corpus.
var diffResponseShapes = []respShape{
	{name: "resp-ok-length", resp: okCL},
	{name: "resp-ok-chunked", resp: okChunked + "2\r\nok\r\n0\r\n\r\n"},
	{name: "resp-ok-trailer", resp: okChunked + "2\r\nok\r\n0\r\nX-T: 1\r\n\r\n"},
	{name: "resp-ok-chunk-ext", resp: okChunked + "2;a=\"b\"\r\nok\r\n0\r\n\r\n"},
	{name: "resp-extra-bytes", resp: okCL + "EXTRA"},
	{name: "resp-second-response", resp: okCL + poison},
	{name: "resp-second-after-chunked", resp: okChunked + "2\r\nok\r\n0\r\n\r\n" + poison},
	{name: "resp-204-then-response", resp: "HTTP/1.1 204 No Content\r\n\r\n" + poison},
	{name: "resp-204-with-length-body", resp: "HTTP/1.1 204 No Content\r\nContent-Length: 6\r\n\r\npoison"},
	{name: "resp-204-chunked-body", resp: "HTTP/1.1 204 No Content\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n"},
	{name: "resp-304-then-response", resp: "HTTP/1.1 304 Not Modified\r\n\r\n" + poison},
	{name: "resp-304-length-no-body", resp: "HTTP/1.1 304 Not Modified\r\nContent-Length: 6\r\n\r\n"},
	{name: "resp-head-with-body", req: "HEAD", resp: fmt.Sprintf("HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n", len(poison)) + poison},
	{name: "resp-head-chunked-body", req: "HEAD", resp: okChunked + "2\r\nok\r\n0\r\n\r\n"},
	{name: "resp-head-length-no-body", req: "HEAD", resp: "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n"},
	{name: "resp-chunk-data-lf-then-size", resp: okChunked + "1\r\nA\n105\r\n" + poison + "\r\n0\r\n\r\n"},
	{name: "resp-chunk-size-plus", resp: okChunked + "+2\r\nok\r\n0\r\n\r\n"},
	{name: "resp-chunk-size-leading-space", resp: okChunked + " 2\r\nok\r\n0\r\n\r\n"},
	{name: "resp-chunk-size-bare-cr", resp: okChunked + "2\r\r\nok\r\n0\r\n\r\n"},
	{name: "resp-chunk-size-bare-lf", resp: okChunked + "2\nok\r\n0\r\n\r\n"},
	{name: "resp-chunk-size-wraps", resp: okChunked + "10000000000000002\r\nok\r\n0\r\n\r\n"},
	{name: "resp-chunk-size-hex-prefix", resp: okChunked + "0x2\r\nok\r\n0\r\n\r\n"},
	{name: "resp-chunk-size-negative", resp: okChunked + "-2\r\nok\r\n0\r\n\r\n"},
	{name: "resp-chunk-data-no-crlf", resp: okChunked + "2\r\nokX0\r\n\r\n"},
	{name: "resp-chunk-ext-unclosed-quote", resp: okChunked + "2;a=\"b\r\nok\r\n0\r\n\r\n"},
	{name: "resp-trailer-cr-cr-lf", resp: okChunked + "2\r\nok\r\n0\r\n\r\r\n" + poison},
	{name: "resp-trailer-no-colon", resp: okChunked + "2\r\nok\r\n0\r\nXYZ\r\n\r\n"},
	{name: "resp-trailer-folded", resp: okChunked + "2\r\nok\r\n0\r\nX: a\r\n b\r\n\r\n"},
	{name: "resp-trailer-nul", resp: okChunked + "2\r\nok\r\n0\r\nX: a\x00\r\n\r\n"},
	{name: "resp-trailer-content-length", resp: okChunked + "2\r\nok\r\n0\r\nContent-Length: 6\r\n\r\n"},
	{name: "resp-interim-100", resp: "HTTP/1.1 100 Continue\r\n\r\n" + okCL},
	{name: "resp-interim-103", resp: "HTTP/1.1 103 Early Hints\r\nLink: </s.css>; rel=preload\r\n\r\n" + okCL},
	{name: "resp-interim-100-twice", resp: "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 100 Continue\r\n\r\n" + okCL},
	{name: "resp-interim-102", resp: "HTTP/1.1 102 Processing\r\n\r\n" + okCL},
	{name: "resp-interim-100-with-body", resp: "HTTP/1.1 100 Continue\r\nContent-Length: 6\r\n\r\npoison" + okCL},
	{name: "resp-interim-then-extra", resp: "HTTP/1.1 103 Early Hints\r\n\r\n" + okCL + poison},
	{name: "resp-101-without-upgrade", resp: "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n" + poison},
	{name: "resp-101-upgrade", req: "UPGRADE", resp: "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n" + wsAccept + "\r\ntunnel", closeAfter: true},
	{name: "resp-length-short-close", resp: "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nok", closeAfter: true},
	{name: "resp-length-short-open", resp: "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nok"},
	{name: "resp-length-two-differ", resp: "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 8\r\n\r\nok" + "poison"},
	{name: "resp-length-list-same", resp: "HTTP/1.1 200 OK\r\nContent-Length: 2, 2\r\n\r\nok"},
	{name: "resp-length-plus", resp: "HTTP/1.1 200 OK\r\nContent-Length: +2\r\n\r\nok"},
	{name: "resp-length-huge", resp: "HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999\r\n\r\nok"},
	{name: "resp-length-and-chunked", resp: "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n"},
	{name: "resp-gzip-not-chunked", resp: "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\nbody", closeAfter: true},
	{name: "resp-http10-chunked", resp: "HTTP/1.0 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n", closeAfter: true},
	{name: "resp-conn-content-length", resp: "HTTP/1.1 200 OK\r\nConnection: Content-Length\r\nContent-Length: 2\r\n\r\nok"},
	{name: "resp-conn-transfer-encoding", resp: "HTTP/1.1 200 OK\r\nConnection: Transfer-Encoding\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n"},
	{name: "resp-close-delimited", resp: "HTTP/1.1 200 OK\r\n\r\nbody", closeAfter: true},
	{name: "resp-close-delimited-http10", resp: "HTTP/1.0 200 OK\r\n\r\nbody", closeAfter: true},
	{name: "resp-close-delimited-open", resp: "HTTP/1.1 200 OK\r\n\r\nbody"},
	{name: "resp-nothing-close", resp: "", closeAfter: true},
	{name: "resp-garbage", resp: "garbage\r\n\r\n"},
	{name: "resp-status-no-reason", resp: "HTTP/1.1 200\r\nContent-Length: 2\r\n\r\nok"},
	{name: "resp-status-four-digits", resp: "HTTP/1.1 2000 OK\r\nContent-Length: 2\r\n\r\nok"},
	{name: "resp-status-http2", resp: "HTTP/2 200 OK\r\nContent-Length: 2\r\n\r\nok"},
	{name: "resp-leading-crlf", resp: "\r\n" + okCL},
	{name: "resp-bare-lf", resp: "HTTP/1.1 200 OK\nContent-Length: 2\n\nok"},
	{name: "resp-obs-fold", resp: "HTTP/1.1 200 OK\r\nX: a\r\n b\r\nContent-Length: 2\r\n\r\nok"},
	{name: "resp-nul-in-field", resp: "HTTP/1.1 200 OK\r\nX: a\x00b\r\nContent-Length: 2\r\n\r\nok"},
	{name: "resp-space-before-colon", resp: "HTTP/1.1 200 OK\r\nContent-Length : 2\r\n\r\nok" + poison},
	{name: "resp-many-fields", resp: "HTTP/1.1 200 OK\r\n" + strings.Repeat("X-F: 1\r\n", 200) + "Content-Length: 2\r\n\r\nok"},
	{name: "resp-interim-bare-lf", resp: "HTTP/1.1 100 Continue\nX: y\n\n" + okCL},
	{name: "resp-te-not-a-token", resp: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked x\r\n\r\n2\r\nok\r\n0\r\n\r\n", closeAfter: true},
	{name: "resp-te-xchunked", resp: "HTTP/1.1 200 OK\r\nTransfer-Encoding: xchunked\r\n\r\n2\r\nok\r\n0\r\n\r\n", closeAfter: true},
	// Found by FuzzHTTPResponse, minimised: an interim response is relayed
	// as received, its bad version and bare LF included (in 6 s); a
	// Transfer-Encoding that is not a coding is relayed as received (in 4
	// minutes, with the known faults skipped).
	{name: "fuzz-resp-interim-bad-version", resp: "HTTP/1. 100\n\r\n0", closeAfter: true},
	{name: "fuzz-resp-te-not-a-token", resp: "HTTP/1. 200 \nTrAnsfer-EnCoding:C 00000\n\n000", closeAfter: true},
	// Found by FuzzHTTPResponse (2 minutes, known faults skipped): fulcrum
	// reads "chunked," as not chunked (RFC 9110 section 5.6.1: an empty
	// element is ignored), relays the body as delimited by the close, and
	// the client, which reads it chunked, gets what follows as well.
	{name: "fuzz-resp-te-chunked-comma", resp: "HTTP/1.1 200 \r\nTrAnsfer-EnCoding:Chunked,\n\r\nX00\n", closeAfter: true},
	{name: "resp-te-chunked-comma-then-response", resp: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked,\r\n\r\n2\r\nok\r\n0\r\n\r\n" + poison},
}

// diffScript is the upstream's answer to the response corpus's requests,
// found by their target /resp/<name>.
func diffScript(m *strictMsg) (string, bool, bool) {
	name, ok := strings.CutPrefix(m.target, "/resp/")
	if !ok {
		return "", false, false
	}
	for _, s := range diffResponseShapes {
		if s.name == name {
			return s.resp, s.closeAfter, true
		}
	}
	return "", false, false
}

// knownBroken lists the shapes fulcrum fails today, each with the issue
// point whose fix makes it pass. TestDifferential skips them (logging
// what happens) and fails when one of them passes: the table only
// shrinks. It is empty: every shape of issue 16 passes. A new fault found
// later goes here, with the point or issue that will fix it, until then.
var knownBroken = map[string]string{}

// diffDeparture documents a shape where fulcrum's verdict is deliberately
// not HAProxy's; README, "Where fulcrum refuses more, or less, than
// HAProxy", explains each reason.
type diffDeparture struct {
	fulcrum, haproxy diffClass
	why              string
}

// diffDepartures lists the documented departures by shape name.
var diffDepartures = map[string]diffDeparture{
	"chunk-data-lf-then-size":           {"fwd=0 4xx", "fwd=0 5xx", whyChunkLF},
	"chunk-size-bare-lf":                {"fwd=0 4xx", "fwd=1 4xx", whyChunkLF},
	"chunk-ext-bare-lf":                 {"fwd=0 4xx", "fwd=1 4xx", whyChunkLF},
	"chunk-trailer-bare-lf-end":         {"fwd=0 4xx", "fwd=1 4xx", whyChunkLF},
	"chunk-trailer-lf-cr-hides-request": {"fwd=0 4xx", "fwd=1 4xx", whyChunkLF},
	"resp-chunk-size-bare-lf":           {"refused", "relayed 200", whyChunkLF},
	"chunk-ext-ctl":                     {"fwd=0 4xx", "fwd=1 4xx", whyChunkExt},
	"chunk-trailer-folded":              {"fwd=0 4xx", "fwd=1 4xx", whyFold},
	"resp-trailer-folded":               {"refused", "relayed 200", whyFold},
	"chunk-trailer-nul":                 {"fwd=0 4xx", "fwd=1 5xx", whyNUL},
	"resp-trailer-nul":                  {"refused", "malformed", whyNUL},
	"clte-plain":                        {"fwd=0 4xx", "fwd=1 served", whyCLTE},
	"tecl-plain":                        {"fwd=0 4xx", "fwd=1 served", whyCLTE},
	"clte-value-upper":                  {"fwd=0 4xx", "fwd=1 served", whyCLTE},
	"tecl-value-upper":                  {"fwd=0 4xx", "fwd=1 served", whyCLTE},
	"clte-name-mixed-case":              {"fwd=0 4xx", "fwd=1 served", whyCLTE},
	"tecl-name-mixed-case":              {"fwd=0 4xx", "fwd=1 served", whyCLTE},
	"clte-no-space":                     {"fwd=0 4xx", "fwd=1 served", whyCLTE},
	"tecl-no-space":                     {"fwd=0 4xx", "fwd=1 served", whyCLTE},
	"clte-tab-value":                    {"fwd=0 4xx", "fwd=1 served", whyCLTE},
	"tecl-tab-value":                    {"fwd=0 4xx", "fwd=1 served", whyCLTE},
	"clte-trailing-space":               {"fwd=0 4xx", "fwd=1 served", whyCLTE},
	"tecl-trailing-space":               {"fwd=0 4xx", "fwd=1 served", whyCLTE},
	"clte-comma-last":                   {"fwd=0 4xx", "fwd=1 served", whyCLTE},
	"tecl-comma-last":                   {"fwd=0 4xx", "fwd=1 served", whyCLTE},
	"clte-bare-lf-line":                 {"fwd=0 4xx", "fwd=1 served", whyCLTE},
	"tecl-bare-lf-line":                 {"fwd=0 4xx", "fwd=1 served", whyCLTE},
	"te-line-folded-onto-host":          {"fwd=0 4xx", "fwd=1 4xx", whyFold},
	"tecl-line-folded-onto-host":        {"fwd=0 4xx", "fwd=1 4xx", whyFold},
	"te-value-folded":                   {"fwd=0 4xx", "fwd=1 4xx", whyFold},
	"clte-value-folded":                 {"fwd=0 4xx", "fwd=1 served", whyFold},
	"tecl-value-folded":                 {"fwd=0 4xx", "fwd=1 served", whyFold},
	"te-tab-folded-after-x":             {"fwd=0 4xx", "fwd=1 4xx", whyFold},
	"clte-tab-folded-after-x":           {"fwd=0 4xx", "fwd=1 served", whyFold},
	"tecl-tab-folded-after-x":           {"fwd=0 4xx", "fwd=1 4xx", whyFold},
	"cl-value-folded":                   {"fwd=0 4xx", "fwd=1 4xx", whyFold},
	"hdr-obs-fold":                      {"fwd=0 4xx", "fwd=1 served", whyFold},
	"resp-obs-fold":                     {"refused", "relayed 200", whyFold},
	"te-comma-last":                     {"fwd=0 4xx", "fwd=1 4xx", whyTEExact},
	"te-http10":                         {"fwd=0 4xx", "fwd=1 5xx", whyTEHTTP10},
	"te-http10-keepalive":               {"fwd=0 4xx", "fwd=1 5xx", whyTEHTTP10},
	"te-http10-cl":                      {"fwd=0 4xx", "fwd=1 5xx", whyTEHTTP10},
	"cl-list-same":                      {"fwd=0 4xx", "fwd=1 4xx", whyCLList},
	"cl-list-same-space":                {"fwd=0 4xx", "fwd=1 4xx", whyCLList},
	"resp-length-list-same":             {"refused", "relayed 200", whyCLList},
	"chunk-all-bare-lf":                 {"fwd=0 4xx", "fwd=1 4xx", whyChunkLF},
	"chunk-data-bare-lf":                {"fwd=0 4xx", "fwd=1 4xx", whyChunkLF},
	"rl-double-space":                   {"fwd=0 4xx", "fwd=1 served", whyRequestLine},
	"rl-tab-separators":                 {"fwd=0 4xx", "fwd=1 served", whyRequestLine},
	"rl-version-12":                     {"fwd=0 4xx", "fwd=1 served", whyRequestLine},
	"rl-version-20":                     {"fwd=0 4xx", "fwd=1 served", whyRequestLine},
	"rl-connect":                        {"fwd=1 4xx", "fwd=1 served", whyConnect},
	"hdr-host-two-same":                 {"fwd=0 4xx", "fwd=1 served", whyTwoHost},
	"hdr-nul-in-value":                  {"fwd=0 4xx", "fwd=1 5xx", whyNUL},
	"resp-nul-in-field":                 {"refused", "malformed", whyNUL},
	"upg-websocket-no-key":              {"fwd=1 4xx", "fwd=0 4xx", whyWebSocketKey},
	"resp-length-and-chunked":           {"refused", "relayed 200", whyRespCLTE},
	"resp-gzip-not-chunked":             {"relayed 200", "refused", whyRespGzip},
	"resp-te-xchunked":                  {"relayed 200", "refused", whyRespGzip},
	"resp-http10-chunked":               {"relayed 200", "malformed", whyRespHTTP10Chunked},
	"resp-status-four-digits":           {"refused", "malformed", whyRespStatus},
}

// The reasons for the departures, each explained in README.md, "Where
// fulcrum refuses more, or less, than HAProxy".
const (
	whyCLTE              = "both Content-Length and Transfer-Encoding: fulcrum answers 400, HAProxy 2.6 drops the length and forwards the chunked body"
	whyFold              = "folded lines (obs-fold), in a head or the trailers: fulcrum answers 400 (502 from a server), HAProxy 2.6 unfolds them"
	whyTEExact           = "a request Transfer-Encoding other than exactly chunked: fulcrum answers 400, HAProxy 2.6 accepts an empty list element"
	whyTEHTTP10          = "Transfer-Encoding on HTTP/1.0: fulcrum answers 400 (RFC 9112 section 6.1), HAProxy 2.6 forwards the field to the server"
	whyCLList            = "a Content-Length list (5, 5): fulcrum answers 400 (502 from a server), HAProxy 2.6 merges it; two equal fields pass"
	whyChunkLF           = "a bare LF in chunked framing (size line, after the data, trailers): fulcrum answers 400 (502 from a server), HAProxy 2.6 accepts it"
	whyChunkExt          = "a chunk extension that is not ;name[=token or quoted string]: fulcrum answers 400, HAProxy 2.6 drops extensions unread"
	whyRequestLine       = "a request line with two spaces, tabs or a version other than HTTP/1.0 or HTTP/1.1: fulcrum answers 400, HAProxy 2.6 rewrites it"
	whyConnect           = "CONNECT: fulcrum has no tunnel for it and reads what follows as requests (the smuggled /admin is denied), HAProxy 2.6 tunnels after the server's 200"
	whyTwoHost           = "two Host fields, even equal: fulcrum answers 400, HAProxy 2.6 merges equal ones"
	whyNUL               = "a NUL in a field value, in a head or the trailers: fulcrum answers 400 (502 from a server), HAProxy 2.6 forwards it"
	whyWebSocketKey      = "a WebSocket upgrade without Sec-WebSocket-Key: fulcrum leaves it to the server (it tunnels only after a 101), HAProxy 2.6 answers 400"
	whyRespCLTE          = "a response with both Content-Length and Transfer-Encoding: fulcrum answers 502, HAProxy 2.6 relays it chunked"
	whyRespGzip          = "a response whose last transfer coding is not chunked: fulcrum relays it delimited by the close (RFC 9112 section 6.3), HAProxy 2.6 answers 502"
	whyRespHTTP10Chunked = "a chunked HTTP/1.0 response: fulcrum relays it as HTTP/1.1 chunked and closes, HAProxy 2.6 relays the HTTP/1.0 status line with Transfer-Encoding"
	whyRespStatus        = "a status code of four digits: fulcrum answers 502, HAProxy 2.6 relays it"
)

// diffUncompared lists shapes whose verdict is not compared with HAProxy's
// (fulcrum's invariants are still checked), with the reason.
var diffUncompared = map[string]string{
	"chunk-trailer-space-before-colon": "HAProxy 2.6 forwards this trailer or answers 400 from one run to the next",
}
