package proxy

import (
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"
)

// What the Runtime API sees of client connections: `show sess` lists them,
// `shutdown session` and `shutdown sessions server` abort them.
//
// Each clientConn carries a streamRef that its own goroutine sets when a
// request (or a TCP session) is bound to a server connection and clears
// when it no longer is, before that connection goes back to the pool. The
// Runtime API reads it, and aborts a stream by closing both connections
// under the ref's lock: the connection's goroutine then sees I/O errors and
// ends the exchange the usual way (counters, log line, slots released).

// streamRef is the server side of a client connection's current stream.
// mu guards every field; it is only contended by the Runtime API.
type streamRef struct {
	mu  sync.Mutex
	be  *Backend
	srv *Server
	up  net.Conn // nil while no server connection is bound
	// awaiting: an HTTP/1 request is bound and its response head has
	// not arrived (a kill then leaves the client its 502: abort).
	awaiting atomic.Bool
	// killed: an HTTP/2 stream's server side was killed (abortH2); an
	// HTTP/1 connection's kill is clientConn.killed.
	killed atomic.Bool
}

// h2ref is an HTTP/2 stream's streamRef, in its connection's list
// (clientConn.h2refs), linked under clientConn.h2mu, with the time the
// stream opened (`show sess` age), also under h2mu.
type h2ref struct {
	streamRef
	prev, next *h2ref
	opened     time.Time
}

// set binds the stream to srv of be over up.
func (r *streamRef) set(be *Backend, srv *Server, up net.Conn) {
	r.mu.Lock()
	r.be, r.srv, r.up = be, srv, up
	r.mu.Unlock()
}

// clear unbinds the stream.
func (r *streamRef) clear() {
	r.mu.Lock()
	r.be, r.srv, r.up = nil, nil, nil
	r.awaiting.Store(false)
	r.mu.Unlock()
}

// Session is one client connection as `show sess` lists it, or one
// stream of a client connection in HTTP/2 (HAProxy lists streams: an
// HTTP/2 connection appears once per stream in progress, not at all
// without one).
type Session struct {
	ID       uintptr // stable while the connection (or the stream) lives (printed as 0x%x)
	Frontend string
	Backend  string // "" while no server is bound
	Server   string
	Src      netip.AddrPort
	Age      time.Duration
	Active   bool // a request or TCP session is in progress
}

// Sessions returns every client connection, frontend by frontend, then
// those of the proxy p replaced at a reload, while they finish (a TCP
// session, a request in progress, an HTTP/2 connection stay on the proxy
// that accepted them).
func (p *Proxy) Sessions() []Session {
	out := p.ownSessions()
	if old := p.retiring.Load(); old != nil {
		out = append(out, old.Sessions()...)
	}
	return out
}

func (p *Proxy) ownSessions() []Session {
	now := time.Now()
	var out []Session
	for _, fe := range p.Frontends {
		fe.mu.Lock()
		for cc := range fe.conns.all() {
			if cc.h2Streams(func(ref *h2ref) {
				s := Session{ID: uintptr(unsafe.Pointer(ref)), Frontend: fe.Name, Src: cc.src,
					Age: now.Sub(ref.opened), Active: true}
				ref.mu.Lock()
				if ref.srv != nil {
					s.Backend, s.Server = ref.be.Name, ref.srv.Name
				}
				ref.mu.Unlock()
				out = append(out, s)
			}) {
				continue
			}
			s := Session{ID: uintptr(unsafe.Pointer(cc)), Frontend: fe.Name, Src: cc.src,
				Age: now.Sub(cc.acceptTime()), Active: cc.state.Load() == connActive}
			cc.stream.mu.Lock()
			if cc.stream.srv != nil {
				s.Backend, s.Server = cc.stream.be.Name, cc.stream.srv.Name
			}
			cc.stream.mu.Unlock()
			out = append(out, s)
		}
		fe.mu.Unlock()
	}
	return out
}

// ShutdownSession aborts the client connection whose Session.ID is id,
// and its server connection; for an HTTP/2 stream's id, the stream's
// server side (as `shutdown sessions server` does: the stream ends, the
// connection and its other streams go on; a stream not yet bound to a
// server is left to go on). It returns false when there is none. The
// sessions of the proxy p replaced, still finishing, are found too.
func (p *Proxy) ShutdownSession(id uintptr) bool {
	if p.shutdownOwnSession(id) {
		return true
	}
	old := p.retiring.Load()
	return old != nil && old.ShutdownSession(id)
}

func (p *Proxy) shutdownOwnSession(id uintptr) bool {
	for _, fe := range p.Frontends {
		fe.mu.Lock()
		for cc := range fe.conns.all() {
			if uintptr(unsafe.Pointer(cc)) == id {
				cc.abort(true)
				fe.mu.Unlock()
				return true
			}
			found := false
			cc.h2Streams(func(ref *h2ref) {
				if uintptr(unsafe.Pointer(ref)) == id {
					found = true
					ref.mu.Lock()
					if ref.up != nil {
						ref.killed.Store(true)
						ref.up.Close()
					}
					ref.mu.Unlock()
				}
			})
			if found {
				fe.mu.Unlock()
				return true
			}
		}
		fe.mu.Unlock()
	}
	return false
}

// ShutdownSessions aborts every stream bound to srv, client and server
// connections both, and returns how many there were. Idle keep-alive
// connections are not bound to a server and are left alone. The streams of
// the proxy p replaced, still finishing, bound to its server of the same
// backend and name are aborted too.
func (p *Proxy) ShutdownSessions(srv *Server) int {
	n := p.shutdownOwnSessions(srv)
	if old := p.retiring.Load(); old != nil {
		if ob := old.Backend(srv.Backend.Name); ob != nil {
			if osrv := ob.Server(srv.Name); osrv != nil {
				n += old.ShutdownSessions(osrv)
			}
		}
	}
	return n
}

func (p *Proxy) shutdownOwnSessions(srv *Server) int {
	n := 0
	for _, fe := range p.Frontends {
		fe.mu.Lock()
		for cc := range fe.conns.all() {
			cc.stream.mu.Lock()
			bound := cc.stream.srv == srv
			cc.stream.mu.Unlock()
			if bound {
				cc.abort(true)
				n++
			}
			n += cc.abortH2(srv)
		}
		fe.mu.Unlock()
	}
	return n
}

// abort kills cc's stream (its log says K): it closes the server
// connection, if any, and the client connection. With answer (an
// operator's shutdown session, not a hard stop), an HTTP/1 request whose
// server had not answered yet keeps its client: the engine answers its
// 502 (the server gone) with connection: close (StoppingForGood), as
// HAProxy 2.6 does (curl gets the 502, not an empty reply). A request
// waiting on the epoll layer is woken by the close (Conn.Close rouses its
// Await).
func (cc *clientConn) abort(answer bool) {
	cc.killed.Store(true)
	cc.stream.mu.Lock()
	up := cc.stream.up
	if up != nil {
		up.Close()
	}
	cc.stream.mu.Unlock()
	if up == nil || !answer || !cc.stream.awaiting.Load() {
		cc.c.Close()
	}
}

// abortH2 aborts the streams of an HTTP/2 connection bound to srv (their
// server side: the client connection and its other streams go on) and
// returns how many there were.
func (cc *clientConn) abortH2(srv *Server) int {
	n := 0
	cc.h2mu.Lock()
	defer cc.h2mu.Unlock()
	for ref := cc.h2refs; ref != nil; ref = ref.next {
		ref.mu.Lock()
		if ref.srv == srv && ref.up != nil {
			ref.killed.Store(true)
			ref.up.Close()
			n++
		}
		ref.mu.Unlock()
	}
	return n
}

// h2Streams calls f for each stream of cc under cc.h2mu, and reports
// whether cc speaks HTTP/2 (false: f was not called).
func (cc *clientConn) h2Streams(f func(*h2ref)) bool {
	cc.h2mu.Lock()
	defer cc.h2mu.Unlock()
	if !cc.h2 {
		return false
	}
	for ref := cc.h2refs; ref != nil; ref = ref.next {
		f(ref)
	}
	return true
}
