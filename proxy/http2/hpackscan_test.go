package http2

import (
	"bytes"
	"strings"
	"testing"

	"golang.org/x/net/http2/hpack"
)

// scanBlock encodes fields (name, value pairs) with a fresh encoder.
func scanBlock(kv ...string) []byte {
	var buf bytes.Buffer
	enc := hpack.NewEncoder(&buf)
	for i := 0; i+1 < len(kv); i += 2 {
		enc.WriteField(hpack.HeaderField{Name: kv[i], Value: kv[i+1], Sensitive: i%6 == 4})
	}
	return buf.Bytes()
}

// TestRepScan: the scan follows every representation kind (indexed,
// literals with and without indexing, never indexed, new names, Huffman
// and raw strings, multi-byte integers) split at every byte; a size
// update before the first field passes, one after a field — in the same
// fragment or the next — is refused.
func TestRepScan(t *testing.T) {
	long := strings.Repeat("v", 300) // a multi-byte string length
	fields := scanBlock(":method", "GET", ":path", "/a?b", ":authority", "example.com",
		"x-new-name", long, "cookie", "k=v", "user-agent", "t", ":method", "GET", "x-new-name", long, "x-end", "last")
	// Two size updates (4096: a multi-byte integer, then 0) may start it.
	good := append([]byte{0x3f, 0xe1, 0x1f, 0x20}, fields...)
	for cut := 0; cut <= len(good); cut++ {
		var s repScan
		if err := s.feed(good[:cut]); err != nil {
			t.Fatalf("cut %d: %v", cut, err)
		}
		if err := s.feed(good[cut:]); err != nil {
			t.Fatalf("cut %d: %v", cut, err)
		}
		if !s.boundary() {
			t.Fatalf("cut %d: not at a representation's end", cut)
		}
	}
	var s repScan
	s.feed(good[:len(good)-1])
	if s.boundary() {
		t.Fatal("a block short of its last byte ends on a boundary")
	}
	bad := append(append([]byte(nil), fields...), 0x20)
	for cut := 0; cut <= len(bad); cut++ {
		var s repScan
		err := s.feed(bad[:cut])
		if err == nil {
			err = s.feed(bad[cut:])
		}
		if err != errLateSizeUpdate {
			t.Fatalf("cut %d: %v, want errLateSizeUpdate", cut, err)
		}
	}
	// reset starts a new block: its size update comes first again.
	s.reset()
	if err := s.feed([]byte{0x20, 0x82}); err != nil {
		t.Fatal(err)
	}
}
