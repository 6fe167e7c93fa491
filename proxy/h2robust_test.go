package proxy

import (
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/fulcrum-proxy/fulcrum/conf"
)

// TestH2ServerResetRefused: an HTTP/2 server that resets a stream before
// its response head (here x/net's server, RST_STREAM INTERNAL_ERROR for a
// handler aborting) gets the HTTP/2 client's stream reset with
// REFUSED_STREAM, no error page and no log line, the backend and server
// counting eresp and srv_abrt once, no 5xx: what HAProxy 2.6 does
// (measured with nghttp through haproxy 2.6 to a server resetting with
// codes 0, 1, 2, 7 and 8). An HTTP/1.1 client still gets the 502 (SH).
func TestH2ServerResetRefused(t *testing.T) {
	up := h2cUpstream(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		panic(http.ErrAbortHandler)
	}))
	cfg := h2Config([]string{up.Listener.Addr().String()}, "h2")
	cfg.Frontends[0].Binds = append(cfg.Frontends[0].Binds, "127.0.0.1:0")
	cfg.Frontends[0].BindOptions = append(cfg.Frontends[0].BindOptions, &conf.Bind{Addr: "127.0.0.1:0"})
	p, addr, logs := startLogged(t, cfg)
	f := dialFramer(t, addr)
	f.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: f.headers("/reset"), EndStream: true, EndHeaders: true})
	for {
		fr, err := f.fr.ReadFrame()
		if err != nil {
			t.Fatalf("stream 1: %v before its end", err)
		}
		if fr.Header().StreamID != 1 {
			continue
		}
		rst, ok := fr.(*http2.RSTStreamFrame)
		if !ok {
			t.Fatalf("stream 1: got %v, want RST_STREAM(REFUSED_STREAM) only", fr)
		}
		if rst.ErrCode != http2.ErrCodeRefusedStream {
			t.Fatalf("stream 1 reset with %v, want REFUSED_STREAM", rst.ErrCode)
		}
		break
	}
	s := p.Snapshot()
	be, srv := s.Backends[0].CounterValues, s.Backends[0].Servers[0].CounterValues
	if be.Eresp != 1 || be.SrvAbrt != 1 || srv.Eresp != 1 || srv.SrvAbrt != 1 || be.Hrsp5xx != 0 || s.Frontends[0].Hrsp5xx != 0 {
		t.Errorf("after the h2 reset: backend eresp %d srv_abrt %d hrsp_5xx %d, server eresp %d srv_abrt %d, frontend hrsp_5xx %d; want 1 1 0 1 1 0",
			be.Eresp, be.SrvAbrt, be.Hrsp5xx, srv.Eresp, srv.SrvAbrt, s.Frontends[0].Hrsp5xx)
	}
	// The client did nothing wrong: no protocol error of its own, no
	// RST_STREAM sent on error (HAProxy 2.6 leaves both at 0; a
	// fresh-user trial saw them move).
	if h := &p.Frontends[0].H2; h.StrmProtoErr.Load() != 0 || h.RstStreamResp.Load() != 0 {
		t.Errorf("frontend h2 stream protocol errors %d, RST_STREAM sent %d: want 0 and 0", h.StrmProtoErr.Load(), h.RstStreamResp.Load())
	}
	// The HTTP/1.1 client: the 502, logged SH. Its line is the only one
	// (the h2 stream's would have been written before its reset left).
	rc := dialRaw(t, p.Frontends[0].Addrs()[1].String())
	if resp := rc.do(t, "GET /h1 HTTP/1.1\r\nHost: x\r\n\r\n"); resp.StatusCode != 502 {
		t.Errorf("HTTP/1.1 client: got %d, want 502", resp.StatusCode)
	}
	waitFor(t, 5*time.Second, "the HTTP/1.1 request's log line", func() bool { return len(logLines(t, logs)) >= 1 })
	lines := logLines(t, logs)
	if len(lines) != 1 || lines[0]["request"] != "GET /h1 HTTP/1.1" || lines[0]["termination_state"] != "SH" {
		t.Errorf("log lines: got %v, want only GET /h1's, flags SH", lines)
	}
}

// countedH2Server is an HTTP/2 (h2c, prior knowledge) server announcing
// maxStreams concurrent streams, counting the connections it accepted and
// those that ended.
type countedH2Server struct {
	addr           string
	opened, closed atomic.Int64
}

func startCountedH2(t *testing.T, maxStreams uint32, h http.Handler) *countedH2Server {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &countedH2Server{addr: ln.Addr().String()}
	h2s := &http2.Server{MaxConcurrentStreams: maxStreams}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.opened.Add(1)
			wg.Add(1)
			go func() {
				defer wg.Done()
				h2s.ServeConn(c, &http2.ServeConnOpts{Handler: h})
				c.Close()
				s.closed.Add(1)
			}()
		}
	}()
	// Registered before the proxy's: runs after its stop closed its
	// connections.
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	return s
}

// TestH2CloseIdleDrains: a server entering maintenance (Server.CloseIdle)
// has its idle HTTP/2 connection closed at once, while the one carrying a
// request in flight is sent GOAWAY: that request ends whole, then the
// connection closes, long before pool_purge_delay; a later request opens
// a new connection.
func TestH2CloseIdleDrains(t *testing.T) {
	release := make(chan struct{})
	srv := startCountedH2(t, 1, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/hold" {
			io.WriteString(w, "x")
			w.(http.Flusher).Flush()
			<-release
			io.WriteString(w, "done")
			return
		}
		io.WriteString(w, "quick")
	}))
	cfg := h2Config([]string{srv.addr}, "h2")
	cfg.Backends[0].HTTPReuse = "always"
	cfg.Backends[0].Servers[0].PoolPurgeDelay = time.Minute
	p, addr := startProxy(t, cfg)
	tr := h2cTransport()
	defer tr.CloseIdleConnections()
	resp, err := tr.RoundTrip(mustReq(t, "http://"+addr+"/hold"))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var first [1]byte
	if _, err := io.ReadFull(resp.Body, first[:]); err != nil {
		t.Fatal(err)
	}
	// The first connection's SETTINGS (one stream) came before the head
	// relayed: the next request dials a second connection, idle after.
	get := func(path string) {
		t.Helper()
		r, err := tr.RoundTrip(mustReq(t, "http://"+addr+path))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(r.Body)
		r.Body.Close()
		if r.StatusCode != 200 || string(b) != "quick" {
			t.Fatalf("GET %s: got %d %q", path, r.StatusCode, b)
		}
	}
	get("/quick")
	if n := srv.opened.Load(); n != 2 {
		t.Fatalf("server connections: got %d, want 2", n)
	}
	p.Backends[0].Servers()[0].CloseIdle()
	waitFor(t, 5*time.Second, "the idle connection closed", func() bool { return srv.closed.Load() == 1 })
	get("/after")
	if n := srv.opened.Load(); n != 3 {
		t.Errorf("server connections after CloseIdle: got %d, want 3 (the busy one takes no new stream)", n)
	}
	close(release)
	rest, err := io.ReadAll(resp.Body)
	if err != nil || string(first[:])+string(rest) != "xdone" {
		t.Errorf("the request in flight: got %q, %v; want \"xdone\" whole", string(first[:])+string(rest), err)
	}
	waitFor(t, 5*time.Second, "the drained connection closed", func() bool { return srv.closed.Load() == 2 })
}

// TestH2WriteTimeout: an HTTP/2 client that stops reading while its
// stream has data to send is cut after timeout_client, as HAProxy applies
// timeout client to a connection whose output is blocked: the stream is
// logged as a client timeout (cD, as the HTTP/1 engine logs a client that
// stops reading) and its server side is freed. Two ways to stop: leave
// the flow-control window exhausted (the proxy's writes wait for credit;
// the connection then ends with GOAWAY(NO_ERROR)), or open the windows
// wide and not read the socket (the proxy's writes block).
func TestH2WriteTimeout(t *testing.T) {
	for _, blocked := range []bool{false, true} {
		t.Run(map[bool]string{false: "window", true: "socket"}[blocked], func(t *testing.T) {
			freed := make(chan struct{}, 1)
			chunk := make([]byte, 32<<10)
			up := newUpstream(t, "s1")
			up.handler = func(w http.ResponseWriter, r *http.Request) {
				defer func() { freed <- struct{}{} }()
				for range 2048 { // 64 MiB at most
					if _, err := w.Write(chunk); err != nil {
						return
					}
				}
			}
			cfg := h2Config([]string{up.addr()}, "")
			cfg.Frontends[0].TimeoutClient = 400 * time.Millisecond
			p, addr, logs := startLogged(t, cfg)
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if blocked {
				c.(*net.TCPConn).SetReadBuffer(4 << 10)
			}
			f := &framer{c: c, fr: http2.NewFramer(c, c)}
			f.enc = hpack.NewEncoder(&f.buf)
			c.SetDeadline(time.Now().Add(20 * time.Second))
			io.WriteString(c, http2.ClientPreface)
			if blocked {
				f.fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 1<<31 - 1})
				f.fr.WriteWindowUpdate(0, 1<<31-1-65535)
			} else {
				f.fr.WriteSettings()
			}
			f.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: f.headers("/big"), EndStream: true, EndHeaders: true})
			// The client reads nothing from now on.
			select {
			case <-freed:
			case <-time.After(10 * time.Second):
				t.Fatal("the server side was not freed after the client stopped reading")
			}
			waitFor(t, 5*time.Second, "the stream's log line", func() bool { return len(logLines(t, logs)) == 1 })
			if l := logLines(t, logs)[0]; l["termination_state"] != "cD" || l["request"] != "GET /big HTTP/2.0" {
				t.Errorf("log line: got %v, want GET /big with flags cD", l)
			}
			waitFor(t, 5*time.Second, "the client connection closed", func() bool { return p.Frontends[0].H2.OpenConns.Load() == 0 })
			if !blocked {
				// What was written before the stall, then GOAWAY(NO_ERROR).
				if code := f.goAway(t); code != http2.ErrCodeNo {
					t.Errorf("GOAWAY code: got %v, want NO_ERROR", code)
				}
			}
		})
	}
}
