// Package logformat is HAProxy's log-format language (section 8.2.6 of
// its configuration manual) for fulcrum's access log: a format string of
// text, separators and %-variables (%ci, %{+Q}r, %Tw, %[sample]) compiled
// once at load (Parse) and rendered per request into a caller's buffer
// (Format.Append) without allocating.
//
// The main types:
//
//   - Entry is one request's or TCP session's values, filled by the proxy.
//   - Format is a compiled format; Named returns the strings of HAProxy's
//     predefined formats (httplog, tcplog, clf, default).
//
// Rendering follows HAProxy 2.6, checked side by side with it: a run of
// spaces is a separator, written once and not after a variable that wrote
// nothing; an absent string is "-" ("" when quoted); +Q quotes strings,
// +X writes addresses, ports, %Ts, %pid and %rt in upper-case hex, +E
// escapes '"', '\' and ']' (for RFC 5424 structured data); %o carries its
// flags to every later variable. Captured headers and the request line are
// encoded as HAProxy logs them: '"', '#' and control bytes (and in headers
// '{', '|', '}') become #XX.
package logformat

import (
	"bytes"
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"time"
)

// Named formats, as HAProxy declares them (configuration manual 8.2.2 to
// 8.2.4): "httplog" is `option httplog`, "tcplog" `option tcplog`, "clf"
// `option httplog clf`, "default" the text HAProxy's source names
// default_tcp_log_format (tcplog's fields; HAProxy without any option
// logs "Connect from ..." at accept instead, manual 8.2.1).
var named = map[string]string{
	"httplog": "%ci:%cp [%tr] %ft %b/%s %TR/%Tw/%Tc/%Tr/%Ta %ST %B %CC %CS %tsc %ac/%fc/%bc/%sc/%rc %sq/%bq %hr %hs %{+Q}r",
	"tcplog":  "%ci:%cp [%t] %ft %b/%s %Tw/%Tc/%Tt %B %ts %ac/%fc/%bc/%sc/%rc %sq/%bq",
	"clf": `%{+Q}o %{-Q}ci - - [%trg] %r %ST %B "" "" %cp %ms %ft %b %s %TR %Tw %Tc %Tr %Ta %tsc %ac %fc ` +
		`%bc %sc %rc %sq %bq %CC %CS %hrl %hsl`,
	"default": "%ci:%cp [%t] %ft %b/%s %Tw/%Tc/%Tt %B %ts %ac/%fc/%bc/%sc/%rc %sq/%bq",
}

// Named returns the format string of one of HAProxy's predefined formats
// ("httplog", "tcplog", "clf", "default"); ok is false for another name.
func Named(name string) (format string, ok bool) {
	format, ok = named[name]
	return format, ok
}

// Flags are a variable's rendering options.
type Flags uint8

// The flags of HAProxy's log-format.
const (
	FlagQuote  Flags = 1 << iota // Q: quote strings
	FlagHex                      // X: hexadecimal addresses, ports and ids
	FlagEscape                   // E: escape '"', '\' and ']'
)

// Entry is the values of one logged request (http) or session (tcp).
// Times in ms are -1 when the phase was not reached. A zero address is
// unknown ("-").
type Entry struct {
	HTTP bool // an HTTP request (else a TCP session)

	Client, FrontendAddr, ServerAddr, BackendSource netip.AddrPort

	// Accept is the connection's accept date (%t) and Request the
	// request's first byte (%tr); the local dates are written in their
	// location, the GMT ones (%T, %trg) in UTC.
	Accept  time.Time
	Request time.Time

	Frontend, Backend, Server string

	// The timers, ms: Th handshake, Ti idle before the request, TR
	// request head, Tw queue, Tc connect, Tr response head, Ta active
	// (first request byte to the end), Tt total (accept, or the end of
	// the previous request, to the end).
	Th, Ti, TR, Tw, Tc, Tr, Ta, Tt int64

	Status        int   // HTTP status sent, -1 none
	BytesRead     int64 // %B: bytes sent to the client
	BytesUploaded int64 // %U: bytes received from the client

	// Termination is the four characters of %tsc: who ended the session
	// and in which state, then the persistence cookie's state on the
	// request and on the response ('-' when not applicable).
	Termination [4]byte

	ActConn, FeConn, BeConn, SrvConn int64
	Retries                          int
	Redispatched                     bool
	SrvQueue, BackendQueue           int64

	// ReqHeaders and RespHeaders are the captured header values, one per
	// capture declaration ("" when absent), nil when nothing is captured
	// (no capture declared, or a request that could not be parsed).
	ReqHeaders, RespHeaders []string

	// BadRequest is set for a request whose head could not be read or
	// parsed: %r and its parts say <BADREQ>. Else Method, URI and Version
	// are the request line as received.
	BadRequest           bool
	Method, URI, Version []byte

	// SSLVersion and SSLCipher are the client connection's TLS version
	// and cipher suite (%sslv, %sslc: "TLSv1.3", "TLS_AES_128_GCM_SHA256"),
	// "" on a plain connection.
	SSLVersion, SSLCipher string

	UniqueID   string // %ID, "" = none
	Hostname   string // %H
	Pid        int    // %pid
	LogCounter int64  // %lc: the frontend's log lines so far
	ReqCounter int64  // %rt: the process's requests so far

	// Samples, when set, fetches %[expr] number i into dst (ok false:
	// absent, logged "-").
	Samples func(i int, dst []byte) ([]byte, bool)
}

// variable identifiers.
type varID uint8

const (
	vNone varID = iota
	vGlobal
	vB
	vCC
	vCS
	vH
	vHM
	vHP
	vHPO
	vHQ
	vHU
	vHV
	vID
	vST
	vT
	vTa
	vTc
	vTd
	vTl
	vTh
	vTi
	vTq
	vTR
	vTr
	vTs
	vTt
	vTu
	vTw
	vU
	vac
	vb
	vbc
	vbi
	vbp
	vbq
	vci
	vcp
	vf
	vfc
	vfi
	vfp
	vft
	vlc
	vhr
	vhrl
	vhs
	vhsl
	vms
	vpid
	vr
	vrc
	vrt
	vs
	vsc
	vsi
	vsp
	vsq
	vsslc
	vsslv
	vt
	vtr
	vtrg
	vtrl
	vts
	vtsc
)

// vars maps names to identifiers; httpOnly marks HAProxy's "H" variables,
// refused in a tcp frontend's format.
var vars = map[string]struct {
	id   varID
	http bool
}{
	"o": {vGlobal, false}, "B": {vB, false}, "CC": {vCC, true}, "CS": {vCS, true}, "H": {vH, false},
	"HM": {vHM, true}, "HP": {vHP, true}, "HPO": {vHPO, true}, "HQ": {vHQ, true}, "HU": {vHU, true},
	"HV": {vHV, true}, "ID": {vID, false}, "ST": {vST, false}, "T": {vT, false}, "Ta": {vTa, true},
	"Tc": {vTc, false}, "Td": {vTd, false}, "Tl": {vTl, false}, "Th": {vTh, false}, "Ti": {vTi, true},
	"Tq": {vTq, true}, "TR": {vTR, true}, "Tr": {vTr, true}, "Ts": {vTs, false}, "Tt": {vTt, false},
	"Tu": {vTu, false}, "Tw": {vTw, false}, "U": {vU, false}, "ac": {vac, false}, "b": {vb, false},
	"bc": {vbc, false}, "bi": {vbi, false}, "bp": {vbp, false}, "bq": {vbq, false}, "ci": {vci, false},
	"cp": {vcp, false}, "f": {vf, false}, "fc": {vfc, false}, "fi": {vfi, false}, "fp": {vfp, false},
	"ft": {vft, false}, "lc": {vlc, false}, "hr": {vhr, false}, "hrl": {vhrl, false}, "hs": {vhs, false},
	"hsl": {vhsl, false}, "ms": {vms, false}, "pid": {vpid, false}, "r": {vr, true}, "rc": {vrc, false},
	"rt": {vrt, false}, "s": {vs, false}, "sc": {vsc, false}, "si": {vsi, false}, "sp": {vsp, false},
	"sq": {vsq, false}, "sslc": {vsslc, false}, "sslv": {vsslv, false}, "t": {vt, false},
	"tr": {vtr, true}, "trg": {vtrg, true}, "trl": {vtrl, true}, "ts": {vts, false}, "tsc": {vtsc, true},
}

type nodeKind uint8

const (
	nText nodeKind = iota
	nSep
	nVar
	nSample
)

type node struct {
	kind   nodeKind
	text   string
	v      varID
	flags  Flags
	sample int
}

// Format is a compiled log format.
type Format struct {
	text     string
	nodes    []node
	httpVars []string
}

// String returns the format as written.
func (f *Format) String() string { return f.text }

// HTTPVariables returns the HTTP-only variables the format uses, in order
// ("r", "tsc", ...): a tcp frontend's format may use none (HAProxy refuses
// them there).
func (f *Format) HTTPVariables() []string { return f.httpVars }

// ErrEmpty is Parse's error for an empty format.
var ErrEmpty = errors.New("empty log format")

// Parse compiles a log-format string. sample, if non-nil, compiles the
// expression of a %[expr] variable and returns its index for
// Entry.Samples; without it %[...] is an error. A backslash makes the next
// character literal ("\ " is a space, as in HAProxy's unquoted
// configuration arguments). Errors name the variable and its position.
func Parse(text string, sample func(expr string) (int, error)) (*Format, error) {
	if strings.TrimSpace(text) == "" {
		return nil, ErrEmpty
	}
	f := &Format{text: text}
	var lit strings.Builder
	flushLit := func() {
		if lit.Len() > 0 {
			f.nodes = append(f.nodes, node{kind: nText, text: lit.String()})
			lit.Reset()
		}
	}
	var global Flags
	for i := 0; i < len(text); {
		c := text[i]
		switch {
		case c == ' ' || c == '\t':
			flushLit()
			if n := len(f.nodes); n == 0 || f.nodes[n-1].kind != nSep {
				f.nodes = append(f.nodes, node{kind: nSep})
			}
			i++
		case c == '\\' && i+1 < len(text):
			if text[i+1] == ' ' {
				flushLit()
				if n := len(f.nodes); n == 0 || f.nodes[n-1].kind != nSep {
					f.nodes = append(f.nodes, node{kind: nSep})
				}
			} else {
				lit.WriteByte(text[i+1])
			}
			i += 2
		case c == '%' && i+1 < len(text) && text[i+1] == '%':
			lit.WriteByte('%')
			i += 2
		case c == '%':
			flushLit()
			start := i
			i++
			set, clr := Flags(0), Flags(0)
			if i < len(text) && text[i] == '{' {
				end := strings.IndexByte(text[i:], '}')
				if end < 0 {
					return nil, fmt.Errorf("missing '}' after '%%{' at position %d", start)
				}
				for _, opt := range strings.Split(text[i+1:i+end], ",") {
					fl, on, err := parseFlag(opt)
					if err != nil {
						return nil, fmt.Errorf("variable at position %d: %w", start, err)
					}
					if on {
						set |= fl
					} else {
						clr |= fl
					}
				}
				i += end + 1
			}
			if i < len(text) && text[i] == '[' {
				end := strings.IndexByte(text[i:], ']')
				if end < 0 {
					return nil, fmt.Errorf("missing ']' after '%%[' at position %d", start)
				}
				expr := strings.TrimSpace(text[i+1 : i+end])
				if sample == nil {
					return nil, fmt.Errorf("sample expression %%[%s] is not supported here", expr)
				}
				idx, err := sample(expr)
				if err != nil {
					return nil, fmt.Errorf("%%[%s]: %w", expr, err)
				}
				f.nodes = append(f.nodes, node{kind: nSample, sample: idx, flags: (global | set) &^ clr})
				i += end + 1
				continue
			}
			j := i
			for j < len(text) && isLetter(text[j]) {
				j++
			}
			name := text[i:j]
			v, ok := vars[name]
			if !ok {
				if name == "" {
					return nil, fmt.Errorf("'%%' at position %d is not followed by a variable name (write '%%%%' for a '%%')", start)
				}
				return nil, fmt.Errorf("no such format variable '%s' at position %d (write '%%%%' for a '%%')", name, start)
			}
			i = j
			if v.id == vGlobal {
				global = (global | set) &^ clr
				continue
			}
			if v.http {
				f.httpVars = append(f.httpVars, name)
			}
			f.nodes = append(f.nodes, node{kind: nVar, v: v.id, flags: (global | set) &^ clr})
		default:
			lit.WriteByte(c)
			i++
		}
	}
	flushLit()
	return f, nil
}

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

// parseFlag parses "+Q", "-X", "E" (on when unsigned).
func parseFlag(opt string) (Flags, bool, error) {
	opt = strings.TrimSpace(opt)
	on := true
	switch {
	case strings.HasPrefix(opt, "+"):
		opt = opt[1:]
	case strings.HasPrefix(opt, "-"):
		on, opt = false, opt[1:]
	}
	switch opt {
	case "Q":
		return FlagQuote, on, nil
	case "X":
		return FlagHex, on, nil
	case "E":
		return FlagEscape, on, nil
	}
	return 0, false, fmt.Errorf("unknown flag %q (Q, X or E)", opt)
}

// Append renders e in format f after dst and returns the extended buffer.
func (f *Format) Append(dst []byte, e *Entry) []byte {
	lastSep := true // no separator at the start
	for i := range f.nodes {
		n := &f.nodes[i]
		before := len(dst)
		switch n.kind {
		case nSep:
			if !lastSep {
				dst = append(dst, ' ')
				lastSep = true
			}
			continue
		case nText:
			dst = append(dst, n.text...)
		case nVar:
			dst = appendVar(dst, n, e)
		case nSample:
			dst = appendSample(dst, n, e)
		}
		if len(dst) > before {
			lastSep = false
		}
	}
	return dst
}

func appendSample(dst []byte, n *node, e *Entry) []byte {
	if e.Samples == nil {
		return appendStr(dst, "", n.flags)
	}
	start := len(dst)
	if n.flags&FlagQuote != 0 {
		dst = append(dst, '"')
	}
	body := len(dst)
	out, ok := e.Samples(n.sample, dst)
	if !ok || len(out) <= body {
		return appendStr(dst[:start], "", n.flags)
	}
	dst = out
	if n.flags&FlagEscape != 0 {
		tmp := string(dst[body:])
		dst = appendEscaped(dst[:body], tmp)
	}
	if n.flags&FlagQuote != 0 {
		dst = append(dst, '"')
	}
	return dst
}

// appendStr writes a string variable: "-" when empty (quoted: ""), quoted
// and escaped as the flags say.
func appendStr(dst []byte, s string, fl Flags) []byte {
	if fl&FlagQuote != 0 {
		dst = append(dst, '"')
		if fl&FlagEscape != 0 {
			dst = appendEscaped(dst, s)
		} else {
			dst = append(dst, s...)
		}
		return append(dst, '"')
	}
	if s == "" {
		return append(dst, '-')
	}
	if fl&FlagEscape != 0 {
		return appendEscaped(dst, s)
	}
	return append(dst, s...)
}

// appendEncoded writes bytes encoded with enc: "-" when empty (quoted:
// ""), quoted and escaped as the flags say.
func appendEncoded(dst []byte, b []byte, fl Flags, enc *[256]bool) []byte {
	if fl&FlagQuote != 0 {
		dst = append(dst, '"')
		dst = appendRaw(dst, b, fl, enc)
		return append(dst, '"')
	}
	if len(b) == 0 {
		return append(dst, '-')
	}
	return appendRaw(dst, b, fl, enc)
}

// appendRaw writes b with the bytes enc marks as #XX, escaped with +E.
func appendRaw(dst []byte, b []byte, fl Flags, enc *[256]bool) []byte {
	for _, c := range b {
		switch {
		case enc[c]:
			dst = append(dst, '#', hexDigits[c>>4], hexDigits[c&15])
		case fl&FlagEscape != 0 && (c == '"' || c == '\\' || c == ']'):
			dst = append(dst, '\\', c)
		default:
			dst = append(dst, c)
		}
	}
	return dst
}

// appendEscaped writes s with '"', '\' and ']' escaped by a backslash.
func appendEscaped(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c == '"' || c == '\\' || c == ']' {
			dst = append(dst, '\\')
		}
		dst = append(dst, s[i])
	}
	return dst
}

const hexDigits = "0123456789ABCDEF"

// uriEncode and headerEncode are the bytes HAProxy encodes as #XX in the
// logged request line and in captured headers.
var uriEncode, headerEncode = func() (u, h [256]bool) {
	for c := range 256 {
		ctl := c < 0x20 || c >= 0x7f
		u[c] = ctl || c == '"' || c == '#'
		h[c] = ctl || c == '"' || c == '#' || c == '{' || c == '|' || c == '}'
	}
	return
}()

func appendInt(dst []byte, v int64) []byte { return strconv.AppendInt(dst, v, 10) }

// appendHex writes v in upper-case hex on at least width digits.
func appendHex(dst []byte, v uint64, width int) []byte {
	var b [16]byte
	i := len(b)
	for v > 0 || i == len(b) {
		i--
		b[i] = hexDigits[v&15]
		v >>= 4
	}
	for len(b)-i < width {
		i--
		b[i] = '0'
	}
	return append(dst, b[i:]...)
}

func appendNum(dst []byte, v int64, fl Flags, width int) []byte {
	if fl&FlagHex != 0 && v >= 0 {
		return appendHex(dst, uint64(v), width)
	}
	return appendInt(dst, v)
}

func appendIP(dst []byte, a netip.AddrPort, fl Flags) []byte {
	if !a.IsValid() {
		return append(dst, '-')
	}
	ip := a.Addr().Unmap()
	if fl&FlagHex != 0 {
		for _, b := range ip.AsSlice() {
			dst = append(dst, hexDigits[b>>4], hexDigits[b&15])
		}
		return dst
	}
	if fl&FlagQuote != 0 {
		dst = append(dst, '"')
		dst = ip.AppendTo(dst)
		return append(dst, '"')
	}
	return ip.AppendTo(dst)
}

func appendPort(dst []byte, a netip.AddrPort, fl Flags) []byte {
	if !a.IsValid() {
		return append(dst, '-')
	}
	return appendNum(dst, int64(a.Port()), fl, 4)
}

var months = [12]string{"Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"}

// AppendEmbryonic appends HAProxy 2.6's line for a connection that ended
// before any request or session (sess_log_embryonic: a bad PROXY header,
// a failed TLS handshake): "ip:port [accept date] frontend/bind: reason".
func AppendEmbryonic(dst []byte, client netip.AddrPort, accept time.Time, frontend, bind, reason string) []byte {
	dst = client.Addr().AppendTo(dst)
	dst = append(dst, ':')
	dst = strconv.AppendUint(dst, uint64(client.Port()), 10)
	dst = append(dst, " ["...)
	dst = appendDate(dst, accept, true, false)
	dst = append(dst, "] "...)
	dst = append(dst, frontend...)
	dst = append(dst, '/')
	dst = append(dst, bind...)
	dst = append(dst, ": "...)
	return append(dst, reason...)
}

// appendDate writes 01/Dec/2026:22:29:55, then .mmm with ms, or a zone
// offset (" +0000") with zone.
func appendDate(dst []byte, t time.Time, ms, zone bool) []byte {
	if t.IsZero() {
		return append(dst, '-')
	}
	y, mo, d := t.Date()
	h, mi, s := t.Clock()
	dst = append2(dst, d)
	dst = append(dst, '/')
	dst = append(dst, months[mo-1]...)
	dst = append(dst, '/')
	dst = strconv.AppendInt(dst, int64(y), 10)
	dst = append(dst, ':')
	dst = append2(dst, h)
	dst = append(dst, ':')
	dst = append2(dst, mi)
	dst = append(dst, ':')
	dst = append2(dst, s)
	if ms {
		dst = append(dst, '.')
		dst = append3(dst, t.Nanosecond()/1e6)
	}
	if zone {
		_, off := t.Zone()
		sign := byte('+')
		if off < 0 {
			sign, off = '-', -off
		}
		dst = append(dst, ' ', sign)
		dst = append2(dst, off/3600)
		dst = append2(dst, off%3600/60)
	}
	return dst
}

func append2(dst []byte, v int) []byte { return append(dst, byte('0'+v/10%10), byte('0'+v%10)) }
func append3(dst []byte, v int) []byte {
	return append(dst, byte('0'+v/100%10), byte('0'+v/10%10), byte('0'+v%10))
}

// appendCaptures writes captured headers as %hr ("{a|b}") or, clf, as
// %hrl ("a b", "-" for an empty one). Nothing when nothing was captured.
func appendCaptures(dst []byte, caps []string, fl Flags, clf bool) []byte {
	if caps == nil {
		return dst
	}
	if clf {
		for i, c := range caps {
			if i > 0 {
				dst = append(dst, ' ')
			}
			dst = appendEncoded(dst, []byte(c), fl, &headerEncode)
		}
		return dst
	}
	if fl&FlagQuote != 0 {
		dst = append(dst, '"')
	}
	dst = append(dst, '{')
	for i, c := range caps {
		if i > 0 {
			dst = append(dst, '|')
		}
		dst = appendRaw(dst, []byte(c), fl, &headerEncode)
	}
	dst = append(dst, '}')
	if fl&FlagQuote != 0 {
		dst = append(dst, '"')
	}
	return dst
}

// badReq is the request line of a request that could not be parsed.
var badReq = []byte("<BADREQ>")

func appendVar(dst []byte, n *node, e *Entry) []byte {
	fl := n.flags
	switch n.v {
	case vB:
		return appendInt(dst, e.BytesRead)
	case vU:
		return appendInt(dst, e.BytesUploaded)
	case vCC, vCS, vID, vsslc, vsslv:
		s := ""
		switch n.v {
		case vID:
			s = e.UniqueID
		case vsslc:
			s = e.SSLCipher
		case vsslv:
			s = e.SSLVersion
		}
		return appendStr(dst, s, fl)
	case vH:
		return appendStr(dst, e.Hostname, fl)
	case vHM, vHU, vHP, vHPO, vHQ, vHV:
		if e.BadRequest || (e.Method == nil && e.HTTP) {
			return appendEncoded(dst, badReq, fl, &uriEncode)
		}
		var part []byte
		switch n.v {
		case vHM:
			part = e.Method
		case vHU:
			part = e.URI
		case vHP, vHPO, vHQ:
			path, query := e.URI, []byte(nil)
			if i := bytes.IndexByte(path, '?'); i >= 0 {
				path, query = path[:i], path[i:]
			}
			switch n.v {
			case vHQ:
				if len(query) == 0 {
					return dst // an absent query string is written as nothing
				}
				part = query
			case vHPO:
				part = pathOnly(path)
			default:
				part = path
			}
		case vHV:
			part = e.Version
		}
		return appendEncoded(dst, part, fl, &uriEncode)
	case vr:
		if e.BadRequest || e.Method == nil {
			return appendEncoded(dst, badReq, fl, &uriEncode)
		}
		if fl&FlagQuote != 0 {
			dst = append(dst, '"')
		}
		inner := fl &^ FlagQuote
		dst = appendRaw(dst, e.Method, inner, &uriEncode)
		dst = append(dst, ' ')
		dst = appendRaw(dst, e.URI, inner, &uriEncode)
		dst = append(dst, ' ')
		dst = appendRaw(dst, e.Version, inner, &uriEncode)
		if fl&FlagQuote != 0 {
			dst = append(dst, '"')
		}
		return dst
	case vST:
		return appendInt(dst, int64(e.Status))
	case vT:
		return appendDate(dst, e.Accept.UTC(), false, true)
	case vTl:
		return appendDate(dst, e.Accept, false, true)
	case vt:
		return appendDate(dst, e.Accept, true, false)
	case vtr:
		return appendDate(dst, e.Request, true, false)
	case vtrg:
		return appendDate(dst, e.Request.UTC(), false, true)
	case vtrl:
		return appendDate(dst, e.Request, false, true)
	case vTs:
		return appendNum(dst, e.Accept.Unix(), fl, 8)
	case vms:
		return append3(dst, e.Accept.Nanosecond()/1e6)
	case vTh:
		return appendInt(dst, e.Th)
	case vTi:
		return appendInt(dst, e.Ti)
	case vTR:
		return appendInt(dst, e.TR)
	case vTq:
		if e.TR < 0 {
			return appendInt(dst, -1)
		}
		return appendInt(dst, max(e.Th, 0)+max(e.Ti, 0)+e.TR)
	case vTw:
		return appendInt(dst, e.Tw)
	case vTc:
		return appendInt(dst, e.Tc)
	case vTr:
		return appendInt(dst, e.Tr)
	case vTa:
		return appendInt(dst, e.Ta)
	case vTt:
		return appendInt(dst, e.Tt)
	case vTu:
		if e.Tt < 0 {
			return appendInt(dst, -1)
		}
		return appendInt(dst, e.Tt-max(e.Ti, 0))
	case vTd:
		// Td = Tt - (Tq + Tw + Tc + Tr), -1 when a phase was not reached.
		if e.Tw < 0 || e.Tc < 0 || (e.HTTP && (e.TR < 0 || e.Tr < 0)) {
			return appendInt(dst, -1)
		}
		tq := max(e.Th, 0) + max(e.Ti, 0) + max(e.TR, 0)
		return appendInt(dst, max(e.Tt-(tq+e.Tw+e.Tc+max(e.Tr, 0)), 0))
	case vac:
		return appendInt(dst, e.ActConn)
	case vfc:
		return appendInt(dst, e.FeConn)
	case vbc:
		return appendInt(dst, e.BeConn)
	case vsc:
		return appendInt(dst, e.SrvConn)
	case vrc:
		if e.Redispatched {
			dst = append(dst, '+')
		}
		return appendInt(dst, int64(e.Retries))
	case vsq:
		return appendInt(dst, e.SrvQueue)
	case vbq:
		return appendInt(dst, e.BackendQueue)
	case vb:
		return appendStr(dst, e.Backend, fl)
	case vs:
		return appendStr(dst, e.Server, fl)
	case vf:
		return appendStr(dst, e.Frontend, fl)
	case vft:
		if e.SSLVersion != "" {
			// HAProxy's %ft: the frontend's name and '~' on a TLS
			// connection.
			return appendStr(dst, e.Frontend+"~", fl)
		}
		return appendStr(dst, e.Frontend, fl)
	case vci:
		return appendIP(dst, e.Client, fl)
	case vcp:
		return appendPort(dst, e.Client, fl)
	case vfi:
		return appendIP(dst, e.FrontendAddr, fl)
	case vfp:
		return appendPort(dst, e.FrontendAddr, fl)
	case vsi:
		return appendIP(dst, e.ServerAddr, fl)
	case vsp:
		return appendPort(dst, e.ServerAddr, fl)
	case vbi:
		return appendIP(dst, e.BackendSource, fl)
	case vbp:
		return appendPort(dst, e.BackendSource, fl)
	case vlc:
		return appendNum(dst, e.LogCounter, fl, 4)
	case vrt:
		return appendNum(dst, e.ReqCounter, fl, 4)
	case vpid:
		return appendNum(dst, int64(e.Pid), fl, 4)
	case vhr:
		if e.BadRequest {
			return dst
		}
		return appendCaptures(dst, e.ReqHeaders, fl, false)
	case vhs:
		if e.BadRequest {
			return dst
		}
		return appendCaptures(dst, e.RespHeaders, fl, false)
	case vhrl:
		if e.BadRequest {
			return dst
		}
		return appendCaptures(dst, e.ReqHeaders, fl, true)
	case vhsl:
		if e.BadRequest {
			return dst
		}
		return appendCaptures(dst, e.RespHeaders, fl, true)
	case vts:
		return append(dst, e.Termination[:2]...)
	case vtsc:
		return append(dst, e.Termination[:]...)
	}
	return dst
}

var schemeSep = []byte("://")

// pathOnly is %HPO: the path of an absolute-form target without its
// scheme and authority.
func pathOnly(uri []byte) []byte {
	if i := bytes.Index(uri, schemeSep); i > 0 {
		rest := uri[i+3:]
		if j := bytes.IndexByte(rest, '/'); j >= 0 {
			return rest[j:]
		}
		return []byte("/")
	}
	return uri
}
