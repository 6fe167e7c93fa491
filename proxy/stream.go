package proxy

import (
	"bytes"
	"errors"
	"net"
	"time"
	"unsafe"

	"github.com/fulcrum-proxy/fulcrum/conf"
	"github.com/fulcrum-proxy/fulcrum/proxy/acl"
	"github.com/fulcrum-proxy/fulcrum/proxy/http1"
	"github.com/fulcrum-proxy/fulcrum/proxy/lb"
	"github.com/fulcrum-proxy/fulcrum/proxy/queue"
	"github.com/fulcrum-proxy/fulcrum/proxy/stream"
	"github.com/fulcrum-proxy/fulcrum/proxy/tlsx"
)

// Stream is one request (or one TCP session) as the core sees it: the
// phases an engine drives in order, and the one place where the
// frontend's, backend's and server's counters move, the access-log line is
// written and the stick tables hear of the request's end (issue 17, point
// 1). An engine keeps one Stream per client connection and reuses it for
// each request (Begin resets it); every method is called from that
// connection's goroutine.
//
// The phases of a request, each a method:
//
//	Begin        first byte: req_tot on the frontend
//	HeadRead     head read whole: its bytes, the tracked entries' request
//	Route        frontend rules, local handlers, use_backend, backend
//	             rules, persistence (cookie, stick)
//	Take         pick a server, or wait in a queue for one
//	Connect      dial it (retries, redispatch), or Connected for a reused
//	             connection
//	Sent         the request went out
//	ResponseHead the server's head arrived (Rtime, stick store)
//	ResponseRules the http_response rules: edits, or a deny
//	Relayed      the response went out (bytes and status counters)
//	End          how it ended: the outcome's row moves the error counters,
//	             then the log line
//	Release      the server slot and the backend session are given back
//
// A request that ends early skips to End (and Release).
type Stream struct {
	fe  *Frontend
	cc  *clientConn
	ref *streamRef // where `show sess` finds its server side: the connection's, or an HTTP/2 stream's own
	// awaiting: ref.awaiting was set (an HTTP/1 request's response head
	// not in yet).
	awaiting bool
	be       *Backend // the backend that routed the request, nil before Route
	srv      *Server  // the server assigned (or, after a queue error, pinned)

	tcp       bool // a TCP session, not an HTTP request
	inBackend bool // a backend session was started (Take): Release ends it
	assigned  bool // a server slot was taken: Release gives it back
	local     bool // answered by a local handler (stats page)
	h1only    bool // the connection being dialed will speak HTTP/1.1 (ConnectH1)
	// h1c: the Stream of an HTTP/1 client connection; h1fe the frontend
	// whose h1 open streams count its request (h1stats.go), spliced the
	// response bytes copied socket to socket.
	h1c     bool
	h1fe    *Frontend
	spliced int64

	idleStart time.Time // when the connection became idle before it (Tt)
	t0        time.Time // the request's first byte (Ta)
	tHead     time.Time // its head was parsed (Tq)
	tSent     time.Time // it went out to the server (Tr)
	// clk is the time an engine's callback that never blocks set for
	// the phases it runs (SetClock), zero when they read the clock.
	clk       time.Time
	tq, tw    int64 // ms; -1 when the phase was not reached
	tc, tr    int64
	status    int   // the status sent to the client, -1 none
	srvStatus int   // the status the server sent (its hrsp_*), 0 none
	bytesIn   int64 // request bytes from the client (head, body)
	bytesOut  int64 // bytes sent to the client
	req       stream.Request

	lbreq  lb.Request  // the balancing view
	areq   acl.Request // the rules' view
	edits  acl.Edits   // the rules' header and path edits
	redits acl.Edits   // the http_response rules' edits (ResponseRules)
	resRan bool        // http_response rules ran on the response: redits apply
	trk    tracker     // the request's tracked entries (stick.go)
	ck     cookieState // cookie persistence (cookie.go)
	pin    *Server     // the server persistence pinned the request to
	ans    []byte      // scratch for a rule's answer (redirect)
	authed bool        // answered by an auth rule's 401 (a failed authentication)
	lg     logEntry    // the access log line's and histograms' accounting (log.go)
	grpc   string      // the response's grpc-status, for the log ("" none)
	h2ref  h2ref       // ref of an HTTP/2 stream (h2conn.go)
}

// errNoServer is returned when the backend has no usable server.
var errNoServer = errors.New("no server available")

// newStream binds x to client connection cc of fe, at the start of a
// connection (and again when a reload moves it to another frontend).
func (x *Stream) bind(fe *Frontend, cc *clientConn) {
	x.fe, x.cc, x.ref = fe, cc, &cc.stream
	x.trk.p = fe.p
	x.lbreq = lb.Request{Src: cc.src}
	x.areq = localAddr(cc)
}

// Begin starts a request whose first byte arrived at t0 (zero: none did,
// the connection timed out waiting for it) on a connection idle since
// idleStart: it counts the request on the frontend (req_tot, req_rate).
func (x *Stream) Begin(idleStart, t0 time.Time) { x.begin(idleStart, t0, true) }

// BeginRefused starts, at t, the record of an HTTP/2 request head
// refused before it became a request (stream.MalformedReset): HAProxy
// 2.6 logs it but counts no request on the frontend (measured); the
// tracked entries count it, as BadHead.
func (x *Stream) BeginRefused(t time.Time) {
	x.begin(t, t, false)
	x.trk.request()
}

func (x *Stream) begin(idleStart, t0 time.Time, count bool) {
	x.flushLog() // a line still waiting (log.go)
	x.lg.reset()
	x.be, x.srv, x.pin = nil, nil, nil
	x.inBackend, x.assigned, x.local, x.tcp = false, false, false, false
	x.idleStart, x.t0, x.tHead, x.tSent = idleStart, t0, time.Time{}, time.Time{}
	x.tq, x.tw, x.tc, x.tr = -1, 0, -1, -1
	x.status, x.bytesIn, x.bytesOut, x.srvStatus = -1, 0, 0, 0
	x.resRan, x.awaiting = false, false
	if x.ref != nil && (x.cc == nil || x.ref != &x.cc.stream) {
		x.ref.killed.Store(false) // an HTTP/2 stream's own ref, pooled with it
	}
	x.req = stream.Request{}
	x.grpc = ""
	now := t0
	if now.IsZero() {
		now = time.Now()
	}
	if x.fe.Conf.Mode == conf.ModeHTTP {
		if count {
			x.fe.Counters.request(now)
		}
		x.h1Begin()
	}
}

// beginTCP starts a TCP session accepted at start.
func (x *Stream) beginTCP(start time.Time) {
	x.Begin(start, start)
	x.tcp = true
}

// relayedTCP counts a finished TCP session's bytes: in from the client,
// out to it.
func (x *Stream) relayedTCP(in, out int64) {
	x.bytesIn, x.bytesOut = in, out
	for _, c := range [...]*Counters{&x.fe.Counters, &x.be.Counters, &x.srv.Counters} {
		c.Bin.Add(in)
		c.Bout.Add(out)
	}
}

// HeadRead records a request head of n bytes read whole, before it is
// parsed: its bytes, and the request on the entries tracked since the
// connection started (a bad request counts there too, as in HAProxy).
func (x *Stream) HeadRead(n int) {
	x.trk.request()
	x.fe.Counters.Bin.Add(int64(n))
	x.bytesIn = int64(n)
}

// BadHead records a request head that could not be read: it still counts
// as a request on the tracked entries.
func (x *Stream) BadHead() { x.trk.request() }

// Route decides where the request r, whose head was parsed at tHead, goes:
// the frontend's http_request rules, then the frontend's own handlers
// (stats page), then use_backend / default_backend, then the backend's
// http_request rules, then persistence. r must stay valid until End.
func (x *Stream) Route(r *stream.Request, tHead time.Time) stream.Route {
	x.req = *r
	x.tHead = tHead
	x.tq = tHead.Sub(x.t0).Milliseconds()
	x.fillRuleView()
	fe := x.fe
	if rule := fe.Conf.Rules.EvalHTTP(&x.areq); rule != nil {
		return x.answer(rule, nil)
	}
	if h := fe.localHandler(r.URI); h != nil {
		x.local = true
		return stream.Route{Kind: stream.RouteLocal, Handler: h}
	}
	be := fe.backend
	if i := fe.Conf.Rules.SelectBackend(&x.areq); i >= 0 {
		be = fe.useBackend[i]
	}
	if be == nil {
		return stream.Route{Kind: stream.RouteNoServer}
	}
	if be.Conf != nil {
		if rule := be.Conf.Rules.EvalHTTP(&x.areq); rule != nil {
			return x.answer(rule, be)
		}
	}
	x.be = be
	x.fillView()
	x.pin = x.persist(be)
	return stream.Route{Kind: stream.RouteBackend}
}

// fillRuleView points the rules' view at the request and resets the
// edits. The slices alias the engine's buffers.
func (x *Stream) fillRuleView() {
	r := &x.areq
	r.Src = x.cc.src
	r.TLS = x.cc.tls // edge.go
	r.SSL = x.cc.tls != nil
	r.HTTP = true
	r.Method = x.req.Method
	r.URI = x.req.URI
	r.Version = x.req.Version
	if len(r.Version) > 5 {
		r.Version = r.Version[5:] // "HTTP/1.1" -> "1.1"
	}
	r.Headers = x.req.Headers
	r.Tracker = &x.trk
	x.edits.Reset(x.req.Headers.NumHeaders())
	r.Edits = &x.edits
	r.Res = acl.Response{}
}

// fillView points the balancing view at the request. The strings alias
// the engine's buffers and are valid only until the request ends:
// algorithms must not keep them past Pick.
func (x *Stream) fillView() {
	uri := x.req.URI
	path, query := uri, []byte(nil)
	if i := bytes.IndexByte(uri, '?'); i >= 0 {
		path, query = uri[:i], uri[i+1:]
	}
	x.lbreq.Method = bstr(x.req.Method)
	x.lbreq.Path = bstr(path)
	x.lbreq.Query = bstr(query)
	x.lbreq.Host = bstr(x.req.Host)
	x.lbreq.Headers = x.req.Headers
}

// bstr views b as a string without copying; see fillView.
func bstr(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}

// answer is the route of a deny, return or redirect rule of the frontend
// (be nil) or of be. The connection stays open, as HAProxy 2.6 keeps it,
// unless the client asked to close, the request has a body (it is not
// read), the page closes (400, 408) or the proxy is stopping.
func (x *Stream) answer(rule *acl.Rule, be *Backend) stream.Route {
	x.be = be
	rt := stream.Route{Kind: stream.RouteAnswer, Status: rule.Status}
	switch rule.Action {
	case acl.ActDeny:
		rt.Answer = http1.DenyResponse(rule.Status)
		rt.Deny = true
	case acl.ActReturn:
		rt.Answer = rule.Response
	case acl.ActRedirect:
		x.ans = rule.AppendRedirect(x.ans[:0], &x.areq)
		rt.Answer = x.ans
	case acl.ActAuth:
		x.ans = http1.AppendAuthResponse(x.ans[:0], rule.Realm())
		rt.Answer = x.ans
		x.authed = true
	}
	closes := rt.Deny && (rule.Status == 400 || rule.Status == 408)
	rt.Keep = !closes && !x.req.HasBody && !x.req.ConnClose && !x.fe.stoppingForGood(x.cc)
	return rt
}

// Edits returns the header and path edits of the request's rules, which
// the engine applies to what it forwards.
func (x *Stream) Edits() *acl.Edits { return &x.edits }

// URI returns the target to send to the server: the request's, or the
// one a set-path rule made.
func (x *Stream) URI() []byte {
	if x.edits.URIChanged() {
		return x.areq.URI
	}
	return x.req.URI
}

// Take assigns a server to the request routed to a backend: the one
// persistence pinned it to, or the algorithm's pick, waiting in a queue
// while every slot is taken. wake and wait are how the engine watches its
// client while the request waits (queue.WaitFunc). It returns
// stream.Served when a server is assigned, else the outcome to End with.
func (x *Stream) Take(wake queue.Waker, wait queue.WaitFunc) stream.Outcome {
	be, now := x.be, x.tHead
	be.Counters.sessionStart(now)
	if !x.tcp {
		be.Counters.request(now)
	}
	x.inBackend = true
	x.lg.logQueue(be, x.pin) // srv_queue, backend_queue (log.go)
	srv, tw, err := be.take(&x.lbreq, x.pin, nil, now, wake, wait)
	x.lg.logQueued(tw)
	x.tw = max(tw, 0).Milliseconds()
	x.srv = srv // after a queue error: the pinned server, for the log
	switch {
	case err == nil:
		x.assigned = true
		return stream.Served
	case errors.Is(err, errQueueAbort):
		return stream.QueueAbort
	case errors.Is(err, errQueueTimeout):
		return stream.QueueTimeout
	case errors.Is(err, errQueueFull):
		return stream.QueueFull
	}
	x.tw = -1 // no queue reached: HAProxy's Tw -1 on its SC lines
	return stream.NoServer
}

// AbortOnClose implements http1.Stream: the routed backend's
// abortonclose.
func (x *Stream) AbortOnClose() bool { return x.be != nil && x.be.Conf.AbortOnClose }

// TryTake implements http1.Stream: Take's assignment when it needs no
// queue (a free slot on the pinned server with none waiting for it, or
// the algorithm's pick of a server with a free slot while no request
// waits in the backend's queue), for the epoll layer's reaper, which must
// not wait. Under a hashing algorithm that keeps keys on their servers
// (hash_preserve_affinity) it assigns nothing. False: nothing was counted
// or reserved, and Take is to be called.
func (x *Stream) TryTake() bool {
	be, now := x.be, x.tHead
	if be.affine != nil {
		return false
	}
	srv := be.tryTake(&x.lbreq, x.pin, now)
	if srv == nil {
		return false
	}
	be.Counters.sessionStart(now)
	if !x.tcp {
		be.Counters.request(now)
	}
	x.inBackend = true
	x.lg.logQueue(be, x.pin)
	x.lg.logQueued(-1)
	x.tw = 0
	x.srv = srv
	x.assigned = true
	return true
}

// TLS returns the client connection's TLS as the log and the fetches see
// it (version, cipher, SNI, ALPN, client certificate: HAProxy's %sslv and
// %sslc), nil on a plain connection.
func (x *Stream) TLS() *tlsx.ConnInfo { return x.cc.tls }

// Server returns the server assigned to the request, nil before Take.
func (x *Stream) Server() *Server { return x.srv }

// Upstream returns the assigned server as the HTTP/1 engine needs it.
func (x *Stream) Upstream() *http1.Upstream { return &x.srv.up }

// Connect dials the assigned server with the backend's retries and
// redispatch (which may move the request to another server: Server
// changes), and records the connect time. On failure it returns
// stream.ConnectFailed (econ is counted).
func (x *Stream) Connect() (net.Conn, stream.Outcome) {
	var prep func(*Server, net.Conn) (net.Conn, error)
	if x.be.prepConns.Load() {
		prep = x.prepare // servertls.go
	}
	if conv := serverConnOnEpoll(x.cc.c, x.srv); conv != nil { // netiolayer.go
		inner := prep
		prep = func(srv *Server, c net.Conn) (net.Conn, error) {
			if conv := serverConnOnEpoll(x.cc.c, srv); conv != nil {
				c = conv(c)
			}
			if inner == nil {
				return c, nil
			}
			pc, err := inner(srv, c)
			if err != nil {
				c.Close() // connectServer closes the connection it dialled, which c replaced
			}
			return pc, err
		}
	}
	srv, c, tc, err := connectServer(x.be, x.srv, &x.lbreq, x.pin != nil, prep, &x.lg)
	x.srv = srv
	if err != nil {
		// HAProxy's Tw on a connection that failed for good after a
		// redispatch (option redispatch: the stream went back to its
		// assignment) runs to the failure, the attempts and the
		// turn-around delays between them; without one it stays 0
		// (measured on loopback, retries 2 to a refusing server:
		// 0/2003/-1/-1/2003 with redispatch, 0/0/-1/-1/2003 without).
		if x.lg.reassigned {
			x.tw = x.now().Sub(x.tHead).Milliseconds()
		}
		return nil, stream.ConnectFailed
	}
	x.tc = tc
	return c, stream.Served
}

// ConnectH1 is Connect for a connection that will speak HTTP/1.1: a server
// that picks its protocol by ALPN (http1.Upstream.ByALPN) is offered its
// alpn without h2 (HAProxy's "ws auto" downgrade for WebSocket streams;
// the retry of an HTTP/1.1 exchange). A server with proto h2 is offered
// h2 all the same: the caller checks the connection (SpeaksH2).
func (x *Stream) ConnectH1() (net.Conn, stream.Outcome) {
	x.h1only = true
	c, o := x.Connect()
	x.h1only = false
	return c, o
}

// Killed reports whether an operator killed the request: its connection
// (HTTP/1, TCP), or its HTTP/2 stream's server side.
func (x *Stream) Killed() bool {
	return x.cc != nil && x.cc.killed.Load() || x.ref != nil && x.ref.killed.Load()
}

// Connected records that the request has server connection up (new from
// Connect, or reused: tc 0) and binds it for `show sess` and `shutdown
// session`: the server's request, the queue and connect times.
func (x *Stream) Connected(up net.Conn, reused bool) {
	if reused {
		x.tc = 0
		x.lg.logReused(x.srv, up) // log.go
	}
	be, srv := x.be, x.srv
	x.ref.set(be, srv, up)
	if !x.tcp {
		srv.Counters.request(x.tHead)
		if x.cc != nil && x.ref == &x.cc.stream {
			x.awaiting = true // an HTTP/1 request (an HTTP/2 stream has a ref of its own)
			x.ref.awaiting.Store(true)
		}
	}
	srv.Counters.queued(x.tw)
	be.Counters.queued(x.tw)
	srv.Counters.Ctime.Add(x.tc)
	be.Counters.Ctime.Add(x.tc)
}

// Rebind binds a replacement server connection (a retry after a stale
// pooled one failed): Connect first, then Rebind.
func (x *Stream) Rebind(up net.Conn) { x.ref.set(x.be, x.srv, up) }

// SetClock makes t the time this request's phases read until
// SetClock(time.Time{}), which makes them read the clock again: an
// engine's callback that never blocks (the HTTP/1 engine's inline
// request and response) reads the clock once for all it does, as
// HAProxy's phases read its loop's date (now_ms) rather than the clock.
// The engine clears it before the request goes to another goroutine.
func (x *Stream) SetClock(t time.Time) { x.clk = t }

// now returns the time set by SetClock, else the clock's.
func (x *Stream) now() time.Time {
	if x.clk.IsZero() {
		return time.Now()
	}
	return x.clk
}

// Unbind unbinds the server connection (it goes back to the pool, or is
// closed).
func (x *Stream) Unbind() { x.ref.clear() }

// Sent records that the request went out whole: its body's bytes (the
// head's were counted by HeadRead) on the frontend, and the whole request
// on the backend and the server.
func (x *Stream) Sent(body int64) {
	x.bytesIn += body
	x.srv.Counters.Bin.Add(x.bytesIn)
	x.be.Counters.Bin.Add(x.bytesIn)
	x.fe.Counters.Bin.Add(body)
	x.tSent = x.now()
	if x.srvH1() {
		x.be.H1.TotalStreams.Add(1)
		x.be.H1.BytesOut.Add(x.bytesIn)
	}
}

// BodySent counts request body bytes that went out after Sent: a body
// streamed to an HTTP/2 server while its response comes back.
func (x *Stream) BodySent(n int64) {
	if n <= 0 {
		return
	}
	x.bytesIn += n
	x.srv.Counters.Bin.Add(n)
	x.be.Counters.Bin.Add(n)
	x.fe.Counters.Bin.Add(n)
	if x.srvH1() {
		x.be.H1.BytesOut.Add(n)
	}
}

// GRPCStatus records the response's grpc-status (its trailers, or a
// trailers-only answer) for the access log.
func (x *Stream) GRPCStatus(code string) { x.grpc = code }

// ResponseHead records that the server's response head arrived: the
// response time, and the request's stick store rules get the server now,
// before the client has the response and can send its next request.
func (x *Stream) ResponseHead() { x.ResponseHeadAt(x.now()) }

// ResponseHeadAt is ResponseHead for a head that arrived at t.
func (x *Stream) ResponseHeadAt(t time.Time) {
	d := t.Sub(x.tSent)
	x.lg.logResponse(d) // log.go
	x.tr = d.Milliseconds()
	x.srv.Counters.Rtime.Add(x.tr)
	x.be.Counters.Rtime.Add(x.tr)
	x.stickStore(x.srv)
	if x.awaiting {
		x.awaiting = false
		x.ref.awaiting.Store(false)
	}
}

// Respond records the status of a valid response the engine is about to
// relay (passive health checks see it, and the server's hrsp_* count it
// whatever set-status makes of it, as HAProxy's), and lets cookie
// persistence write its fields (FilterResponseField,
// AppendResponseFields).
func (x *Stream) Respond(status int) {
	x.srvStatus = status
	x.srv.observeResponse(status)
	x.ck.served = x.srv
}

// ResponseRules runs the http_response rules on the response head r from
// the server: the backend's, then the frontend's, as HAProxy runs them.
// Their header edits and set-status go to ResponseEdits, which the engine
// applies as it writes the head. It returns 0 when the response goes on,
// or the status of the deny rule that refused it: dresp is then counted
// on the frontend, backend and server, the server's hrsp_* count its own
// status, and the engine answers the rule's error page and ends with
// stream.ResponseDenied. Called after Respond; r must stay valid until
// the head is written. Without rules it costs two loads.
func (x *Stream) ResponseRules(r *stream.Response) int {
	fe := x.fe.Conf.Rules.HTTPResponseRules()
	var be []*acl.Rule
	if x.be.Conf != nil {
		be = x.be.Conf.Rules.HTTPResponseRules()
	}
	if len(fe)+len(be) == 0 {
		return 0
	}
	version := r.Version
	if len(version) > 5 {
		version = version[5:] // "HTTP/1.1" -> "1.1"
	}
	x.redits.Reset(r.Headers.NumHeaders())
	x.areq.Res = acl.Response{Status: r.Status, Version: version, Headers: r.Headers, Edits: &x.redits}
	x.resRan = true
	for _, rs := range [...]*acl.Rules{x.beRules(), x.fe.Conf.Rules} {
		if rule := rs.EvalHTTPResponse(&x.areq); rule != nil {
			x.srv.Counters.response(x.srvStatus)
			x.tr = -1 // no response relayed: HAProxy logs Tr as -1
			return rule.Status
		}
	}
	return 0
}

// beRules returns the routed backend's rules (nil without any).
func (x *Stream) beRules() *acl.Rules {
	if x.be.Conf == nil {
		return nil
	}
	return x.be.Conf.Rules
}

// ResponseEdits returns the edits the http_response rules made to the
// response (header lines, set-status), nil when no rule ran.
func (x *Stream) ResponseEdits() *acl.Edits {
	if !x.resRan {
		return nil
	}
	return &x.redits
}

// FilterResponseField lets cookie persistence handle one response field:
// true when it wrote the field itself (rewritten) or dropped it.
func (x *Stream) FilterResponseField(w stream.FieldWriter, name, value []byte) bool {
	x.captureResponseField(name, value) // capture_response_header (log.go)
	return x.cookieResponseHeader(w, name, value)
}

// AppendResponseFields writes the fields persistence adds (Set-Cookie).
func (x *Stream) AppendResponseFields(w stream.FieldWriter) { x.cookieInsert(w) }

// Relayed counts a response of n bytes with status sent to the client
// from the server, before its last bytes are flushed (a client that has
// its response sees it in the counters). status is what the client got
// (after set-status); the server's hrsp_* count what it sent.
func (x *Stream) Relayed(status int, n int64) {
	x.status, x.bytesOut = status, n
	if x.srvH1() {
		x.be.H1.BytesIn.Add(n - x.spliced)
	}
	x.fe.Counters.Bout.Add(n)
	x.fe.Counters.response(status)
	x.be.Counters.Bout.Add(n)
	x.be.Counters.response(status)
	x.srv.Counters.Bout.Add(n)
	if x.srvStatus != 0 {
		status = x.srvStatus
	}
	x.srv.Counters.response(status)
}

// Tunneled counts the bytes a tunnel moved after its 101 (in: client to
// server, out: server to client) as the request's: the frontend's,
// backend's and server's bin and bout, the log's bytes and the tracked
// entries' byte counts, as HAProxy counts a WebSocket's bytes in its
// stream's.
func (x *Stream) Tunneled(in, out int64) {
	x.BodySent(in)
	if out <= 0 {
		return
	}
	x.bytesOut += out
	x.fe.Counters.Bout.Add(out)
	x.be.Counters.Bout.Add(out)
	x.srv.Counters.Bout.Add(out)
	if x.srvH1() {
		x.be.H1.BytesIn.Add(out)
	}
}

// Interim counts an interim (1xx) response head from the server in the
// server's hrsp_1xx, as HAProxy 2.6 counts every response head it reads
// there (its frontend and backend count the final status only).
func (x *Stream) Interim(status int) { x.srv.Counters.response(status) }

// Replied counts a response of n bytes with status that the proxy made
// (an error page, a rule's answer): on the frontend, and on the backend
// once one routed the request; its bytes on the server too once one was
// assigned (HAProxy's stream_process_counters adds a stream's bytes to
// its target server's, a 502 or 504 page included), but not its status
// (HAProxy counts a server's hrsp_* only for what it relays).
func (x *Stream) Replied(status int, n int64) {
	x.status, x.bytesOut = status, n
	x.fe.Counters.Bout.Add(n)
	x.fe.Counters.response(status)
	if x.be != nil {
		x.be.Counters.Bout.Add(n)
		x.be.Counters.response(status)
	}
	if x.srv != nil {
		x.srv.Counters.Bout.Add(n)
	}
}

// LocalDone ends a request a local handler answered (Replied counted
// its response); err is the error sending it. As HAProxy 2.6 logs its
// stats applet's requests (measured: 0/0/0/0/0 ... LR--): Tw, Tc and Tr
// are 0, and the flags LR (stream.Local).
func (x *Stream) LocalDone(err error) {
	x.tw, x.tc, x.tr = 0, 0, 0
	o := stream.Local
	if err != nil {
		o = stream.LocalClientGone
	}
	x.End(o)
}

// End ends the request with outcome o: the outcome's error counters (on
// the parts of the stream that exist), passive health checks, the total
// time of a served request, the stick tables, and the access-log line.
// The server slot stays taken until Release (a tunnel runs between).
func (x *Stream) End(o stream.Outcome) {
	if x.Killed() {
		o = o.AsKilled()
		// The phase is the request's, whichever side's failure the
		// kill showed first: KH before the response head, KD after.
		switch {
		case o == stream.KilledData && x.tr < 0:
			o = stream.Killed
		case o == stream.Killed && x.tr >= 0:
			o = stream.KilledData
		}
	}
	x.h1End()
	row := o.Row()
	fe, be, srv := x.fe, x.be, x.srv
	if row.LogStatus != 0 && x.status < 0 {
		// HAProxy's 400 for a connection closed before its request:
		// logged and counted in hrsp_4xx, though nothing is sent.
		x.status = row.LogStatus
		fe.Counters.response(row.LogStatus)
	}
	c := row.Counts
	add := func(bit stream.Counts, ctr *Counters, f func(*Counters)) {
		if c&bit != 0 && ctr != nil {
			f(ctr)
		}
	}
	var bec, srvc *Counters
	if be != nil {
		bec = &be.Counters
	}
	if srv != nil {
		srvc = &srv.Counters
	}
	add(stream.FeEreq, &fe.Counters, func(c *Counters) { c.Ereq.Add(1) })
	add(stream.FeDreq, &fe.Counters, func(c *Counters) { c.Dreq.Add(1) })
	add(stream.BeDreq, bec, func(c *Counters) { c.Dreq.Add(1) })
	add(stream.FeCliAbrt, &fe.Counters, func(c *Counters) { c.CliAbrt.Add(1) })
	add(stream.BeCliAbrt, bec, func(c *Counters) { c.CliAbrt.Add(1) })
	add(stream.SrvCliAbrt, srvc, func(c *Counters) { c.CliAbrt.Add(1) })
	add(stream.FeSrvAbrt, &fe.Counters, func(c *Counters) { c.SrvAbrt.Add(1) })
	add(stream.BeSrvAbrt, bec, func(c *Counters) { c.SrvAbrt.Add(1) })
	add(stream.SrvSrvAbrt, srvc, func(c *Counters) { c.SrvAbrt.Add(1) })
	add(stream.BeEresp, bec, func(c *Counters) { c.Eresp.Add(1) })
	add(stream.SrvEresp, srvc, func(c *Counters) { c.Eresp.Add(1) })
	add(stream.BeEcon, bec, func(c *Counters) { c.Econ.Add(1) })
	add(stream.SrvEcon, srvc, func(c *Counters) { c.Econ.Add(1) })
	add(stream.FeDresp, &fe.Counters, func(c *Counters) { c.Dresp.Add(1) })
	add(stream.BeDresp, bec, func(c *Counters) { c.Dresp.Add(1) })
	add(stream.SrvDresp, srvc, func(c *Counters) { c.Dresp.Add(1) })
	if row.Observe != 0 && srv != nil {
		srv.observeResponse(row.Observe)
	}
	// One clock read for the total time and the log line's, unless the
	// engine set the clock (SetClock).
	keep := !x.clk.IsZero()
	if !keep {
		x.clk = time.Now()
	}
	if row.Timed {
		ta := x.clk.Sub(x.t0).Milliseconds()
		srv.Counters.Ttime.Add(ta)
		be.Counters.Ttime.Add(ta)
	}
	x.logLine(o)
	if !keep {
		x.clk = time.Time{}
	}
}

// Release gives back what Take took: the server's session, the backend
// session and the server slot (handed to the next request waiting for it),
// after the request's access-log line is written. It may be called more
// than once.
func (x *Stream) Release() { x.release(false) }

// ReleaseLast is Release for a request after which the client connection
// closes: its frontend session ends with the line, before the slot goes to
// the next request, so that request's line no longer counts this
// connection (HAProxy's order: the stream and its connection are freed
// before the dequeued stream runs).
func (x *Stream) ReleaseLast() { x.release(true) }

func (x *Stream) release(last bool) {
	var freed *Server
	if x.assigned {
		freed = x.srv
		freed.Counters.sessionEnd()
		x.assigned = false
	}
	if x.inBackend {
		x.be.Counters.sessionEnd()
		x.inBackend = false
	}
	x.flushLog() // the access log line (log.go)
	if last && x.cc != nil {
		x.cc.endSession()
	}
	if freed != nil {
		x.be.release(freed)
	}
}

// logLine closes the access-log line of the request ended with o, after
// the stick tables heard of its end; Release writes it (log.go).
func (x *Stream) logLine(o stream.Outcome) {
	tw := x.tw
	x.tw = 0
	// An error of the client's in HAProxy's http_err_cnt (configuration
	// 7.x "http_err_cnt"): a deny whatever its status, a failed
	// authentication, else a 4xx answer; never a return or redirect
	// (measured beside HAProxy 2.6).
	var clientErr bool
	switch o {
	case stream.Denied:
		clientErr = true
	case stream.Answered:
		clientErr = x.authed
	default:
		clientErr = x.status >= 400 && x.status < 500
	}
	x.authed = false
	x.stickEnd(x.srv, clientErr, x.bytesOut, x.tr)
	x.closeLog(o, tw) // log.go: the line, the histograms
}
