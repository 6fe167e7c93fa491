package proxy

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"
)

// recUpstream is the differential test's server: a raw HTTP/1.1 server
// that frames what it reads strictly (diffstrict_test.go) and records
// each request it framed, per connection and per proxied client. The
// proxy in front tags every request it forwards with a header (tag)
// naming its client connection's source port; a framed request without
// one known tag was not a request the proxy parsed: it was smuggled
// inside another one's bytes.
//
// Each request gets an echo response naming it (connection and request
// number, method, target, tag) in headers and body, unless script
// answers it. A framing violation closes the connection without an
// answer, as a strict server refuses ambiguity, and is recorded with the
// bytes that led to it.
type recUpstream struct {
	name   string
	tag    string
	script func(m *strictMsg) (resp string, closeAfter, ok bool)
	ln     net.Listener
	wg     sync.WaitGroup

	mu      sync.Mutex
	conns   map[net.Conn]struct{} // nil once closed
	nconn   int
	busy    int                   // connections inside a message
	clients map[string]*recClient // by tag value
	stray   []string              // framed requests without one expected tag, or to /admin
	rejects []string              // framing violations, with what led to them
	changed chan struct{}         // closed and replaced when busy or a record changes
}

// recClient holds the requests framed for one client connection.
type recClient struct {
	reqs []recReq
}

// recReq is one framed request.
type recReq struct {
	conn, n        int // the upstream connection and the request's rank on it, from 1
	method, target string
	body           string
}

func (q recReq) String() string {
	return fmt.Sprintf("%d.%d %s %s (%d body bytes)", q.conn, q.n, q.method, q.target, len(q.body))
}

// startRecUpstream listens on 127.0.0.1:0; the listener and every
// connection close at the end of tb.
func startRecUpstream(tb testing.TB, name, tag string, script func(*strictMsg) (string, bool, bool)) *recUpstream {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	u := &recUpstream{
		name: name, tag: tag, script: script, ln: ln,
		conns: map[net.Conn]struct{}{}, clients: map[string]*recClient{}, changed: make(chan struct{}),
	}
	u.wg.Add(1)
	go u.accept()
	tb.Cleanup(u.close)
	return u
}

func (u *recUpstream) addr() string { return u.ln.Addr().String() }

func (u *recUpstream) accept() {
	defer u.wg.Done()
	for {
		c, err := u.ln.Accept()
		if err != nil {
			return
		}
		u.mu.Lock()
		if u.conns == nil {
			u.mu.Unlock()
			c.Close()
			return
		}
		u.conns[c] = struct{}{}
		u.nconn++
		id := u.nconn
		u.wg.Add(1)
		u.mu.Unlock()
		go u.serve(c, id)
	}
}

// close stops the listener and every connection and waits for them.
func (u *recUpstream) close() {
	u.ln.Close()
	u.mu.Lock()
	for c := range u.conns {
		c.Close()
	}
	u.conns = nil
	u.mu.Unlock()
	u.wg.Wait()
}

// notify wakes waiters; u.mu must be held.
func (u *recUpstream) notify() {
	close(u.changed)
	u.changed = make(chan struct{})
}

func (u *recUpstream) setBusy(d int) {
	u.mu.Lock()
	u.busy += d
	u.notify()
	u.mu.Unlock()
}

// expect starts recording the requests of a new client connection whose
// tag value is port, forgetting an earlier connection's with the same
// port.
func (u *recUpstream) expect(port string) {
	u.mu.Lock()
	u.clients[port] = &recClient{}
	u.mu.Unlock()
}

// framed returns the requests framed for port so far.
func (u *recUpstream) framed(port string) []recReq {
	u.mu.Lock()
	defer u.mu.Unlock()
	if c := u.clients[port]; c != nil {
		return append([]recReq(nil), c.reqs...)
	}
	return nil
}

// take returns and forgets the strays and the violations recorded so far.
func (u *recUpstream) take() (stray, rejects []string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	stray, rejects = u.stray, u.rejects
	u.stray, u.rejects = nil, nil
	return stray, rejects
}

// waitQuiet waits until no connection is inside a message, at most d: a
// request the proxy forwarded in part ends when the proxy closes the
// connection (its timeouts are shorter than d).
func (u *recUpstream) waitQuiet(d time.Duration) bool {
	timer := time.NewTimer(d)
	defer timer.Stop()
	for {
		u.mu.Lock()
		busy, changed := u.busy, u.changed
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

// record files a framed request under its client's tag, or as a stray.
func (u *recUpstream) record(m *strictMsg, q recReq) {
	tags := m.get(u.tag)
	u.mu.Lock()
	defer u.mu.Unlock()
	defer u.notify()
	var c *recClient
	if len(tags) == 1 {
		c = u.clients[tags[0]]
	}
	switch {
	case c == nil:
		u.stray = append(u.stray, fmt.Sprintf("%v with %s %q", q, u.tag, tags))
	case strings.HasPrefix(targetPath(m.target), "/admin"):
		u.stray = append(u.stray, fmt.Sprintf("%v past the deny rule", q))
		c.reqs = append(c.reqs, q)
	default:
		c.reqs = append(c.reqs, q)
	}
}

// tapConn keeps the last bytes read from a connection, for reports.
type tapConn struct {
	net.Conn
	tail []byte
}

func (t *tapConn) Read(p []byte) (int, error) {
	n, err := t.Conn.Read(p)
	t.tail = append(t.tail, p[:n]...)
	if len(t.tail) > 1024 {
		t.tail = append(t.tail[:0], t.tail[len(t.tail)-512:]...)
	}
	return n, err
}

// serve frames the requests of connection number id until it ends.
func (u *recUpstream) serve(c net.Conn, id int) {
	defer u.wg.Done()
	defer func() {
		c.Close()
		u.mu.Lock()
		if u.conns != nil {
			delete(u.conns, c)
		}
		u.mu.Unlock()
	}()
	tap := &tapConn{Conn: c}
	br := bufio.NewReader(tap)
	r := &strictReader{br: br}
	for n := 1; ; n++ {
		if _, err := br.Peek(1); err != nil {
			return
		}
		u.setBusy(1)
		keep := u.serveOne(c, r, tap, id, n)
		u.setBusy(-1)
		if !keep {
			return
		}
	}
}

// serveOne frames and answers one request; false ends the connection.
func (u *recUpstream) serveOne(c net.Conn, r *strictReader, tap *tapConn, id, n int) bool {
	m, err := r.readRequest()
	switch {
	case err == nil:
	case isViolation(err):
		u.mu.Lock()
		u.rejects = append(u.rejects, fmt.Sprintf("connection %d request %d: %v; bytes read %q", id, n, err, tap.tail))
		u.notify()
		u.mu.Unlock()
		return false
	default: // an aborted request: not a violation
		return false
	}
	u.record(m, recReq{conn: id, n: n, method: m.method, target: m.target, body: string(m.body)})
	if u.script != nil {
		if resp, closeAfter, ok := u.script(m); ok {
			_, err := io.WriteString(c, resp)
			return err == nil && !closeAfter
		}
	}
	src := m.first(u.tag)
	body := fmt.Sprintf("%s %d.%d %s %s %s=%s\n", u.name, id, n, m.method, m.target, u.tag, src)
	if m.method == "HEAD" {
		body = ""
	}
	_, err = fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nX-Upstream: %s\r\nX-Req: %d.%d\r\nX-Echo-Src: %s\r\nX-Echo-Target: %s\r\nContent-Length: %d\r\n\r\n%s",
		u.name, id, n, src, m.target, len(body), body)
	return err == nil && !m.close
}

// targetPath returns the path of a request target, also in absolute form
// ("http://a/admin?x" -> "/admin?x"), so that the deny rule's target is
// recognised however it is written.
func targetPath(target string) string {
	if strings.HasPrefix(target, "/") {
		return target // origin form, even with "://" inside ("/:///admin")
	}
	if i := strings.Index(target, "://"); i > 0 {
		rest := target[i+3:]
		if j := strings.IndexAny(rest, "/?"); j >= 0 {
			return rest[j:]
		}
		return ""
	}
	return target
}
