package proxyproto

// Decoding of the PROXY protocol header (proxy-protocol.txt sections 2.1
// and 2.2). Parse is strict where the specification is: exactly one space
// between fields, no leading zeroes in ports, a CRLF within the first 107
// bytes of a version 1 line, version 2 nibble and known commands, address
// blocks no shorter than their family needs, well-formed TLVs and a
// matching CRC32c when one is sent.

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"net/netip"
)

// Signatures and limits.
var (
	sigV1 = []byte("PROXY ")
	// sigV2 is the 12-byte signature of a version 2 header.
	sigV2 = []byte("\r\n\r\n\x00\r\nQUIT\n")
)

const (
	// MaxV1Len is the longest version 1 line, CRLF included.
	MaxV1Len = 107
	// MaxV2Len is the longest version 2 header accepted: HAProxy's buffer
	// size (tune.bufsize, 16 KiB). The format allows 16+65535 bytes; no
	// sender needs that much for addresses and TLVs.
	MaxV2Len  = 16 << 10
	v2HeadLen = 16
)

// Command is what a header says about the connection.
type Command uint8

const (
	// Local: the connection was made by the sender itself (a health
	// check), or its addresses are unknown (version 1 UNKNOWN, version 2
	// UNSPEC): the receiver keeps the real connection's addresses.
	Local Command = iota
	// Proxy: the connection is relayed; Src and Dst are the original ones.
	Proxy
)

// TLV types of version 2 (proxy-protocol.txt 2.2).
const (
	TypeALPN      = 0x01
	TypeAuthority = 0x02
	TypeCRC32C    = 0x03
	TypeNoop      = 0x04
	TypeUniqueID  = 0x05
	TypeSSL       = 0x20
	TypeNetNS     = 0x30
)

// TLV is one type-length-value of a version 2 header.
type TLV struct {
	Type  byte
	Value []byte
}

// Header is a decoded PROXY protocol header.
type Header struct {
	Version int // 1 or 2
	Command Command
	// Src and Dst are the original client and destination addresses when
	// Command is Proxy and the family is TCP or UDP over IPv4 or IPv6;
	// invalid otherwise (the receiver then keeps the connection's own).
	Src, Dst netip.AddrPort
	// Family is version 2's address family and protocol byte (0x11 TCP
	// over IPv4, 0x21 TCP over IPv6, ...); version 1 gives 0x11, 0x21 or
	// 0 for UNKNOWN.
	Family byte
	// TLVs are version 2's type-length-values, in order, CRC32c included.
	TLVs []TLV
}

// TLV returns the value of the first TLV of type t, and whether there is one.
func (h *Header) TLV(t byte) ([]byte, bool) {
	for _, v := range h.TLVs {
		if v.Type == t {
			return v.Value, true
		}
	}
	return nil, false
}

// Code is why a header was refused, as HAProxy's CO_ER_PRX_* codes.
type Code uint8

// Failure codes. Empty, Abort, Timeout and Truncated come from reading a
// connection (Read); NotHeader, BadHeader and BadProto from the bytes
// (Parse).
const (
	Empty     Code = iota + 1 // closed before any byte
	Abort                     // read error
	Timeout                   // the header did not arrive in time
	Truncated                 // closed in the middle of a header
	NotHeader                 // the bytes are not a PROXY header
	BadHeader                 // a PROXY header, malformed
	BadProto                  // a PROXY header with an unknown protocol
)

// codeText are HAProxy's messages for each code (conn_err_code_str), which
// operators grep their logs for.
var codeText = [...]string{
	Empty:     "Connection closed while waiting for PROXY protocol header",
	Abort:     "Connection error while waiting for PROXY protocol header",
	Timeout:   "Timeout while waiting for PROXY protocol header",
	Truncated: "Truncated PROXY protocol header received",
	NotHeader: "Received something which does not look like a PROXY protocol header",
	BadHeader: "Received an invalid PROXY protocol header",
	BadProto:  "Received an unhandled protocol in the PROXY protocol header",
}

// Error is a refused header: its code, and the underlying read error for
// Abort.
type Error struct {
	Code Code
	Err  error // the read error (Abort, Timeout), or nil
}

// Error returns HAProxy's message for the code.
func (e *Error) Error() string {
	if int(e.Code) < len(codeText) && codeText[e.Code] != "" {
		return codeText[e.Code]
	}
	return "PROXY protocol error"
}

// Unwrap returns the read error, if any.
func (e *Error) Unwrap() error { return e.Err }

// ErrIncomplete is returned by Parse when b is a valid beginning of a
// header: more bytes are needed.
var ErrIncomplete = errors.New("proxyproto: incomplete header")

// The parse errors, shared (Parse does not allocate for them).
var (
	errNotHeader = &Error{Code: NotHeader}
	errBadHeader = &Error{Code: BadHeader}
	errBadProto  = &Error{Code: BadProto}
)

// Parse decodes the header at the start of b and returns it with its
// length in bytes. It returns ErrIncomplete when b is a prefix of a header
// that may still be valid, or a *Error (NotHeader, BadHeader, BadProto).
// The returned TLV values are copied: b may be reused.
func Parse(b []byte) (h Header, n int, err error) {
	switch {
	case len(b) == 0:
		return h, 0, ErrIncomplete
	case b[0] == 'P':
		if len(b) < len(sigV1) {
			if bytes.HasPrefix(sigV1, b) {
				return h, 0, ErrIncomplete
			}
			return h, 0, errNotHeader
		}
		if !bytes.HasPrefix(b, sigV1) {
			return h, 0, errNotHeader
		}
		return parseV1(b)
	case b[0] == '\r':
		if len(b) < len(sigV2) {
			if bytes.HasPrefix(sigV2, b) {
				return h, 0, ErrIncomplete
			}
			return h, 0, errNotHeader
		}
		if !bytes.HasPrefix(b, sigV2) {
			return h, 0, errNotHeader
		}
		return parseV2(b)
	}
	return h, 0, errNotHeader
}

// parseV1 decodes a version 1 line; b starts with "PROXY ".
func parseV1(b []byte) (h Header, n int, err error) {
	h.Version = 1
	limit := min(len(b), MaxV1Len)
	end := -1
	for i := len(sigV1); i < limit; i++ {
		if b[i] == '\n' {
			return h, 0, errBadHeader // a lone LF
		}
		if b[i] == '\r' {
			if i+1 >= len(b) {
				if i+1 >= MaxV1Len {
					return h, 0, errBadHeader
				}
				return h, 0, ErrIncomplete
			}
			if b[i+1] != '\n' {
				return h, 0, errBadHeader // a lone CR
			}
			end = i
			break
		}
	}
	if end < 0 {
		if len(b) >= MaxV1Len {
			return h, 0, errBadHeader // no CRLF in the first 107 bytes
		}
		return h, 0, ErrIncomplete
	}
	n = end + 2
	line := b[len(sigV1):end]
	proto, rest, _ := bytes.Cut(line, []byte(" "))
	switch string(proto) {
	case "UNKNOWN":
		// Anything may follow; the receiver uses the real addresses.
		h.Command = Local
		return h, n, nil
	case "TCP4":
		h.Family = 0x11
	case "TCP6":
		h.Family = 0x21
	default:
		return h, 0, errBadProto
	}
	var f [4][]byte
	for i := range f {
		j := bytes.IndexByte(rest, ' ')
		if i == len(f)-1 {
			j = len(rest)
		}
		if j < 0 {
			return h, 0, errBadHeader
		}
		f[i], rest = rest[:j], rest[min(j+1, len(rest)):]
	}
	if bytes.IndexByte(f[3], ' ') >= 0 {
		return h, 0, errBadHeader
	}
	src, ok1 := parseV1Addr(f[0], h.Family == 0x21)
	dst, ok2 := parseV1Addr(f[1], h.Family == 0x21)
	sp, ok3 := parsePort(f[2])
	dp, ok4 := parsePort(f[3])
	if !ok1 || !ok2 || !ok3 || !ok4 {
		return h, 0, errBadHeader
	}
	h.Command = Proxy
	h.Src = netip.AddrPortFrom(src, sp)
	h.Dst = netip.AddrPortFrom(dst, dp)
	return h, n, nil
}

// parseV1Addr parses an address of a version 1 line: a dotted quad
// without leading zeroes for TCP4, an IPv6 address without zone for TCP6.
func parseV1Addr(s []byte, v6 bool) (netip.Addr, bool) {
	if !v6 {
		return parseIPv4(s)
	}
	if len(s) < 2 || len(s) > 39 || bytes.IndexByte(s, ':') < 0 || bytes.IndexByte(s, '%') >= 0 {
		return netip.Addr{}, false
	}
	a, err := netip.ParseAddr(string(s))
	if err != nil || !a.Is6() {
		return netip.Addr{}, false
	}
	return a, true
}

// parseIPv4 parses a dotted quad without allocating.
func parseIPv4(s []byte) (netip.Addr, bool) {
	var a [4]byte
	for i := range a {
		j := bytes.IndexByte(s, '.')
		if i == 3 {
			j = len(s)
		}
		if j < 0 {
			return netip.Addr{}, false
		}
		v, ok := parseDecimal(s[:j], 255)
		if !ok {
			return netip.Addr{}, false
		}
		a[i], s = byte(v), s[min(j+1, len(s)):]
	}
	return netip.AddrFrom4(a), true
}

// parsePort parses a decimal port 0..65535 without leading zeroes.
func parsePort(s []byte) (uint16, bool) {
	v, ok := parseDecimal(s, 65535)
	return uint16(v), ok
}

// parseDecimal parses 0..limit written without sign nor leading zeroes.
func parseDecimal(s []byte, limit int) (int, bool) {
	if len(s) == 0 || len(s) > 5 || (len(s) > 1 && s[0] == '0') {
		return 0, false
	}
	v := 0
	for _, c := range s {
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + int(c-'0')
	}
	if v > limit {
		return 0, false
	}
	return v, true
}

// parseV2 decodes a version 2 header; b starts with its signature.
func parseV2(b []byte) (h Header, n int, err error) {
	h.Version = 2
	if len(b) < v2HeadLen {
		return h, 0, ErrIncomplete
	}
	verCmd, fam := b[12], b[13]
	if verCmd>>4 != 2 {
		return h, 0, errBadHeader
	}
	cmd := verCmd & 0x0f
	if cmd > 1 {
		return h, 0, errBadHeader
	}
	n = v2HeadLen + int(binary.BigEndian.Uint16(b[14:16]))
	if n > MaxV2Len {
		return h, 0, errBadHeader
	}
	if len(b) < n {
		return h, 0, ErrIncomplete
	}
	body := b[v2HeadLen:n]
	// The address block's size by family; families the specification
	// does not define are refused.
	var alen int
	switch fam {
	case 0x00:
	case 0x11, 0x12:
		alen = 12
	case 0x21, 0x22:
		alen = 36
	case 0x31, 0x32:
		alen = 216
	default:
		return h, 0, errBadProto
	}
	h.Family = fam
	if cmd == 1 && len(body) < alen {
		return h, 0, errBadHeader
	}
	if cmd == 0 || fam == 0 {
		// LOCAL, or UNSPEC: the address information is ignored, and
		// with it whatever follows (no address length to find the TLVs
		// by).
		h.Command = Local
		return h, n, nil
	}
	h.Command = Proxy
	switch fam >> 4 {
	case 1:
		h.Src = netip.AddrPortFrom(netip.AddrFrom4([4]byte(body[0:4])), binary.BigEndian.Uint16(body[8:10]))
		h.Dst = netip.AddrPortFrom(netip.AddrFrom4([4]byte(body[4:8])), binary.BigEndian.Uint16(body[10:12]))
	case 2:
		h.Src = netip.AddrPortFrom(netip.AddrFrom16([16]byte(body[0:16])), binary.BigEndian.Uint16(body[32:34]))
		h.Dst = netip.AddrPortFrom(netip.AddrFrom16([16]byte(body[16:32])), binary.BigEndian.Uint16(body[34:36]))
	default:
		// AF_UNIX: relayed, but not an address fulcrum can use as a
		// client address; the connection's own are kept.
		h.Command = Local
	}
	if err := parseTLVs(&h, b[:n], v2HeadLen+alen); err != nil {
		return Header{}, 0, err
	}
	return h, n, nil
}

// castagnoli is the CRC32c table of TypeCRC32C.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// parseTLVs decodes the TLVs of hdr (the whole header) from offset off,
// copying their values, and checks a CRC32c TLV.
func parseTLVs(h *Header, hdr []byte, off int) error {
	if off >= len(hdr) {
		return nil
	}
	region := bytes.Clone(hdr[off:])
	crcAt := -1
	for i := 0; i < len(region); {
		if len(region)-i < 3 {
			return errBadHeader
		}
		t := region[i]
		l := int(binary.BigEndian.Uint16(region[i+1 : i+3]))
		if len(region)-i-3 < l {
			return errBadHeader
		}
		v := region[i+3 : i+3+l : i+3+l]
		if t == TypeCRC32C {
			if l != 4 || crcAt >= 0 {
				return errBadHeader
			}
			crcAt = off + i + 3
		}
		h.TLVs = append(h.TLVs, TLV{Type: t, Value: v})
		i += 3 + l
	}
	if crcAt >= 0 {
		want := binary.BigEndian.Uint32(hdr[crcAt : crcAt+4])
		c := crc32.Update(0, castagnoli, hdr[:crcAt])
		c = crc32.Update(c, castagnoli, []byte{0, 0, 0, 0})
		c = crc32.Update(c, castagnoli, hdr[crcAt+4:])
		if c != want {
			return errBadHeader
		}
	}
	return nil
}
