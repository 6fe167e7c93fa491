package epoll

import (
	"net"
	"os"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/fulcrum-proxy/fulcrum/proxy/netio/uring"
)

// SendBatch gathers writes to connections of the layer and makes them
// together: all in one io_uring_enter (one IORING_OP_SEND with
// MSG_DONTWAIT each, completed as the kernel takes them) when the group
// lends a ring, one TryWrite each otherwise. A caller with several
// sockets to write at one moment (HTTP/2's connection reader, which
// sends the requests of one client read to as many servers) then crosses
// into the kernel once instead of once a socket: on a virtual machine
// whose every system call costs about a microsecond on entry and exit
// (bench/README.md, "Sends in one system call"), that is most of a send's
// cost in user space.
//
// Each write is TryWrite's, except that a short one is not retried: its
// Result says ErrWouldBlock with the count taken, as for a socket found
// full. Queue one write per connection (two to one socket would
// interleave after a short first). A SendBatch is used by one goroutine
// at a time; its zero value is ready.
type SendBatch struct {
	reqs []sendReq
	cqes []uring.CQE
	// Enters counts the io_uring_enter calls made, Sends the writes
	// made through them (for tests and benchmarks).
	Enters, Sends int64
	// mayWait, for tests: the sends may wait (no MSG_DONTWAIT), so that
	// one to a full socket stays with the kernel and is cancelled.
	mayWait bool
}

type sendReq struct {
	c       *Conn
	p       []byte
	n       int
	err     error
	flying  bool // a send submitted, its completion not reaped yet
	settled bool // n and err are final
}

// Len returns how many writes are queued.
func (b *SendBatch) Len() int { return len(b.reqs) }

// Add queues a write of p to c and returns its index for Result. p must
// not change until Flush returns.
func (b *SendBatch) Add(c *Conn, p []byte) int {
	b.reqs = append(b.reqs, sendReq{c: c, p: p})
	return len(b.reqs) - 1
}

// Result returns what the queued write i did once Flush returned: n bytes
// taken, and nil when that was all of them, ErrWouldBlock when the socket
// took only n, or the error that failed it (a *net.OpError, as Write's).
func (b *SendBatch) Result(i int) (n int, err error) {
	r := &b.reqs[i]
	return r.n, r.err
}

// Reset forgets the queued writes and their results.
func (b *SendBatch) Reset() {
	clear(b.reqs)
	b.reqs = b.reqs[:0]
}

// sendFlags are every send's: never wait (the kernel answers EAGAIN
// instead of arming a poll for later), no SIGPIPE.
const sendFlags = unix.MSG_DONTWAIT | unix.MSG_NOSIGNAL

// cancelBit marks the user data of a cancellation's completion.
const cancelBit = 1 << 63

// Flush makes the queued writes without waiting for any socket. The
// results are then read with Result.
func (b *SendBatch) Flush() {
	if len(b.reqs) == 0 {
		return
	}
	var ring *uring.Ring
	g := b.reqs[0].c.p.g
	if len(b.reqs) > 1 {
		ring = g.takeRing()
	}
	for start := 0; start < len(b.reqs) && ring != nil; {
		end := min(len(b.reqs), start+batchMax)
		if !b.submit(ring, start, end) {
			ring.Close() // entries it may still hold are never submitted
			ring = nil
			g.lostRing()
		}
		start = end
	}
	if ring != nil {
		if ring.Pending() != 0 {
			// Entries never submitted (not expected: the kernel takes
			// them all): the ring goes with them.
			ring.Close()
			g.lostRing()
		} else {
			g.putRing(ring)
		}
	}
	for i := range b.reqs {
		if r := &b.reqs[i]; !r.settled {
			r.n, r.err = r.c.TryWrite(r.p)
			r.settled = true
		}
	}
}

// submit sends reqs[start:end] (batchMax at most) through ring, and
// reports whether the ring is still fit for use; the requests it could
// not send stay unsettled, for TryWrite.
func (b *SendBatch) submit(ring *uring.Ring, start, end int) bool {
	flying := 0
	for i := start; i < end; i++ {
		r := &b.reqs[i]
		c := r.c
		if !c.incref() {
			r.err, r.settled = c.opErr("write", net.ErrClosed), true
			continue
		}
		if c.w.expired() || len(r.p) == 0 {
			c.decref()
			continue // TryWrite answers
		}
		sqe := ring.GetSQE()
		if sqe == nil {
			c.decref()
			continue // TryWrite makes it
		}
		c.w.ready.Store(0)
		flags := uint32(sendFlags)
		if b.mayWait {
			flags = unix.MSG_NOSIGNAL
		}
		sqe.PrepSend(c.fd, unsafe.Pointer(unsafe.SliceData(r.p)), uint32(len(r.p)), flags, uint64(i))
		r.flying = true
		flying++
	}
	if flying == 0 {
		return true
	}
	b.Enters++
	took, err := ring.SubmitAndPeek()
	if err != nil || took == 0 {
		// Nothing submitted: the entries stay in the ring, which is
		// dropped; the writes are made the usual way.
		b.land(start, end)
		return false
	}
	left := flying - b.reap(ring)
	if left > 0 {
		// A send the kernel did not finish at once (not expected with
		// MSG_DONTWAIT), or entries it did not take: each is cancelled
		// (those not taken are submitted with the cancellations, ahead
		// of them) and its end awaited, so that no buffer stays with the
		// kernel. A cancelled send took nothing (ECANCELED: the socket
		// was full, for the caller).
		for i := start; i < end; i++ {
			if b.reqs[i].flying {
				if sqe := ring.GetSQE(); sqe != nil { // batchMax leaves room
					sqe.PrepCancel(uint64(i), uint64(i)|cancelBit)
				}
			}
		}
		for left > 0 {
			b.Enters++
			if _, err := ring.SubmitAndWait(1); err != nil {
				// The ring no longer answers, and may still make the
				// sends it holds: they fail, and their connections
				// keep their reference (their descriptors are never
				// reused under the kernel's feet). A send the kernel
				// made all the same may be retried by its caller on
				// another connection: a duplicate request is possible
				// on this path alone (io_uring_enter failing).
				for i := start; i < end; i++ {
					if r := &b.reqs[i]; r.flying {
						r.err, r.settled = r.c.opErr("write", os.NewSyscallError("io_uring_enter", err)), true
					}
				}
				return false
			}
			left -= b.reap(ring)
		}
	}
	runtime.KeepAlive(b.reqs)
	return true
}

// land gives back the references of the sends not submitted.
func (b *SendBatch) land(start, end int) {
	for i := start; i < end; i++ {
		if r := &b.reqs[i]; r.flying {
			r.flying = false
			r.c.w.ready.Store(1)
			r.c.decref()
		}
	}
}

// reap settles the sends whose completions are ready and returns how
// many it settled.
func (b *SendBatch) reap(ring *uring.Ring) int {
	if b.cqes == nil {
		b.cqes = make([]uring.CQE, 64)
	}
	got := 0
	for {
		n := ring.Reap(b.cqes)
		if n == 0 {
			return got
		}
		for _, cqe := range b.cqes[:n] {
			if cqe.UserData&cancelBit != 0 {
				continue
			}
			r := &b.reqs[cqe.UserData]
			r.flying, r.settled = false, true
			got++
			b.Sends++
			c := r.c
			switch res := int(cqe.Res); {
			case res == len(r.p):
				r.n = res
				c.w.ready.Store(1)
			case res >= 0:
				r.n, r.err = res, ErrWouldBlock
			case res == -int(unix.EAGAIN) || res == -int(unix.ECANCELED):
				r.err = ErrWouldBlock
			default:
				r.err = c.opErr("write", os.NewSyscallError("write", unix.Errno(-res)))
				c.w.ready.Store(1)
			}
			c.decref()
		}
	}
}

// ringEntries is the size of the rings a group lends, and batchMax the
// most sends one io_uring_enter makes (a batch longer than that takes
// several): half of it, so that each can be followed by its cancellation.
const (
	ringEntries = 64
	batchMax    = ringEntries / 2
)

// takeRing lends one of g's rings for sends, making one when none is
// free, or returns nil: io_uring refused here (the batch's writes are
// then made one by one), or as many rings lent as GOMAXPROCS twice.
func (g *Group) takeRing() *uring.Ring {
	g.rmu.Lock()
	defer g.rmu.Unlock()
	if n := len(g.rings); n > 0 {
		r := g.rings[n-1]
		g.rings[n-1] = nil
		g.rings = g.rings[:n-1]
		return r
	}
	if g.ringsOff || g.ringsClosed || g.nrings >= 2*runtime.GOMAXPROCS(0) {
		return nil
	}
	r, err := newSendRing()
	if err != nil {
		g.ringsOff = true
		return nil
	}
	g.nrings++
	return r
}

// newSendRing makes a ring for sends, if the kernel has what they need:
// IORING_OP_SEND, and IORING_SETUP_SUBMIT_ALL (a send refused at its
// submission does not keep the next ones back).
func newSendRing() (*uring.Ring, error) {
	r, err := uring.New(ringEntries, uring.SetupSubmitAll)
	if err != nil {
		return nil, err
	}
	p, err := r.Probe()
	if err != nil || !p.Supported(uring.OpSend) || !p.Supported(uring.OpAsyncCancel) {
		r.Close()
		return nil, unix.ENOSYS
	}
	return r, nil
}

// putRing takes back a ring takeRing lent.
func (g *Group) putRing(r *uring.Ring) {
	g.rmu.Lock()
	if g.ringsClosed {
		g.nrings--
		g.rmu.Unlock()
		r.Close()
		return
	}
	g.rings = append(g.rings, r)
	g.rmu.Unlock()
}

// lostRing counts a lent ring closed by its borrower, after it failed:
// no more are made (the writes are then made one by one), as a failing
// kernel would fail the next ring too.
func (g *Group) lostRing() {
	g.rmu.Lock()
	g.nrings--
	g.ringsOff = true
	g.rmu.Unlock()
}

// SendRings reports how many rings g made for SendBatch and has not
// closed, and whether io_uring was refused.
func (g *Group) SendRings() (n int, refused bool) {
	g.rmu.Lock()
	defer g.rmu.Unlock()
	return g.nrings, g.ringsOff
}

// closeRings closes the rings not lent (Close).
func (g *Group) closeRings() {
	g.rmu.Lock()
	rings := g.rings
	g.rings = nil
	g.ringsClosed = true
	g.nrings -= len(rings)
	g.rmu.Unlock()
	for _, r := range rings {
		r.Close()
	}
}
