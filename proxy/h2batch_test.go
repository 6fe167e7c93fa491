package proxy

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"

	"golang.org/x/net/http2"
)

// answers reads frames until every stream of ids ended (HEADERS with
// END_STREAM, DATA with END_STREAM or RST_STREAM).
func (h *h2conn) answers(t *testing.T, ids []uint32) map[uint32]h2answer {
	t.Helper()
	got := map[uint32]h2answer{}
	bodies := map[uint32]*strings.Builder{}
	open := map[uint32]bool{}
	for _, id := range ids {
		open[id] = true
		got[id] = h2answer{fields: map[string]string{}}
		bodies[id] = &strings.Builder{}
	}
	end := func(id uint32) {
		a := got[id]
		a.body = bodies[id].String()
		got[id] = a
		delete(open, id)
	}
	for len(open) > 0 {
		fr, err := h.fr.ReadFrame()
		if err != nil {
			t.Fatalf("%d streams still open: %v", len(open), err)
		}
		switch f := fr.(type) {
		case *http2.HeadersFrame:
			fields, err := h.dec.DecodeFull(f.HeaderBlockFragment())
			if err != nil {
				t.Fatalf("stream %d: %v", f.StreamID, err)
			}
			if open[f.StreamID] {
				for _, hf := range fields {
					got[f.StreamID].fields[hf.Name] = hf.Value
				}
				if f.StreamEnded() {
					end(f.StreamID)
				}
			}
		case *http2.DataFrame:
			if open[f.StreamID] {
				bodies[f.StreamID].Write(f.Data())
				if f.StreamEnded() {
					end(f.StreamID)
				}
			}
		case *http2.RSTStreamFrame:
			if open[f.StreamID] {
				a := got[f.StreamID]
				a.reset, a.rst = true, f.ErrCode
				got[f.StreamID] = a
				end(f.StreamID)
			}
		case *http2.GoAwayFrame:
			t.Fatalf("GOAWAY %v", f.ErrCode)
		}
	}
	return got
}

// TestH2InlineBatched: a parked stream whose response is whole when it
// wakes (a head and its Content-Length body, or no body) runs on its
// connection's batching worker (InlineCounters.Batched); one with a
// chunked body, an interim head first or a malformed head goes to a worker
// of its own, which takes the head the reaper read (the 103 is relayed,
// the bad head is a 502). Streams woken together, while the batching
// worker runs, queue for it: their frames leave when its queue is empty
// (a lost flush would leave them unanswered).
func TestH2InlineBatched(t *testing.T) {
	var gate sync.WaitGroup // the gated round's requests, answered together
	const gated = 10
	gate.Add(gated)
	addrUp := tcpServer(t, func(c *net.TCPConn) {
		br := bufio.NewReader(c)
		for {
			req, err := http.ReadRequest(br)
			if err != nil {
				return
			}
			var resp string
			switch req.URL.Path {
			case "/whole":
				resp = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nwhole"
			case "/204":
				resp = "HTTP/1.1 204 No Content\r\n\r\n"
			case "/chunked":
				resp = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n7\r\nchunked\r\n0\r\n\r\n"
			case "/early":
				resp = "HTTP/1.1 103 Early Hints\r\nLink: </s.css>; rel=preload\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
			case "/bad":
				resp = "HTTP/1.1 2x0 Nope\r\n\r\n"
			case "/gate":
				gate.Done()
				gate.Wait()
				resp = "HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\ngate"
			}
			if _, err := io.WriteString(c, resp); err != nil {
				return
			}
		}
	})
	p, addr, logs := startLogged(t, h2Config([]string{addrUp}, ""))
	in := inlineOf(t, p)
	if !p.h2batch {
		if os.Getenv(H2BatchEnv) != "0" {
			t.Fatal("batching of woken HTTP/2 streams is off by default")
		}
		t.Skipf("batching of woken HTTP/2 streams is off (%s=0)", H2BatchEnv)
	}
	h := dialH2(t, addr)
	for i, tc := range []struct {
		path, status, body, link string
		parked, batched          int64
	}{
		{"/whole", "200", "whole", "", 0, 0}, // the connection's first: dials
		{"/whole", "200", "whole", "", 1, 1},
		{"/204", "204", "", "", 2, 2},
		{"/chunked", "200", "chunked", "", 3, 2},
		{"/early", "200", "ok", "</s.css>; rel=preload", 4, 2},
		{"/whole", "200", "whole", "", 5, 3},
		{"/bad", "502", "", "", 6, 3}, // its connection is closed
		{"/whole", "200", "whole", "", 6, 3},
	} {
		a := h.get(t, uint32(2*i+1), tc.path)
		if a.fields[":status"] != tc.status || (tc.status != "502" && a.body != tc.body) || a.fields["link"] != tc.link {
			t.Errorf("%s (request %d): %v %q; want %s %q, link %q", tc.path, i, a.fields, a.body, tc.status, tc.body, tc.link)
		}
		if parked, batched := in.Parked.Load(), in.Batched.Load(); parked != tc.parked || batched != tc.batched {
			t.Errorf("after %s (request %d): parked %d, batched %d; want %d and %d", tc.path, i, parked, batched, tc.parked, tc.batched)
		}
	}
	waitFor(t, 5e9, "8 log lines", func() bool { return len(logLines(t, logs)) == 8 })
	if l := logLines(t, logs)[6]; l["status"] != float64(502) || l["termination_state"] != "PH" {
		t.Errorf("log of /bad: %v; want 502 PH", l)
	}

	// A client whose stream window (4 bytes) does not take the body whole:
	// the stream parks but gets a worker of its own, which waits for the
	// credit the client gives once it read the first 4 bytes.
	small := dialH2(t, addr)
	small.fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 4})
	if a := small.get(t, 1, "/204"); a.fields[":status"] != "204" {
		t.Fatalf("small window, first request: %v", a.fields)
	}
	parked0, batched0 := in.Parked.Load(), in.Batched.Load()
	small.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 3, BlockFragment: small.headers("/whole"), EndStream: true, EndHeaders: true})
	var body []byte
	for len(body) < 5 {
		fr, err := small.fr.ReadFrame()
		if err != nil {
			t.Fatalf("small window: %v (body so far %q)", err, body)
		}
		switch f := fr.(type) {
		case *http2.HeadersFrame:
			small.dec.DecodeFull(f.HeaderBlockFragment())
		case *http2.DataFrame:
			body = append(body, f.Data()...)
			if len(body) == 4 {
				small.fr.WriteWindowUpdate(3, 4)
			}
		case *http2.RSTStreamFrame, *http2.GoAwayFrame:
			t.Fatalf("small window: %v", f)
		}
	}
	if string(body) != "whole" {
		t.Errorf("small window: body %q, want whole", body)
	}
	if parked, batched := in.Parked.Load()-parked0, in.Batched.Load()-batched0; parked != 1 || batched != 0 {
		t.Errorf("small window: parked %d, batched %d; want 1 and 0", parked, batched)
	}

	// Ten idle pooled connections, then ten requests the server answers
	// together: their streams wake in one batch of the reaper's.
	next := uint32(17)
	round := func(path string) map[uint32]h2answer {
		var ids []uint32
		for range gated {
			h.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: next, BlockFragment: h.headers(path), EndStream: true, EndHeaders: true})
			ids = append(ids, next)
			next += 2
		}
		return h.answers(t, ids)
	}
	for id, a := range round("/whole") {
		if a.fields[":status"] != "200" || a.body != "whole" {
			t.Fatalf("warm-up stream %d: %v %q", id, a.fields, a.body)
		}
	}
	parked0, batched0 = in.Parked.Load(), in.Batched.Load()
	for id, a := range round("/gate") {
		if a.fields[":status"] != "200" || a.body != "gate" {
			t.Errorf("gated stream %d: %v %q; want 200 gate", id, a.fields, a.body)
		}
	}
	parked, batched := in.Parked.Load()-parked0, in.Batched.Load()-batched0
	if parked == 0 || batched != parked {
		t.Errorf("gated round: parked %d, batched %d; want every parked stream batched", parked, batched)
	}
	t.Logf("gated round: %d parked and batched", parked)
}
