package proxyproto

import (
	"bytes"
	"errors"
	"testing"
)

// FuzzParse: Parse never panics nor claims bytes it was not given; what it
// accepts re-encodes to a header that parses to the same addresses; and
// reading the same bytes as a stream (readExact) agrees with it and never
// reads past the header.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"PROXY TCP4 192.0.2.1 198.51.100.7 56324 443\r\n",
		"PROXY TCP6 2001:db8::1 2001:db8::2 12345 80\r\nGET",
		"PROXY UNKNOWN\r\n",
		"PROXY TCP4 1.2.3.4 1.2.3.5 1 2\n",
		string(v2(0x21, 0x11, addr4)),
		string(v2(0x21, 0x21, addr6, []byte{TypeAuthority, 0, 1, 'a'})),
		string(v2(0x20, 0x00)),
		string(v2(0x21, 0x11, addr4, []byte{TypeCRC32C, 0, 4, 0, 0, 0, 0})),
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		h, n, err := Parse(b)
		if err == ErrIncomplete {
			return
		}
		var pe *Error
		if err != nil {
			if !errors.As(err, &pe) {
				t.Fatalf("error of type %T: %v", err, err)
			}
		} else {
			if n <= 0 || n > len(b) {
				t.Fatalf("n=%d for %d bytes", n, len(b))
			}
			if h.Version == 1 && n > MaxV1Len || h.Version == 2 && n > MaxV2Len {
				t.Fatalf("header of %d bytes accepted", n)
			}
			if h.Command == Proxy {
				for _, enc := range [][]byte{h.AppendV1(nil), h.AppendV2(nil)} {
					h2, n2, err := Parse(enc)
					if err != nil || n2 != len(enc) {
						t.Fatalf("re-encoded %q: %v", enc, err)
					}
					if h2.Command == Proxy && (h2.Src.Addr().Unmap() != h.Src.Addr().Unmap() || h2.Dst.Port() != h.Dst.Port()) {
						t.Fatalf("re-encoded %q: got %v -> %v, want %v -> %v", enc, h2.Src, h2.Dst, h.Src, h.Dst)
					}
				}
			}
		}
		cr := &countReader{r: bytes.NewReader(b)}
		_, rerr := readExact(cr)
		if err == nil {
			if rerr != nil || cr.n != n {
				t.Fatalf("stream read: %v after %d bytes, header is %d", rerr, cr.n, n)
			}
		} else if rerr == nil {
			t.Fatalf("stream read accepted what Parse refused (%v)", err)
		}
	})
}
