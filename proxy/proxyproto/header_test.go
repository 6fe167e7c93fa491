package proxyproto

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
	"net/netip"
	"strings"
	"testing"
)

// v2 builds a version 2 header: ver/cmd byte, family byte, then body.
func v2(verCmd, fam byte, body ...[]byte) []byte {
	b := append([]byte{}, sigV2...)
	b = append(b, verCmd, fam, 0, 0)
	for _, p := range body {
		b = append(b, p...)
	}
	binary.BigEndian.PutUint16(b[14:], uint16(len(b)-16))
	return b
}

var (
	addr4 = []byte{192, 0, 2, 1, 198, 51, 100, 7, 0xdc, 0x04, 0x01, 0xbb} // 192.0.2.1:56324 -> 198.51.100.7:443
	addr6 = append(append(append([]byte{}, netip.MustParseAddr("2001:db8::1").AsSlice()...),
		netip.MustParseAddr("2001:db8::2").AsSlice()...), 0x30, 0x39, 0x00, 0x50) // :12345 -> :80
)

func TestParse(t *testing.T) {
	ap := netip.MustParseAddrPort
	withCRC := func(b []byte) []byte {
		// a CRC32c TLV, computed over the header with a zero field
		b = append(b, TypeCRC32C, 0, 4, 0, 0, 0, 0)
		binary.BigEndian.PutUint16(b[14:], uint16(len(b)-16))
		binary.BigEndian.PutUint32(b[len(b)-4:], crc32.Checksum(b, castagnoli))
		return b
	}
	cases := []struct {
		name     string
		in       string
		cmd      Command
		src, dst string
		n        int
		tlvs     int
	}{
		{"v1 tcp4", "PROXY TCP4 192.0.2.1 198.51.100.7 56324 443\r\nGET /", Proxy, "192.0.2.1:56324", "198.51.100.7:443", 45, 0},
		{"v1 tcp6", "PROXY TCP6 2001:db8::1 2001:db8::2 12345 80\r\n", Proxy, "[2001:db8::1]:12345", "[2001:db8::2]:80", 45, 0},
		{"v1 tcp6 mapped", "PROXY TCP6 ::ffff:192.0.2.1 ::1 0 65535\r\n", Proxy, "[::ffff:192.0.2.1]:0", "[::1]:65535", 41, 0},
		{"v1 unknown short", "PROXY UNKNOWN\r\n", Local, "", "", 15, 0},
		{"v1 unknown long", "PROXY UNKNOWN ffff:f::ffff ffff::1 65535 65535\r\nxx", Local, "", "", 48, 0},
		{"v2 tcp4", string(v2(0x21, 0x11, addr4)) + "data", Proxy, "192.0.2.1:56324", "198.51.100.7:443", 28, 0},
		{"v2 tcp6", string(v2(0x21, 0x21, addr6)), Proxy, "[2001:db8::1]:12345", "[2001:db8::2]:80", 52, 0},
		{"v2 udp4", string(v2(0x21, 0x12, addr4)), Proxy, "192.0.2.1:56324", "198.51.100.7:443", 28, 0},
		{"v2 local with addresses", string(v2(0x20, 0x11, addr4)), Local, "", "", 28, 0},
		{"v2 local empty", string(v2(0x20, 0x00)), Local, "", "", 16, 0},
		{"v2 unspec", string(v2(0x21, 0x00, []byte{1, 2, 3})), Local, "", "", 19, 0},
		{"v2 unix", string(v2(0x21, 0x31, make([]byte, 216))), Local, "", "", 232, 0},
		{"v2 tlvs", string(v2(0x21, 0x11, addr4, []byte{TypeAuthority, 0, 3, 'a', '.', 'b', TypeNoop, 0, 0})), Proxy, "192.0.2.1:56324", "198.51.100.7:443", 37, 2},
		{"v2 crc32c", string(withCRC(v2(0x21, 0x11, addr4))), Proxy, "192.0.2.1:56324", "198.51.100.7:443", 35, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h, n, err := Parse([]byte(c.in))
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if n != c.n || h.Command != c.cmd || len(h.TLVs) != c.tlvs {
				t.Fatalf("got n=%d cmd=%d tlvs=%d, want n=%d cmd=%d tlvs=%d", n, h.Command, len(h.TLVs), c.n, c.cmd, c.tlvs)
			}
			if c.src != "" && (h.Src != ap(c.src) || h.Dst != ap(c.dst)) {
				t.Fatalf("got %v -> %v, want %s -> %s", h.Src, h.Dst, c.src, c.dst)
			}
			if c.src == "" && (h.Src.IsValid() || h.Dst.IsValid()) {
				t.Fatalf("got addresses %v -> %v for a local header", h.Src, h.Dst)
			}
			// Every strict prefix is incomplete, never an error.
			for i := range c.n {
				if _, _, err := Parse([]byte(c.in[:i])); err != ErrIncomplete {
					t.Fatalf("prefix of %d bytes: got %v, want ErrIncomplete", i, err)
				}
			}
		})
	}
}

func TestParseRefused(t *testing.T) {
	long := "PROXY UNKNOWN " + strings.Repeat("a", 100) + "\r\n"
	badCRC := v2(0x21, 0x11, addr4, []byte{TypeCRC32C, 0, 4, 1, 2, 3, 4})
	cases := []struct {
		name string
		in   string
		code Code
	}{
		{"http", "GET / HTTP/1.1\r\n", NotHeader},
		{"tls", "\x16\x03\x01\x00", NotHeader},
		{"lower case", "proxy TCP4", NotHeader},
		{"v1 no space", "PROXYTCP4", NotHeader},
		{"v2 bad signature", "\r\n\r\n\x00\r\nQUIX\n\x21\x11\x00\x00", NotHeader},
		{"v1 udp", "PROXY UDP4 1.2.3.4 1.2.3.5 1 2\r\n", BadProto},
		{"v1 lone LF", "PROXY TCP4 1.2.3.4 1.2.3.5 1 2\n", BadHeader},
		{"v1 lone CR", "PROXY TCP4 1.2.3.4 1.2.3.5 1 2\rX", BadHeader},
		{"v1 too long", long, BadHeader},
		{"v1 no CRLF in 107", "PROXY UNKNOWN " + strings.Repeat("a", 93), BadHeader},
		{"v1 two spaces", "PROXY TCP4 1.2.3.4  1.2.3.5 1 2\r\n", BadHeader},
		{"v1 missing port", "PROXY TCP4 1.2.3.4 1.2.3.5 1\r\n", BadHeader},
		{"v1 extra field", "PROXY TCP4 1.2.3.4 1.2.3.5 1 2 3\r\n", BadHeader},
		{"v1 leading zero port", "PROXY TCP4 1.2.3.4 1.2.3.5 01 2\r\n", BadHeader},
		{"v1 port too big", "PROXY TCP4 1.2.3.4 1.2.3.5 65536 2\r\n", BadHeader},
		{"v1 signed port", "PROXY TCP4 1.2.3.4 1.2.3.5 +1 2\r\n", BadHeader},
		{"v1 octal address", "PROXY TCP4 01.2.3.4 1.2.3.5 1 2\r\n", BadHeader},
		{"v1 v6 in tcp4", "PROXY TCP4 ::1 ::1 1 2\r\n", BadHeader},
		{"v1 v4 in tcp6", "PROXY TCP6 1.2.3.4 1.2.3.5 1 2\r\n", BadHeader},
		{"v1 zone", "PROXY TCP6 fe80::1%eth0 ::1 1 2\r\n", BadHeader},
		{"v1 empty", "PROXY \r\n", BadProto},
		{"v2 version 1", string(v2(0x11, 0x11, addr4)), BadHeader},
		{"v2 command 2", string(v2(0x22, 0x11, addr4)), BadHeader},
		{"v2 family 4", string(v2(0x21, 0x41, addr4)), BadProto},
		{"v2 protocol 3", string(v2(0x21, 0x13, addr4)), BadProto},
		{"v2 short tcp4", string(v2(0x21, 0x11, addr4[:11])), BadHeader},
		{"v2 short tcp6", string(v2(0x21, 0x21, addr4)), BadHeader},
		{"v2 tlv overflow", string(v2(0x21, 0x11, addr4, []byte{TypeAuthority, 0, 9, 'a'})), BadHeader},
		{"v2 tlv stub", string(v2(0x21, 0x11, addr4, []byte{TypeNoop, 0})), BadHeader},
		{"v2 crc32c wrong", string(badCRC), BadHeader},
		{"v2 crc32c short", string(v2(0x21, 0x11, addr4, []byte{TypeCRC32C, 0, 2, 1, 2})), BadHeader},
		{"v2 too long", string(sigV2) + "\x21\x11\xff\xff", BadHeader},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, n, err := Parse([]byte(c.in))
			var pe *Error
			if !errors.As(err, &pe) || pe.Code != c.code {
				t.Fatalf("got n=%d err=%v, want code %d (%s)", n, err, c.code, (&Error{Code: c.code}).Error())
			}
		})
	}
}

// TestErrorText: the messages are HAProxy's (conn_err_code_str), which
// operators grep logs for.
func TestErrorText(t *testing.T) {
	want := map[Code]string{
		Empty:     "Connection closed while waiting for PROXY protocol header",
		Timeout:   "Timeout while waiting for PROXY protocol header",
		Truncated: "Truncated PROXY protocol header received",
		NotHeader: "Received something which does not look like a PROXY protocol header",
		BadHeader: "Received an invalid PROXY protocol header",
		BadProto:  "Received an unhandled protocol in the PROXY protocol header",
	}
	for c, w := range want {
		if got := (&Error{Code: c}).Error(); got != w {
			t.Errorf("code %d: got %q, want %q", c, got, w)
		}
	}
}

func TestWrite(t *testing.T) {
	ap := netip.MustParseAddrPort
	cases := []struct {
		name   string
		h      Header
		v1     string
		v2fam  byte
		v2cmd  Command
		v2tlvs int
	}{
		{"tcp4", Header{Command: Proxy, Src: ap("192.0.2.1:56324"), Dst: ap("198.51.100.7:443")}, "PROXY TCP4 192.0.2.1 198.51.100.7 56324 443\r\n", 0x11, Proxy, 0},
		{"mapped", Header{Command: Proxy, Src: ap("[::ffff:192.0.2.1]:1"), Dst: ap("[::ffff:10.0.0.1]:2")}, "PROXY TCP4 192.0.2.1 10.0.0.1 1 2\r\n", 0x11, Proxy, 0},
		{"tcp6", Header{Command: Proxy, Src: ap("[2001:db8::1]:1"), Dst: ap("[::1]:2")}, "PROXY TCP6 2001:db8::1 ::1 1 2\r\n", 0x21, Proxy, 0},
		{"mixed", Header{Command: Proxy, Src: ap("192.0.2.1:1"), Dst: ap("[::1]:2")}, "PROXY UNKNOWN\r\n", 0x00, Local, 0},
		{"local", Header{Command: Local}, "PROXY UNKNOWN\r\n", 0x00, Local, 0},
		{"tlvs and crc", Header{Command: Proxy, Src: ap("192.0.2.1:1"), Dst: ap("192.0.2.2:2"),
			TLVs: []TLV{{Type: TypeAuthority, Value: []byte("example.com")}, {Type: TypeCRC32C}}}, "PROXY TCP4 192.0.2.1 192.0.2.2 1 2\r\n", 0x11, Proxy, 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := string(c.h.AppendV1(nil)); got != c.v1 {
				t.Fatalf("v1: got %q, want %q", got, c.v1)
			}
			b := c.h.AppendV2([]byte("x"))[1:]
			h, n, err := Parse(b)
			if err != nil || n != len(b) {
				t.Fatalf("v2 reparse: n=%d/%d err=%v", n, len(b), err)
			}
			if h.Family != c.v2fam || h.Command != c.v2cmd || len(h.TLVs) != c.v2tlvs {
				t.Fatalf("v2: got fam %#x cmd %d tlvs %d", h.Family, h.Command, len(h.TLVs))
			}
			if c.v2cmd == Proxy && (h.Src.Addr().Unmap() != c.h.Src.Addr().Unmap() || h.Dst.Port() != c.h.Dst.Port()) {
				t.Fatalf("v2: got %v -> %v", h.Src, h.Dst)
			}
			if v, ok := h.TLV(TypeAuthority); c.v2tlvs > 0 && (!ok || string(v) != "example.com") {
				t.Fatalf("v2 authority: got %q %v", v, ok)
			}
		})
	}
}
