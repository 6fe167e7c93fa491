package proxy

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/h2c"
	"golang.org/x/net/http2/hpack"

	"github.com/fulcrum-proxy/fulcrum/conf"
	"github.com/fulcrum-proxy/fulcrum/internal/testutil"
	"github.com/fulcrum-proxy/fulcrum/proxy/http1"
)

// h2cTransport returns an HTTP/2 transport with prior knowledge over
// plaintext, as curl --http2-prior-knowledge.
func h2cTransport() *http2.Transport {
	return &http2.Transport{AllowHTTP: true, DialTLSContext: func(ctx context.Context, network, addr string, _ *tls.Config) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, addr)
	}}
}

// h2cUpstream starts a server speaking HTTP/2 with prior knowledge (and
// HTTP/1.1) with h.
func h2cUpstream(t *testing.T, h http.Handler) *httptest.Server {
	t.Helper()
	s := httptest.NewUnstartedServer(h2c.NewHandler(h, &http2.Server{}))
	s.Start()
	t.Cleanup(s.Close)
	return s
}

// h2Config returns testConfig with its frontend's bind speaking HTTP/2
// (proto h2) and its servers speaking proto.
func h2Config(addrs []string, serverProto string) *conf.Config {
	cfg := testConfig(conf.ModeHTTP, addrs, nil)
	cfg.Frontends[0].BindOptions = []*conf.Bind{{Addr: "127.0.0.1:0", Proto: "h2"}}
	cfg.Global.H2MaxStreams = 100
	for _, s := range cfg.Backends[0].Servers {
		s.Proto = serverProto
	}
	return cfg
}

// startLogged is startProxy with the access log captured.
func startLogged(t *testing.T, cfg *conf.Config) (*Proxy, string, *testutil.SyncBuffer) {
	t.Helper()
	var logs testutil.SyncBuffer
	p, err := New(cfg, zerolog.New(&logs))
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	if err := p.Start(); err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		p.Shutdown(ctx)
	})
	return p, p.Frontends[0].Addrs()[0].String(), &logs
}

// logLines returns the access-log lines in logs.
func logLines(t *testing.T, logs *testutil.SyncBuffer) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(l), &m) == nil && m["termination_state"] != nil {
			out = append(out, m)
		}
	}
	return out
}

// echoHandler answers with the server's name, the protocol it was spoken
// to in, the request's path and its body's length, and a trailer.
func echoHandler(name string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		w.Header().Set("X-Server", name)
		w.Header().Set("Trailer", "X-Sum")
		fmt.Fprintf(w, "%s %s %s %d", name, r.Proto, r.URL.RequestURI(), len(b))
		w.Header().Set("X-Sum", fmt.Sprint(len(b)))
	}
}

// TestH2Translations sends requests from HTTP/1.1 and HTTP/2 clients to
// HTTP/1.1 and HTTP/2 servers: each reaches its server in the server's
// protocol, with its path, body and X-Forwarded-For, and the response
// comes back whole with its trailer.
func TestH2Translations(t *testing.T) {
	for _, tc := range []struct {
		name           string
		client, server string
	}{
		{"h2 client to h1 server", "h2", ""},
		{"h2 client to h2 server", "h2", "h2"},
		{"h1 client to h2 server", "h1", "h2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			up := h2cUpstream(t, echoHandler("s1"))
			cfg := h2Config([]string{up.Listener.Addr().String()}, tc.server)
			if tc.client == "h1" {
				cfg.Frontends[0].BindOptions = nil
			}
			p, addr, logs := startLogged(t, cfg)
			var rt http.RoundTripper = h2cTransport()
			if tc.client == "h1" {
				tr := &http.Transport{}
				defer tr.CloseIdleConnections()
				rt = tr
			} else {
				defer rt.(*http2.Transport).CloseIdleConnections()
			}
			wantProto := "HTTP/1.1"
			if tc.server == "h2" {
				wantProto = "HTTP/2.0"
			}
			for _, body := range []string{"", "hello", strings.Repeat("x", 100000)} {
				var rb io.Reader
				method := "GET"
				if body != "" {
					rb, method = strings.NewReader(body), "POST"
				}
				req, _ := http.NewRequest(method, "http://"+addr+"/p/q?a=1", rb)
				resp, err := rt.RoundTrip(req)
				if err != nil {
					t.Fatalf("%s %d bytes: %v", method, len(body), err)
				}
				got, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				want := fmt.Sprintf("s1 %s /p/q?a=1 %d", wantProto, len(body))
				if resp.StatusCode != 200 || string(got) != want {
					t.Errorf("got %d %q, want 200 %q", resp.StatusCode, got, want)
				}
				if s := resp.Trailer.Get("X-Sum"); s != fmt.Sprint(len(body)) {
					t.Errorf("trailer X-Sum: got %q, want %q", s, fmt.Sprint(len(body)))
				}
			}
			waitFor(t, 5*time.Second, "3 log lines", func() bool { return len(logLines(t, logs)) == 3 })
			lines := logLines(t, logs)
			wantReq := "GET /p/q?a=1 HTTP/1.1"
			if tc.client == "h2" {
				wantReq = "GET /p/q?a=1 HTTP/2.0"
			}
			if lines[0]["request"] != wantReq || lines[0]["termination_state"] != "--" || lines[0]["status"] != 200.0 {
				t.Errorf("log: got %v, want request %q, status 200, flags --", lines[0], wantReq)
			}
			// The streams of the server connections, as HAProxy counts
			// them: h2_backend_total_streams 3, none open at the end.
			if tc.server == "h2" {
				h := &p.Backends[0].H2
				waitFor(t, 5*time.Second, "the backend's streams to end", func() bool { return h.OpenStreams.Load() == 0 })
				if n := h.TotalStreams.Load(); n != 3 {
					t.Errorf("h2_backend_total_streams %d, want 3", n)
				}
			}
		})
	}
}

// TestH2Curl drives the HTTP/2 bind with curl --http2-prior-knowledge (a
// GET and a POST, one connection each: curl 7.88 cannot reuse a prior
// knowledge connection for a second URL, with HAProxy 2.6 as with
// fulcrum): the responses, the h2 counters and the access log lines.
func TestH2Curl(t *testing.T) {
	curl := testutil.NeedTool(t, "curl", "curl")
	up := newUpstream(t, "s1")
	p, addr, logs := startLogged(t, h2Config([]string{up.addr()}, ""))
	for _, args := range [][]string{{"http://" + addr + "/a"}, {"-d", "hello", "http://" + addr + "/b"}} {
		out, err := exec.Command(curl, append([]string{"-sS", "--http2-prior-knowledge", "-o", "-", "-w", "%{http_version} %{http_code}"}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("curl: %v\n%s", err, out)
		}
		if got, want := string(out), "s1\n2 200"; got != want {
			t.Errorf("curl %v: got %q, want %q", args, got, want)
		}
	}
	waitFor(t, 5*time.Second, "connections closed and logged", func() bool {
		return p.Frontends[0].H2.OpenConns.Load() == 0 && len(logLines(t, logs)) == 2
	})
	h := &p.Frontends[0].H2
	if h.TotalConns.Load() != 2 || h.TotalStreams.Load() != 2 || h.HeadersRcvd.Load() != 2 || h.DataRcvd.Load() != 1 || h.SettingsRcvd.Load() < 2 {
		t.Errorf("h2 counters: conns %d, streams %d, headers %d, data %d, settings %d; want 2, 2, 2, 1, >= 2",
			h.TotalConns.Load(), h.TotalStreams.Load(), h.HeadersRcvd.Load(), h.DataRcvd.Load(), h.SettingsRcvd.Load())
	}
	lines := logLines(t, logs)
	if lines[1]["request"] != "POST /b HTTP/2.0" || lines[1]["status"] != 200.0 {
		t.Errorf("log: got %v, want request \"POST /b HTTP/2.0\", status 200", lines[1])
	}
}

// TestH2Nghttp fetches over HTTP/2 with nghttp and loads the bind with
// h2load (multiplexed streams on few connections): every request served,
// spread evenly by roundrobin.
func TestH2Nghttp(t *testing.T) {
	nghttp := testutil.NeedTool(t, "nghttp", "nghttp2-client")
	h2load := testutil.NeedTool(t, "h2load", "nghttp2-client")
	s1, s2 := newUpstream(t, "s1"), newUpstream(t, "s2")
	_, addr, _ := startLogged(t, h2Config([]string{s1.addr(), s2.addr()}, ""))
	out, err := exec.Command(nghttp, "-n", "-s", "http://"+addr+"/x", "http://"+addr+"/y").CombinedOutput()
	if err != nil {
		t.Fatalf("nghttp: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "200") {
		t.Errorf("nghttp: no 200 in\n%s", out)
	}
	out, err = exec.Command(h2load, "-n", "400", "-c", "4", "-m", "10", "http://"+addr+"/").CombinedOutput()
	if err != nil {
		t.Fatalf("h2load: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "400 succeeded, 0 failed, 0 errored") {
		t.Errorf("h2load: not all succeeded:\n%s", out)
	}
	if a, b := s1.requests.Load(), s2.requests.Load(); a != 201 || b != 201 {
		t.Errorf("requests per server: got %d and %d, want 201 and 201 (roundrobin)", a, b)
	}
}

// framer is a raw HTTP/2 client connection, for the protocol abuses.
type framer struct {
	c   net.Conn
	fr  *http2.Framer
	enc *hpack.Encoder
	buf bytes.Buffer
}

// dialFramer opens a raw HTTP/2 connection: preface and empty SETTINGS.
func dialFramer(t *testing.T, addr string) *framer {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	f := &framer{c: c, fr: http2.NewFramer(c, c)}
	f.enc = hpack.NewEncoder(&f.buf)
	c.SetDeadline(time.Now().Add(20 * time.Second))
	io.WriteString(c, http2.ClientPreface)
	f.fr.WriteSettings()
	return f
}

// headers encodes a GET request head for path.
func (f *framer) headers(path string) []byte {
	f.buf.Reset()
	for _, kv := range [][2]string{{":method", "GET"}, {":scheme", "http"}, {":authority", "x"}, {":path", path}} {
		f.enc.WriteField(hpack.HeaderField{Name: kv[0], Value: kv[1]})
	}
	return append([]byte(nil), f.buf.Bytes()...)
}

// goAway reads frames until a GOAWAY (acknowledging nothing) and returns
// its code, or fails.
func (f *framer) goAway(t *testing.T) http2.ErrCode {
	t.Helper()
	for {
		fr, err := f.fr.ReadFrame()
		if err != nil {
			t.Fatalf("no GOAWAY before %v", err)
		}
		if ga, ok := fr.(*http2.GoAwayFrame); ok {
			return ga.ErrCode
		}
	}
}

// TestH2Protections: rapid reset, a CONTINUATION flood, a PING flood and
// a SETTINGS flood each get GOAWAY(ENHANCE_YOUR_CALM), an HPACK bomb
// GOAWAY(COMPRESSION_ERROR) as in HAProxy 2.6; each is counted, while
// another client keeps being served.
func TestH2Protections(t *testing.T) {
	up := newUpstream(t, "s1")
	p, addr, _ := startLogged(t, h2Config([]string{up.addr()}, ""))
	h := &p.Frontends[0].H2
	tr := h2cTransport()
	defer tr.CloseIdleConnections()
	served := func() {
		t.Helper()
		resp, err := tr.RoundTrip(mustReq(t, "http://"+addr+"/ok"))
		if err != nil {
			t.Fatalf("other client: %v", err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("other client: got %d, want 200", resp.StatusCode)
		}
	}
	t.Run("rapid reset", func(t *testing.T) {
		f := dialFramer(t, addr)
		hb := f.headers("/reset")
		var wg sync.WaitGroup
		wg.Add(1)
		var code http2.ErrCode
		go func() { defer wg.Done(); code = f.goAway(t) }()
		for id := uint32(1); id < 2*1000; id += 2 {
			if f.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: hb, EndStream: true, EndHeaders: true}) != nil {
				break
			}
			if f.fr.WriteRSTStream(id, http2.ErrCodeCancel) != nil {
				break
			}
			if id%50 == 1 {
				served()
			}
		}
		wg.Wait()
		if code != http2.ErrCodeEnhanceYourCalm {
			t.Errorf("GOAWAY code: got %v, want ENHANCE_YOUR_CALM", code)
		}
		if n := h.RapidReset.Load(); n != 1 {
			t.Errorf("rapid resets counted: got %d, want 1", n)
		}
		served()
	})
	t.Run("continuation flood", func(t *testing.T) {
		f := dialFramer(t, addr)
		f.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: f.headers("/c"), EndStream: true})
		var wg sync.WaitGroup
		wg.Add(1)
		var code http2.ErrCode
		go func() { defer wg.Done(); code = f.goAway(t) }()
		for range 20000 {
			if f.fr.WriteContinuation(1, false, nil) != nil {
				break
			}
		}
		wg.Wait()
		if code != http2.ErrCodeEnhanceYourCalm {
			t.Errorf("GOAWAY code: got %v, want ENHANCE_YOUR_CALM", code)
		}
		if n := h.HeaderFlood.Load(); n != 1 {
			t.Errorf("header floods counted: got %d, want 1", n)
		}
		served()
	})
	t.Run("ping flood", func(t *testing.T) {
		f := dialFramer(t, addr)
		var wg sync.WaitGroup
		wg.Add(1)
		var code http2.ErrCode
		go func() { defer wg.Done(); code = f.goAway(t) }()
		for i := range 5000 {
			if f.fr.WritePing(false, [8]byte{byte(i), byte(i >> 8)}) != nil {
				break
			}
		}
		wg.Wait()
		if code != http2.ErrCodeEnhanceYourCalm {
			t.Errorf("GOAWAY code: got %v, want ENHANCE_YOUR_CALM", code)
		}
		if n := h.ControlFlood.Load(); n != 1 {
			t.Errorf("control floods counted: got %d, want 1", n)
		}
		served()
	})
	t.Run("settings flood", func(t *testing.T) {
		f := dialFramer(t, addr)
		var wg sync.WaitGroup
		wg.Add(1)
		var code http2.ErrCode
		go func() { defer wg.Done(); code = f.goAway(t) }()
		for range 5000 {
			if f.fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 65535}) != nil {
				break
			}
		}
		wg.Wait()
		if code != http2.ErrCodeEnhanceYourCalm {
			t.Errorf("GOAWAY code: got %v, want ENHANCE_YOUR_CALM", code)
		}
		if n := h.ControlFlood.Load(); n != 2 {
			t.Errorf("control floods counted: got %d, want 2 (the PING flood's and this one)", n)
		}
		served()
	})
	t.Run("hpack bomb", func(t *testing.T) {
		f := dialFramer(t, addr)
		f.buf.Reset()
		for _, kv := range [][2]string{{":method", "GET"}, {":scheme", "http"}, {":authority", "x"}, {":path", "/bomb"}} {
			f.enc.WriteField(hpack.HeaderField{Name: kv[0], Value: kv[1]})
		}
		// One 4 KB field in the dynamic table, then referenced 40 times:
		// 160 KB decoded from a few hundred bytes.
		f.enc.WriteField(hpack.HeaderField{Name: "x-bomb", Value: strings.Repeat("b", 4000)})
		for range 40 {
			f.enc.WriteField(hpack.HeaderField{Name: "x-bomb", Value: strings.Repeat("b", 4000)})
		}
		var wg sync.WaitGroup
		wg.Add(1)
		var code http2.ErrCode
		go func() { defer wg.Done(); code = f.goAway(t) }()
		f.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: f.buf.Bytes(), EndStream: true, EndHeaders: true})
		wg.Wait()
		if code != http2.ErrCodeCompression {
			t.Errorf("GOAWAY code: got %v, want COMPRESSION_ERROR (as HAProxy 2.6)", code)
		}
		if n := h.HeaderFlood.Load(); n != 2 {
			t.Errorf("header floods counted: got %d, want 2 (the CONTINUATION flood's and the bomb)", n)
		}
		served()
	})
	// A GOAWAY is counted once written, which the client may see first:
	// wait for the last one's count.
	waitFor(t, 5*time.Second, "5 connection errors counted", func() bool { return h.ConnProtoErr.Load() >= 5 })
	if n := h.ConnProtoErr.Load(); n != 5 {
		t.Errorf("connection protocol errors: got %d, want 5 (one per abuse)", n)
	}
	if up.requests.Load() > 1200 {
		t.Errorf("server got %d requests: resets were not cut off", up.requests.Load())
	}
}

func mustReq(t *testing.T, url string) *http.Request {
	req, err := http.NewRequest("GET", url, nil)
	if err != nil {
		t.Fatal(err)
	}
	return req
}

// TestH2ClientReset: a client that resets its stream while the server
// thinks is a client abort (CD in the log, counted), and the server side
// is freed at once: an HTTP/1.1 server's connection is closed, an HTTP/2
// server's stream is reset; the client connection keeps serving.
func TestH2ClientReset(t *testing.T) {
	for _, proto := range []string{"", "h2"} {
		t.Run("server "+map[string]string{"": "h1", "h2": "h2"}[proto], func(t *testing.T) {
			started, freed := make(chan struct{}, 1), make(chan struct{}, 1)
			up := h2cUpstream(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path == "/hold" {
					started <- struct{}{}
					<-r.Context().Done()
					freed <- struct{}{}
					return
				}
				io.WriteString(w, "ok")
			}))
			p, addr, logs := startLogged(t, h2Config([]string{up.Listener.Addr().String()}, proto))
			f := dialFramer(t, addr)
			f.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: f.headers("/hold"), EndStream: true, EndHeaders: true})
			select {
			case <-started:
			case <-time.After(5 * time.Second):
				t.Fatal("the request never reached the server")
			}
			f.fr.WriteRSTStream(1, http2.ErrCodeCancel)
			select {
			case <-freed:
			case <-time.After(5 * time.Second):
				t.Fatal("the server side was not freed after the client's RST_STREAM")
			}
			// The connection goes on: stream 3 is served.
			f.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 3, BlockFragment: f.headers("/next"), EndStream: true, EndHeaders: true})
			dec := hpack.NewDecoder(4096, nil)
			for {
				fr, err := f.fr.ReadFrame()
				if err != nil {
					t.Fatalf("stream 3: %v", err)
				}
				if hf, ok := fr.(*http2.HeadersFrame); ok && hf.StreamID == 3 {
					if fields, _ := dec.DecodeFull(hf.HeaderBlockFragment()); len(fields) == 0 || fields[0].Value != "200" {
						t.Errorf("stream 3: got %v, want :status 200", fields)
					}
					break
				}
			}
			waitFor(t, 5*time.Second, "2 log lines", func() bool { return len(logLines(t, logs)) == 2 })
			var hold map[string]any
			for _, l := range logLines(t, logs) {
				if l["request"] == "GET /hold HTTP/2.0" {
					hold = l
				}
			}
			if hold == nil || hold["termination_state"] != "CD" {
				t.Errorf("log of GET /hold: got %v, want flags CD", hold)
			}
			s := p.Snapshot()
			if s.Backends[0].CliAbrt != 1 || s.Backends[0].Servers[0].CliAbrt != 1 || s.Backends[0].Servers[0].Scur != 0 {
				t.Errorf("backend cli_abrt %d, server cli_abrt %d, server scur %d; want 1, 1, 0",
					s.Backends[0].CliAbrt, s.Backends[0].Servers[0].CliAbrt, s.Backends[0].Servers[0].Scur)
			}
		})
	}
}

// TestH2MaxConcurrentStreams: tune_h2_max_concurrent_streams is announced
// and enforced: with 2, a client opening a third stream while two are in
// flight has it refused (RST_STREAM, counted as a stream protocol error);
// the two are served.
func TestH2MaxConcurrentStreams(t *testing.T) {
	release := make(chan struct{})
	var held sync.WaitGroup
	held.Add(2)
	up := newUpstream(t, "s1")
	up.handler = func(w http.ResponseWriter, r *http.Request) {
		held.Done()
		<-release
		io.WriteString(w, "ok")
	}
	cfg := h2Config([]string{up.addr()}, "")
	cfg.Global.H2MaxStreams = 2
	p, addr, _ := startLogged(t, cfg)
	f := dialFramer(t, addr)
	// The server's SETTINGS announce the limit.
	for {
		fr, err := f.fr.ReadFrame()
		if err != nil {
			t.Fatal(err)
		}
		if sf, ok := fr.(*http2.SettingsFrame); ok && !sf.IsAck() {
			if v, ok := sf.Value(http2.SettingMaxConcurrentStreams); !ok || v != 2 {
				t.Errorf("SETTINGS_MAX_CONCURRENT_STREAMS: got %d (%v), want 2", v, ok)
			}
			f.fr.WriteSettingsAck()
			break
		}
	}
	for _, id := range []uint32{1, 3} {
		f.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: f.headers("/held"), EndStream: true, EndHeaders: true})
	}
	held.Wait()
	f.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 5, BlockFragment: f.headers("/third"), EndStream: true, EndHeaders: true})
	var refused http2.ErrCode
	ok := map[uint32]bool{}
	for refused == 0 || len(ok) < 2 {
		fr, err := f.fr.ReadFrame()
		if err != nil {
			t.Fatalf("reading: %v (refused %v, served %v)", err, refused, ok)
		}
		switch fr := fr.(type) {
		case *http2.RSTStreamFrame:
			if fr.StreamID != 5 {
				t.Fatalf("stream %d reset (%v), want only stream 5", fr.StreamID, fr.ErrCode)
			}
			refused = fr.ErrCode
			close(release)
		case *http2.DataFrame:
			if fr.StreamEnded() {
				ok[fr.StreamID] = true
			}
		}
	}
	if refused != http2.ErrCodeProtocol && refused != http2.ErrCodeRefusedStream {
		t.Errorf("stream 5 reset with %v, want PROTOCOL_ERROR or REFUSED_STREAM", refused)
	}
	if n := up.requests.Load(); n != 2 {
		t.Errorf("server got %d requests, want 2", n)
	}
	// As HAProxy 2.6.12 counts it (measured with max-concurrent-streams
	// 1): one RST_STREAM sent on error, no protocol error.
	if h := &p.Frontends[0].H2; h.StrmProtoErr.Load() != 0 || h.RstStreamResp.Load() != 1 {
		t.Errorf("stream protocol errors %d, RST_STREAM sent %d: want 0 and 1", h.StrmProtoErr.Load(), h.RstStreamResp.Load())
	}
}

// An HTTP/2 client's log line counts the response as an HTTP/1 client's
// does (HAProxy 2.6 logs the same %B for both, measured: 217 and 217 for
// its 503, 116 and 116 for a server's 200): a server's response, and an
// error page (it was the page's body alone for HTTP/2).
func TestH2LoggedBytes(t *testing.T) {
	up := newUpstream(t, "s1")
	for _, down := range []bool{false, true} {
		cfg := h2Config([]string{up.addr()}, "")
		fe := cfg.Frontends[0]
		fe.Binds = append(fe.Binds, "127.0.0.1:0")
		fe.BindOptions = append(fe.BindOptions, &conf.Bind{Addr: "127.0.0.1:0"})
		cfg.Backends[0].Servers[0].Disabled = down
		p, _, logs := startLogged(t, cfg)
		addrs := p.Frontends[0].Addrs()
		want := 200
		if down {
			want = 503
		}
		resp, err := http.Get("http://" + addrs[1].String() + "/x")
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		tr := h2cTransport()
		resp2, err := tr.RoundTrip(mustReq(t, "http://"+addrs[0].String()+"/x"))
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp2.Body)
		resp2.Body.Close()
		tr.CloseIdleConnections()
		if resp.StatusCode != want || resp2.StatusCode != want {
			t.Fatalf("statuses %d (HTTP/1) and %d (HTTP/2), want %d", resp.StatusCode, resp2.StatusCode, want)
		}
		var lines []map[string]any
		waitFor(t, 5e9, "two log lines", func() bool {
			lines = logLines(t, logs)
			return len(lines) == 2
		})
		h1, h2 := lines[0]["bytes_read"], lines[1]["bytes_read"]
		if lines[0]["request"] != "GET /x HTTP/1.1" {
			h1, h2 = h2, h1
		}
		if h1 != h2 || h1 == nil {
			t.Errorf("status %d: bytes_read %v (HTTP/1) and %v (HTTP/2), want them equal", want, h1, h2)
		}
		if down && h1 != float64(len(http1.DenyResponse(503))) {
			t.Errorf("503: bytes_read %v, want %d", h1, len(http1.DenyResponse(503)))
		}
	}
}

// A response head larger than the client writer's 16 KiB buffer is
// counted whole in the log line and bout, from an HTTP/1 server and from
// an HTTP/2 one (a fresh-user trial saw 3,748 bytes logged for a head of
// 20,125: what was left in the buffer after it flushed the rest).
func TestBigResponseHeadCounted(t *testing.T) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Big", strings.Repeat("a", 20000))
		io.WriteString(w, "ok")
	})
	for _, proto := range []string{"", "h2"} {
		up := h2cUpstream(t, h)
		cfg := h2Config([]string{up.Listener.Addr().String()}, proto)
		cfg.Frontends[0].BindOptions = nil // HTTP/1 clients
		p, addr, logs := startLogged(t, cfg)
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		got, err := io.ReadAll(c)
		c.Close()
		if err != nil || !bytes.HasSuffix(got, []byte("\r\n\r\nok")) {
			t.Fatalf("server proto %q: %v, %d bytes ending %q", proto, err, len(got), got[max(0, len(got)-20):])
		}
		var line map[string]any
		waitFor(t, 5e9, "the log line", func() bool {
			lines := logLines(t, logs)
			if len(lines) == 1 {
				line = lines[0]
			}
			return line != nil
		})
		if n := line["bytes_read"]; n != float64(len(got)) {
			t.Errorf("server proto %q: bytes_read %v, want %d (what the client got)", proto, n, len(got))
		}
		if n := p.Snapshot().Frontends[0].CounterValues.Bout; n != int64(len(got)) {
			t.Errorf("server proto %q: bout %d, want %d", proto, n, len(got))
		}
	}
}
