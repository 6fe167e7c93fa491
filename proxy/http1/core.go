package http1

import (
	"crypto/tls"
	"net"
	"net/netip"
	"sync/atomic"
	"time"

	"github.com/fulcrum-proxy/fulcrum/proxy/acl"
	"github.com/fulcrum-proxy/fulcrum/proxy/h2mux"
	"github.com/fulcrum-proxy/fulcrum/proxy/netio"
	"github.com/fulcrum-proxy/fulcrum/proxy/queue"
	"github.com/fulcrum-proxy/fulcrum/proxy/stream"
)

// Client is the core's side of one client connection in http mode, as the
// engine sees it. Its methods are called from the connection's goroutine.
type Client interface {
	// Conn is the client connection; Deadlines its armed deadlines.
	Conn() net.Conn
	Deadlines() *netio.Deadlines
	// Src is the client's address.
	Src() netip.AddrPort
	// Settings are those of the frontend that owns the connection now. A
	// reload may move the connection to another frontend: Active and Idle
	// say when, and the settings then change.
	Settings() *Settings
	// Active marks the connection busy with a request whose first byte
	// arrived; ok is false when the proxy stopped it. moved says the
	// connection now belongs to another frontend (a reload, while idle).
	Active() (ok, moved bool)
	// Idle marks the connection waiting for its next request after one
	// that left it usable; ok is false when it must close (the proxy is
	// stopping and it cannot move to a new configuration).
	Idle() (ok, moved bool)
	// StoppingForGood reports whether the connection cannot outlive the
	// proxy's stop: the response must then say Connection: close.
	StoppingForGood() bool
	// Stream is the core's side of the connection's current request: one
	// object, reset by Begin for each request.
	Stream() Stream
	// Done is called once, when the connection closes.
	Done()
}

// Settings are the frontend settings the engine reads per request.
type Settings struct {
	TimeoutClient      time.Duration // inactivity, both ways
	TimeoutHTTPRequest time.Duration // to receive a request head; keep-alive idle
	// TimeoutKeepAlive is the wait for a kept-alive connection's next
	// request, up to its first byte; 0 = TimeoutHTTPRequest.
	TimeoutKeepAlive time.Duration
	// ForwardFor: an X-Forwarded-For field with the client's address
	// (Client.Src) is appended to forwarded requests. Settings hold
	// nothing of one connection: a frontend's connections share them.
	ForwardFor bool
	// MaxHdr is tune_http_maxhdr (0: HAProxy's default, 101).
	MaxHdr int
	// IdleKeep is how long a connection waiting for a request keeps its
	// read and write buffers (2 x netio.BufSize); past it they go back to
	// their pools until the next request's first bytes arrive (HAProxy
	// releases an idle connection's buffers at once). 0: at once.
	IdleKeep time.Duration
	// Inline (nil: off) lets a request without a body wait for its
	// response with no goroutine when both its connections are the epoll
	// layer's plaintext ones, and the response be finished by the
	// layer's event callbacks when it comes whole (inline.go; the client
	// must be a Parker); it counts what became of them.
	Inline *InlineCounters
	// Relay relays a tunnel (after a 101) as netio.Relay does, which it
	// is when nil: the proxy gives the epoll layer's (epoll.Pair).
	Relay func(client, server net.Conn, clientIdle, serverIdle time.Duration) (in, out netio.CopyEnd)
}

// Stream is the core's side of one request: its phases, in the order the
// engine calls them (see proxy.Stream for what each does). A request that
// ends early goes straight to End; Release is always called last.
type Stream interface {
	Begin(idleStart, t0 time.Time)
	HeadRead(n int)
	BadHead()
	// BeginRefused starts, in place of Begin, the record of an HTTP/2
	// request head refused before it became a request (no request
	// counted).
	BeginRefused(t time.Time)
	Route(r *stream.Request, tHead time.Time) stream.Route
	Take(wake queue.Waker, wait queue.WaitFunc) stream.Outcome
	// AbortOnClose reports whether the routed backend drops a queued
	// request whose client left (HAProxy's option abortonclose): only
	// then does the engine watch its client while it waits.
	AbortOnClose() bool
	// Killed reports whether an operator killed the request (shutdown
	// session, shutdown sessions server): its server connection's close
	// is then no stale connection to retry on another.
	Killed() bool
	// TryTake is Take when a server has a free slot for the request now
	// (no queue, no wait): true when it assigned one; false when it did
	// nothing, and Take is to be called.
	TryTake() bool
	// Upstream is the assigned server as the engine needs it (after Take
	// and Connect, which may change it).
	Upstream() *Upstream
	// ConnKey is what, besides the server, a connection is made for (the
	// TLS server name it sent): an idle connection serves only requests
	// with the same key.
	ConnKey() string
	Connect() (net.Conn, stream.Outcome)
	// ConnectH1 is Connect for a connection that will speak HTTP/1.1: a
	// server that picks its protocol by ALPN (Upstream.ByALPN) is not
	// offered h2 (the retry of an HTTP/1.1 exchange, a WebSocket
	// upgrade, as HAProxy's "ws auto").
	ConnectH1() (net.Conn, stream.Outcome)
	Connected(up net.Conn, reused bool)
	Rebind(up net.Conn)
	Unbind()
	// Edits and URI are what the rules changed in the request.
	Edits() *acl.Edits
	URI() []byte
	Sent(body int64)
	// Spliced records n response body bytes copied socket to socket
	// (the h1 statistics' spliced bytes).
	Spliced(n int64)
	// Tunneled counts the bytes an HTTP/1 tunnel (after a 101) moved
	// each way: in from the client, out from the server.
	Tunneled(in, out int64)
	// Interim records an interim (1xx) response head from the server.
	Interim(status int)
	// BodySent counts request body bytes that went out after Sent (a
	// body streamed to an HTTP/2 server while its response comes).
	BodySent(n int64)
	// GRPCStatus records the grpc-status of the response (its trailers,
	// or a trailers-only answer), for the log.
	GRPCStatus(code string)
	ResponseHead()
	// ResponseHeadAt is ResponseHead for a head that arrived at t (read
	// by a callback that then waited for the rest of the response).
	ResponseHeadAt(t time.Time)
	Respond(status int)
	// ResponseRules runs the http_response rules on the response head:
	// 0, or the status of a deny (the response is dropped). Their edits
	// (ResponseEdits, nil when no rule ran) apply to the head written.
	ResponseRules(r *stream.Response) int
	ResponseEdits() *acl.Edits
	FilterResponseField(w stream.FieldWriter, name, value []byte) bool
	AppendResponseFields(w stream.FieldWriter)
	Relayed(status int, n int64)
	Replied(status int, n int64)
	LocalDone(err error)
	// BadMessage keeps a message the engine refused for `show errors`:
	// its bytes (buf, the core may keep it), the offending byte's position
	// and why; resp says a server's response (else the client's request).
	BadMessage(resp bool, buf []byte, pos int, reason string)
	End(o stream.Outcome)
	Release()
	// SetClock makes t the time the phases read until SetClock with
	// the zero time (proxy.Stream.SetClock): set by a callback that
	// never blocks, cleared before the request goes to a goroutine.
	SetClock(t time.Time)
	// ReleaseLast is Release for a request after which the client
	// connection closes.
	ReleaseLast()
}

// Upstream is a server as the engine needs it: its pool of idle
// connections and its backend's settings. The core keeps one per server.
type Upstream struct {
	Pool          Pool
	Reuse         Reuse         // the backend's http_reuse
	TimeoutServer time.Duration // the backend's timeout_server
	TimeoutTunnel time.Duration // the backend's timeout_tunnel (0: unset)
	// TimeoutConnect is the backend's timeout_connect: how long a request
	// waits for a dial to an HTTP/2 server under way (ReserveOrDialH2).
	TimeoutConnect time.Duration
	// Moved is the server's address after its last change at runtime (DNS
	// resolution, `set server addr`), nil while it never changed: a
	// connection to another address is not reused (the core sets it).
	Moved atomic.Pointer[netip.AddrPort]
	// H2 is the server's pool of HTTP/2 connections when it speaks
	// HTTP/2 (server proto h2, or ByALPN), nil for HTTP/1.1 only:
	// requests then go as streams on those connections (h2up.go).
	H2 *h2mux.Pool
	// ByALPN says the server speaks, on each connection, what its TLS
	// handshake selected by ALPN (ssl with an alpn offering h2, without
	// proto, as HAProxy 2.6 picks the mux): an h2 connection goes to H2,
	// an http/1.1 one or one without ALPN to Pool (SpeaksH2).
	ByALPN bool
	// TLS says the server's connections are TLS (ssl): HTTP/2 requests
	// to it carry :scheme https.
	TLS bool
	// H1 are the backend's h1 statistics (nil: not counted).
	H1 *Counters
	// HTTP10: the server's last response was HTTP/1.0, so it ignores
	// Expect (session.passExpect).
	HTTP10 atomic.Bool
}

// SpeaksH2 reports whether c, newly connected to u's server (the core's
// Connect), carries HTTP/2: always for a server with proto h2, when its
// TLS handshake selected h2 by ALPN for a ByALPN server, never for the
// others.
func (u *Upstream) SpeaksH2(c net.Conn) bool {
	if u.H2 == nil {
		return false
	}
	if !u.ByALPN {
		return true
	}
	tc, ok := c.(interface{ ConnectionState() tls.ConnectionState })
	return ok && tc.ConnectionState().NegotiatedProtocol == "h2"
}

// Reuse is a backend's http_reuse policy: which requests may use an idle
// server connection.
type Reuse uint8

// The policies, as HAProxy's http-reuse.
const (
	// ReuseSafe: pooled connections, but not for the first request of a
	// client connection (the default).
	ReuseSafe Reuse = iota
	// ReuseNever: a server connection stays private to its client
	// connection.
	ReuseNever
	// ReuseAggressive: as safe, and first requests may use connections
	// that have already served more than one request.
	ReuseAggressive
	// ReuseAlways: any request reuses any idle connection.
	ReuseAlways
)

// ParseReuse returns the policy named s ("never", "safe", "aggressive",
// "always"); anything else is ReuseSafe (conf validates the name).
func ParseReuse(s string) Reuse {
	switch s {
	case "never":
		return ReuseNever
	case "aggressive":
		return ReuseAggressive
	case "always":
		return ReuseAlways
	}
	return ReuseSafe
}
