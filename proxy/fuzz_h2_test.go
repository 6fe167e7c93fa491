package proxy

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// FuzzH2Frames writes the HTTP/2 preface, then arbitrary bytes (frames
// from the fuzzer), to a real bind with proto h2, on a new connection
// each, and reads whatever comes back until the proxy closes or stays
// quiet. One proxy and one upstream serve every input of a fuzzing
// process. Invariants:
//
//   - it never panics (that would end the process) and never holds a
//     connection past the fuzz deadline once the input is sent and the
//     client half-closed: it closes, or answers GOAWAY;
//   - every fuzzCheckEvery inputs, once the connections are gone, no
//     stream is left open (h2 open streams back to 0) and no server slot
//     is held (backend sessions back to 0), and it still serves a normal
//     HTTP/2 request (and at the end).
func FuzzH2Frames(f *testing.F) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Trailer", "X-T")
		io.WriteString(w, "ok")
		w.Header().Set("X-T", "1")
	}))
	f.Cleanup(up.Close)
	cfg := h2Config([]string{up.Listener.Addr().String()}, "")
	fe, be := cfg.Frontends[0], cfg.Backends[0]
	fe.TimeoutClient, fe.TimeoutHTTPRequest = fuzzProxyTimeout, fuzzProxyTimeout
	be.TimeoutConnect, be.TimeoutServer = fuzzProxyTimeout, fuzzProxyTimeout
	p, addr := startProxy(f, cfg)
	tr := h2cTransport()
	f.Cleanup(tr.CloseIdleConnections)
	serves := func(tb testing.TB) {
		req, _ := http.NewRequest("GET", "http://"+addr+"/health", nil)
		resp, err := tr.RoundTrip(req)
		if err != nil {
			tb.Fatalf("the proxy no longer serves a normal request: %v", err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			tb.Fatalf("normal request: got %d, want 200", resp.StatusCode)
		}
	}
	for _, seed := range h2Seeds() {
		f.Add(seed)
	}
	var n int
	f.Cleanup(func() {
		if !f.Failed() {
			serves(f)
		}
	})
	f.Fuzz(func(t *testing.T, in []byte) {
		// A hang anywhere (the proxy, or this harness) ends the process
		// with every goroutine's stack (run with GOTRACEBACK=all).
		hang := time.AfterFunc(4*fuzzReplyDeadline, func() { panic(fmt.Sprintf("input %q hung", in)) })
		defer hang.Stop()
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatalf("the proxy no longer accepts: %v", err)
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(fuzzReplyDeadline))
		io.WriteString(c, http2.ClientPreface)
		c.Write(in)
		c.(*net.TCPConn).CloseWrite()
		// Frames until the proxy closes (it sees the half-close), or its
		// GOAWAY after a connection error (it stops reading then, and
		// closes a second later: not waited for), or the deadline: a hang.
		fr := http2.NewFramer(io.Discard, c)
		fr.SetMaxReadFrameSize(1 << 24)
		for {
			f, err := fr.ReadFrame()
			if err != nil {
				if ne, ok := err.(net.Error); ok && ne.Timeout() {
					t.Fatalf("the proxy held the connection past %v", fuzzReplyDeadline)
				}
				break
			}
			if _, ok := f.(*http2.GoAwayFrame); ok {
				break
			}
		}
		c.Close()
		if n++; n%fuzzCheckEvery == 0 {
			waitFor(t, fuzzReplyDeadline, "streams and server slots released", func() bool {
				return p.Frontends[0].H2.OpenStreams.Load() == 0 && p.Backends[0].Counters.Scur.Load() == 0
			})
			serves(t)
		}
	})
}

// h2Seeds are frame sequences that start the fuzzer on the paths that
// matter: requests with and without bodies and trailers, CONTINUATION,
// resets, settings, pings, window updates, priority, GOAWAY.
func h2Seeds() [][]byte {
	var seeds [][]byte
	build := func(fn func(fr *http2.Framer, enc func(kv ...string) []byte)) {
		var b bytes.Buffer
		fr := http2.NewFramer(&b, nil)
		var hb bytes.Buffer
		e := hpack.NewEncoder(&hb)
		enc := func(kv ...string) []byte {
			hb.Reset()
			for i := 0; i+1 < len(kv); i += 2 {
				e.WriteField(hpack.HeaderField{Name: kv[i], Value: kv[i+1]})
			}
			return append([]byte(nil), hb.Bytes()...)
		}
		fr.WriteSettings()
		fn(fr, enc)
		seeds = append(seeds, b.Bytes())
	}
	get := []string{":method", "GET", ":scheme", "http", ":authority", "a", ":path", "/"}
	post := []string{":method", "POST", ":scheme", "http", ":authority", "a", ":path", "/p", "content-length", "5"}
	build(func(fr *http2.Framer, enc func(...string) []byte) {
		fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: enc(get...), EndStream: true, EndHeaders: true})
	})
	build(func(fr *http2.Framer, enc func(...string) []byte) {
		fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: enc(post...), EndHeaders: true})
		fr.WriteData(1, false, []byte("hel"))
		fr.WriteData(1, true, []byte("lo"))
		fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 3, BlockFragment: enc(get...), EndStream: true, EndHeaders: true})
	})
	build(func(fr *http2.Framer, enc func(...string) []byte) {
		hb := enc(append(get, "x-long", fmt.Sprint(make([]byte, 40)))...)
		fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: hb[:5], EndStream: true})
		fr.WriteContinuation(1, false, hb[5:10])
		fr.WriteContinuation(1, true, hb[10:])
	})
	build(func(fr *http2.Framer, enc func(...string) []byte) {
		for id := uint32(1); id < 20; id += 2 {
			fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: enc(get...), EndStream: true, EndHeaders: true})
			fr.WriteRSTStream(id, http2.ErrCodeCancel)
		}
	})
	build(func(fr *http2.Framer, enc func(...string) []byte) {
		fr.WritePing(false, [8]byte{1})
		fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 1}, http2.Setting{ID: http2.SettingMaxFrameSize, Val: 16384})
		fr.WriteWindowUpdate(0, 1000)
		fr.WritePriority(1, http2.PriorityParam{StreamDep: 0, Weight: 10})
		fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: enc(post...), EndHeaders: true})
		fr.WriteWindowUpdate(1, 100)
		fr.WriteData(1, false, []byte("hello"))
		fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: enc("x-trailer", "1"), EndStream: true, EndHeaders: true})
		fr.WriteGoAway(0, http2.ErrCodeNo, nil)
	})
	// HPACK dynamic table size updates (hpackscan.go): two before the
	// fields (allowed), one after them, one in a CONTINUATION after them,
	// and the byte after an :authority whose length was cut short.
	static := []byte{0x82, 0x86, 0x84}
	build(func(fr *http2.Framer, enc func(...string) []byte) {
		fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: append([]byte{0x3f, 0xe1, 0x1f, 0x20}, enc(get...)...), EndStream: true, EndHeaders: true})
		fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 3, BlockFragment: append(append([]byte(nil), static...), 0x20), EndStream: true, EndHeaders: true})
	})
	build(func(fr *http2.Framer, enc func(...string) []byte) {
		fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: static, EndStream: true})
		fr.WriteContinuation(1, true, []byte{0x3f, 0xe1, 0x1f})
	})
	build(func(fr *http2.Framer, enc func(...string) []byte) {
		fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: append(append([]byte(nil), static...), append([]byte{0x01, 7}, "example.com"...)...), EndStream: true, EndHeaders: true})
	})
	// Header lists near the limit the reader enforces as it decodes
	// (http2/hblock.go): a served one, then an HPACK bomb (one 4 KB field
	// referenced from the dynamic table 17 times) after a malformed field.
	build(func(fr *http2.Framer, enc func(...string) []byte) {
		kv := append([]string(nil), get...)
		for range 16 {
			kv = append(kv, "x-b", strings.Repeat("b", 4000))
		}
		fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: enc(kv...), EndStream: true, EndHeaders: true})
		kv = append(append(kv, "X-Upper", "v"), "x-b", strings.Repeat("b", 4000))
		fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 3, BlockFragment: enc(kv...), EndStream: true, EndHeaders: true})
	})
	return seeds
}
