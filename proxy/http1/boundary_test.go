package http1

import (
	"bufio"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/fulcrum-proxy/fulcrum/proxy/netio"
)

// Issue 16's unit cases of the engine: the linear hop-by-hop
// classification, the strict chunked codec and the pool (the end-to-end
// cases are in proxy/boundary_test.go).

// The fields Connection lists are classified in one linear pass: every
// listed field, whatever its case or position, and none of the others.
func TestListedFieldsMarked(t *testing.T) {
	var b strings.Builder
	b.WriteString("GET / HTTP/1.1\r\nHost: x\r\n")
	for i := range 90 {
		fmt.Fprintf(&b, "X-H%d: v\r\n", i)
	}
	b.WriteString("Connection: x-h7, X-H80, content-length, host, cookie, keep-alive\r\nConnection: x-h3\r\nCookie: a=b\r\n\r\n")
	var h head
	if err := h.readHead(bufio.NewReader(strings.NewReader(b.String())), false); err != nil {
		t.Fatal(err)
	}
	if err := h.parse(false); err != nil {
		t.Fatal(err)
	}
	var dropped []string
	for i := range h.headers {
		if h.headers[i].isHopByHop(false) {
			dropped = append(dropped, string(h.headers[i].name))
		}
	}
	if got, want := strings.Join(dropped, ","), "X-H3,X-H7,X-H80,Connection,Connection"; got != want {
		t.Errorf("dropped %s, want %s", got, want)
	}
}

// BenchmarkParseManyListed is the quadratic case of issue 16: a head
// near the size limit with many fields and a Connection field listing
// many names. It is linear now (about as fast per byte as a plain head).
func BenchmarkParseManyListed(b *testing.B) {
	var sb strings.Builder
	sb.WriteString("GET / HTTP/1.1\r\nHost: x\r\nConnection: ")
	for i := range 4000 {
		fmt.Fprintf(&sb, "x%d,", i)
	}
	sb.WriteString("x\r\n")
	for i := range 99 {
		fmt.Fprintf(&sb, "X%d: %s\r\n", i, strings.Repeat("v", 300))
	}
	sb.WriteString("\r\n")
	raw := sb.String()
	r := strings.NewReader(raw)
	br := bufio.NewReaderSize(r, 64<<10)
	h := head{maxHdr: 200}
	b.SetBytes(int64(len(raw)))
	b.ReportAllocs()
	for b.Loop() {
		r.Reset(raw)
		br.Reset(r)
		if err := h.readHead(br, false); err != nil {
			b.Fatal(err)
		}
		if err := h.parse(false); err != nil {
			b.Fatal(err)
		}
	}
}

// Point 2: chunked bodies are parsed strictly and written anew.
func TestCopyChunkedStrict(t *testing.T) {
	for _, tc := range []struct {
		name, in, out string // out "" = errBadChunk
	}{
		{"plain", "5\r\nhello\r\n0\r\n\r\n", "5\r\nhello\r\n0\r\n\r\n"},
		{"upper hex and zeros", "000A\r\n0123456789\r\n00\r\n\r\n", "a\r\n0123456789\r\n0\r\n\r\n"},
		{"extension dropped", "5;name=\"v;x\"\r\nhello\r\n0;last\r\n\r\n", "5\r\nhello\r\n0\r\n\r\n"},
		{"spaces before extension", "5 \t;x\r\nhello\r\n0\r\n\r\n", "5\r\nhello\r\n0\r\n\r\n"},
		{"trailers", "5\r\nhello\r\n0\r\nX-Sum: 1\r\nX-B:2\r\n\r\n", "5\r\nhello\r\n0\r\nX-Sum: 1\r\nX-B:2\r\n\r\n"},
		{"LF after data (the issue's)", "1\r\nA\n105\r\n", ""},
		{"no CRLF after data", "5\r\nhelloXX0\r\n\r\n", ""},
		{"plus sign", "+5\r\nhello\r\n0\r\n\r\n", ""},
		{"leading space", " 5\r\nhello\r\n0\r\n\r\n", ""},
		{"bare CR in size", "5\r\r\nhello\r\n0\r\n\r\n", ""},
		{"bare LF size line", "5\nhello\r\n0\r\n\r\n", ""},
		{"0x prefix", "0x5\r\nhello\r\n0\r\n\r\n", ""},
		{"empty size", "\r\nhello\r\n0\r\n\r\n", ""},
		{"leading zeros", "000000000000000005\r\nhello\r\n0\r\n\r\n", "5\r\nhello\r\n0\r\n\r\n"},
		{"14 significant digits", "10000000000000\r\n", ""},
		{"overflow", "fffffffffffffffff\r\n", ""},
		{"control in extension", "5;a\x01b\r\nhello\r\n0\r\n\r\n", ""},
		{"bad trailer (the fuzzer's)", "0\r\n\r\r\n\r\n", ""},
		{"folded trailer", "0\r\nX-A: 1\r\n b\r\n\r\n", ""},
		{"trailer without colon", "0\r\nGET / HTTP/1.1\r\n\r\n", ""},
		{"trailer with NUL", "0\r\nX-A: \x00\r\n\r\n", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out strings.Builder
			w := bufio.NewWriter(&out)
			n, err := copyChunked(w, bufio.NewReader(strings.NewReader(tc.in)), nil, 0)
			w.Flush()
			if tc.out == "" {
				if err != errBadChunk {
					t.Fatalf("got %q, %v; want errBadChunk", out.String(), err)
				}
				if strings.Contains(out.String(), "105") || strings.Contains(out.String(), "\r\r") {
					t.Errorf("broken framing written: %q", out.String())
				}
				return
			}
			if err != nil || out.String() != tc.out || n != int64(len(tc.out)) {
				t.Errorf("got %q (%d), %v; want %q", out.String(), n, err, tc.out)
			}
		})
	}
}

// The check made on every take from the pool, without the sweeper: a
// connection with stray bytes or a close is not handed out.
func TestPoolTakeChecksTheSocket(t *testing.T) {
	for _, tc := range []struct {
		name  string
		peer  func(c net.Conn)
		wantS bool
	}{
		{"idle", func(net.Conn) {}, true},
		{"stray byte", func(c net.Conn) { c.Write([]byte("x")) }, false},
		{"closed", func(c net.Conn) { c.Close() }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			c, err := net.Dial("tcp", l.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			peer, err := l.Accept()
			if err != nil {
				t.Fatal(err)
			}
			defer peer.Close()
			up := &Upstream{}
			up.Pool.Configure(-1, 0, 0)
			uc := newUpConn(c, up, "")
			uc.release(time.Now())
			tc.peer(peer)
			if !tc.wantS {
				// The byte or FIN is on its way on loopback: wait until
				// the socket shows it.
				waitFor(t, 2*time.Second, "the peer's bytes", func() bool { return !socketIdle(uc.raw) })
			}
			got := up.Pool.get(false, "")
			if (got != nil) != tc.wantS {
				t.Fatalf("get returned %v, want a connection: %v", got, tc.wantS)
			}
			if got != nil {
				got.close()
			}
		})
	}
}

// Point 5: pool_max_conn bounds the idle connections of a server, and
// a purge closes half of those unused since the previous one, keeping
// pool_low_conn.
func TestPoolMaxAndPurge(t *testing.T) {
	mk := func() *upConn {
		c1, c2 := net.Pipe()
		t.Cleanup(func() { c2.Close() })
		return &upConn{c: c1, br: netio.GetReader(c1), bw: netio.GetWriter(c1)}
	}
	p := &Pool{max: 3, low: 1, purgeDelay: 5 * time.Second}
	t0 := time.Unix(1000, 0)
	for range 5 {
		p.put(mk(), t0)
	}
	if p.Len() != 3 {
		t.Fatalf("idle %d after 5 puts, want pool_max_conn 3", p.Len())
	}
	p.purge(t0) // the first purge only starts the clock
	p.purge(t0.Add(4 * time.Second))
	if p.Len() != 3 {
		t.Fatalf("idle %d before the delay, want 3", p.Len())
	}
	// One connection used (taken and put back) since: it stays.
	p.put(p.getNoCheck(), t0.Add(6*time.Second))
	p.purge(t0.Add(7 * time.Second)) // 2 stale, above low: close 1
	if p.Len() != 2 {
		t.Fatalf("idle %d after the first purge, want 2", p.Len())
	}
	p.purge(t0.Add(13 * time.Second)) // 2 stale, 1 above low: close 1
	p.purge(t0.Add(19 * time.Second)) // 1 left = low: keep it
	if p.Len() != 1 {
		t.Fatalf("idle %d after three purges, want pool_low_conn 1", p.Len())
	}
	none := &Pool{max: 0}
	none.put(mk(), t0)
	if none.Len() != 0 {
		t.Errorf("pool_max_conn 0 kept a connection")
	}
	p.CloseAll()
}

// getNoCheck pops the newest idle connection without the socket check
// (net.Pipe has no descriptor to peek at).
func (p *Pool) getNoCheck() *upConn {
	p.mu.Lock()
	defer p.mu.Unlock()
	ic := p.idle[len(p.idle)-1]
	p.idle = p.idle[:len(p.idle)-1]
	return ic.uc
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// A response's Transfer-Encoding is a list of codings; empty elements
// are ignored ("chunked," is chunked: read as not chunked, the body was
// relayed until the close with the field that makes a client read it
// chunked); chunked that is not the last coding ("chunked, identity",
// which a client may frame by the chunked; HAProxy 502s it, a fresh-user
// trial found it relayed to the close) and anything else are refused.
func TestLastCodingChunked(t *testing.T) {
	for _, tc := range []struct {
		in          string
		chunked, ok bool
	}{
		{"chunked", true, true},
		{"Chunked,", true, true},
		{"gzip, chunked", true, true},
		{" , gzip ,, chunked , ", true, true},
		{"chunked;q=1", true, true},
		{"chunked, gzip", false, false},
		{"chunked, identity", false, false},
		{"chunked, chunked", false, false},
		{"gzip", false, true},
		{"chunked x", false, false},
		{"C 00000", false, false},
		{",", false, false},
		{"", false, false},
		{";x=1", false, false},
		{"chunked;\x01", false, false},
	} {
		chunked, ok := lastCodingChunked([]byte(tc.in))
		if chunked != tc.chunked || ok != tc.ok {
			t.Errorf("%q: got %v %v, want %v %v", tc.in, chunked, ok, tc.chunked, tc.ok)
		}
	}
}

// The start of a request line is judged as soon as it arrives: a TLS
// ClientHello or binary junk gets a 400 at once.
func TestPlausibleRequestStart(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want bool
	}{
		{"GET / HTTP/1.1\r\n", true},
		{"GE", true},
		{"\r\n\r\nGET /", true},
		{"POST /a?b=c HTTP/1.1\r", true},
		{"\x16\x03\x01\x00\xa5\x01\x00\x00\xa1\x03\x03", false},
		{" GET / HTTP/1.1", false},
		{"G(T / HTTP/1.1", false},
		{"GET /\x00 HTTP/1.1", false},
		{"GET /\ra HTTP/1.1", false},
		{"GET /\xc3\xa9", false},
	} {
		if got := plausibleRequestStart([]byte(tc.in)); got != tc.want {
			t.Errorf("%q: got %v, want %v", tc.in, got, tc.want)
		}
	}
}

// Issue 18, point 2: an idle connection made for one key (the SNI it
// sent) is handed only to a request with the same key, whatever the
// reuse policy's first-request rule says.
func TestPoolKeyedBySNI(t *testing.T) {
	mk := func(key string, uses int) *upConn {
		c1, c2 := net.Pipe()
		t.Cleanup(func() { c2.Close() })
		return &upConn{c: c1, br: netio.GetReader(c1), bw: netio.GetWriter(c1), key: key, uses: uses}
	}
	var p Pool
	p.Configure(-1, 0, 0)
	a, b := mk("a.example", 2), mk("b.example", 2)
	now := time.Now()
	p.put(a, now)
	p.put(b, now)
	if got := p.get(false, "c.example"); got != nil {
		t.Fatalf("a request for c.example got the connection made for %q", got.key)
	}
	if got := p.get(false, ""); got != nil {
		t.Fatalf("a request without SNI got the connection made for %q", got.key)
	}
	if got := p.get(true, "a.example"); got != a {
		t.Fatalf("a.example got %v, want its own connection", got)
	}
	if got := p.get(false, "a.example"); got != nil {
		t.Fatalf("a.example got a second connection (made for %q)", got.key)
	}
	if got := p.get(false, "b.example"); got != b {
		t.Fatalf("b.example got %v, want its own connection", got)
	}
	a.close()
	b.close()
}

// Issue 21: which requests the engine may send again on a new connection
// (and so reuse a recently idle one without looking at it): no body, or
// an idempotent method with a Content-Length body all buffered.
func TestRequestReplayable(t *testing.T) {
	for _, tc := range []struct {
		name, raw string
		want      bool
	}{
		{"GET", "GET / HTTP/1.1\r\nHost: x\r\n\r\n", true},
		{"POST without body", "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n", true},
		{"PUT with its body", "PUT / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc", true},
		{"DELETE with its body", "DELETE / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc", true},
		{"PUT with part of its body", "PUT / HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\n\r\nabc", false},
		{"POST with its body", "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc", false},
		{"PUT chunked", "PUT / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n", false},
		{"PUT expecting 100", "PUT / HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 3\r\n\r\nabc", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var s session
			s.br = bufio.NewReader(strings.NewReader(tc.raw))
			if err := s.req.readHead(s.br, false); err != nil {
				t.Fatal(err)
			}
			if err := s.req.parse(false); err != nil {
				t.Fatal(err)
			}
			s.view.HasBody = s.req.chunked || s.req.contentLength > 0
			s.br.Peek(s.br.Buffered() + 1) // what the client sent is buffered
			if got := s.replayable(); got != tc.want {
				t.Errorf("replayable: %v, want %v", got, tc.want)
			}
		})
	}
}
