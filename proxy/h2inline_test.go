package proxy

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	fh2 "github.com/fulcrum-proxy/fulcrum/proxy/http2"
)

// h2conn is a raw HTTP/2 client connection that reads its streams' answers.
type h2conn struct {
	*framer
	dec *hpack.Decoder
}

func dialH2(t *testing.T, addr string) *h2conn {
	return &h2conn{framer: dialFramer(t, addr), dec: hpack.NewDecoder(4096, nil)}
}

// h2answer is what a stream got: its head's fields (":status" among
// them), its body, or the code of its reset.
type h2answer struct {
	fields map[string]string
	body   string
	rst    http2.ErrCode
	reset  bool
}

// get sends a GET for path on stream id and reads frames until the
// stream ends (other streams' frames are skipped).
func (h *h2conn) get(t *testing.T, id uint32, path string) h2answer {
	t.Helper()
	h.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: h.headers(path), EndStream: true, EndHeaders: true})
	return h.answer(t, id)
}

// answer reads frames until stream id ends.
func (h *h2conn) answer(t *testing.T, id uint32) h2answer {
	t.Helper()
	return h.answers(t, []uint32{id})[id]
}

// inlineOf returns the frontend's counters of streams begun by the
// connection readers, or skips the test when they are off (Go's poller,
// or FULCRUM_H2INLINE=0), after checking that they are on by default.
func inlineOf(t *testing.T, p *Proxy) *fh2.InlineCounters {
	t.Helper()
	in := p.Frontends[0].h2.Inline()
	if in == nil {
		if p.epoll && os.Getenv(H2InlineEnv) != "0" {
			t.Fatal("HTTP/2 streams begun by the reader are off on the epoll layer")
		}
		t.Skipf("HTTP/2 streams begun by the reader are off (%s=%q, epoll layer %v)", H2InlineEnv, os.Getenv(H2InlineEnv), p.epoll)
	}
	return in
}

// TestH2InlineParked: a bodiless request whose server has an idle pooled
// connection is sent by the connection's reader and parks until its
// response comes; the first request of a client connection (http_reuse
// safe: a new connection), one to a server without an idle connection,
// and one with a body go to a worker as before. Balancing, responses and
// the reuse of the servers' connections are the same either way.
func TestH2InlineParked(t *testing.T) {
	ups := []*upstream{newUpstream(t, "s1"), newUpstream(t, "s2"), newUpstream(t, "s3")}
	p, addr, logs := startLogged(t, h2Config([]string{ups[0].addr(), ups[1].addr(), ups[2].addr()}, ""))
	in := inlineOf(t, p)
	h := dialH2(t, addr)
	want := []string{"s1", "s2", "s3", "s1", "s2", "s3", "s1"}
	for i, srv := range want {
		a := h.get(t, uint32(2*i+1), "/p")
		if a.fields[":status"] != "200" || a.fields["x-server"] != srv || a.body != srv+"\n" {
			t.Fatalf("request %d: %v %q; want 200 from %s", i, a.fields, a.body, srv)
		}
		// The first three dial (the connection's first request, then
		// servers with no idle connection yet); the others park.
		wantParked, wantHanded := int64(max(i-2, 0)), int64(min(i+1, 3))
		if got, handed := in.Parked.Load(), in.Handed.Load(); got != wantParked || handed != wantHanded {
			t.Errorf("after request %d: parked %d, handed %d; want %d and %d", i, got, handed, wantParked, wantHanded)
		}
	}
	// A request with a body is not the reader's.
	h.buf.Reset()
	for _, kv := range [][2]string{{":method", "POST"}, {":scheme", "http"}, {":authority", "x"}, {":path", "/post"}} {
		h.enc.WriteField(hpack.HeaderField{Name: kv[0], Value: kv[1]})
	}
	h.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 15, BlockFragment: h.buf.Bytes(), EndHeaders: true})
	h.fr.WriteData(15, true, []byte("body"))
	if a := h.answer(t, 15); a.fields[":status"] != "200" || a.fields["x-server"] != "s2" {
		t.Errorf("POST: %v; want 200 from s2", a.fields)
	}
	if got, handed := in.Parked.Load(), in.Handed.Load(); got != 4 || handed != 3 {
		t.Errorf("after the POST: parked %d, handed %d; want 4 and 3", got, handed)
	}
	for _, u := range ups {
		if n := u.conns.Load(); n != 1 {
			t.Errorf("server %s: %d connections, want 1 (reused)", u.name, n)
		}
	}
	waitFor(t, 5*time.Second, "8 log lines", func() bool { return len(logLines(t, logs)) == 8 })
	for _, l := range logLines(t, logs) {
		if l["termination_state"] != "--" || l["status"] != float64(200) {
			t.Errorf("log line %v: want 200 and --", l)
		}
	}
	s := p.Snapshot()
	if s.Frontends[0].ReqTot != 8 || s.Backends[0].Servers[0].Stot != 3 || s.Backends[0].Servers[0].Scur != 0 {
		t.Errorf("frontend req_tot %d, s1 stot %d scur %d; want 8, 3, 0", s.Frontends[0].ReqTot, s.Backends[0].Servers[0].Stot, s.Backends[0].Servers[0].Scur)
	}
}

// TestH2InlineTimeoutServer: a parked stream's server that does not
// answer within timeout_server gets the 504 (sH), as a worker's wait.
func TestH2InlineTimeoutServer(t *testing.T) {
	up := newUpstream(t, "s1")
	release := make(chan struct{})
	defer close(release)
	up.handler = func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			select {
			case <-release:
			case <-r.Context().Done():
			}
		}
		io.WriteString(w, "ok")
	}
	cfg := h2Config([]string{up.addr()}, "")
	cfg.Backends[0].TimeoutServer = 300 * time.Millisecond
	p, addr, logs := startLogged(t, cfg)
	in := inlineOf(t, p)
	h := dialH2(t, addr)
	if a := h.get(t, 1, "/"); a.fields[":status"] != "200" {
		t.Fatalf("first request: %v", a.fields)
	}
	if a := h.get(t, 3, "/slow"); a.fields[":status"] != "504" {
		t.Errorf("/slow: %v; want 504", a.fields)
	}
	if got := in.Parked.Load(); got != 1 {
		t.Errorf("parked %d, want 1", got)
	}
	waitFor(t, 5*time.Second, "2 log lines", func() bool { return len(logLines(t, logs)) == 2 })
	if l := logLines(t, logs)[1]; l["termination_state"] != "sH" || l["status"] != float64(504) {
		t.Errorf("log of /slow: %v; want 504 sH", l)
	}
	if a := h.get(t, 5, "/"); a.fields[":status"] != "200" {
		t.Errorf("after the 504: %v; want 200", a.fields)
	}
}

// TestH2InlineClientReset: a client resetting a parked stream frees the
// server side at once (CD), and the connection goes on; a client closing
// its connection with a stream parked frees it too.
func TestH2InlineClientReset(t *testing.T) {
	started, freed := make(chan struct{}, 1), make(chan struct{}, 1)
	up := newUpstream(t, "s1")
	up.handler = func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/hold" {
			started <- struct{}{}
			<-r.Context().Done()
			freed <- struct{}{}
			return
		}
		io.WriteString(w, "ok")
	}
	p, addr, logs := startLogged(t, h2Config([]string{up.addr()}, ""))
	in := inlineOf(t, p)
	wait := func(ch chan struct{}, what string) {
		t.Helper()
		select {
		case <-ch:
		case <-time.After(5 * time.Second):
			t.Fatal(what)
		}
	}
	h := dialH2(t, addr)
	if a := h.get(t, 1, "/"); a.fields[":status"] != "200" {
		t.Fatalf("first request: %v", a.fields)
	}
	h.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 3, BlockFragment: h.headers("/hold"), EndStream: true, EndHeaders: true})
	wait(started, "the parked request never reached the server")
	// Counted just after the send that reached the server.
	waitFor(t, 5*time.Second, "the stream parked", func() bool { return in.Parked.Load() == 1 })
	h.fr.WriteRSTStream(3, http2.ErrCodeCancel)
	wait(freed, "the server side was not freed after the client's RST_STREAM")
	if a := h.get(t, 5, "/"); a.fields[":status"] != "200" {
		t.Errorf("after the reset: %v; want 200", a.fields)
	}
	h.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 7, BlockFragment: h.headers("/hold"), EndStream: true, EndHeaders: true})
	wait(started, "the second parked request never reached the server")
	h.c.Close()
	wait(freed, "the server side was not freed when the client closed its connection")
	waitFor(t, 5*time.Second, "4 log lines", func() bool { return len(logLines(t, logs)) == 4 })
	var cd int
	for _, l := range logLines(t, logs) {
		if l["request"] == "GET /hold HTTP/2.0" && l["termination_state"] == "CD" {
			cd++
		}
	}
	// Stream 5 dialed: the reset closed the server connection of 3.
	if got := in.Parked.Load(); cd != 2 || got != 2 {
		t.Errorf("%d CD log lines, parked %d; want 2 and 2", cd, got)
	}
	waitFor(t, 5*time.Second, "the server's slot back", func() bool {
		s := p.Snapshot().Backends[0]
		return s.Servers[0].Scur == 0 && s.CliAbrt == 2
	})
}

// TestH2InlineStaleRetry: a parked request whose pooled connection the
// server closes without answering goes again on a new connection, as a
// worker's request on a stale connection.
func TestH2InlineStaleRetry(t *testing.T) {
	var conns atomic.Int64
	addrUp := tcpServer(t, func(c *net.TCPConn) {
		n := conns.Add(1)
		br := bufio.NewReader(c)
		for i := 0; ; i++ {
			if _, err := http.ReadRequest(br); err != nil {
				return
			}
			if n == 1 && i == 1 {
				return // the first connection's second request: closed, no answer
			}
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
		}
	})
	p, addr, logs := startLogged(t, h2Config([]string{addrUp}, ""))
	in := inlineOf(t, p)
	h := dialH2(t, addr)
	for i, id := range []uint32{1, 3, 5} {
		if a := h.get(t, id, "/"); a.fields[":status"] != "200" || a.body != "ok" {
			t.Fatalf("request %d: %v %q; want 200 ok", i, a.fields, a.body)
		}
	}
	if got, n := in.Parked.Load(), conns.Load(); got != 2 || n != 2 {
		t.Errorf("parked %d, server connections %d; want 2 and 2", got, n)
	}
	waitFor(t, 5*time.Second, "3 log lines", func() bool { return len(logLines(t, logs)) == 3 })
	for _, l := range logLines(t, logs) {
		if l["termination_state"] != "--" {
			t.Errorf("log line %v: want --", l)
		}
	}
}

// TestH2InlineBigHead: a request head of 50 KB (HEADERS and
// CONTINUATION frames) to a server that reads it only after the reader
// is done with it (its socket's small receive buffer may take part of
// it: the reader then hands the stream to a worker with the rest pending,
// http1's TestExchangeTrySend; here it mostly takes it all and parks)
// reaches the server whole and its response comes back.
func TestH2InlineBigHead(t *testing.T) {
	lc := net.ListenConfig{Control: func(_, _ string, rc syscall.RawConn) error {
		var serr error
		rc.Control(func(fd uintptr) { serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 2048) })
		return serr
	}}
	l, err := lc.Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	read := make(chan struct{})
	var once sync.Once
	letRead := func() { once.Do(func() { close(read) }) }
	done := make(chan struct{})
	go func() {
		defer close(done)
		c, err := l.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		br := bufio.NewReader(c)
		for i := 0; ; i++ {
			if i == 1 {
				<-read
			}
			req, err := http.ReadRequest(br)
			if err != nil {
				return
			}
			fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n", len(req.Header.Get("X-Big")))
			fmt.Fprint(c, strings.Repeat("b", len(req.Header.Get("X-Big"))))
		}
	}()
	t.Cleanup(func() { l.Close(); <-done })
	t.Cleanup(letRead) // first: the server may wait for it
	p, addr, _ := startLogged(t, h2Config([]string{l.Addr().String()}, ""))
	in := inlineOf(t, p)
	h := dialH2(t, addr)
	if a := h.get(t, 1, "/"); a.fields[":status"] != "200" {
		t.Fatalf("first request: %v", a.fields)
	}
	h.buf.Reset()
	big := strings.Repeat("x", 50000)
	for _, kv := range [][2]string{{":method", "GET"}, {":scheme", "http"}, {":authority", "x"}, {":path", "/big"}, {"x-big", big}} {
		h.enc.WriteField(hpack.HeaderField{Name: kv[0], Value: kv[1]})
	}
	block := h.buf.Bytes()
	h.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 3, BlockFragment: block[:16000], EndStream: true})
	for block = block[16000:]; len(block) > 0; {
		k := min(len(block), 16000)
		h.fr.WriteContinuation(3, k == len(block), block[:k])
		block = block[k:]
	}
	waitFor(t, 5*time.Second, "the reader done with the stream", func() bool { return in.Handed.Load()+in.Parked.Load() == 2 })
	letRead()
	if a := h.answer(t, 3); a.fields[":status"] != "200" || len(a.body) != len(big) {
		t.Errorf("/big: %v, %d bytes; want 200 and %d", a.fields, len(a.body), len(big))
	}
	t.Logf("parked %d, handed %d", in.Parked.Load(), in.Handed.Load())
}

// TestH2ShutdownSessions: `shutdown sessions server` kills an HTTP/2
// stream waiting for its server's answer on a reused (parked) connection:
// the stream gets the 502 and is logged KH, the request is not retried on
// a new server connection, and the client connection goes on.
func TestH2ShutdownSessions(t *testing.T) {
	got := make(chan struct{}, 1)
	hold := make(chan struct{})
	var requests atomic.Int64
	up := tcpServer(t, func(c *net.TCPConn) {
		br := bufio.NewReader(c)
		for {
			req, err := http.ReadRequest(br)
			if err != nil {
				return
			}
			requests.Add(1)
			if req.URL.Path == "/hold" {
				got <- struct{}{}
				<-hold
				return
			}
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
		}
	})
	t.Cleanup(func() { close(hold) }) // after tcpServer's: it frees the held handler first
	p, addr, logs := startLogged(t, h2Config([]string{up}, ""))
	h := dialH2(t, addr)
	if a := h.get(t, 1, "/"); a.fields[":status"] != "200" {
		t.Fatalf("first request: %v", a.fields)
	}
	h.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 3, BlockFragment: h.headers("/hold"), EndStream: true, EndHeaders: true})
	<-got
	srv := p.Backends[0].Servers()[0]
	waitFor(t, 5*time.Second, "the stream bound to its server", func() bool { return p.ShutdownSessions(srv) == 1 })
	if a := h.answer(t, 3); a.fields[":status"] != "502" {
		t.Errorf("the killed stream: %v; want 502", a)
	}
	if a := h.get(t, 5, "/"); a.fields[":status"] != "200" {
		t.Errorf("after the kill: %v; want 200", a.fields)
	}
	waitFor(t, 5*time.Second, "3 log lines", func() bool { return len(logLines(t, logs)) == 3 })
	if l := logLines(t, logs)[1]; l["termination_state"] != "KH" || l["status"] != float64(502) {
		t.Errorf("log of the killed stream: %v; want 502 KH", l)
	}
	if n := requests.Load(); n != 3 {
		t.Errorf("the server got %d requests, want 3 (no retry of the killed one)", n)
	}
}

// TestH2InlineAnswered: a rule's answer (a deny under a flood) is written
// by the connection's reader itself when it fits without waiting, the
// answers of one read leaving together; one that does not fit the
// stream's send window goes to a worker, which waits for the client's
// credit (the reader must not: only it reads the WINDOW_UPDATE). Every
// stream gets its 429, logged and counted as before. (A fresh-user trial
// measured an HTTP/2 flood of denies at 27.5k requests/s against
// HAProxy's 160k: a worker and a write per answer.)
func TestH2InlineAnswered(t *testing.T) {
	up := newUpstream(t, "s1")
	cfg := loadConfig(t, t.TempDir(), fmt.Sprintf(`
[[frontend]]
name = "www"
bind = ["127.0.0.1:0 proto h2"]
default_backend = "web"
http_request = ["deny deny_status 429"]
[[backend]]
name = "web"
[[backend.server]]
name = "s1"
address = "%s"
`, up.addr()))
	p, addr, logs := startLogged(t, cfg)
	in := inlineOf(t, p)
	h := dialH2(t, addr)
	// Ten streams in one write: answered by the reader.
	var batch bytes.Buffer
	bf := http2.NewFramer(&batch, nil)
	for id := uint32(1); id < 20; id += 2 {
		bf.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: h.headers("/x"), EndStream: true, EndHeaders: true})
	}
	h.c.Write(batch.Bytes())
	for id := uint32(1); id < 20; id += 2 {
		if a := h.answer(t, id); a.fields[":status"] != "429" || !strings.Contains(a.body, "429 Too Many Requests") {
			t.Fatalf("stream %d: %v %q", id, a.fields, a.body)
		}
	}
	if n := in.Answered.Load(); n != 10 {
		t.Errorf("answered by the reader: %d, want 10", n)
	}
	// A client whose streams may receive 8 bytes at a time: the page
	// does not fit, a worker writes it as credit comes.
	h2 := dialH2(t, addr)
	h2.fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 8})
	h2.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: h2.headers("/y"), EndStream: true, EndHeaders: true})
	var body []byte
	for {
		fr, err := h2.fr.ReadFrame()
		if err != nil {
			t.Fatal(err)
		}
		if d, ok := fr.(*http2.DataFrame); ok && d.StreamID == 1 {
			body = append(body, d.Data()...)
			if d.StreamEnded() {
				break
			}
			h2.fr.WriteWindowUpdate(1, uint32(len(d.Data())))
			h2.fr.WriteWindowUpdate(0, uint32(len(d.Data())))
		}
	}
	if !strings.Contains(string(body), "429 Too Many Requests") {
		t.Errorf("small window: body %q", body)
	}
	if n := in.Answered.Load(); n != 10 {
		t.Errorf("answered by the reader: %d, want still 10 (the small window's went to a worker)", n)
	}
	waitFor(t, 5e9, "eleven log lines", func() bool { return len(logLines(t, logs)) == 11 })
	if n := p.Snapshot().Frontends[0].CounterValues.Dreq; n != 11 {
		t.Errorf("dreq %d, want 11", n)
	}
}
