package epoll

import (
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/fulcrum-proxy/fulcrum/proxy/netio"
	"github.com/fulcrum-proxy/fulcrum/proxy/netio/uring"
)

// Read-ahead: a connection that waits with AwaitRead (a server's response
// to a request HTTP/2's reader sent) is woken with its bytes already read.
// The reaper, given a batch of events by epoll_wait, first claims the
// connections of the batch that wait so (it takes their hibernation, as
// the first event would), reads all of them in one io_uring_enter (one
// IORING_OP_RECV with MSG_DONTWAIT each, into a pooled buffer of the
// connection's), then wakes them: the read that follows takes the bytes
// from that buffer without a system call. On a machine where a system
// call costs about a microsecond on entry and exit, that is the cost of
// the response's read (bench/README.md, "Sends in one system call").
//
// A read ahead is the read the woken connection would have made first:
// what it finds (bytes, the end of the stream or an error) leaves c's
// readiness as that read would, and the bytes wait in pre for the next
// Read or TryRead, which takes them before anything else; while any wait
// there, the connection is readable and not idle. The poller's ring is
// made at its first read ahead; where io_uring is refused, AwaitRead is
// Await.

// preRead is what a read ahead found: bytes not yet taken, in a buffer of
// netio's pool given back once they are. Written by the reaper before it
// wakes the connection (set last), read by the connection's user after.
type preRead struct {
	buf  []byte // the bytes not taken yet
	full []byte // the pooled buffer they are in
	set  atomic.Bool
}

// AwaitRead is Await whose wake comes with c's first bytes read ahead by
// the reaper, in one system call with the other connections its batch of
// events wakes (when the kernel lends io_uring; Await otherwise).
func (c *Conn) AwaitRead(w Waker) { c.await(w, true) }

// takePre takes the bytes read ahead into b (pre is set). Pair, Lend
// and splice use the descriptor directly and do not look at pre: a
// connection with bytes read ahead is not idle, so it is not pooled and
// never handed to them.
func (c *Conn) takePre(b []byte) int {
	n := copy(b, c.pre.buf)
	c.pre.buf = c.pre.buf[n:]
	if len(c.pre.buf) == 0 {
		c.pre.set.Store(false)
		netio.PutBuf(c.pre.full)
		c.pre.buf, c.pre.full = nil, nil
	}
	return n
}

// aheadRing is the poller's ring for reads ahead, made at the first (its
// reaper's alone); nil with noRing once io_uring was refused.
func (p *poller) aheadRing() *uring.Ring {
	if p.ring == nil && !p.noRing {
		r, err := uring.New(maxEvents, uring.SetupSubmitAll)
		if err == nil {
			var pr *uring.Probe
			if pr, err = r.Probe(); err != nil || !pr.Supported(uring.OpRecv) {
				r.Close()
				r, err = nil, unix.ENOSYS
			}
		}
		if err != nil {
			p.noRing = true
			return nil
		}
		p.ring = r
	}
	return p.ring
}

// claim takes the connections of events that wait with AwaitRead and are
// readable, reads them ahead, and marks their events done (Fd -1) with
// the connection kept in p.claimed for wake. It returns how many it
// claimed.
func (p *poller) claim(events []unix.EpollEvent) int {
	p.claimed = p.claimed[:0]
	for i := range events {
		ev := &events[i]
		if ev.Events&(unix.EPOLLIN|unix.EPOLLRDHUP|unix.EPOLLHUP|unix.EPOLLERR) == 0 {
			continue
		}
		c := p.g.conns.get(int(ev.Fd))
		if c == nil || c.gen != ev.Pad || c.r.hib.Load() != c || !c.ahead.Load() || c.pre.set.Load() {
			continue
		}
		if len(p.claimed) == 0 && p.aheadRing() == nil {
			return 0
		}
		// Taking the hibernation first, as rouse: its fields are then
		// the reaper's to read (their user waits for Wake).
		if !c.r.hib.CompareAndSwap(c, nil) {
			continue // woken meanwhile (its deadline, its close)
		}
		if ev.Events&(unix.EPOLLRDHUP|unix.EPOLLHUP|unix.EPOLLERR) != 0 {
			c.hup.Store(true)
		}
		// Not an AwaitRead's after all (another wait began since the look
		// above): woken by wakeClaimed as this event would have woken it,
		// without a read ahead. (Giving the hibernation back for
		// dispatch would lose the wake of a Close coming in between.)
		plain := !c.ahead.Load() || !c.short
		p.claimed = append(p.claimed, claimed{c: c, ev: ev.Events, plain: plain})
		ev.Fd = -1
	}
	if len(p.claimed) == 0 {
		return 0
	}
	for start := 0; start < len(p.claimed); start += maxEvents {
		p.readAhead(p.claimed[start:min(len(p.claimed), start+maxEvents)])
	}
	return len(p.claimed)
}

// claimed is a connection the reaper read ahead, and its event.
type claimed struct {
	c  *Conn
	ev uint32
	// buf is the pooled buffer the read went to; n and errno its result.
	buf   []byte
	res   int32
	fired bool // a read was submitted and completed
	// plain: a hibernation that is not an AwaitRead's, woken without a
	// read ahead.
	plain bool
}

// readAhead reads each of cs into a pooled buffer, in one io_uring_enter.
// A connection whose read cannot be made so (closed, its read deadline
// passed, the ring failing) is woken without bytes: its own read then
// does what it would have done.
func (p *poller) readAhead(cs []claimed) {
	r := p.ring
	flying := 0
	for i := range cs {
		cl := &cs[i]
		c := cl.c
		if cl.plain || c.r.expired() || !c.incref() {
			continue
		}
		cl.buf = netio.GetBuf()
		c.r.ready.Store(0)
		r.GetSQE().PrepRecv(c.fd, unsafe.Pointer(unsafe.SliceData(cl.buf)), uint32(len(cl.buf)), unix.MSG_DONTWAIT, uint64(i))
		flying++
	}
	if flying == 0 {
		return
	}
	p.g.aheadEnters.Add(1)
	took, err := r.SubmitAndPeek()
	// sent: the entries went to the kernel (all of them: with
	// IORING_SETUP_SUBMIT_ALL it takes all or fails); lost: the ring
	// failed while the kernel held some.
	sent, lost := err == nil && took > 0, false
	if sent {
		got := p.reapAhead(cs)
		for got < flying {
			// A receive not finished at once (not expected with
			// MSG_DONTWAIT on a socket that had an event: at worst it
			// says EAGAIN), or entries the kernel did not take yet
			// (this enter submits them): each is awaited, its buffer
			// being the kernel's until then.
			p.g.aheadEnters.Add(1)
			if _, err := r.SubmitAndWait(1); err != nil {
				lost = true
				break
			}
			got += p.reapAhead(cs)
		}
	}
	for i := range cs {
		cl := &cs[i]
		if cl.buf == nil {
			continue
		}
		c := cl.c
		if !cl.fired {
			c.r.ready.Store(1) // the read is the connection's
			if !sent {
				// Never submitted (the entries are dropped with the
				// ring): the buffer and the reference come back.
				netio.PutBuf(cl.buf)
				c.decref()
			}
			// Otherwise the kernel may still write the buffer and use
			// the descriptor: both stay its own (leaked).
			cl.buf = nil
			continue
		}
		switch n := int(cl.res); {
		case n > 0:
			c.pre.buf, c.pre.full = cl.buf[:n], cl.buf
			if n == len(cl.buf) || c.hup.Load() {
				c.r.ready.Store(1) // more, or the end, may be waiting
			}
			c.pre.set.Store(true)
			p.g.aheadReads.Add(1)
		case n == -int(unix.EAGAIN):
			// An event for nothing: woken all the same, the
			// connection's user finds it not readable and waits again.
			netio.PutBuf(cl.buf)
		default:
			// The end of the stream or an error: the connection's own
			// read finds it again.
			c.r.ready.Store(1)
			netio.PutBuf(cl.buf)
		}
		cl.buf = nil
		c.decref()
	}
	if !sent || lost {
		p.ring.Close()
		p.ring, p.noRing = nil, true
	}
}

// reapAhead records the completions ready in cs and returns how many.
func (p *poller) reapAhead(cs []claimed) int {
	if p.cqes == nil {
		p.cqes = make([]uring.CQE, maxEvents)
	}
	got := 0
	for {
		n := p.ring.Reap(p.cqes)
		if n == 0 {
			return got
		}
		for _, cqe := range p.cqes[:n] {
			if cqe.UserData < uint64(len(cs)) {
				cl := &cs[cqe.UserData]
				cl.res, cl.fired = cqe.Res, true
				got++
			}
		}
	}
}

// wakeClaimed wakes the connections claim took, as their events would
// have (dispatch): the output side signalled, the hibernation ended.
func (p *poller) wakeClaimed() {
	for i := range p.claimed {
		cl := &p.claimed[i]
		c := cl.c
		if cl.plain {
			c.r.ready.Store(1) // as dispatch's signal
		}
		if cl.ev&(unix.EPOLLOUT|unix.EPOLLHUP|unix.EPOLLERR) != 0 {
			c.w.signal()
		}
		c.unpark()
		if c.short {
			c.p.g.awaiting.Add(-1)
		} else {
			c.p.g.sleeping.Add(-1)
		}
		c.wk.Wake()
		cl.c = nil
	}
	p.claimed = p.claimed[:0]
}

// ReadAheads returns how many reads ahead found bytes (AwaitRead), and in
// how many io_uring_enter calls the reads ahead were made.
func (g *Group) ReadAheads() (reads, enters int64) {
	return g.aheadReads.Load(), g.aheadEnters.Load()
}
