package http2

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/net/http/httpguts"
	xh2 "golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/fulcrum-proxy/fulcrum/proxy/h2mux"
	"github.com/fulcrum-proxy/fulcrum/proxy/http1"
	"github.com/fulcrum-proxy/fulcrum/proxy/netio"
	"github.com/fulcrum-proxy/fulcrum/proxy/netio/epoll"
	"github.com/fulcrum-proxy/fulcrum/proxy/stream"
)

// The own engine: the server side of an HTTP/2 client connection as one
// goroutine that reads the frames (x/net/http2's Framer; header blocks
// decoded by the reader with x/net's hpack decoder, hblock.go) and acts on
// each at once, and one goroutine per running stream, a worker of the
// connection kept for its next streams (workers.go), running the stream's
// phases (stream.go), which writes its own frames. The stream is its
// request's context (streamctx.go). Written from RFC 9113 (HTTP/2) and
// RFC 7541 (HPACK).
//
// Writing: every frame goes into one buffered writer under the write lock
// (wmu), HPACK encoder included. A writer that wants its frames to leave
// (the end of a response, a Flush) sets flushWanted; the last writer out
// of the lock (pending counts those inside or waiting for it) flushes, so
// that responses of several streams ready at once leave in one write. The
// reader writes its own frames (SETTINGS and PING acknowledgements,
// WINDOW_UPDATE) without flushing and flushes before it would block on
// the connection.
//
// Flow control: the send windows (the connection's and each stream's) are
// under mu, with cond to wait for WINDOW_UPDATE; a writer takes its credit
// under mu and writes under wmu, never holding both. The receive windows
// are given back with WINDOW_UPDATE as the stream reads its body: half a
// window at a time.
//
// Write timeout: a client that stops reading while its streams have data
// to send is cut after timeout_client without progress, as HAProxy
// applies timeout client to a connection whose output is blocked. Each
// write to the socket re-arms the write deadline (timedWriter), so a write
// that stays blocked fails; a writer waiting for send credit that no
// WINDOW_UPDATE brings is watched by one timer per connection (stall),
// which wakes the reader to end the connection with GOAWAY(NO_ERROR). The
// streams it ends with a response under way are client timeouts (cD).
//
// Lock order: mu, then a stream's bmu or cmu; wmu is never taken with mu
// held.

const (
	// streamWindow and connWindow are the receive windows announced
	// (x/net/http2's Server defaults: 1 MiB each).
	streamWindow = 1 << 20
	connWindow   = 1 << 20
	// maxFrameSize is SETTINGS_MAX_FRAME_SIZE announced (HAProxy's
	// tune.h2.max-frame-size default).
	maxFrameSize = 16 << 10
	// maxHeaderList is SETTINGS_MAX_HEADER_LIST_SIZE announced; a larger
	// list is refused as it decodes (COMPRESSION_ERROR, hblock.go).
	maxHeaderList = 64 << 10
	// writeBufSize is the connection's write buffer.
	writeBufSize = 8 << 10
	// lingerTime is how long a connection that sent its GOAWAY (and no
	// longer writes) is read and drained before it is closed, so that the
	// peer reads the GOAWAY instead of a reset.
	lingerTime = time.Second
	// maxWindow is the largest flow-control window (RFC 9113 6.9.1).
	maxWindow = 1<<31 - 1
)

var (
	errStreamGone  = errors.New("http2: stream closed")
	errClientReset = errors.New("http2: stream reset by the client")
	errBodyClosed  = errors.New("http2: request body closed")
	errConnGone    = errors.New("http2: client connection closed")
	errBadLength   = errors.New("http2: request body length differs from content-length")
)

// writeTimeout is what the streams of a connection cut by its write
// timeout see: a net.Error whose Timeout is true.
type writeTimeout struct{}

func (writeTimeout) Error() string   { return "http2: client write timeout" }
func (writeTimeout) Timeout() bool   { return true }
func (writeTimeout) Temporary() bool { return false }

var errWriteTimeout error = writeTimeout{}

// connError is a connection error found by the reader: GOAWAY with code.
type connError xh2.ErrCode

func (e connError) Error() string { return "http2: connection error " + xh2.ErrCode(e).String() }

// econn is one client connection served by the own engine.
type econn struct {
	connBase
	srv *Server
	raw net.Conn
	br  *bufio.Reader // under the guard: raw's bytes
	rfr *xh2.Framer   // reads, through the guard
	blk *hblock       // the header block being read
	adv int           // SETTINGS_MAX_CONCURRENT_STREAMS announced
	wto time.Duration // the write timeout (timeout_client; 0: none)

	// The write side, under wmu.
	wmu         sync.Mutex
	pending     atomic.Int32 // writers inside wmu or waiting for it
	running     atomic.Int32 // streams whose goroutine runs
	bw          *bufio.Writer
	wfr         *xh2.Framer
	enc         *hpack.Encoder
	hbuf        bytes.Buffer
	hcache      *headCache // encodings of direct heads' fields (headcache.go)
	hgen        uint32     // bumped at each change of enc's dynamic table
	wMaxFrame   int        // the peer's SETTINGS_MAX_FRAME_SIZE
	flushWanted bool
	goawaySent  bool
	werr        error
	wdl         netio.Deadlines // the write deadline armed (timedWriter)
	// lingering: the connection ends, its write deadline is fixed.
	lingering atomic.Bool

	// The connection's state, under mu.
	mu         sync.Mutex
	cond       sync.Cond // send windows, resets, the end of the connection
	streams    map[uint32]*estream
	maxID      uint32 // highest stream opened by the client
	sendWin    int64  // connection send window
	initWin    int64  // the peer's SETTINGS_INITIAL_WINDOW_SIZE
	maxFrame   int    // the peer's SETTINGS_MAX_FRAME_SIZE
	recvWin    int64  // connection receive window left
	recvCredit int64  // bytes consumed not yet given back
	goingAway  bool   // a graceful GOAWAY was decided
	closed     bool   // the connection is ending: streams see a client gone
	armed      bool   // a read deadline is set (idle, or the reader woken)
	// The stall of the writers waiting for send credit: how many wait,
	// since when no credit came, and the timer that checks them.
	waiters    int
	stallFrom  time.Time
	stallTimer *time.Timer
	stallArmed bool

	idleW      []*streamWorker // workers waiting for a stream (workers.go), longest first
	workerIdle time.Duration   // how long they wait
	idleTimer  *time.Timer     // ends those that waited workerIdle (expireWorkers)
	idleArmed  bool            // idleTimer runs
	// batching: a worker runs the woken streams whose responses are
	// whole (inline.go, parkWaker.Wake), and batchQ those woken while it
	// runs, in order.
	batching bool
	batchQ   []*estream
	// The requests the reader begun and queued for one batch of sends
	// (inline.go, flushSends): the reader's alone.
	sends epoll.SendBatch
	sendq []*estream

	wg sync.WaitGroup // the streams' workers
}

// estream is one stream of an econn.
type estream struct {
	c   *econn
	id  uint32
	req *http.Request // &hreq
	rw  respWriter
	st  *h2stream // the stream's phases, its fields filled
	// The request's context (streamctx.go): cancel ends it on a reset,
	// the connection's end or the stream's end.
	cmu  sync.Mutex
	cs   ctxState
	hreq http.Request
	cut  cutter // the server connection's cut (streamCut)
	pw   parkWaker
	// woken: a parked stream handed to a worker (parkWaker.Wake), counted
	// in c.running from then.
	woken bool
	// byReader: the stream is run by the connection's reader itself (a
	// rule's answer, inline.go): its writes leave their flush to the
	// reader's next wait, so that the answers of one read go out in one
	// write.
	byReader bool
	// batched: a woken stream whose response is whole, run by the
	// connection's batching worker: its frames leave with the batch's
	// last (the worker flushes once its queue is empty).
	batched bool

	// Under c.mu.
	sendWin    int64
	recvWin    int64
	recvCredit int64
	remoteDone bool // END_STREAM received
	reset      bool // reset by either side, or the connection ended
	gone       bool // out of c.streams
	declLen    int64
	rcvd       int64
	// expect: the client asked for 100-continue, sent at the first read
	// of the body (the stream's goroutine only).
	expect bool

	// The request body, under bmu.
	bmu   sync.Mutex
	bcond sync.Cond
	buf   []byte
	boff  int
	berr  error // io.EOF once the body ended and was read
}

// serveOwn serves a client connection with the own engine until it ends.
func serveOwn(cl Client, srv *Server, raw net.Conn, br *bufio.Reader, g *h2mux.Guard) {
	adv := srv.maxStreams
	if adv <= 0 {
		adv = math.MaxInt32
	}
	c := &econn{
		connBase:  connBase{cl: cl, g: g, xff: xffOf(cl)},
		srv:       srv,
		raw:       raw,
		br:        br,
		adv:       adv,
		wto:       srv.idle,
		wMaxFrame: 16384,
		streams:   map[uint32]*estream{},
		sendWin:   65535,
		initWin:   65535,
		maxFrame:  16384,
		recvWin:   connWindow,
	}
	c.cond.L = &c.mu
	c.bw = bufio.NewWriterSize(timedWriter{c}, writeBufSize)
	c.wfr = xh2.NewFramer(c.bw, nil)
	c.enc = hpack.NewEncoder(hpackSink{c})
	c.rfr = xh2.NewFramer(nil, frameReader{c})
	c.rfr.SetMaxReadFrameSize(maxFrameSize)
	c.rfr.SetReuseFrames() // DATA is copied into the stream's body at once
	// Header blocks are decoded by the reader (hblock.go), which also
	// refuses HPACK bombs (the guard does not decode them: Serve).
	c.blk = newHblock(&cl.Counters().HeaderFlood)

	srv.mu.Lock()
	if srv.conns == nil {
		srv.conns = map[*econn]struct{}{}
	}
	srv.conns[c] = struct{}{}
	stopped := srv.stopped
	c.workerIdle = srv.workerIdle
	srv.mu.Unlock()

	err := c.serve(stopped || cl.Stopping())
	c.end(err)

	srv.mu.Lock()
	delete(srv.conns, c)
	srv.mu.Unlock()
	c.wg.Wait()
	g.Close()
	c.own.Close(true)
}

// frameReader is the Framer's reader: the guard, flushing what the
// connection wrote before a read that would wait for the client.
type frameReader struct{ c *econn }

func (r frameReader) Read(p []byte) (int, error) {
	// A writer holding the lock flushes what is wanted as it leaves: the
	// reader does not wait for it (it may be blocked on a client that
	// does not read).
	c := r.c
	if c.br.Buffered() == 0 {
		// The requests this read began go to their servers first.
		c.flushSends()
		if c.wmu.TryLock() {
			c.pending.Add(1)
			c.unlockW(flushIfWanted)
		}
	}
	return r.c.g.Read(p)
}

// timedWriter is the connection as its buffered writer writes to it:
// every write re-arms the write timeout (netio.Deadlines: a timer update
// once an eighth of it went by), so a write fails once the client read
// nothing for about wto.
type timedWriter struct{ c *econn }

func (w timedWriter) Write(p []byte) (int, error) {
	c := w.c
	if c.wto > 0 && !c.lingering.Load() {
		c.wdl.ArmWrite(c.raw, time.Now(), c.wto)
	}
	n, err := c.g.Write(p)
	if err != nil && netio.IsTimeout(err) && !c.lingering.Load() {
		c.wtimeout.Store(true)
	}
	return n, err
}

// stallWait counts a writer about to wait for send credit (mu held) and
// arms the stall timer.
func (c *econn) stallWait() {
	if c.wto <= 0 {
		return
	}
	c.waiters++
	if c.waiters == 1 {
		c.stallFrom = time.Now()
	}
	if !c.stallArmed {
		c.stallArmed = true
		if c.stallTimer == nil {
			c.stallTimer = time.AfterFunc(c.wto, c.stallCheck)
		} else {
			c.stallTimer.Reset(c.wto)
		}
	}
}

// stallDone uncounts a writer that waited for send credit (mu held).
func (c *econn) stallDone() {
	if c.wto > 0 {
		c.waiters--
	}
}

// stallCheck is the stall timer: writers waiting for credit that none
// came for wto end the connection (the reader, woken, ends it).
func (c *econn) stallCheck() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed || c.waiters == 0 {
		c.stallArmed = false
		return
	}
	if left := c.wto - time.Since(c.stallFrom); left > 0 {
		c.stallTimer.Reset(left)
		return
	}
	c.stallArmed = false
	c.wtimeout.Store(true)
	c.raw.SetReadDeadline(time.Now())
	c.armed = true
}

// serve reads the preface and then frames until the connection ends; it
// returns why it ended (nil: a graceful end).
func (c *econn) serve(stopping bool) error {
	var pre [len(xh2.ClientPreface)]byte
	// Under mu, as every change of armed: a stop's goAway may already
	// have woken the reader (its deadline is then left as it set it).
	c.mu.Lock()
	if c.srv.idle > 0 && !c.goingAway {
		c.raw.SetReadDeadline(time.Now().Add(c.srv.idle))
		c.armed = true
	}
	c.mu.Unlock()
	if _, err := io.ReadFull(c.g, pre[:]); err != nil || string(pre[:]) != xh2.ClientPreface {
		return errConnGone
	}
	c.lockW()
	c.wfr.WriteSettings(
		xh2.Setting{ID: xh2.SettingMaxFrameSize, Val: maxFrameSize},
		xh2.Setting{ID: xh2.SettingMaxConcurrentStreams, Val: uint32(c.adv)},
		xh2.Setting{ID: xh2.SettingInitialWindowSize, Val: streamWindow},
		xh2.Setting{ID: xh2.SettingMaxHeaderListSize, Val: maxHeaderList},
	)
	c.wfr.WriteWindowUpdate(0, connWindow-65535)
	c.unlockW(deferFlush)
	if stopping {
		c.goAway()
	}
	// The requests queued for sending when a frame ends the connection
	// are sent all the same: their streams end with it as the others.
	defer c.flushSends()
	first := true
	for {
		f, err := c.rfr.ReadFrame()
		if err != nil {
			var se xh2.StreamError
			if errors.As(err, &se) {
				c.resetByUs(se.StreamID, se.Code)
				continue
			}
			return c.readError(err)
		}
		if first {
			// RFC 9113 3.4: the client's preface ends with SETTINGS.
			if _, ok := f.(*xh2.SettingsFrame); !ok {
				return connError(xh2.ErrCodeProtocol)
			}
			first = false
		}
		if err := c.frame(f); err != nil {
			return err
		}
	}
}

// readError maps a failed frame read to how the connection ends.
func (c *econn) readError(err error) error {
	var ce xh2.ConnectionError
	switch {
	case errors.As(err, &ce):
		return connError(ce)
	case errors.Is(err, xh2.ErrFrameTooLarge):
		return connError(xh2.ErrCodeFrameSize)
	case c.wtimeout.Load():
		return errWriteTimeout
	}
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		c.mu.Lock()
		idle := len(c.streams) == 0
		c.mu.Unlock()
		if idle {
			// No stream left: the idle timeout, or the reader woken
			// after a graceful GOAWAY once its streams were done.
			return nil
		}
	}
	return errConnGone
}

// frame acts on one frame read.
func (c *econn) frame(f xh2.Frame) error {
	switch f := f.(type) {
	case *xh2.HeadersFrame:
		c.blk.start(f)
		return c.block(f.HeaderBlockFragment(), f.HeadersEnded())
	case *xh2.ContinuationFrame:
		// The Framer checked that it follows a HEADERS or CONTINUATION
		// without END_HEADERS; that HEADERS may have been refused (a
		// stream error): its fragments are ignored, as with the Framer's
		// own decoding.
		if c.blk.open && c.blk.id == f.StreamID {
			return c.block(f.HeaderBlockFragment(), f.HeadersEnded())
		}
	case *xh2.DataFrame:
		return c.data(f)
	case *xh2.SettingsFrame:
		return c.settings(f)
	case *xh2.PingFrame:
		if !f.IsAck() {
			c.lockW()
			c.wfr.WritePing(true, f.Data)
			c.unlockW(deferFlush)
		}
	case *xh2.WindowUpdateFrame:
		return c.windowUpdate(f)
	case *xh2.RSTStreamFrame:
		c.mu.Lock()
		if f.StreamID > c.maxID {
			c.mu.Unlock()
			return connError(xh2.ErrCodeProtocol) // an idle stream
		}
		es := c.streams[f.StreamID]
		if es != nil {
			c.drop(es, errClientReset)
		}
		c.mu.Unlock()
	case *xh2.GoAwayFrame:
		c.goAway()
	case *xh2.PushPromiseFrame:
		return connError(xh2.ErrCodeProtocol) // a client never pushes
	}
	// PRIORITY and frames of unknown types are ignored.
	return nil
}

// block decodes the next fragment of a header block, and once it is
// whole opens its stream or ends it with its trailers.
func (c *econn) block(frag []byte, whole bool) error {
	err := c.blk.fragment(frag, whole)
	if err == nil {
		if whole {
			return c.headers(c.blk)
		}
		return nil
	}
	if c.blk.id > c.maxID && c.blk.id%2 == 1 {
		// A request head (not trailers): HAProxy 2.6 logs it.
		c.malformed()
	}
	// errors.As's target escapes: declared only on this path, it is not
	// an allocation per header block.
	var se xh2.StreamError
	if errors.As(err, &se) {
		c.resetByUs(se.StreamID, se.Code)
		return nil
	}
	return err
}

// headers opens a stream, or ends one with its trailers.
func (c *econn) headers(f *hblock) error {
	id := f.id
	if id%2 == 0 {
		return connError(xh2.ErrCodeProtocol)
	}
	c.mu.Lock()
	if es := c.streams[id]; es != nil {
		// Trailers: they end the request (RFC 9113 8.1).
		if es.remoteDone {
			c.mu.Unlock()
			c.resetByUs(id, xh2.ErrCodeStreamClosed)
			return nil
		}
		if !f.end || len(f.pseudo()) > 0 {
			c.mu.Unlock()
			c.resetByUs(id, xh2.ErrCodeProtocol)
			return nil
		}
		es.remoteDone = true
		bad := es.declLen >= 0 && es.rcvd != es.declLen
		es.bmu.Lock()
		if tr := es.req.Trailer; tr != nil {
			for _, hf := range f.regular() {
				k := headerKeyString(hf.Name)
				if _, ok := tr[k]; ok {
					tr[k] = append(tr[k], hf.Value)
				}
			}
		}
		es.bmu.Unlock()
		c.mu.Unlock()
		if bad {
			c.resetByUs(id, xh2.ErrCodeProtocol)
			return nil
		}
		es.endBody(io.EOF)
		return nil
	}
	if id <= c.maxID {
		c.mu.Unlock()
		return connError(xh2.ErrCodeProtocol) // a closed stream
	}
	c.maxID = id
	if c.goingAway || c.closed {
		// After a GOAWAY: the client retries elsewhere (RFC 9113 6.8).
		c.mu.Unlock()
		return nil
	}
	if len(c.streams) >= c.adv {
		c.mu.Unlock()
		// Counted as HAProxy 2.6 counts it (measured): an RST_STREAM
		// sent on error, not a protocol error (the guard counts neither
		// for REFUSED_STREAM, which also refuses a stream its server
		// refused).
		c.cl.Counters().RstStreamResp.Add(1)
		c.writeRST(id, xh2.ErrCodeRefusedStream)
		return nil
	}
	c.mu.Unlock()
	es, code := c.newStream(f)
	if es == nil {
		c.writeRST(id, code)
		c.malformed()
		return nil
	}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		es.cancel()
		putStream(es.st)
		return nil
	}
	// A GOAWAY sent meanwhile named this stream as the last: it is served.
	c.streams[id] = es
	if c.armed && !c.wtimeout.Load() {
		c.raw.SetReadDeadline(time.Time{})
		c.armed = false
	}
	if c.srv.inline != nil && es.remoteDone {
		c.mu.Unlock()
		if c.begin(es) {
			return nil
		}
		c.mu.Lock()
	}
	w := c.takeWorker()
	c.mu.Unlock()
	c.startStream(w, es)
	return nil
}

// malformed logs a request head refused (its block did not decode, or
// newStream refused it), as HAProxy 2.6 logs it: PR--, "<BADREQ>", no
// request counted.
func (c *econn) malformed() {
	x := c.cl.NewStream()
	x.BeginRefused(time.Now())
	x.End(stream.MalformedReset)
	x.Free()
}

// newStream builds the stream of a request head, or returns the code to
// reset it with when the head is malformed (RFC 9113 8.3).
func (c *econn) newStream(f *hblock) (*estream, xh2.ErrCode) {
	if f.truncated {
		return nil, xh2.ErrCodeProtocol
	}
	var method, scheme, path, authority string
	for _, hf := range f.pseudo() {
		switch hf.Name {
		case ":method":
			method = hf.Value
		case ":scheme":
			scheme = hf.Value
		case ":path":
			path = hf.Value
		case ":authority":
			authority = hf.Value
		default:
			return nil, xh2.ErrCodeProtocol // :status, :protocol
		}
	}
	if method == "" {
		return nil, xh2.ErrCodeProtocol
	}
	if method == http.MethodConnect {
		if scheme != "" || path != "" || authority == "" {
			return nil, xh2.ErrCodeProtocol
		}
		path = authority
	} else if scheme == "" || path == "" || !http1.ValidH2Target(method, path) {
		return nil, xh2.ErrCodeProtocol
	}
	es := &estream{c: c, id: f.id, declLen: -1}
	st := getStream()
	es.st = st
	st.badMethod = !http1.ValidMethod(method)
	fail := func() (*estream, xh2.ErrCode) {
		putStream(st)
		return nil, xh2.ErrCodeProtocol
	}
	regular := f.regular()
	st.fields = append(st.fields, field{})
	size := len(method) + len(path) + 12
	cookies := 0
	var trailer http.Header
	for _, hf := range regular {
		switch hf.Name {
		case "connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade":
			return fail()
		case "te":
			if hf.Value != "trailers" {
				return fail()
			}
		case "host":
			if authority == "" {
				authority = hf.Value
			}
			continue
		case "cookie":
			cookies++
		case "expect":
			es.expect = strings.EqualFold(hf.Value, "100-continue")
		case "content-length":
			if n, err := strconv.ParseUint(hf.Value, 10, 63); err == nil && es.declLen < 0 {
				es.declLen = int64(n)
			} else if err != nil || int64(n) != es.declLen {
				return fail()
			}
		case "trailer":
			if trailer == nil {
				trailer = http.Header{}
			}
			for _, k := range strings.Split(hf.Value, ",") {
				if k = strings.TrimSpace(k); k != "" {
					trailer[headerKeyString(k)] = nil
				}
			}
		}
		st.fields = append(st.fields, field{sbytes(hf.Name), sbytes(hf.Value)})
		size += len(hf.Name) + len(hf.Value) + 4
	}
	if cookies > 1 {
		// RFC 9113 8.2.3: the crumbs are one field for HTTP/1.1.
		st.fields = joinCookies(st.fields)
	}
	st.fields[0] = field{hostName, sbytes(authority)}
	st.headSize = size
	r := &http.Request{
		Method:     method,
		RequestURI: path,
		Proto:      "HTTP/2.0",
		ProtoMajor: 2,
		Host:       authority,
		Body:       http.NoBody,
		Trailer:    trailer,
	}
	if f.end {
		es.remoteDone = true
		if es.declLen > 0 {
			return fail()
		}
	} else {
		r.ContentLength = es.declLen
		r.Body = (*requestBody)(es)
	}
	// WithContext inlined: its copy does not escape, and the request
	// is part of the stream.
	es.hreq = *r.WithContext(es.ctx())
	es.req = &es.hreq
	es.bcond.L = &es.bmu
	c.mu.Lock()
	es.sendWin = c.initWin
	c.mu.Unlock()
	es.recvWin = streamWindow
	es.rw.es = es
	return es, 0
}

// joinCookies makes the cookie fields of fs one, at the place of the
// first.
func joinCookies(fs []field) []field {
	var b []byte
	first := -1
	out := fs[:0]
	for _, f := range fs {
		if string(f.name) == "cookie" {
			if first >= 0 {
				b = append(append(b, "; "...), f.value...)
				continue
			}
			first = len(out)
			b = append(b, f.value...)
		}
		out = append(out, f)
	}
	out[first].value = b
	return out
}

// run runs a stream's phases on its worker, then ends its response.
func (c *econn) run(es *estream) {
	cs := c.cl.Counters()
	st := es.st
	if st.stage == stageNew {
		c.open(es)
	}
	if es.woken {
		es.woken = false // counted running by its waker
	} else {
		c.running.Add(1)
	}
	defer c.running.Add(-1)
	aborted := serveStream(st)
	putStream(st)
	es.rw.finish(aborted)
	c.closeStream(es)
	cs.OpenStreams.Add(-1)
}

// open counts a stream that begins its phases and binds its state to the
// connection (on its worker, or on the reader: begin).
func (c *econn) open(es *estream) {
	cs := c.cl.Counters()
	cs.OpenStreams.Add(1)
	cs.TotalStreams.Add(1)
	st := es.st
	st.c, st.w, st.r = &c.connBase, &es.rw, es.req
	st.first = c.connBase.streams.Add(1) == 1
}

// serveStream runs st, and reports whether it aborted its response
// (http.ErrAbortHandler, or a panic: the stream is then reset).
func serveStream(st *h2stream) (aborted bool) {
	defer func() {
		if e := recover(); e != nil {
			aborted = true
			if e != http.ErrAbortHandler {
				buf := make([]byte, 64<<10)
				buf = buf[:runtime.Stack(buf, false)]
				fmt.Fprintf(os.Stderr, "http2: panic serving a stream: %v\n%s", e, buf)
			}
		}
	}()
	st.serve()
	return false
}

// closeStream takes a stream whose goroutine is done out of the
// connection: a request body the client still sends is refused
// (RST_STREAM NO_ERROR, RFC 9113 8.1) and its window given back.
func (c *econn) closeStream(es *estream) {
	c.mu.Lock()
	rst := false
	if !es.gone {
		rst = !es.remoteDone && !es.reset
		c.remove(es)
	}
	c.mu.Unlock()
	if rst {
		c.writeRST(es.id, xh2.ErrCodeNo)
	}
	es.cancel()
	c.giveBack(es.dropBody(errBodyClosed))
}

// remove takes es out of the connection's streams (mu held); the last
// stream out arms the idle timeout, or wakes the reader to end a
// connection going away.
func (c *econn) remove(es *estream) {
	delete(c.streams, es.id)
	es.gone = true
	if len(c.streams) > 0 || c.closed {
		return
	}
	switch {
	case c.goingAway || c.wtimeout.Load():
		c.raw.SetReadDeadline(time.Now())
		c.armed = true
	case c.srv.idle > 0:
		c.raw.SetReadDeadline(time.Now().Add(c.srv.idle))
		c.armed = true
	}
}

// drop ends es for the connection (mu held): a reset by either side. Its
// goroutine sees the client gone: the context is cancelled, the body
// fails with err, waiting writes stop.
func (c *econn) drop(es *estream, err error) {
	es.reset = true
	c.remove(es)
	es.cancel()
	c.recvCredit += int64(es.dropBody(err))
	c.cond.Broadcast()
}

// resetByUs resets stream id for a stream error with code.
func (c *econn) resetByUs(id uint32, code xh2.ErrCode) {
	c.mu.Lock()
	if es := c.streams[id]; es != nil {
		c.drop(es, errClientReset)
	}
	c.mu.Unlock()
	c.writeRST(id, code)
	c.sendCredit()
}

func (c *econn) writeRST(id uint32, code xh2.ErrCode) {
	c.lockW()
	c.wfr.WriteRSTStream(id, code)
	c.unlockW(flushNow)
}

// data takes a DATA frame: flow control, then the bytes to the stream's
// body.
func (c *econn) data(f *xh2.DataFrame) error {
	id, n := f.StreamID, int64(f.Length)
	c.mu.Lock()
	if n > c.recvWin {
		c.mu.Unlock()
		return connError(xh2.ErrCodeFlowControl)
	}
	c.recvWin -= n
	es := c.streams[id]
	if es == nil {
		if id > c.maxID {
			c.mu.Unlock()
			return connError(xh2.ErrCodeProtocol) // an idle stream
		}
		// A stream already closed: its frames in flight are dropped.
		c.recvCredit += n
		c.mu.Unlock()
		c.sendCredit()
		return nil
	}
	if es.remoteDone || n > es.recvWin {
		c.recvCredit += n
		c.mu.Unlock()
		code := xh2.ErrCodeStreamClosed
		if !es.remoteDone {
			code = xh2.ErrCodeFlowControl
		}
		c.resetByUs(id, code)
		return nil
	}
	es.recvWin -= n
	p := f.Data()
	// Padding is consumed at once.
	pad := n - int64(len(p))
	c.recvCredit += pad
	es.recvCredit += pad
	es.rcvd += int64(len(p))
	end := f.StreamEnded()
	if es.declLen >= 0 && (es.rcvd > es.declLen || end && es.rcvd != es.declLen) {
		c.recvCredit += int64(len(p))
		c.mu.Unlock()
		c.resetByUs(id, xh2.ErrCodeProtocol)
		return nil
	}
	if end {
		es.remoteDone = true
	}
	es.bmu.Lock()
	if es.berr == nil {
		es.buf = append(es.buf, p...)
		if end {
			es.berr = io.EOF
		}
		es.bcond.Broadcast()
	} else {
		c.recvCredit += int64(len(p)) // the body was closed: dropped
	}
	es.bmu.Unlock()
	c.mu.Unlock()
	c.sendCredit()
	return nil
}

// giveBack returns n bytes consumed to the connection's receive window.
func (c *econn) giveBack(n int) {
	if n > 0 {
		c.mu.Lock()
		c.recvCredit += int64(n)
		c.mu.Unlock()
		c.sendCredit()
	}
}

// sendCredit sends the connection's WINDOW_UPDATE once half its window
// was consumed.
func (c *econn) sendCredit() {
	c.mu.Lock()
	inc := int64(0)
	if c.recvCredit >= connWindow/2 && !c.closed {
		inc = c.recvCredit
		c.recvWin += inc
		c.recvCredit = 0
	}
	c.mu.Unlock()
	if inc > 0 {
		c.lockW()
		c.wfr.WriteWindowUpdate(0, uint32(inc))
		c.unlockW(flushNow)
	}
}

// consumed credits n bytes that es's body handed to its reader.
func (c *econn) consumed(es *estream, n int) {
	c.mu.Lock()
	var sinc, cinc int64
	c.recvCredit += int64(n)
	if c.recvCredit >= connWindow/2 && !c.closed {
		cinc = c.recvCredit
		c.recvWin += cinc
		c.recvCredit = 0
	}
	if !es.remoteDone && !es.gone {
		es.recvCredit += int64(n)
		if es.recvCredit >= streamWindow/2 {
			sinc = es.recvCredit
			es.recvWin += sinc
			es.recvCredit = 0
		}
	}
	c.mu.Unlock()
	if sinc > 0 || cinc > 0 {
		c.lockW()
		if cinc > 0 {
			c.wfr.WriteWindowUpdate(0, uint32(cinc))
		}
		if sinc > 0 {
			c.wfr.WriteWindowUpdate(es.id, uint32(sinc))
		}
		c.unlockW(flushNow)
	}
}

// settings applies the client's SETTINGS and acknowledges them.
func (c *econn) settings(f *xh2.SettingsFrame) error {
	if f.IsAck() {
		return nil
	}
	table := int64(-1)
	frame := 0
	var bad error
	c.mu.Lock()
	f.ForeachSetting(func(s xh2.Setting) error {
		// RFC 9113 6.5.2: the values allowed.
		switch {
		case s.ID == xh2.SettingEnablePush && s.Val > 1,
			s.ID == xh2.SettingMaxFrameSize && (s.Val < 16384 || s.Val > 1<<24-1):
			bad = connError(xh2.ErrCodeProtocol)
			return nil
		case s.ID == xh2.SettingInitialWindowSize && s.Val > maxWindow:
			bad = connError(xh2.ErrCodeFlowControl)
			return nil
		}
		switch s.ID {
		case xh2.SettingInitialWindowSize:
			// RFC 9113 6.9.2: every stream's window moves by the change.
			d := int64(s.Val) - c.initWin
			c.initWin = int64(s.Val)
			for _, es := range c.streams {
				es.sendWin += d
				if es.sendWin > maxWindow {
					bad = connError(xh2.ErrCodeFlowControl)
				}
			}
		case xh2.SettingMaxFrameSize:
			c.maxFrame = int(s.Val)
			frame = int(s.Val)
		case xh2.SettingHeaderTableSize:
			table = int64(s.Val)
		}
		return nil
	})
	c.cond.Broadcast()
	c.mu.Unlock()
	if bad != nil {
		return bad
	}
	c.lockW()
	if table >= 0 {
		c.setTableLimit(uint32(min(table, 4096)))
	}
	if frame > 0 {
		c.wMaxFrame = frame
	}
	c.wfr.WriteSettingsAck()
	c.unlockW(deferFlush)
	return nil
}

// windowUpdate widens a send window and wakes the writers waiting on it.
func (c *econn) windowUpdate(f *xh2.WindowUpdateFrame) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	inc := int64(f.Increment)
	if f.StreamID == 0 {
		if c.sendWin+inc > maxWindow {
			return connError(xh2.ErrCodeFlowControl)
		}
		c.sendWin += inc
		c.credited()
		c.cond.Broadcast()
		return nil
	}
	es := c.streams[f.StreamID]
	if es == nil {
		return nil // closed, or not opened: nothing waits on it
	}
	if es.sendWin+inc > maxWindow {
		c.drop(es, errClientReset)
		c.mu.Unlock()
		c.writeRST(f.StreamID, xh2.ErrCodeFlowControl)
		c.mu.Lock()
		return nil
	}
	es.sendWin += inc
	c.credited()
	c.cond.Broadcast()
	return nil
}

// credited notes send credit given while writers wait for it (mu held):
// progress, for the stall timer.
func (c *econn) credited() {
	if c.waiters > 0 {
		c.stallFrom = time.Now()
	}
}

// goAway starts the graceful end of the connection: GOAWAY(NO_ERROR) with
// the last stream opened; the streams in flight finish, then it closes.
func (c *econn) goAway() {
	c.mu.Lock()
	if c.goingAway || c.closed {
		c.mu.Unlock()
		return
	}
	c.goingAway = true
	last := c.maxID
	if len(c.streams) == 0 {
		c.raw.SetReadDeadline(time.Now())
		c.armed = true
	}
	c.mu.Unlock()
	c.lockW()
	if !c.goawaySent {
		c.goawaySent = true
		c.wfr.WriteGoAway(last, xh2.ErrCodeNo, nil)
	}
	c.unlockW(flushNow)
}

// end ends the connection after the reader stopped: err is a connection
// error (GOAWAY with its code), a gone client, or nil (graceful: idle, or
// going away with no stream left).
func (c *econn) end(err error) {
	// A writer blocked on a client that does not read gives up within
	// lingerTime, and so does the GOAWAY below.
	c.lingering.Store(true)
	c.raw.SetWriteDeadline(time.Now().Add(lingerTime))
	c.mu.Lock()
	c.closed = true
	if c.stallTimer != nil {
		c.stallTimer.Stop()
	}
	for _, es := range c.streams {
		c.drop(es, errConnGone)
	}
	c.stopWorkers()
	last := c.maxID
	c.cond.Broadcast()
	c.mu.Unlock()
	var ce connError
	// A write timeout tries a GOAWAY(NO_ERROR) as HAProxy's connection
	// timeout does (it does not leave when the output is stuck).
	code, goaway := xh2.ErrCodeNo, err == nil || err == errWriteTimeout
	if errors.As(err, &ce) {
		code, goaway = xh2.ErrCode(ce), true
	}
	if goaway {
		c.lockW()
		if !c.goawaySent || code != xh2.ErrCodeNo {
			c.goawaySent = true
			c.wfr.WriteGoAway(last, code, nil)
		}
		c.unlockW(flushNow)
		c.linger()
	}
	c.lockW()
	c.werr = errConnGone
	c.unlockW(flushIfWanted)
	c.raw.Close()
}

// linger half-closes the connection and reads what the client still
// sends, for lingerTime at most, so that it reads the GOAWAY.
func (c *econn) linger() {
	if cw, ok := c.raw.(interface{ CloseWrite() error }); ok {
		cw.CloseWrite()
	}
	c.raw.SetReadDeadline(time.Now().Add(lingerTime))
	for {
		if _, err := c.br.Discard(c.br.Buffered() + 1); err != nil {
			return
		}
	}
}

// Writing.

// The ways to leave the write lock.
const (
	// flushIfWanted flushes if a writer asked for it and none follows.
	flushIfWanted = iota
	// flushNow asks for the frames written to leave, and flushes unless
	// another writer follows (which then does).
	flushNow
	// deferFlush asks for the frames to leave but does not flush: the
	// reader's frames, flushed before it waits for the client.
	deferFlush
)

func (c *econn) lockW() {
	c.pending.Add(1)
	c.wmu.Lock()
}

// unlockW leaves the write lock (see the modes) and returns the
// connection's write error.
func (c *econn) unlockW(mode int) error {
	if mode != flushIfWanted {
		c.flushWanted = true
	}
	if c.pending.Add(-1) == 0 && c.flushWanted && mode != deferFlush && c.werr == nil {
		c.flushWanted = false
		if err := c.bw.Flush(); err != nil {
			c.werr = err
			c.raw.Close() // the reader ends, and the streams with it
		}
	}
	if c.werr == nil && c.bw.Buffered() == 0 {
		c.flushWanted = false
	}
	err := c.werr
	c.wmu.Unlock()
	return err
}

// writeBlock writes a header block as HEADERS and CONTINUATION frames
// (wmu held).
func (c *econn) writeBlock(id uint32, end bool, block []byte) {
	first := true
	for first || len(block) > 0 {
		k := min(len(block), c.wMaxFrame)
		frag := block[:k]
		block = block[k:]
		if first {
			c.wfr.WriteHeaders(xh2.HeadersFrameParam{StreamID: id, BlockFragment: frag,
				EndStream: end, EndHeaders: len(block) == 0})
			first = false
		} else {
			c.wfr.WriteContinuation(id, len(block) == 0, frag)
		}
	}
}

// reserve waits for send credit for up to want bytes of DATA on es and
// takes it; with wait false it takes what credit there is, maybe none.
func (c *econn) reserve(es *estream, want int, wait bool) (int, error) {
	c.mu.Lock()
	for {
		if es.reset || c.closed {
			c.mu.Unlock()
			if c.wtimeout.Load() {
				return 0, errWriteTimeout
			}
			return 0, errStreamGone
		}
		if want == 0 || es.sendWin > 0 && c.sendWin > 0 {
			break
		}
		if !wait {
			c.mu.Unlock()
			return 0, nil
		}
		if es.byReader {
			// The reader cannot wait for credit: only it reads the
			// WINDOW_UPDATE that would bring it (answerFits checked there
			// was enough; other streams took it meanwhile).
			c.mu.Unlock()
			return 0, errStreamGone
		}
		// The client grants more once it read what was sent.
		c.mu.Unlock()
		c.lockW()
		c.unlockW(flushNow)
		c.mu.Lock()
		if es.reset || c.closed || es.sendWin > 0 && c.sendWin > 0 {
			continue
		}
		c.stallWait()
		c.cond.Wait()
		c.stallDone()
	}
	n := int64(min(want, c.maxFrame))
	n = min(n, es.sendWin, c.sendWin)
	es.sendWin -= n
	c.sendWin -= n
	c.mu.Unlock()
	return int(n), nil
}

// respWriter is a stream's http.ResponseWriter and http.Flusher, with
// net/http's trailer conventions (a "Trailer:" key prefix, or the
// Trailer field).
type respWriter struct {
	es          *estream
	h           http.Header // bufs.h
	bufs        *respBufs
	status      int
	wroteHeader bool
	sentHeader  bool
	head        bool // a response to HEAD: no body
	// direct: the head is bufs.hf's fields (headcache.go), not h's.
	direct   bool
	declared []string
	// rstCode is the code of the RST_STREAM an aborted response sends
	// (0: INTERNAL_ERROR).
	rstCode xh2.ErrCode
}

func (w *respWriter) Header() http.Header {
	if w.h == nil {
		w.bufs = respBufPool.Get().(*respBufs)
		w.h = w.bufs.h
	}
	return w.h
}

func (w *respWriter) WriteHeader(code int) {
	if w.wroteHeader || code < 100 || code > 999 {
		return
	}
	if code < 200 {
		return // 1xx are not relayed
	}
	w.wroteHeader, w.status = true, code
	w.head = w.es.req.Method == http.MethodHead
	for _, v := range w.h["Trailer"] {
		for _, k := range strings.Split(v, ",") {
			if k = strings.TrimSpace(k); k != "" {
				w.declared = append(w.declared, http.CanonicalHeaderKey(k))
			}
		}
	}
}

func (w *respWriter) Write(p []byte) (int, error) {
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	if w.head {
		return len(p), nil
	}
	es, c := w.es, w.es.c
	n := 0
	for len(p) > 0 || !w.sentHeader {
		// reserve also says whether the stream is still open. HEADERS
		// are not flow-controlled (RFC 9113 6.9): the head leaves
		// without waiting for credit (with what data the credit there is
		// allows), the rest of the data as credit comes.
		k, err := c.reserve(es, len(p), w.sentHeader)
		if err != nil {
			return n, err
		}
		c.lockW()
		if !w.sentHeader {
			w.writeHead(false)
		}
		if k > 0 {
			c.wfr.WriteData(es.id, false, p[:k])
		}
		mode := flushIfWanted
		if es.byReader || es.batched {
			mode = deferFlush
		}
		if err := c.unlockW(mode); err != nil {
			return n, err
		}
		p = p[k:]
		n += k
	}
	return n, nil
}

// WriteInterim sends an interim (1xx) head with the fields of h before
// the final head (RFC 9113 8.1): a HEADERS frame without END_STREAM. It
// does nothing once the final head left.
func (w *respWriter) WriteInterim(status int, h http.Header) error {
	if w.sentHeader || status < 100 || status > 199 {
		return nil
	}
	es, c := w.es, w.es.c
	c.mu.Lock()
	gone := es.reset
	c.mu.Unlock()
	if gone {
		return errStreamGone
	}
	c.lockW()
	c.hbuf.Reset()
	c.enc.WriteField(hpack.HeaderField{Name: ":status", Value: strconv.Itoa(status)})
	for k, vv := range h {
		encodeField(c.enc, k, vv)
	}
	c.writeBlock(es.id, false, c.hbuf.Bytes())
	return c.unlockW(flushNow)
}

func (w *respWriter) Flush() {
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	c := w.es.c
	c.mu.Lock()
	gone := w.es.reset
	c.mu.Unlock()
	if gone {
		return
	}
	c.lockW()
	if !w.sentHeader {
		w.writeHead(false)
	}
	c.unlockW(flushNow)
}

// finish ends the response once the stream's phases are done: its end
// (an empty DATA with END_STREAM, or trailers), or a reset when it was
// aborted.
func (w *respWriter) finish(aborted bool) {
	es, c := w.es, w.es.c
	c.mu.Lock()
	gone := es.reset
	if aborted && !gone {
		c.drop(es, errStreamGone)
	}
	c.mu.Unlock()
	defer w.reset()
	if gone {
		return
	}
	if aborted {
		code := xh2.ErrCodeInternal
		if w.rstCode != 0 {
			code = w.rstCode
		}
		c.writeRST(es.id, code)
		return
	}
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	if c.running.Load() > 1 && c.pending.Load() == 0 && !es.byReader && !es.batched {
		// Other streams of the connection may have their responses
		// ready to write: let them write first (this writer, counted in
		// pending, then flushes for all), rather than a write each. One
		// writer yields at a time: those that come meanwhile write and
		// leave the flush to it.
		c.pending.Add(1)
		runtime.Gosched()
		c.wmu.Lock()
	} else {
		c.lockW()
	}
	tr := w.hasTrailers() && !w.head
	switch {
	case !w.sentHeader:
		w.writeHead(!tr)
	case !tr:
		c.wfr.WriteData(es.id, true, nil)
	}
	if tr {
		// Encoded after the head: the HPACK tables follow the wire order.
		c.writeBlock(es.id, true, w.trailers())
	}
	if es.byReader || es.batched {
		// The reader flushes before its next wait, the batching worker
		// once its queue is empty.
		c.unlockW(deferFlush)
		return
	}
	c.unlockW(flushNow)
}

// hasTrailers reports whether the handler set trailers.
func (w *respWriter) hasTrailers() bool {
	for k, vv := range w.h {
		if len(vv) > 0 && strings.HasPrefix(k, http.TrailerPrefix) {
			return true
		}
	}
	for _, k := range w.declared {
		if len(w.h[k]) > 0 {
			return true
		}
	}
	return false
}

func (w *respWriter) reset() {
	if b := w.bufs; b != nil && len(b.h) <= 32 && cap(b.vals) <= 64 && cap(b.hb) <= 8192 && cap(b.hf) <= 64 {
		clear(b.h)
		clear(b.vals)
		b.vals = b.vals[:0]
		b.hb, b.hf = b.hb[:0], b.hf[:0]
		respBufPool.Put(b)
	}
	*w = respWriter{es: w.es, declared: w.declared[:0]}
}

// respBufs are a response's header map and the backing of its fields'
// []string values (h2stream.writeHead), pooled: taken by the first
// Header call, given back once the response ended (a large one is left
// to the collector). Only these: the value strings go into the HPACK
// encoder's dynamic table, and must stay as they are (a direct head's
// bytes are copied for the encoder: encodeOwned).
type respBufs struct {
	h    http.Header
	vals []string
	// A direct head (headcache.go): fields' names and values, and where
	// each one is in hb.
	hb []byte
	hf []hfield
}

var respBufPool = sync.Pool{New: func() any { return &respBufs{h: make(http.Header, 8)} }}

// writeHead writes the response head (wmu held).
func (w *respWriter) writeHead(end bool) {
	c := w.es.c
	w.sentHeader = true
	c.hbuf.Reset()
	if w.direct {
		w.encodeDirect()
	} else {
		c.enc.WriteField(hpack.HeaderField{Name: ":status", Value: statusText(w.status)})
	}
	for k, vv := range w.h {
		if strings.HasPrefix(k, http.TrailerPrefix) {
			continue
		}
		encodeField(c.enc, k, vv)
	}
	c.writeBlock(w.es.id, end, c.hbuf.Bytes())
}

// trailers encodes the trailers into a header block (wmu held: the block
// is in c.hbuf).
func (w *respWriter) trailers() []byte {
	c := w.es.c
	c.hbuf.Reset()
	for k, vv := range w.h {
		if name, ok := strings.CutPrefix(k, http.TrailerPrefix); ok {
			encodeField(c.enc, name, vv)
		}
	}
	for _, k := range w.declared {
		if _, dup := w.h[http.TrailerPrefix+k]; !dup {
			encodeField(c.enc, k, w.h[k])
		}
	}
	return c.hbuf.Bytes()
}

// encodeField encodes the values of field k, in lower case; fields
// HTTP/2 does not carry (RFC 9113 8.2.2) and invalid ones are left out.
func encodeField(enc *hpack.Encoder, k string, vv []string) {
	if len(vv) == 0 {
		return
	}
	name := lowerKey(k)
	switch name {
	case "connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade":
		return
	}
	if !httpguts.ValidHeaderFieldName(name) {
		return
	}
	for _, v := range vv {
		if httpguts.ValidHeaderFieldValue(v) {
			enc.WriteField(hpack.HeaderField{Name: name, Value: v})
		}
	}
}

// lowerNames maps the canonical form of common field names to their lower
// case: read only.
var lowerNames = func() map[string]string {
	m := map[string]string{}
	for k, v := range commonKeys {
		if k == v {
			m[k] = lower(k)
		}
	}
	return m
}()

// lowerKey returns field name k in lower case, without allocating for
// common names and names already in lower case.
func lowerKey(k string) string {
	if l, ok := lowerNames[k]; ok {
		return l
	}
	for i := 0; i < len(k); i++ {
		if 'A' <= k[i] && k[i] <= 'Z' {
			return lower(k)
		}
	}
	return k
}

// statusText returns code in decimal, without allocating for the usual
// codes.
func statusText(code int) string {
	switch code {
	case 200:
		return "200"
	case 204:
		return "204"
	case 206:
		return "206"
	case 301:
		return "301"
	case 302:
		return "302"
	case 304:
		return "304"
	case 400:
		return "400"
	case 403:
		return "403"
	case 404:
		return "404"
	case 500:
		return "500"
	case 502:
		return "502"
	case 503:
		return "503"
	case 504:
		return "504"
	}
	return strconv.Itoa(code)
}

// requestBody is a stream's request body as its reader sees it.
type requestBody estream

func (b *requestBody) Read(p []byte) (int, error) {
	es := (*estream)(b)
	if es.expect {
		// RFC 9110 10.1.1: the client waits for the interim response.
		es.expect = false
		c := es.c
		c.mu.Lock()
		gone := es.reset
		c.mu.Unlock()
		c.lockW()
		if !gone && !es.rw.sentHeader {
			c.hbuf.Reset()
			c.enc.WriteField(hpack.HeaderField{Name: ":status", Value: "100"})
			c.writeBlock(es.id, false, c.hbuf.Bytes())
		}
		c.unlockW(flushNow)
	}
	es.bmu.Lock()
	for es.boff == len(es.buf) && es.berr == nil {
		es.bcond.Wait()
	}
	if es.boff == len(es.buf) {
		err := es.berr
		es.bmu.Unlock()
		return 0, err
	}
	n := copy(p, es.buf[es.boff:])
	es.boff += n
	if es.boff == len(es.buf) {
		es.buf, es.boff = es.buf[:0], 0
	}
	es.bmu.Unlock()
	es.c.consumed(es, n)
	return n, nil
}

// Close closes the body: what it holds and what comes later is dropped.
func (b *requestBody) Close() error {
	es := (*estream)(b)
	es.c.giveBack(es.dropBody(errBodyClosed))
	return nil
}

// endBody ends the body with err once what it holds was read.
func (es *estream) endBody(err error) {
	es.bmu.Lock()
	if es.berr == nil {
		es.berr = err
		es.bcond.Broadcast()
	}
	es.bmu.Unlock()
}

// dropBody fails the body with err (if it had not ended) and drops what
// it holds, returning how many bytes that was (to give back).
func (es *estream) dropBody(err error) int {
	es.bmu.Lock()
	n := len(es.buf) - es.boff
	es.buf, es.boff = nil, 0
	if es.berr == nil || es.berr == io.EOF && n > 0 {
		es.berr = err
	}
	es.bcond.Broadcast()
	es.bmu.Unlock()
	return n
}
