package http2

import (
	"strings"
	"testing"

	xh2 "golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// block encodes fields (name, value pairs) with rc's encoder.
func (rc *rawClient) block(kv ...string) []byte {
	rc.buf.Reset()
	for i := 0; i+1 < len(kv); i += 2 {
		rc.enc.WriteField(hpack.HeaderField{Name: kv[i], Value: kv[i+1]})
	}
	return append([]byte(nil), rc.buf.Bytes()...)
}

// TestEngineHeaderBlocks: the engine's own decoding of header blocks
// (hblock.go) makes the Framer's checks: each malformed head resets its
// stream with PROTOCOL_ERROR and is counted, the connection going on; a
// head split over CONTINUATION frames is served; a CONTINUATION after a
// malformed field, and a block that does not decode, end the connection
// (GOAWAY PROTOCOL_ERROR, COMPRESSION_ERROR).
func TestEngineHeaderBlocks(t *testing.T) {
	e := startEngine(t, 0, 0, sizedHandler)
	rc := dial(t, e.addr)
	rc.handshake()
	get := []string{":method", "GET", ":scheme", "http", ":authority", "x", ":path", "/2"}
	bad := [][]string{
		append(append([]string{}, get...), "X-Upper", "v"),
		append(append([]string{}, get...), "x-ctl", "a\x00b"),
		{":method", "GET", ":scheme", "http", "x-a", "b", ":authority", "x", ":path", "/2"},
		append(append([]string{}, get...), ":path", "/3"),
		append(append([]string{}, get...), ":foo", "1"),
		append(append([]string{}, get...), ":status", "200"),
		append(append([]string{}, get...), "", "v"),
	}
	id := uint32(1)
	for i, kv := range bad {
		rc.fr.WriteHeaders(xh2.HeadersFrameParam{StreamID: id, BlockFragment: rc.block(kv...), EndStream: true, EndHeaders: true})
		f, ok := rc.next().(*xh2.RSTStreamFrame)
		if !ok || f.StreamID != id || f.ErrCode != xh2.ErrCodeProtocol {
			t.Fatalf("head %d %q: got %v, want RST_STREAM %d PROTOCOL_ERROR", i, kv, f, id)
		}
		id += 2
	}
	if n := e.cs.StrmProtoErr.Load(); n != int64(len(bad)) {
		t.Errorf("stream errors counted: %d, want %d", n, len(bad))
	}
	// A good head in three frames, its body "xx".
	b := rc.block(append(append([]string{}, get...), "x-long", "0123456789")...)
	rc.fr.WriteHeaders(xh2.HeadersFrameParam{StreamID: id, BlockFragment: b[:3], EndStream: true})
	rc.fr.WriteContinuation(id, false, b[3:10])
	rc.fr.WriteContinuation(id, true, b[10:])
	rc.whole(id, 2)
	id += 2

	// A CONTINUATION after a malformed field.
	b = rc.block(append(append([]string{}, get...), "X-Upper", "v")...)
	rc.fr.WriteHeaders(xh2.HeadersFrameParam{StreamID: id, BlockFragment: b, EndStream: true})
	rc.fr.WriteContinuation(id, true, nil)
	if ga, ok := rc.next().(*xh2.GoAwayFrame); !ok || ga.ErrCode != xh2.ErrCodeProtocol {
		t.Fatalf("got %v, want GOAWAY PROTOCOL_ERROR", ga)
	}

	// A block that does not decode: index 200 is in neither table.
	rc2 := dial(t, e.addr)
	rc2.handshake()
	rc2.fr.WriteHeaders(xh2.HeadersFrameParam{StreamID: 1, BlockFragment: []byte{0x80 | 0x7f, 200 - 127}, EndStream: true, EndHeaders: true})
	if ga, ok := rc2.next().(*xh2.GoAwayFrame); !ok || ga.ErrCode != xh2.ErrCodeCompression {
		t.Fatalf("got %v, want GOAWAY COMPRESSION_ERROR", ga)
	}

	// A dynamic table size update after a field (RFC 7541 4.2), which
	// x/net's decoder lets pass while its table is empty: in the block's
	// only fragment, in its CONTINUATION, and as the byte after an
	// :authority whose length was cut short (".com" of "example.com":
	// '.' is 001 01110). Each ends the connection as HAProxy 2.6 does.
	// Fields from the static table only (:method GET, :scheme http,
	// :path /): the decoder's table stays empty.
	static := []byte{0x82, 0x86, 0x84}
	late := append(append([]byte(nil), static...), 0x20)
	authority := append([]byte{0x01, 7}, "example.com"...)
	for i, frags := range [][][]byte{
		{late},
		{late[:len(late)-1], late[len(late)-1:]},
		{append(append([]byte(nil), static...), authority...)},
	} {
		rc3 := dial(t, e.addr)
		rc3.handshake()
		rc3.fr.WriteHeaders(xh2.HeadersFrameParam{StreamID: 1, BlockFragment: frags[0], EndStream: true, EndHeaders: len(frags) == 1})
		if len(frags) > 1 {
			rc3.fr.WriteContinuation(1, true, frags[1])
		}
		if ga, ok := rc3.next().(*xh2.GoAwayFrame); !ok || ga.ErrCode != xh2.ErrCodeCompression {
			t.Fatalf("late size update %d: got %v, want GOAWAY COMPRESSION_ERROR", i, ga)
		}
	}
	// Size updates before the first field are served.
	rc4 := dial(t, e.addr)
	rc4.handshake()
	early := append([]byte{0x3f, 0xe1, 0x1f, 0x20}, rc4.block(get...)...)
	rc4.fr.WriteHeaders(xh2.HeadersFrameParam{StreamID: 1, BlockFragment: early, EndStream: true, EndHeaders: true})
	rc4.whole(1, 2)
}

// TestEngineHeaderBombs: the engine's reader refuses a header list larger
// than maxHeaderList once decoded, as the guard did when it decoded every
// block a second time: an HPACK bomb (one 4 KB field referenced from the
// dynamic table), the same after a malformed field (every field counts),
// and a Huffman-coded string longer than the list may be, each ending the
// connection with GOAWAY COMPRESSION_ERROR and counted as a header flood;
// a list just within the limit is served.
func TestEngineHeaderBombs(t *testing.T) {
	e := startEngine(t, 0, 0, sizedHandler)
	get := []string{":method", "GET", ":scheme", "http", ":authority", "x", ":path", "/2"}
	big := strings.Repeat("b", 4000)
	// 4 pseudo-headers (167 bytes with their 32 each), then n fields of
	// 6+4000+32 = 4038 bytes each.
	withBig := func(pre []string, n int) []string {
		kv := append([]string(nil), pre...)
		for range n {
			kv = append(kv, "x-bomb", big)
		}
		return kv
	}
	for i, tc := range []struct {
		kv     []string
		bomb   bool
		floods int64
	}{
		{withBig(get, 16), false, 0}, // 64,775 bytes: within 65,536
		{withBig(get, 17), true, 1},  // 68,813 bytes
		{withBig(append(append([]string{}, get...), "X-Upper", "v"), 17), true, 2},
	} {
		rc := dial(t, e.addr)
		rc.handshake()
		b := rc.block(tc.kv...)
		rc.fr.WriteHeaders(xh2.HeadersFrameParam{StreamID: 1, BlockFragment: b, EndStream: true, EndHeaders: true})
		if !tc.bomb {
			rc.whole(1, 2)
		} else if ga, ok := rc.next().(*xh2.GoAwayFrame); !ok || ga.ErrCode != xh2.ErrCodeCompression {
			t.Fatalf("list %d: got %v, want GOAWAY COMPRESSION_ERROR", i, ga)
		}
		if n := e.cs.HeaderFlood.Load(); n != tc.floods {
			t.Fatalf("list %d: header floods counted %d, want %d", i, n, tc.floods)
		}
	}
	// A string longer than the whole list may be, Huffman-coded: 70,000
	// 'a's (5 bits each) in 43,750 bytes on the wire.
	rc := dial(t, e.addr)
	rc.handshake()
	b := rc.block(append(append([]string{}, get...), "x-long", strings.Repeat("a", 70000))...)
	rc.fr.WriteHeaders(xh2.HeadersFrameParam{StreamID: 1, BlockFragment: b[:16000], EndStream: true})
	rc.fr.WriteContinuation(1, false, b[16000:32000])
	rc.fr.WriteContinuation(1, true, b[32000:])
	if ga, ok := rc.next().(*xh2.GoAwayFrame); !ok || ga.ErrCode != xh2.ErrCodeCompression {
		t.Fatalf("long string: got %v, want GOAWAY COMPRESSION_ERROR", ga)
	}
	if n := e.cs.HeaderFlood.Load(); n != 3 {
		t.Fatalf("long string: header floods counted %d, want 3", n)
	}
}
