package proxy

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fulcrum-proxy/fulcrum/conf"
	"github.com/fulcrum-proxy/fulcrum/internal/testutil"
	"github.com/fulcrum-proxy/fulcrum/proxy/netio"
	"github.com/rs/zerolog"
)

// The differential test (issue 16, point 13): every request shape of
// diffRequestShapes and every server response of diffResponseShapes goes
// through fulcrum and through HAProxy 2.6, each in front of its own
// recording upstream (diffupstream_test.go) that frames strictly, with
// the same configuration: mode http, http-reuse always (one server, so a
// poisoned server connection is the next client's), the request body not
// buffered, short timeouts, and the rules
//
//	http-request deny if { path_beg /admin }
//	http-request set-header X-Src %[src_port]
//
// so that a smuggled /admin shows at the upstream, and every request the
// proxy parsed carries its client connection's port. For each shape a
// first client sends the shape's bytes on its own connection, then an
// innocent client sends one GET from another connection. Invariants
// asserted on fulcrum, whatever HAProxy does:
//
//	(a) the upstream frames only requests fulcrum parsed (each tagged with
//	    one known X-Src, none to /admin), at most as many from the first
//	    client as it sent whole requests, and never has to refuse fulcrum's
//	    bytes as ambiguous; what fulcrum answers is well-framed HTTP/1.1;
//	(b) the innocent client gets exactly its own response, and the
//	    upstream framed exactly its one request;
//	(c) fulcrum's verdict (how many requests reached the upstream, and how
//	    the rest was refused: 4xx, 408, 5xx or a close) is HAProxy's,
//	    unless diffDepartures documents why not (README, "Where fulcrum
//	    refuses more, or less, than HAProxy").
//
// For a response shape, the upstream answers the first client's request
// with the shape's bytes instead: what fulcrum relays must be well-framed
// with at most one final response, the innocent client (on the server
// connection the first one left in the pool) must get exactly its own
// response, and the verdicts compared are the status relayed whole, a
// refusal (5xx, close, or a body cut short), or a tunnel.
//
// Shapes that fail today are listed in knownBroken with the issue point
// that fixes them: their subtests log the failure and skip, and the
// knownBroken subtest fails when one of them passes, so the table only
// shrinks.
//
// The proxies' timeouts end the shapes that never complete (a body that
// stops, a head without its end); they are long enough that nothing else
// meets them on a loaded machine under -race, and the test never waits on
// its own clock but for a hang (diffDeadline).

const (
	diffLanes          = 6                // shapes run concurrently, one per lane
	diffHTTPRequest    = 2 * time.Second  // timeout http-request (also keep-alive)
	diffTimeout        = 3 * time.Second  // timeout client, server and connect
	diffDeadline       = 15 * time.Second // a client's whole exchange: beyond it, a hang
	diffTag            = "X-Src"
	diffInnocentTarget = "/innocent"
)

// diffLane is one fulcrum frontend and one HAProxy frontend, each in
// front of its own recording upstream. A lane runs one shape at a time,
// so that what its upstreams record belongs to that shape.
type diffLane struct {
	fulcrum, haproxy string       // frontend addresses
	fup, hup         *recUpstream // their upstreams
	fsrv             *Server      // fulcrum's server, whose pool is emptied between shapes
}

// reset empties fulcrum's server connection pool after a shape: a shape
// that desynchronised a pooled connection (a response to a smuggled
// request waiting in it) would otherwise poison the lane's next shapes,
// and its failures would show there.
func (l *diffLane) reset() { l.fsrv.CloseIdle() }

// startDiffLanes starts n lanes: one fulcrum proxy and one HAProxy process
// with n frontends each. script answers the requests the response corpus
// sends (nil: echo only).
func startDiffLanes(t *testing.T, n int, script func(*strictMsg) (string, bool, bool)) []*diffLane {
	t.Helper()
	haproxy := testutil.NeedTool(t, "haproxy", "haproxy")
	lanes := make([]*diffLane, n)
	for i := range lanes {
		lanes[i] = &diffLane{
			fup: startRecUpstream(t, fmt.Sprintf("f%d", i), diffTag, script),
			hup: startRecUpstream(t, fmt.Sprintf("h%d", i), diffTag, script),
		}
	}
	p := startDiffFulcrum(t, lanes)
	for i, l := range lanes {
		l.fulcrum = p.Frontends[i].Addrs()[0].String()
		l.fsrv = p.Backends[i].Servers()[0]
	}
	addrs := startDiffHAProxy(t, haproxy, lanes)
	for i, a := range addrs {
		lanes[i].haproxy = a
	}
	return lanes
}

// startDiffFulcrum starts fulcrum from TOML with one frontend and backend
// per lane, in lane order.
func startDiffFulcrum(t *testing.T, lanes []*diffLane) *Proxy {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, `[defaults]
mode = "http"
timeout_connect = "%v"
timeout_client = "%v"
timeout_server = "%v"
timeout_http_request = "%v"
retries = 0
`, diffTimeout, diffTimeout, diffTimeout, diffHTTPRequest)
	for i, l := range lanes {
		fmt.Fprintf(&b, `
[[frontend]]
name = "fe%[1]d"
bind = ["127.0.0.1:0"]
default_backend = "be%[1]d"
http_request = ["deny if { path_beg /admin }", "set-header %[3]s %%[src_port]"]

[[backend]]
name = "be%[1]d"
http_reuse = "always"
[[backend.server]]
name = "s1"
address = %[2]q
`, i, l.fup.addr(), diffTag)
	}
	cfg, err := conf.Parse("diff.toml", []byte(b.String()))
	if err != nil {
		t.Fatalf("fulcrum config: %v", err)
	}
	p, err := New(cfg, zerolog.Nop())
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
	return p
}

// diffHAProxyConfig is the HAProxy side, the same as startDiffFulcrum's:
// one thread (so that an idle server connection is the next request's),
// listeners inherited from the test (bind fd@N), no request buffering.
const diffHAProxyGlobal = `global
    nbthread 1

defaults
    mode http
    timeout connect %[1]dms
    timeout client %[1]dms
    timeout server %[1]dms
    timeout http-request %[2]dms
    retries 0
    no option http-buffer-request
`

const diffHAProxyLane = `
frontend fe%[1]d
    bind fd@%[2]d
    http-request deny if { path_beg /admin }
    http-request set-header %[4]s %%[src_port]
    default_backend be%[1]d

backend be%[1]d
    http-reuse always
    server s1 %[3]s
`

// startDiffHAProxy runs haproxy with one frontend per lane, each on a
// listener the test opened on 127.0.0.1:0 and passes down, and returns
// their addresses. Connections made before HAProxy accepts wait in the
// listener's backlog, so nothing waits for it to start.
func startDiffHAProxy(t *testing.T, haproxy string, lanes []*diffLane) []string {
	t.Helper()
	var cfg strings.Builder
	fmt.Fprintf(&cfg, diffHAProxyGlobal, diffTimeout.Milliseconds(), diffHTTPRequest.Milliseconds())
	var files []*os.File
	out := make([]string, len(lanes))
	for i, l := range lanes {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		f, err := ln.(*net.TCPListener).File()
		ln.Close() // f holds its own descriptor of the socket
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
		out[i] = ln.Addr().String()
		fmt.Fprintf(&cfg, diffHAProxyLane, i, 3+i, l.hup.addr(), diffTag)
	}
	path := filepath.Join(t.TempDir(), "haproxy.cfg")
	if err := os.WriteFile(path, []byte(cfg.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	var hlog testutil.SyncBuffer
	cmd := exec.Command(haproxy, "-db", "-f", path)
	cmd.Stdout, cmd.Stderr, cmd.ExtraFiles = &hlog, &hlog, files
	err := cmd.Start()
	for _, f := range files {
		f.Close() // the child has them
	}
	if err != nil {
		t.Fatalf("haproxy: %v", err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		if t.Failed() {
			t.Logf("haproxy output:\n%s", hlog.String())
		}
	})
	return out
}

// clientResp is one response a test client framed.
type clientResp struct {
	*strictMsg
	upstream bool // it came from the upstream (X-Upstream), not the proxy
}

// clientExchange is what one client connection saw.
type clientExchange struct {
	port      string
	raw       []byte       // every byte received
	resps     []clientResp // framed responses, interim ones included
	malformed string       // a framing violation in what the proxy sent
	truncated bool         // the stream ended inside a response
	end       string       // "eof", "reset" or "hang" (no end within diffDeadline)
}

// finals returns the final responses.
func (x *clientExchange) finals() []clientResp {
	var out []clientResp
	for _, r := range x.resps {
		if r.status >= 200 || r.status == 101 {
			out = append(out, r)
		}
	}
	return out
}

// statuses lists the response codes, interim ones included; a proxy-made
// one is marked with a "p".
func (x *clientExchange) statuses() string {
	var s []string
	for _, r := range x.resps {
		c := strconv.Itoa(r.status)
		if !r.upstream {
			c += "p"
		}
		s = append(s, c)
	}
	return "[" + strings.Join(s, " ") + "]"
}

// tapReader records what a client reads.
type tapReader struct {
	r   io.Reader
	buf *[]byte
}

func (t tapReader) Read(p []byte) (int, error) {
	n, err := t.r.Read(p)
	*t.buf = append(*t.buf, p[:n]...)
	return n, err
}

// dialDiff opens a client connection to addr and registers its port with
// up before any byte is sent.
func dialDiff(addr string, up *recUpstream) (*net.TCPConn, string, error) {
	c, err := net.DialTimeout("tcp", addr, diffDeadline)
	if err != nil {
		return nil, "", err
	}
	port := strconv.Itoa(c.LocalAddr().(*net.TCPAddr).Port)
	up.expect(port)
	c.SetDeadline(time.Now().Add(diffDeadline))
	return c.(*net.TCPConn), port, nil
}

// exchange sends data on c and frames what comes back as responses to
// requests of method, until the proxy closes. Once halfCloseAfter final
// responses have come (0: never; only those from the upstream unless
// anyOrigin), the client half-closes, so that a proxy done with the
// client's requests ends the connection rather than waiting for a next
// one; a proxy waiting for more of a request ends it by its own timeouts.
// A response delimited by the connection's end makes the client
// half-close at once: the proxy said it will close.
func exchange(c *net.TCPConn, port string, data []byte, method string, halfCloseAfter int, anyOrigin bool) *clientExchange {
	x := &clientExchange{port: port}
	written := make(chan struct{})
	go func() {
		defer close(written)
		c.Write(data) // the proxy may close before reading it all
	}()
	closed := false
	halfClose := func() {
		if !closed {
			closed = true
			<-written
			c.CloseWrite()
		}
	}
	r := &strictReader{br: bufio.NewReader(tapReader{c, &x.raw}), leaveUntilClose: true}
	finals := 0
	for {
		m, err := r.readResponse(method)
		if err == nil {
			up := m.first("X-Upstream") != ""
			x.resps = append(x.resps, clientResp{m, up})
			if (up || anyOrigin) && m.status >= 200 {
				if finals++; finals == halfCloseAfter {
					halfClose()
				}
			}
			switch {
			case m.untilClose && !m.close:
				// A keep-alive client cannot tell where this body ends:
				// it would wait for ever.
				err = violation("a body delimited by the close without Connection: close")
			case m.untilClose:
				halfClose()
				err = r.body(m)
				if err == nil {
					err = io.EOF
				}
			case m.tunnel:
				halfClose()
				err = drain(r.br)
			default:
				continue
			}
		}
		switch {
		case err == io.EOF:
			x.end = "eof"
		case err == errStrictIncomplete:
			x.end, x.truncated = "eof", true
		case isViolation(err):
			x.malformed = err.Error()
			x.end = clientEnd(drain(r.br))
		default:
			x.end = clientEnd(err)
		}
		break
	}
	<-written
	return x
}

// drain reads br to its end and returns io.EOF, or the error that ended it.
func drain(br *bufio.Reader) error {
	_, err := io.Copy(io.Discard, br)
	if err == nil {
		return io.EOF
	}
	return err
}

// endOf names how a client connection ended.
func clientEnd(err error) string {
	switch {
	case err == nil || errors.Is(err, io.EOF):
		return "eof"
	case netio.IsTimeout(err):
		return "hang"
	default:
		return "reset"
	}
}

// innocentRequest is the second client's request: it asks the proxy to
// close after it, so that everything the proxy sends it is read.
const innocentRequest = "GET " + diffInnocentTarget + " HTTP/1.1\r\nHost: innocent\r\nConnection: close\r\n\r\n"

// innocent sends innocentRequest from a new connection and checks that
// exactly its own response comes back. It returns what is wrong, if
// anything.
func innocent(addr string, up *recUpstream) (port string, problems []string) {
	c, port, err := dialDiff(addr, up)
	if err != nil {
		return "", []string{fmt.Sprintf("innocent client: dial: %v", err)}
	}
	defer c.Close()
	x := exchange(c, port, []byte(innocentRequest), "GET", 0, false)
	fin := x.finals()
	switch {
	case x.end == "hang":
		problems = append(problems, fmt.Sprintf("innocent client: no response and no close within %v; got %q", diffDeadline, x.raw))
	case x.malformed != "" || x.truncated || len(fin) != 1:
		problems = append(problems, fmt.Sprintf("innocent client: want exactly one well-framed response, got %q", x.raw))
	case !fin[0].upstream || fin[0].status != 200 || fin[0].first("X-Echo-Src") != port || fin[0].first("X-Echo-Target") != diffInnocentTarget:
		problems = append(problems, fmt.Sprintf("innocent client (port %s): got a response that is not its own: %q", port, x.raw))
	}
	return port, problems
}

// checkInnocentFramed checks the upstream framed exactly the innocent
// client's one request.
func checkInnocentFramed(up *recUpstream, port string) []string {
	if port == "" {
		return nil
	}
	got := up.framed(port)
	if len(got) != 1 || got[0].method != "GET" || got[0].target != diffInnocentTarget {
		return []string{fmt.Sprintf("the upstream framed %v for the innocent client, want its one GET %s", got, diffInnocentTarget)}
	}
	return nil
}

// diffClass is how a proxy handled a shape, compared between the proxies.
type diffClass string

// refusalClass classes a proxy-made final status: an immediate refusal
// (4xx), a timeout (408), a server-side failure (5xx).
func refusalClass(status int) string {
	switch {
	case status == 408:
		return "408"
	case status >= 400 && status < 500:
		return "4xx"
	case status >= 500:
		return "5xx"
	}
	return strconv.Itoa(status)
}

// reqResult is what one proxy did with one request shape.
type reqResult struct {
	a        *clientExchange
	aFramed  []recReq
	stray    []string
	rejects  []string
	problems []string // invariant violations (a) and (b)
	class    diffClass
	notQuiet bool
}

// runRequestShape sends sh through the proxy at addr (upstream up) and
// checks invariants (a) and (b).
func runRequestShape(sh reqShape, addr string, up *recUpstream) *reqResult {
	res := &reqResult{}
	c, port, err := dialDiff(addr, up)
	if err != nil {
		res.problems = append(res.problems, fmt.Sprintf("dial: %v", err))
		return res
	}
	res.a = exchange(c, port, []byte(sh.raw), "GET", sh.wholeRequests(), false)
	c.Close()
	bport, bprob := innocent(addr, up)
	res.problems = append(res.problems, bprob...)
	res.notQuiet = !up.waitQuiet(diffDeadline)
	res.stray, res.rejects = up.take()
	res.aFramed = up.framed(port)
	res.problems = append(res.problems, checkInnocentFramed(up, bport)...)

	a := res.a
	if a.end == "hang" {
		res.problems = append(res.problems, fmt.Sprintf("no end of the exchange within %v (the proxy's timeouts are %v)", diffDeadline, diffTimeout))
	}
	if a.malformed != "" {
		res.problems = append(res.problems, "the answer to the client breaks HTTP/1.1 framing: "+a.malformed)
	}
	if len(res.stray) > 0 {
		res.problems = append(res.problems, fmt.Sprintf("the upstream framed requests the proxy did not parse (smuggled): %q", res.stray))
	}
	if len(res.rejects) > 0 {
		res.problems = append(res.problems, fmt.Sprintf("the strict upstream refused what the proxy sent: %q", res.rejects))
	}
	if len(res.aFramed) > sh.wholeRequests() {
		res.problems = append(res.problems, fmt.Sprintf("the upstream framed %d requests from a client that sent %d whole: %v", len(res.aFramed), sh.wholeRequests(), res.aFramed))
	}
	for _, r := range a.resps {
		if r.upstream && r.first("X-Echo-Src") != port {
			res.problems = append(res.problems, fmt.Sprintf("the client got the response to another connection's request: %s %q", r.line, r.fields))
		}
	}
	if res.notQuiet {
		res.problems = append(res.problems, fmt.Sprintf("the upstream was still inside a request %v after the exchange", diffDeadline))
	}
	// A request the strict upstream refused was forwarded all the same.
	res.class = requestClass(a, len(res.aFramed)+len(res.rejects), sh.wholeRequests())
	return res
}

// requestClass is the verdict compared between the proxies: how many
// requests reached the upstream, and how the exchange ended when not all
// of the client's whole requests got the upstream's answer.
func requestClass(a *clientExchange, framed, whole int) diffClass {
	if a == nil {
		return "none"
	}
	refusal := ""
	for _, r := range a.finals() {
		if !r.upstream {
			refusal = refusalClass(r.status)
			break
		}
	}
	answered := 0
	for _, r := range a.finals() {
		if r.upstream {
			answered++
		}
	}
	if refusal == "" && (answered < whole || len(a.finals()) == 0) {
		refusal = "close"
	}
	if refusal == "" {
		refusal = "served"
	}
	return diffClass(fmt.Sprintf("fwd=%d %s", framed, refusal))
}

// describe is a one-line account of a proxy's handling, for reports.
func (r *reqResult) describe() string {
	if r.a == nil {
		return fmt.Sprintf("%v", r.problems)
	}
	s := fmt.Sprintf("%s: responses %s, end %s, upstream framed %v", r.class, r.a.statuses(), r.a.end, r.aFramed)
	if len(r.rejects) > 0 {
		s += fmt.Sprintf(", upstream refused %q", r.rejects)
	}
	if len(r.stray) > 0 {
		s += fmt.Sprintf(", smuggled %q", r.stray)
	}
	return s
}

// respResult is what one proxy did with one response shape.
type respResult struct {
	a        *clientExchange
	stray    []string
	rejects  []string
	problems []string
	class    diffClass
}

// runResponseShape has the upstream answer the first client's request
// with sh's bytes, then checks what the innocent client gets on the
// reused server connection.
func runResponseShape(sh respShape, addr string, up *recUpstream) *respResult {
	res := &respResult{}
	c, port, err := dialDiff(addr, up)
	if err != nil {
		res.problems = append(res.problems, fmt.Sprintf("dial: %v", err))
		return res
	}
	method, req := sh.request()
	res.a = exchange(c, port, []byte(req), method, 1, true)
	c.Close()
	bport, bprob := innocent(addr, up)
	res.problems = append(res.problems, bprob...)
	if !up.waitQuiet(diffDeadline) {
		res.problems = append(res.problems, fmt.Sprintf("the upstream was still inside a request %v after the exchange", diffDeadline))
	}
	res.stray, res.rejects = up.take()
	res.problems = append(res.problems, checkInnocentFramed(up, bport)...)
	a := res.a
	if a.end == "hang" {
		res.problems = append(res.problems, fmt.Sprintf("no end of the exchange within %v (the proxy's timeouts are %v)", diffDeadline, diffTimeout))
	}
	if a.malformed != "" {
		res.problems = append(res.problems, "the response relayed to the client breaks HTTP/1.1 framing: "+a.malformed)
	}
	if n := len(a.finals()); n > 1 {
		res.problems = append(res.problems, fmt.Sprintf("the client sent one request and got %d responses: %q", n, a.raw))
	}
	if len(res.stray) > 0 || len(res.rejects) > 0 {
		res.problems = append(res.problems, fmt.Sprintf("the upstream saw stray requests %q or refused %q", res.stray, res.rejects))
	}
	res.class = responseClass(a)
	return res
}

// responseClass is the verdict compared between the proxies for a
// response shape: the final status relayed whole, or "refused" when the
// client got no complete response from the server (a proxy-made 5xx, a
// close, a body cut short: which of them depends on how much the proxy
// had sent before it found the fault), "tunnel" after a 101, or
// "malformed" (an invariant violation in itself). Interim responses are
// not compared.
func responseClass(a *clientExchange) diffClass {
	fin := a.finals()
	switch {
	case a.malformed != "":
		return "malformed"
	case len(fin) == 0 || a.truncated || fin[0].status >= 500: // no script answers 5xx
		return "refused"
	case fin[0].tunnel:
		return "tunnel"
	}
	return diffClass(fmt.Sprintf("relayed %d", fin[0].status))
}

func (r *respResult) describe() string {
	if r.a == nil {
		return fmt.Sprintf("%v", r.problems)
	}
	return fmt.Sprintf("%s: responses %s, end %s, received %q", r.class, r.a.statuses(), r.a.end, clip(r.a.raw))
}

// diffOutcome is one shape's result on both proxies.
type diffOutcome struct {
	name     string
	raw      string
	fulcrum  string // describe() of fulcrum's handling
	haproxy  string // and HAProxy's
	fclass   diffClass
	hclass   diffClass
	took     time.Duration
	problems []string // fulcrum's invariant violations
	hnotes   []string // HAProxy's (a harness sanity check, not asserted)
}

// failures returns what is wrong with o: fulcrum's invariant violations
// and, unless documented, a verdict other than HAProxy's.
func (o *diffOutcome) failures() []string {
	f := slices.Clone(o.problems)
	if d, ok := diffDepartures[o.name]; ok {
		if o.fclass != d.fulcrum || o.hclass != d.haproxy {
			f = append(f, fmt.Sprintf("documented departure changed: want fulcrum %q and HAProxy %q (%s)", d.fulcrum, d.haproxy, d.why))
		}
	} else if _, ok := diffUncompared[o.name]; !ok && o.fclass != o.hclass {
		f = append(f, fmt.Sprintf("fulcrum's verdict %q is not HAProxy's %q", o.fclass, o.hclass))
	}
	return f
}

// runDiff runs every shape on the lanes, diffLanes at a time, and returns
// the outcomes in corpus order.
func runDiff(lanes []*diffLane, reqs []reqShape, resps []respShape) (reqOut, respOut []*diffOutcome) {
	reqOut = make([]*diffOutcome, len(reqs))
	respOut = make([]*diffOutcome, len(resps))
	jobs := make(chan func(*diffLane))
	var wg sync.WaitGroup
	for _, l := range lanes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for job := range jobs {
				job(l)
			}
		}()
	}
	for i, sh := range reqs {
		jobs <- func(l *diffLane) {
			start := time.Now()
			var f, h *reqResult
			var pair sync.WaitGroup
			pair.Add(2)
			go func() { defer pair.Done(); f = runRequestShape(sh, l.fulcrum, l.fup) }()
			go func() { defer pair.Done(); h = runRequestShape(sh, l.haproxy, l.hup) }()
			pair.Wait()
			l.reset()
			reqOut[i] = &diffOutcome{
				name: sh.name, raw: sh.raw, fulcrum: f.describe(), haproxy: h.describe(),
				fclass: f.class, hclass: h.class, problems: f.problems, hnotes: h.problems, took: time.Since(start),
			}
		}
	}
	for i, sh := range resps {
		jobs <- func(l *diffLane) {
			start := time.Now()
			var f, h *respResult
			var pair sync.WaitGroup
			pair.Add(2)
			go func() { defer pair.Done(); f = runResponseShape(sh, l.fulcrum, l.fup) }()
			go func() { defer pair.Done(); h = runResponseShape(sh, l.haproxy, l.hup) }()
			pair.Wait()
			l.reset()
			respOut[i] = &diffOutcome{
				name: sh.name, raw: sh.resp, fulcrum: f.describe(), haproxy: h.describe(),
				fclass: f.class, hclass: h.class, problems: f.problems, hnotes: h.problems, took: time.Since(start),
			}
		}
	}
	close(jobs)
	wg.Wait()
	return reqOut, respOut
}

// TestDifferential runs both corpora through fulcrum and HAProxy 2.6 (see
// the comment at the top of this file).
func TestDifferential(t *testing.T) {
	lanes := startDiffLanes(t, diffLanes, diffScript)
	start := time.Now()
	reqOut, respOut := runDiff(lanes, diffRequestShapes, diffResponseShapes)
	t.Logf("%d request shapes and %d response shapes in %v", len(reqOut), len(respOut), time.Since(start).Round(time.Millisecond))
	all := append(slices.Clone(reqOut), respOut...)
	slices.SortFunc(all, func(a, b *diffOutcome) int { return int(b.took - a.took) })
	for _, o := range all[:5] {
		t.Logf("slow shape %s: %v (the proxies' timeouts end it)", o.name, o.took.Round(time.Millisecond))
	}

	var nowPassing []string
	report := func(kind string, outs []*diffOutcome) {
		for _, o := range outs {
			t.Run(kind+"/"+o.name, func(t *testing.T) {
				fails := o.failures()
				if len(o.hnotes) > 0 {
					t.Logf("HAProxy breaks an invariant too (harness check): %q", o.hnotes)
				}
				if point, ok := knownBroken[o.name]; ok {
					if len(fails) == 0 {
						nowPassing = append(nowPassing, o.name)
						return
					}
					t.Skipf("known broken (%s)\nbytes   %q\nfulcrum %s\nhaproxy %s\nfailures:\n  %s",
						point, o.raw, o.fulcrum, o.haproxy, strings.Join(fails, "\n  "))
				}
				if len(fails) > 0 {
					t.Errorf("bytes   %q\nfulcrum %s\nhaproxy %s\nfailures:\n  %s",
						o.raw, o.fulcrum, o.haproxy, strings.Join(fails, "\n  "))
				}
			})
		}
	}
	report("request", reqOut)
	report("response", respOut)
	// knownBroken only shrinks: an entry whose shape passes must go.
	t.Run("knownBroken", func(t *testing.T) {
		for _, name := range nowPassing {
			t.Errorf("%s passes now: remove it from knownBroken (%s)", name, knownBroken[name])
		}
	})
}

// TestDiffTables checks the corpora and the tables that qualify them:
// unique names, at least 150 request and 40 response shapes, and every
// knownBroken or departure entry naming a shape, with a reason.
func TestDiffTables(t *testing.T) {
	names := map[string]bool{}
	for _, sh := range diffRequestShapes {
		if names[sh.name] {
			t.Errorf("request shape %q twice", sh.name)
		}
		names[sh.name] = true
	}
	for _, sh := range diffResponseShapes {
		if names[sh.name] {
			t.Errorf("response shape %q twice (names are shared)", sh.name)
		}
		names[sh.name] = true
	}
	if n := len(diffRequestShapes); n < 150 {
		t.Errorf("%d request shapes, want at least 150", n)
	}
	if n := len(diffResponseShapes); n < 40 {
		t.Errorf("%d response shapes, want at least 40", n)
	}
	for name, point := range knownBroken {
		if !names[name] {
			t.Errorf("knownBroken names no shape: %q", name)
		}
		if !strings.HasPrefix(point, "issue 16 point ") {
			t.Errorf("knownBroken[%q] = %q, want the issue point that fixes it", name, point)
		}
	}
	for name, why := range diffUncompared {
		if !names[name] || why == "" {
			t.Errorf("diffUncompared[%q]: no such shape, or no reason", name)
		}
	}
	for name, d := range diffDepartures {
		if !names[name] {
			t.Errorf("diffDepartures names no shape: %q", name)
		}
		if d.why == "" || d.fulcrum == d.haproxy {
			t.Errorf("diffDepartures[%q] needs a reason and two different verdicts", name)
		}
	}
	for _, sh := range diffRequestShapes {
		if bytes.Contains([]byte(sh.raw), []byte(diffTag+":")) {
			t.Errorf("shape %q sends %s itself", sh.name, diffTag)
		}
	}
}
