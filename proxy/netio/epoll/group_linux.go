package epoll

import (
	"fmt"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/fulcrum-proxy/fulcrum/proxy/netio/uring"
)

// maxEvents is how many events one epoll_wait returns at most.
const maxEvents = 256

// The events a connection is registered for: input (and the peer's close)
// from the start, output too once a write found the buffer full.
const (
	inEvents    = unix.EPOLLIN | unix.EPOLLRDHUP | unix.EPOLLET
	inOutEvents = inEvents | unix.EPOLLOUT
)

// Group is a set of pollers and the connections registered in them.
type Group struct {
	polls []*poller
	next  atomic.Uint32 // round robin over polls for new connections
	gen   atomic.Uint32 // generations of registrations
	conns table
	live  atomic.Int64 // connections registered and not yet closed
	// sleeping counts the connections that hibernate (Conn.Hibernate).
	sleeping atomic.Int64
	// awaiting counts the connections waiting in an Await.
	awaiting atomic.Int64
	// pairs counts the Pairs relaying now (StartPair to their end).
	pairs atomic.Int64
	// aheadReads counts the reads ahead that found bytes, aheadEnters
	// the io_uring_enter calls that made the reads ahead
	// (readahead_linux.go).
	aheadReads, aheadEnters atomic.Int64

	// epoch is the origin of the pairs' clock (Pair: ns since epoch,
	// monotonic).
	epoch time.Time

	mu     sync.Mutex
	refs   int  // users (Ref/Unref); the pollers close at 0
	closed bool // Close was called
	// The rings lent to SendBatch (sendbatch_linux.go), under rmu: those
	// free, how many were made and not closed, whether io_uring was
	// refused, whether Close closed them.
	rmu         sync.Mutex
	rings       []*uring.Ring
	nrings      int
	ringsOff    bool
	ringsClosed bool
}

// NewGroup returns a group of n pollers (n <= 0: one per GOMAXPROCS), each
// with its reaper goroutine started. The caller holds one reference
// (Unref closes the group when it drops the last).
func NewGroup(n int) (*Group, error) {
	if n <= 0 {
		n = runtime.GOMAXPROCS(0)
	}
	g := &Group{refs: 1, epoch: time.Now()}
	for range n {
		p, err := newPoller(g)
		if err != nil {
			g.Close()
			return nil, err
		}
		g.polls = append(g.polls, p)
	}
	for _, p := range g.polls {
		go p.run()
	}
	return g, nil
}

// Ref takes a reference on g: a proxy built on the pollers of the one it
// replaces (a reload). It reports false when g is already closed.
func (g *Group) Ref() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return false
	}
	g.refs++
	return true
}

// Unref drops a reference; the last one closes the group.
func (g *Group) Unref() {
	g.mu.Lock()
	g.refs--
	last := g.refs == 0
	g.mu.Unlock()
	if last {
		g.Close()
	}
}

// Close stops the reapers and closes the epoll descriptors, and waits for
// the reapers to return. Connections still registered stay usable as
// sockets but are no longer woken: close them first.
func (g *Group) Close() error {
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		return nil
	}
	g.closed = true
	g.mu.Unlock()
	g.closeRings()
	for _, p := range g.polls {
		p.file.Close() // wakes the reaper's wait with an error
	}
	for _, p := range g.polls {
		if p.started.Load() {
			<-p.done
		}
		if p.ring != nil {
			p.ring.Close()
		}
	}
	return nil
}

// Conns returns how many connections are registered in g and not yet
// closed (their descriptors).
func (g *Group) Conns() int64 { return g.live.Load() }

// Pairs returns how many Pairs relay between g's connections now.
func (g *Group) Pairs() int64 { return g.pairs.Load() }

// pick returns the poller for a new connection.
func (g *Group) pick() *poller {
	return g.polls[int(g.next.Add(1))%len(g.polls)]
}

// register makes fd, a connected non-blocking socket, a Conn of one of g's
// pollers. readable says to try the first read at once (an accepted
// client has usually sent its request already; a server has not answered
// a request not yet written).
//
// The socket enters the poller's epoll instance only at its first wait
// (Conn.arm), for input; the first write that finds the buffer full adds
// EPOLLOUT. A client served at once and closed (a connection per request)
// thus costs no epoll_ctl at all, and registering EPOLLOUT from the start
// would wake the reaper for every new connection, whose socket is
// writable at once, for nothing. It makes no system call and cannot fail.
func (g *Group) register(fd int, readable bool) *Conn {
	c := g.socket(fd, readable)
	c.counted = true
	g.live.Add(1)
	return c
}

// socket makes fd a Conn of one of g's pollers, in the table so that the
// reaper finds it once it is registered, but not counted in live (a
// listening socket uses this alone).
func (g *Group) socket(fd int, readable bool) *Conn {
	p := g.pick()
	c := newConn(fd, p, int32(g.gen.Add(1)))
	if readable {
		c.r.ready.Store(1)
	}
	g.conns.set(fd, c)
	return c
}

// poller is one epoll instance and its reaper.
type poller struct {
	g       *Group
	epfd    int
	file    *os.File        // epfd, registered in Go's poller
	rc      syscall.RawConn // file's
	events  []unix.EpollEvent
	park    parking // hibernating connections' read deadlines (park_linux.go)
	started atomic.Bool
	done    chan struct{} // closed when run returns

	// stamp is the group's clock (ns since its epoch) as of the batch of
	// events being dispatched, read at the first Pair's event of the
	// batch (stamped); the reaper's own.
	stamp   int64
	stamped bool

	// Reads ahead (readahead_linux.go), the reaper's: the ring (made at
	// the first; noRing once io_uring was refused or failed), the
	// connections of the batch claimed, the completions' buffer.
	ring    *uring.Ring
	noRing  bool
	claimed []claimed
	cqes    []uring.CQE
}

// clock returns the reaper's stamp of its current batch of events. Only
// the reaper calls it.
func (p *poller) clock() int64 {
	if !p.stamped {
		p.stamp = int64(time.Since(p.g.epoch))
		p.stamped = true
	}
	return p.stamp
}

func newPoller(g *Group) (*poller, error) {
	fd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, os.NewSyscallError("epoll_create1", err)
	}
	// Non-blocking, so that os.NewFile registers it in Go's poller: the
	// reaper sleeps there until one of its connections has an event.
	if err := unix.SetNonblock(fd, true); err != nil {
		unix.Close(fd)
		return nil, os.NewSyscallError("fcntl", err)
	}
	f := os.NewFile(uintptr(fd), fmt.Sprintf("epoll:%d", fd))
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return nil, err
	}
	return &poller{g: g, epfd: fd, file: f, rc: rc, events: make([]unix.EpollEvent, maxEvents), done: make(chan struct{})}, nil
}

// run is the reaper: it waits in Go's poller until the epoll descriptor is
// readable, collects the events without blocking and hands them to the
// connections, until the group closes. It stays in one RawConn.Read whose
// callback always declines after collecting: Go's poller records every
// edge of the epoll descriptor from the start of the Read (an event queued
// while the callback runs makes the next wait return at once), so the
// callback never needs a second, empty epoll_wait to be sure it missed
// nothing, and the goroutines it woke run while it waits.
func (p *poller) run() {
	p.started.Store(true)
	defer close(p.done)
	p.rc.Read(func(uintptr) bool {
		p.poll()
		return false
	})
}

// poll collects the pending events without blocking and dispatches them,
// until an epoll_wait returns fewer than it could hold: events left in the
// ready list raise no new edge, so they must not be left there.
func (p *poller) poll() {
	for {
		n, err := rawEpollWait(p.epfd, p.events)
		if err == unix.EINTR {
			continue
		}
		if err != nil || n <= 0 {
			return
		}
		p.stamped = false
		claimed := p.claim(p.events[:n])
		for i := range p.events[:n] {
			if p.events[i].Fd >= 0 {
				p.dispatch(&p.events[i])
			}
		}
		if claimed > 0 {
			p.wakeClaimed()
		}
		if n < len(p.events) {
			return
		}
	}
}

// dispatch records one event on its connection and wakes its waiters.
func (p *poller) dispatch(ev *unix.EpollEvent) {
	c := p.g.conns.get(int(ev.Fd))
	if c == nil || c.gen != ev.Pad {
		return // closed, or its descriptor now belongs to another
	}
	if ev.Events&(unix.EPOLLRDHUP|unix.EPOLLHUP|unix.EPOLLERR) != 0 {
		c.hup.Store(true) // before the signal: see Conn.hup
	}
	if pr := c.pair.Load(); pr != nil {
		// Relayed by a Pair: no waiter, the pump moves the bytes here.
		if ev.Events&(unix.EPOLLIN|unix.EPOLLRDHUP|unix.EPOLLHUP|unix.EPOLLERR) != 0 {
			c.r.ready.Store(1)
		}
		if ev.Events&(unix.EPOLLOUT|unix.EPOLLHUP|unix.EPOLLERR) != 0 {
			c.w.ready.Store(1)
		}
		pr.kick(p)
		return
	}
	if ev.Events&(unix.EPOLLIN|unix.EPOLLRDHUP|unix.EPOLLHUP|unix.EPOLLERR) != 0 {
		c.r.signal()
	}
	if ev.Events&(unix.EPOLLOUT|unix.EPOLLHUP|unix.EPOLLERR) != 0 {
		c.w.signal()
	}
}

// table maps descriptors to their Conns, read without a lock by the
// reapers; pages are added under mu, never removed.
type table struct {
	mu    sync.Mutex
	pages atomic.Pointer[[]*page]
}

const pageSize = 1024

type page [pageSize]atomic.Pointer[Conn]

func (t *table) get(fd int) *Conn {
	if fd < 0 {
		return nil
	}
	pp := t.pages.Load()
	if pp == nil || fd/pageSize >= len(*pp) {
		return nil
	}
	return (*pp)[fd/pageSize][fd%pageSize].Load()
}

func (t *table) set(fd int, c *Conn) {
	i := fd / pageSize
	pp := t.pages.Load()
	if pp == nil || i >= len(*pp) {
		t.mu.Lock()
		pp = t.pages.Load()
		if pp == nil || i >= len(*pp) {
			var grown []*page
			if pp != nil {
				grown = append(grown, *pp...)
			}
			for len(grown) <= i {
				grown = append(grown, new(page))
			}
			pp = &grown
			t.pages.Store(pp)
		}
		t.mu.Unlock()
	}
	(*pp)[i][fd%pageSize].Store(c)
}

// clear removes c's entry, if fd still maps to c.
func (t *table) clear(fd int, c *Conn) {
	if pp := t.pages.Load(); pp != nil && fd/pageSize < len(*pp) {
		(*pp)[fd/pageSize][fd%pageSize].CompareAndSwap(c, nil)
	}
}
