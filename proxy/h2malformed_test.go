package proxy

import (
	"slices"
	"testing"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// An HTTP/2 request whose :path or :method an HTTP/1 request line could
// not carry is reset with PROTOCOL_ERROR and never reaches a server (it
// reached an HTTP/1.1 server as "GET /a b HTTP/1.1"); each is logged
// PR-- "<BADREQ>" and counted neither in ereq nor in req_tot, as HAProxy
// 2.6.12 does (measured side by side), while good streams on the same
// connection are served.
func TestH2MalformedHeadRefused(t *testing.T) {
	up := newUpstream(t, "s1")
	p, addr, logs := startLogged(t, h2Config([]string{up.addr()}, ""))
	f := dialFramer(t, addr)
	cases := []struct{ method, path string }{
		{"GET", "/a b"},
		{"GET", "/a#b"},
		{"GET", "abc"},
		{"GET", "http://z/p"},
		{"GET", "/a\tb"},
		{"GET", "/caf\xc3\xa9"},
		{"GET", "*"},
	}
	head := func(method, path string) []byte {
		f.buf.Reset()
		for _, kv := range [][2]string{{":method", method}, {":scheme", "http"}, {":authority", "x"}, {":path", path}} {
			f.enc.WriteField(hpack.HeaderField{Name: kv[0], Value: kv[1]})
		}
		return append([]byte(nil), f.buf.Bytes()...)
	}
	id := uint32(1)
	for _, c := range cases {
		f.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: head(c.method, c.path), EndStream: true, EndHeaders: true})
		id += 2
	}
	// Good ones on the same connection: OPTIONS * (Go's server answers
	// it itself, 200) and a path with an encoded space.
	f.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: head("OPTIONS", "*"), EndStream: true, EndHeaders: true})
	f.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id + 2, BlockFragment: head("GET", "/ok?a=b%20c"), EndStream: true, EndHeaders: true})
	// A method that is not a token: HAProxy answers 400 (ereq, req_tot).
	f.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id + 4, BlockFragment: head("GE T", "/"), EndStream: true, EndHeaders: true})
	good := map[uint32]bool{id: true, id + 2: true, id + 4: true}
	resets := map[uint32]http2.ErrCode{}
	var statuses []string
	dec := hpack.NewDecoder(4096, func(hf hpack.HeaderField) {
		if hf.Name == ":status" {
			statuses = append(statuses, hf.Value)
		}
	})
	for len(statuses) < 3 || len(resets) < len(cases) {
		fr, err := f.fr.ReadFrame()
		if err != nil {
			t.Fatalf("after %d resets, statuses %q: %v", len(resets), statuses, err)
		}
		switch fr := fr.(type) {
		case *http2.RSTStreamFrame:
			resets[fr.StreamID] = fr.ErrCode
		case *http2.HeadersFrame:
			if !good[fr.StreamID] {
				t.Fatalf("stream %d answered %v", fr.StreamID, fr)
			}
			dec.Write(fr.HeaderBlockFragment())
		case *http2.GoAwayFrame:
			t.Fatalf("GOAWAY %v", fr.ErrCode)
		}
	}
	for i, c := range cases {
		if code, ok := resets[uint32(1+2*i)]; !ok || code != http2.ErrCodeProtocol {
			t.Errorf("%q %q: reset %v (%v), want PROTOCOL_ERROR", c.method, c.path, code, ok)
		}
	}
	slices.Sort(statuses)
	if len(statuses) != 3 || statuses[0] != "200" || statuses[1] != "200" || statuses[2] != "400" {
		t.Errorf("good streams: statuses %q, want the server's 200s and a 400", statuses)
	}
	if n := up.requests.Load(); n != 1 {
		t.Errorf("the server's handler got %d requests, want 1 (GET /ok)", n)
	}
	var bad int
	waitFor(t, 5e9, "the log lines", func() bool {
		bad = 0
		for _, l := range logLines(t, logs) {
			if l["termination_state"] == "PR" && l["request"] == "<BADREQ>" {
				bad++
			}
		}
		return bad == len(cases)+1
	})
	if fe := p.Snapshot().Frontends[0].CounterValues; fe.Ereq != 1 || fe.ReqTot != 3 || fe.Hrsp4xx != 1 {
		t.Errorf("ereq %d, req_tot %d, hrsp_4xx %d, want 1, 3 (the good streams and GE T) and 1", fe.Ereq, fe.ReqTot, fe.Hrsp4xx)
	}
}

// A request header block refused while it is decoded is logged PR--
// "<BADREQ>" with no counter moved, as HAProxy 2.6 does (measured side by
// side): a field name in upper case (its stream reset with
// PROTOCOL_ERROR, the connection going on) and an HPACK dynamic table
// size update after a field (GOAWAY COMPRESSION_ERROR, RFC 7541 4.2).
func TestH2UndecodedHeadLogged(t *testing.T) {
	up := newUpstream(t, "s1")
	p, addr, logs := startLogged(t, h2Config([]string{up.addr()}, ""))
	f := dialFramer(t, addr)
	f.buf.Reset()
	for _, kv := range [][2]string{{":method", "GET"}, {":scheme", "http"}, {":authority", "x"}, {":path", "/"}, {"X-Upper", "v"}} {
		f.enc.WriteField(hpack.HeaderField{Name: kv[0], Value: kv[1]})
	}
	f.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: f.buf.Bytes(), EndStream: true, EndHeaders: true})
	for {
		fr, err := f.fr.ReadFrame()
		if err != nil {
			t.Fatal(err)
		}
		if rst, ok := fr.(*http2.RSTStreamFrame); ok {
			if rst.StreamID != 1 || rst.ErrCode != http2.ErrCodeProtocol {
				t.Fatalf("got %v, want RST_STREAM 1 PROTOCOL_ERROR", rst)
			}
			break
		}
	}
	// Static-table fields only (:method GET, :scheme http, :path /), then
	// a size update: the decoder's own check sees an empty table.
	late := []byte{0x82, 0x86, 0x84, 0x20}
	f.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 3, BlockFragment: late, EndStream: true, EndHeaders: true})
	if code := f.goAway(t); code != http2.ErrCodeCompression {
		t.Fatalf("GOAWAY %v, want COMPRESSION_ERROR", code)
	}
	waitFor(t, 5e9, "two log lines", func() bool {
		bad := 0
		for _, l := range logLines(t, logs) {
			if l["termination_state"] == "PR" && l["request"] == "<BADREQ>" {
				bad++
			}
		}
		return bad == 2
	})
	fe := p.Snapshot().Frontends[0].CounterValues
	if fe.Ereq != 0 || fe.ReqTot != 0 {
		t.Errorf("ereq %d, req_tot %d, want 0 and 0", fe.Ereq, fe.ReqTot)
	}
	if n := up.requests.Load(); n != 0 {
		t.Errorf("the server got %d requests", n)
	}
}
