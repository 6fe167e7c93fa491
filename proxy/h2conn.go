package proxy

import (
	"net"
	"time"

	"github.com/fulcrum-proxy/fulcrum/proxy/h2mux"
	"github.com/fulcrum-proxy/fulcrum/proxy/http1"
	"github.com/fulcrum-proxy/fulcrum/proxy/http2"
	"github.com/fulcrum-proxy/fulcrum/proxy/netio"
)

// The core's side of a client connection speaking HTTP/2 (a bind with
// "proto h2"): h2client is the http2.Client the HTTP/2 engine drives, and
// each of its streams gets a Stream of its own, bound to the connection
// for the frontend, the client's address and the entries tracked at the
// connection stage, with a streamRef of its own for `shutdown sessions`
// (a field of the pooled Stream, in the connection's list while the
// stream lives).
//
// A connection in HTTP/2 is always active for the core: a stop or a
// reload does not close it as an idle keep-alive connection but has the
// engine send GOAWAY (Frontend.h2.Shutdown), after which it ends once its
// streams are done; new requests go to new connections, which a reload's
// new configuration accepts. Its streams stay on the configuration that
// accepted the connection.

// serveH2 serves cc, accepted by fe on a bind with proto h2.
func (fe *Frontend) serveH2(cc *clientConn) {
	cc.state.Store(connActive)
	cc.h2mu.Lock()
	cc.h2 = true
	cc.h2mu.Unlock()
	cc.fe = fe
	cc.set = &fe.h2set
	http2.Serve(h2client{cc})
}

// CanUpgradeH2 implements http1.Upgrader: a plaintext connection of an
// http frontend without disable_h2_upgrade, on a bind without proto h1,
// may switch to HTTP/2 (HAProxy's implicit upgrade).
func (cc *clientConn) CanUpgradeH2() bool {
	fe := cc.owner.Load()
	return fe.h2 != nil && cc.tls == nil && !fe.Conf.DisableH2Upgrade && !fe.h1Binds[*cc.bind]
}

// UpgradeH2 implements http1.Upgrader: the HTTP/1 engine saw the HTTP/2
// preface as the connection's first bytes (buffered, read already): its
// Stream goes back (the connection's tracked entries stay, for its
// streams), and the connection is served as HTTP/2 from those bytes on.
func (cc *clientConn) UpgradeH2(buffered []byte) http1.End {
	cc.releaseStream() // cc.st stays: the HTTP/2 streams inherit it
	fe := cc.owner.Load()
	fe.H2Upgrades.Add(1)
	cc.c.SetDeadline(time.Time{}) // the HTTP/1 request's; the engine arms its own
	cc.dl = netio.Deadlines{}
	// Under the owner's lock: a stop or shutdown session closes cc.c.
	fe.mu.Lock()
	cc.c = &replayConn{Conn: cc.c, b: buffered}
	fe.mu.Unlock()
	fe.serveH2(cc)
	return http1.EndClosed
}

// replayConn is a connection whose first bytes were read already: Read
// returns them first.
type replayConn struct {
	net.Conn
	b []byte
}

func (r *replayConn) Read(p []byte) (int, error) {
	if len(r.b) > 0 {
		n := copy(p, r.b)
		r.b = r.b[n:]
		return n, nil
	}
	return r.Conn.Read(p)
}

// CloseWrite half-closes the connection (the engine's linger); a
// connection that cannot is left open for the linger's reads.
func (r *replayConn) CloseWrite() error {
	if cw, ok := r.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// h2client is a client connection in HTTP/2 as the engine sees it.
type h2client struct{ *clientConn }

// Server implements http2.Client.
func (c h2client) Server() *http2.Server { return c.fe.h2 }

// Counters implements http2.Client.
func (c h2client) Counters() *h2mux.Counters { return &c.fe.H2 }

// Stopping implements http2.Client.
func (c h2client) Stopping() bool { return c.fe.p.stopping.Load() || c.fe.down.Load() }

// NewStream implements http2.Client: a Stream for one stream of the
// connection.
func (c h2client) NewStream() http2.Stream {
	x := streamPool.Get().(*Stream)
	x.bind(c.fe, c.clientConn)
	x.trk.inherit(c.st)
	ref := &x.h2ref
	x.ref = &ref.streamRef
	opened := time.Now()
	c.h2mu.Lock()
	ref.opened = opened
	ref.next = c.h2refs
	if ref.next != nil {
		ref.next.prev = ref
	}
	c.h2refs = ref
	c.h2mu.Unlock()
	return h2stream{x}
}

// Done implements http2.Client: the connection's tracked entries are
// released.
func (c h2client) Done() { c.st.release() }

// h2stream is a Stream serving one HTTP/2 stream.
type h2stream struct{ *Stream }

// Free implements http2.Stream: the stream's tracked entries that no log
// line released are, and the Stream goes back to the pool.
func (x h2stream) Free() {
	cc := x.cc
	ref := &x.h2ref
	cc.h2mu.Lock()
	if ref.prev != nil {
		ref.prev.next = ref.next
	} else {
		cc.h2refs = ref.next
	}
	if ref.next != nil {
		ref.next.prev = ref.prev
	}
	ref.prev, ref.next = nil, nil
	cc.h2mu.Unlock()
	x.trk.end(false, 0, 0)
	*x.Stream = Stream{edits: x.edits, ans: x.ans[:0]}
	streamPool.Put(x.Stream)
}

var _ http2.Client = h2client{}
var _ http2.Stream = h2stream{}
