package http2

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/textproto"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
	"unsafe"

	xh2 "golang.org/x/net/http2"

	"github.com/fulcrum-proxy/fulcrum/proxy/h2mux"
	"github.com/fulcrum-proxy/fulcrum/proxy/http1"
	"github.com/fulcrum-proxy/fulcrum/proxy/netio"
	"github.com/fulcrum-proxy/fulcrum/proxy/queue"
	"github.com/fulcrum-proxy/fulcrum/proxy/stream"
)

// One stream: the request as the core sees it (a header view over the
// decoded fields, :authority as the Host field, version HTTP/2.0), routed
// and assigned by the core, then sent to the server in the server's
// protocol and its response relayed back on the stream.

// h2stream is the state of one stream, pooled.
type h2stream struct {
	c     *connBase
	w     http.ResponseWriter
	r     *http.Request
	x     Stream
	first bool // the connection's first stream (http_reuse safe)
	// badMethod: the :method is not a token; the stream is answered 400
	// without being routed, as HAProxy 2.6 answers it (measured).
	badMethod bool
	// headSize is the request head's size, when the engine filled fields
	// itself (the own engine: r.Header and r.URL are then nil, built only
	// for a local answer).
	headSize int

	view   stream.Request
	fields []field         // the request's fields, "host" first
	rf     h2mux.Fields    // the response's fields (http_response rules)
	resp   stream.Response // the response as the http_response rules see it
	out    fieldBuf
	// wait is waitQueue as a func value, made once per pooled h2stream;
	// interim relayInterim.
	wait    queue.WaitFunc
	interim func(status int, fields func(fn func(name, value []byte)))
	// h2trace gives an HTTP/2 server's interim heads to interimH2;
	// interims counts those of the stream.
	h2trace  *httptrace.ClientTrace
	interims int
	// clk is the time the stream's phases read (Stream.SetClock) from its
	// start to the first thing that may wait (a queue, a dial, a request
	// body, the server's answer, a write to the client), and again from
	// its response's end to its log line: zero in between.
	clk time.Time

	// What the connection's reader did before a worker runs the stream
	// (inline.go): how far it went, the route, the exchange (stageTaken:
	// a pooled one or nil; stageSent: the request sent on it), the send's
	// error or rest pending, the time it parked, the server's cut.
	stage   stage
	rt      stream.Route
	ex      *http1.Exchange
	sendErr error
	pending bool
	parkAt  time.Time
	cut     *cutter
}

// setClock sets the time the stream's phases read (zero: the clock's).
func (st *h2stream) setClock(t time.Time) {
	st.clk = t
	st.x.SetClock(t)
}

// respBufs returns the pooled buffers of the stream's response writer
// (the own engine's, once its Header was asked for), or nil.
func (st *h2stream) respBufs() *respBufs {
	if w, ok := st.w.(*respWriter); ok {
		return w.bufs
	}
	return nil
}

// field is one request field, aliasing the decoded request's strings.
type field struct{ name, value []byte }

var streamPool = sync.Pool{New: func() any { return new(h2stream) }}

func getStream() *h2stream { return streamPool.Get().(*h2stream) }

func putStream(st *h2stream) {
	clear(st.fields)
	st.rf.Reset()
	*st = h2stream{fields: st.fields[:0], rf: st.rf, out: fieldBuf{b: st.out.b[:0]}, wait: st.wait, interim: st.interim, h2trace: st.h2trace}
	streamPool.Put(st)
}

// NumHeaders, HeaderAt and Header make the request's fields the core's
// stream.Headers.
func (st *h2stream) NumHeaders() int { return len(st.fields) }

// HeaderAt returns field i.
func (st *h2stream) HeaderAt(i int) (name, value []byte) {
	f := &st.fields[i]
	return f.name, f.value
}

// Header returns the first field named name.
func (st *h2stream) Header(name string) (string, bool) {
	for i := range st.fields {
		if strings.EqualFold(bstr(st.fields[i].name), name) {
			return bstr(st.fields[i].value), true
		}
	}
	return "", false
}

// sbytes views s as bytes without copying; the core only reads them.
func sbytes(s string) []byte {
	if s == "" {
		return nil
	}
	return unsafe.Slice(unsafe.StringData(s), len(s))
}

func bstr(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}

var (
	version2  = []byte("HTTP/2.0")
	version11 = []byte("HTTP/1.1")
	hostName  = []byte("host")
)

// serve runs the stream's phases (those the connection's reader left:
// st.stage).
func (st *h2stream) serve() {
	if st.stage == stageNew {
		st.start()
	}
	defer st.x.Free()
	if st.stage > stageRouted {
		st.forward()
		return
	}
	switch rt := st.rt; rt.Kind {
	case stream.RouteAnswer:
		st.answer(rt)
	case stream.RouteLocal:
		st.local(rt.Handler)
	case stream.RouteNoServer:
		if st.badMethod {
			st.fail(stream.BadRequest)
			return
		}
		st.fail(stream.NoServer)
	default:
		st.forward()
	}
}

// start begins the core's stream and routes it (st.rt, stageRouted).
func (st *h2stream) start() {
	x := st.c.cl.NewStream()
	st.x = x
	r := st.r
	t0 := time.Now()
	x.Begin(t0, t0)
	st.setClock(t0)
	size := st.headSize
	if len(st.fields) == 0 {
		size = len(r.Method) + len(r.RequestURI) + 12
		st.fields = append(st.fields, field{hostName, sbytes(r.Host)})
		for name, values := range r.Header {
			for _, v := range values {
				st.fields = append(st.fields, field{sbytes(strings.ToLower(name)), sbytes(v)})
				size += len(name) + len(v) + 4
			}
		}
	}
	x.HeadRead(size)
	if st.badMethod {
		// Not routed: logged "<BADREQ>" with the frontend as backend.
		st.rt = stream.Route{Kind: stream.RouteNoServer}
		st.stage = stageRouted
		st.setClock(time.Time{})
		return
	}
	st.view = stream.Request{Method: sbytes(r.Method), URI: sbytes(r.RequestURI), Version: version2,
		Host: sbytes(r.Host), Headers: st, HasBody: r.ContentLength != 0}
	// The head was whole before the stream started: its parse time is
	// t0's, taken once.
	st.rt = x.Route(&st.view, t0)
	st.stage = stageRouted
	if st.rt.Kind != stream.RouteBackend {
		st.setClock(time.Time{})
	}
}

// answer sends a rule's response (HTTP/1 bytes, translated) and ends.
func (st *h2stream) answer(rt stream.Route) {
	st.x.Replied(rt.Status, int64(len(rt.Answer)))
	err := writeH1Message(st.w, rt.Answer)
	o := stream.Answered
	if rt.Deny {
		o = stream.Denied
	}
	if err != nil && o == stream.Answered {
		o = stream.LocalClientGone
	}
	st.x.End(o)
}

// fail ends the stream with o, answering HAProxy's error page for o's
// status when it has one. The counters move before the page leaves.
func (st *h2stream) fail(o stream.Outcome) {
	if code := o.Row().Status; code != 0 && st.r.Context().Err() == nil {
		page, _ := http1.ErrorPage(code)
		// Logged as the page of an HTTP/1 client on a kept connection:
		// HAProxy counts a response alike whatever the client speaks.
		st.x.Replied(code, int64(len(http1.DenyResponse(code))))
		h := st.w.Header()
		h.Set("Content-Type", "text/html")
		h.Set("Cache-Control", "no-cache")
		st.w.WriteHeader(code)
		io.WriteString(st.w, page)
	}
	st.x.End(o)
}

// refuse ends a stream the server reset before its response head: the
// client's stream is reset with REFUSED_STREAM (nothing was processed
// for it: the client may retry), without an error page or a log line,
// as HAProxy 2.6 answers an HTTP/2 client (measured on loopback with a
// server resetting with NO_ERROR, PROTOCOL_ERROR, INTERNAL_ERROR,
// REFUSED_STREAM and CANCEL: REFUSED_STREAM each time). x/net/http2's
// engine (EngineXNet) can only reset with INTERNAL_ERROR.
func (st *h2stream) refuse() {
	st.x.End(stream.ServerReset)
	if rw, ok := st.w.(*respWriter); ok {
		rw.rstCode = xh2.ErrCodeRefusedStream
	}
	panic(http.ErrAbortHandler)
}

// local answers with the frontend's own handler (stats page, /metrics),
// buffered whole as the HTTP/1 engine does.
func (st *h2stream) local(h http.Handler) {
	lw := &localWriter{h: http.Header{}}
	h.ServeHTTP(lw, st.fullRequest())
	if lw.status == 0 {
		lw.status = http.StatusOK
	}
	dst := st.w.Header()
	head := h1StatusLine(lw.status) + len("content-length: \r\n\r\n") + len(strconv.Itoa(lw.body.Len()))
	for k, v := range lw.h {
		if !h2mux.HopByHop(k) && k != "Content-Length" {
			dst[k] = v
			for _, s := range v {
				head += len(k) + len(s) + 4
			}
		}
	}
	st.x.Replied(lw.status, int64(head+lw.body.Len()))
	st.w.WriteHeader(lw.status)
	_, err := st.w.Write(lw.body.Bytes())
	st.x.LocalDone(err)
}

// fullRequest returns the request with its URL, header and remote address,
// which the own engine leaves out of the requests it forwards.
func (st *h2stream) fullRequest() *http.Request {
	r := st.r
	if r.URL != nil {
		return r
	}
	u, err := url.ParseRequestURI(r.RequestURI)
	if err != nil {
		u = &url.URL{Path: r.RequestURI}
	}
	h := make(http.Header, len(st.fields))
	for _, f := range st.fields[1:] {
		k := headerKey(f.name)
		h[k] = append(h[k], string(f.value))
	}
	r.URL, r.Header, r.RemoteAddr = u, h, st.c.cl.Src().String()
	return r
}

type localWriter struct {
	h      http.Header
	status int
	body   bytes.Buffer
}

func (w *localWriter) Header() http.Header { return w.h }
func (w *localWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.body.Write(p)
}
func (w *localWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
}

// forward takes a server (or waits in its queue, watching the stream
// for a reset) and sends the request in the server's protocol.
func (st *h2stream) forward() {
	x := st.x
	defer x.Release()
	if st.wait == nil {
		st.wait = st.waitQueue // kept with the pooled stream
	}
	if st.stage < stageTaken {
		if o := x.Take(nil, st.wait); o != stream.Served {
			st.setClock(time.Time{})
			st.fail(o)
			return
		}
	}
	if x.Upstream().H2 != nil {
		st.setClock(time.Time{})
		st.toH2(nil)
	} else {
		st.toH1(st.ex)
	}
}

// waitQueue is the stream's queue.WaitFunc: the queue's hand-over, the
// queue deadline, or the client resetting the stream (a client abort in
// the queue, CQ).
func (st *h2stream) waitQueue(p *queue.Pending, deadline time.Time) queue.WaitEnd {
	st.setClock(time.Time{})
	var tc <-chan time.Time
	if !deadline.IsZero() {
		t := time.NewTimer(time.Until(deadline))
		defer t.Stop()
		tc = t.C
	}
	select {
	case <-p.Ready():
		return queue.WaitServed
	case <-tc:
		return queue.WaitTimeout
	case <-st.r.Context().Done():
		return queue.WaitGone
	}
}

// clientGone reports whether the client reset the stream or lost its
// connection.
func (st *h2stream) clientGone() bool { return st.r.Context().Err() != nil }

// requestFields calls add for each field to forward: the client's fields
// (hop-by-hop ones dropped, TE kept as "trailers"), the rules' edits, and
// X-Forwarded-For. Host is not among them (the caller sends :authority or
// Host).
func (st *h2stream) requestFields(add func(name, value string)) {
	edits := st.x.Edits()
	for i := 1; i < len(st.fields); i++ {
		f := &st.fields[i]
		if edits.Hidden(i) {
			continue
		}
		name, value := bstr(f.name), bstr(f.value)
		if h2mux.HopByHop(name) {
			if name == "te" && h2mux.TEAllowed(value) {
				add("te", "trailers")
			}
			continue
		}
		if name == "content-length" || name == "host" {
			continue
		}
		add(name, value)
	}
	for i := range edits.NumAdded() {
		if name, value, ok := edits.AddedAt(i); ok {
			add(string(name), string(value))
		}
	}
	if st.c.xff != "" {
		add("X-Forwarded-For", st.c.xff)
	}
}

// host returns the host to forward: a set-header host edit wins.
func (st *h2stream) host() string {
	edits := st.x.Edits()
	for i := range edits.NumAdded() {
		if name, value, ok := edits.AddedAt(i); ok && strings.EqualFold(string(name), "host") {
			return string(value)
		}
	}
	if edits.Hidden(0) {
		return ""
	}
	return st.r.Host
}

// bodyReader is the client's request body as sent to a server: it counts
// the bytes and keeps the client's failure apart from the server's.
type bodyReader struct {
	r   io.Reader
	n   int64
	err error
}

func (b *bodyReader) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	b.n += int64(n)
	if err != nil && err != io.EOF {
		b.err = err
	}
	return n, err
}

// toH1 sends the request to an HTTP/1.1 server, on a pooled connection
// when http_reuse allows or on c (a connection the core dialed for an
// HTTP/2 server before a redispatch moved the request to this one).
func (st *h2stream) toH1(ex *http1.Exchange) {
	x := st.x
	up := x.Upstream()
	sent := st.stage == stageSent // by the connection's reader, on ex, connected
	if ex == nil {
		ex = reuseConn(st)
	}
	for attempt := 0; ; attempt++ {
		reused := ex != nil && ex.Reused()
		if !sent {
			if ex == nil {
				st.setClock(time.Time{}) // a dial waits
				c, o := x.Connect()
				if o != stream.Served {
					st.fail(o)
					return
				}
				if up = x.Upstream(); up.SpeaksH2(c) {
					cc, err := http1.AddH2(up, x.ConnKey(), c, &st.c.own)
					if err != nil {
						st.fail(stream.SendFailed)
						return
					}
					st.toH2(cc)
					return
				}
				ex = http1.NewExchange(c, up, x.ConnKey())
			}
			if attempt == 0 {
				x.Connected(ex.Conn(), reused)
			} else {
				x.Rebind(ex.Conn())
			}
		}
		o, retry := st.exchangeH1(ex, reused && attempt == 0, sent)
		sent = false
		if retry {
			ex.Close()
			ex = nil
			continue
		}
		x.Unbind()
		if o != stream.Served {
			st.fail(o)
		}
		return
	}
}

// exchangeH1 sends the request on ex and relays the response. It returns
// the outcome when the response could not be relayed (the caller answers
// it), stream.Served when the stream ended, and retry when a reused
// connection turned out stale before anything was sent back (the request
// had no body to replay: it goes again on a new connection).
//
// With byReader, the connection's reader sent the request (stageSent: the
// head, maybe with a rest pending, or its error) and watches the cut.
func (st *h2stream) exchangeH1(ex *http1.Exchange, mayRetry, byReader bool) (o stream.Outcome, retry bool) {
	x, r := st.x, st.r
	// A client that resets the stream while the server thinks: the read
	// of the response is cut at once. The cut never reaches the
	// connection once the exchange let it go (cut.done).
	var cut *cutter
	if w, ok := r.Context().(cutWatcher); ok {
		if byReader {
			cut = st.cut
		} else {
			cut = st.watch(ex)
		}
		defer w.watchCut(nil)
	} else {
		cut = &cutter{c: ex.Conn()}
		stop := context.AfterFunc(r.Context(), cut.cut)
		defer stop()
	}
	release := func(whole bool) {
		if ex.Uploading() {
			// The response ended before the request body did. A body
			// read whole is only being flushed: it ends (the common
			// case of a server answering as the body's last bytes
			// arrive). Else it is cut (the client's stream is refused
			// the rest, RST_STREAM NO_ERROR, RFC 9113 8.1) and the
			// connection, whose server did not read it all, is not
			// pooled.
			read := ex.BodyRead()
			n, err := ex.EndBody(!read)
			x.BodySent(n)
			whole = whole && read && err == nil
		}
		if cut.end() && whole {
			ex.Finish()
		} else {
			ex.Close()
		}
	}
	// A request without a body that could not be sent: a stale pooled
	// connection's goes again on a new one.
	sendFailed := func(error) (stream.Outcome, bool) {
		release(false)
		switch {
		case st.clientGone():
			return stream.ClientReset, false
		case mayRetry && !x.Killed():
			return 0, true
		}
		return stream.SendFailed, false
	}
	bodyLen := r.ContentLength
	hasBody := st.view.HasBody
	if !hasBody {
		bodyLen = 0
	}
	if hasBody {
		st.setClock(time.Time{}) // the body is read from the client
	} else {
		ex.SetClock(st.clk)
	}
	switch {
	case byReader:
		err := st.sendErr
		if err == nil && st.pending {
			err = ex.FlushPending()
			if err == nil {
				x.Sent(0)
			}
		}
		if err != nil {
			return sendFailed(err)
		}
		ex.SetClock(st.parkAt) // the read deadline the park armed
	case hasBody:
		st.writeRequestHead(ex, bodyLen)
		// The body goes out beside the response's wait, as HAProxy
		// forwards both directions: a server may answer first.
		x.Sent(0)
		ex.StartBody(r.Body, bodyLen < 0)
		n, err := ex.AwaitHead()
		x.BodySent(n)
		if err != nil {
			release(false)
			switch {
			case st.clientGone():
				return stream.ClientReset, false
			case errors.Is(err, http1.ErrClientBody) && netio.IsTimeout(err):
				return stream.ClientTimeoutUpload, false
			case errors.Is(err, http1.ErrClientBody):
				return stream.ClientAbortUpload, false
			case errors.Is(err, http1.ErrServerBody):
				return stream.ServerGoneUpload, false
			case netio.IsTimeout(err):
				return stream.ServerTimeoutHead, false
			}
			return stream.ServerGoneHead, false
		}
	default:
		st.writeRequestHead(ex, bodyLen)
		buf := netio.GetBuf()
		n, err := ex.SendBody(nil, false, buf)
		netio.PutBuf(buf)
		if err != nil {
			st.setClock(time.Time{})
			return sendFailed(err)
		}
		x.Sent(n)
	}
	st.setClock(time.Time{}) // ReadHead arms its first read with ex's clock, then waits
	if st.interim == nil {
		st.interim = st.relayInterim // kept with the pooled stream
	}
	st.interims = 0
	ex.Interim = st.interim
	if err := ex.ReadHead(); err != nil {
		release(false)
		switch {
		case st.clientGone():
			return stream.ClientReset, false
		case mayRetry && !hasBody && !netio.IsTimeout(err) && ex.HeadBytes() == 0 && !x.Killed():
			return 0, true
		}
		switch {
		case netio.IsTimeout(err):
			return stream.ServerTimeoutHead, false
		case errors.Is(err, http1.ErrBadResponse):
			return stream.BadResponse, false
		}
		return stream.ServerGoneHead, false
	}
	x.ResponseHead()
	status := ex.Status()
	x.Respond(status)
	rf := &st.rf
	rf.Reset()
	headBytes := int64(ex.HeadBytes()) // as an HTTP/1 client's log counts it
	ex.Fields(func(name, value []byte) {
		rf.Add(name, value)
	})
	st.resp = stream.Response{Status: status, Version: version11, Headers: rf}
	if deny := x.ResponseRules(&st.resp); deny != 0 {
		release(false) // its response is not read
		st.deny(deny)
		return stream.Served, false
	}
	h := st.w.Header()
	shown := st.writeHead(h, status)
	st.w.WriteHeader(shown)
	rb := ex.Body(r.Method == http.MethodHead)
	var sent int64
	var rerr, werr error
	if rb != nil {
		sent, rerr, werr = copyFlush(st.w, rb, ex.Ready)
	}
	if rerr == nil && werr == nil {
		for _, t := range ex.Trailers() {
			name, value, _ := bytes.Cut(t, []byte(":"))
			h.Add(http.TrailerPrefix+string(bytes.TrimSpace(name)), string(bytes.TrimSpace(value)))
		}
		if g := h.Get(http.TrailerPrefix + "Grpc-Status"); g != "" {
			x.GRPCStatus(g)
		}
	}
	// The response's end: one clock read for the connection's return to
	// the pool, the total time and the log line.
	tEnd := time.Now()
	ex.SetClock(tEnd)
	st.setClock(tEnd)
	release(rerr == nil && werr == nil)
	x.Relayed(shown, headBytes+sent)
	st.end(werr, rerr, false) // may panic: Free clears the core's clock
	st.setClock(time.Time{})
	return stream.Served, false
}

// writeRequestHead buffers the request head on ex (the body's framing after
// bodyLen, as Exchange.WriteHead).
func (st *h2stream) writeRequestHead(ex *http1.Exchange, bodyLen int64) {
	host := st.host()
	ex.WriteHead(sbytes(st.r.Method), st.x.URI(), func(w *bufio.Writer) {
		if host != "" {
			w.WriteString("host: ")
			w.WriteString(host)
			w.WriteString("\r\n")
		}
		st.requestFields(func(name, value string) {
			w.WriteString(name)
			w.WriteString(": ")
			w.WriteString(value)
			w.WriteString("\r\n")
		})
	}, bodyLen)
}

// watch makes a client's reset cut ex's connection (the own engine's
// streams; nil for others), until watchCut(nil).
func (st *h2stream) watch(ex *http1.Exchange) *cutter {
	w, ok := st.r.Context().(cutWatcher)
	if !ok {
		return nil
	}
	st.cut = w.streamCut(ex.Conn())
	w.watchCut(st.cut)
	return st.cut
}

// reuseConn returns an idle connection of st's server that st may use
// (http_reuse), or nil.
func reuseConn(st *h2stream) *http1.Exchange {
	return http1.ReuseConn(st.x.Upstream(), st.first, st.x.ConnKey())
}

// cutter cuts a server connection when the client resets its stream,
// unless the exchange ended first. It closes the connection (a read
// deadline would be re-armed by the exchange's next read).
type cutter struct {
	mu     sync.Mutex
	c      net.Conn
	done   bool
	wasCut bool
}

// cut is the AfterFunc of the stream's context.
func (c *cutter) cut() {
	c.mu.Lock()
	if !c.done {
		c.c.Close()
		c.wasCut = true
	}
	c.mu.Unlock()
}

// end stops the cutter; false when it cut the connection (which must then
// be closed, not pooled).
func (c *cutter) end() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.done = true
	return !c.wasCut
}

// end ends a stream whose response head was sent: the client went away
// (werr, or a reset), the server failed (rerr), or it was served.
func (st *h2stream) end(werr, rerr error, timedOut bool) {
	x := st.x
	switch {
	case (werr != nil || (rerr != nil && st.clientGone())) && (netio.IsTimeout(werr) || st.c.wtimeout.Load()):
		x.End(stream.ClientTimeoutData) // the client stopped reading (timeout_client)
	case werr != nil || (rerr != nil && st.clientGone()):
		x.End(stream.ClientAbortData)
	case rerr != nil && (timedOut || netio.IsTimeout(rerr)):
		x.End(stream.ServerTimeoutData)
		panic(http.ErrAbortHandler) // the client must not take it for whole
	case rerr != nil:
		x.End(stream.ServerAbortData)
		panic(http.ErrAbortHandler)
	default:
		x.End(stream.Served)
		st.c.g.Completed()
	}
}

// copyFlush relays a response body to the client, flushing whenever the
// next read may wait (ready, if non-nil, says it will not), so that
// streamed messages (gRPC) are not held back while a small response
// leaves in one write with its end. It returns the bytes sent, the error
// reading src and the error writing to w.
func copyFlush(w http.ResponseWriter, src io.Reader, ready func() bool) (n int64, rerr, werr error) {
	buf := netio.GetBuf()
	defer netio.PutBuf(buf)
	fl, _ := w.(http.Flusher)
	for {
		m, err := src.Read(buf)
		if m > 0 {
			if _, werr = w.Write(buf[:m]); werr != nil {
				return n, nil, werr
			}
			n += int64(m)
			if fl != nil && (ready == nil || !ready()) {
				fl.Flush()
			}
		}
		if err == io.EOF {
			return n, nil, nil
		}
		if err != nil {
			return n, err, nil
		}
	}
}

// toH2 sends the request as a stream to an HTTP/2 server: on cc when the
// caller dialed it, else on a pooled connection with a free stream, else
// on a new one.
func (st *h2stream) toH2(cc *xh2.ClientConn) {
	x, r := st.x, st.r
	up := x.Upstream()
	reused := false
	if cc == nil {
		var dial *h2mux.Dial
		if cc, dial = http1.ReserveOrDialH2(r.Context(), up, x.ConnKey(), st.first, &st.c.own); cc != nil {
			reused = true
		} else if ex := http1.ReuseByALPN(up, st.first, x.ConnKey()); ex != nil {
			st.toH1(ex)
			return
		} else if dial == nil && st.clientGone() {
			st.fail(stream.ClientReset) // reset while it waited for a dial
			return
		} else {
			c, o := x.Connect()
			if o != stream.Served {
				dial.Done(nil)
				st.fail(o)
				return
			}
			if up = x.Upstream(); !up.SpeaksH2(c) {
				dial.Done(nil)
				st.toH1(http1.NewExchange(c, up, x.ConnKey()))
				return
			}
			var err error
			cc, err = http1.AddH2(up, x.ConnKey(), c, &st.c.own)
			dial.Done(cc) // nil on error
			if err != nil {
				st.fail(stream.SendFailed)
				return
			}
		}
	}
	call := h2mux.NewCall(r.Context(), up.TimeoutServer).Pooled(up.H2)
	if st.h2trace == nil {
		st.h2trace = &httptrace.ClientTrace{Got1xxResponse: st.interimH2} // kept with the pooled stream
	}
	st.interims = 0
	call.Interim(st.h2trace)
	defer call.Close()
	x.Connected(http1.CallConn(call), reused)
	defer x.Unbind()
	host := st.host()
	h := make(http.Header, len(st.fields))
	vals := make([]string, 0, len(st.fields)) // one backing for the fields' values
	st.requestFields(func(name, value string) {
		k := headerKeyString(name)
		if old, ok := h[k]; ok {
			h[k] = append(old, value)
			return
		}
		vals = append(vals, value)
		h[k] = vals[len(vals)-1 : len(vals) : len(vals)]
	})
	req := &http.Request{Method: r.Method, URL: http1.TargetURL(x.URI(), host, up.TLS), Host: host, Header: h,
		Proto: "HTTP/2.0", ProtoMajor: 2, ContentLength: r.ContentLength, Trailer: r.Trailer}
	var body *bodyReader
	if st.view.HasBody {
		body = &bodyReader{r: r.Body}
		req.Body = call.BodyReader(body)
	} else {
		req.ContentLength = 0
	}
	x.Sent(0)
	resp, err := call.RoundTrip(cc, req)
	if err != nil {
		st.endBody(call, body)
		switch {
		case st.clientGone():
			st.fail(stream.ClientReset)
		case body != nil && body.err != nil && netio.IsTimeout(body.err):
			st.fail(stream.ClientTimeoutUpload)
		case body != nil && body.err != nil:
			st.fail(stream.ClientAbortUpload)
		case call.TimedOut():
			st.fail(stream.ServerTimeoutHead)
		case h2mux.IsServerReset(err):
			st.refuse()
		case h2mux.IsProtocolError(err):
			st.fail(stream.ServerProtocolError)
		default:
			st.fail(stream.ServerGoneHead)
		}
		return
	}
	x.ResponseHead()
	status := resp.StatusCode
	x.Respond(status)
	rf := &st.rf
	rf.Reset()
	// The head counted in its HTTP/1 form, as HAProxy counts a response
	// whatever either side speaks.
	headBytes := int64(h1StatusLine(status) + 2)
	for name, values := range resp.Header {
		if h2mux.HopByHop(name) {
			continue
		}
		for _, v := range values {
			headBytes += int64(len(name) + len(v) + 4)
			rf.Add(sbytes(name), sbytes(v))
		}
	}
	st.resp = stream.Response{Status: status, Version: version2, Headers: rf}
	if deny := x.ResponseRules(&st.resp); deny != 0 {
		st.endBody(call, body)
		st.deny(deny)
		return
	}
	wh := st.w.Header()
	shown := st.writeHead(wh, status)
	if g := resp.Header.Get("Grpc-Status"); g != "" {
		x.GRPCStatus(g) // a trailers-only answer
	}
	st.w.WriteHeader(shown)
	var ready func() bool
	if resp.ContentLength >= 0 {
		// The length is known: the read that reaches it is the last.
		ready = func() bool { return call.Received() >= resp.ContentLength }
	}
	sent, rerr, werr := copyFlush(st.w, call, ready)
	if rerr == nil && werr == nil {
		for name, values := range resp.Trailer {
			for _, v := range values {
				wh.Add(http.TrailerPrefix+name, v)
			}
		}
		if g := resp.Trailer.Get("Grpc-Status"); g != "" {
			x.GRPCStatus(g)
		}
	}
	st.endBody(call, body)
	x.Relayed(shown, headBytes+sent)
	st.end(werr, rerr, call.TimedOut())
}

// writeHead puts the response fields in rf into h, as the http_response
// rules' edits and cookie persistence leave them, and returns the status
// to send (set-status may change it).
func (st *h2stream) writeHead(h http.Header, status int) int {
	x, rf := st.x, &st.rf
	edits := x.ResponseEdits()
	if rw, ok := st.w.(*respWriter); ok && edits == nil && rw.bufs != nil {
		// The own engine, no rule edit: the fields go as they are, in
		// their order, without the header map (headcache.go).
		st.out.reset()
		for i := range rf.NumHeaders() {
			name, value := rf.HeaderAt(i)
			if !x.FilterResponseField(&st.out, name, value) {
				rw.addField(name, value)
			}
		}
		x.AppendResponseFields(&st.out)
		rw.addLines(st.out.b)
		rw.direct = true
		return status
	}
	shown := status
	if code, _, ok := edits.Status(); ok {
		shown = code
	}
	st.out.reset()
	// The values share one string and the fields one []string, and
	// common names are interned (headerKey): two allocations for the
	// head instead of two per field, one with the own engine (the
	// []string is its response writer's, pooled: respBufs). A Builder
	// never changes the bytes it holds, so a value sliced from it stays
	// as written: the values must not alias reused memory, as the HPACK
	// encoder keeps them in its dynamic table.
	size := 0
	for i := range rf.NumHeaders() {
		_, value := rf.HeaderAt(i)
		size += len(value)
	}
	var sb strings.Builder
	sb.Grow(size)
	var vals []string
	rb := st.respBufs()
	if rb != nil {
		vals = rb.vals[:0]
	} else {
		vals = make([]string, 0, rf.NumHeaders())
	}
	for i := range rf.NumHeaders() {
		name, value := rf.HeaderAt(i)
		if edits != nil && edits.Hidden(i) || x.FilterResponseField(&st.out, name, value) {
			continue
		}
		start := sb.Len()
		sb.Write(value)
		v := sb.String()[start:]
		k := headerKey(name)
		if old, ok := h[k]; ok {
			h[k] = append(old, v)
			continue
		}
		vals = append(vals, v)
		h[k] = vals[len(vals)-1 : len(vals) : len(vals)]
	}
	if rb != nil {
		rb.vals = vals
	}
	if edits != nil {
		for i := range edits.NumAdded() {
			if name, value, ok := edits.AddedAt(i); ok {
				h.Add(string(name), string(value))
			}
		}
	}
	x.AppendResponseFields(&st.out)
	st.out.addTo(h)
	// x/net/http2's Server adds a Date field, and a Content-Type sniffed
	// from the body, to a response without them: the server's response
	// goes as it came (HAProxy adds neither). A key without values is
	// sent as nothing.
	for _, k := range [...]string{"Date", "Content-Type"} {
		if _, ok := h[k]; !ok {
			h[k] = nil
		}
	}
	return shown
}

// deny answers a response an http_response rule denied with the deny
// page for code, as the HTTP/1 engine does.
func (st *h2stream) deny(code int) {
	page := http1.DenyResponse(code)
	st.x.Replied(code, int64(len(page)))
	writeH1Message(st.w, page)
	st.x.End(stream.ResponseDenied)
}

// endBody waits until the http2 package's request writer no longer reads
// the client's body (a read in flight is cut by closing the body: the
// server answered before its end), then accounts for the bytes sent.
func (st *h2stream) endBody(call *h2mux.Call, body *bodyReader) {
	call.EndBody(func() { st.r.Body.Close() })
	if body != nil {
		st.x.BodySent(body.n)
	}
}

// fieldBuf collects the fields cookie persistence writes as HTTP/1 text
// ("Name: value\r\n"), to add them to an HTTP/2 response.
type fieldBuf struct{ b []byte }

func (f *fieldBuf) reset()                            { f.b = f.b[:0] }
func (f *fieldBuf) Write(p []byte) (int, error)       { f.b = append(f.b, p...); return len(p), nil }
func (f *fieldBuf) WriteString(s string) (int, error) { f.b = append(f.b, s...); return len(s), nil }
func (f *fieldBuf) addTo(h http.Header) {
	rest := f.b
	for len(rest) > 0 {
		line, tail, _ := bytes.Cut(rest, []byte("\r\n"))
		rest = tail
		name, value, ok := bytes.Cut(line, []byte(":"))
		if ok {
			h.Add(string(bytes.TrimSpace(name)), string(bytes.TrimSpace(value)))
		}
	}
}

// writeH1Message writes a whole HTTP/1 response (a rule's answer) as an
// HTTP/2 response: its status, its end-to-end fields and its body.
func writeH1Message(w http.ResponseWriter, msg []byte) error {
	head, body, _ := bytes.Cut(msg, []byte("\r\n\r\n"))
	lines := bytes.Split(head, []byte("\r\n"))
	status := 200
	if parts := bytes.SplitN(lines[0], []byte(" "), 3); len(parts) >= 2 {
		if n, err := atoi(parts[1]); err == nil {
			status = n
		}
	}
	h := w.Header()
	for _, l := range lines[1:] {
		name, value, ok := bytes.Cut(l, []byte(":"))
		if !ok || h2mux.HopByHop(string(name)) {
			continue
		}
		h.Add(string(bytes.TrimSpace(name)), string(bytes.TrimSpace(value)))
	}
	w.WriteHeader(status)
	_, err := w.Write(body)
	return err
}

func atoi(b []byte) (int, error) {
	n := 0
	if len(b) == 0 {
		return 0, errors.New("empty")
	}
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, errors.New("not a number")
		}
		n = n*10 + int(c-'0')
	}
	return n, nil
}

// h1StatusLine returns the size of the HTTP/1.1 status line of status
// ("HTTP/1.1 200 OK\r\n"): a response to an HTTP/2 client is logged with
// its head's size in HTTP/1 form.
func h1StatusLine(status int) int {
	return len("HTTP/1.1 200 \r\n") + len(http.StatusText(status))
}

// interimWriter is a response writer that can send an interim (1xx) head
// before the final one (the own engine's respWriter).
type interimWriter interface {
	WriteInterim(status int, h http.Header) error
}

// sendInterim counts a server's interim head in its hrsp_1xx, 100
// Continue included, and passes it (103 Early Hints) on to the client
// before the final one, as HAProxy 2.6 does (h2mux.RelayInterim says
// which).
func (st *h2stream) sendInterim(status int, h http.Header) {
	st.x.Interim(status)
	if iw, ok := st.w.(interimWriter); ok && h2mux.RelayInterim(status, &st.interims) {
		iw.WriteInterim(status, h)
	}
}

// relayInterim is sendInterim for an HTTP/1 server's interim head
// (http1.Exchange.Interim: its fields are the end-to-end ones).
func (st *h2stream) relayInterim(status int, fields func(fn func(name, value []byte))) {
	h := http.Header{}
	fields(func(name, value []byte) {
		h[string(name)] = append(h[string(name)], string(value))
	})
	st.sendInterim(status, h)
}

// interimH2 is sendInterim for an HTTP/2 server's interim head, given by
// x/net's read loop while the stream waits in RoundTrip.
func (st *h2stream) interimH2(code int, h textproto.MIMEHeader) error {
	out := http.Header{}
	for k, vv := range h {
		if !h2mux.HopByHop(k) {
			out[k] = vv
		}
	}
	st.sendInterim(code, out)
	return nil
}
