package http1

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"sync/atomic"
	"time"

	"github.com/fulcrum-proxy/fulcrum/proxy/netio"
	"github.com/fulcrum-proxy/fulcrum/proxy/netio/epoll"
	"github.com/fulcrum-proxy/fulcrum/proxy/stream"
)

// Responses finished by the epoll layer (issue 21): a request without a
// body whose client and server connections are both plaintext Conns of
// the epoll layer does not keep its goroutine while the server answers.
// Once the request is sent, the session "parks": the server connection
// waits for its response with no goroutine (epoll.Conn.Await), and the
// worker goes back to its pool. The reaper that collects the server's
// event (or the timer of its read deadline, or whoever closes it) calls
// the session's respWaker: it fills the server's reader without blocking
// and, when the whole response is there and simple (a final status, a
// Content-Length body all read, or none), finishes the request right
// there with the session's own code: response rules and edits, the
// non-blocking write to the client, the counters, the log line, the
// server connection back to its pool; then the client connection waits
// for its next request the same way (idleWaker), and a worker serves it
// when it comes. A head still coming is waited for the same way (timeout
// server running as for a worker's reads). Anything else (a body not all
// there yet, which a worker relays at once and streams, as HAProxy
// forwards what it has; an interim or 101 response, a chunked,
// close-delimited or larger body, an error, the deadline) goes to a
// worker, which goes on from exactly where the session stands
// (Continue): the bytes already read are in the reader, nothing is lost
// or reordered. A client write that the socket does not take whole keeps
// the rest (cliSink), and a worker writes it before the request ends.
//
// Each request thus costs one goroutine run (its arrival) instead of two
// (its arrival and its response's). FULCRUM_H1INLINE=0 turns it off
// (Settings.Inline).
//
// The arrival is the reaper's too (onRequest, InlineCounters.Requests):
// the idle client's wake-up reads the next request's head without
// blocking (cs under br), routes it, assigns a server that needs no queue
// (Stream.TryTake), takes a pooled connection and sends the request
// without blocking (sink under the server's bw), then parks it as a
// worker would. At the first step that could block or is not simple, a
// worker goes on from exactly there (continueRequest's entries); a head
// not whole is left to a worker before anything is begun.
// FULCRUM_H1INLINE_REQ=0 turns that part off.
//
// A new connection's first request can start there too (AwaitFirst,
// InlineCounters.First): the connection is accepted, its session begun
// and its first request awaited with no goroutine and no buffers; the
// buffers are taken when its first bytes arrive, and onRequest goes on as
// for a next request. A first request that never comes gets its 408 from
// a worker, as in Serve. FULCRUM_H1INLINE_FIRST=0 turns that part off.

// InlineCounters count the parked requests (Settings.Inline): those the
// epoll layer's callbacks finished, and those a worker went on with; and
// the wake-ups that found the response's head incomplete and waited again.
type InlineCounters struct {
	Finished  atomic.Int64
	Continued atomic.Int64
	Waited    atomic.Int64
	// Sent counts the requests the reaper read, routed and sent itself
	// (Requests), Handed those it began and a worker went on with.
	Sent   atomic.Int64
	Handed atomic.Int64
	// Requests turns on the request phase on the reaper (set before the
	// counters are shared; FULCRUM_H1INLINE_REQ=0 leaves it off).
	Requests bool
	// First lets a new connection's first request start on the reaper
	// too (AwaitFirst; with Requests; FULCRUM_H1INLINE_FIRST=0 leaves it
	// off). Awaited counts the connections that began so.
	First   bool
	Awaited atomic.Int64
	// Hibernated counts the keep-alive connections the pollers let
	// hibernate at IdleKeep (hibernateIdle), with no worker.
	Hibernated atomic.Int64
}

// End is how Serve, Resume and Continuation.Continue left a connection.
type End uint8

const (
	// EndClosed: the connection is closed and the session released.
	EndClosed End = iota
	// EndHibernated: the connection hibernates (Hibernator).
	EndHibernated
	// EndParked: the connection waits with its session kept, and a worker
	// goes on through Parker.Dispatch when it is to.
	EndParked
)

// Continuation is a parked session, to be continued on a worker
// goroutine (Parker.Dispatch).
type Continuation interface {
	// Continue serves the connection from where it parked, as Serve does.
	Continue() End
}

// Parker is a Client whose requests may park while their responses come
// (its connection is the epoll layer's, not TLS).
type Parker interface {
	// Dispatch calls k.Continue on a worker goroutine of the
	// connection's proxy, and, when it returns EndClosed, releases the
	// connection as Serve's caller does. It must not block: the epoll
	// layer's reaper calls it.
	Dispatch(k Continuation)
	// Closed closes the connection and releases it as Serve's caller
	// does when Serve returns EndClosed (the engine closed its session
	// in an event callback); it must not block.
	Closed()
}

// tryIO is a connection the epoll layer's event callbacks may use without
// blocking (epoll.Conn).
type tryIO interface {
	net.Conn
	Await(epoll.Waker)
	Readable() bool
	ReadExpired() bool
	Speculate()
	TryRead([]byte) (int, error)
	TryWrite([]byte) (int, error)
}

// entry is where a session's serve loop starts.
type entry uint8

const (
	entryTop      entry = iota // wait for the next request
	entryResumed               // out of hibernation: readFirst
	entryAwait                 // the next request is awaited since pIdle (armed)
	entryResponse              // the response of the parked request
	entryFlush                 // the client's pending bytes, then the request's end
	entryTail                  // pending bytes, then the loop's end with pKeep
	// A request the reaper began (onRequest), gone on with by a worker:
	entryHead     // its head read, with pErr
	entryParsed   // its head parsed, with pErr
	entryRouted   // routed (pRoute)
	entryAssigned // a server assigned
	entryExchange // sent (pSend) on pUp
)

// sendState is how the reaper's send of a request went (entryExchange).
type sendState uint8

const (
	sendNone    sendState = iota
	sendDone              // sent whole
	sendPending           // the rest is in pUp.sink.pending
	sendFailed            // with pErr
)

// parkState says what a session waits for once its goroutine leaves.
type parkState uint8

const (
	parkNone     parkState = iota
	parkResponse           // pu's response
)

// upSrc is the reader under an epoll server connection's br.
type upSrc struct {
	c   tryIO
	nb  bool  // a callback fills br: TryRead
	err error // an error a non-blocking fill met: the next read's
}

// Read implements io.Reader.
func (u *upSrc) Read(p []byte) (int, error) {
	if u.err != nil {
		err := u.err
		u.err = nil
		return 0, err
	}
	if u.nb {
		return u.c.TryRead(p)
	}
	return u.c.Read(p)
}

// newWriter returns uc's buffered writer: through sink on the epoll layer
// (the reaper's non-blocking send of a request, inline.go).
func (uc *upConn) newWriter() *bufio.Writer {
	if tc, ok := uc.c.(tryIO); ok {
		uc.sink = cliSink{c: tc}
		return netio.GetWriter(&uc.sink)
	}
	return netio.GetWriter(uc.c)
}

// newReader returns uc's buffered reader: through src on the epoll layer.
func (uc *upConn) newReader() *bufio.Reader {
	if tc, ok := uc.c.(tryIO); ok {
		uc.src = upSrc{c: tc}
		return netio.GetReader(&uc.src)
	}
	return netio.GetReader(uc.c)
}

// cliSink is the writer under a parkable client's bw. While nb (an event
// callback writes), what the socket does not take is kept in pending, for
// a worker to write (flush); bw sees every write succeed.
type cliSink struct {
	c       tryIO
	nb      bool
	hold    bool // every write is kept in pending (Exchange.QueueSend)
	pending []byte
}

// Write implements io.Writer.
func (w *cliSink) Write(p []byte) (int, error) {
	if w.hold {
		w.pending = append(w.pending, p...)
		return len(p), nil
	}
	if !w.nb {
		return w.c.Write(p)
	}
	if len(w.pending) > 0 {
		w.pending = append(w.pending, p...)
		return len(p), nil
	}
	n, err := w.c.TryWrite(p)
	if err == epoll.ErrWouldBlock {
		w.pending = append(w.pending[:0], p[n:]...)
		return len(p), nil
	}
	return n, err
}

// flush writes the pending bytes, blocking (a worker's), under the write
// deadline armed when they were written.
func (w *cliSink) flush() error {
	if len(w.pending) == 0 {
		return nil
	}
	_, err := w.c.Write(w.pending)
	w.pending = w.pending[:0]
	if cap(w.pending) > 64<<10 {
		w.pending = nil
	}
	return err
}

// respWaker and idleWaker are a parked session's epoll.Wakers: for its
// server's response, for its client's next request.
type respWaker struct{ s *session }
type idleWaker struct{ s *session }

// Wake implements epoll.Waker.
func (w *respWaker) Wake() { w.s.onResponse() }

// Wake implements epoll.Waker.
func (w *idleWaker) Wake() {
	s := w.s
	if !s.cw.c.Readable() {
		s.cw.c.Await(&s.iw) // a late event or timer: wait again
		return
	}
	if s.br == nil { // the wait had none (AwaitFirst, afterInline)
		if s.keepArmed && s.hibernateIdle() {
			return
		}
		s.br, s.bw = netio.GetReader(s.src()), s.newWriter()
	}
	if s.set.Inline != nil && s.set.Inline.Requests && s.onRequest() {
		return
	}
	s.dispatch(entryAwait)
}

// CanAwaitFirst reports whether AwaitFirst may begin a connection c of a
// frontend with settings set: First is on and c is the epoll layer's
// (plaintext; its Client must be a Parker).
func CanAwaitFirst(set *Settings, c net.Conn) bool {
	if set.Inline == nil || !set.Inline.Requests || !set.Inline.First {
		return false
	}
	_, ok := c.(tryIO)
	return ok
}

// AwaitFirst begins serving a new client connection (one CanAwaitFirst
// accepts, whose Client is a Parker) whose first request is awaited with
// no goroutine (InlineCounters.First): it returns at once, the epoll
// layer's reaper waiting for the request; onRequest then serves it as a
// next request, or a worker does through the Parker, as Serve would have.
// The session's buffers are taken when the first bytes arrive, so a
// connection that is opened and not used holds none.
func AwaitFirst(cl Client) {
	s := newSession(cl)
	s.set.Inline.Awaited.Add(1)
	idleStart := time.Now()
	s.dl.ArmRead(s.c, idleStart, s.set.TimeoutHTTPRequest)
	s.pIdle = idleStart
	// Its first bytes may be there already: read before waiting (the
	// wake-up reads without blocking, and waits on the pollers, without
	// buffers, when they are not).
	s.cw.c.Speculate()
	s.iw.Wake()
}

// hibernateIdle lets a keep-alive connection whose wait on the pollers
// (afterInline) reached IdleKeep with nothing to read hibernate at once,
// as a worker's awaitRequest would have had it, without the worker. It
// returns false, the read deadline put back to the request's, when the
// connection is to be served instead: bytes or its end came, the
// request's own deadline passed, or it cannot hibernate.
func (s *session) hibernateIdle() bool {
	if !s.cw.c.ReadExpired() || time.Now().Before(s.pIdle.Add(s.set.IdleKeep)) || !s.canHibernate() {
		return false
	}
	s.keepArmed = false
	s.c.SetReadDeadline(s.dl.Read())
	if s.cw.c.Readable() {
		return false
	}
	s.set.Inline.Hibernated.Add(1)
	s.hibernate(s.pIdle)
	return true
}

// newWriter returns the client's buffered writer: through cw when the
// connection can park.
func (s *session) newWriter() *bufio.Writer {
	s.out.w = s.c
	if s.cw.c != nil {
		s.out.w = &s.cw
	}
	return netio.GetWriter(&s.out)
}

// countSink counts the bytes written through it, for the bytes of a
// response head that a flush of bw took before it was whole (a head of
// more than bw's 16 KiB: bw.Buffered alone missed them).
type countSink struct {
	w io.Writer
	n int64
}

func (c *countSink) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// written returns the bytes given to bw since the session began, flushed
// or not.
func (s *session) written() int64 { return s.out.n + int64(s.bw.Buffered()) }

// initPark readies s to park when its client can.
func (s *session) initPark() {
	s.rw.s, s.iw.s = s, s
	if _, ok := s.cl.(Parker); !ok {
		return
	}
	if tc, ok := s.c.(tryIO); ok {
		s.cw = cliSink{c: tc}
		s.cs = upSrc{c: tc}
	}
}

// canPark reports whether the request just sent on uc may wait for its
// response with no goroutine.
func (s *session) canPark(uc *upConn) bool {
	return s.set.Inline != nil && s.cw.c != nil && uc.src.c != nil && uc.br.Buffered() == 0 &&
		!s.view.HasBody && !s.req.expect100 && !s.req.connUpgrade && s.h2own == nil
}

// parkResponse makes s wait for uc's response (sleep, once the stack has
// unwound): the read deadline is armed as readResponseHead's.
func (s *session) parkResponse(uc *upConn, reused bool, attempt int) {
	s.park = parkResponse
	s.pu, s.pReused, s.pAttempt, s.pHead, s.pErr = uc, reused, attempt, false, nil
	uc.dl.ArmRead(uc.c, s.now(), s.backendTimeoutServer(uc))
}

// setClock makes t the time that s and its Stream read until clearClock:
// the inline callbacks (onRequest, onResponse) never block, and read the
// clock once for all they do (HAProxy's phases read its loop's date).
func (s *session) setClock(t time.Time) {
	s.clk = t
	s.x.SetClock(t)
}

// clearClock makes s and its Stream read the clock again. Every way out
// of an inline callback that hands s on (a worker, a wait on the pollers,
// the end) clears it first: s is another goroutine's after that.
func (s *session) clearClock() {
	if !s.clk.IsZero() {
		s.setClock(time.Time{})
	}
}

// now returns the time setClock set, else the clock's.
func (s *session) now() time.Time {
	if s.clk.IsZero() {
		return time.Now()
	}
	return s.clk
}

// sleep is the parking goroutine's last use of s.
func (s *session) sleep() {
	s.park = parkNone
	s.clearClock()
	s.pu.src.c.Await(&s.rw)
}

// dispatch hands s to a worker, to go on at e.
func (s *session) dispatch(e entry) {
	if e == entryResponse && s.set.Inline != nil {
		s.set.Inline.Continued.Add(1)
	}
	s.clearClock()
	s.next = e
	s.cl.(Parker).Dispatch(s)
}

// Continue implements Continuation.
func (s *session) Continue() End {
	e := s.next
	s.next = entryTop
	return s.run(e, s.pIdle)
}

// onResponse is the parked response's wake-up: an event, the read
// deadline, or a close of the server connection; it never blocks.
func (s *session) onResponse() {
	uc := s.pu
	src := &uc.src
	if !src.c.Readable() {
		src.c.Await(&s.rw) // a late event or timer: wait again
		return
	}
	s.setClock(time.Now())
	src.nb = true
	p, err := uc.br.Peek(uc.br.Size())
	src.nb = false
	switch err {
	case nil, bufio.ErrBufferFull, epoll.ErrWouldBlock:
	default:
		src.err = err // the worker's read meets it
		s.dispatch(entryResponse)
		return
	}
	if !s.pHead {
		if headEnd(p) < 0 {
			if len(p) >= uc.br.Size() || len(p) >= maxHeaderBytes {
				s.dispatch(entryResponse)
				return
			}
			s.waitMore()
			return
		}
		// The whole head is buffered: reading it reads nothing more.
		s.pHead = true
		s.headAt = s.now()
		if err := s.resp.readHead(uc.br, true); err != nil {
			s.pErr = err
			s.dispatch(entryResponse)
			return
		}
		if err := s.resp.parse(true); err != nil {
			s.pErr = err
			s.dispatch(entryResponse)
			return
		}
	}
	r := &s.resp
	st := r.status
	noBody := string(s.req.line[0]) == "HEAD" || st == 204 || st == 304
	if st < 200 || st == 101 || (!noBody && (r.chunked || r.contentLength < 0 || r.contentLength > int64(uc.br.Size()))) {
		s.dispatch(entryResponse)
		return
	}
	if !noBody && int64(uc.br.Buffered()) < r.contentLength {
		// The head, and part of the body: a worker relays them now and
		// streams the rest as it comes, as HAProxy forwards what it has
		// (waiting here for the whole body held the head back from the
		// client, for as long as the server took: a fresh-user trial).
		s.dispatch(entryResponse)
		return
	}
	// Simple and whole: the request ends here.
	if s.set.Inline != nil {
		s.set.Inline.Finished.Add(1)
	}
	s.pu, s.pHead = nil, false
	s.cw.nb = true
	keep := s.afterExchange(uc, stream.Served)
	s.cw.nb = false
	if s.flushPending {
		s.dispatch(entryFlush)
		return
	}
	s.releaseStream(keep)
	s.afterInline(keep)
}

// waitMore makes the parked response wait for more of its bytes.
func (s *session) waitMore() {
	if s.set.Inline != nil {
		s.set.Inline.Waited.Add(1)
	}
	s.clearClock()
	s.pu.src.c.Await(&s.rw)
}

// afterInline is the end of the serve loop's turn for a request finished
// by onResponse: the client connection waits for its next request with no
// goroutine when it can, else a worker goes on.
func (s *session) afterInline(keep bool) {
	if len(s.cw.pending) > 0 {
		s.pKeep = keep
		s.dispatch(entryTail)
		return
	}
	if !keep {
		s.closeInline()
		return
	}
	ok, moved := s.cl.Idle()
	if !ok {
		s.closeInline()
		return
	}
	if moved {
		s.settings()
	}
	idleStart := s.now()
	s.dl.ArmRead(s.c, idleStart, s.idleTimeout())
	s.pIdle = idleStart
	if s.br.Buffered() > 0 || s.set.IdleKeep <= 0 {
		s.dispatch(entryAwait)
		return
	}
	// As awaitRequest: the wait on the pollers ends at IdleKeep (a worker
	// then lets the connection hibernate). The buffers go back now: this
	// wait reads nothing into them, and the wake-up takes them again
	// (idleWaker), so that a burst of connections does not hold 32 KiB
	// each for IdleKeep.
	deadline := s.dl.Read()
	if keepEnd := idleStart.Add(s.set.IdleKeep); deadline.IsZero() || keepEnd.Before(deadline) {
		s.c.SetReadDeadline(keepEnd)
		s.keepArmed = true
	}
	if s.bw.Buffered() == 0 && len(s.cw.pending) == 0 {
		netio.PutReader(s.br)
		netio.PutWriter(s.bw)
		s.br, s.bw = nil, nil
	}
	s.clearClock()
	s.cw.c.Await(&s.iw)
}

// closeInline closes a connection whose last request onResponse
// finished, as serve's return with EndClosed and its caller would.
func (s *session) closeInline() {
	s.clearClock()
	cl := s.cl.(Parker)
	s.close()
	cl.Closed()
}

// continueResponse is a worker's turn for a parked response: the head
// (unless the callback read it), the exchange's end, the relay.
func (s *session) continueResponse() bool {
	uc := s.pu
	s.pu = nil
	err := s.pErr
	if err == nil {
		err = s.readResponseHead(uc, false, s.pHead)
	}
	s.pHead, s.pErr = false, nil
	uc, o := s.exchangeFrom(uc, s.pReused, s.pAttempt, true, err)
	if s.park != parkNone {
		return true // parked again (a retry on a new connection)
	}
	keep := s.afterExchange(uc, o)
	s.releaseStream(keep)
	return keep
}

// continueFlush is a worker's turn for a response finished by onResponse
// whose last bytes the client's socket did not take at once.
func (s *session) continueFlush() bool {
	s.flushPending = false
	var berr error
	if err := s.cw.flush(); err != nil {
		berr = wrapClient(err)
	}
	keep := s.relayEnd(nil, berr, false, s.pClose)
	s.releaseStream(keep)
	return keep
}

// headEnd returns where the head at the start of p ends (after the LF of
// its empty line), as readHead finds it, or -1 when it does not end in p.
func headEnd(p []byte) int {
	i := 0
	for {
		if i < len(p) && p[i] == '\n' {
			i++
		} else if i+1 < len(p) && p[i] == '\r' && p[i+1] == '\n' {
			i += 2
		} else {
			break
		}
	}
	start := i
	for {
		j := bytes.IndexByte(p[i:], '\n')
		if j < 0 {
			return -1
		}
		end := i + j + 1
		if h := p[start:end]; len(h) >= 2 && h[len(h)-2] == '\n' || len(h) >= 3 && string(h[len(h)-3:]) == "\n\r\n" {
			return end
		}
		i = end
	}
}

// src is what the client's reader reads: cs on a connection that can park.
func (s *session) src() io.Reader {
	if s.cw.c != nil {
		return &s.cs
	}
	return s.c
}

// onRequest is the request phase of a parked client connection whose next
// request's bytes arrived (issue 21): on the reaper, it reads the head
// without blocking, routes the request, assigns a server that has a free
// slot, takes a pooled connection to it and sends the request, which then
// parks for its response, as a worker would. At the first step that could
// block, or that is not that simple, a worker goes on from exactly there
// (continueRequest): the bytes read are in br, the Stream as it stands. It
// returns false, having changed nothing that matters (bytes read stay in
// br), when the worker is to serve the request whole (entryAwait); a
// wake-up that finds nothing to read waits again.
func (s *session) onRequest() bool {
	if s.br == nil || s.bw.Buffered() > 0 || len(s.cw.pending) > 0 {
		return false
	}
	s.cs.nb = true
	p, err := s.br.Peek(s.br.Size())
	s.cs.nb = false
	switch err {
	case nil, bufio.ErrBufferFull:
	case epoll.ErrWouldBlock:
		if len(p) == 0 {
			// Woken with nothing to read (a new connection's first look,
			// an event handled late): wait again, as a worker's read
			// would, without buffers.
			if s.bw.Buffered() == 0 {
				netio.PutReader(s.br)
				netio.PutWriter(s.bw)
				s.br, s.bw = nil, nil
			}
			s.cw.c.Await(&s.iw)
			return true
		}
	default:
		// The end of the stream (a client that half-closed after its
		// request) or an error: the next read after the buffered bytes
		// meets it, the worker's or this callback's; what came before it
		// is served as any request.
		s.cs.err = err
		if len(p) == 0 {
			return false
		}
	}
	if s.nreq == 0 && mayBeH2(p) {
		return false // perhaps HTTP/2 (upgrade.go): a worker decides
	}
	if headEnd(p) < 0 {
		return false // the rest of the head: a worker waits for it
	}
	// As awaitRequest with bytes buffered, then serve.
	s.setClock(time.Now())
	if s.keepArmed {
		s.keepArmed = false
		s.c.SetReadDeadline(s.dl.Read())
	}
	ok, moved := s.cl.Active()
	if !ok {
		s.closeInline()
		return true
	}
	if moved {
		s.settings()
	}
	in := s.set.Inline
	if in == nil || !in.Requests {
		// Moved to a configuration without it: a worker reads the head.
		s.handOff(in, entryHead, s.beginHead())
		return true
	}
	if err := s.beginHead(); err != nil {
		s.handOff(in, entryHead, err)
		return true
	}
	x := s.x
	x.HeadRead(len(s.req.buf))
	if err := s.req.parse(false); err != nil {
		s.handOff(in, entryParsed, err)
		return true
	}
	s.setView()
	if s.view.HasBody || s.req.expect100 || s.req.connUpgrade || s.req.hasAuth() {
		s.handOff(in, entryParsed, nil)
		return true
	}
	rt := x.Route(&s.view, s.now())
	if rt.Kind != stream.RouteBackend || !x.TryTake() {
		s.pRoute = rt
		s.handOff(in, entryRouted, nil)
		return true
	}
	up := x.Upstream()
	if up.H2 != nil || s.owned != nil {
		s.handOff(in, entryAssigned, nil)
		return true
	}
	uc := s.reuse(up)
	if uc == nil || uc.sink.c == nil || uc.src.c == nil {
		if uc != nil {
			s.release(uc) // not a connection to send on here: back for connect
		}
		s.handOff(in, entryAssigned, nil)
		return true
	}
	x.Connected(uc.c, true)
	uc.sink.nb = true
	_, err = s.sendRequest(uc, false, true)
	uc.sink.nb = false
	s.pUp = uc
	switch {
	case err != nil:
		s.pSend = sendFailed // with err, in pErr
	case len(uc.sink.pending) > 0:
		s.pSend = sendPending
	case !s.canPark(uc):
		s.pSend = sendDone
	default:
		s.pUp = nil
		in.Sent.Add(1)
		x.Sent(0)
		s.parkResponse(uc, true, 0)
		s.sleep()
		return true
	}
	s.handOff(in, entryExchange, err)
	return true
}

// beginHead is handle's start, on the reaper: the head is all in br, and
// reading it reads nothing more (were it to, the read would not block).
func (s *session) beginHead() error {
	s.beginRequest(s.pIdle)
	s.cs.nb = true
	err := s.req.readHead(s.br, false)
	s.cs.nb = false
	return err
}

// handOff has a worker go on with the request onRequest began, at e.
func (s *session) handOff(in *InlineCounters, e entry, err error) {
	if in != nil {
		in.Handed.Add(1)
	}
	s.pErr = err
	s.dispatch(e)
}

// continueRequest is a worker's turn for a request onRequest began: from
// where it stopped, as handle goes on.
func (s *session) continueRequest(e entry) bool {
	err := s.pErr
	s.pErr = nil
	switch e {
	case entryHead:
		return s.handleHead(err)
	case entryParsed:
		return s.handleParsed(err)
	case entryRouted:
		rt := s.pRoute
		s.pRoute = stream.Route{}
		return s.handleRoute(rt)
	case entryAssigned:
		return s.forwarded(s.forwardAssigned())
	}
	// entryExchange
	uc := s.pUp
	s.pUp = nil
	s.pErr = err // sentBefore's
	uc, o := s.exchange(uc, true)
	if s.park != parkNone {
		return true
	}
	return s.forwarded(s.afterExchange(uc, o))
}

// sentBefore is exchange's first send when the reaper sent the request
// (pSend): the rest of its bytes, or the error it met.
func (s *session) sentBefore(uc *upConn) error {
	st, err := s.pSend, s.pErr
	s.pSend, s.pErr = sendNone, nil
	switch st {
	case sendPending:
		return uc.sink.flush()
	case sendFailed:
		return err
	}
	return nil
}

// hasAuth reports whether h has an Authorization or Proxy-Authorization
// field: checking credentials (http_auth, the stats page's) may hash a
// password, too long for a reaper, which the other connections wait on.
func (h *head) hasAuth() bool {
	for _, f := range h.headers {
		if n := f.name; len(n) >= 13 && bytes.EqualFold(n[len(n)-13:], []byte("authorization")) &&
			(len(n) == 13 || len(n) == 19 && bytes.EqualFold(n[:6], []byte("proxy-"))) {
			return true
		}
	}
	return false
}
