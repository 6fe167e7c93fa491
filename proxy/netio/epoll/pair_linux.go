package epoll

import (
	"errors"
	"net"
	"os"
	"sync/atomic"
	"time"

	"github.com/fulcrum-proxy/fulcrum/proxy/netio"
	"golang.org/x/sys/unix"
)

// The event-driven relay: a Pair moves a mode tcp session's bytes from the
// pollers' reapers themselves, as HAProxy's event loop does, instead of
// waking a goroutine per direction and message (netio.Relay). Each of the
// two Conns points at the Pair (Conn.pair); the reaper that collects an
// event of either records the readiness on the Conn as usual, then runs the
// Pair's pump (kick) instead of signalling a waiter. The pump reads what a
// readable source has into its direction's buffer and writes it to the
// destination at once, all non-blocking; a destination that is full keeps
// the rest in the buffer, is registered for EPOLLOUT (Conn.arm) and the
// direction reads no more until its next writable event drained it
// (backpressure: one buffer per direction, as HAProxy's channel). A read
// that fills the whole buffer switches the direction to splice(2) through a
// pipe, as netio.Relay's bulk mode does.
//
// The two Conns may be served by two pollers (GOMAXPROCS > 1): the pump runs
// in whichever goroutine wins busy (a reaper, a timer, Abort's caller, the
// session's goroutine at Start); the others set dirty and return, and the
// winner pumps again before letting go, so no event is lost and no reaper
// ever blocks on a Pair.

// pairBudget is how many bytes a reaper moves for one Pair before handing
// the rest to a goroutine, so that a bulk flow does not hold a poller's
// other connections back.
const pairBudget = 4 << 20

// Pair relays between a client and a server Conn from the pollers
// (StartPair), with netio.Relay's results: Wait returns each direction's
// netio.CopyEnd once both have ended (or the pair failed). The Conns stay
// the caller's: the pair never closes them.
type Pair struct {
	c    [2]*Conn   // client, server
	dirs [2]pairDir // 0: client to server (in), 1: server to client (out)
	g    *Group     // both Conns'; its epoch is the pair's clock's
	abrt *func()    // Abort, in the Conns' lent while the pair runs
	done chan struct{}

	busy    atomic.Bool // a goroutine is pumping
	dirty   atomic.Bool // something happened since the pump last looked
	aborted atomic.Bool // Abort was called
	timerUp atomic.Bool // the idle timer fired

	// Under busy.
	failed  bool
	ended   bool
	timer   *time.Timer // the inactivity timeouts' (nil: none, or none armed yet)
	timerAt int64       // when it fires, on the group's clock (0: not armed)
	in, out netio.CopyEnd
}

// pairDir is one direction: the bytes read from its source and not yet
// written to its destination (buf[off:end], or inPipe bytes in its pipe
// once bulk), and how it ended.
type pairDir struct {
	buf      []byte // from netio's pool while it holds bytes (or the source is busy)
	off, end int
	pipe     [2]int // bulk: read end, write end (-1: none)
	inPipe   int
	bulk     bool // reads splice into the pipe
	noSplice bool // the pipe could not be made: stay on the buffer
	eof      bool // the source ended
	shut     bool // the destination's write half is shut
	n        int64
	srcErr   error
	dstErr   error
	// last is the direction's last progress (a read or a write of bytes),
	// on the group's clock (ns); srcIdle and dstIdle its timeouts (ns,
	// 0: none): the source's reads while nothing is pending, the
	// destination's writes while something is.
	last             int64
	srcIdle, dstIdle int64
}

func (d *pairDir) pending() int { return d.end - d.off + d.inPipe }

// errDifferentGroups: a Pair's Conns are in one Group.
var errDifferentGroups = errors.New("epoll: the connections of a pair are in different groups")

// StartPair relays between client and server (plaintext Conns of one
// Group) until both directions have ended, propagating half-closes (a
// source's end of stream shuts its destination's write half, once what it
// sent before is written), or one fails: a read or write error, an
// inactivity timeout, Abort, or the Close of either Conn. Inactivity
// timeouts are netio.Relay's (0: none): clientIdle bounds the wait for the
// client's bytes and for room to write to it, serverIdle the server's. The
// caller must not read, write or hibernate the Conns until Wait returns.
// It fails, having changed nothing, when either Conn is closed
// (net.ErrClosed) or they are in different groups.
func StartPair(client, server *Conn, clientIdle, serverIdle time.Duration) (*Pair, error) {
	return startPair(client, server, clientIdle, serverIdle, true)
}

// startPair is StartPair; splice false keeps both directions on the buffer
// (the tests of backpressure through it).
func startPair(client, server *Conn, clientIdle, serverIdle time.Duration, splice bool) (*Pair, error) {
	if client.p.g != server.p.g {
		return nil, errDifferentGroups
	}
	p := &Pair{c: [2]*Conn{client, server}, g: client.p.g, done: make(chan struct{})}
	ci, si := max(int64(clientIdle), 0), max(int64(serverIdle), 0)
	p.dirs[0] = pairDir{pipe: [2]int{-1, -1}, srcIdle: ci, dstIdle: si}
	p.dirs[1] = pairDir{pipe: [2]int{-1, -1}, srcIdle: si, dstIdle: ci}
	p.dirs[0].noSplice, p.dirs[1].noSplice = !splice, !splice
	abort := p.Abort
	p.abrt = &abort
	if !client.incref() {
		return nil, client.opErr("relay", net.ErrClosed)
	}
	if !server.incref() {
		client.decref()
		return nil, server.opErr("relay", net.ErrClosed)
	}
	// Held until set up: an event meanwhile only marks the pair dirty.
	p.busy.Store(true)
	p.g.pairs.Add(1)
	now := p.clock(nil)
	p.dirs[0].last, p.dirs[1].last = now, now
	for _, c := range p.c {
		c.pair.Store(p)
		c.lent.Store(p.abrt)
		// A Close before lent was set did not see the abort.
		if c.state.Load()&closedBit != 0 {
			p.aborted.Store(true)
		}
	}
	for d, c := range p.c {
		// The Conns' readiness carries over: an event collected before
		// the Pair was attached set it (and woke nobody), and a socket
		// not registered yet raises its event once it is.
		if err := c.arm(regIn); err != nil {
			p.failWith(d, true, c.opErr("read", err))
		}
	}
	p.busy.Store(false)
	p.kick(nil)
	return p, nil
}

// Abort ends the pair as a close of the client connection would (in's
// SrcErr is a read error wrapping net.ErrClosed), from any goroutine; once
// the pair has ended it does nothing. It does not block.
func (p *Pair) Abort() {
	p.aborted.Store(true)
	p.kick(nil)
}

// Done is closed when the pair has ended.
func (p *Pair) Done() <-chan struct{} { return p.done }

// Wait waits for the pair to end and returns how its directions ended: in
// is client to server, out server to client. The Conns are the caller's
// again (and still open unless closed meanwhile).
func (p *Pair) Wait() (in, out netio.CopyEnd) {
	<-p.done
	return p.in, p.out
}

// clock returns the group's clock (ns since its epoch): the reaper's
// stamp of its current batch of events when pl is given, else read now.
func (p *Pair) clock(pl *poller) int64 {
	if pl != nil {
		return pl.clock()
	}
	return int64(time.Since(p.g.epoch))
}

// kick runs the pump once something happened (an event, the timer, an
// abort): in this goroutine if no other pumps, else the one pumping does
// it again before it lets go. pl is the calling reaper's poller (nil from
// any other goroutine): a reaper moves at most pairBudget bytes, then a
// new goroutine goes on.
func (p *Pair) kick(pl *poller) {
	p.dirty.Store(true)
	for p.busy.CompareAndSwap(false, true) {
		more := false
		for p.dirty.Swap(false) {
			if more = p.pump(pl); more {
				break
			}
		}
		p.busy.Store(false)
		if more {
			p.dirty.Store(true)
			go p.kick(nil)
			return
		}
		if !p.dirty.Load() {
			return
		}
	}
}

// pump moves what can be moved without blocking, in both directions, and
// ends the pair once both are done or it failed. It reports true when pl's
// budget ran out with bytes still to move. Under busy.
func (p *Pair) pump(pl *poller) bool {
	if p.ended {
		return false
	}
	now := p.clock(pl)
	if p.aborted.Load() {
		p.failWith(0, true, p.c[0].opErr("read", net.ErrClosed))
	} else if p.timerUp.Swap(false) {
		p.timerAt = 0
		p.checkIdle(now)
	}
	var moved int64
	for !p.failed {
		p0 := p.step(0, now, &moved)
		p1 := !p.failed && p.step(1, now, &moved)
		if !p0 && !p1 {
			break
		}
		if pl != nil && moved >= pairBudget && !p.failed {
			return true
		}
	}
	if p.failed || (p.dirs[0].shut && p.dirs[1].shut) {
		p.finish()
		return false
	}
	p.armTimer(now)
	return false
}

// step makes direction d progress: writes what is pending, shuts the
// destination's write half after the source's end, reads the source when
// nothing is pending, and writes what it read. It reports whether
// anything changed. Under busy.
func (p *Pair) step(d int, now int64, moved *int64) bool {
	dir := &p.dirs[d]
	src, dst := p.c[d], p.c[1-d]
	progress := false
	for round := 0; round < 2; round++ {
		if !p.flush(d, now, moved, &progress) {
			return progress // blocked, or failed
		}
		if dir.bulk && dir.buf != nil {
			dir.release() // what was read before the switch is written
		}
		if dir.eof {
			if !dir.shut {
				// As netio.Relay: a failed shutdown (the peer is gone)
				// shows at the next write or read, if any.
				unix.Shutdown(dst.fd, unix.SHUT_WR)
				dir.shut = true
				dir.release()
				progress = true
			}
			return progress
		}
		if round == 1 || src.r.ready.Swap(0) == 0 {
			if dir.buf != nil && !dir.bulk && src.r.ready.Load() == 0 {
				dir.release() // drained and idle: the buffer goes back to the pool
			}
			return progress
		}
		n, err := p.read(d)
		switch {
		case err == nil && n == 0:
			src.r.ready.Store(1) // the end of the stream stays readable
			dir.eof = true
			progress = true
		case err == nil:
			dir.last = now
			progress = true
		case err == unix.EAGAIN:
			if dir.buf != nil && !dir.bulk {
				dir.release()
			}
			return progress
		default:
			src.r.ready.Store(1)
			call := "read"
			if dir.bulk {
				call = "splice"
			}
			p.failWith(d, true, src.opErr("read", os.NewSyscallError(call, err)))
			return true
		}
	}
	return progress
}

// read reads d's source into its buffer (or splices it into its pipe,
// bulk): n bytes, 0 and nil at the end of the stream, or the errno.
func (p *Pair) read(d int) (int, error) {
	dir := &p.dirs[d]
	src := p.c[d]
	if dir.bulk {
		n, err := ignoringEINTR(func() (int, error) {
			m, err := unix.Splice(src.fd, nil, dir.pipe[1], nil, spliceChunk, unix.SPLICE_F_NONBLOCK|unix.SPLICE_F_MOVE)
			return int(m), err
		})
		if err != nil {
			return 0, err
		}
		if n > 0 {
			src.r.ready.Store(1) // not known to be drained
		}
		dir.inPipe = n
		return n, nil
	}
	if dir.buf == nil {
		dir.buf = netio.GetBuf()
	}
	n, err := ignoringEINTR(func() (int, error) { return sysRead(src.fd, dir.buf) })
	if err != nil {
		return 0, err
	}
	if n == len(dir.buf) || (n > 0 && src.hup.Load()) {
		src.r.ready.Store(1) // more, or the end, may be waiting
	}
	dir.off, dir.end = 0, n
	if n == len(dir.buf) && !dir.noSplice {
		// The flow is bulk: the next reads splice (after these bytes).
		if dir.newPipe() {
			dir.bulk = true
		} else {
			dir.noSplice = true
		}
	}
	return n, nil
}

// flush writes d's pending bytes; it reports true once none are left, false
// when the destination is full (registered for EPOLLOUT, the direction
// waits for its event) or the write failed (the pair failed).
func (p *Pair) flush(d int, now int64, moved *int64, progress *bool) bool {
	dir := &p.dirs[d]
	dst := p.c[1-d]
	for dir.pending() > 0 {
		if dst.w.ready.Load() == 0 {
			return false
		}
		dst.w.ready.Store(0)
		var n int
		var err error
		call := "write"
		if dir.end > dir.off {
			n, err = ignoringEINTR(func() (int, error) { return sysWrite(dst.fd, dir.buf[dir.off:dir.end]) })
			if n > 0 {
				dir.off += n
			}
		} else {
			call = "splice"
			n, err = ignoringEINTR(func() (int, error) {
				m, err := unix.Splice(dir.pipe[0], nil, dst.fd, nil, dir.inPipe, unix.SPLICE_F_NONBLOCK|unix.SPLICE_F_MOVE)
				return int(m), err
			})
			if n > 0 {
				dir.inPipe -= n
			}
		}
		if n > 0 {
			dir.n += int64(n)
			*moved += int64(n)
			dir.last = now
			*progress = true
		}
		switch {
		case err == nil:
			dst.w.ready.Store(1) // all written, or room may be left: try again
		case err == unix.EAGAIN:
			if aerr := dst.arm(regInOut); aerr != nil {
				p.failWith(d, false, dst.opErr("write", aerr))
				*progress = true
			}
			return false
		default:
			dst.w.ready.Store(1)
			p.failWith(d, false, dst.opErr("write", os.NewSyscallError(call, err)))
			*progress = true
			return false
		}
	}
	return true
}

// newPipe makes the direction's pipe, grown to spliceChunk as ReadFrom's;
// false when it cannot be made.
func (d *pairDir) newPipe() bool {
	var fds [2]int
	if err := unix.Pipe2(fds[:], unix.O_NONBLOCK|unix.O_CLOEXEC); err != nil {
		return false
	}
	unix.FcntlInt(uintptr(fds[0]), unix.F_SETPIPE_SZ, spliceChunk)
	d.pipe = fds
	return true
}

// release gives the direction's buffer back to the pool.
func (d *pairDir) release() {
	if d.buf != nil {
		netio.PutBuf(d.buf)
		d.buf = nil
		d.off, d.end = 0, 0
	}
}

// failWith fails the pair, recording err as direction d's (its source's
// when src, else its destination's) if it is the pair's first error: as
// netio.Relay's abort, the other direction ends without one.
func (p *Pair) failWith(d int, src bool, err error) {
	if p.failed {
		return
	}
	p.failed = true
	if src {
		p.dirs[d].srcErr = err
	} else {
		p.dirs[d].dstErr = err
	}
}

// deadline returns when direction d times out (0: it cannot): its source
// srcIdle after the last progress on that socket while nothing is
// pending, its destination dstIdle after the direction's last progress
// while bytes are. Bytes written to a socket refresh its read timeout,
// as HAProxy's default (configuration.txt, "option independent-streams"):
// the other direction's progress counts for the source, so a client that
// only sends keeps a silent server's side alive.
func (p *Pair) deadline(d int) int64 {
	dir := &p.dirs[d]
	switch {
	case dir.pending() > 0:
		if dir.dstIdle > 0 {
			return dir.last + dir.dstIdle
		}
	case !dir.eof && dir.srcIdle > 0:
		return max(dir.last, p.dirs[1-d].last) + dir.srcIdle
	}
	return 0
}

// checkIdle fails the pair when a direction has been idle past its timeout
// (the timer fired).
func (p *Pair) checkIdle(now int64) {
	for d := range p.dirs {
		dl := p.deadline(d)
		if dl == 0 || now < dl {
			continue
		}
		if p.dirs[d].pending() > 0 {
			p.failWith(d, false, p.c[1-d].opErr("write", os.ErrDeadlineExceeded))
		} else {
			p.failWith(d, true, p.c[d].opErr("read", os.ErrDeadlineExceeded))
		}
		return
	}
}

// armTimer makes the timer fire at the earliest deadline, if it is not
// armed for sooner: progress pushes deadlines later without touching the
// timer (it fires, finds the session active, and is armed again), so a
// busy session costs one timer run per timeout, not one per message.
func (p *Pair) armTimer(now int64) {
	next := int64(0)
	for d := range p.dirs {
		if dl := p.deadline(d); dl != 0 && (next == 0 || dl < next) {
			next = dl
		}
	}
	if next == 0 || (p.timerAt != 0 && p.timerAt <= next) {
		return
	}
	p.timerAt = next
	wait := time.Duration(max(next-now, 0))
	if p.timer == nil {
		p.timer = time.AfterFunc(wait, p.timerFired)
	} else {
		p.timer.Reset(wait)
	}
}

func (p *Pair) timerFired() {
	p.timerUp.Store(true)
	p.kick(nil)
}

// finish ends the pair: buffers and pipes go, the Conns are the caller's
// again, and Wait returns. Under busy.
func (p *Pair) finish() {
	p.ended = true
	if p.timer != nil {
		p.timer.Stop()
	}
	for d := range p.dirs {
		dir := &p.dirs[d]
		dir.release()
		if dir.pipe[0] >= 0 {
			unix.Close(dir.pipe[0])
			unix.Close(dir.pipe[1])
			dir.pipe = [2]int{-1, -1}
		}
	}
	p.in = netio.CopyEnd{N: p.dirs[0].n, SrcErr: p.dirs[0].srcErr, DstErr: p.dirs[0].dstErr}
	p.out = netio.CopyEnd{N: p.dirs[1].n, SrcErr: p.dirs[1].srcErr, DstErr: p.dirs[1].dstErr}
	p.g.pairs.Add(-1)
	for _, c := range p.c {
		c.pair.Store(nil)
		c.lent.CompareAndSwap(p.abrt, nil)
		// The sockets' readiness is unknown now: the next read or write
		// tries.
		c.r.ready.Store(1)
		c.w.ready.Store(1)
		c.decref()
	}
	close(p.done)
}
