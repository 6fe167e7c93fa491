package proxy

import (
	"bufio"
	"net"
	"sync"
	"syscall"
	"time"
)

// Idle server connections. Each server keeps its own pool: a connection is
// made to one server and only ever goes back to that server's pool
// (upConn.release), so no code path can hand a request for one server a
// connection to another (issue 16, point 4).
//
// A pooled connection is only ever one that ended exactly at a response
// boundary: nothing more was buffered from the server when it was put back
// (httpSession.finish). Bytes that arrive later, or a close, make it
// unusable: the check on every take (upConn.idleOK) discards it, and the
// proxy's sweeper (Proxy.sweepPools) finds it within poolSweepEvery and
// closes it, so a server's close does not leave descriptors in CLOSE_WAIT.
// Idle connections are purged over time as HAProxy's pool-purge-delay
// does, and bounded per server by pool_max_conn. Each holds a descriptor
// of the process's budget (fds.go): put takes it, or closes the connection
// when none is spare, and every way out of the pool returns it (take,
// sweep, purge, closeAll, closeOldest).

// poolSweepEvery is how often idle pooled connections are checked for a
// close or stray bytes from their server.
const poolSweepEvery = 250 * time.Millisecond

// connPool holds a server's idle connections, oldest first. Lock: its own
// mutex, held only to push, pop or scan; no system call is made under it.
type connPool struct {
	mu   sync.Mutex
	idle []idleConn

	// max is pool_max_conn: the most idle connections kept, -1 = no limit,
	// 0 = none. low is pool_low_conn: a purge leaves at least this many.
	// purgeDelay is pool_purge_delay: every such delay, half of the idle
	// connections above low that were not used since the last purge are
	// closed (0: never purged).
	max, low   int
	purgeDelay time.Duration
	lastPurge  time.Time

	fds *fdBudget // set by build; nil admits everything
}

// idleConn is one pooled connection and when it went idle.
type idleConn struct {
	uc    *upConn
	since time.Time
}

// get pops the most recently used idle connection that is still usable,
// or returns nil. With provenOnly it returns only a connection that has
// already served more than one request (http-reuse aggressive for first
// requests). Connections found closed or with stray bytes are closed.
func (p *connPool) get(provenOnly bool) *upConn {
	for {
		p.mu.Lock()
		var uc *upConn
		for i := len(p.idle) - 1; i >= 0; i-- {
			if provenOnly && p.idle[i].uc.uses < 2 {
				continue
			}
			uc = p.idle[i].uc
			p.idle = append(p.idle[:i], p.idle[i+1:]...)
			break
		}
		p.mu.Unlock()
		if uc != nil {
			p.fds.leaveIdle()
		}
		if uc == nil || uc.idleOK() {
			return uc
		}
		uc.close()
	}
}

// put keeps uc as idle, or closes it when the pool is full or the process
// has no descriptor to spare for an idle connection (fds.go). Callers use
// upConn.release, which picks the pool of uc's own server.
func (p *connPool) put(uc *upConn, now time.Time) {
	p.mu.Lock()
	if (p.max < 0 || len(p.idle) < p.max) && p.fds.admitIdle() {
		p.idle = append(p.idle, idleConn{uc, now})
		p.mu.Unlock()
		return
	}
	p.mu.Unlock()
	uc.close()
}

// closeAll closes every idle connection (at stop, at an address change).
func (p *connPool) closeAll() {
	p.mu.Lock()
	idle := p.idle
	p.idle = nil
	p.mu.Unlock()
	for _, ic := range idle {
		p.fds.leaveIdle()
		ic.uc.close()
	}
}

// closeOldest closes the longest idle connection, if any, and reports
// whether there was one (the descriptor budget makes room, fds.go).
func (p *connPool) closeOldest() bool {
	p.mu.Lock()
	if len(p.idle) == 0 {
		p.mu.Unlock()
		return false
	}
	uc := p.idle[0].uc
	p.idle = append(p.idle[:0], p.idle[1:]...)
	p.mu.Unlock()
	p.fds.leaveIdle()
	uc.close()
	return true
}

// len returns the number of idle connections.
func (p *connPool) len() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.idle)
}

// sweep closes the idle connections whose server closed them or sent
// bytes nobody asked for, and purges idle ones as pool_purge_delay says.
// Called by the proxy's sweeper every poolSweepEvery.
func (p *connPool) sweep(now time.Time) {
	p.mu.Lock()
	if len(p.idle) == 0 {
		p.lastPurge = now
		p.mu.Unlock()
		return
	}
	check := make([]*upConn, len(p.idle))
	for i, ic := range p.idle {
		check[i] = ic.uc
	}
	p.mu.Unlock()
	// The checks run without the lock and look at the socket only (the
	// buffered reader was empty when the connection was pooled, and is its
	// taker's once taken): a connection taken meanwhile is checked again by
	// its taker, and only one still pooled is closed here.
	for _, uc := range check {
		if uc.raw != nil && !socketIdle(uc.raw) {
			p.remove(uc)
		}
	}
	p.purge(now)
}

// remove closes uc if it is still pooled.
func (p *connPool) remove(uc *upConn) {
	p.mu.Lock()
	found := false
	for i, ic := range p.idle {
		if ic.uc == uc {
			p.idle = append(p.idle[:i], p.idle[i+1:]...)
			found = true
			break
		}
	}
	p.mu.Unlock()
	if found {
		p.fds.leaveIdle()
		uc.close()
	}
}

// purge closes, once per purgeDelay, half (rounded up) of the idle
// connections above low that have been idle since the previous purge,
// oldest first: a burst's connections go away over a few delays, and a
// steady load keeps what it uses.
func (p *connPool) purge(now time.Time) {
	if p.purgeDelay <= 0 {
		return
	}
	p.mu.Lock()
	if p.lastPurge.IsZero() {
		p.lastPurge = now
	}
	if now.Sub(p.lastPurge) < p.purgeDelay {
		p.mu.Unlock()
		return
	}
	prev := p.lastPurge
	p.lastPurge = now
	stale := 0
	for _, ic := range p.idle {
		if ic.since.After(prev) {
			break // oldest first: the rest were used since
		}
		stale++
	}
	n := min(stale, len(p.idle)-p.low)
	n = (n + 1) / 2
	if n <= 0 {
		p.mu.Unlock()
		return
	}
	victims := make([]*upConn, n)
	for i := range n {
		victims[i] = p.idle[i].uc
	}
	p.idle = append(p.idle[:0], p.idle[n:]...)
	p.mu.Unlock()
	for _, uc := range victims {
		p.fds.leaveIdle()
		uc.close()
	}
}

// upConn is one connection to a server, with its buffered reader and writer.
type upConn struct {
	c    net.Conn
	raw  syscall.RawConn // c's descriptor, for idleOK; nil if c has none
	br   *bufio.Reader
	bw   *bufio.Writer
	srv  *Server
	uses int // requests served, for http-reuse aggressive
	dl   deadlines
}

// newUpConn wraps a new connection to srv.
func newUpConn(c net.Conn, srv *Server) *upConn {
	uc := &upConn{c: c, br: getReader(c), bw: getWriter(c), srv: srv}
	if sc, ok := c.(syscall.Conn); ok {
		uc.raw, _ = sc.SyscallConn()
	}
	return uc
}

// release hands uc back to its own server's pool; it must be at a response
// boundary (nothing buffered from the server).
func (uc *upConn) release(now time.Time) {
	if uc.br.Buffered() > 0 {
		uc.close()
		return
	}
	uc.srv.pool.put(uc, now)
}

func (uc *upConn) close() {
	uc.c.Close()
	putReader(uc.br)
	putWriter(uc.bw)
	uc.br, uc.bw = nil, nil
}

// idleOK reports whether an idle uc can carry a new request: nothing is
// buffered from its server and its socket has nothing to read, not even a
// close. It costs one non-blocking system call (pool_linux.go).
func (uc *upConn) idleOK() bool {
	if uc.br.Buffered() > 0 {
		return false
	}
	if uc.raw == nil {
		return true
	}
	return socketIdle(uc.raw)
}
