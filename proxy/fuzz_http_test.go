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
	"net/http/httputil"
	"strconv"
	"strings"
	"sync"
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
// upstream serve every input of a fuzzing process. Invariants:
//
//   - the proxy answers with well-formed HTTP/1.x responses, or closes;
//   - it never holds the connection past fuzzReplyDeadline (its own
//     timeouts are shorter);
//   - it never panics (that would end the process) and still serves a
//     normal request (checked every fuzzCheckEvery inputs and at the end);
//   - a request it answers 400 never reached the upstream whole: the
//     upstream read to their end exactly the requests whose answers came
//     from it (a 400 for a broken chunked body may follow a head the
//     upstream saw, but never a request it could answer);
//   - every request the upstream sees carries the X-Fuzz-Src header that
//     the frontend sets, once, naming a fuzz client: a request without it
//     was smuggled inside another one's body.
func FuzzHTTPRequest(f *testing.F) {
	up := startFuzzUpstream(f)
	addr := startFuzzProxy(f, up.addr())

	for _, seed := range fuzzHTTPSeeds {
		f.Add([]byte(seed))
	}
	var n int
	f.Cleanup(func() {
		if !f.Failed() {
			checkProxyServes(f, addr, up)
		}
	})
	f.Fuzz(func(t *testing.T, data []byte) {
		exchangeFuzz(t, addr, up, data)
		if n++; n%fuzzCheckEvery == 0 {
			checkProxyServes(t, addr, up)
		}
	})
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
// short timeouts and a rule that tags each request with its client port.
func startFuzzProxy(tb testing.TB, upstream string) string {
	tb.Helper()
	cfg, err := conf.Parse("fuzz.toml", []byte(fmt.Sprintf(`
[[frontend]]
name = "www"
bind = ["127.0.0.1:0"]
default_backend = "web"
http_request = ["set-header X-Fuzz-Src %%[src_port]"]
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
	return p.Frontends[0].Addrs()[0].String()
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

// exchangeFuzz sends data on a new connection and checks the reply.
func exchangeFuzz(t *testing.T, addr string, up *fuzzUpstream, data []byte) {
	c, err := net.DialTimeout("tcp", addr, fuzzReplyDeadline)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	defer c.Close()
	port := strconv.Itoa(c.LocalAddr().(*net.TCPAddr).Port)
	up.expect(port)
	c.SetDeadline(time.Now().Add(fuzzReplyDeadline))
	// The proxy may close before it has read everything (a 400 on the
	// first request of a pipeline): write in the background and ignore
	// write errors, so that a large input cannot block the read.
	wrote := make(chan struct{})
	go func() {
		defer close(wrote)
		c.Write(data)
		c.(*net.TCPConn).CloseWrite()
	}()
	raw, rerr := io.ReadAll(c)
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

	// A proxy-made 400 ends the connection, and its request never reached
	// the upstream whole: once the upstream is done with this client's
	// requests, it has read exactly those it answered before the 400.
	answered := 0
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
		if !up.waitIdle(port, fuzzReplyDeadline) {
			t.Fatalf("the upstream is still reading a request of this client %v after the proxy's 400", fuzzReplyDeadline)
		}
		if got := up.read(port); got != answered {
			t.Fatalf("the proxy answered 400 after %d upstream responses, but the upstream read %d whole requests from this client\ninput %q\nreply %q",
				answered, got, data, raw)
		}
	}
	if bad := up.strays(); len(bad) > 0 {
		// The upstream reads on its own: a request smuggled by an earlier
		// input may show only now.
		t.Fatalf("the upstream saw requests without one valid X-Fuzz-Src (smuggled, by this input or an earlier one?) or with forbidden bytes: %q\ninput %q\nreply %q", bad, data, raw)
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
func checkProxyServes(tb testing.TB, addr string, up *fuzzUpstream) {
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
	if resp.StatusCode != 200 || resp.Header.Get("X-Upstream") == "" || up.read(port) != 1 {
		tb.Fatalf("normal request: status %d, X-Upstream %q, upstream read %d requests", resp.StatusCode, resp.Header.Get("X-Upstream"), up.read(port))
	}
}

// fuzzUpstream is a raw HTTP/1.1 server that counts the requests it reads
// by their X-Fuzz-Src header and answers each with an empty 200 carrying
// X-Upstream. It reads the head itself, so that it sees every request the
// proxy sends, also those Go's parser would refuse.
type fuzzUpstream struct {
	ln      net.Listener
	wg      sync.WaitGroup
	mu      sync.Mutex
	conns   map[net.Conn]struct{}
	ports   map[string]*fuzzClient // by client port, for its last connection
	stray   []string               // heads without one known X-Fuzz-Src, or invalid
	changed chan struct{}          // closed and replaced when a request ends
}

// fuzzClient counts the requests of one client connection.
type fuzzClient struct {
	busy int // heads read whose request has not ended
	read int // requests read whole (then answered)
}

func startFuzzUpstream(tb testing.TB) *fuzzUpstream {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	u := &fuzzUpstream{ln: ln, conns: map[net.Conn]struct{}{}, ports: map[string]*fuzzClient{}, changed: make(chan struct{})}
	u.wg.Add(1)
	go u.accept()
	tb.Cleanup(u.close)
	return u
}

func (u *fuzzUpstream) addr() string { return u.ln.Addr().String() }

func (u *fuzzUpstream) accept() {
	defer u.wg.Done()
	for {
		c, err := u.ln.Accept()
		if err != nil {
			return
		}
		u.mu.Lock()
		if u.conns == nil { // closed
			u.mu.Unlock()
			c.Close()
			return
		}
		u.conns[c] = struct{}{}
		u.wg.Add(1)
		u.mu.Unlock()
		go u.serve(c)
	}
}

// close stops the listener and every connection, and waits for their
// goroutines.
func (u *fuzzUpstream) close() {
	u.ln.Close()
	u.mu.Lock()
	for c := range u.conns {
		c.Close()
	}
	u.conns = nil
	u.mu.Unlock()
	u.wg.Wait()
}

// expect starts counting the requests of a new client connection from
// port. Ports stay known after their connection ends: the upstream may
// read an aborted request's head only after its client is gone.
func (u *fuzzUpstream) expect(port string) {
	u.mu.Lock()
	u.ports[port] = &fuzzClient{}
	u.mu.Unlock()
}

// read returns how many requests of port's connection the upstream read
// whole.
func (u *fuzzUpstream) read(port string) int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.ports[port].read
}

// waitIdle waits until no request of port's connection is being read, at
// most d.
func (u *fuzzUpstream) waitIdle(port string, d time.Duration) bool {
	timer := time.NewTimer(d)
	defer timer.Stop()
	for {
		u.mu.Lock()
		busy, changed := u.ports[port].busy, u.changed
		u.mu.Unlock()
		if busy == 0 {
			return true
		}
		select {
		case <-changed:
		case <-timer.C:
			return false
		}
	}
}

// end ends a request of client c (nil for a stray), read whole or not.
func (u *fuzzUpstream) end(c *fuzzClient, whole bool) {
	if c == nil {
		return
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	c.busy--
	if whole {
		c.read++
	}
	close(u.changed)
	u.changed = make(chan struct{})
}

// strays returns the heads recorded without one expected X-Fuzz-Src and
// forgets them.
func (u *fuzzUpstream) strays() []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	bad := u.stray
	u.stray = nil
	return bad
}

// record finds the client of one request head by its X-Fuzz-Src header
// and marks the request busy; end must follow. A head without one known
// X-Fuzz-Src is a stray, and so is a head that holds a byte RFC 9110
// section 5.5 and RFC 9112 section 3 forbid a proxy to forward (NUL or CR
// inside a line, a control character in the request line): record
// returns nil for them.
func (u *fuzzUpstream) record(head []byte) *fuzzClient {
	if msg := forbiddenInHead(head); msg != "" {
		u.mu.Lock()
		u.stray = append(u.stray, msg+": "+string(head))
		u.mu.Unlock()
		return nil
	}
	var srcs []string
	for _, line := range bytes.Split(head, []byte("\n"))[1:] {
		name, value, ok := bytes.Cut(line, []byte(":"))
		if ok && strings.EqualFold(string(name), "X-Fuzz-Src") {
			srcs = append(srcs, string(bytes.TrimSpace(value)))
		}
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if len(srcs) == 1 {
		if c := u.ports[srcs[0]]; c != nil {
			c.busy++
			return c
		}
	}
	u.stray = append(u.stray, string(head))
	return nil
}

// forbiddenInHead says what a forwarded head holds that it must not.
func forbiddenInHead(head []byte) string {
	lines := bytes.Split(bytes.TrimSuffix(head, []byte("\n")), []byte("\n"))
	for i, line := range lines {
		line = bytes.TrimSuffix(line, []byte("\r"))
		if bytes.ContainsAny(line, "\x00\r") {
			return fmt.Sprintf("NUL or CR in line %d", i+1)
		}
		if i == 0 && bytes.ContainsFunc(line, func(r rune) bool { return r < ' ' || r == 0x7f }) {
			return "control character in the request line"
		}
	}
	return ""
}

const fuzzUpstreamOK = "HTTP/1.1 200 OK\r\nX-Upstream: 1\r\nContent-Length: 0\r\n\r\n"

func (u *fuzzUpstream) serve(c net.Conn) {
	defer u.wg.Done()
	defer func() {
		c.Close()
		u.mu.Lock()
		if u.conns != nil {
			delete(u.conns, c)
		}
		u.mu.Unlock()
	}()
	br := bufio.NewReader(c)
	for u.serveOne(c, br) {
	}
}

// serveOne reads one request from c and answers it. It returns false when
// the connection is to be closed.
func (u *fuzzUpstream) serveOne(c net.Conn, br *bufio.Reader) bool {
	head, err := readFuzzHead(br)
	if len(head) == 0 {
		return false
	}
	// The request ends before its answer is written, so that a client
	// that has the answer finds it counted.
	client, ended := u.record(head), false
	finish := func(whole bool) {
		if !ended {
			ended = true
			u.end(client, whole)
		}
	}
	defer finish(false)
	if err != nil {
		return false
	}
	req, err := http.ReadRequest(bufio.NewReader(bytes.NewReader(head)))
	if err != nil {
		// Still answered: the proxy relays it like any response.
		finish(true)
		io.WriteString(c, "HTTP/1.1 400 Bad Request\r\nX-Upstream: bad\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
		return false
	}
	// The body, framed as the proxy sent it.
	switch {
	case len(req.TransferEncoding) > 0:
		_, err = io.Copy(io.Discard, httputil.NewChunkedReader(br))
		if err == nil { // trailers, up to the empty line
			_, err = readFuzzHead(br)
		}
	case req.ContentLength > 0:
		_, err = io.CopyN(io.Discard, br, req.ContentLength)
	}
	if err != nil {
		return false
	}
	finish(true)
	_, err = io.WriteString(c, fuzzUpstreamOK)
	return err == nil && !req.Close
}

// readFuzzHead reads up to and including an empty line, at most 64 kB.
func readFuzzHead(br *bufio.Reader) ([]byte, error) {
	var head []byte
	for len(head) < 64<<10 {
		line, err := br.ReadSlice('\n')
		head = append(head, line...)
		if err != nil {
			if errors.Is(err, bufio.ErrBufferFull) {
				continue
			}
			return head, err
		}
		if len(bytes.TrimRight(line, "\r\n")) == 0 {
			return head, nil
		}
	}
	return head, errors.New("head too large")
}
