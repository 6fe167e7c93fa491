package h2mux

import (
	"context"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/net/http2"
)

// Pool is one server's HTTP/2 connections (server key proto = "h2"). Many
// requests, from any client connection, share them as streams, each
// connection carrying at most the server's SETTINGS_MAX_CONCURRENT_STREAMS
// at once; a new connection is dialed (by the core, with its retries and
// redispatch) only when none can take another stream, and the requests
// that find none while a dial is under way wait for it (ReserveOrDial).
// A connection is dialed to the Pool's server and only ever serves that
// server, and only requests of the key it was made with (the SNI its TLS
// handshake sent, "" in clear): the pool is the server's and its
// HTTP/2's, so a connection is keyed by server, protocol and SNI. Lock:
// mu, held only to scan or change the lists; no system call is made
// under it.
type Pool struct {
	mu    sync.Mutex
	conns []pooled
	tr    *http2.Transport
	c     *Counters // the backend's

	// draining are the connections CloseIdle took out of the pool while
	// streams were in flight on them (under mu); ndrain counts those that
	// still wait for their reserved streams to start before their GOAWAY
	// (read without mu on the request path).
	draining []draining
	ndrain   atomic.Int32

	// dials are the dials under way, by key (ReserveOrDial), under mu;
	// waiting counts the requests waiting for one.
	dials   map[string]*Dial
	waiting atomic.Int32

	// peak is the most connections held at once (under mu).
	peak int
}

// Dial is a connection to the pool's server being dialed for requests of
// one key: the requests that find no free stream meanwhile wait for it
// (ReserveOrDial) rather than dial their own. The dialer ends it with
// Done.
type Dial struct {
	p       *Pool
	key     string
	done    chan struct{}
	settled <-chan struct{} // the new connection's SETTINGS applied; nil: no connection
}

// draining is a connection leaving the pool: GOAWAY is sent (goaway) once
// no stream is reserved on it, and it closes when its streams end.
type draining struct {
	cc     *http2.ClientConn
	goaway bool
}

// pooled is a connection of a Pool, the key it was made with and its
// guard.
type pooled struct {
	cc  *http2.ClientConn
	key string
	g   *Guard
}

// NewPool returns an empty pool whose connections count their frames in
// c (the backend's h2 counters) and close after idle without a stream
// (HAProxy's pool-purge-delay; 0: kept until the server closes them).
func NewPool(c *Counters, idle time.Duration) *Pool {
	tr := &http2.Transport{
		AllowHTTP: true, // h2c: the scheme is "http"
		// The proxy relays bodies as they are: no Accept-Encoding of its
		// own, no transparent decompression.
		DisableCompression: true,
		IdleConnTimeout:    idle,
		// A server's header list may be as large as a client's.
		MaxHeaderListSize: 1 << 20,
	}
	return &Pool{tr: tr, c: c}
}

// Reserve returns a shared connection made with key on which one new
// stream has been reserved (the request must then be sent with RoundTrip, or the
// reservation is given back by the request's failure), or nil when every
// connection is full, closing or closed. idleOK false passes over the
// connections without a stream in flight (http_reuse safe: the first
// request of a client connection goes on a connection already busy with
// streams, as HAProxy's "available" connections, or on a new one, never on
// an idle one). Closed connections are dropped.
func (p *Pool) Reserve(key string, idleOK bool) *http2.ClientConn {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.reserve(key, idleOK)
}

// reserve is Reserve with mu held.
func (p *Pool) reserve(key string, idleOK bool) *http2.ClientConn {
	for i := 0; i < len(p.conns); {
		cc := p.conns[i].cc
		if p.conns[i].key != key || !p.conns[i].g.isSettled() {
			// (a connection whose server's SETTINGS are not applied yet
			// carries its dialer's stream only: x/net assumes 100 streams
			// until they are, and a server allowing fewer refuses the
			// rest, REFUSED_STREAM; a fresh-user trial lost 15% of the
			// requests to a server allowing one)
			i++
			continue
		}
		if idleOK && cc.ReserveNewRequest() {
			return cc
		}
		st := cc.State()
		if st.Closed || st.Closing {
			p.conns = append(p.conns[:i], p.conns[i+1:]...)
			continue
		}
		if !idleOK && st.StreamsActive+st.StreamsReserved > 0 && cc.ReserveNewRequest() {
			return cc
		}
		i++
	}
	return nil
}

// ReserveOrDial is Reserve for a request that would otherwise dial: when
// no connection made with key has a free stream but a dial for key is
// under way, it waits for that dial to end and the new connection's
// SETTINGS to be applied (so that its stream limit is the server's),
// then tries again; a burst of requests to a cold server thus shares few
// connections instead of dialing one each. It returns a connection with
// a stream reserved; or nil and a Dial when the caller is to dial (it
// must then call Dial.Done); or nil and nil when the caller is to dial
// on its own: the dial it waited for failed, ctx ended, or wait (the
// connect timeout) passed.
func (p *Pool) ReserveOrDial(ctx context.Context, key string, idleOK bool, wait time.Duration) (*http2.ClientConn, *Dial) {
	var timeout <-chan time.Time
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	// arm starts the bound on the waits below, once: false when there is
	// none to wait (wait <= 0).
	arm := func() bool {
		if timeout == nil {
			if wait <= 0 {
				return false
			}
			timer = time.NewTimer(wait)
			timeout = timer.C
		}
		return true
	}
	for {
		p.mu.Lock()
		if cc := p.reserve(key, idleOK); cc != nil {
			p.mu.Unlock()
			return cc, nil
		}
		d := p.dials[key]
		if d == nil {
			if settling := p.settling(key); settling != nil {
				// A connection just dialed whose SETTINGS are not applied
				// yet (reserve skips it): wait for them rather than dial.
				p.mu.Unlock()
				if !arm() {
					return nil, nil
				}
				select {
				case <-settling:
					continue
				case <-timeout:
				case <-ctx.Done():
				}
				return nil, nil
			}
			d = &Dial{p: p, key: key, done: make(chan struct{})}
			if p.dials == nil {
				p.dials = map[string]*Dial{}
			}
			p.dials[key] = d
			p.mu.Unlock()
			return nil, d
		}
		p.mu.Unlock()
		if !arm() {
			return nil, nil
		}
		if !p.waitDial(ctx, d, timeout) {
			return nil, nil
		}
	}
}

// settling returns the Settled channel of a connection made with key
// whose server's SETTINGS are not applied yet, nil when there is none.
// p.mu is held.
func (p *Pool) settling(key string) <-chan struct{} {
	for _, e := range p.conns {
		if e.key == key && !e.g.isSettled() {
			return e.g.Settled()
		}
	}
	return nil
}

// waitDial waits for d to end and its connection's SETTINGS to be
// applied; false when the dial failed, ctx ended or timeout came.
func (p *Pool) waitDial(ctx context.Context, d *Dial, timeout <-chan time.Time) bool {
	p.waiting.Add(1)
	defer p.waiting.Add(-1)
	select {
	case <-d.done:
	case <-timeout:
		return false
	case <-ctx.Done():
		return false
	}
	if d.settled == nil {
		return false // the dial failed: each tries on its own
	}
	select {
	case <-d.settled:
		return true
	case <-timeout:
	case <-ctx.Done():
	}
	return false
}

// Done ends the dial: cc is the connection it made and added to the pool
// (Add), nil when it failed or the request went elsewhere. Calls after
// the first do nothing.
func (d *Dial) Done(cc *http2.ClientConn) {
	if d == nil {
		return
	}
	p := d.p
	p.mu.Lock()
	if p.dials[d.key] != d {
		p.mu.Unlock()
		return
	}
	delete(p.dials, d.key)
	if cc != nil {
		for _, e := range p.conns {
			if e.cc == cc {
				d.settled = e.g.Settled()
			}
		}
	}
	p.mu.Unlock()
	close(d.done) // d.settled is read by the waiters after this
}

// Add makes c, newly connected to the pool's server for requests of key,
// an HTTP/2 connection (the preface and SETTINGS are sent), shared by the
// pool, and returns it with one stream reserved. On error c is closed.
func (p *Pool) Add(key string, c net.Conn) (*http2.ClientConn, error) {
	cc, g, err := p.open(c)
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	p.conns = append(p.conns, pooled{cc, key, g})
	p.peak = max(p.peak, len(p.conns))
	p.mu.Unlock()
	return cc, nil
}

// open makes c an HTTP/2 connection with one stream reserved.
func (p *Pool) open(c net.Conn) (*http2.ClientConn, *Guard, error) {
	g := NewServerGuard(c, p.c)
	cc, err := p.tr.NewClientConn(g)
	if err != nil {
		c.Close()
		return nil, nil, err
	}
	cc.ReserveNewRequest()
	return cc, g, nil
}

// Counters returns the counters the pool's connections count in (the
// backend's h2 counters).
func (p *Pool) Counters() *Counters { return p.c }

// Len returns the number of connections held (busy or idle).
func (p *Pool) Len() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.conns)
}

// Usage returns the connections held with a stream in flight or
// reserved (busy), those without (idle), and the most held at once
// (show servers conn's used_cur, idle_cur and used_max).
func (p *Pool) Usage() (busy, idle, peak int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, e := range p.conns {
		if st := e.cc.State(); st.StreamsActive+st.StreamsReserved > 0 {
			busy++
		} else {
			idle++
		}
	}
	return busy, idle, p.peak
}

// Streams returns the streams in flight or reserved on the pool's
// connections.
func (p *Pool) Streams() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, e := range p.conns {
		st := e.cc.State()
		n += st.StreamsActive + st.StreamsReserved
	}
	return n
}

// Sweep drops the connections that closed (the server's GOAWAY, an error,
// the idle timeout). The core calls it with the HTTP/1 pools' sweep.
func (p *Pool) Sweep() {
	p.mu.Lock()
	for i := 0; i < len(p.conns); {
		if p.conns[i].cc.State().Closed {
			p.conns = append(p.conns[:i], p.conns[i+1:]...)
			continue
		}
		i++
	}
	p.mu.Unlock()
	p.drain()
}

// CloseAll closes every connection (at stop, at an address change),
// those CloseIdle is draining included: streams in flight on them fail.
func (p *Pool) CloseAll() {
	p.mu.Lock()
	conns, drained := p.conns, p.draining
	p.conns, p.draining = nil, nil
	p.ndrain.Store(0)
	p.mu.Unlock()
	for _, e := range conns {
		e.cc.Close()
	}
	for _, d := range drained {
		d.cc.Close()
	}
}

// CloseIdle empties the pool without cutting a request (the server
// enters maintenance): the connections without a stream close at once;
// the others take no new stream and are sent GOAWAY(NO_ERROR), closing
// when their last stream ends. A connection holding a stream reserved
// but not yet sent gets its GOAWAY once the stream has started (Drain),
// as x/net/http2 would refuse the stream on a connection that sent one.
func (p *Pool) CloseIdle() {
	p.mu.Lock()
	var idle []*http2.ClientConn
	for _, e := range p.conns {
		st := e.cc.State()
		switch {
		case st.Closed:
		case st.StreamsActive+st.StreamsReserved+st.StreamsPending == 0:
			idle = append(idle, e.cc)
		default:
			p.draining = append(p.draining, draining{cc: e.cc})
			p.ndrain.Add(1)
		}
	}
	clear(p.conns)
	p.conns = p.conns[:0]
	p.mu.Unlock()
	for _, cc := range idle {
		cc.Close()
	}
	p.Drain()
}

// Drain sends GOAWAY on the connections CloseIdle is draining that no
// longer hold a reserved stream. A call calls it once its stream
// started: a load of a counter when no GOAWAY waits.
func (p *Pool) Drain() {
	if p.ndrain.Load() > 0 {
		p.drain()
	}
}

// drain is Drain, forgetting the draining connections that closed.
func (p *Pool) drain() {
	p.mu.Lock()
	var ready []*http2.ClientConn
	kept := p.draining[:0]
	for _, d := range p.draining {
		st := d.cc.State()
		if st.Closed {
			if !d.goaway {
				p.ndrain.Add(-1)
			}
			continue
		}
		if !d.goaway && st.StreamsReserved == 0 {
			d.goaway = true
			p.ndrain.Add(-1)
			ready = append(ready, d.cc)
		}
		kept = append(kept, d)
	}
	clear(p.draining[len(kept):])
	p.draining = kept
	p.mu.Unlock()
	for _, cc := range ready {
		// Shutdown sends the GOAWAY, then waits for the streams to end
		// and closes the connection (CloseAll cuts the wait).
		go cc.Shutdown(context.Background())
	}
}

// Owned is the HTTP/2 server connections private to one client connection
// (http_reuse never, as HAProxy's private connections): the client's
// requests to a server share them as streams, no other client's request
// ever goes on them, and they close with the client connection (Close).
// The zero Owned is ready; its methods may be called from the client
// connection's streams at once.
type Owned struct {
	mu     sync.Mutex
	conns  []owned
	closed bool
}

type owned struct {
	p   *Pool
	key string
	cc  *http2.ClientConn
	g   *Guard
}

// Reserve returns one of o's connections to p's server made with key,
// with one new stream reserved, or nil.
func (o *Owned) Reserve(p *Pool, key string) *http2.ClientConn {
	o.mu.Lock()
	defer o.mu.Unlock()
	for i := 0; i < len(o.conns); {
		e := o.conns[i]
		if e.p != p || e.key != key || !e.g.isSettled() {
			i++
			continue
		}
		if e.cc.ReserveNewRequest() {
			return e.cc
		}
		if st := e.cc.State(); st.Closed || st.Closing {
			e.cc.Close()
			o.conns = append(o.conns[:i], o.conns[i+1:]...)
			continue
		}
		i++
	}
	return nil
}

// Add makes c, newly connected to p's server for requests of key, an
// HTTP/2 connection private to o, and returns it with one stream
// reserved. On error, or once o is closed, c is closed.
func (o *Owned) Add(p *Pool, key string, c net.Conn) (*http2.ClientConn, error) {
	cc, g, err := p.open(c)
	if err != nil {
		return nil, err
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed {
		cc.Close()
		return nil, net.ErrClosed
	}
	o.conns = append(o.conns, owned{p, key, cc, g})
	return cc, nil
}

// Len returns the number of o's connections (busy or idle).
func (o *Owned) Len() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.conns)
}

// Close closes o's connections (the client connection ended, or moved to
// a reload's configuration); streams still in flight on them fail. A
// closed Owned refuses new connections if final.
func (o *Owned) Close(final bool) {
	o.mu.Lock()
	conns := o.conns
	o.conns = nil
	o.closed = o.closed || final
	o.mu.Unlock()
	for _, e := range conns {
		e.cc.Close()
	}
}
