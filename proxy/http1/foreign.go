package http1

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net"
	"strconv"
	"time"

	"github.com/fulcrum-proxy/fulcrum/proxy/netio"
	"github.com/fulcrum-proxy/fulcrum/proxy/netio/epoll"
)

// Requests that another engine (HTTP/2 clients, proxy/http2) sends to an
// HTTP/1.1 server, through the same per-server pools as this engine's own
// requests: an Exchange is one request and its response on one server
// connection. The other engine writes the head from its own view of the
// request, streams the body, reads the response head and streams back the
// decoded body; the connection goes back to its own server's pool only
// when the response was read whole and nothing stands beyond it.

// Exchange is one request on a connection to an HTTP/1.1 server.
type Exchange struct {
	uc     *upConn
	resp   head
	reused bool
	// ahead: Park's wait reads the response ahead (epoll.Conn.AwaitRead).
	ahead bool
	body  io.Reader        // the decoded response body, set by Body
	lr    io.LimitedReader // body's reader for a Content-Length
	ck    *chunkReader
	whole bool // the response body was read to its end
	// timeout is the backend's timeout_server, re-armed before each read
	// and write.
	timeout time.Duration
	// clk is the time SetClock gave, zero for the clock's.
	clk time.Time
	// The body sent beside the response's wait (StartBody): its
	// goroutine's state, its source, and whether it runs.
	up        *upload
	bodySrc   io.Reader
	uploading bool
	noPool    bool // the body's end failed: the connection is not pooled
	// pre: TryWhole read a head (or met preErr), which ReadHead takes
	// instead of reading.
	pre    bool
	preErr error
	// Interim, when set, is given each interim head but 100 (103 Early
	// Hints...): its status and its end-to-end fields (Fields: valid
	// during the call only).
	Interim func(status int, fields func(fn func(name, value []byte)))
}

// ReuseConn returns an exchange on an idle connection to up that a request
// may use under the backend's http_reuse (first: the request is the first
// of its client connection), or nil when there is none. A connection kept
// private to a client (http_reuse never) is not pooled: under never,
// ReuseConn returns nil and every request dials. key is the request's
// Stream.ConnKey: only a connection made with the same key serves it.
func ReuseConn(up *Upstream, first bool, key string) *Exchange {
	var uc *upConn
	switch up.Reuse {
	case ReuseNever:
	case ReuseSafe:
		if !first {
			uc = up.Pool.get(false, key)
		}
	case ReuseAggressive:
		uc = up.Pool.get(first, key)
	default:
		uc = up.Pool.get(false, key)
	}
	if uc == nil {
		return nil
	}
	return uc.exchange(true, up.TimeoutServer)
}

// ReuseByALPN is ReuseConn for a server speaking HTTP/2 whose connections
// are HTTP/1.1 when their ALPN chose it (Upstream.ByALPN): an idle one of
// those, when a request finds no HTTP/2 connection with a free stream;
// nil for other servers.
func ReuseByALPN(up *Upstream, first bool, key string) *Exchange {
	if !up.ByALPN {
		return nil
	}
	return ReuseConn(up, first, key)
}

// NewExchange wraps c, newly connected to up's server (the core's
// Connect) for requests with key (Stream.ConnKey).
func NewExchange(c net.Conn, up *Upstream, key string) *Exchange {
	return newUpConn(c, up, key).exchange(false, up.TimeoutServer)
}

// exchange returns the connection's Exchange, made ready for a request:
// one per connection, reused with its head's buffers, so that an
// exchange allocates nothing of its own. The previous exchange on uc
// ended with Finish (which gave uc back to the pool) or Close: its holder
// no longer uses it, nor the slices of its response head.
func (uc *upConn) exchange(reused bool, timeout time.Duration) *Exchange {
	e := &uc.ex
	*e = Exchange{uc: uc, reused: reused, timeout: timeout, resp: e.resp.reset(), up: e.up}
	return e
}

// Conn returns the server connection (for the core's Connected).
func (e *Exchange) Conn() net.Conn { return e.uc.c }

// Reused reports whether the connection came from the pool.
func (e *Exchange) Reused() bool { return e.reused }

// WriteHead buffers the request head: the request line (HTTP/1.1), the
// fields fields writes (each "name: value\r\n", end-to-end fields only),
// then the framing: Content-Length when bodyLen >= 0 and a body is sent
// (or the method has a body by nature), chunked when bodyLen < 0.
func (e *Exchange) WriteHead(method, uri []byte, fields func(w *bufio.Writer), bodyLen int64) {
	w := e.uc.bw
	w.Write(method)
	w.WriteByte(' ')
	w.Write(uri)
	w.WriteString(" HTTP/1.1\r\n")
	fields(w)
	switch {
	case bodyLen < 0:
		w.WriteString("transfer-encoding: chunked\r\n")
	case bodyLen > 0 || string(method) == "POST" || string(method) == "PUT":
		w.WriteString("content-length: ")
		w.WriteString(strconv.FormatInt(bodyLen, 10))
		w.WriteString("\r\n")
	}
	w.WriteString("\r\n")
}

// ErrClientBody wraps a failure reading the request body from the client
// (SendBody): the server side is not to blame.
var ErrClientBody = errors.New("client body")

type clientBodyErr struct{ err error }

func (e clientBodyErr) Error() string   { return "client body: " + e.err.Error() }
func (e clientBodyErr) Unwrap() []error { return []error{ErrClientBody, e.err} }

// SendBody streams the request body from r to the server, chunked when
// chunked (the last chunk included), and flushes the head and body. It
// returns the body bytes read from r. An error reading r wraps
// ErrClientBody; others are the server's.
func (e *Exchange) SendBody(r io.Reader, chunked bool, buf []byte) (int64, error) {
	return e.sendBody(r, chunked, buf, e.Flush, nil)
}

// sendBody is SendBody, flushing with flush; read (if not nil) runs once
// r was read to its end, before the last flush.
func (e *Exchange) sendBody(r io.Reader, chunked bool, buf []byte, flush func() error, read func()) (int64, error) {
	w := e.uc.bw
	var n int64
	for r != nil {
		m, rerr := r.Read(buf)
		if m > 0 {
			n += int64(m)
			if chunked {
				w.WriteString(strconv.FormatInt(int64(m), 16))
				w.WriteString("\r\n")
			}
			w.Write(buf[:m])
			if chunked {
				w.WriteString("\r\n")
			}
			if err := flush(); err != nil {
				return n, err
			}
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			return n, clientBodyErr{rerr}
		}
	}
	if chunked {
		w.WriteString("0\r\n\r\n")
	}
	if read != nil {
		read()
	}
	return n, flush()
}

// StartBody sends the request body from r as SendBody does, from a
// goroutine of its own, and returns at once: the server may answer
// before the body's end (a 413 from an upload limit), and HAProxy
// forwards both directions at once. AwaitHead then waits for the
// response; a body still going out when the exchange ends is cut by
// EndBody (r is closed when it is an io.Closer). Until EndBody the
// goroutine owns the connection's writer.
func (e *Exchange) StartBody(r io.Reader, chunked bool) {
	if e.up == nil {
		e.up = &upload{}
	}
	u := e.up
	u.begin(e.uc.bw, e.uc.c, &e.uc.dl, e.timeout)
	e.bodySrc, e.uploading = r, true
	go func() {
		buf := netio.GetBuf()
		n, err := e.sendBody(r, chunked, buf, u.flush, func() { u.read.Store(true) })
		netio.PutBuf(buf)
		u.report(n, err, errors.Is(err, ErrClientBody))
	}()
}

// ErrServerBody wraps a failure writing the request body to the server
// while no response had come (AwaitHead): the server went away.
var ErrServerBody = errors.New("server gone during the body")

type serverBodyErr struct{ err error }

func (e serverBodyErr) Error() string   { return "server body: " + e.err.Error() }
func (e serverBodyErr) Unwrap() []error { return []error{ErrServerBody, e.err} }

// AwaitHead waits, after StartBody, for the response's first byte while
// the body goes out: timeout_server runs from the last write to the
// server. It returns the body bytes sent when the body ended, and nil
// when the response starts (the body may still go: Uploading), else the
// error to end with, the body joined: a client-side failure of the body
// (ErrClientBody), the server gone while the body went out
// (ErrServerBody), a timeout, or the server gone after the whole body.
// A body that ended with the server's error once the response started
// leaves the connection unpoolable (Finish closes it).
func (e *Exchange) AwaitHead() (int64, error) {
	u := e.up
	err := u.await(e.uc, nil)
	switch {
	case err == nil:
		if !u.ended() {
			return 0, nil
		}
		n, berr := e.EndBody(false)
		e.noPool = berr != nil // the server stopped reading: not pooled
		return n, nil
	case errors.Is(err, errUploadFailed):
		return e.EndBody(false)
	}
	ended := u.ended()
	n, berr := e.EndBody(!ended)
	switch {
	case netio.IsTimeout(err):
		return n, err
	case ended && berr != nil && !errors.Is(berr, ErrClientBody):
		return n, serverBodyErr{berr}
	case ended && berr != nil:
		return n, berr
	case !ended:
		return n, serverBodyErr{err}
	}
	return n, err
}

// Uploading reports whether StartBody's body is still going out.
func (e *Exchange) Uploading() bool { return e.uploading }

// BodyRead reports whether StartBody's body was read whole from its
// source (only its last write to the server may be left).
func (e *Exchange) BodyRead() bool { return e.uploading && e.up.read.Load() }

// EndBody joins StartBody's goroutine and returns the body bytes it sent
// and how it failed. cut ends a body still going out first: its source is
// closed and the server writes fail at once.
func (e *Exchange) EndBody(cut bool) (int64, error) {
	if !e.uploading {
		return 0, nil
	}
	if cut {
		if c, ok := e.bodySrc.(io.Closer); ok {
			c.Close()
		}
	}
	n, err := e.up.join(cut)
	e.uploading, e.bodySrc = false, nil
	return n, err
}

// SetClock makes t the time the exchange's next deadlines start from
// (Flush, the first read of ReadHead) and Finish stamps the connection's
// return to the pool with, until SetClock(time.Time{}): the other engine
// read the clock for its own phases and nothing blocked since. ReadHead
// clears it once its first read is armed: the read may wait.
func (e *Exchange) SetClock(t time.Time) { e.clk = t }

// now returns the time SetClock gave, else the clock's.
func (e *Exchange) now() time.Time {
	if e.clk.IsZero() {
		return time.Now()
	}
	return e.clk
}

// Flush sends what is buffered to the server within timeout_server.
func (e *Exchange) Flush() error {
	e.uc.dl.ArmWrite(e.uc.c, e.now(), e.timeout)
	return e.uc.bw.Flush()
}

// ReadHead reads the server's final response head; interim 1xx responses
// (100 Continue too: the caller counts it and decides what to relay) go
// to Interim, or are skipped. Errors: a timeout
// (timeout_server), a malformed head (ErrBadResponse), or the server gone.
func (e *Exchange) ReadHead() error {
	for {
		if e.pre {
			// TryWhole's head: read and parsed, or its error.
			e.pre = false
			if !e.clk.IsZero() {
				e.clk = time.Time{}
			}
			if e.preErr != nil {
				return classify(e.preErr)
			}
		} else {
			e.uc.dl.ArmRead(e.uc.c, e.now(), e.timeout)
			if !e.clk.IsZero() {
				e.clk = time.Time{}
			}
			if err := e.resp.readHead(e.uc.br, true); err != nil {
				return classify(err)
			}
			if err := e.resp.parse(true); err != nil {
				return classify(err)
			}
		}
		if e.resp.status >= 200 {
			return nil
		}
		if e.resp.status == 101 {
			return ErrBadResponse // nobody asked for a switch
		}
		if e.Interim != nil {
			e.Interim(e.resp.status, e.Fields)
		}
	}
}

// ErrBadResponse is a response head that is malformed, too large, has
// conflicting framing or too many fields.
var ErrBadResponse = errors.New("bad response head")

func classify(err error) error {
	if errors.Is(err, errBadHead) || errors.Is(err, errHeadTooLarge) || errors.Is(err, errSmuggling) || errors.Is(err, errTooManyHdrs) {
		return ErrBadResponse
	}
	return err
}

// Status returns the response's status.
func (e *Exchange) Status() int { return e.resp.status }

// HeadBytes returns the size of the response head as received.
func (e *Exchange) HeadBytes() int { return len(e.resp.buf) }

// Fields calls fn for each end-to-end field of the response head (the
// hop-by-hop ones and Transfer-Encoding are left out). The slices are
// valid until Finish.
func (e *Exchange) Fields(fn func(name, value []byte)) {
	for i := range e.resp.headers {
		h := &e.resp.headers[i]
		if h.isHopByHop(false) || bytes.EqualFold(h.name, hdrTransferEncoding) {
			continue
		}
		fn(h.name, h.value)
	}
}

// Body returns the decoded response body (nil for none: a HEAD request,
// 204, 304). Each read re-arms timeout_server.
func (e *Exchange) Body(isHead bool) io.Reader {
	st := e.resp.status
	switch {
	case isHead || st == 204 || st == 304:
		e.whole = true
		return nil
	case e.resp.chunked:
		e.ck = &chunkReader{br: e.uc.br, maxHdr: e.resp.maxHdr}
		e.body = e.ck
	case e.resp.contentLength >= 0:
		e.lr = io.LimitedReader{R: e.uc.br, N: e.resp.contentLength}
		e.body = &e.lr
	default:
		e.body = e.uc.br // until the server closes
	}
	return e
}

// Read reads the decoded body (see Body).
func (e *Exchange) Read(p []byte) (int, error) {
	if e.ck != nil || !e.Ready() {
		// A read that may wait for the server. One that bufio answers
		// from its buffer, or the end of a body read whole, makes no
		// system call and needs no deadline: no clock read. (A chunked
		// body's line may be partly buffered: its reads are armed.)
		e.uc.dl.ArmRead(e.uc.c, time.Now(), e.timeout)
	}
	n, err := e.body.Read(p)
	if err == io.EOF {
		if e.resp.contentLength >= 0 && !e.resp.chunked {
			if lr, ok := e.body.(*io.LimitedReader); ok && lr.N > 0 {
				return n, io.ErrUnexpectedEOF // the server closed early
			}
		}
		e.whole = true
	}
	return n, err
}

// Ready reports whether the next Read of the body returns at once: bytes
// are buffered, or the body is read whole (a fixed length reached). A
// relay flushes what it sent only when it is not: a small response leaves
// in one write, with its end.
func (e *Exchange) Ready() bool {
	if e.whole || e.uc.br.Buffered() > 0 {
		return true
	}
	if lr, ok := e.body.(*io.LimitedReader); ok && lr.N == 0 {
		return true
	}
	return false
}

// Trailers returns the trailer fields of a chunked response read whole,
// as "name: value" lines.
func (e *Exchange) Trailers() [][]byte {
	if e.ck == nil {
		return nil
	}
	return e.ck.trailers
}

// Finish ends the exchange: the connection goes back to its server's
// pool when the response was read whole, the server may keep it open and
// nothing is buffered beyond the response; else it is closed.
func (e *Exchange) Finish() {
	uc := e.uc
	if uc == nil {
		return
	}
	e.uc = nil
	keep := e.whole && !e.noPool && !e.resp.connClose && (e.resp.chunked || e.resp.contentLength >= 0 || e.body == nil)
	if keep && uc.br.Buffered() == 0 && uc.up.Reuse != ReuseNever {
		uc.uses++
		uc.release(e.now())
		return
	}
	uc.close()
}

// Close closes the connection without pooling it.
func (e *Exchange) Close() {
	if e.uc != nil {
		e.uc.close()
		e.uc = nil
	}
}

// chunkReader decodes a chunked body (strictly, as this engine reads
// them) and keeps its trailer fields.
type chunkReader struct {
	br       *bufio.Reader
	left     int64 // bytes left in the current chunk; -1 after the last
	started  bool
	maxHdr   int
	trailers [][]byte
}

func (c *chunkReader) Read(p []byte) (int, error) {
	if c.left < 0 {
		return 0, io.EOF
	}
	if c.left == 0 {
		if c.started {
			crlf, err := c.br.Peek(2)
			if err != nil {
				return 0, noEOF(err)
			}
			if crlf[0] != '\r' || crlf[1] != '\n' {
				return 0, errBadChunk
			}
			c.br.Discard(2)
		}
		c.started = true
		line, err := readChunkLine(c.br)
		if err != nil {
			return 0, err
		}
		size, ok := parseChunkSize(line)
		if !ok {
			return 0, errBadChunk
		}
		if size == 0 {
			c.left = -1
			return 0, c.readTrailers()
		}
		c.left = size
	}
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	n, err := c.br.Read(p)
	c.left -= int64(n)
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return n, err
}

// readTrailers reads the trailer section up to its empty line.
func (c *chunkReader) readTrailers() error {
	maxHdr := c.maxHdr
	if maxHdr <= 0 {
		maxHdr = defaultMaxHdr
	}
	size := 0
	for lines := 0; ; lines++ {
		tl, err := readChunkLine(c.br)
		if err != nil {
			return err
		}
		if len(tl) == 0 {
			return io.EOF
		}
		size += len(tl)
		if lines+1 >= maxHdr || size > maxHeaderBytes || !validField(tl) {
			return errBadChunk
		}
		c.trailers = append(c.trailers, append([]byte(nil), tl...))
	}
}

// IsBadChunk reports whether err is a broken chunked framing.
func IsBadChunk(err error) bool { return errors.Is(err, errBadChunk) }

// Parkable reports whether the exchange's request, once sent, may wait
// for its response with no goroutine (Park): its connection is a
// plaintext one of the epoll layer and nothing of a response is buffered.
func (e *Exchange) Parkable() bool {
	uc := e.uc
	return uc.src.c != nil && uc.sink.c != nil && uc.br.Buffered() == 0
}

// TrySend sends the buffered request head without blocking (a Parkable
// exchange, from a caller that must not block: HTTP/2's connection
// reader). What the socket does not take now is kept, and pending says
// so: FlushPending then writes it (blocking) before the response is read.
// The write deadline is armed as Flush's.
func (e *Exchange) TrySend() (pending bool, err error) {
	uc := e.uc
	uc.dl.ArmWrite(uc.c, e.now(), e.timeout)
	uc.sink.nb = true
	err = uc.bw.Flush()
	uc.sink.nb = false
	return len(uc.sink.pending) > 0, err
}

// QueueSend is TrySend for a batch of sends (epoll.SendBatch: several
// connections' writes in one system call): the buffered request head is
// queued on b instead of written, and ok is false when the exchange's
// connection is not one of the epoll layer (TrySend then). After
// b.Flush, SendDone takes the write's result. The write deadline is
// armed as TrySend's; nothing else may use e in between.
func (e *Exchange) QueueSend(b *epoll.SendBatch) (i int, ok bool) {
	uc := e.uc
	c, ok := uc.sink.c.(*epoll.Conn)
	if !ok {
		return 0, false
	}
	uc.dl.ArmWrite(uc.c, e.now(), e.timeout)
	uc.sink.hold = true
	err := uc.bw.Flush() // into pending: fails only with an earlier write's error
	uc.sink.hold = false
	if err != nil {
		// A head longer than the buffer was partly written through, and
		// that write failed: TrySend reports it.
		return 0, false
	}
	return b.Add(c, uc.sink.pending), true
}

// SendDone takes the result of the write QueueSend queued (SendBatch's
// Result): pending and err as TrySend's.
func (e *Exchange) SendDone(n int, err error) (pending bool, _ error) {
	s := &e.uc.sink
	switch err {
	case nil:
		s.pending = s.pending[:0]
		return false, nil
	case epoll.ErrWouldBlock:
		s.pending = s.pending[:copy(s.pending, s.pending[n:])]
		return len(s.pending) > 0, nil
	}
	s.pending = s.pending[:0]
	return false, err
}

// FlushPending writes what TrySend kept, blocking, under the write
// deadline TrySend armed.
func (e *Exchange) FlushPending() error { return e.uc.sink.flush() }

// Park makes a sent exchange's connection wait for its response with no
// goroutine: the read deadline is armed as ReadHead's first read arms it
// (timeout_server from SetClock's time), and w.Wake is called once (maybe
// before Park returns) when a read would not block: bytes, the end of the
// stream, the deadline, or the connection closed (epoll.Conn.Await).
// The caller must not use e after Park until Wake runs, and must then
// call SetClock with the park's time before ReadHead, so that the
// deadline stays the same.
//
// With ahead, the response's first bytes are read by the epoll layer's
// reaper as it wakes the exchange, with those of the other connections
// its batch of events wakes, in one system call (epoll.Conn.AwaitRead);
// the exchange's reads take them as if they came from the socket.
func (e *Exchange) Park(w epoll.Waker, ahead bool) {
	uc := e.uc
	uc.dl.ArmRead(uc.c, e.now(), e.timeout)
	e.ahead = ahead
	e.Await(w)
}

// Readable reports whether a read of a parked exchange's connection would
// not wait (a Wake may come late, for a wait already over: Await again).
func (e *Exchange) Readable() bool { return e.uc.src.c.Readable() }

// TryWhole reads what the server of a parked exchange sent, without
// blocking (the epoll layer's reaper calls it once Readable), and reports
// whether the final response is whole in the buffer: a head of status 200
// or more (not 101) and its body, Content-Length bytes or none (isHead,
// 204, 304); n is then the body's length (0 for none). A head it finds whole is read and parsed, and ReadHead
// takes it without reading (an interim head too, which ReadHead then
// hands on as it would); a read or parse error is kept for ReadHead.
// After TryWhole the exchange is read by ReadHead, as after Park.
func (e *Exchange) TryWhole(isHead bool) (n int64, whole bool) {
	uc := e.uc
	if e.pre || uc.src.c == nil {
		return 0, false
	}
	uc.src.nb = true
	p, err := uc.br.Peek(uc.br.Size())
	uc.src.nb = false
	switch err {
	case nil, bufio.ErrBufferFull, epoll.ErrWouldBlock:
	default:
		uc.src.err = err // ReadHead's read meets it
		return 0, false
	}
	if headEnd(p) < 0 {
		return 0, false // ReadHead waits for the rest, or refuses a head too large
	}
	e.pre = true
	if err := e.resp.readHead(uc.br, true); err != nil {
		e.preErr = err
		return 0, false
	}
	if err := e.resp.parse(true); err != nil {
		e.preErr = err
		return 0, false
	}
	r := &e.resp
	if r.status < 200 || r.status == 101 {
		return 0, false
	}
	if isHead || r.status == 204 || r.status == 304 {
		return 0, true
	}
	if r.chunked || r.contentLength < 0 || int64(uc.br.Buffered()) < r.contentLength {
		return 0, false
	}
	return r.contentLength, true
}

// Await waits again, as Park, with the deadline Park armed.
func (e *Exchange) Await(w epoll.Waker) {
	if c, ok := e.uc.src.c.(*epoll.Conn); ok && e.ahead {
		c.AwaitRead(w)
		return
	}
	e.uc.src.c.Await(w)
}
