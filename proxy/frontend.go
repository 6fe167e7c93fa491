package proxy

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fulcrum-proxy/fulcrum/conf"
	"github.com/fulcrum-proxy/fulcrum/proxy/h2mux"
	"github.com/fulcrum-proxy/fulcrum/proxy/http1"
	"github.com/fulcrum-proxy/fulcrum/proxy/http2"
	"github.com/fulcrum-proxy/fulcrum/proxy/netio"
	"github.com/fulcrum-proxy/fulcrum/proxy/netio/epoll"
	"github.com/fulcrum-proxy/fulcrum/proxy/tlsx"
)

// Frontend accepts client connections on its binds and hands each to the
// HTTP or TCP path.
type Frontend struct {
	Name string
	ID   int
	Conf *conf.Frontend

	p          *Proxy
	backend    *Backend   // default_backend, nil if none
	useBackend []*Backend // the backend of each use_backend rule (rules.go)

	timeoutClient      time.Duration
	timeoutHTTPRequest time.Duration
	forwardFor         bool
	idleKeep           time.Duration // http1.Settings.IdleKeep (idleKeepBuffers; tests change it before Start)
	// h1set and h2set are the settings every HTTP/1 and HTTP/2 client
	// connection of the frontend shares (made by Proxy.open).
	h1set, h2set http1.Settings
	// h1inl counts the HTTP/1 requests that parked (h1set.Inline).
	h1inl http1.InlineCounters

	listeners []*acceptor  // guarded by mu (a reload hands them over)
	slots     limiter      // maxconn (set maxconn frontend changes it)
	local     []localRoute // requests answered by the frontend itself

	// state is feOpen, fePaused or feStopped (festate.go), resumed the
	// channel closed when a paused frontend resumes; both guarded by mu.
	// pauses counts the pauses: an Accept that failed across one is not
	// an accept failure.
	state   int
	resumed chan struct{}
	pauses  atomic.Int64
	// down: shut down (shutdown frontend); its HTTP connections close
	// after their next response (StoppingForGood).
	down atomic.Bool

	// edges are the PROXY protocol and TLS of each bind (edge.go), nil
	// for a plain one; edgeAt finds them by listener address once
	// listening (set by listen, read-only after).
	edges  []*edge
	edgeAt map[string]*edge

	mu    sync.Mutex
	conns connList // the connections it owns (`show sess`, a stop's closeIdle)

	// Counters; Scur counts client connections. Denied counts connections
	// that waited in the kernel backlog because maxconn was reached.
	Counters    Counters
	MaxconnHits atomic.Int64
	// DeniedConn counts connections closed by a tcp_request connection
	// reject rule (HAProxy's dcon).
	DeniedConn atomic.Int64
	// ProxyErrors counts connections of accept-proxy binds closed for a
	// missing, malformed or late PROXY header (edge.go).
	ProxyErrors atomic.Int64
	// SSL counts the TLS handshakes of the ssl binds' clients.
	SSL SSLCounters
	// H2Upgrades counts the plaintext connections that opened with the
	// HTTP/2 preface and were served as HTTP/2 (h2conn.go).
	H2Upgrades atomic.Int64

	// H1 are the h1 counters of its HTTP/1 clients (h1stats.go).
	H1 http1.Counters

	// H2 are the HTTP/2 counters of the frontend's clients (HAProxy's h2
	// statistics module); h2 serves the binds with proto h2, nil when it
	// has none, and h2Binds are their listener addresses (set by listen).
	H2      h2mux.Counters
	h2      *http2.Server
	h2Binds map[string]bool
	// h1Binds are the listener addresses of the binds with proto h1: no
	// implicit upgrade to HTTP/2 there (h2conn.go).
	h1Binds map[string]bool

	// successor is the frontend of the same name in the proxy that
	// replaced this one's at a reload, when its keep-alive connections may
	// move there (handoff.go); nil otherwise.
	successor atomic.Pointer[Frontend]

	log *frontendLog // access log settings and targets (log.go)
}

// clientConn is one accepted client connection.
type clientConn struct {
	c        net.Conn
	src      netip.AddrPort
	accepted int64        // Unix ns (acceptTime)
	state    atomic.Int32 // connNew, connIdle, connActive or connClosed
	// killed: abort closed the connection (an operator's shutdown, or
	// hard_stop_after): its stream ends as stream.Killed.
	killed    atomic.Bool
	dl        netio.Deadlines // owned by the connection's goroutine
	stream    streamRef       // the current stream's server side (sessions.go)
	bind      *string         // the address of the listener that accepted it (its acceptor's addr)
	st        *tracker        // entries tracked by tcp_request connection rules (stick.go); nil: none ran
	httpState                 // http mode (httpconn.go)

	// The edge (edge.go): dst is the destination a PROXY header gave
	// (nil: the socket's own); ssl is set once a TLS handshake started,
	// tls once it succeeded (c is then the TLS connection).
	dst *netip.AddrPort
	ssl bool
	// sessionEnded: the owner's scur no longer counts the connection
	// (endSession; the connection's goroutine only).
	sessionEnded bool
	tls          *tlsx.ConnInfo
	// The streamRefs of an HTTP/2 connection's streams (h2conn.go), for
	// shutdown sessions: a list linked through h2ref.prev and next
	// (no map to hash into per stream), guarded by h2mu.
	h2mu   sync.Mutex
	h2refs *h2ref
	h2     bool // the connection speaks HTTP/2 (serveH2), under h2mu

	// owner is the frontend that accounts for the connection: the one
	// that accepted it, or its successor after a reload (handoff.go).
	owner atomic.Pointer[Frontend]
	// prev and next link cc in its owner's conns, under the owner's mu.
	prev, next *clientConn
}

// connList is a frontend's set of client connections: a list linked
// through clientConn.prev and next (no map entry per connection), guarded
// by the frontend's mu.
type connList struct{ head *clientConn }

// add puts cc in the list; it must be in none.
func (l *connList) add(cc *clientConn) {
	cc.prev, cc.next = nil, l.head
	if l.head != nil {
		l.head.prev = cc
	}
	l.head = cc
}

// has reports whether cc is in the list (cc is in this one or in none).
func (l *connList) has(cc *clientConn) bool { return cc.prev != nil || l.head == cc }

// remove takes cc out of the list, if it is there.
func (l *connList) remove(cc *clientConn) {
	if !l.has(cc) {
		return
	}
	if cc.prev != nil {
		cc.prev.next = cc.next
	} else {
		l.head = cc.next
	}
	if cc.next != nil {
		cc.next.prev = cc.prev
	}
	cc.prev, cc.next = nil, nil
}

// all yields the list's connections; the one yielded may be removed
// meanwhile (its successor was taken before).
func (l *connList) all() func(yield func(*clientConn) bool) {
	return func(yield func(*clientConn) bool) {
		for cc := l.head; cc != nil; {
			next := cc.next
			if !yield(cc) {
				return
			}
			cc = next
		}
	}
}

// acceptTime returns when the connection was accepted.
func (cc *clientConn) acceptTime() time.Time { return time.Unix(0, cc.accepted) }

// remoteAddrPort is c's peer address, an IPv4-mapped IPv6 address as the
// IPv4 one (what parsing its String gave, without the string).
func remoteAddrPort(c net.Conn) netip.AddrPort {
	if ap, ok := c.(addrPorter); ok {
		if _, r := ap.AddrPorts(); r.IsValid() {
			return netip.AddrPortFrom(r.Addr().Unmap(), r.Port())
		}
	}
	if ta, ok := c.RemoteAddr().(*net.TCPAddr); ok {
		ap := ta.AddrPort()
		return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
	}
	ap, _ := netip.ParseAddrPort(c.RemoteAddr().String())
	return ap
}

// Connection states. A new connection is not idle: a stop (or the end of
// a reload) closes idle keep-alive connections, whose clients may retry
// on another connection, but lets a new one deliver its first request,
// which its client cannot retry (issue 11: connections accepted by the old
// proxy just before a listener's hand-over were closed unread).
const (
	connNew int32 = iota // accepted, no request yet
	connIdle
	connActive
	connClosed
	connMoving // an idle or new connection moving to a successor frontend
)

// setActive marks cc busy with a request; false if it was closed by a stop.
// A connection moving to another frontend (handoff.go, a few atomic
// operations under a lock) is waited for.
func (cc *clientConn) setActive() bool {
	for {
		switch st := cc.state.Load(); st {
		case connIdle, connNew:
			if cc.state.CompareAndSwap(st, connActive) {
				return true
			}
		case connMoving:
			runtime.Gosched()
		default:
			return false
		}
	}
}

// setIdle marks cc waiting for a request; false if the proxy is stopping
// (the connection must then close).
func (cc *clientConn) setIdle() bool { return cc.state.CompareAndSwap(connActive, connIdle) }

// acceptor is one open bind and the loop that accepts on it. A reload
// hands the listener over to the next proxy's frontend (reload.go): the
// old loop is stopped (cancel, and a past deadline wakes its Accept) while
// the socket stays open, so connections wait in the kernel backlog for
// the new loop instead of being refused.
type acceptor struct {
	l      net.Listener
	addr   string             // l's address, for clientConn.bind
	ctx    context.Context    // the loop runs until it ends: stop or hand-over
	cancel context.CancelFunc //
	done   chan struct{}      // closed when the loop has returned
}

// newAcceptor wraps l for a loop of fe's proxy.
func (fe *Frontend) newAcceptor(l net.Listener) *acceptor {
	ctx, cancel := context.WithCancel(fe.p.ctx)
	return &acceptor{l: l, addr: l.Addr().String(), ctx: ctx, cancel: cancel, done: make(chan struct{})}
}

// Addrs returns the addresses the frontend listens on (after Start), so that
// a bind on port 0 can be read back.
func (fe *Frontend) Addrs() []net.Addr {
	fe.mu.Lock()
	defer fe.mu.Unlock()
	var out []net.Addr
	for _, a := range fe.listeners {
		out = append(out, a.l.Addr())
	}
	return out
}

// NetIOs returns, for each address of Addrs (same order), the connection
// layer that accepts on it: "epoll" (proxy/netio/epoll) or "go" (Go's
// poller; tune_netio), or "uring" for a plaintext bind of a mode tcp
// frontend whose sessions the proxy's io_uring relay takes (the epoll
// layer accepts them).
func (fe *Frontend) NetIOs() []string {
	fe.mu.Lock()
	defer fe.mu.Unlock()
	var out []string
	ring := fe.Conf.Mode == conf.ModeTCP && fe.p.uring.Load() != nil
	for _, a := range fe.listeners {
		layer := "go"
		if _, ok := a.l.(*epoll.Listener); ok {
			layer = "epoll"
			if e := fe.edgeAt[a.addr]; ring && (e == nil || e.tls == nil) {
				layer = "uring" // its sessions are relayed on io_uring
			}
		}
		out = append(out, layer)
	}
	return out
}

// closeListeners closes every bind of fe (at stop, or when Start fails).
func (fe *Frontend) closeListeners() {
	fe.mu.Lock()
	defer fe.mu.Unlock()
	for _, a := range fe.listeners {
		a.l.Close()
	}
}

// listen opens every bind that inherited does not already hold (a reload
// hands over the listeners whose address stays; see StartFrom). On error
// the listeners opened here are closed and the inherited ones are left
// alone.
func (fe *Frontend) listen(inherited map[string]net.Listener) error {
	// No TCP keep-alive probes on client connections (HAProxy enables them
	// only with option clitcpka): it also saves setsockopt calls per accept.
	// tune_sndbuf_client and tune_rcvbuf_client are set on the listening
	// socket: its connections inherit them.
	lc := net.ListenConfig{KeepAlive: -1, Control: sockBufsControl(fe.p.Conf.Global.ClientBufs)}
	var opened []*acceptor
	fe.h2Binds, fe.h1Binds = nil, nil
	isH2 := func(i int, a *acceptor) {
		if i >= len(fe.Conf.BindOptions) || fe.Conf.BindOptions[i] == nil {
			return
		}
		set := &fe.h2Binds
		switch fe.Conf.BindOptions[i].Proto {
		case "h2":
		case "h1":
			set = &fe.h1Binds
		default:
			return
		}
		if *set == nil {
			*set = map[string]bool{}
		}
		(*set)[a.addr] = true
	}
	for i, addr := range fe.Conf.Binds {
		if l := inherited[addr]; l != nil {
			// A listener of a paused frontend listens again: a reload
			// starts every frontend enabled, as HAProxy's.
			resumeListener(l)
			opened = append(opened, fe.newAcceptor(l))
			fe.setEdge(opened[len(opened)-1].addr, i)
			isH2(i, opened[len(opened)-1])
			continue
		}
		l, err := lc.Listen(fe.p.ctx, "tcp", addr)
		if err != nil {
			for _, a := range opened {
				if !isInherited(inherited, a.l) {
					a.l.Close()
				}
			}
			return err
		}
		opened = append(opened, fe.newAcceptor(fe.wrapListener(l)))
		fe.setEdge(opened[len(opened)-1].addr, i)
		isH2(i, opened[len(opened)-1])
	}
	fe.mu.Lock()
	fe.listeners = opened
	fe.mu.Unlock()
	return nil
}

// isInherited reports whether l is one of inherited's listeners.
func isInherited(inherited map[string]net.Listener, l net.Listener) bool {
	for _, il := range inherited {
		if il == l {
			return true
		}
	}
	return false
}

// acceptWarnEvery spaces the warnings of a listener whose accepts keep
// failing (file descriptors exhausted for as long as the load lasts).
const acceptWarnEvery = 10 * time.Second

// acceptLoop accepts on a until it is closed or handed over. Before each
// Accept it takes a frontend slot, a global slot and the connection's
// descriptors (fds.go), so that beyond maxconn, or short of descriptors,
// connections wait in the kernel's accept backlog and nothing is refused
// by fulcrum (HAProxy's behaviour).
func (fe *Frontend) acceptLoop(a *acceptor) {
	defer fe.p.wg.Done()
	defer close(a.done)
	var backoff time.Duration
	// The log of accept failures: a warning when they start, then at most
	// one every acceptWarnEvery, and "accepting again" at the first accept
	// that succeeds after a warning. Failures that come back within
	// acceptWarnEvery of the last warning are only counted, and reported
	// by the next line: near the descriptor limit, accepts alternate
	// between failing and succeeding, and ending the episode at each
	// success logged a warning per failure (issue 16: 1,386 lines in 10 s).
	failures := 0 // accept failures since the last "accepting again"
	var lastWarn time.Time
	warned := false // a warning was logged, "accepting again" was not
	for {
		if !fe.p.acquire(fe, a.ctx.Done()) {
			return
		}
		pauses := fe.pauses.Load()
		c, err := a.l.Accept()
		if err != nil {
			fe.p.releaseSlots(fe)
			if a.ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return // stopped, or handed over (the deadline woke Accept)
			}
			if ch := fe.pausedWait(); ch != nil {
				select { // disable frontend (festate.go)
				case <-ch:
					continue
				case <-a.ctx.Done():
					return
				}
			}
			if fe.pauses.Load() != pauses {
				continue // paused and resumed meanwhile
			}
			// EMFILE, ENFILE and the like: back off as net/http's Server
			// does (5ms doubling up to 1s) and try again, never spin or
			// exit; the connection waits in the backlog.
			backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
			failures++
			if now := time.Now(); lastWarn.IsZero() || now.Sub(lastWarn) >= fe.p.acceptWarnEvery {
				lastWarn, warned = now, true
				fe.p.log.Warn().Err(err).Str("frontend", fe.Name).Str("bind", a.addr).
					Int("failures", failures).Dur("retry_in", backoff).Msg("accept failed, backing off")
			}
			select {
			case <-time.After(backoff):
			case <-a.ctx.Done():
				return
			}
			continue
		}
		if warned {
			fe.p.log.Info().Str("frontend", fe.Name).Str("bind", a.addr).
				Int("failures", failures).Msg("accepting again")
			failures, warned = 0, false
		}
		backoff = 0
		cc := &clientConn{c: c, accepted: time.Now().UnixNano(), bind: &a.addr}
		cc.src = remoteAddrPort(c)
		fe.track(cc)
		fe.p.wg.Add(1)
		if !fe.awaitFirst(cc) {
			fe.p.dispatch(fe, cc)
		}
	}
}

// serve runs one client connection and releases its slots. The slots,
// the session count and the stop's wait belong to the connection's owner,
// which a reload may change (handoff.go). Unless it returns
// http1.EndClosed, the connection hibernated or parked (httpconn.go): it
// keeps all that, and resume or its session's continuation serves it on.
func (fe *Frontend) serve(cc *clientConn) (end http1.End) {
	cc.owner.Store(fe)
	defer func() {
		if end == http1.EndClosed {
			cc.closed()
		}
	}()
	e := fe.edgeOf(cc)
	if e != nil && e.acceptProxy && !fe.readProxyHeader(cc) { // edge.go
		fe.Counters.ConnEarly.Add(1)
		return
	}
	if !fe.acceptConn(cc) { // tcp_request connection rules (rules.go)
		fe.Counters.ConnEarly.Add(1)
		return
	}
	fe.Counters.sessionStart(cc.acceptTime())
	fe.p.obs.connAccepted(cc.acceptTime())
	defer func() {
		if end == http1.EndClosed {
			cc.endSession()
		}
	}()
	if e != nil && e.tls != nil {
		// Unconditional: a TLS connection never hibernates (CanHibernate).
		defer fe.p.ssl.Cur.Add(-1)
		if !fe.handshake(cc, e) { // edge.go
			return
		}
	}
	if fe.Conf.Mode == conf.ModeTCP {
		cc.state.Store(connActive)
		fe.serveTCP(cc)
		return http1.EndClosed
	}
	// HTTP/2: a bind with proto h2 (prior knowledge, or forced over TLS),
	// or a TLS handshake whose ALPN chose h2.
	if fe.h2Binds[*cc.bind] || (cc.tls != nil && cc.tls.ALPN == "h2") {
		fe.serveH2(cc) // h2conn.go
		return http1.EndClosed
	}
	return fe.serveHTTP(cc)
}

// closed closes cc and releases what it held (the end of serve): its
// place in its owner's set, its slots and the stop's wait.
func (cc *clientConn) closed() {
	cc.c.Close()
	o := cc.untrack()
	o.p.releaseSlots(o)
	o.p.wg.Done()
}

// endSession ends the connection's frontend session (scur) once: when the
// connection's goroutine returns, or earlier, as its last request releases
// what it took (Stream.ReleaseLast).
func (cc *clientConn) endSession() {
	if !cc.sessionEnded {
		cc.sessionEnded = true
		cc.owner.Load().Counters.sessionEnd()
	}
}

// track adds cc to the set closed by a stop.
func (fe *Frontend) track(cc *clientConn) {
	fe.mu.Lock()
	fe.conns.add(cc)
	fe.mu.Unlock()
}

// untrack takes cc out of its owner's set and returns that owner: the
// owner is looked at again under its lock, as a reload's hand-over
// (handoff.go) changes it under the locks of both frontends.
func (cc *clientConn) untrack() *Frontend {
	for {
		o := cc.owner.Load()
		o.mu.Lock()
		if cc.owner.Load() == o {
			o.conns.remove(cc)
			o.mu.Unlock()
			return o
		}
		o.mu.Unlock()
	}
}

// closeIdle closes every connection waiting for a request (at stop),
// unless it can move to the frontend that replaced fe at a reload
// (handoff.go). Busy ones finish their request and then close or move.
func (fe *Frontend) closeIdle() {
	fe.mu.Lock()
	defer fe.mu.Unlock()
	for cc := range fe.conns.all() {
		if !cc.state.CompareAndSwap(connIdle, connMoving) {
			continue
		}
		if fe.handOffLocked(cc) {
			cc.state.Store(connIdle)
			continue
		}
		cc.state.Store(connClosed)
		cc.c.Close()
	}
}

// closeAll closes every connection (hard stop).
func (fe *Frontend) closeAll() {
	fe.mu.Lock()
	defer fe.mu.Unlock()
	for cc := range fe.conns.all() {
		cc.state.Store(connClosed)
		cc.abort(false) // the server side too: a hung server must not hold the stop
	}
}
