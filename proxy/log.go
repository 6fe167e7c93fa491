package proxy

// The access log, as HAProxy's: one line per HTTP request or TCP session,
// written when the request is over (after its server slot and backend
// session were released, so that beconn and srv_conn count the others, as
// HAProxy's), to stderr through zerolog (JSON, or console with the fields
// in a fixed order: AccessLogFields) and to the frontend's log targets
// (syslog, see proxy/syslog) in its log_format (proxy/logformat: httplog,
// tcplog or a custom format).
//
// The Stream (stream.go) carries the request's accounting: its own fields,
// and a logEntry that its phases fill with the queue, connect and response
// durations at full resolution, the retries and the queue positions. End
// closes it (closeLog), Release writes it (flushLog). The same entry feeds
// the latency histograms (histogram.go), whether or not anything is
// logged.

import (
	"bytes"
	"net"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fulcrum-proxy/fulcrum/conf"
	"github.com/fulcrum-proxy/fulcrum/proxy/acl"
	"github.com/fulcrum-proxy/fulcrum/proxy/logformat"
	"github.com/fulcrum-proxy/fulcrum/proxy/stream"
	"github.com/fulcrum-proxy/fulcrum/proxy/syslog"
)

// Termination state flags, the two letters of HAProxy's log format
// (section 8.5 of its configuration manual): the first says who ended the
// session and why, the second in which phase.
const (
	flagsNormal = "--"
)

// AccessLogFields are the fields of a JSON or console access log line, in
// the order they are written (the console writer keeps this order); the
// ssl_ ones only on a TLS client connection.
var AccessLogFields = []string{
	"client_ip", "client_port", "accept_date", "frontend", "backend", "server", "status",
	"bytes_read", "bytes_uploaded", "Ti", "Tq", "Tw", "Tc", "Tr", "Ta", "Tt", "termination_state",
	"cookie_status", "actconn", "feconn", "beconn", "srv_conn", "retries", "srv_queue", "backend_queue",
	"request_headers", "response_headers", "request", "ssl_version", "ssl_cipher", "ssl_sni",
}

// logEntry is what a request's access log line and its histograms need
// beyond the Stream's own fields: the queue, connect and response times at
// full resolution (plus one nanosecond, so that the zero entry means "not
// reached": see dur), the retries and queue positions, the server
// connection's addresses, the captured response fields, and the line
// waiting for the request's release (pending).
type logEntry struct {
	q, c, r      time.Duration
	retries      int
	redispatched bool
	reassigned   bool  // a retry went back to the assignment (option redispatch), moved or not
	srvQueue     int64 // HAProxy's srv_queue and backend_queue (logQueued)
	bkQueue      int64
	inSrvQueue   bool // the request would wait in its server's queue
	serverAddr   netip.AddrPort
	backendSrc   netip.AddrPort
	respCaps     []string

	pending bool      // ended, the line waits for Release (flushLog)
	end     time.Time // when the request ended
	flags   string    // the outcome's termination state
	tw      int64     // Tw, ms
	badReq  bool      // the request was never parsed: <BADREQ>
}

// dur returns a duration stored plus one nanosecond, -1 when not set.
func dur(d time.Duration) time.Duration { return d - 1 }

// reset clears the entry for the next request, keeping its buffers.
func (e *logEntry) reset() {
	*e = logEntry{respCaps: e.respCaps[:0]}
}

// logQueue records the queue a request may join (pin's, or be's when pin
// is nil) and the requests waiting there. Called before Backend.take.
func (e *logEntry) logQueue(be *Backend, pin *Server) {
	e.srvQueue, e.bkQueue = 0, 0
	e.inSrvQueue = pin != nil
	if pin != nil {
		e.srvQueue = int64(be.queue.Len(pin.ID - 1))
	} else {
		e.bkQueue = int64(be.queue.Len(-1))
	}
}

// logQueued records the time waited in the queue (tw < 0: not queued).
// HAProxy's srv_queue and backend_queue count the requests that left the
// queue while this one waited, itself included: the ones ahead of it
// (FIFO) plus one; 0 for a request that did not wait.
func (e *logEntry) logQueued(tw time.Duration) {
	switch {
	case tw < 0:
		e.srvQueue, e.bkQueue, tw = 0, 0, 0
	case e.inSrvQueue:
		e.srvQueue++
	default:
		e.bkQueue++
	}
	e.q = tw + 1
}

// logRetry counts one connection retry; redispatch says it moved to
// another server (HAProxy's "+" before the retries).
func (e *logEntry) logRetry(redispatch, reassigned bool) {
	if e == nil {
		return
	}
	e.retries++
	e.redispatched = e.redispatched || redispatch
	e.reassigned = e.reassigned || reassigned
}

// logConnected records a successful connection to srv and how long it
// took (a connection attempt).
func (e *logEntry) logConnected(srv *Server, c net.Conn, d time.Duration) {
	if e == nil {
		return
	}
	srv.Counters.obs.connects.Add(1)
	srv.Backend.Counters.obs.connects.Add(1)
	e.connected(c, d)
}

// logReused records that the request went to srv over a kept connection
// (Tc 0).
func (e *logEntry) logReused(srv *Server, c net.Conn) {
	srv.Counters.obs.reuses.Add(1)
	srv.Backend.Counters.obs.reuses.Add(1)
	e.connected(c, 0)
}

// connected records the server connection a request uses and its connect
// time.
func (e *logEntry) connected(c net.Conn, d time.Duration) {
	e.c = d + 1
	if ap, ok := c.(addrPorter); ok {
		if local, remote := ap.AddrPorts(); local.IsValid() && remote.IsValid() {
			e.backendSrc, e.serverAddr = local, remote
			return
		}
	}
	if a, ok := c.RemoteAddr().(*net.TCPAddr); ok {
		e.serverAddr = a.AddrPort()
	}
	if a, ok := c.LocalAddr().(*net.TCPAddr); ok {
		e.backendSrc = a.AddrPort()
	}
}

// addrPorter is a connection that keeps its addresses as netip values
// (the epoll layer's: netio/epoll.Conn.AddrPorts).
type addrPorter interface {
	AddrPorts() (local, remote netip.AddrPort)
}

// logResponse records the server's response time (request sent to head
// received).
func (e *logEntry) logResponse(d time.Duration) { e.r = d + 1 }

// recordTimings adds the request's times to the histograms of the
// frontend, the backend and the server: the queue and connect times where
// they were reached, the response time when the server answered, the
// total (Ta; Tt in tcp mode) always; and keeps the longest.
func (x *Stream) recordTimings(total time.Duration) {
	objs := [3]*Counters{&x.fe.Counters}
	if x.be != nil {
		objs[1] = &x.be.Counters
	}
	if x.srv != nil {
		objs[2] = &x.srv.Counters
	}
	e := &x.lg
	for _, c := range objs {
		if c == nil {
			continue
		}
		t := &c.Timings
		t[TimingQueue].Record(dur(e.q))
		t[TimingConnect].Record(dur(e.c))
		t[TimingResponse].Record(dur(e.r))
		t[TimingTotal].Record(total)
		storeMax(&c.obs.ctimeMax, max(dur(e.c), 0).Milliseconds())
		storeMax(&c.obs.rtimeMax, max(dur(e.r), 0).Milliseconds())
		storeMax(&c.obs.ttimeMax, max(total, 0).Milliseconds())
	}
}

// frontendLog is a frontend's access-log settings and targets.
type frontendLog struct {
	format      *logformat.Format
	samples     []*acl.Expr
	senders     []*syslog.Sender
	capReq      []conf.Capture
	capResp     []conf.Capture
	dontLogNull bool
	// dontLogNormal and separateErrors: the frontend's dontlog_normal and
	// log_separate_errors.
	dontLogNormal, separateErrors bool
	lines                         atomic.Int64 // %lc
}

// observers are a proxy's log targets, its counters for the log lines and
// its captured protocol errors (errcapture.go).
type observers struct {
	senders []*syslog.Sender // every distinct target, started with the proxy
	// events are the [[global.log]] targets' senders: where server and
	// backend state changes go (LogEvent).
	events   []*syslog.Sender
	requests atomic.Int64 // %rt
	hostname string
	pid      int
	errs     errorStore
	idle     idleMeter // Idle_pct (idle.go)
	bytesOut rateMeter // BytesOutRate (idle.go)
	// connRate counts the connections every frontend accepted, and
	// connRateMax its peak: show info's ConnRate peak (MaxConnRate),
	// HAProxy's global cps_max, kept per accept as HAProxy's.
	connRate    FreqCtr
	connRateMax atomic.Int64
}

// connAccepted counts a client connection accepted at now.
func (o *observers) connAccepted(now time.Time) {
	storeMax(&o.connRateMax, o.connRate.Add(now, 1))
}

// buildLogs sets up every frontend's access log from the configuration:
// one sender per distinct target, shared by the frontends that use it.
func (p *Proxy) buildLogs() {
	host, _ := os.Hostname()
	if i := strings.IndexByte(host, '.'); i > 0 {
		host = host[:i]
	}
	p.obs.hostname, p.obs.pid = host, os.Getpid()
	hdr := syslog.Header{Tag: p.Conf.Global.LogTag, Pid: p.obs.pid}
	if hdr.Tag == "" {
		hdr.Tag = "fulcrum"
	}
	byTarget := map[syslog.Target]*syslog.Sender{}
	sender := func(t syslog.Target) *syslog.Sender {
		s := byTarget[t]
		if s == nil {
			s = syslog.NewSender(t, hdr)
			byTarget[t] = s
			p.obs.senders = append(p.obs.senders, s)
		}
		return s
	}
	for _, t := range p.Conf.Global.Log {
		p.obs.events = append(p.obs.events, sender(t.Target))
	}
	for _, fe := range p.Frontends {
		fc := fe.Conf
		fl := &frontendLog{format: fc.LogFormat, samples: fc.LogSamples, capReq: fc.CaptureRequest,
			capResp: fc.CaptureResponse, dontLogNull: fc.DontLogNull,
			dontLogNormal: fc.DontLogNormal, separateErrors: fc.LogSeparateErrors}
		if fl.format == nil {
			name := "httplog"
			if fc.Mode == conf.ModeTCP {
				name = "tcplog"
			}
			text, _ := logformat.Named(name)
			fl.format, _ = logformat.Parse(text, nil)
		}
		for _, t := range fc.Log {
			fl.senders = append(fl.senders, sender(t.Target))
		}
		fe.log = fl
	}
}

// LogEvent sends msg, an event of the proxy's servers or backends
// ("Server web/s1 is DOWN, ..."), at syslog severity level (0 emerg to 7
// debug) to the [[global.log]] targets: HAProxy sends these to a
// backend's log targets, which its usual `log global` makes the global
// ones. It never blocks.
func (p *Proxy) LogEvent(level int, msg string) {
	if len(p.obs.events) == 0 {
		return
	}
	now := time.Now()
	for _, s := range p.obs.events {
		s.Send(level, now, []byte(msg))
	}
}

// LogEvent sends msg to its proxy's [[global.log]] targets
// (Proxy.LogEvent): what a server without checks, whose state only the
// Runtime API changes, has of the checker's event sink.
func (b *Backend) LogEvent(level int, msg string) {
	if b.event != nil {
		b.event(level, msg)
	}
}

// startLogs starts the log senders; stopLogs sends what they hold and
// stops them (after the last request was logged).
func (p *Proxy) startLogs() {
	for _, s := range p.obs.senders {
		s.Start()
	}
}

func (p *Proxy) stopLogs() {
	for _, s := range p.obs.senders {
		s.Close()
	}
}

// logWanted reports whether anything will be written for an access log
// line of fe: info is on for stderr, or fe has log targets.
func (fe *Frontend) logWanted() bool {
	return len(fe.log.senders) > 0 || fe.p.log.Info() != nil
}

// closeLog is End's last step: it records the request's times in the
// histograms and readies its access log line, written by flushLog once
// the request has released its server slot and backend session (at once
// when it took none), so that beconn and srv_conn count the others only,
// as HAProxy's. tw is the request's Tw, ms.
func (x *Stream) closeLog(o stream.Outcome, tw int64) {
	now := x.now()
	total := time.Duration(-1)
	if !x.t0.IsZero() {
		total = now.Sub(x.t0)
	}
	if x.tcp {
		total = now.Sub(x.idleStart)
	}
	x.recordTimings(total)
	if x.local || x.be == nil && o == stream.Answered {
		// The stats page, or a return, redirect or auth rule of the
		// frontend, as HAProxy's intercepted_req (not a deny).
		x.fe.Counters.obs.intercepted.Add(1)
	}
	e := &x.lg
	// Null (option dontlognull): nothing received, on a TCP session, an
	// HTTP connection closed before its first byte (no t0; HAProxy logs
	// that one "<BADREQ>" otherwise, and "\r\n" then a close even under
	// dontlognull: measured), or one that timed out waiting for it.
	null := (x.tcp && x.bytesIn == 0) || (o == stream.ClientGoneHead && x.t0.IsZero()) || o == stream.IdleTimeout
	if !x.fe.logWanted() || (x.fe.log.dontLogNull && null) || o.Row().Silent {
		return
	}
	e.pending, e.end, e.flags, e.tw = true, now, o.Row().Flags, tw
	e.badReq = !x.tcp && len(x.req.Method) == 0
	if o == stream.ClientGoneHead {
		x.t0 = time.Time{} // no request, no Ta (as HAProxy's CR lines)
	}
	if !x.inBackend && !x.assigned {
		x.flushLog() // nothing to release
	}
}

// captureResponseField keeps the response fields the frontend captures
// (capture_response_header), as the engine hands them over.
func (x *Stream) captureResponseField(name, value []byte) {
	caps := x.fe.log.capResp
	if len(caps) == 0 {
		return
	}
	e := &x.lg
	if len(e.respCaps) != len(caps) {
		e.respCaps = append(e.respCaps[:0], make([]string, len(caps))...)
	}
	for i, c := range caps {
		if e.respCaps[i] == "" && strings.EqualFold(bstr(name), c.Name) {
			e.respCaps[i] = string(value[:min(len(value), c.Len)])
		}
	}
}

// flushLog writes the pending access log line of the stream, if any:
// from Release, from closeLog for a request that took no server, and
// from Begin should a line still wait.
func (x *Stream) flushLog() {
	e := &x.lg
	if !e.pending {
		return
	}
	e.pending = false
	x.fe.writeLog(x)
}

// logURI is the request's URI as the log targets' lines (HAProxy's
// log-format: %r, %HU) show it: an HTTP/2 request's in absolute form,
// scheme and :authority before its path ("GET https://example.com/a
// HTTP/2.0"), as HAProxy 2.6 logs them; an HTTP/1 request's as received.
// The stderr line's "request" keeps the path.
func (x *Stream) logURI() []byte {
	u := x.req.URI
	if !bytes.Equal(x.req.Version, h2Version) || len(u) == 0 || u[0] != '/' || len(x.req.Host) == 0 {
		return u
	}
	scheme := "http://"
	if x.cc.tls != nil {
		scheme = "https://"
	}
	out := make([]byte, 0, len(scheme)+len(x.req.Host)+len(u))
	return append(append(append(out, scheme...), x.req.Host...), u...)
}

// h2Version is an HTTP/2 request's version.
var h2Version = []byte("HTTP/2.0")

// logError reports whether x's line is a failed request's, as HAProxy's
// strm_log decides it for option dontlog-normal and log-separate-errors:
// redispatched or retried, a termination cause other than none or local
// (termination_state's first character not '-' or 'L'), or in mode http
// a 5xx status.
func (x *Stream) logError() bool {
	e := &x.lg
	cause := byte('-')
	if len(e.flags) > 0 {
		cause = e.flags[0]
	}
	return e.redispatched || e.retries > 0 || (cause != '-' && cause != 'L') || (!x.tcp && x.status >= 500)
}

// writeLog writes x's line: the JSON or console line on stderr, the
// log_format line to the frontend's targets.
func (fe *Frontend) writeLog(x *Stream) {
	e := &x.lg
	fl := fe.log
	failed := (fl.dontLogNormal || fl.separateErrors) && x.logError() // only they ask
	if fl.dontLogNormal && !failed {
		return
	}
	lc := fl.lines.Add(1) - 1
	rc := fe.p.obs.requests.Add(1) - 1
	var act int64 // HAProxy's actconn: the process's client connections
	for _, f := range fe.p.Frontends {
		act += f.Counters.Scur.Load()
	}
	fec := fe.Counters.Scur.Load()
	var bec, svc int64
	backend, server := fe.Name, "<NOSRV>" // no backend: HAProxy names the frontend
	if x.be != nil {
		bec = x.be.Counters.Scur.Load()
		backend = x.be.Name
	} else if x.local {
		server = "<STATS>" // answered by the frontend itself, as HAProxy's stats page
	}
	if x.srv != nil {
		svc = x.srv.Counters.Scur.Load()
		server = x.srv.Name
	}
	tw := int64(-1)
	if x.be != nil || x.local {
		tw = e.tw // a local answer's is 0 (LocalDone)
	}
	status, bytesOut, bytesIn := x.status, x.bytesOut, x.bytesIn
	if e.badReq {
		// HAProxy logs no bytes for a request it could not parse (its
		// error page is sent by the HTTP layer, not the stream).
		bytesOut, bytesIn = 0, 0
	}
	start := x.idleStart
	if start.IsZero() && x.cc != nil {
		start = x.cc.acceptTime() // a first request begun without its wait's start
	}
	ta, tt := msBetween(x.t0, e.end), msBetween(start, e.end)
	if e.flags == "CR" {
		ta = tt // HAProxy's CR lines: -1/-1/-1/-1/<since the accept> (measured)
	}
	ti := msBetween(x.idleStart, x.t0)
	var reqCaps []string
	if len(fl.capReq) > 0 && !e.badReq && !x.tcp {
		reqCaps = make([]string, len(fl.capReq))
		for i, c := range fl.capReq {
			if v, ok := firstField(x.req.Headers, c.Name); ok {
				reqCaps[i] = string(v[:min(len(v), c.Len)])
			}
		}
	}
	respCaps := e.respCaps
	if len(fl.capResp) > 0 && len(respCaps) != len(fl.capResp) {
		respCaps = make([]string, len(fl.capResp))
	}
	cookie := x.ck.logStatus(x.be)
	request := "<BADREQ>"
	if !e.badReq && !x.tcp {
		request = string(x.req.Method) + " " + string(x.req.URI) + " " + string(x.req.Version)
	}
	if ev := fe.p.log.Info(); ev != nil {
		ev.Str("client_ip", x.cc.src.Addr().String()).
			Uint16("client_port", x.cc.src.Port()).
			Str("accept_date", x.cc.acceptTime().Format("2006-01-02T15:04:05.000Z07:00")).
			Str("frontend", fe.Name).
			Str("backend", backend).
			Str("server", server)
		if !x.tcp {
			ev.Int("status", status)
		}
		ev.Int64("bytes_read", bytesOut).Int64("bytes_uploaded", bytesIn)
		if !x.tcp {
			ev.Int64("Ti", ti).Int64("Tq", x.tq)
		}
		ev.Int64("Tw", tw).Int64("Tc", x.tc)
		if !x.tcp {
			ev.Int64("Tr", x.tr).Int64("Ta", ta)
		}
		ev.Int64("Tt", tt).Str("termination_state", e.flags)
		if !x.tcp {
			ev.Str("cookie_status", string(cookie[:]))
		}
		ev.Int64("actconn", act).Int64("feconn", fec).Int64("beconn", bec).Int64("srv_conn", svc)
		if e.redispatched {
			ev.Str("retries", "+"+strconv.Itoa(e.retries))
		} else {
			ev.Int("retries", e.retries)
		}
		ev.Int64("srv_queue", e.srvQueue).Int64("backend_queue", e.bkQueue)
		if !x.tcp {
			if len(fl.capReq) > 0 && !e.badReq {
				ev.Strs("request_headers", reqCaps)
			}
			if len(fl.capResp) > 0 && !e.badReq {
				ev.Strs("response_headers", respCaps)
			}
			ev.Str("request", request)
		}
		if t := x.cc.tls; t != nil { // HAProxy's %sslv, %sslc and the SNI
			ev.Str("ssl_version", t.Protocol).Str("ssl_cipher", t.Cipher).Str("ssl_sni", t.SNI)
		}
		if x.grpc != "" { // the response's grpc-status (HTTP/2 to gRPC servers)
			ev.Str("grpc_status", x.grpc)
		}
		ev.Msg("")
	}
	if len(fl.senders) == 0 {
		return
	}
	le := logformat.Entry{
		HTTP: !x.tcp, Client: x.cc.src, ServerAddr: e.serverAddr, BackendSource: e.backendSrc,
		Accept: x.cc.acceptTime(), Request: x.t0, Frontend: fe.Name, Backend: backend, Server: server,
		Ti: max(ti, 0), TR: x.tq, Tw: tw, Tc: x.tc, Tr: x.tr, Ta: ta, Tt: tt,
		Status: status, BytesRead: bytesOut, BytesUploaded: bytesIn,
		ActConn: act, FeConn: fec, BeConn: bec, SrvConn: svc, Retries: e.retries, Redispatched: e.redispatched,
		SrvQueue: e.srvQueue, BackendQueue: e.bkQueue, BadRequest: e.badReq,
		Hostname: fe.p.obs.hostname, Pid: fe.p.obs.pid, LogCounter: lc, ReqCounter: rc,
	}
	if le.Request.IsZero() {
		le.Request = x.idleStart
	}
	if t := x.cc.tls; t != nil {
		le.SSLVersion, le.SSLCipher = t.Protocol, t.Cipher
	}
	if a, ok := x.cc.c.LocalAddr().(*net.TCPAddr); ok {
		le.FrontendAddr = a.AddrPort()
	}
	copy(le.Termination[:2], e.flags)
	le.Termination[2], le.Termination[3] = cookie[0], cookie[1]
	if x.tcp {
		le.Ti, le.Ta = 0, tt
	} else if !e.badReq {
		le.Method, le.URI, le.Version = x.req.Method, x.logURI(), x.req.Version
		if len(fl.capReq) > 0 {
			le.ReqHeaders = reqCaps
		}
		if len(fl.capResp) > 0 {
			le.RespHeaders = respCaps
		}
	}
	if len(fl.samples) > 0 {
		v := &x.areq
		if e.badReq || x.tcp {
			v = &acl.Request{Src: x.cc.src, Dst: le.FrontendAddr}
		}
		le.Samples = func(i int, dst []byte) ([]byte, bool) { return appendSample(dst, fl.samples[i], v) }
	}
	bp := logBufs.Get().(*[]byte)
	line := fl.format.Append((*bp)[:0], &le)
	now := time.Now()
	level := syslog.LevelInfo
	if failed && fl.separateErrors {
		level = syslog.LevelErr
	}
	for _, s := range fl.senders {
		s.Send(level, now, line)
	}
	*bp = line
	logBufs.Put(bp)
}

var logBufs = sync.Pool{New: func() any { b := make([]byte, 0, 512); return &b }}

// appendSample appends the value of a %[expr] fetch for the request view v.
func appendSample(dst []byte, e *acl.Expr, v *acl.Request) ([]byte, bool) {
	val, ok := e.Fetch(v)
	if !ok {
		return dst, false
	}
	switch val.Kind {
	case acl.ValueIP:
		return val.IP.AppendTo(dst), true
	case acl.ValueInt:
		return strconv.AppendInt(dst, val.Int, 10), true
	}
	return append(dst, val.Str...), true
}

// firstField returns the value of the first field of h named name.
func firstField(h stream.Headers, name string) ([]byte, bool) {
	if h == nil {
		return nil, false
	}
	for i := range h.NumHeaders() {
		if n, v := h.HeaderAt(i); strings.EqualFold(bstr(n), name) {
			return v, true
		}
	}
	return nil, false
}

// logStatus returns the two cookie characters of HAProxy's termination
// state for a request routed to be: the persistence cookie as the request
// had it, and what the response did with it; "--" without cookie
// persistence (persist resets ck for each request routed to a backend).
func (ck *cookieState) logStatus(be *Backend) [2]byte {
	if be == nil || ck.cp == nil {
		return [2]byte{'-', '-'}
	}
	req, resp := ck.reqStatus, ck.respStatus
	if req == 0 {
		req = 'N'
	}
	if resp == 0 {
		resp = 'N'
	}
	return [2]byte{req, resp}
}

// msBetween returns whole milliseconds from t0 to t1, -1 when either is
// zero.
func msBetween(t0, t1 time.Time) int64 {
	if t0.IsZero() || t1.IsZero() {
		return -1
	}
	return t1.Sub(t0).Milliseconds()
}
