package http1

import (
	"bufio"
	"crypto/tls"
	"net"
	"net/netip"
	"sync"
	"syscall"
	"time"

	"github.com/fulcrum-proxy/fulcrum/proxy/netio"
)

// Idle server connections. Each server keeps its own pool: a connection is
// made to one server and only ever goes back to that server's pool
// (upConn.release), so no code path can hand a request for one server a
// connection to another (issue 16, point 4).
//
// A pooled connection is only ever one that ended exactly at a response
// boundary: nothing more was buffered from the server when it was put back
// (session.relay). Bytes that arrive later, or a close, make it
// unusable: the check on every take (upConn.idleOK) discards it, and the
// proxy's sweeper (Pool.Sweep, which the core calls) finds it within SweepEvery and
// closes it, so a server's close does not leave descriptors in CLOSE_WAIT.
// Idle connections are purged over time as HAProxy's pool-purge-delay
// does, and bounded per server by pool_max_conn. Each holds a descriptor
// of the process's budget (Budget): put takes it, or closes the connection
// when none is spare, and every way out of the pool returns it (take,
// sweep, purge, closeAll, closeOldest).

// SweepEvery is how often idle pooled connections are checked for a close
// or stray bytes from their server (Pool.Sweep).
const SweepEvery = 250 * time.Millisecond

// Pool holds a server's idle connections, oldest first. Lock: its own
// mutex, held only to push, pop or scan; no system call is made under it.
type Pool struct {
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

	fds Budget // the process's descriptors (SetBudget); nil admits everything
}

// idleConn is one pooled connection and when it went idle.
type idleConn struct {
	uc    *upConn
	since time.Time
}

// get pops the most recently used idle connection made for key (the SNI
// it sent) that is still usable, or returns nil. With provenOnly it
// returns only a connection that has already served more than one
// request (http-reuse aggressive for first requests). Connections found
// closed or with stray bytes are closed.
func (p *Pool) get(provenOnly bool, key string) *upConn {
	for {
		p.mu.Lock()
		var uc *upConn
		for i := len(p.idle) - 1; i >= 0; i-- {
			if provenOnly && p.idle[i].uc.uses < 2 || p.idle[i].uc.key != key {
				continue
			}
			uc = p.idle[i].uc
			p.idle = append(p.idle[:i], p.idle[i+1:]...)
			break
		}
		p.mu.Unlock()
		if uc != nil {
			p.leaveIdle()
			uc.wet()
		}
		if uc == nil || uc.idleOK() {
			return uc
		}
		uc.close()
	}
}

// put keeps uc as idle, or closes it when the pool is full or the process
// has no descriptor to spare for an idle connection (Budget). Callers use
// upConn.release, which picks the pool of uc's own server.
func (p *Pool) put(uc *upConn, now time.Time) {
	p.mu.Lock()
	if (p.max < 0 || len(p.idle) < p.max) && p.admitIdle() {
		p.idle = append(p.idle, idleConn{uc, now})
		p.mu.Unlock()
		return
	}
	p.mu.Unlock()
	uc.close()
}

// Budget is the process's descriptor budget as a pool sees it: each idle
// connection holds one descriptor of it (the core's fdBudget).
type Budget interface {
	// AdmitIdle takes a descriptor for a connection going idle; false
	// when none is spare (the connection is then closed).
	AdmitIdle() bool
	// LeaveIdle gives back the descriptor of a connection leaving the pool.
	LeaveIdle()
}

// SetBudget makes the pool hold its idle connections in b, before it is
// used.
func (p *Pool) SetBudget(b Budget) { p.fds = b }

// Budget returns the budget set by SetBudget.
func (p *Pool) Budget() Budget { return p.fds }

func (p *Pool) admitIdle() bool { return p.fds == nil || p.fds.AdmitIdle() }

func (p *Pool) leaveIdle() {
	if p.fds != nil {
		p.fds.LeaveIdle()
	}
}

// Configure sets pool_max_conn (-1: no limit), pool_low_conn and
// pool_purge_delay (0: never purged), before the pool is used.
func (p *Pool) Configure(max, low int, purgeDelay time.Duration) {
	p.max, p.low, p.purgeDelay = max, low, purgeDelay
}

// Max returns pool_max_conn, -1 = no limit.
func (p *Pool) Max() int { return p.max }

// PurgeDelay returns pool_purge_delay.
func (p *Pool) PurgeDelay() time.Duration { return p.purgeDelay }

// Idle returns how many idle connections the pool holds: safe ones (that
// have served more than one request, reusable by any request under every
// http_reuse policy) and the others.
func (p *Pool) Idle() (safe, unsafe int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, ic := range p.idle {
		if ic.uc.uses >= 2 {
			safe++
		} else {
			unsafe++
		}
	}
	return safe, unsafe
}

// CloseAll closes every idle connection (at stop, at an address change,
// when the server enters maintenance).
func (p *Pool) CloseAll() {
	p.mu.Lock()
	idle := p.idle
	p.idle = nil
	p.mu.Unlock()
	for _, ic := range idle {
		p.leaveIdle()
		ic.uc.close()
	}
}

// CloseOldest closes the longest idle connection, if any, and reports
// whether there was one (the core's descriptor budget makes room).
func (p *Pool) CloseOldest() bool {
	p.mu.Lock()
	if len(p.idle) == 0 {
		p.mu.Unlock()
		return false
	}
	uc := p.idle[0].uc
	p.idle = append(p.idle[:0], p.idle[1:]...)
	p.mu.Unlock()
	p.leaveIdle()
	uc.close()
	return true
}

// Each calls f with the reader and writer of each idle connection (nil
// once given back: DryAfter), under the pool's lock; for tests.
func (p *Pool) Each(f func(br *bufio.Reader, bw *bufio.Writer)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, ic := range p.idle {
		f(ic.uc.br, ic.uc.bw)
	}
}

// Len returns the number of idle connections.
func (p *Pool) Len() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.idle)
}

// Sweep closes the idle connections whose server closed them or sent
// bytes nobody asked for, gives back the buffers of those idle for
// DryAfter, and purges idle ones as pool_purge_delay says. The core calls
// it every SweepEvery for every server.
func (p *Pool) Sweep(now time.Time) {
	p.mu.Lock()
	if len(p.idle) == 0 {
		p.lastPurge = now
		p.mu.Unlock()
		return
	}
	check := make([]*upConn, len(p.idle))
	for i, ic := range p.idle {
		check[i] = ic.uc
		if now.Sub(ic.since) >= DryAfter {
			ic.uc.dry()
		}
	}
	p.mu.Unlock()
	// The checks run without the lock and look at the socket only (the
	// buffered reader was empty when the connection was pooled, and is its
	// taker's once taken): a connection taken meanwhile is checked again by
	// its taker, and only one still pooled is closed here.
	for _, uc := range check {
		if uc.idler != nil && !uc.idler.Quiet() || uc.raw != nil && !socketIdle(uc.raw) {
			p.remove(uc)
		}
	}
	p.purge(now)
}

// remove closes uc if it is still pooled.
func (p *Pool) remove(uc *upConn) {
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
		p.leaveIdle()
		uc.close()
	}
}

// purge closes, once per purgeDelay, half (rounded up) of the idle
// connections above low that have been idle since the previous purge,
// oldest first: a burst's connections go away over a few delays, and a
// steady load keeps what it uses.
func (p *Pool) purge(now time.Time) {
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
		p.leaveIdle()
		uc.close()
	}
}

// upConn is one connection to a server, with its buffered reader and writer.
type upConn struct {
	c    net.Conn
	raw  syscall.RawConn // c's descriptor, for idleOK; nil if c has none
	br   *bufio.Reader
	bw   *bufio.Writer
	up   *Upstream // the server it was made to
	key  string    // what it was made for besides the server (its SNI)
	uses int       // requests served, for http-reuse aggressive

	// peek is the RawConn.Read callback of idleOK, made once per
	// connection so that the check allocates nothing; idle is its answer.
	// Only the connection's holder (its taker) uses them.
	peek func(fd uintptr) bool
	idle bool
	dl   netio.Deadlines

	// idler is c when it keeps its own readiness (the epoll layer,
	// proxy/netio/epoll): its Idle answers without a system call unless
	// an event came from the server.
	idler selfPolled

	// ex is the exchange of the HTTP/2 engine's request on the
	// connection (foreign.go), reused from one request to the next.
	ex Exchange

	// src is what br reads when c is the epoll layer's (tryIO): c, or
	// without blocking while an event callback fills br (inline.go).
	src upSrc
	// sink is what bw writes when c is the epoll layer's: c, or TryWrite
	// for the reaper's send of a request (onRequest).
	sink cliSink
}

// selfPolled is a connection that keeps its own readiness (the epoll
// layer): Idle is idleOK's check, for the holder; Quiet the sweeper's,
// which leaves the readiness alone.
type selfPolled interface {
	Idle() bool
	Quiet() bool
}

// newUpConn wraps a new connection to up made for key. The idle check of
// a TLS connection looks at the socket under it: a close_notify or any
// record from the server makes it unusable.
func newUpConn(c net.Conn, up *Upstream, key string) *upConn {
	uc := &upConn{c: c, up: up, key: key}
	uc.br, uc.bw = uc.newReader(), uc.newWriter()
	if up != nil && up.H1 != nil {
		up.H1.OpenConns.Add(1)
		up.H1.TotalConns.Add(1)
	}
	if ic, ok := c.(selfPolled); ok {
		uc.idler = ic
		return uc
	}
	sock := c
	if tc, ok := c.(*tls.Conn); ok {
		sock = tc.NetConn()
	}
	if sc, ok := sock.(syscall.Conn); ok {
		uc.raw, _ = sc.SyscallConn()
		uc.peek = func(fd uintptr) bool {
			uc.idle = peekIdle(fd)
			return true // never wait for readiness
		}
	}
	return uc
}

// release hands uc back to its own server's pool; it must be at a response
// boundary (nothing buffered from the server).
func (uc *upConn) release(now time.Time) {
	if uc.br.Buffered() > 0 || uc.up.stale(uc.c) {
		// A connection to an address its server no longer has (DNS or
		// `set server addr` moved it while it served) is not reused.
		uc.close()
		return
	}
	uc.up.Pool.put(uc, now)
}

// DryAfter is how long an idle pooled connection keeps its reader and
// writer (2 x netio.BufSize): a busy server's connections are taken again
// sooner and keep theirs; the others give them back (HAProxy keeps no
// buffer on an idle connection) and take new ones when taken.
const DryAfter = time.Second

// dry gives back uc's buffers (both empty: uc is pooled at a response
// boundary, its requests flushed) and drops its exchange's; the pool's
// lock is held, so that no taker has uc.
func (uc *upConn) dry() {
	if uc.br == nil {
		return
	}
	netio.PutReader(uc.br)
	netio.PutWriter(uc.bw)
	uc.br, uc.bw = nil, nil
	uc.ex = Exchange{} // its head's buffers, and its last body reader (the old reader)
}

// wet gives uc, just taken from its pool, its buffers again if it had
// given them back.
func (uc *upConn) wet() {
	if uc.br == nil {
		uc.br, uc.bw = uc.newReader(), uc.newWriter()
	}
}

func (uc *upConn) close() {
	if uc.up != nil && uc.up.H1 != nil {
		uc.up.H1.OpenConns.Add(-1)
	}
	uc.c.Close()
	netio.PutReader(uc.br)
	netio.PutWriter(uc.bw)
	uc.br, uc.bw = nil, nil
}

// idleOK reports whether an idle uc can carry a new request: nothing is
// buffered from its server, its socket has nothing to read, not even a
// close, and its server's address did not change since it was opened. It
// costs one non-blocking system call (pool_unix.go) and no allocation; on
// the epoll layer none unless the server sent something since the last
// response (Conn.Idle).
// Only uc's holder may call it.
func (uc *upConn) idleOK() bool {
	if uc.br.Buffered() > 0 || uc.up.stale(uc.c) {
		return false
	}
	if uc.idler != nil {
		return uc.idler.Idle()
	}
	if uc.raw == nil {
		return true
	}
	uc.idle = false
	return uc.raw.Read(uc.peek) == nil && uc.idle
}

// stale reports whether c, a connection to up, leads to an address up no
// longer has: it was opened before a runtime address change (Moved). One
// atomic load while the address never changed; no allocation.
func (up *Upstream) stale(c net.Conn) bool {
	if up == nil {
		return false // a connection made without its server (tests)
	}
	cur := up.Moved.Load()
	if cur == nil {
		return false
	}
	var got netip.AddrPort
	if ap, ok := c.(interface {
		AddrPorts() (local, remote netip.AddrPort)
	}); ok {
		_, got = ap.AddrPorts() // the epoll layer's: no net.Addr made
	} else if ta, ok := c.RemoteAddr().(*net.TCPAddr); ok {
		got = ta.AddrPort()
	} else {
		return false
	}
	return got.Addr().Unmap() != cur.Addr().Unmap() || got.Port() != cur.Port()
}
