package http1

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net"
	"net/http/httptrace"
	"strconv"
	"sync"
	"time"

	"github.com/fulcrum-proxy/fulcrum/proxy/h2mux"
	"github.com/fulcrum-proxy/fulcrum/proxy/netio"
	"github.com/fulcrum-proxy/fulcrum/proxy/netio/epoll"
	"github.com/fulcrum-proxy/fulcrum/proxy/queue"
	"github.com/fulcrum-proxy/fulcrum/proxy/stream"
)

// The HTTP/1.1 engine. One goroutine serves one client connection: it reads
// a request head, lets the core route it and assign a server, forwards the
// head and streams the body to a pooled or new server connection, streams
// the response back, and loops for the next request while the client keeps
// the connection alive. There is no hand-off to other goroutines on the
// request path; bodies are streamed through 16 KiB buffers, large
// fixed-length ones spliced. Every decision about where the request goes,
// and every counter and log line, is the core's (Stream); this file only
// moves HTTP/1 messages.

// spliceThreshold is the response body size above which the body is copied
// socket to socket (splice on Linux) instead of through the buffers.
const spliceThreshold = 256 << 10

// session is the state of one client connection.
type session struct {
	cl    Client
	c     net.Conn
	dl    *netio.Deadlines
	set   *Settings // the owning frontend's
	br    *bufio.Reader
	bw    *bufio.Writer
	req   head
	resp  head
	view  stream.Request
	rview stream.Response // the response head as http_response rules see it
	nreq  int             // requests seen on this connection
	owned *upConn         // a server connection kept private to this session
	clk   time.Time       // an inline callback's time (setClock), zero: read the clock
	h2own *h2mux.Owned    // HTTP/2 server connections private to it (never)
	h2rf  h2mux.Fields    // an HTTP/2 server's response fields (h2up.go)
	// h2trace gives an HTTP/2 server's interim heads to interimH2
	// (h2up.go), made once; interims counts those of the request.
	h2trace  *httptrace.ClientTrace
	interims int
	x        Stream         // the core's side of the current request
	wait     queue.WaitFunc // s.waitQueue, bound once per connection
	// first holds the bytes an idle wait without buffers read (awaitRequest):
	// br reads them before the connection's next ones.
	first      firstBytes
	firstSpace [firstReadSize]byte

	// Parking (inline.go): what the session waits for once its goroutine
	// has left (park), where a worker goes on (next), and the state it
	// goes on with.
	park     parkState
	next     entry
	pu       *upConn      // parkResponse: the server connection answering
	pReused  bool         // pu was reused (the exchange's retry)
	pAttempt int          // the exchange's attempt
	pHead    bool         // the response head was read (pErr: how)
	pErr     error        // reading the head failed
	pKeep    bool         // entryTail: the connection stays usable
	pClose   bool         // entryFlush: the response said it closes
	pIdle    time.Time    // entryAwait: idle since
	pRoute   stream.Route // entryRouted: the request's route
	pSend    sendState    // entryExchange: how the reaper's send went
	pUp      *upConn      // entryExchange: the server connection
	headAt   time.Time    // onResponse found the head whole then (relay's Tr; zero: none did)
	// flushPending: relay left the response's last bytes in cw.pending
	// (entryFlush ends the request once they are written).
	flushPending bool
	// Uploads (upload.go): up is the session's upload state, reused;
	// uploading says its goroutine runs; upErr is how an upload that
	// ended during the response's wait ended, for the relay's end.
	up        *upload
	uploading bool
	upErr     error
	// linger: the connection ends with the client's body partly unread
	// (lingerClose).
	linger bool
	// keepArmed: the read deadline is at IdleKeep already (afterInline).
	keepArmed bool
	rw        respWaker
	iw        idleWaker
	cw        cliSink
	out       countSink // under bw: what left for the client (written)
	cs        upSrc     // under br when the connection can park (src)
}

// firstReadSize is how many bytes a connection waiting without its buffers
// reads when its next request arrives; the rest of the request follows
// through the buffers taken back then.
const firstReadSize = 128

// firstBytes is the reader a session's bufio.Reader reads after an idle
// wait without buffers: the bytes that wait read, then the connection.
type firstBytes struct {
	b []byte
	c io.Reader
}

// Read implements io.Reader.
func (f *firstBytes) Read(p []byte) (int, error) {
	if len(f.b) > 0 {
		n := copy(p, f.b)
		f.b = f.b[n:]
		return n, nil
	}
	return f.c.Read(p)
}

// sessionPool recycles sessions with their head buffers, so that a new
// client connection does not grow them again (sync.Pool is the reason for
// this package variable).
var sessionPool = sync.Pool{New: func() any { return new(session) }}

// recycle clears s and returns it to the pool; s must not be used after.
func (s *session) recycle() {
	*s = session{req: s.req.reset(), resp: s.resp.reset()}
	sessionPool.Put(s)
}

// Serve serves the client connection cl until the client closes, a
// timeout fires, an error forces a close, or the proxy stops; or until
// it hibernates (a Hibernator's connection, idle past IdleKeep: see
// awaitRequest), when it returns EndHibernated: the connection is then not
// closed, and Resume serves it from its next request on; or until it
// parks (EndParked, inline.go): its continuation serves it on.
func Serve(cl Client) End {
	s := newSession(cl)
	s.br, s.bw = netio.GetReader(s.src()), s.newWriter()
	return s.run(entryTop, time.Time{})
}

// Resume serves a connection that hibernated (Hibernator.Hibernate) after
// nreq requests, idle since idleStart, as Serve would have gone on: it
// reads the connection (the next request's first bytes, the end of the
// stream, the expired deadline or the close that ended the hibernation)
// and serves it until it closes, hibernates again or parks.
func Resume(cl Client, nreq int, idleStart time.Time) End {
	s := newSession(cl)
	s.nreq = nreq
	return s.run(entryResumed, idleStart)
}

// newSession returns a session for cl, without its buffers.
func newSession(cl Client) *session {
	s := sessionPool.Get().(*session)
	s.cl, s.c, s.dl, s.x = cl, cl.Conn(), cl.Deadlines(), cl.Stream()
	s.wait = s.waitQueue
	s.settings()
	s.initPark()
	return s
}

// serve is the loop of Serve, Resume and Continue, from e: entryResumed
// says the connection comes out of hibernation, idle since idleStart (its
// first wait is the read hibernation stood for); the others are a parked
// session's (inline.go).
func (s *session) serve(e entry, idleStart time.Time) (end End) {
	cl := s.cl
	defer func() {
		if end == EndClosed {
			s.close()
		} // else everything went back in hibernate, or s is parked
	}()
	for {
		var keep bool
		switch e {
		case entryResponse:
			keep = s.continueResponse()
		case entryFlush:
			keep = s.continueFlush()
		case entryTail:
			err := s.cw.flush() // written even before a close
			keep = s.pKeep && err == nil
		case entryHead, entryParsed, entryRouted, entryAssigned, entryExchange:
			keep = s.continueRequest(e)
		default:
			var err error
			switch e {
			case entryResumed:
				err = s.resumeRead()
			case entryAwait: // armed at idleStart by afterInline
				err = s.awaitRequest(idleStart)
			default:
				idleStart = time.Now()
				s.dl.ArmRead(s.c, idleStart, s.idleTimeout())
				err = s.awaitRequest(idleStart)
			}
			if err == errHibernate {
				s.hibernate(idleStart)
				return EndHibernated
			}
			if err != nil {
				// Nothing received: a keep-alive connection going idle or away is
				// closed silently; a first request that never comes gets 408, as
				// HAProxy without http-ignore-probes (counted as a request and a
				// request error).
				if s.nreq == 0 && netio.IsTimeout(err) {
					s.x.Begin(idleStart, time.Time{})
					s.fail(stream.IdleTimeout)
				} else if s.nreq == 0 {
					// Closed before its first byte: HAProxy 2.6 logs it
					// 400 CR-- "<BADREQ>" and counts it in req_tot, ereq
					// and hrsp_4xx (measured), and as a request and an
					// error on tracked entries (its http_wait_for_request's
					// client-error path), unless option dontlognull.
					s.x.Begin(idleStart, time.Time{})
					s.x.BadHead()
					s.x.End(stream.ClientGoneHead)
				}
				return EndClosed
			}
			ok, moved := cl.Active()
			if !ok {
				return EndClosed
			}
			if moved {
				s.settings() // moved by a reload while idle
			}
			if s.wantsH2() {
				return endUpgradeH2 // run hands the connection over
			}
			keep = s.handle(idleStart)
		}
		e = entryTop
		if s.park != parkNone {
			s.sleep() // the last use of s: it may go on elsewhere at once
			return EndParked
		}
		if !keep {
			return EndClosed
		}
		ok, moved := cl.Idle()
		if !ok {
			return EndClosed
		}
		if moved {
			s.settings() // moved to the configuration a reload started
		}
	}
}

// close releases what the session holds when its connection closes (the
// Client closes the connection), and s.
func (s *session) close() {
	if s.owned != nil {
		s.owned.close()
	}
	if s.h2own != nil {
		s.h2own.Close(true)
	}
	if s.linger {
		s.lingerClose()
	}
	netio.PutReader(s.br)
	netio.PutWriter(s.bw)
	s.cl.Done()
	s.recycle()
}

// Hibernator is a Client whose connection can wait for its next request
// with no goroutine, session, Stream or buffer (the epoll layer's
// plaintext connections): a keep-alive connection idle past IdleKeep
// "hibernates", and costs its connection alone until it is readable
// again, as HAProxy's idle connections.
type Hibernator interface {
	// CanHibernate reports whether the connection can hibernate now.
	CanHibernate() bool
	// Hibernate is Serve's (or Resume's) last call on a connection that
	// hibernates: the engine has given back everything but the Client,
	// which gives back its Stream and arranges for Resume(cl, nreq,
	// idleStart) to be called from another goroutine when the
	// connection becomes readable, its read deadline passes or it is
	// closed (possibly before Hibernate returns).
	Hibernate(nreq int, idleStart time.Time)
}

// errHibernate is awaitRequest's answer when the connection is to
// hibernate (its buffers are back in their pools already).
var errHibernate = errors.New("hibernate")

// hibernate gives back the session of a connection idle since idleStart
// that hibernates (awaitRequest said so), and hands the connection to its
// Client, last: the connection may resume on another goroutine at once.
func (s *session) hibernate(idleStart time.Time) {
	cl, nreq := s.cl.(Hibernator), s.nreq
	s.recycle()
	cl.Hibernate(nreq, idleStart)
}

// canHibernate reports whether the connection may hibernate rather than
// wait in a read: a keep-alive connection (a first request that never
// comes gets its 408 from a waiting goroutine, as before) with nothing
// private to it (a server connection under http_reuse never) whose
// Client can.
func (s *session) canHibernate() bool {
	if s.nreq == 0 || s.owned != nil || s.h2own != nil {
		return false
	}
	h, ok := s.cl.(Hibernator)
	return ok && h.CanHibernate()
}

// awaitRequest waits, under the read deadline armed at idleStart, until
// the next request's first byte is there (in br). Bytes already buffered
// (pipelined requests) need no wait. A connection that waits longer than
// IdleKeep gives its read and write buffers back to their pools (the
// writer holds nothing: every answer was flushed) and waits in a read of
// firstReadSize bytes into the session (readFirst); the buffers come back
// when that read returns, with the bytes it read put before the
// connection's (so no byte is lost or reordered, and none leaves the
// session). A keep-alive connection that can hibernate (canHibernate)
// does not wait in that read: awaitRequest returns errHibernate, and the
// read is Resume's. br and bw are set when it returns, whatever the
// outcome, except with errHibernate (both nil).
func (s *session) awaitRequest(idleStart time.Time) error {
	deadline := s.dl.Read()
	// armed: afterInline set the read deadline at IdleKeep already; any
	// way that does not wait until then puts back the request's.
	armed := s.keepArmed
	s.keepArmed = false
	if s.br.Buffered() > 0 {
		if armed {
			s.c.SetReadDeadline(deadline)
		}
		return nil
	}
	keep := idleStart.Add(s.set.IdleKeep)
	if s.set.IdleKeep > 0 {
		if !deadline.IsZero() && !keep.Before(deadline) {
			if armed {
				s.c.SetReadDeadline(deadline)
			}
			_, err := s.br.Peek(1) // the whole wait with the buffers
			return err
		}
		if !armed {
			s.c.SetReadDeadline(keep)
		}
		_, err := s.br.Peek(1)
		s.c.SetReadDeadline(deadline)
		if err == nil || !netio.IsTimeout(err) || time.Now().Before(keep) {
			return err
		}
	}
	if s.bw.Buffered() > 0 || s.br.Buffered() > 0 {
		_, err := s.br.Peek(1) // never: an answer is flushed before the wait
		return err
	}
	netio.PutReader(s.br)
	netio.PutWriter(s.bw)
	s.br, s.bw = nil, nil
	if s.canHibernate() {
		return errHibernate
	}
	return s.readFirst()
}

// readFirst is the wait of a connection without buffers: a read of
// firstReadSize bytes into the session, after which the buffers come back
// with the bytes it read put before the connection's. br and bw are set
// when it returns, whatever the outcome.
func (s *session) readFirst() error {
	n, err := s.c.Read(s.firstSpace[:])
	return s.firstRead(n, err)
}

// resumeRead is readFirst for a connection out of hibernation: where the
// connection can hibernate again, a wake-up that finds nothing to read
// (an event handled late, after the bytes it announced were read) says
// errHibernate, with no buffer taken, rather than wait in a read.
func (s *session) resumeRead() error {
	if tc, ok := s.c.(tryIO); ok && s.canHibernate() {
		n, err := tc.TryRead(s.firstSpace[:])
		if err == epoll.ErrWouldBlock {
			return errHibernate
		}
		return s.firstRead(n, err)
	}
	return s.readFirst()
}

// firstRead sets br and bw after readFirst's read of n bytes, with err.
func (s *session) firstRead(n int, err error) error {
	s.first = firstBytes{b: s.firstSpace[:n], c: s.src()}
	if n > 0 {
		s.br = netio.GetReader(&s.first)
		err = nil
	} else {
		s.br = netio.GetReader(s.src())
	}
	s.bw = s.newWriter()
	return err
}

// settings reads the owning frontend's settings: at the start, and when
// the connection moved to the configuration a reload started. A server
// connection kept private belongs to the old configuration's server: it
// is closed.
func (s *session) settings() {
	if s.owned != nil && s.set != nil {
		s.owned.close()
		s.owned = nil
	}
	if s.h2own != nil {
		s.h2own.Close(false)
	}
	s.set = s.cl.Settings()
	s.req.maxHdr, s.resp.maxHdr = s.set.MaxHdr, s.set.MaxHdr
}

// handle serves one request whose first byte has arrived. It returns true
// when the client connection may carry another request.
func (s *session) handle(idleStart time.Time) bool {
	s.beginRequest(idleStart)
	return s.handleHead(s.req.readHead(s.br, false))
}

// idleTimeout is how long the connection waits for its next request's
// first byte: timeout_http_keep_alive after a request when set (HAProxy's
// timeout http-keep-alive), else timeout_http_request.
func (s *session) idleTimeout() time.Duration {
	if s.nreq > 0 && s.set.TimeoutKeepAlive > 0 {
		return s.set.TimeoutKeepAlive
	}
	return s.set.TimeoutHTTPRequest
}

// beginRequest starts the request whose first byte has arrived: the
// http-request timeout from now, the Stream's Begin.
func (s *session) beginRequest(idleStart time.Time) {
	s.headAt = time.Time{}
	t0 := s.now()
	s.dl.ArmRead(s.c, t0, s.set.TimeoutHTTPRequest)
	s.nreq++
	s.x.Begin(idleStart, t0)
}

// handleHead is handle once the request head was read, with err.
func (s *session) handleHead(err error) bool {
	x := s.x
	if err != nil {
		switch {
		case netio.IsTimeout(err):
			return s.fail(stream.RequestTimeout)
		case errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) || netio.IsConnReset(err):
			x.BadHead() // a request and an error on tracked entries, as HAProxy
			x.End(stream.ClientGoneHead)
			return false
		}
		s.captureError(&s.req, s.br, false, err) // show errors (errpos.go)
		x.BadHead()
		return s.fail(stream.BadRequest)
	}
	x.HeadRead(len(s.req.buf))
	return s.handleParsed(s.req.parse(false))
}

// handleParsed is handle once the request head was parsed, with err.
func (s *session) handleParsed(err error) bool {
	if err != nil {
		s.captureError(&s.req, s.br, false, err) // show errors (errpos.go)
		return s.fail(stream.BadRequest)
	}
	if s.req.chunked && bufferedChunksBad(s.br) {
		// A chunked body whose framing is already broken in what came
		// with the head is a bad request, answered before anything is
		// routed or connected, as HAProxy 2.6 answers it (400, PR--,
		// <NOSRV>, "<BADREQ>": its parser sees the whole buffer). Framing
		// that breaks later is found while the body streams
		// (BadRequestBody).
		s.captureError(&s.req, s.br, false, errBadChunk)
		return s.fail(stream.BadRequest)
	}
	s.setView()
	return s.handleRoute(s.x.Route(&s.view, time.Now()))
}

// bufferedChunksBad reports whether the chunked body bytes buffered in br
// (not consumed) break the chunked framing: a bad chunk-size line, a
// chunk's data not followed by CRLF, a bad trailer. Bytes that end in
// the middle of the body are fine.
func bufferedChunksBad(br *bufio.Reader) bool {
	n := br.Buffered()
	if n == 0 {
		return false
	}
	b, _ := br.Peek(n)
	c := chunkReader{br: bufio.NewReaderSize(bytes.NewReader(b), n+16)}
	var sink [512]byte
	for {
		_, err := c.Read(sink[:])
		switch {
		case err == nil:
		case errors.Is(err, errBadChunk):
			return true
		default: // the end of the body, or of what is buffered
			return false
		}
	}
}

// setView fills the request's view from its parsed head.
func (s *session) setView() {
	r := &s.req
	s.view = stream.Request{Method: r.line[0], URI: r.line[1], Version: r.line[2], Host: r.host,
		Headers: r, HasBody: r.chunked || r.contentLength > 0, ConnClose: r.connClose}
}

// handleRoute is handle once the request was routed.
func (s *session) handleRoute(rt stream.Route) bool {
	switch rt.Kind {
	case stream.RouteAnswer:
		return s.answer(rt)
	case stream.RouteLocal:
		return s.serveLocal(rt.Handler)
	case stream.RouteNoServer:
		return s.fail(stream.NoServer)
	}
	return s.forward()
}

// answer sends the response of a rule (deny, return, redirect) and ends
// the request. It returns true when the connection stays usable. The
// counters move before the response leaves (a client that has it sees
// them).
func (s *session) answer(rt stream.Route) bool {
	s.x.Replied(rt.Status, int64(len(rt.Answer)))
	s.bw.Write(rt.Answer)
	o := stream.Answered
	if rt.Deny {
		o = stream.Denied
	}
	s.x.End(o)
	return s.flushClient() == nil && rt.Keep
}

// fail ends the request with o, answering HAProxy's error page for o's
// status when it has one; the connection then closes (it returns false).
// The counters move before the page leaves.
func (s *session) fail(o stream.Outcome) bool {
	code := o.Row().Status
	keep := s.keepAfterError(code)
	if code != 0 {
		resp := errorResponses[code]
		if keep {
			resp = denyResponses[code] // the same page, without connection: close
		}
		s.x.Replied(code, int64(len(resp)))
		s.bw.Write(resp)
	}
	s.x.End(o)
	return s.flushClient() == nil && keep
}

// keepAfterError reports whether the client connection stays open after
// the error response code for the current request, as HAProxy 2.6 keeps
// it after the 500, 502, 503 and 504 it answers itself (a fresh-user
// trial: curl reused the connection after HAProxy's 503 SC): a request
// read whole, without a body (a body may be left unread), that did not
// ask to close, on a connection that is not closing for a stop.
func (s *session) keepAfterError(code int) bool {
	switch code {
	case 500, 502, 503, 504:
	default:
		return false
	}
	return len(s.req.line) > 0 && !s.req.connClose && !s.req.chunked && s.req.contentLength <= 0 &&
		!s.req.connUpgrade && !s.req.expect100 && !s.cl.StoppingForGood()
}

// forward sends the routed request to a server and relays the response,
// in the phases of the request path: assign (pick or queue), connect
// (reuse or dial), send, receive, relay. It returns true when the client
// connection stays usable.
func (s *session) forward() bool {
	return s.forwarded(s.forwardH1())
}

// forwarded ends forward's turn: the Stream is released unless the
// request parked.
func (s *session) forwarded(keep bool) bool {
	if s.park != parkNone {
		return true // its continuation releases it
	}
	s.releaseStream(keep)
	return keep
}

// releaseStream releases the request's Stream: keep says the client
// connection stays usable.
func (s *session) releaseStream(keep bool) {
	if keep {
		s.x.Release()
	} else {
		s.x.ReleaseLast()
	}
}

// forwardH1 is forward without the Stream's release; the request may
// park (s.park), its response to come (inline.go).
func (s *session) forwardH1() bool {
	if o := s.assign(); o != stream.Served {
		return s.fail(o)
	}
	return s.forwardAssigned()
}

// forwardAssigned is forwardH1 once a server is assigned.
func (s *session) forwardAssigned() bool {
	x := s.x
	if up := x.Upstream(); up.H2 != nil && !(up.ByALPN && s.req.connUpgrade) {
		return s.forwardH2(nil)
	}
	uc, reused, h2c, o := s.connect()
	switch {
	case o != stream.Served:
		return s.fail(o)
	case h2c != nil:
		return s.forwardH2(h2c)
	}
	if o := s.passExpect(uc.up); o != stream.Served {
		uc.close()
		keep := s.fail(o)
		x.Unbind()
		return keep
	}
	uc, o = s.exchange(uc, reused)
	if s.park != parkNone {
		return true
	}
	return s.afterExchange(uc, o)
}

// afterExchange ends a request whose exchange ended with o: the relay of
// the response read from uc, or the error's answer.
func (s *session) afterExchange(uc *upConn, o stream.Outcome) bool {
	defer s.x.Unbind()
	var keep bool
	if o != stream.Served {
		if uc != nil {
			uc.close()
		}
		keep = s.fail(o)
	} else {
		keep = s.relay(uc)
	}
	if s.uploading {
		// The exchange ended before the body did: cut it short; the rest
		// of it is left unread in the client connection.
		s.endUpload(true)
		keep = false
	}
	s.upErr = nil
	return keep
}

// assign has the core pick a server, or queue the request. Under the
// backend's abortonclose, while it waits, a request without a body watches
// its client with a read (waitQueue); the dispatcher wakes that read when
// it hands the request a slot. Other requests watch for the client
// closing without reading (PeerCloseWait): their bytes are the body.
// Without abortonclose (HAProxy's default) nothing watches the client.
func (s *session) assign() stream.Outcome {
	if !s.x.AbortOnClose() {
		// HAProxy's default: the request waits for its slot whatever its
		// client does (it may only have closed its output), and is sent.
		return s.x.Take(nil, queue.ChanWait)
	}
	var wake queue.Waker
	wait := s.wait
	if s.watchable() {
		wake = s.c
	} else {
		wake, wait = netio.PeerCloseWait(s.c)
	}
	o := s.x.Take(wake, wait)
	if wake != nil {
		// The read deadline may have been moved by waitQueue or the
		// dispatcher: put back the one the request had.
		s.c.SetReadDeadline(s.dl.Read())
	}
	return o
}

// connect returns a connection to the assigned server: an idle one when
// http_reuse allows (reused), else a new one from the core's dial (with
// its retries and redispatch), which offers no h2 by ALPN (a WebSocket
// upgrade to a server that picks its protocol by ALPN goes in HTTP/1.1,
// as HAProxy's "ws auto"). When a redispatch moved the request to a
// server speaking HTTP/2, the new connection is h2c instead, not yet
// bound to the stream.
func (s *session) connect() (uc *upConn, reused bool, h2c net.Conn, o stream.Outcome) {
	x := s.x
	up := x.Upstream()
	if uc = s.reuse(up); uc != nil {
		x.Connected(uc.c, true)
		return uc, true, nil, stream.Served
	}
	c, o := x.ConnectH1()
	if o != stream.Served {
		return nil, false, nil, o
	}
	if up = x.Upstream(); up.SpeaksH2(c) {
		return nil, false, c, stream.Served
	}
	uc = newUpConn(c, up, x.ConnKey())
	x.Connected(c, false)
	return uc, false, nil, stream.Served
}

// passExpect passes "Expect: 100-continue" on to an HTTP/1 server, as
// HAProxy 2.6 does (without http-buffer-request): the server's 100
// Continue is relayed to the client (readResponseHead), and a server that
// answers at once (a 413 from an upload limit, a 401) spares the client
// its upload. A final response that comes before any 100 reached the
// client closes the client connection (relay: the body the client may
// still send is not read). An HTTP/1.0 request's Expect is dropped (RFC
// 9110 10.1.1: a server ignores it). A server whose last response was
// HTTP/1.0 ignores it too: the proxy answers the 100 itself
// (expectContinue), as RFC 9110 10.1.1 lets a proxy that knows its next
// hop (each upload waited out the client's expect timeout, curl's 1 s,
// where HAProxy's client saw the server's HTTP/1.0 and stopped asking).
func (s *session) passExpect(up *Upstream) stream.Outcome {
	r := &s.req
	if !r.expect100 || !s.view.HasBody || r.http10 || r.continued {
		return stream.Served
	}
	if up.HTTP10.Load() {
		return s.expectContinue()
	}
	r.expectFwd = true
	return stream.Served
}

// expectPending reports whether the server was asked for a 100 Continue
// and the client has not had one: it may hold its body back.
func (s *session) expectPending() bool { return s.req.expectFwd && !s.req.continued }

// expectContinue answers "Expect: 100-continue" itself, so that the
// client sends the body about to be streamed (the Expect field is not
// forwarded); once per request. For HTTP/2 servers (h2up.go); HTTP/1
// servers get the field (passExpect).
func (s *session) expectContinue() stream.Outcome {
	if s.req.expect100 && s.view.HasBody && !s.req.http10 && !s.req.continued {
		s.req.continued = true
		s.bw.WriteString("HTTP/1.1 100 Continue\r\n\r\n")
		if err := s.flushClient(); err != nil {
			return stream.ClientGoneExpect
		}
	}
	return stream.Served
}

// exchange sends the request to uc and reads the server's response head.
// A pooled connection that the server had closed while idle fails on the
// write or before the first response byte: the request is then retried
// once on a fresh connection when it can be replayed (replayable: no
// body, or an idempotent request's body all buffered, which is sent from
// the buffer and consumed only once the exchange is over), as HAProxy
// does. It returns the connection the response is read from (nil when it
// was closed) and stream.Served, or the outcome to end with.
func (s *session) exchange(uc *upConn, reused bool) (*upConn, stream.Outcome) {
	return s.exchangeFrom(uc, reused, 0, false, nil)
}

// exchangeFrom is exchange from its attempt attempt; resumed says that
// attempt's request was sent and its response head read already, with
// herr (a parked request's, inline.go). The request may park instead of
// reading its response (s.park: it returns nil and stream.Served).
func (s *session) exchangeFrom(uc *upConn, reused bool, attempt int, resumed bool, herr error) (*upConn, stream.Outcome) {
	x := s.x
	hasBody := s.view.HasBody
	replay := s.replayable()
	if replay && hasBody {
		defer s.br.Discard(int(s.req.contentLength)) // sent from the buffer
	}
	counted := resumed
	for ; ; attempt++ {
		var ferr, err error
		if resumed {
			resumed = false
			err = herr
		} else if hasBody && !replay && s.pSend == sendNone && !s.bodyBuffered() {
			// A streamed body goes out while the response is awaited
			// (upload.go); once: it is not replayable. One all in the
			// client buffer leaves with the head, as before.
			x.Sent(0)
			counted = true
			ferr, err = s.sendStreaming(uc)
			if ferr == nil && err == nil {
				err = s.readResponseHead(uc, true, false)
				var ae awaitError
				if errors.As(err, &ae) {
					ferr, err = s.awaitFailed(ae.err)
				}
			}
		} else {
			var bodyBytes int64
			if s.pSend != sendNone {
				ferr = s.sentBefore(uc) // the reaper's send (inline.go)
			} else {
				bodyBytes, ferr = s.sendRequest(uc, hasBody, replay)
			}
			if ferr == nil {
				if !counted {
					// Once per request: a retry sends the same bytes again.
					x.Sent(bodyBytes)
					counted = true
				}
				if s.canPark(uc) {
					s.parkResponse(uc, reused, attempt)
					return nil, stream.Served
				}
				err = s.readResponseHead(uc, true, false)
			}
		}
		if ferr != nil && errors.Is(ferr, errClientSide) {
			uc.close() // the server never gets a complete request
			switch {
			case errors.Is(ferr, errBadChunk):
				return nil, stream.BadRequestBody // 400 PH, as HAProxy
			case netio.IsTimeout(ferr):
				return nil, stream.ClientTimeoutUpload // timeout_client: the body stopped coming
			}
			return nil, stream.ClientAbortUpload
		}
		stale := ferr != nil || (err != nil && !netio.IsTimeout(err) && len(s.resp.buf) == 0)
		if stale && reused && replay && attempt == 0 && !x.Killed() {
			uc.close()
			c, o := x.ConnectH1() // econ counted; no h2 offered by ALPN
			if o != stream.Served {
				return nil, o
			}
			if x.Upstream().SpeaksH2(c) {
				// Redispatched to a server with proto h2: the request
				// cannot go on again in HTTP/1.1, and fails as the
				// stale connection did.
				c.Close()
				return nil, stream.ServerGoneHead
			}
			uc = newUpConn(c, x.Upstream(), x.ConnKey())
			x.Rebind(c)
			reused = false
			continue
		}
		switch {
		case ferr != nil && hasBody:
			// The server went away while the body was being sent: as
			// HAProxy's forwarding phase, srv_abrt and 502 (SD).
			return uc, stream.ServerGoneUpload
		case ferr != nil:
			return uc, stream.SendFailed
		case err == nil:
			return uc, stream.Served
		case netio.IsTimeout(err):
			return uc, stream.ServerTimeoutHead
		case errors.Is(err, errBadHead) || errors.Is(err, errHeadTooLarge) || errors.Is(err, errSmuggling) || errors.Is(err, errTooManyHdrs):
			s.captureError(&s.resp, uc.br, true, err) // show errors (errpos.go)
			return uc, stream.BadResponse
		}
		return uc, stream.ServerGoneHead
	}
}

// replayable reports whether the request can be sent again on another
// connection: it has no body (as before issue 21, whatever its method),
// or it is idempotent (RFC 9110, 9.2.2: a server that received it and
// died unanswered may get it twice harmlessly) with a Content-Length
// body the client buffer already holds whole (and no 100-continue was
// answered for it). A POST with a body is never replayed.
func (s *session) replayable() bool {
	if !s.view.HasBody {
		return true
	}
	return idempotent(s.req.line[0]) && !s.req.expect100 && s.bodyBuffered()
}

// bodyBuffered reports whether the request's body is all in the client
// buffer (a Content-Length body that came with its head).
func (s *session) bodyBuffered() bool {
	return !s.req.chunked && s.req.contentLength <= int64(s.br.Buffered())
}

// idempotent reports whether method is idempotent (RFC 9110, 9.2.2).
func idempotent(method []byte) bool {
	switch string(method) {
	case "GET", "HEAD", "PUT", "DELETE", "OPTIONS", "TRACE":
		return true
	}
	return false
}

// relay sends the response whose head was read from uc to the client: its
// head, then its body, framed as the client's connection needs. uc goes
// back to its pool when it stands exactly at the end of the response.
// It returns true when the client connection stays usable.
func (s *session) relay(uc *upConn) bool {
	x := s.x
	if s.headAt.IsZero() {
		x.ResponseHead()
	} else {
		x.ResponseHeadAt(s.headAt)
		s.headAt = time.Time{}
	}
	status := s.resp.status
	if status == 101 && !s.req.connUpgrade {
		// A switch nobody asked for would turn the connection into a
		// blind tunnel (issue 16, point 3): an invalid response.
		uc.close()
		return s.fail(stream.BadResponse)
	}
	x.Respond(status)
	if uc.up.HTTP10.Load() != s.resp.http10 {
		uc.up.HTTP10.Store(s.resp.http10) // passExpect
	}
	s.rview = stream.Response{Status: status, Version: s.resp.line[0], Headers: &s.resp}
	if deny := x.ResponseRules(&s.rview); deny != 0 {
		uc.close() // its response is not read
		return s.denyResponse(deny)
	}
	shown := status // what the client gets: set-status may change it
	if code, _, ok := x.ResponseEdits().Status(); ok {
		shown = code
	}
	isHead := string(s.req.line[0]) == "HEAD"
	noBody := isHead || status == 204 || status == 304 || status == 101
	untilClose := !noBody && !s.resp.chunked && s.resp.contentLength < 0
	upgrade := status == 101
	// A final answer before the client had its 100 Continue: the body it
	// may still send is not read (its upload is cut below).
	cutExpect := s.expectPending() && s.uploading && !s.up.read.Load()
	closeAfter := s.req.connClose || untilClose || s.cl.StoppingForGood() || cutExpect
	upReusable := !s.resp.connClose && !untilClose && !upgrade

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
	// early: the response came while the body went out (upload.go).
	early := s.uploading || s.upErr != nil
	if berr == nil && !upgrade && !early {
		x.Unbind() // uc is no longer this stream's once pooled
		// The response has been read whole: the server connection is free
		// for the next request before the last bytes reach the client, if
		// it stands exactly at the end of the response. Bytes buffered
		// beyond it (a second response, a body after a 204, a 304 or a
		// HEAD response) would reach the next request: it is closed
		// (issue 16, point 3).
		if upReusable && uc.br.Buffered() == 0 {
			uc.uses++
			s.release(uc)
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
		s.out.w = s.c
		s.bw.Reset(&s.out)
		return s.fail(stream.BadResponseBody)
	}
	x.Relayed(shown, headBytes+bodyBytes)
	if berr == nil {
		berr = s.flushClient()
	}
	if early && uc != nil {
		// The client has the response: the request ends with its body
		// (HAProxy logs the server's status, and CD/SD when the client
		// or the server stopped the body). The server connection goes
		// back to its pool only when the body went out whole (RFC 9112
		// 9.3: a server answering early reads the rest or closes; a body
		// just flushed when the answer came is the common case).
		uerr := s.upErr
		s.upErr = nil
		if s.uploading {
			uerr = s.endUpload(berr != nil || cutExpect)
		}
		if berr == nil && !cutExpect {
			berr = uerr
		}
		switch {
		case upgrade && berr == nil:
		case berr == nil && upReusable && uc.br.Buffered() == 0:
			x.Unbind()
			uc.uses++
			s.release(uc)
			uc = nil
		default:
			x.Unbind()
			uc.close()
			uc = nil
		}
	}
	if berr == nil && s.cw.nb && len(s.cw.pending) > 0 {
		// Finished by the epoll layer, and the client's socket did not
		// take it all: a worker writes the rest, then ends the request.
		s.flushPending, s.pClose = true, closeAfter
		return true
	}
	return s.relayEnd(uc, berr, upgrade, closeAfter)
}

// relayEnd ends the request relay sent the response of, once written to
// the client (berr: how that went).
func (s *session) relayEnd(uc *upConn, berr error, upgrade, closeAfter bool) bool {
	x := s.x
	if berr != nil {
		if uc != nil {
			uc.close()
		}
		o := stream.ServerAbortData // closed, reset or broke its framing
		switch {
		case errors.Is(berr, errClientSide) && netio.IsTimeout(berr):
			o = stream.ClientTimeoutData
		case errors.Is(berr, errClientSide):
			o = stream.ClientAbortData
		case netio.IsTimeout(berr):
			o = stream.ServerTimeoutData
		}
		x.End(o)
		return false
	}
	if upgrade {
		in, out := s.tunnel(uc)
		x.SetClock(time.Time{}) // the tunnel's end is read anew: Ta and Tt cover it
		x.Tunneled(in.N, out.N)
		x.End(stream.RelayOutcome(in, out, true))
		return false
	}
	x.End(stream.Served)
	return !closeAfter
}

// denyResponse answers the error page of an http_response deny with
// status code in place of the server's response (dropped, with its
// connection) and ends the request. The client connection stays open, as
// HAProxy 2.6 keeps it, unless the client asked to close, the page closes
// it (400, 408) or the proxy is stopping. It returns true when the
// connection stays usable.
func (s *session) denyResponse(code int) bool {
	page := DenyResponse(code)
	s.x.Replied(code, int64(len(page)))
	s.bw.Write(page)
	s.x.End(stream.ResponseDenied)
	keep := code != 400 && code != 408 && !s.req.connClose && !s.cl.StoppingForGood()
	return s.flushClient() == nil && keep
}

// watchable reports whether the client connection may be watched with a
// read while the request waits in a queue: nothing is buffered from it and
// the request has no body, so any byte read is the next request or the
// close.
func (s *session) watchable() bool {
	return s.br.Buffered() == 0 && !s.req.chunked && s.req.contentLength <= 0
}

// waitQueue is the HTTP engine's queue.WaitFunc. It watches the client
// while the request waits, in this goroutine and without a timer: it arms
// the read deadline at the queue deadline and blocks in a one-byte Peek.
// The read ends when the client closes or resets (WaitGone, the CQ case),
// when the deadline passes (WaitTimeout), or when the dispatcher hands the
// request a slot and moves the deadline to the past (p.Wake). A client
// that sends bytes instead (a pipelined request) can no longer be watched
// this way: the wait goes on on the channel only. Preconditions:
// watchable, and p was queued with Wake = the client connection.
func (s *session) waitQueue(p *queue.Pending, deadline time.Time) queue.WaitEnd {
	if p.Wake == nil {
		return queue.ChanWait(p, deadline)
	}
	c := s.c
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
func (s *session) reuse(up *Upstream) *upConn {
	key := s.x.ConnKey()
	if uc := s.owned; uc != nil {
		s.owned = nil
		if uc.up == up && uc.key == key && uc.idleOK() {
			return uc
		}
		uc.close() // private to this session: never pooled
	}
	switch up.Reuse {
	case ReuseNever:
		return nil
	case ReuseSafe:
		if s.nreq <= 1 {
			return nil
		}
		return up.Pool.get(false, key)
	case ReuseAggressive:
		return up.Pool.get(s.nreq <= 1, key)
	default: // always
		return up.Pool.get(false, key)
	}
}

// release hands a finished server connection back: kept private to this
// session under http_reuse never, else to its server's pool.
func (s *session) release(uc *upConn) {
	if uc.up.Reuse == ReuseNever {
		s.owned = uc
		return
	}
	uc.release(s.now())
}

// errClientSide marks errors that happened on the client connection.
var errClientSide = errors.New("client side")

type clientErr struct{ err error }

func (e clientErr) Error() string   { return "client: " + e.err.Error() }
func (e clientErr) Unwrap() []error { return []error{errClientSide, e.err} }
func (e clientErr) Timeout() bool   { return netio.IsTimeout(e.err) }
func wrapClient(err error) error    { return clientErr{err} }
func (s *session) flushClient() error {
	if s.bw.Buffered() == 0 {
		return nil
	}
	s.dl.ArmWrite(s.c, s.now(), s.set.TimeoutClient)
	if err := s.bw.Flush(); err != nil {
		return wrapClient(err)
	}
	return nil
}

// sendRequest writes the request head and streams its body to uc. It
// returns the body bytes sent; errors reading from the client are wrapped
// with errClientSide. With buffered, the body is all in the client buffer
// (replayable): it is written from there and left in it, head and body in
// one write.
func (s *session) sendRequest(uc *upConn, hasBody, buffered bool) (int64, error) {
	w := uc.bw
	now := s.now()
	uc.dl.ArmWrite(uc.c, now, s.backendTimeoutServer(uc))
	s.writeRequestHead(w)
	var n int64
	if hasBody && buffered {
		p, _ := s.br.Peek(int(s.req.contentLength))
		w.Write(p) // an error stays in w: Flush returns it
		n = int64(len(p))
	} else if hasBody {
		s.dl.ArmRead(s.c, now, s.set.TimeoutClient)
		flush := func() error {
			now := time.Now()
			s.dl.ArmRead(s.c, now, s.set.TimeoutClient)
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

func (s *session) backendTimeoutServer(uc *upConn) time.Duration {
	return uc.up.TimeoutServer
}

// writeRequestHead writes the request line and headers for the server:
// hop-by-hop fields removed, Expect answered locally, X-Forwarded-For
// appended when forwardfor is on (HAProxy's `option forwardfor` adds its own
// header line after the client's). It returns the bytes written.
func (s *session) writeRequestHead(w *bufio.Writer) int64 {
	r := &s.req
	edits := s.x.Edits()
	n := w.Buffered()
	w.Write(r.line[0])
	w.WriteByte(' ')
	w.Write(s.x.URI())
	// The version is kept as the client sent it, as HAProxy does: an
	// HTTP/1.0 request may lack Host, which HTTP/1.1 requires.
	w.WriteByte(' ')
	w.Write(r.line[2])
	w.WriteString("\r\n")
	for i := range r.headers {
		h := &r.headers[i]
		if edits.Hidden(i) || h.isHopByHop(r.connUpgrade) || (r.expect100 && !r.expectFwd && bytes.EqualFold(h.name, hdrExpect)) {
			continue
		}
		w.Write(h.name)
		w.WriteString(": ")
		w.Write(h.value)
		w.WriteString("\r\n")
	}
	for i := range edits.NumAdded() { // add-header and set-header lines
		if name, value, ok := edits.AddedAt(i); ok {
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
	if s.set.ForwardFor {
		b := append(w.AvailableBuffer(), "X-Forwarded-For: "...)
		b = s.cl.Src().Addr().Unmap().AppendTo(b)
		w.Write(append(b, "\r\n"...))
	}
	w.WriteString("\r\n")
	return int64(w.Buffered() - n)
}

// readResponseHead reads the final response head from uc, relaying interim
// 1xx responses (other than 101) to the client as they come.
// arm false leaves the read deadline as it is for the first head (a
// parked request's, armed when it parked); have says that head was read
// and parsed already.
func (s *session) readResponseHead(uc *upConn, arm, have bool) error {
	for {
		if !have {
			if arm {
				uc.dl.ArmRead(uc.c, time.Now(), s.backendTimeoutServer(uc))
			}
			if err := s.resp.readHead(uc.br, true); err != nil {
				return err
			}
			if err := s.resp.parse(true); err != nil {
				return err
			}
		}
		have, arm = false, true
		if s.resp.status >= 200 || s.resp.status == 101 {
			return nil
		}
		s.x.Interim(s.resp.status)
		if s.resp.status == 100 && s.req.expect100 && (!s.req.expectFwd || s.req.continued) {
			continue // answered locally, or relayed once already
		}
		// An interim response is written anew, as the final one: its
		// status line and checked fields with CRLFs, never the bytes as
		// received (issue 16: a bare-LF 100 head reached the client).
		s.writeInterimHead()
		if err := s.flushClient(); err != nil {
			return err
		}
		if s.resp.status == 100 {
			s.req.continued = true
		}
		if s.uploading && !s.uploadEnded() {
			// The body goes on: the next head is awaited as the first
			// was, timeout_server running from the last write.
			if err := s.awaitAgain(uc); err != nil {
				return awaitError{err}
			}
		}
	}
}

// writeInterimHead writes an interim (1xx) response head for the client:
// its status line and its end-to-end fields.
func (s *session) writeInterimHead() {
	r := &s.resp
	w := s.bw
	w.WriteString("HTTP/1.1 ")
	w.Write(r.line[1])
	w.WriteByte(' ')
	w.Write(r.line[2])
	w.WriteString("\r\n")
	for i := range r.headers {
		if h := &r.headers[i]; !h.isHopByHop(false) {
			w.Write(h.name)
			w.WriteString(": ")
			w.Write(h.value)
			w.WriteString("\r\n")
		}
	}
	w.WriteString("\r\n")
}

// writeResponseHead writes the status line and headers for the client and
// returns the bytes written. The http_response rules' edits apply here:
// set-status's line, the lines they removed left out, the lines they
// added after the server's.
func (s *session) writeResponseHead(closeAfter, upgrade bool) int64 {
	r := &s.resp
	w := s.bw
	n := s.written()
	edits := s.x.ResponseEdits()
	w.WriteString("HTTP/1.1 ")
	if code, reason, ok := edits.Status(); ok {
		w.Write(strconv.AppendInt(w.AvailableBuffer(), int64(code), 10))
		w.WriteByte(' ')
		w.Write(reason)
	} else {
		w.Write(r.line[1])
		w.WriteByte(' ')
		w.Write(r.line[2])
	}
	w.WriteString("\r\n")
	for i := range r.headers {
		h := &r.headers[i]
		if h.isHopByHop(upgrade) || edits != nil && edits.Hidden(i) || s.x.FilterResponseField(w, h.name, h.value) {
			continue
		}
		w.Write(h.name)
		w.WriteString(": ")
		w.Write(h.value)
		w.WriteString("\r\n")
	}
	if edits != nil {
		for i := range edits.NumAdded() { // add-header and set-header lines
			if name, value, ok := edits.AddedAt(i); ok {
				w.Write(name)
				w.WriteString(": ")
				w.Write(value)
				w.WriteString("\r\n")
			}
		}
	}
	switch {
	case upgrade:
		w.WriteString("connection: upgrade\r\n")
	case closeAfter:
		w.WriteString("connection: close\r\n")
	case s.req.http10:
		w.WriteString("connection: keep-alive\r\n")
	}
	s.x.AppendResponseFields(w)
	w.WriteString("\r\n")
	return s.written() - n
}

// streamFlush returns the flush function used while relaying a response
// body: it pushes what the client buffer holds and re-arms both inactivity
// timeouts.
func (s *session) streamFlush(uc *upConn) func() error {
	return func() error {
		uc.dl.ArmRead(uc.c, time.Now(), s.backendTimeoutServer(uc))
		return s.flushClient()
	}
}

// copyBody relays a fixed-length response body of n bytes. Large bodies go
// socket to socket once the buffers are drained, so Linux splices them.
func (s *session) copyBody(uc *upConn, n int64) (int64, error) {
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
	e := netio.Pipe(s.c, uc.c, n-done, s.set.TimeoutClient, uc.up.TimeoutServer, true)
	s.x.Spliced(e.N)
	switch {
	case e.DstErr != nil:
		return done + e.N, wrapClient(e.DstErr)
	case e.SrcErr != nil:
		return done + e.N, e.SrcErr
	}
	return done + e.N, nil
}

// copyUntilClose relays a body delimited by the server closing.
func (s *session) copyUntilClose(uc *upConn) (int64, error) {
	n, err := copyBuffered(s.bw, uc.br, 1<<62, s.streamFlush(uc))
	if err == io.ErrUnexpectedEOF || err == io.EOF {
		return n, nil
	}
	return n, err
}

// tunnel relays bytes both ways after a 101 Switching Protocols (WebSocket
// and other upgrades) until both sides have closed, or one failed or was
// idle past its timeout (the backend's timeout_tunnel when set, for both
// sides, else timeout_client and timeout_server); it returns each
// direction's end (in: from the client), bytes passed on before the relay
// started included.
func (s *session) tunnel(uc *upConn) (in, out netio.CopyEnd) {
	defer uc.close()
	// Bytes the client sent after its request head belong to the tunnel.
	var early [2]int64
	if n := s.br.Buffered(); n > 0 {
		p, _ := s.br.Peek(n)
		w, _ := uc.c.Write(p)
		early[0] = int64(w)
	}
	if n := uc.br.Buffered(); n > 0 {
		p, _ := uc.br.Peek(n)
		w, _ := s.c.Write(p)
		early[1] = int64(w)
	}
	defer func() { in.N, out.N = in.N+early[0], out.N+early[1] }()
	// The relay has buffers of its own: both sides' readers and writers
	// (4 x netio.BufSize, all drained or flushed) go back to their pools
	// for the tunnel's life (a WebSocket may stay open for hours).
	s.bw.Flush() // the 101 went out already: nothing to write
	netio.PutReader(s.br)
	netio.PutWriter(s.bw)
	netio.PutReader(uc.br)
	netio.PutWriter(uc.bw)
	s.br, s.bw, uc.br, uc.bw = nil, nil, nil, nil
	relay := netio.Relay
	if s.set.Relay != nil {
		relay = s.set.Relay
	}
	clientIdle, serverIdle := s.set.TimeoutClient, uc.up.TimeoutServer
	if t := uc.up.TimeoutTunnel; t > 0 {
		clientIdle, serverIdle = t, t // HAProxy's timeout tunnel
	}
	return relay(s.c, uc.c, clientIdle, serverIdle)
}
