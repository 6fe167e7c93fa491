package proxy

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/fulcrum-proxy/fulcrum/conf"
	"github.com/fulcrum-proxy/fulcrum/proxy/netio"
)

// fuzzReplyDeadline bounds one fuzz input's exchange. The proxy's own
// timeouts (fuzzProxyTimeout) are shorter: a reply that takes longer is a
// hang.
const (
	fuzzReplyDeadline = 5 * time.Second
	fuzzProxyTimeout  = 2 * time.Second
	fuzzCheckEvery    = 100 // a normal request every that many inputs
)

// FuzzHTTPRequest writes arbitrary bytes to a real frontend, on a new TCP
// connection each, half-closes it and reads the reply. One proxy and one
// strict recording upstream (diffupstream_test.go) serve every input of a
// fuzzing process; the frontend denies /admin and tags each request it
// parsed with its client's port (X-Fuzz-Src). Invariants:
//
//   - the proxy answers with well-formed HTTP/1.x responses, or closes;
//   - it never holds the connection past fuzzReplyDeadline (its own
//     timeouts are shorter);
//   - it never panics (that would end the process) and still serves a
//     normal request (checked every fuzzCheckEvery inputs and at the end);
//   - a request it answers 400 never reached the upstream whole: the
//     upstream framed exactly the requests whose answers came from it (a
//     400 for a broken chunked body may follow a head the upstream saw,
//     but never a request it could answer);
//   - the upstream frames only requests the proxy parsed (issue 16 point
//     13's invariant (a)): each carries one X-Fuzz-Src naming a fuzz
//     client, none asks for /admin; one without it was smuggled inside
//     another one's bytes;
//   - the strict upstream never has to refuse what the proxy sent: a
//     proxy forwards only unambiguous HTTP/1.1.
//
// Inputs that are a knownBroken shape of the differential test are
// skipped: they fail today, and TestDifferential tracks them.
func FuzzHTTPRequest(f *testing.F) {
	up := startRecUpstream(f, "fuzz", "X-Fuzz-Src", nil)
	addr, srv := startFuzzProxy(f, up.addr())

	for _, seed := range fuzzHTTPSeeds {
		f.Add([]byte(seed))
	}
	broken := knownBrokenInputs(true)
	var n int
	f.Cleanup(func() {
		if !f.Failed() {
			checkProxyServes(f, addr, up)
		}
	})
	f.Fuzz(func(t *testing.T, data []byte) {
		if name, ok := broken[string(data)]; ok {
			t.Skipf("known broken: %s (%s)", name, knownBroken[name])
		}
		if bytes.HasPrefix(data, []byte("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")) {
			// A first request that is the HTTP/2 preface switches the
			// connection to HTTP/2 (the implicit upgrade), which
			// FuzzH2Frames fuzzes; a preface's first part stays HTTP/1.
			t.Skip("the HTTP/2 preface: the connection is HTTP/2")
		}
		// Each input starts with an empty pool: a server connection an
		// earlier input left desynchronised would make this input fail
		// and the minimised input not reproduce. A smuggled request that
		// is still incomplete keeps the upstream inside it, which
		// exchangeFuzz reports before the pool is emptied.
		defer srv.CloseIdle()
		exchangeFuzz(t, addr, up, data, false)
		if n++; n%fuzzCheckEvery == 0 {
			checkProxyServes(t, addr, up)
		}
	})
}

// FuzzHTTPRequestKeepAlive is FuzzHTTPRequest for a keep-alive
// connection's next request: each input is sent after a first request
// was answered, while a server connection waits in the pool, so that the
// pollers parse, route and send it themselves where they can (issue 21,
// http1's onRequest), or hand it to a worker at the step they stop at.
// The checks are FuzzHTTPRequest's. Its corpus is FuzzHTTPRequest's
// seeds and testdata/fuzz/FuzzHTTPRequestKeepAlive.
func FuzzHTTPRequestKeepAlive(f *testing.F) {
	up := startRecUpstream(f, "fuzz", "X-Fuzz-Src", nil)
	addr, srv := startFuzzProxy(f, up.addr())
	for _, seed := range fuzzHTTPSeeds {
		f.Add([]byte(seed))
	}
	broken := knownBrokenInputs(true)
	var n int
	f.Cleanup(func() {
		if !f.Failed() {
			checkProxyServes(f, addr, up)
		}
	})
	f.Fuzz(func(t *testing.T, data []byte) {
		if name, ok := broken[string(data)]; ok {
			t.Skipf("known broken: %s (%s)", name, knownBroken[name])
		}
		defer srv.CloseIdle()
		exchangeFuzz(t, addr, up, data, true)
		if n++; n%fuzzCheckEvery == 0 {
			checkProxyServes(t, addr, up)
		}
	})
}

// knownBrokenInputs returns the names of the knownBroken shapes of the
// request corpus (requests), by their bytes, or of the response corpus
// answering a GET, by their closeAfter (as "true" or "false") and bytes.
func knownBrokenInputs(requests bool) map[string]string {
	out := map[string]string{}
	if requests {
		for _, sh := range diffRequestShapes {
			if _, ok := knownBroken[sh.name]; ok {
				out[sh.raw] = sh.name
			}
		}
		return out
	}
	for _, sh := range diffResponseShapes {
		if _, ok := knownBroken[sh.name]; ok && sh.req == "" {
			out[fmt.Sprint(sh.closeAfter)+sh.resp] = sh.name
		}
	}
	return out
}

// fuzzHTTPSeeds are valid requests, keep-alive pipelines and request
// smuggling shapes (more are in testdata/fuzz/FuzzHTTPRequest).
var fuzzHTTPSeeds = []string{
	"GET / HTTP/1.1\r\nHost: a\r\n\r\n",
	"GET / HTTP/1.0\r\n\r\n",
	"HEAD /x?y=1 HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n",
	"POST /p HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nhello",
	"POST /p HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
	"POST /p HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n5;ext=1\r\nhello\r\n0\r\nTrailer: x\r\n\r\n",
	"POST /p HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\nok",
	// Keep-alive pipelines.
	"GET /1 HTTP/1.1\r\nHost: a\r\n\r\nGET /2 HTTP/1.1\r\nHost: a\r\n\r\nGET /3 HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n",
	"POST /1 HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n\r\nabcGET /2 HTTP/1.1\r\nHost: a\r\n\r\n",
	"GET /1 HTTP/1.1\r\nHost: a\r\n\r\nGET /bad HTTP/1.1\r\nHost a\r\n\r\n",
	// Smuggling shapes: conflicting or doubtful framing.
	"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: a\r\n\r\n",
	"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nContent-Length: 40\r\n\r\n0\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: a\r\n\r\n",
	"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello!",
	"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5, 6\r\n\r\nhello!",
	"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked, identity\r\n\r\n0\r\n\r\n",
	"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: xchunked\r\n\r\n0\r\n\r\n",
	"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding : chunked\r\n\r\n0\r\n\r\n",
	"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding:\tchunked\r\n\r\n0\r\n\r\n",
	"POST / HTTP/1.1\r\nHost: a\r\n Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
	"POST / HTTP/1.1\r\nHost: a\r\nX: y\r\n\tTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
	"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: +5\r\n\r\nhello",
	"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: -1\r\n\r\n",
	"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 99999999999999999999\r\n\r\n",
	"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\nffffffffffffffffff\r\n",
	"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n5\nhello\n0\n\n",
	"POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
	"GET / HTTP/1.1\nHost: a\n\n",
	"GET / HTTP/1.1\r\nHost: a\r\nX-Fuzz-Src: 1\r\nx-fuzz-src: 2\r\n\r\n",
	"GET  / HTTP/1.1\r\nHost: a\r\n\r\n",
	"GET / HTTP/1.1 \r\nHost: a\r\n\r\n",
	"GET / HTTP/2.0\r\nHost: a\r\n\r\n",
	"GET http://a/ HTTP/1.1\r\nHost: b\r\n\r\n",
	"GET / HTTP/1.1\r\nHost: a\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n",
	"\r\n\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n",
	"GET / HTTP/1.1\r\nHost: a\r\nX: a\x00b\r\n\r\n",
	"",
}

// startFuzzProxy starts one frontend in front of upstream at addr, with
// short timeouts, a rule that denies /admin and one that tags each request
// with its client port. It returns the frontend's address and the server.
func startFuzzProxy(tb testing.TB, upstream string) (string, *Server) {
	tb.Helper()
	cfg, err := conf.Parse("fuzz.toml", []byte(fmt.Sprintf(`
[[frontend]]
name = "www"
bind = ["127.0.0.1:0"]
default_backend = "web"
http_request = ["deny if { path_beg /admin }", "set-header X-Fuzz-Src %%[src_port]"]
[[backend]]
name = "web"
[[backend.server]]
name = "s1"
address = %q
`, upstream)))
	if err != nil {
		tb.Fatalf("config: %v", err)
	}
	fe, be := cfg.Frontends[0], cfg.Backends[0]
	fe.TimeoutClient, fe.TimeoutHTTPRequest = fuzzProxyTimeout, fuzzProxyTimeout
	be.TimeoutConnect, be.TimeoutServer = fuzzProxyTimeout, fuzzProxyTimeout
	p, err := New(cfg, zerolog.Nop())
	if err != nil {
		tb.Fatalf("New: %v", err)
	}
	if err := p.Start(); err != nil {
		tb.Fatalf("Start: %v", err)
	}
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		p.Shutdown(ctx)
	})
	return p.Frontends[0].Addrs()[0].String(), p.Backends[0].Servers()[0]
}

// fuzzReply is what one input got back.
type fuzzReply struct {
	raw   []byte
	resps []fuzzResp
	reset bool // the proxy reset the connection: the tail may be lost
}

type fuzzResp struct {
	status   int
	upstream bool // the response came from the upstream (X-Upstream)
}

// exchangeFuzz sends data on a new connection and checks the reply. With
// warm, a first GET is answered on the connection before data is sent,
// so that data arrives while the connection waits for its next request
// with a server connection pooled: on the epoll layer the pollers read,
// route and send it themselves (http1's onRequest).
func exchangeFuzz(t *testing.T, addr string, up *recUpstream, data []byte, warm bool) {
	c, err := net.DialTimeout("tcp", addr, fuzzReplyDeadline)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	defer c.Close()
	port := strconv.Itoa(c.LocalAddr().(*net.TCPAddr).Port)
	up.expect(port)
	c.SetDeadline(time.Now().Add(fuzzReplyDeadline))
	br := bufio.NewReader(c)
	answered := 0 // requests of this client the upstream answered
	if warm {
		io.WriteString(c, "GET /warm HTTP/1.1\r\nHost: a\r\n\r\n")
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("the warm-up request: %v", err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("the warm-up request: status %d", resp.StatusCode)
		}
		answered = 1
	}
	// The proxy may close before it has read everything (a 400 on the
	// first request of a pipeline): write in the background and ignore
	// write errors, so that a large input cannot block the read.
	wrote := make(chan struct{})
	go func() {
		defer close(wrote)
		c.Write(data)
		c.(*net.TCPConn).CloseWrite()
	}()
	raw, rerr := io.ReadAll(br)
	<-wrote
	reply := fuzzReply{raw: raw}
	switch {
	case rerr == nil:
	case netio.IsTimeout(rerr):
		t.Fatalf("no reply and no close within %v; got %q so far", fuzzReplyDeadline, raw)
	case errors.Is(rerr, net.ErrClosed) || netio.IsConnReset(rerr):
		reply.reset = true
	default:
		t.Fatalf("read: %v", rerr)
	}
	reply.resps = parseFuzzReplies(t, raw, reply.reset)
	t.Logf("responses %+v (reset %v)", reply.resps, reply.reset)

	// The upstream reads on its own: once it is inside no request (a
	// request the proxy forwarded in part ends when the proxy closes, by
	// its timeouts), everything this input made it frame is recorded.
	if !up.waitQuiet(fuzzReplyDeadline) {
		t.Fatalf("the upstream is still inside a request %v after the exchange", fuzzReplyDeadline)
	}
	stray, rejects := up.take()
	if len(stray) > 0 {
		t.Fatalf("the upstream framed requests the proxy did not parse (smuggled) or past its deny rule: %q\ninput %q\nreply %q", stray, data, raw)
	}
	if len(rejects) > 0 {
		t.Fatalf("the proxy forwarded bytes a strict HTTP/1.1 server refuses: %q\ninput %q\nreply %q", rejects, data, raw)
	}

	// A proxy-made 400 ends the connection, and its request never reached
	// the upstream whole: the upstream framed exactly the requests of this
	// client that it answered before the 400.
	for i, r := range reply.resps {
		if r.upstream {
			answered++
		}
		if r.status != 400 || r.upstream {
			continue
		}
		if i != len(reply.resps)-1 {
			t.Fatalf("responses %+v: the proxy's 400 is not the last", reply.resps)
		}
		if got := len(up.framed(port)); got != answered {
			t.Fatalf("the proxy answered 400 after %d upstream responses, but the upstream framed %d whole requests from this client\ninput %q\nreply %q",
				answered, got, data, raw)
		}
	}
}

// parseFuzzReplies splits raw into HTTP/1.x responses, failing on anything
// else. After a reset, the last response may be cut short.
func parseFuzzReplies(t *testing.T, raw []byte, reset bool) []fuzzResp {
	t.Helper()
	var out []fuzzResp
	br := bufio.NewReader(bytes.NewReader(raw))
	for {
		if _, err := br.Peek(1); err == io.EOF {
			return out
		}
		line, _ := br.Peek(min(br.Buffered(), 9))
		if !bytes.HasPrefix(line, []byte("HTTP/1.")) && !(reset && bytes.HasPrefix([]byte("HTTP/1."), line)) {
			t.Fatalf("reply does not start with an HTTP/1.x status line: %q (whole reply %q)", line, raw)
		}
		resp, err := http.ReadResponse(br, nil)
		if err == nil {
			_, err = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		if err != nil {
			if reset {
				return out
			}
			t.Fatalf("malformed response: %v (whole reply %q)", err, raw)
		}
		if resp.ProtoMajor != 1 {
			t.Fatalf("response protocol %q", resp.Proto)
		}
		out = append(out, fuzzResp{status: resp.StatusCode, upstream: resp.Header.Get("X-Upstream") != ""})
	}
}

// checkProxyServes sends one normal request and wants the upstream's 200.
func checkProxyServes(tb testing.TB, addr string, up *recUpstream) {
	tb.Helper()
	c, err := net.DialTimeout("tcp", addr, fuzzReplyDeadline)
	if err != nil {
		tb.Fatalf("the proxy no longer accepts: %v", err)
	}
	defer c.Close()
	port := strconv.Itoa(c.LocalAddr().(*net.TCPAddr).Port)
	up.expect(port)
	c.SetDeadline(time.Now().Add(fuzzReplyDeadline))
	if _, err := io.WriteString(c, "GET /health HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n"); err != nil {
		tb.Fatalf("write: %v", err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		tb.Fatalf("the proxy no longer serves a normal request: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("X-Upstream") == "" || len(up.framed(port)) != 1 {
		tb.Fatalf("normal request: status %d, X-Upstream %q, upstream framed %v", resp.StatusCode, resp.Header.Get("X-Upstream"), up.framed(port))
	}
}
