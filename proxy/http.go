package proxy

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net"
	"sync"
	"time"
	"unsafe"

	"github.com/fulcrum-proxy/fulcrum/proxy/acl"
	"github.com/fulcrum-proxy/fulcrum/proxy/lb"
	"github.com/fulcrum-proxy/fulcrum/proxy/netio"
	"github.com/fulcrum-proxy/fulcrum/proxy/queue"
)

// The HTTP/1.1 engine. One goroutine serves one client connection: it reads
// a request head, picks a server, forwards the head and streams the body to
// a pooled or new server connection, streams the response back, and loops
// for the next request while the client keeps the connection alive. There is
// no hand-off to other goroutines on the request path; bodies are streamed
// through 16 KiB buffers, large fixed-length ones spliced.

// spliceThreshold is the response body size above which the body is copied
// socket to socket (splice on Linux) instead of through the buffers.
const spliceThreshold = 256 << 10

// httpSession is the state of one client connection in http mode.
type httpSession struct {
	fe    *Frontend
	cc    *clientConn
	br    *bufio.Reader
	bw    *bufio.Writer
	req   head
	resp  head
	lbreq lb.Request
	nreq  int       // requests seen on this connection
	owned *upConn   // a server connection kept private to this session
	xff   []byte    // the X-Forwarded-For line, built once
	local bool      // the current request is answered by a local handler
	reqIn int64     // the current request's bytes from the client (head, body)
	t0    time.Time // the current request's first byte, for the log
	tc    int64     // its connect time in ms, -1 until connected

	// pin is the server persistence pinned the current request to (nil:
	// none): it waits in that server's queue (Backend.take). tw is the
	// request's queue time in ms for the log (Tw), 0 when it did not wait.
	pin *Server
	tw  int64

	// Stick tables and cookie persistence of the current request
	// (stick.go, cookie.go).
	st tracker
	ck cookieState

	// The rules' view of the current request, and the header and path
	// edits of its rules that writeRequestHead applies (rules.go).
	areq  acl.Request
	edits acl.Edits
}

// sessionPool recycles httpSessions with their head buffers, so that a new
// client connection does not grow them again.
var sessionPool = sync.Pool{New: func() any { return new(httpSession) }}

// recycle clears s and returns it to the pool; s must not be used after.
func (s *httpSession) recycle() {
	*s = httpSession{req: s.req.reset(), resp: s.resp.reset(), xff: s.xff[:0]}
	sessionPool.Put(s)
}

// errNoServer is returned when the backend has no usable server.
var errNoServer = errors.New("no server available")

// serveHTTP serves cc until the client closes, a timeout fires, an error
// forces a close, or the proxy stops.
func (fe *Frontend) serveHTTP(cc *clientConn) {
	s := sessionPool.Get().(*httpSession)
	s.cc, s.br, s.bw = cc, netio.GetReader(cc.c), netio.GetWriter(cc.c)
	s.lbreq = lb.Request{Src: cc.src}
	s.req.maxHdr, s.resp.maxHdr = fe.p.Conf.Global.MaxHdr, fe.p.Conf.Global.MaxHdr
	s.setFrontend(fe)
	s.st.inherit(&cc.st) // entries tracked at the connection stage
	defer func() {
		if s.owned != nil {
			s.owned.close()
		}
		netio.PutReader(s.br)
		netio.PutWriter(s.bw)
		s.st.end(-1, 0, 0) // a request that ended without its log line
		s.recycle()
		cc.st.release() // the connection's tracked entries (tcp_request connection)
	}()
	for {
		idleStart := time.Now()
		cc.dl.ArmRead(cc.c, idleStart, fe.timeoutHTTPRequest)
		if _, err := s.br.Peek(1); err != nil {
			// Nothing received: a keep-alive connection going idle or away is
			// closed silently; a first request that never comes gets 408, as
			// HAProxy without http-ignore-probes.
			if s.nreq == 0 && netio.IsTimeout(err) {
				// Counted as a request and a request error, as HAProxy.
				s.fe.Counters.request(time.Now())
				s.fe.Counters.Ereq.Add(1)
				s.fail(408, "cR", idleStart, -1, nil, nil)
			}
			return
		}
		if !cc.setActive() {
			return
		}
		if o := cc.owner.Load(); o != s.fe {
			s.setFrontend(o) // moved by a reload while idle (handoff.go)
		}
		if !s.handle(idleStart) {
			return
		}
		if !cc.setIdle() {
			return
		}
		if s.fe.p.stopping.Load() {
			// Replaced by a reload: move to the new proxy, or close.
			if !s.fe.handOff(cc) {
				return
			}
			s.setFrontend(cc.owner.Load())
		}
	}
}

// setFrontend makes fe the session's frontend: at the start, and when the
// connection moved to the proxy a reload started (handoff.go). A server
// connection kept private belongs to the old proxy's server: it is closed.
func (s *httpSession) setFrontend(fe *Frontend) {
	if s.owned != nil && s.fe != nil && s.fe != fe {
		s.owned.close()
		s.owned = nil
	}
	s.fe = fe
	s.st.p = fe.p
	s.xff = s.xff[:0]
	if fe.forwardFor {
		s.xff = append(s.xff, "X-Forwarded-For: "...)
		s.xff = s.cc.src.Addr().Unmap().AppendTo(s.xff)
		s.xff = append(s.xff, "\r\n"...)
	}
}

// stoppingForGood reports whether the session's proxy is stopping and the
// connection cannot move to a successor (handoff.go): its response must
// then say Connection: close.
func (s *httpSession) stoppingForGood() bool {
	return s.fe.p.stopping.Load() && !s.fe.canHandOff(s.cc)
}

// handle serves one request whose first byte has arrived. It returns true
// when the client connection may carry another request.
func (s *httpSession) handle(idleStart time.Time) bool {
	fe := s.fe
	t0 := time.Now()
	s.cc.dl.ArmRead(s.cc.c, t0, fe.timeoutHTTPRequest)
	s.nreq++
	s.local = false
	s.reqIn = 0 // the head once read; forward adds the body
	s.t0, s.tc = t0, -1
	fe.Counters.request(t0)
	if err := s.req.readHead(s.br, false); err != nil {
		switch {
		case netio.IsTimeout(err):
			fe.Counters.Ereq.Add(1) // as HAProxy counts a 408
			s.fail(408, "cR", idleStart, -1, nil, nil)
		case errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) || netio.IsConnReset(err):
			fe.Counters.Ereq.Add(1)
			s.logShort(idleStart, "CR", -1)
		default:
			fe.Counters.Ereq.Add(1)
			s.st.request() // a bad request counts, as in HAProxy
			s.fail(400, "PR", idleStart, -1, nil, nil)
		}
		return false
	}
	s.st.request() // on the entries tracked at the connection stage
	fe.Counters.Bin.Add(int64(len(s.req.buf)))
	s.reqIn = int64(len(s.req.buf))
	if err := s.req.parse(false); err != nil {
		fe.Counters.Ereq.Add(1)
		s.fail(400, "PR", idleStart, -1, nil, nil)
		return false
	}
	tHead := time.Now()
	if done, keep := s.frontendRules(idleStart, t0); done {
		return keep
	}
	if h := s.localHandler(); h != nil {
		return s.serveLocal(h, idleStart, t0)
	}
	be := s.selectBackend()
	if be == nil {
		s.fail(503, "SC", idleStart, tHead.Sub(t0).Milliseconds(), nil, nil)
		return false
	}
	if done, keep := s.backendRules(be, idleStart, t0); done {
		return keep
	}
	s.fillView()
	s.pin = s.persist(be)
	return s.forward(be, idleStart, t0, tHead)
}

// fillView points the balancing view at the current request head. The
// strings alias s.req.buf and are valid only until the next request is read:
// algorithms must not keep them past Pick.
func (s *httpSession) fillView() {
	uri := s.req.line[1]
	path, query := uri, []byte(nil)
	if i := bytes.IndexByte(uri, '?'); i >= 0 {
		path, query = uri[:i], uri[i+1:]
	}
	s.lbreq.Method = bstr(s.req.line[0])
	s.lbreq.Path = bstr(path)
	s.lbreq.Query = bstr(query)
	s.lbreq.Host = bstr(s.req.host)
	s.lbreq.Headers = &s.req
}

// bstr views b as a string without copying; see fillView.
func bstr(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}

// forward sends the parsed request to a server of be and relays the
// response. It returns true when the client connection stays usable.
func (s *httpSession) forward(be *Backend, idleStart, t0, tHead time.Time) bool {
	fe := s.fe
	tq := tHead.Sub(t0).Milliseconds()
	be.Counters.sessionStart(tHead)
	be.Counters.request(tHead)
	defer be.Counters.sessionEnd()

	srv, uc, reused, tc, err := s.connect(be, nil, tHead)
	s.tc = tc
	if err != nil {
		switch {
		case errors.Is(err, errQueueAbort): // no reply: nobody listens
			s.logLine(idleStart, t0, be, srv, -1, 0, tq, -1, -1, "CQ")
		case errors.Is(err, errQueueTimeout):
			s.fail(503, "sQ", idleStart, tq, be, srv)
		case errors.Is(err, errQueueFull):
			s.fail(503, "SQ", idleStart, tq, be, srv)
		default:
			if srv != nil {
				be.unassign(srv)
			}
			s.fail(503, "SC", idleStart, tq, be, srv)
		}
		return false
	}
	defer func() { be.unassign(srv) }() // srv may move with a redispatch
	// The stream's server side, for shutdown sessions (sessions.go).
	s.cc.stream.set(be, srv, uc.c)
	defer s.cc.stream.clear()
	srv.Counters.request(tHead)
	srv.Counters.queued(s.tw)
	be.Counters.queued(s.tw)
	srv.Counters.Ctime.Add(tc)
	be.Counters.Ctime.Add(tc)

	hasBody := s.req.chunked || s.req.contentLength > 0
	// Answer "Expect: 100-continue" ourselves so the client sends the body
	// we are about to stream (the Expect header is not forwarded).
	if s.req.expect100 && hasBody && !s.req.http10 {
		s.bw.WriteString("HTTP/1.1 100 Continue\r\n\r\n")
		if err := s.flushClient(); err != nil {
			uc.close()
			s.logLine(idleStart, t0, be, srv, 0, 0, tq, tc, -1, "CR")
			return false
		}
	}

	var tSent time.Time
	for attempt := 0; ; attempt++ {
		bodyBytes, ferr := s.sendRequest(uc, hasBody)
		if ferr == nil {
			// bin counts the client's request bytes (head as received, body).
			in := int64(len(s.req.buf)) + bodyBytes
			s.reqIn = in
			srv.Counters.Bin.Add(in)
			be.Counters.Bin.Add(in)
			fe.Counters.Bin.Add(bodyBytes)
			tSent = time.Now()
			err = s.readResponseHead(uc)
		}
		if ferr != nil && errors.Is(ferr, errClientSide) {
			uc.close() // the server never gets a complete request
			if errors.Is(ferr, errBadChunk) {
				// A broken chunked body: 400, as HAProxy (PH: the
				// server had not answered).
				fe.Counters.Ereq.Add(1)
				s.fail(400, "PH", idleStart, tq, be, srv)
				return false
			}
			fe.Counters.CliAbrt.Add(1)
			be.Counters.CliAbrt.Add(1)
			srv.Counters.CliAbrt.Add(1)
			flags := "CD"
			if netio.IsTimeout(ferr) {
				flags = "cD" // timeout_client: the body stopped coming
			}
			s.logLine(idleStart, t0, be, srv, -1, 0, tq, tc, -1, flags)
			return false
		}
		// A pooled connection that the server had closed while idle fails
		// on the write or before the first response byte: the request is
		// retried once on a fresh connection when it had no body to replay,
		// as HAProxy does.
		stale := ferr != nil || (err != nil && !netio.IsTimeout(err) && len(s.resp.buf) == 0)
		if stale && reused && !hasBody && attempt == 0 {
			uc.close()
			var c net.Conn
			if srv, c, tc, err = connectServer(be, srv, &s.lbreq); err != nil { // econ counted
				s.fail(503, "SC", idleStart, tq, be, srv)
				return false
			}
			uc = newUpConn(c, srv)
			s.cc.stream.set(be, srv, uc.c)
			reused = false
			continue
		}
		if ferr != nil && hasBody {
			// The server went away while the body was being sent: as
			// HAProxy's forwarding phase, srv_abrt and 502 (SD).
			uc.close()
			fe.Counters.SrvAbrt.Add(1)
			be.Counters.SrvAbrt.Add(1)
			srv.Counters.SrvAbrt.Add(1)
			s.fail(502, "SD", idleStart, tq, be, srv)
			return false
		}
		if ferr != nil {
			uc.close()
			srv.Counters.Econ.Add(1)
			be.Counters.Econ.Add(1)
			s.fail(503, "SC", idleStart, tq, be, srv)
			return false
		}
		break
	}
	if err != nil {
		uc.close()
		srv.Counters.Eresp.Add(1)
		be.Counters.Eresp.Add(1)
		switch {
		case netio.IsTimeout(err):
			srv.observeResponse(504)
			s.fail(504, "sH", idleStart, tq, be, srv)
		case errors.Is(err, errBadHead) || errors.Is(err, errHeadTooLarge) || errors.Is(err, errSmuggling) || errors.Is(err, errTooManyHdrs):
			srv.observeResponse(502)
			s.fail(502, "PH", idleStart, tq, be, srv)
		default:
			srv.observeResponse(502)
			s.fail(502, "SH", idleStart, tq, be, srv)
		}
		return false
	}
	tResp := time.Now()
	tr := tResp.Sub(tSent).Milliseconds()
	srv.Counters.Rtime.Add(tr)
	be.Counters.Rtime.Add(tr)
	// The server answered: store it for persistence now, before the client
	// has the response and can send its next request.
	s.stickStore(srv)

	status := s.resp.status
	if status == 101 && !s.req.connUpgrade {
		// A switch nobody asked for would turn the connection into a
		// blind tunnel (issue 16, point 3): an invalid response.
		uc.close()
		srv.Counters.Eresp.Add(1)
		be.Counters.Eresp.Add(1)
		srv.observeResponse(502)
		s.fail(502, "PH", idleStart, tq, be, srv)
		return false
	}
	srv.observeResponse(status)
	isHead := string(s.req.line[0]) == "HEAD"
	noBody := isHead || status == 204 || status == 304 || status == 101
	untilClose := !noBody && !s.resp.chunked && s.resp.contentLength < 0
	upgrade := status == 101
	closeAfter := s.req.connClose || untilClose || s.stoppingForGood()
	upReusable := !s.resp.connClose && !untilClose && !upgrade

	s.ck.served = srv
	headBytes := s.writeResponseHead(closeAfter, upgrade)
	var bodyBytes int64
	var berr error
	switch {
	case noBody:
	case s.resp.chunked:
		bodyBytes, berr = copyChunked(s.bw, uc.br, s.streamFlush(uc), s.resp.maxHdr)
	case s.resp.contentLength >= 0:
		bodyBytes, berr = s.copyBody(uc, s.resp.contentLength)
	default:
		bodyBytes, berr = s.copyUntilClose(uc)
	}
	if berr == nil && !upgrade {
		s.cc.stream.clear() // uc is no longer this stream's once pooled
		// The response has been read whole: the server connection is free
		// for the next request before the last bytes reach the client, if
		// it stands exactly at the end of the response. Bytes buffered
		// beyond it (a second response, a body after a 204, a 304 or a
		// HEAD response) would reach the next request: it is closed
		// (issue 16, point 3).
		if upReusable && uc.br.Buffered() == 0 {
			uc.uses++
			s.release(be, uc)
		} else {
			uc.close()
		}
		uc = nil
	}
	if errors.Is(berr, errBadChunk) && s.bw.Buffered() == int(headBytes+bodyBytes) {
		// Broken chunked framing from the server before any byte of the
		// response left: the client gets a 502 instead of it (PH), as
		// HAProxy. Past that point the exchange is aborted below (SD).
		uc.close()
		s.bw.Reset(s.cc.c)
		srv.Counters.Eresp.Add(1)
		be.Counters.Eresp.Add(1)
		s.fail(502, "PH", idleStart, tq, be, srv)
		return false
	}
	// Counted before the last flush, so that a client that has its
	// response also sees it in the counters.
	out := headBytes + bodyBytes
	fe.Counters.Bout.Add(out)
	be.Counters.Bout.Add(out)
	srv.Counters.Bout.Add(out)
	fe.Counters.response(status)
	be.Counters.response(status)
	srv.Counters.response(status)
	if berr == nil {
		berr = s.flushClient()
	}
	if berr != nil {
		if uc != nil {
			uc.close()
		}
		flags := "SD"
		switch {
		case errors.Is(berr, errClientSide) && netio.IsTimeout(berr):
			flags = "cD"
		case errors.Is(berr, errClientSide):
			flags = "CD"
			fe.Counters.CliAbrt.Add(1)
			be.Counters.CliAbrt.Add(1)
			srv.Counters.CliAbrt.Add(1)
		case netio.IsTimeout(berr):
			flags = "sD"
			srv.Counters.SrvAbrt.Add(1)
			be.Counters.SrvAbrt.Add(1)
		default:
			// The server closed or reset mid-body, or broke its chunked
			// framing: HAProxy 2.6 counts both a response error and an
			// abort (a timeout, only the abort).
			srv.Counters.SrvAbrt.Add(1)
			be.Counters.SrvAbrt.Add(1)
			srv.Counters.Eresp.Add(1)
			be.Counters.Eresp.Add(1)
		}
		s.logLine(idleStart, t0, be, srv, status, out, tq, tc, tr, flags)
		return false
	}
	ta := time.Since(t0).Milliseconds()
	srv.Counters.Ttime.Add(ta)
	be.Counters.Ttime.Add(ta)

	if upgrade {
		s.logLine(idleStart, t0, be, srv, status, out, tq, tc, tr, flagsNormal)
		s.tunnel(uc)
		return false
	}
	s.logLine(idleStart, t0, be, srv, status, out, tq, tc, tr, flagsNormal)
	return !closeAfter
}

// connect assigns a server of be (avoiding avoid; s.pin when persistence
// pinned the request), waiting in a queue while every slot is taken, and
// returns a connection to it: a reusable one when http_reuse allows, else
// a new one, with up to `retries` connect retries on the same server.
// reused says whether the connection had served a request before. srv is
// set even on error when a server was assigned: the caller then unassigns
// it, except after a queue error (errQueueTimeout, errQueueAbort,
// errQueueFull), where srv, if set, only names the pinned server.
func (s *httpSession) connect(be *Backend, avoid *Server, now time.Time) (srv *Server, uc *upConn, reused bool, tc int64, err error) {
	// While it waits, a request without a body watches its client with a
	// read (waitQueue); the dispatcher wakes that read when it hands the
	// request a slot. Other requests watch for the client closing without
	// reading (peerCloseWait): their bytes are the body.
	var wake queue.Waker
	wait := queue.WaitFunc(s.waitQueue)
	if s.watchable() {
		wake = s.cc.c
	} else {
		// A body (or pipelined bytes) must stay unread: watch for the
		// client closing only.
		wake, wait = netio.PeerCloseWait(s.cc.c)
	}
	srv, tw, err := be.take(&s.lbreq, s.pin, avoid, now, wake, wait)
	if wake != nil && tw >= 0 {
		// The read deadline may have been moved by waitQueue or the
		// dispatcher: put back the one the request had.
		s.cc.c.SetReadDeadline(s.cc.dl.Read())
	}
	s.tw = max(tw, 0).Milliseconds()
	if err != nil {
		return srv, nil, false, -1, err
	}
	if uc = s.reuse(be, srv); uc != nil {
		return srv, uc, true, 0, nil
	}
	srv, c, tc, err := connectServer(be, srv, &s.lbreq)
	if err != nil {
		return srv, nil, false, tc, err
	}
	return srv, newUpConn(c, srv), false, tc, nil
}

// watchable reports whether the client connection may be watched with a
// read while the request waits in a queue: nothing is buffered from it and
// the request has no body, so any byte read is the next request or the
// close.
func (s *httpSession) watchable() bool {
	return s.br.Buffered() == 0 && !s.req.chunked && s.req.contentLength <= 0
}

// waitQueue is the HTTP engine's queue.WaitFunc. It watches the client while the
// request waits, in this goroutine and without a timer: it arms the read
// deadline at the queue deadline and blocks in a one-byte Peek. The read
// ends when the client closes or resets (queue.WaitGone, the CQ case), when the
// deadline passes (queue.WaitTimeout), or when the dispatcher hands the request
// a slot and moves the deadline to the past (p.Wake). A client that sends
// bytes instead (a pipelined request) can no longer be watched this way:
// the wait goes on on the channel only. Preconditions: watchable, and p
// was queued with Wake = the client connection.
func (s *httpSession) waitQueue(p *queue.Pending, deadline time.Time) queue.WaitEnd {
	if p.Wake == nil {
		return queue.ChanWait(p, deadline)
	}
	c := s.cc.c
	for {
		c.SetReadDeadline(deadline)
		// A dispatcher that served p before the line above moved the
		// deadline back: Served is set before its wake.
		if p.Served() >= 0 {
			return queue.WaitServed
		}
		_, err := s.br.Peek(1)
		switch {
		case err == nil:
			return queue.ChanWait(p, deadline)
		case !netio.IsTimeout(err):
			return queue.WaitGone
		case p.Served() >= 0:
			return queue.WaitServed
		case !deadline.IsZero() && !time.Now().Before(deadline):
			return queue.WaitTimeout
		}
	}
}

// connectServer connects to srv with the backend's timeout_connect,
// retrying a failed connect up to `retries` times (each counted in wretr).
// With `redispatch`, the last retry goes to another server chosen by the
// algorithm, as HAProxy's option redispatch: the session moves there
// (unassigned from srv, assigned to the new one, counted in wredis) and that
// server is returned. On final failure econ is counted on the last server
// tried, which is returned with the error. Every attempt is reported to the
// server's traffic observer (passive health checks). The connect time of
// the successful attempt is returned in ms.
func connectServer(be *Backend, srv *Server, view *lb.Request) (*Server, net.Conn, int64, error) {
	d := net.Dialer{Timeout: be.Conf.TimeoutConnect}
	retries := be.Conf.Retries
	for attempt := 0; ; attempt++ {
		start := time.Now()
		c, err := d.Dial("tcp", srv.Addr())
		srv.observeConnect(err == nil)
		if err == nil { // Go sets TCP_NODELAY on TCP connections by default
			return srv, c, time.Since(start).Milliseconds(), nil
		}
		if attempt >= retries {
			srv.Counters.Econ.Add(1)
			be.Counters.Econ.Add(1)
			return srv, nil, -1, err
		}
		if attempt == retries-1 && be.Conf.Redispatch {
			if other := be.assign(view, srv, start); other != nil {
				be.unassign(srv)
				if other != srv {
					other.Counters.Wredis.Add(1)
					be.Counters.Wredis.Add(1)
					srv = other
					continue
				}
			}
		}
		srv.Counters.Wretr.Add(1)
		be.Counters.Wretr.Add(1)
	}
}

// reuse returns an idle connection to srv that this request may use under
// the backend's http_reuse policy, or nil:
//   - never: only the connection this client session already owns, and
//     only for the server it was made to;
//   - safe: also pooled connections, but not for the first request of a
//     client connection;
//   - aggressive: as safe, and first requests may use pooled connections
//     that have already served more than one request;
//   - always: any pooled connection.
//
// A connection only ever returns to the pool of the server it was made to
// (upConn.release). An owned connection (only "never" makes one) is closed
// when the request goes to another server (issue 16, point 4: it used to
// be put into the other server's pool, so a later request for that
// server's backend reached this one).
func (s *httpSession) reuse(be *Backend, srv *Server) *upConn {
	if uc := s.owned; uc != nil {
		s.owned = nil
		if uc.srv == srv && uc.idleOK() {
			return uc
		}
		uc.close() // private to this session: never pooled
	}
	switch be.Conf.HTTPReuse {
	case "never":
		return nil
	case "safe":
		if s.nreq <= 1 {
			return nil
		}
		return srv.pool.get(false)
	case "aggressive":
		return srv.pool.get(s.nreq <= 1)
	default: // always
		return srv.pool.get(false)
	}
}

// release hands a finished server connection back: kept private to this
// session under http_reuse never, else to its server's pool.
func (s *httpSession) release(be *Backend, uc *upConn) {
	if be.Conf.HTTPReuse == "never" {
		s.owned = uc
		return
	}
	uc.release(time.Now())
}

// errClientSide marks errors that happened on the client connection.
var errClientSide = errors.New("client side")

type clientErr struct{ err error }

func (e clientErr) Error() string   { return "client: " + e.err.Error() }
func (e clientErr) Unwrap() []error { return []error{errClientSide, e.err} }
func (e clientErr) Timeout() bool   { return netio.IsTimeout(e.err) }
func wrapClient(err error) error    { return clientErr{err} }
func isClientErr(err error) bool    { return errors.Is(err, errClientSide) }
func (s *httpSession) flushClient() error {
	if s.bw.Buffered() == 0 {
		return nil
	}
	s.cc.dl.ArmWrite(s.cc.c, time.Now(), s.fe.timeoutClient)
	if err := s.bw.Flush(); err != nil {
		return wrapClient(err)
	}
	return nil
}

// sendRequest writes the request head and streams its body to uc. It
// returns the body bytes sent; errors reading from the client are wrapped
// with errClientSide.
func (s *httpSession) sendRequest(uc *upConn, hasBody bool) (int64, error) {
	w := uc.bw
	now := time.Now()
	uc.dl.ArmWrite(uc.c, now, s.backendTimeoutServer(uc))
	s.writeRequestHead(w)
	var n int64
	if hasBody {
		s.cc.dl.ArmRead(s.cc.c, now, s.fe.timeoutClient)
		flush := func() error {
			now := time.Now()
			s.cc.dl.ArmRead(s.cc.c, now, s.fe.timeoutClient)
			uc.dl.ArmWrite(uc.c, now, s.backendTimeoutServer(uc))
			return w.Flush()
		}
		var m int64
		var err error
		if s.req.chunked {
			m, err = copyChunked(w, s.br, flush, s.req.maxHdr)
		} else {
			m, err = copyBuffered(w, s.br, s.req.contentLength, flush)
		}
		n += m
		if err != nil {
			if isReadSideErr(err) {
				// The body could not be read from the client.
				return n, wrapClient(err)
			}
			return n, err // the server side failed
		}
	}
	if err := w.Flush(); err != nil {
		return n, err
	}
	return n, nil
}

// isReadSideErr distinguishes a failed read of the client's body (EOF,
// timeout, bad chunk) from a failed write to the server. Writes through the
// buffered writer to the server fail with a *net.OpError whose Op is
// "write".
func isReadSideErr(err error) bool {
	var op *net.OpError
	if errors.As(err, &op) {
		return op.Op == "read"
	}
	return true
}

func (s *httpSession) backendTimeoutServer(uc *upConn) time.Duration {
	return uc.srv.Backend.Conf.TimeoutServer
}

// writeRequestHead writes the request line and headers for the server:
// hop-by-hop fields removed, Expect answered locally, X-Forwarded-For
// appended when forwardfor is on (HAProxy's `option forwardfor` adds its own
// header line after the client's). It returns the bytes written.
func (s *httpSession) writeRequestHead(w *bufio.Writer) int64 {
	r := &s.req
	n := w.Buffered()
	w.Write(r.line[0])
	w.WriteByte(' ')
	w.Write(s.requestURI())
	// The version is kept as the client sent it, as HAProxy does: an
	// HTTP/1.0 request may lack Host, which HTTP/1.1 requires.
	w.WriteByte(' ')
	w.Write(r.line[2])
	w.WriteString("\r\n")
	for i := range r.headers {
		h := &r.headers[i]
		if s.edits.Hidden(i) || h.isHopByHop(r.connUpgrade) || (r.expect100 && bytes.EqualFold(h.name, hdrExpect)) {
			continue
		}
		w.Write(h.name)
		w.WriteString(": ")
		w.Write(h.value)
		w.WriteString("\r\n")
	}
	for i := range s.edits.NumAdded() { // add-header and set-header lines
		if name, value, ok := s.edits.AddedAt(i); ok {
			w.Write(name)
			w.WriteString(": ")
			w.Write(value)
			w.WriteString("\r\n")
		}
	}
	if r.connUpgrade {
		w.WriteString("Connection: upgrade\r\n")
	} else if r.http10 && !r.connClose {
		w.WriteString("Connection: keep-alive\r\n")
	}
	if len(s.xff) > 0 {
		w.Write(s.xff)
	}
	w.WriteString("\r\n")
	return int64(w.Buffered() - n)
}

// readResponseHead reads the final response head from uc, relaying interim
// 1xx responses (other than 101) to the client as they come.
func (s *httpSession) readResponseHead(uc *upConn) error {
	for {
		uc.dl.ArmRead(uc.c, time.Now(), s.backendTimeoutServer(uc))
		if err := s.resp.readHead(uc.br, true); err != nil {
			return err
		}
		if err := s.resp.parse(true); err != nil {
			return err
		}
		if s.resp.status >= 200 || s.resp.status == 101 {
			return nil
		}
		if s.req.expect100 && s.resp.status == 100 {
			continue // already answered locally
		}
		s.bw.Write(s.resp.buf)
		if err := s.flushClient(); err != nil {
			return err
		}
	}
}

// writeResponseHead writes the status line and headers for the client and
// returns the bytes written.
func (s *httpSession) writeResponseHead(closeAfter, upgrade bool) int64 {
	r := &s.resp
	w := s.bw
	n := w.Buffered()
	w.WriteString("HTTP/1.1 ")
	w.Write(r.line[1])
	w.WriteByte(' ')
	w.Write(r.line[2])
	w.WriteString("\r\n")
	for i := range r.headers {
		h := &r.headers[i]
		if h.isHopByHop(upgrade) || s.cookieResponseHeader(w, h.name, h.value) {
			continue
		}
		w.Write(h.name)
		w.WriteString(": ")
		w.Write(h.value)
		w.WriteString("\r\n")
	}
	switch {
	case upgrade:
		w.WriteString("connection: upgrade\r\n")
	case closeAfter:
		w.WriteString("connection: close\r\n")
	case s.req.http10:
		w.WriteString("connection: keep-alive\r\n")
	}
	s.cookieInsert(w)
	w.WriteString("\r\n")
	return int64(w.Buffered() - n)
}

// streamFlush returns the flush function used while relaying a response
// body: it pushes what the client buffer holds and re-arms both inactivity
// timeouts.
func (s *httpSession) streamFlush(uc *upConn) func() error {
	return func() error {
		uc.dl.ArmRead(uc.c, time.Now(), s.backendTimeoutServer(uc))
		return s.flushClient()
	}
}

// copyBody relays a fixed-length response body of n bytes. Large bodies go
// socket to socket once the buffers are drained, so Linux splices them.
func (s *httpSession) copyBody(uc *upConn, n int64) (int64, error) {
	if n < spliceThreshold {
		return copyBuffered(s.bw, uc.br, n, s.streamFlush(uc))
	}
	// Drain what is already buffered, then splice the rest.
	buffered := int64(uc.br.Buffered())
	if buffered > n {
		buffered = n
	}
	done, err := copyBuffered(s.bw, uc.br, buffered, nil)
	if err != nil {
		return done, err
	}
	if err := s.flushClient(); err != nil {
		return done, err
	}
	e := netio.Pipe(s.cc.c, uc.c, n-done, s.fe.timeoutClient, uc.srv.Backend.Conf.TimeoutServer, true)
	switch {
	case e.DstErr != nil:
		return done + e.N, wrapClient(e.DstErr)
	case e.SrcErr != nil:
		return done + e.N, e.SrcErr
	}
	return done + e.N, nil
}

// copyUntilClose relays a body delimited by the server closing.
func (s *httpSession) copyUntilClose(uc *upConn) (int64, error) {
	n, err := copyBuffered(s.bw, uc.br, 1<<62, s.streamFlush(uc))
	if err == io.ErrUnexpectedEOF || err == io.EOF {
		return n, nil
	}
	return n, err
}

// tunnel relays bytes both ways after a 101 Switching Protocols (WebSocket
// and other upgrades) until both sides have closed.
func (s *httpSession) tunnel(uc *upConn) {
	defer uc.close()
	// Bytes the client sent after its request head belong to the tunnel.
	if n := s.br.Buffered(); n > 0 {
		p, _ := s.br.Peek(n)
		uc.c.Write(p)
	}
	if n := uc.br.Buffered(); n > 0 {
		p, _ := uc.br.Peek(n)
		s.cc.c.Write(p)
	}
	netio.Relay(s.cc.c, uc.c, s.fe.timeoutClient, uc.srv.Backend.Conf.TimeoutServer)
}

// fail sends HAProxy's error page for code, closes the exchange and logs it.
func (s *httpSession) fail(code int, flags string, idleStart time.Time, tq int64, be *Backend, srv *Server) {
	resp := errorResponses[code]
	n := int64(len(resp))
	s.fe.Counters.Bout.Add(n)
	s.fe.Counters.response(code)
	if be != nil {
		be.Counters.response(code)
		be.Counters.Bout.Add(n)
	}
	// Not on the server: it sent no status (HAProxy counts a server's
	// hrsp_* only for the responses it relays).
	s.bw.Write(resp)
	s.flushClient()
	// Ta runs from the request's first byte; Tc is known once a server
	// connection was made (a 502 or 504 after connecting), else -1.
	s.logLine(idleStart, s.t0, be, srv, code, n, tq, s.tc, -1, flags)
}

// logShort logs a request that never completed its head.
func (s *httpSession) logShort(idleStart time.Time, flags string, tq int64) {
	s.logLine(idleStart, time.Time{}, nil, nil, -1, 0, tq, -1, -1, flags)
}

// logLine writes the access-log line of the current request.
func (s *httpSession) logLine(idleStart, t0 time.Time, be *Backend, srv *Server, status int, bytesOut, tq, tc, tr int64, flags string) {
	tw := s.tw
	s.tw = 0
	s.stickEnd(srv, status, bytesOut, tr)
	l := s.fe.p.log
	if l.Info() == nil {
		return
	}
	now := time.Now()
	e := logEntry{
		client: s.cc.src, frontend: s.fe.Name, backend: "<NOSRV>", server: "<NOSRV>",
		status: status, bytes: bytesOut, tq: tq, tw: -1, tc: tc, tr: tr,
		ta: msBetween(t0, now), tt: msBetween(idleStart, now), flags: flags,
	}
	if be != nil {
		e.backend = be.Name
		e.tw = tw
	} else if s.local {
		// Answered by the frontend itself (stats page): HAProxy logs the
		// frontend as backend and <STATS> as server.
		e.backend, e.server = s.fe.Name, "<STATS>"
	}
	if srv != nil {
		e.server = srv.Name
	}
	switch {
	case (status == 400 || status == 408) && be == nil && srv == nil:
		e.request = "<BADREQ>" // as HAProxy logs a request it could not parse
	case len(s.req.line[0]) > 0:
		e.request = string(s.req.line[0]) + " " + string(s.req.line[1]) + " " + string(s.req.line[2])
	}
	e.emit(&l)
}
