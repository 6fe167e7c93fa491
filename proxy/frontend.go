package proxy

import (
	"errors"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fulcrum-proxy/fulcrum/conf"
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

	listeners []net.Listener
	slots     limiter      // maxconn (set maxconn frontend changes it)
	local     []localRoute // requests answered by the frontend itself

	mu    sync.Mutex
	conns map[*clientConn]struct{}

	// Counters; Scur counts client connections. Denied counts connections
	// that waited in the kernel backlog because maxconn was reached.
	Counters    Counters
	MaxconnHits atomic.Int64
	// DeniedConn counts connections closed by a tcp_request connection
	// reject rule (HAProxy's dcon).
	DeniedConn atomic.Int64
}

// clientConn is one accepted client connection.
type clientConn struct {
	c        net.Conn
	src      netip.AddrPort
	accepted time.Time
	state    atomic.Int32 // connIdle, connActive or connClosed
	dl       deadlines    // owned by the connection's goroutine
	stream   streamRef    // the current stream's server side (sessions.go)
}

const (
	connIdle int32 = iota
	connActive
	connClosed
)

// setActive marks cc busy with a request; false if it was closed by a stop.
func (cc *clientConn) setActive() bool { return cc.state.CompareAndSwap(connIdle, connActive) }

// setIdle marks cc waiting for a request; false if the proxy is stopping
// (the connection must then close).
func (cc *clientConn) setIdle() bool { return cc.state.CompareAndSwap(connActive, connIdle) }

// Addrs returns the addresses the frontend listens on (after Start), so that
// a bind on port 0 can be read back.
func (fe *Frontend) Addrs() []net.Addr {
	var out []net.Addr
	for _, l := range fe.listeners {
		out = append(out, l.Addr())
	}
	return out
}

// listen opens every bind. On error the listeners opened so far are closed.
func (fe *Frontend) listen() error {
	// No TCP keep-alive probes on client connections (HAProxy enables them
	// only with option clitcpka): it also saves setsockopt calls per accept.
	lc := net.ListenConfig{KeepAlive: -1}
	for _, addr := range fe.Conf.Binds {
		l, err := lc.Listen(fe.p.ctx, "tcp", addr)
		if err != nil {
			for _, l := range fe.listeners {
				l.Close()
			}
			fe.listeners = nil
			return err
		}
		fe.listeners = append(fe.listeners, l)
	}
	return nil
}

// acceptLoop accepts on l until it is closed. Before each Accept it takes a
// frontend slot and a global slot, so that beyond maxconn connections wait
// in the kernel's accept backlog and nothing is refused by fulcrum (HAProxy's
// behaviour).
func (fe *Frontend) acceptLoop(l net.Listener) {
	defer fe.p.wg.Done()
	var backoff time.Duration
	for {
		if !fe.p.acquire(fe) {
			return
		}
		c, err := l.Accept()
		if err != nil {
			fe.p.releaseSlots(fe)
			if errors.Is(err, net.ErrClosed) {
				return
			}
			// EMFILE and the like: back off and try again, never crash.
			if backoff == 0 {
				backoff = 5 * time.Millisecond
			} else if backoff < time.Second {
				backoff *= 2
			}
			fe.p.log.Warn().Err(err).Str("frontend", fe.Name).Msg("accept failed")
			select {
			case <-time.After(backoff):
			case <-fe.p.ctx.Done():
				return
			}
			continue
		}
		backoff = 0
		cc := &clientConn{c: c, accepted: time.Now()}
		if ap, err := netip.ParseAddrPort(c.RemoteAddr().String()); err == nil {
			cc.src = ap
		}
		fe.track(cc, true)
		fe.p.wg.Add(1)
		fe.p.dispatch(fe, cc)
	}
}

// serve runs one client connection and releases its slots.
func (fe *Frontend) serve(cc *clientConn) {
	defer fe.p.wg.Done()
	defer fe.p.releaseSlots(fe)
	defer fe.track(cc, false)
	defer cc.c.Close()
	if !fe.acceptConn(cc) { // tcp_request connection rules (rules.go)
		return
	}
	fe.Counters.sessionStart(cc.accepted)
	defer fe.Counters.sessionEnd()
	if fe.Conf.Mode == conf.ModeTCP {
		cc.state.Store(connActive)
		fe.serveTCP(cc)
		return
	}
	fe.serveHTTP(cc)
}

// track adds or removes cc from the set closed by a stop.
func (fe *Frontend) track(cc *clientConn, add bool) {
	fe.mu.Lock()
	if add {
		fe.conns[cc] = struct{}{}
	} else {
		delete(fe.conns, cc)
	}
	fe.mu.Unlock()
}

// closeIdle closes every connection waiting for a request (at stop).
// Busy ones finish their request and then close.
func (fe *Frontend) closeIdle() {
	fe.mu.Lock()
	defer fe.mu.Unlock()
	for cc := range fe.conns {
		if cc.state.CompareAndSwap(connIdle, connClosed) {
			cc.c.Close()
		}
	}
}

// closeAll closes every connection (hard stop).
func (fe *Frontend) closeAll() {
	fe.mu.Lock()
	defer fe.mu.Unlock()
	for cc := range fe.conns {
		cc.state.Store(connClosed)
		cc.abort() // the server side too: a hung server must not hold the stop
	}
}
