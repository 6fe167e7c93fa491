package proxy

import (
	"net"
	"net/netip"
	"sync"
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
}

// h2ref is an HTTP/2 stream's streamRef, in its connection's list
// (clientConn.h2refs), linked under clientConn.h2mu.
type h2ref struct {
	streamRef
	prev, next *h2ref
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
	r.mu.Unlock()
}

// Session is one client connection as `show sess` lists it.
type Session struct {
	ID       uintptr // stable while the connection lives (printed as 0x%x)
	Frontend string
	Backend  string // "" while no server is bound
	Server   string
	Src      netip.AddrPort
	Age      time.Duration
	Active   bool // a request or TCP session is in progress
}

// Sessions returns every client connection, frontend by frontend.
func (p *Proxy) Sessions() []Session {
	now := time.Now()
	var out []Session
	for _, fe := range p.Frontends {
		fe.mu.Lock()
		for cc := range fe.conns.all() {
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
// and its server connection. It returns false when there is none.
func (p *Proxy) ShutdownSession(id uintptr) bool {
	for _, fe := range p.Frontends {
		fe.mu.Lock()
		for cc := range fe.conns.all() {
			if uintptr(unsafe.Pointer(cc)) == id {
				cc.abort()
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
// connections are not bound to a server and are left alone.
func (p *Proxy) ShutdownSessions(srv *Server) int {
	n := 0
	for _, fe := range p.Frontends {
		fe.mu.Lock()
		for cc := range fe.conns.all() {
			cc.stream.mu.Lock()
			bound := cc.stream.srv == srv
			cc.stream.mu.Unlock()
			if bound {
				cc.abort()
				n++
			}
			n += cc.abortH2(srv)
		}
		fe.mu.Unlock()
	}
	return n
}

// abort closes cc and the server connection of its stream, if any: the
// stream is killed (its log says K).
func (cc *clientConn) abort() {
	cc.killed.Store(true)
	cc.stream.mu.Lock()
	if cc.stream.up != nil {
		cc.stream.up.Close()
	}
	cc.stream.mu.Unlock()
	cc.c.Close()
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
			ref.up.Close()
			n++
		}
		ref.mu.Unlock()
	}
	return n
}
