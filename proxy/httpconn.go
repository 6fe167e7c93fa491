package proxy

import (
	"net"
	"net/netip"
	"sync"
	"time"

	"github.com/fulcrum-proxy/fulcrum/conf"
	"github.com/fulcrum-proxy/fulcrum/proxy/http1"
	"github.com/fulcrum-proxy/fulcrum/proxy/netio"
	"github.com/fulcrum-proxy/fulcrum/proxy/netio/epoll"
)

// The core's side of a client connection in http mode: clientConn is the
// http1.Client the HTTP/1 engine drives (its Stream is the core's side of
// each request). The engine knows the frontend only through the settings
// below; which frontend owns the connection (a reload may move it,
// handoff.go) is the core's business.

// httpState is what a client connection in http mode adds to clientConn.
type httpState struct {
	fe  *Frontend       // the frontend serving it now (its owner, once settled)
	x   *Stream         // its current request (nil while it hibernates)
	set *http1.Settings // fe's settings (Frontend.h1set), shared
	// What the engine needs to resume a hibernating connection
	// (http1.Resume): the requests it served and when it became idle.
	nreq      int
	idleStart int64 // Unix ns
}

// idleKeepBuffers is how long a keep-alive client connection waiting for
// its next request keeps its 32 KiB of buffers (http1.Settings.IdleKeep):
// a busy connection's next request usually comes sooner, and keeps its
// single read; an idle one gives them back, and costs a few kilobytes
// (bench/scale.sh). Short, so that a burst of new connections does not
// hold many buffers at once (each connection's first wait counts too).
const idleKeepBuffers = 100 * time.Millisecond

// streamPool recycles Streams with their buffers (sync.Pool is the reason
// for this package variable).
var streamPool = sync.Pool{New: func() any { return new(Stream) }}

// serveHTTP serves cc, accepted by fe, with the HTTP/1 engine, until it
// closes, hibernates or parks.
func (fe *Frontend) serveHTTP(cc *clientConn) http1.End {
	cc.x = streamPool.Get().(*Stream)
	cc.setFrontend(fe)
	cc.x.trk.inherit(cc.st) // entries tracked at the connection stage
	return http1.Serve(cc)
}

// awaitFirst begins serving cc, just accepted by fe, on the accept loop's
// goroutine when its first request can be awaited by the epoll layer
// (http1.AwaitFirst): what serve does before the engine (the owner, the
// tcp_request connection rules, the session count), then the wait, with
// no worker goroutine. It returns false, having done nothing, when cc is
// to be served by serve on a worker: another layer, TLS, a PROXY header
// to read, an HTTP/2 bind, or the switch off (H1InlineFirstEnv).
func (fe *Frontend) awaitFirst(cc *clientConn) bool {
	if fe.Conf.Mode != conf.ModeHTTP || !http1.CanAwaitFirst(&fe.h1set, cc.c) || fe.h2Binds[*cc.bind] {
		return false
	}
	if e := fe.edgeOf(cc); e != nil && (e.acceptProxy || e.tls != nil) {
		return false
	}
	cc.owner.Store(fe)
	if !fe.acceptConn(cc) { // tcp_request connection rules (rules.go)
		fe.Counters.ConnEarly.Add(1)
		cc.closed()
		return true
	}
	fe.Counters.sessionStart(cc.acceptTime())
	fe.p.obs.connAccepted(cc.acceptTime())
	cc.x = streamPool.Get().(*Stream)
	cc.setFrontend(fe)
	cc.x.trk.inherit(cc.st)
	http1.AwaitFirst(cc)
	return true
}

// Hibernation (http1.Hibernator): a plaintext keep-alive connection of
// the epoll layer that waits for its next request longer than IdleKeep
// gives its goroutine, session, Stream and buffers back, and is only its
// clientConn and its socket until the socket is readable, its keep-alive
// (or request) deadline passes, or a stop, a reload's end, `shutdown
// session` closes it: the layer then calls wake, and a worker goroutine
// resumes it where its goroutine would have gone on (http1.Resume). While
// it hibernates the connection is still its owner's: in its set (`show
// sess`, closeIdle), its session count (scur), its slots (maxconn) and
// the stop's wait, all released by the goroutine that resumes it when it
// closes. TLS connections do not hibernate (crypto/tls keeps its own
// state and buffered records over the socket).

// CanHibernate implements http1.Hibernator: a connection of the epoll
// layer, neither TLS nor wrapped.
func (cc *clientConn) CanHibernate() bool {
	_, ok := cc.c.(*epoll.Conn)
	return ok
}

// Hibernate implements http1.Hibernator: the Stream goes back to its pool
// (an idle connection's holds nothing but its connection-stage entries,
// cc.st's, inherited again on resume) and the socket waits for wake.
func (cc *clientConn) Hibernate(nreq int, idleStart time.Time) {
	cc.nreq, cc.idleStart = nreq, idleStart.UnixNano()
	x := cc.x
	cc.x = nil
	x.h1End()
	x.flushLog() // none waits after a request: Release wrote it
	*x = Stream{edits: x.edits, ans: x.ans[:0]}
	streamPool.Put(x)
	cc.dl.ForgetWrite() // Hibernate drops the write deadline
	cc.c.(*epoll.Conn).Hibernate(cc)
}

// Wake implements epoll.Waker: it resumes cc on a worker of its owner's
// proxy; it does not block (it runs on the epoll layer's reaper, a timer,
// or a goroutine closing cc).
func (cc *clientConn) Wake() {
	cc.owner.Load().p.run(work{cc: cc, resume: true})
}

// resume serves cc, which comes out of hibernation, until it closes (it
// then releases what serve would have), hibernates again or parks.
func (cc *clientConn) resume() http1.End {
	if ec := cc.c.(*epoll.Conn); !ec.Readable() {
		ec.Hibernate(cc) // woken by an event or a timer handled late
		return http1.EndHibernated
	}
	cc.x = streamPool.Get().(*Stream)
	cc.x.bind(cc.fe, cc) // Active moves it to its owner if a reload did
	cc.x.h1c = true
	cc.x.trk.inherit(cc.st)
	return cc.ended(http1.Resume(cc, cc.nreq, time.Unix(0, cc.idleStart)))
}

// ended releases what serve would have when the HTTP/1 engine closed cc.
func (cc *clientConn) ended(e http1.End) http1.End {
	if e == http1.EndClosed {
		cc.endSession()
		cc.closed()
	}
	return e
}

// Closed implements http1.Parker.
func (cc *clientConn) Closed() { cc.ended(http1.EndClosed) }

// Dispatch implements http1.Parker: k, a session of cc that parked, goes
// on on a worker of its owner's proxy; it does not block (the epoll
// layer's reaper calls it).
func (cc *clientConn) Dispatch(k http1.Continuation) {
	cc.owner.Load().p.run(work{cc: cc, k: k})
}

// setFrontend makes fe the connection's frontend: at the start, and when
// it moved to the configuration a reload started (handoff.go).
func (cc *clientConn) setFrontend(fe *Frontend) {
	cc.fe = fe
	cc.x.bind(fe, cc)
	cc.x.h1c = true
	cc.set = &fe.h1set
}

// Conn implements http1.Client.
func (cc *clientConn) Conn() net.Conn { return cc.c }

// Deadlines implements http1.Client.
func (cc *clientConn) Deadlines() *netio.Deadlines { return &cc.dl }

// Src implements http1.Client.
func (cc *clientConn) Src() netip.AddrPort { return cc.src }

// Settings implements http1.Client.
func (cc *clientConn) Settings() *http1.Settings { return cc.set }

// Stream implements http1.Client.
func (cc *clientConn) Stream() http1.Stream { return cc.x }

// Active implements http1.Client: the connection is busy, unless the stop
// closed it; a reload may have moved it while it was idle. A request that
// arrives on a connection of a frontend a reload replaced (linked to its
// successor once the new configuration serves), which its owner's stop
// did not move (one accepted before the reload and waiting for its first
// request, or one whose request came before the stop) moves it now, so that the
// request runs on the configuration that serves: its stick tables are the
// ones the peers and `show table` see (a fresh-user trial found such a
// request counted in a rebuilt table's discarded predecessor).
func (cc *clientConn) Active() (ok, moved bool) {
	if !cc.setActive() {
		return false, false
	}
	if o := cc.owner.Load(); o != cc.fe {
		cc.setFrontend(o)
		return true, true
	}
	if cc.fe.successor.Load() != nil && cc.fe.handOffActive(cc) {
		cc.setFrontend(cc.owner.Load())
		return true, true
	}
	return true, false
}

// Idle implements http1.Client: the connection waits for its next
// request; on a proxy that a reload replaced it moves to the new one, or
// closes.
func (cc *clientConn) Idle() (ok, moved bool) {
	if !cc.setIdle() {
		return false, false
	}
	if !cc.fe.p.stopping.Load() {
		return true, false
	}
	if !cc.fe.handOff(cc) {
		return false, false
	}
	cc.setFrontend(cc.owner.Load())
	return true, true
}

// StoppingForGood implements http1.Client: the frontend stops, or an
// operator killed the connection's request (abort: it closes after its
// answer).
func (cc *clientConn) StoppingForGood() bool { return cc.killed.Load() || cc.fe.stoppingForGood(cc) }

// stoppingForGood reports whether cc's proxy is stopping and the
// connection cannot move to a successor (handoff.go): its response must
// then say Connection: close.
func (fe *Frontend) stoppingForGood(cc *clientConn) bool {
	return fe.down.Load() || fe.p.stopping.Load() && !fe.canHandOff(cc)
}

// Done implements http1.Client: a request that ended without its log line
// releases its tracked entries, then the connection's own.
func (cc *clientConn) Done() {
	cc.releaseStream()
	cc.st.release() // the connection's tracked entries (tcp_request connection)
}

// releaseStream gives back the connection's Stream, whose request ended
// without its log line, with the entries that request tracked.
func (cc *clientConn) releaseStream() {
	cc.x.trk.end(false, 0, 0)
	cc.x.h1End()
	*cc.x = Stream{edits: cc.x.edits, ans: cc.x.ans[:0]}
	streamPool.Put(cc.x)
	cc.x = nil
}

var _ http1.Client = (*clientConn)(nil)
var _ http1.Hibernator = (*clientConn)(nil)
var _ http1.Parker = (*clientConn)(nil)
var _ epoll.Waker = (*clientConn)(nil)
var _ http1.Stream = (*Stream)(nil)
