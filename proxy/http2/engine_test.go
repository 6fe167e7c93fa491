package http2

import (
	"bytes"
	"errors"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	xh2 "golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/fulcrum-proxy/fulcrum/proxy/h2mux"
	"github.com/fulcrum-proxy/fulcrum/proxy/http1"
	"github.com/fulcrum-proxy/fulcrum/proxy/stream"
)

// The own engine's parts the proxy's integration tests do not pin, on a
// real listener with a raw Framer as the client: every stream is answered
// by a local handler of the test's (the core reduced to a stub that routes
// every request to it).

// stubStream is the core's side of a stream answered by h.
type stubStream struct {
	http1.Stream // nil: the phases of a local answer are all it has
	h            http.Handler
	ended        chan stream.Outcome
}

func (s *stubStream) Begin(time.Time, time.Time) {}
func (s *stubStream) HeadRead(int)               {}
func (s *stubStream) Route(*stream.Request, time.Time) stream.Route {
	return stream.Route{Kind: stream.RouteLocal, Handler: s.h}
}
func (s *stubStream) Replied(int, int64) {}
func (s *stubStream) LocalDone(err error) {
	o := stream.Served
	if err != nil {
		o = stream.LocalClientGone
	}
	select {
	case s.ended <- o:
	default:
	}
}
func (s *stubStream) Free()                  {}
func (s *stubStream) SetClock(time.Time)     {}
func (s *stubStream) BadHead()               {}
func (s *stubStream) BeginRefused(time.Time) {}
func (s *stubStream) End(o stream.Outcome) {
	select {
	case s.ended <- o:
	default:
	}
}

// stubClient is a client connection of a stub core.
type stubClient struct {
	c     net.Conn
	srv   *Server
	cs    *h2mux.Counters
	h     http.Handler
	ended chan stream.Outcome
}

func (c *stubClient) Conn() net.Conn            { return c.c }
func (c *stubClient) Src() netip.AddrPort       { return netip.MustParseAddrPort("127.0.0.1:1") }
func (c *stubClient) Settings() *http1.Settings { return &http1.Settings{} }
func (c *stubClient) Server() *Server           { return c.srv }
func (c *stubClient) Counters() *h2mux.Counters { return c.cs }
func (c *stubClient) Stopping() bool            { return false }
func (c *stubClient) NewStream() Stream         { return &stubStream{h: c.h, ended: c.ended} }
func (c *stubClient) Done()                     {}

// engineServer serves HTTP/2 with the own engine on a listener, every
// stream answered by h.
type engineServer struct {
	srv   *Server
	addr  string
	cs    h2mux.Counters
	ended chan stream.Outcome
}

func startEngine(t testing.TB, maxStreams int, idle time.Duration, h http.Handler) *engineServer {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	e := &engineServer{srv: NewServer(maxStreams, idle, EngineOwn), addr: l.Addr().String(), ended: make(chan stream.Outcome, 16)}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				Serve(&stubClient{c: c, srv: e.srv, cs: &e.cs, h: h, ended: e.ended})
			}()
		}
	}()
	t.Cleanup(func() {
		l.Close()
		e.srv.Shutdown()
		wg.Wait()
	})
	return e
}

// rawClient is a client speaking raw frames.
type rawClient struct {
	t   *testing.T
	c   net.Conn
	fr  *xh2.Framer
	enc *hpack.Encoder
	buf bytes.Buffer
	dec *hpack.Decoder
}

// dial connects and sends the preface and SETTINGS with settings.
func dial(t *testing.T, addr string, settings ...xh2.Setting) *rawClient {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	c.SetDeadline(time.Now().Add(20 * time.Second))
	rc := &rawClient{t: t, c: c, fr: xh2.NewFramer(c, c), dec: hpack.NewDecoder(4096, nil)}
	rc.enc = hpack.NewEncoder(&rc.buf)
	t.Cleanup(func() { c.Close() })
	io.WriteString(c, xh2.ClientPreface)
	rc.fr.WriteSettings(settings...)
	return rc
}

// request sends a request head for path on stream id.
func (rc *rawClient) request(id uint32, method, path string, end bool, extra ...string) {
	rc.buf.Reset()
	for _, kv := range [][2]string{{":method", method}, {":scheme", "http"}, {":authority", "x"}, {":path", path}} {
		rc.enc.WriteField(hpack.HeaderField{Name: kv[0], Value: kv[1]})
	}
	for i := 0; i+1 < len(extra); i += 2 {
		rc.enc.WriteField(hpack.HeaderField{Name: extra[i], Value: extra[i+1]})
	}
	if err := rc.fr.WriteHeaders(xh2.HeadersFrameParam{StreamID: id, BlockFragment: rc.buf.Bytes(), EndStream: end, EndHeaders: true}); err != nil {
		rc.t.Fatal(err)
	}
}

// next reads the next frame, failing the test on an error.
func (rc *rawClient) next() xh2.Frame {
	rc.t.Helper()
	f, err := rc.fr.ReadFrame()
	if err != nil {
		rc.t.Fatalf("reading a frame: %v", err)
	}
	return f
}

// quiet reports whether no frame comes within d (the server waits).
func (rc *rawClient) quiet(d time.Duration) bool {
	rc.c.SetReadDeadline(time.Now().Add(d))
	defer rc.c.SetReadDeadline(time.Now().Add(20 * time.Second))
	f, err := rc.fr.ReadFrame()
	if err != nil {
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			return true
		}
		rc.t.Fatalf("reading: %v", err)
	}
	rc.t.Errorf("unexpected frame %v", f)
	return false
}

// handshake reads the server's SETTINGS and connection WINDOW_UPDATE,
// and the ACK of the client's SETTINGS.
func (rc *rawClient) handshake() {
	rc.t.Helper()
	sawAck := false
	for n := 0; n < 2 || !sawAck; n++ {
		switch f := rc.next().(type) {
		case *xh2.SettingsFrame:
			if f.IsAck() {
				sawAck = true
			} else {
				rc.fr.WriteSettingsAck()
			}
		case *xh2.WindowUpdateFrame:
		default:
			rc.t.Fatalf("handshake: unexpected %v", f)
		}
	}
}

// body reads stream id's frames until want DATA bytes came, failing on
// more in a frame, and returns whether the stream ended.
func (rc *rawClient) body(id uint32, want int) (ended bool) {
	rc.t.Helper()
	got := 0
	for got < want || want == 0 && !ended {
		switch f := rc.next().(type) {
		case *xh2.HeadersFrame:
			fields, err := rc.dec.DecodeFull(f.HeaderBlockFragment())
			if err != nil || f.StreamID != id {
				rc.t.Fatalf("HEADERS on %d: %v %v", f.StreamID, fields, err)
			}
			ended = f.StreamEnded()
		case *xh2.DataFrame:
			if f.StreamID != id {
				rc.t.Fatalf("DATA on stream %d, want %d", f.StreamID, id)
			}
			got += len(f.Data())
			ended = f.StreamEnded()
			if want == 0 && !ended {
				rc.t.Fatalf("%d bytes of DATA, want none", len(f.Data()))
			}
		default:
			rc.t.Fatalf("unexpected %v", f)
		}
	}
	if got != want {
		rc.t.Fatalf("got %d bytes of DATA, want exactly %d", got, want)
	}
	return ended
}

// whole reads stream id's response: exactly n bytes, then its end.
func (rc *rawClient) whole(id uint32, n int) {
	rc.t.Helper()
	if !rc.body(id, n) && !rc.body(id, 0) {
		rc.t.Fatalf("stream %d did not end", id)
	}
}

// sizedHandler answers /N with N bytes.
var sizedHandler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	n, _ := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/"))
	w.Write(bytes.Repeat([]byte("x"), n))
})

// TestEngineSettingsPing: the server's first frames are its SETTINGS (the
// values announced, in this order) and a WINDOW_UPDATE opening the
// connection's window to 1 MiB; the client's SETTINGS are acknowledged
// and a PING gets an ACK with its payload.
func TestEngineSettingsPing(t *testing.T) {
	e := startEngine(t, 7, 0, sizedHandler)
	rc := dial(t, e.addr)
	sf, ok := rc.next().(*xh2.SettingsFrame)
	if !ok || sf.IsAck() {
		t.Fatalf("first frame %v, want SETTINGS", sf)
	}
	var got []xh2.Setting
	sf.ForeachSetting(func(s xh2.Setting) error { got = append(got, s); return nil })
	want := []xh2.Setting{
		{ID: xh2.SettingMaxFrameSize, Val: 16384},
		{ID: xh2.SettingMaxConcurrentStreams, Val: 7},
		{ID: xh2.SettingInitialWindowSize, Val: 1 << 20},
		{ID: xh2.SettingMaxHeaderListSize, Val: 64 << 10},
	}
	if len(got) != len(want) {
		t.Fatalf("SETTINGS %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("setting %d: got %v, want %v", i, got[i], want[i])
		}
	}
	wu, ok := rc.next().(*xh2.WindowUpdateFrame)
	if !ok || wu.StreamID != 0 || wu.Increment != 1<<20-65535 {
		t.Fatalf("second frame %v, want WINDOW_UPDATE(0, %d)", wu, 1<<20-65535)
	}
	if ack, ok := rc.next().(*xh2.SettingsFrame); !ok || !ack.IsAck() {
		t.Fatalf("got %v, want the ACK of the client's SETTINGS", ack)
	}
	payload := [8]byte{1, 2, 3, 4, 5, 6, 7, 8}
	rc.fr.WritePing(false, payload)
	if p, ok := rc.next().(*xh2.PingFrame); !ok || !p.IsAck() || p.Data != payload {
		t.Fatalf("got %v, want PING ACK %v", p, payload)
	}
	// An ACK is not answered.
	rc.fr.WritePing(true, payload)
	rc.fr.WritePing(false, [8]byte{9})
	if p, ok := rc.next().(*xh2.PingFrame); !ok || !p.IsAck() || p.Data != [8]byte{9} {
		t.Fatalf("got %v, want only the ACK of the second PING", p)
	}
	if n := e.cs.SettingsRcvd.Load(); n != 1 {
		t.Errorf("SETTINGS counted: %d, want 1", n)
	}
}

// TestEngineSendWindow: a response waits when the stream's window, then
// the connection's, is used up, and goes on by exactly what each
// WINDOW_UPDATE grants.
func TestEngineSendWindow(t *testing.T) {
	e := startEngine(t, 0, 0, sizedHandler)
	t.Run("stream", func(t *testing.T) {
		rc := dial(t, e.addr, xh2.Setting{ID: xh2.SettingInitialWindowSize, Val: 1000})
		rc.handshake()
		rc.request(1, "GET", "/5000", true)
		if rc.body(1, 1000) {
			t.Fatal("stream ended early")
		}
		if !rc.quiet(200 * time.Millisecond) {
			return
		}
		rc.fr.WriteWindowUpdate(1, 1500)
		if rc.body(1, 1500) {
			t.Fatal("stream ended early")
		}
		rc.quiet(100 * time.Millisecond)
		// Widening the window by SETTINGS moves the stream's too.
		rc.fr.WriteSettings(xh2.Setting{ID: xh2.SettingInitialWindowSize, Val: 2000})
		if ack, ok := rc.next().(*xh2.SettingsFrame); !ok || !ack.IsAck() {
			t.Fatalf("got %v, want SETTINGS ACK", ack)
		}
		if rc.body(1, 1000) {
			t.Fatal("stream ended early")
		}
		rc.fr.WriteWindowUpdate(1, 10000)
		rc.whole(1, 1500)
	})
	t.Run("connection", func(t *testing.T) {
		rc := dial(t, e.addr, xh2.Setting{ID: xh2.SettingInitialWindowSize, Val: 1 << 20})
		rc.handshake()
		rc.request(1, "GET", "/70000", true)
		if rc.body(1, 65535) {
			t.Fatal("stream ended early")
		}
		if !rc.quiet(200 * time.Millisecond) {
			return
		}
		rc.fr.WriteWindowUpdate(0, 4000)
		if rc.body(1, 4000) {
			t.Fatal("stream ended early")
		}
		rc.fr.WriteWindowUpdate(0, 465)
		rc.whole(1, 465)
	})
	t.Run("head without credit", func(t *testing.T) {
		// HEADERS are not flow-controlled (RFC 9113 6.9): a response's
		// head leaves while the connection's window is used up by
		// another stream, as HAProxy 2.6 sends it (a fresh-user trial:
		// the head waited for the client's WINDOW_UPDATE).
		rc := dial(t, e.addr, xh2.Setting{ID: xh2.SettingInitialWindowSize, Val: 1 << 20})
		rc.handshake()
		rc.request(1, "GET", "/70000", true)
		if rc.body(1, 65535) {
			t.Fatal("stream ended early")
		}
		rc.request(3, "GET", "/10", true)
		f, ok := rc.next().(*xh2.HeadersFrame)
		if !ok || f.StreamID != 3 || f.StreamEnded() {
			t.Fatalf("got %v, want stream 3's HEADERS without credit", f)
		}
		if !rc.quiet(200 * time.Millisecond) {
			return
		}
		rc.fr.WriteWindowUpdate(0, 1<<20)
		got := map[uint32]int{}
		for ended := 0; ended < 2; {
			switch f := rc.next().(type) {
			case *xh2.DataFrame:
				got[f.StreamID] += len(f.Data())
				if f.StreamEnded() {
					ended++
				}
			default:
				t.Fatalf("unexpected %v", f)
			}
		}
		if got[1] != 70000-65535 || got[3] != 10 {
			t.Errorf("DATA after the credit: %v, want 1: %d, 3: 10", got, 70000-65535)
		}
	})
}

// TestEngineReceiveWindow: a request body is given its window back as it
// is read, by WINDOW_UPDATEs of exactly the bytes read once half the
// window is; a client that sends beyond the window announced gets
// GOAWAY(FLOW_CONTROL_ERROR).
func TestEngineReceiveWindow(t *testing.T) {
	read, release := make(chan int, 1), make(chan struct{})
	e := startEngine(t, 0, 0, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/read" {
			n, _ := io.ReadFull(r.Body, make([]byte, 512<<10))
			read <- n
		}
		<-release
	}))
	defer close(release)
	t.Run("window given back", func(t *testing.T) {
		rc := dial(t, e.addr)
		rc.handshake()
		rc.request(1, "POST", "/read", false)
		chunk := make([]byte, 16384)
		for range 32 {
			rc.fr.WriteData(1, false, chunk)
		}
		if n := <-read; n != 512<<10 {
			t.Fatalf("handler read %d", n)
		}
		got := map[uint32]uint32{}
		for len(got) < 2 {
			wu, ok := rc.next().(*xh2.WindowUpdateFrame)
			if !ok {
				t.Fatalf("got %v, want WINDOW_UPDATE", wu)
			}
			got[wu.StreamID] += wu.Increment
		}
		if got[0] != 512<<10 || got[1] != 512<<10 {
			t.Errorf("WINDOW_UPDATE increments %v, want 524288 for the connection and stream 1", got)
		}
	})
	t.Run("beyond the window", func(t *testing.T) {
		rc := dial(t, e.addr)
		rc.handshake()
		rc.request(1, "POST", "/hold", false)
		chunk := make([]byte, 16384)
		for range 64 {
			rc.fr.WriteData(1, false, chunk)
		}
		rc.fr.WriteData(1, false, []byte{0})
		for {
			f := rc.next()
			if ga, ok := f.(*xh2.GoAwayFrame); ok {
				if ga.ErrCode != xh2.ErrCodeFlowControl || ga.LastStreamID != 1 {
					t.Errorf("GOAWAY %v last %d, want FLOW_CONTROL_ERROR, 1", ga.ErrCode, ga.LastStreamID)
				}
				break
			}
		}
		if n := e.cs.ConnProtoErr.Load(); n != 1 {
			t.Errorf("connection errors counted: %d, want 1", n)
		}
	})
}

// TestEngineStreamErrors: a body longer than its content-length, DATA
// after END_STREAM, and an invalid request head each reset their stream
// (PROTOCOL_ERROR, STREAM_CLOSED) while the connection goes on; a stream
// opened beside one with a lower number is a connection error.
func TestEngineStreamErrors(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	e := startEngine(t, 0, 0, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/hold" {
			<-release
		}
		io.WriteString(w, "ok")
	}))
	rc := dial(t, e.addr)
	rc.handshake()
	rst := func(id uint32, code xh2.ErrCode) {
		t.Helper()
		for {
			switch f := rc.next().(type) {
			case *xh2.RSTStreamFrame:
				if f.StreamID != id || f.ErrCode != code {
					t.Fatalf("RST_STREAM %d %v, want %d %v", f.StreamID, f.ErrCode, id, code)
				}
				return
			case *xh2.WindowUpdateFrame:
			default:
				t.Fatalf("got %v, want RST_STREAM %d %v", f, id, code)
			}
		}
	}
	rc.request(1, "POST", "/hold", false, "content-length", "3")
	rc.fr.WriteData(1, false, []byte("abcd"))
	rst(1, xh2.ErrCodeProtocol)
	rc.request(3, "POST", "/hold", false)
	rc.fr.WriteData(3, true, []byte("a"))
	rc.fr.WriteData(3, false, []byte("b"))
	rst(3, xh2.ErrCodeStreamClosed)
	rc.request(5, "GET", "/", true, "connection", "close")
	rst(5, xh2.ErrCodeProtocol)
	rc.buf.Reset()
	rc.enc.WriteField(hpack.HeaderField{Name: ":method", Value: "GET"})
	rc.fr.WriteHeaders(xh2.HeadersFrameParam{StreamID: 7, BlockFragment: rc.buf.Bytes(), EndStream: true, EndHeaders: true})
	rst(7, xh2.ErrCodeProtocol)
	// The connection still serves.
	rc.request(9, "GET", "/", true)
	rc.whole(9, 2)
	if n := e.cs.StrmProtoErr.Load(); n != 4 {
		t.Errorf("stream errors counted: %d, want 4", n)
	}
	rc.request(5, "GET", "/", true)
	ga, ok := rc.next().(*xh2.GoAwayFrame)
	if !ok || ga.ErrCode != xh2.ErrCodeProtocol || ga.LastStreamID != 9 {
		t.Fatalf("got %v, want GOAWAY(PROTOCOL_ERROR, 9)", ga)
	}
}

// TestEngineGracefulStop: Shutdown sends GOAWAY(NO_ERROR) with the last
// stream; a stream opened after it is not served, the one in flight is,
// and then the connection closes. A connection without streams is sent
// GOAWAY once idle for the idle timeout.
func TestEngineGracefulStop(t *testing.T) {
	started, release := make(chan struct{}, 1), make(chan struct{})
	e := startEngine(t, 0, 0, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		started <- struct{}{}
		<-release
		io.WriteString(w, "done")
	}))
	rc := dial(t, e.addr)
	rc.handshake()
	rc.request(1, "GET", "/", true)
	<-started
	e.srv.Shutdown()
	ga, ok := rc.next().(*xh2.GoAwayFrame)
	if !ok || ga.ErrCode != xh2.ErrCodeNo || ga.LastStreamID != 1 {
		t.Fatalf("got %v, want GOAWAY(NO_ERROR, 1)", ga)
	}
	rc.request(3, "GET", "/", true)
	close(release)
	rc.whole(1, 4)
	if f, err := rc.fr.ReadFrame(); err == nil {
		t.Fatalf("got %v after the last stream, want the connection closed", f)
	}
	select {
	case <-started:
		t.Error("stream 3, opened after GOAWAY, was served")
	default:
	}

	idle := startEngine(t, 0, 50*time.Millisecond, sizedHandler)
	rc = dial(t, idle.addr)
	rc.handshake()
	rc.request(1, "GET", "/3", true)
	rc.whole(1, 3)
	ga, ok = rc.next().(*xh2.GoAwayFrame)
	if !ok || ga.ErrCode != xh2.ErrCodeNo || ga.LastStreamID != 1 {
		t.Fatalf("got %v, want GOAWAY(NO_ERROR, 1) once idle", ga)
	}
}

// TestEngineClientReset: a stream the client resets has its request
// context cancelled and its body failed; nothing more is sent on it.
func TestEngineClientReset(t *testing.T) {
	started, gone := make(chan struct{}), make(chan error, 1)
	e := startEngine(t, 0, 0, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(started)
		_, err := io.ReadAll(r.Body)
		<-r.Context().Done()
		gone <- err
	}))
	rc := dial(t, e.addr)
	rc.handshake()
	rc.request(1, "POST", "/", false)
	<-started
	rc.fr.WriteRSTStream(1, xh2.ErrCodeCancel)
	if err := <-gone; !errors.Is(err, errClientReset) {
		t.Errorf("body read: %v, want the reset", err)
	}
	if o := <-e.ended; o != stream.LocalClientGone {
		t.Errorf("local answer ended %v, want the client gone", o)
	}
	rc.quiet(100 * time.Millisecond)
}

// TestEngineExpectContinue: a request with "expect: 100-continue" gets
// the interim 100 when its body is first read, then the response.
func TestEngineExpectContinue(t *testing.T) {
	e := startEngine(t, 0, 0, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		w.Write(b)
	}))
	rc := dial(t, e.addr)
	rc.handshake()
	rc.request(1, "POST", "/", false, "expect", "100-continue")
	hf, ok := rc.next().(*xh2.HeadersFrame)
	if !ok || hf.StreamEnded() {
		t.Fatalf("got %v, want HEADERS :status 100", hf)
	}
	if fields, err := rc.dec.DecodeFull(hf.HeaderBlockFragment()); err != nil || len(fields) != 1 || fields[0].Value != "100" {
		t.Fatalf("interim head %v (%v), want :status 100", fields, err)
	}
	rc.fr.WriteData(1, true, []byte("body"))
	rc.whole(1, 4)
}

// TestEngineStuckClient: a client that reads nothing while a large
// response is written holds that stream's writer, but neither the stop
// (Shutdown returns at once) nor the end of its connection after a
// connection error (closed within about a second).
func TestEngineStuckClient(t *testing.T) {
	e := startEngine(t, 0, 0, sizedHandler)
	rc := dial(t, e.addr, xh2.Setting{ID: xh2.SettingInitialWindowSize, Val: 1<<31 - 1})
	rc.c.(*net.TCPConn).SetReadBuffer(64 << 10)
	rc.fr.WriteWindowUpdate(0, 1<<31-1-65535)
	rc.request(1, "GET", "/"+strconv.Itoa(32<<20), true)
	var c *econn
	testutilWait(t, "the connection", func() bool {
		e.srv.mu.Lock()
		defer e.srv.mu.Unlock()
		for c = range e.srv.conns {
		}
		return c != nil
	})
	// The writer holds the write lock, blocked on the full socket: seen
	// held twice, 100 ms apart.
	held := 0
	testutilWait(t, "the response writer blocked", func() bool {
		if c.wmu.TryLock() {
			c.wmu.Unlock()
			held = 0
			return false
		}
		held++
		time.Sleep(100 * time.Millisecond)
		return held >= 2
	})
	done := make(chan struct{})
	go func() { e.srv.Shutdown(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Shutdown waited for a client that does not read")
	}
	rc.fr.WritePushPromise(xh2.PushPromiseParam{StreamID: 1, PromiseID: 2, EndHeaders: true})
	testutilWait(t, "the connection closed", func() bool { return e.cs.OpenConns.Load() == 0 })
}

// testutilWait waits up to 10 s for cond.
func testutilWait(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
