//go:build linux

package uring

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The relay: one goroutine locked to its thread owns a Ring and a BufRing
// and relays between pairs of sockets. Each direction of a pair has one
// multishot receive armed on its source; a completion's buffer is queued
// on the direction and sent to the destination from the same buffer (no
// copy), one send in flight per direction so that bytes keep their order;
// a send that completes recycles its buffer and starts the next. A turn
// of the loop submits every entry the previous turn prepared and waits
// for at least one completion in a single io_uring_enter, then handles
// all the completions ready. End of stream on a source shuts the
// destination's write half once its queue has drained; a pair whose two
// directions ended, or that failed, is closed once none of its requests
// is pending (after shutdown(SHUT_RDWR) to end them).

// Kinds of request, in the top byte of a user_data.
const (
	kindWake = 1 // the eventfd read that wakes the loop for Add and Close
	kindRecv = 2
	kindSend = 3
	// kindCancel is the cancel of a direction's receive whose queue is
	// full (maxQueue), counted in its pair's pending.
	kindCancel = 4
)

// maxQueue is how many received buffers a direction holds before its
// receive is cancelled (16 KiB each: 64 KiB); it is armed again once the
// queue is down to half. Without it one slow reader would take every
// provided buffer and stall the other pairs (still, Buffers/maxQueue
// directions stalled at once exhaust the pool: 256 with the defaults).
const maxQueue = 4

// RelayConfig shapes a Relay.
type RelayConfig struct {
	Entries uint32 // submission ring entries; 0 = 1024
	Buffers uint16 // provided buffers, a power of two; 0 = 1024
	BufSize int    // bytes per buffer; 0 = 16 KiB (the size of netio's relay buffer)
	// Flags are io_uring setup flags; 0 = SetupSingleIssuer |
	// SetupDeferTaskrun (completions run only when the loop asks for
	// them), with a fallback to none on kernels that refuse them.
	Flags uint32
	// PeekFirst makes each turn first ask for the completions ready
	// without blocking (a raw system call), and block only when there
	// are none: two io_uring_enter on an idle turn, but no blocking call
	// (and none of Go's bookkeeping for it) on a busy one.
	PeekFirst bool
	// RawWait > 0 makes each turn wait through a raw system call, at
	// most RawWait, then yield: the loop keeps its P while it waits (no
	// sysmon hand-off, no thread wake-ups), and the other goroutines of
	// that P wait up to RawWait for it. An experiment: see bench/README.md.
	RawWait time.Duration
	// WaitPastSends makes a turn whose sends were all prepared in it, and
	// need nothing done when they complete, wait for one completion more
	// than those sends (at most 1 ms): a send completed at once by the
	// kernel then costs no turn of its own.
	WaitPastSends bool
}

// RelayStats are the loop's counters, for measurements.
type RelayStats struct {
	Enters  uint64 // io_uring_enter calls
	Turns   uint64 // loop turns (waits)
	CQEs    uint64 // completions handled
	Recvs   uint64 // receive completions with bytes
	Sends   uint64 // sends submitted
	Pairs   uint64 // pairs added
	Closed  uint64 // pairs closed
	Rearms  uint64 // multishot receives re-armed (after ENOBUFS)
	Partial uint64 // sends that moved fewer bytes than asked
}

type chunk struct {
	id   uint16
	off  int
	size int
}

type direction struct {
	src, dst int
	queue    []chunk
	sending  bool
	armed    bool // a multishot receive is pending on src
	rearm    bool // it ended for lack of buffers: arm again
	eof      bool // src ended
	shut     bool // dst's write half is shut
	paused   bool // its receive is to stay off (maxQueue): armed again once drained
	cancel   bool // a cancel of its receive is pending

	// Sessions (Start) only.
	n                int64 // bytes sent to dst
	srcErr, dstErr   error
	srcIdle, dstIdle int64 // inactivity timeouts of src's reads and dst's writes, ns; 0: none
	last             int64 // the direction's last progress (receive or send), ns since the relay's epoch
}

type pair struct {
	used    bool
	failed  bool
	timed   bool     // has an inactivity timeout
	ext     *Session // the caller's, whose sockets the relay does not close
	pending int      // requests in the kernel (armed receives, sends)
	dirs    [2]direction
}

// End says how one direction of a Session ended, as netio.CopyEnd: the
// bytes sent to its destination, and the error reading its source or
// writing its destination (both nil for a clean end of stream). Errors
// are *net.OpError with Op "read" or "write"; an inactivity timeout's
// wraps os.ErrDeadlineExceeded, an Abort's net.ErrClosed.
type End struct {
	N      int64
	SrcErr error
	DstErr error
}

// Session is a pair of sockets relayed for a caller that keeps them
// (Relay.Session, Relay.Start): the relay never closes them; when Wait
// returns it no longer uses them, and the caller closes them.
type Session struct {
	r                      *Relay
	client, server         int
	clientIdle, serverIdle time.Duration
	aborted                atomic.Bool
	done                   chan struct{}
	in, out                End
	pair                   int // the loop's: its pair, -1 when none
}

// Session prepares a session with inactivity timeouts on the client's
// and the server's side (0: none) as netio.Relay applies them: the
// source's reads (no byte received for that long while nothing waits to
// be sent) and the destination's writes (bytes waiting that long to be
// sent).
func (r *Relay) Session(clientIdle, serverIdle time.Duration) *Session {
	return &Session{r: r, clientIdle: clientIdle, serverIdle: serverIdle, done: make(chan struct{}), pair: -1}
}

// Start relays between client and server (connected, non-blocking
// sockets) for s, which must not have been started before. It fails,
// having used neither, when the relay is closed.
func (r *Relay) Start(s *Session, client, server int) error {
	s.client, s.server = client, server
	r.mu.Lock()
	if r.closing {
		r.mu.Unlock()
		return net.ErrClosed
	}
	r.exts = append(r.exts, s)
	r.mu.Unlock()
	r.wake()
	return nil
}

// Abort ends s as a close of the client connection would (in.SrcErr is
// net.ErrClosed's), before or after Start, from any goroutine; again, or
// once s ended, it does nothing. It does not block.
func (s *Session) Abort() {
	if !s.aborted.CompareAndSwap(false, true) {
		return
	}
	r := s.r
	r.mu.Lock()
	if r.closing {
		r.mu.Unlock() // every session ends anyway
		return
	}
	r.aborts = append(r.aborts, s)
	r.mu.Unlock()
	r.wake()
}

// Done is closed when s has ended.
func (s *Session) Done() <-chan struct{} { return s.done }

// Wait waits for s to end and returns how its directions ended: in is
// client to server, out server to client.
func (s *Session) Wait() (in, out End) {
	<-s.done
	return s.in, s.out
}

func opErr(op string, err error) error { return &net.OpError{Op: op, Net: "tcp", Err: err} }

// errAborted is what an aborted session's client side reports.
var errAborted = opErr("read", net.ErrClosed)

// Relay relays between pairs of connected sockets on one io_uring
// instance. Add and Close may be called from any goroutine.
type Relay struct {
	mu        sync.Mutex
	adds      [][2]int
	exts      []*Session // started, not yet taken by the loop
	aborts    []*Session
	closing   bool
	wakeFd    int
	done      chan struct{}
	peekFirst bool
	rawWait   time.Duration

	waitPastSends bool
	turnSends     []int // pair<<1|dir of the sends prepared this turn
	sendsInFlight int
	err           error // why the loop ended early, set before done closes

	// The loop's own state.
	ring   *Ring
	bufs   *BufRing
	wakeB  []byte // the eventfd read's 8 bytes, outside the Go heap
	pairs  []pair
	free   []int
	rearms []int // pair<<1|dir waiting for buffers
	cqes   []CQE
	stats  RelayStats
	smu    sync.Mutex
	shared RelayStats // stats as of the last publish
	live   int

	// Inactivity timeouts: timed pairs are looked at every tick (the
	// shortest timeout seen / 8, within [1ms, 1s]); waits are bounded by
	// it while there are any. Times are ns since epoch, now as of the
	// turn's wake-up.
	timed    int
	tick     int64
	nextScan int64
	now      int64
	epoch    time.Time
}

// NewRelay starts a relay loop. It fails with the kernel's errno when
// io_uring or a needed feature (provided buffer rings, Linux 5.19;
// multishot receive, Linux 6.0: probeRecvMultishot) is missing.
func NewRelay(cfg RelayConfig) (*Relay, error) {
	if cfg.Entries == 0 {
		cfg.Entries = 1024
	}
	if cfg.Buffers == 0 {
		cfg.Buffers = 1024
	}
	if cfg.BufSize == 0 {
		cfg.BufSize = 16 << 10
	}
	// Blocking: io_uring honours O_NONBLOCK on a file it reads, and
	// the loop's read must wait.
	efd, err := unix.Eventfd(0, unix.EFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("eventfd: %w", err)
	}
	r := &Relay{wakeFd: efd, done: make(chan struct{}), peekFirst: cfg.PeekFirst, rawWait: cfg.RawWait, waitPastSends: cfg.WaitPastSends,
		epoch: time.Now(), tick: int64(time.Second)}
	started := make(chan error, 1)
	go r.loop(cfg, started)
	if err := <-started; err != nil {
		<-r.done
		unix.Close(efd)
		return nil, err
	}
	return r, nil
}

// probeRecvMultishot checks, on a socket pair, that this kernel runs the
// relay's receive: multishot (IORING_RECV_MULTISHOT, Linux 6.0) into the
// buffers of bufs (a kernel of 5.19 registers the buffer ring but fails
// the receive with EINVAL). It leaves ring and bufs as they were, and
// fails with the errno the receive got, or an error saying what was
// wrong.
func probeRecvMultishot(ring *Ring, bufs *BufRing) error {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("socketpair: %w", err)
	}
	defer unix.Close(fds[0])
	defer unix.Close(fds[1])
	s := ring.GetSQE()
	if s == nil {
		return ErrSQFull
	}
	s.PrepRecvMultishot(fds[0], bufs.Group(), 1)
	if _, err := unix.Write(fds[1], []byte{'p'}); err != nil {
		return fmt.Errorf("probe write: %w", err)
	}
	first, err := probeNext(ring, bufs)
	if err != nil {
		return err
	}
	if err := first.Err(); err != nil {
		return fmt.Errorf("multishot receive: %w", err)
	}
	if first.Res != 1 || !first.More() {
		return fmt.Errorf("multishot receive: got %d bytes, armed %v; want 1, armed", first.Res, first.More())
	}
	// End it: the shutdown completes the receive without F_MORE.
	unix.Shutdown(fds[0], unix.SHUT_RDWR)
	for {
		c, err := probeNext(ring, bufs)
		if err != nil {
			return err
		}
		if !c.More() {
			return nil
		}
	}
}

// probeNext submits what is prepared and waits, at most a second, for
// one completion, whose buffer, if it has one, goes back to bufs.
func probeNext(ring *Ring, bufs *BufRing) (CQE, error) {
	one := make([]CQE, 1)
	deadline := time.Now().Add(time.Second)
	for ring.Reap(one) == 0 {
		if time.Now().After(deadline) {
			return CQE{}, errors.New("multishot receive: no completion within 1s")
		}
		if _, err := ring.SubmitAndWaitTimeout(1, 100*time.Millisecond); err != nil && !errors.Is(err, unix.ETIME) {
			return CQE{}, fmt.Errorf("io_uring_enter: %w", err)
		}
	}
	if id, ok := one[0].BufID(); ok {
		bufs.Taken()
		bufs.Recycle(id)
	}
	return one[0], nil
}

// Add hands a pair of connected sockets (client, server) to the relay,
// which owns them from then on and closes them when the relay ends. It
// fails, closing neither, when the relay is closed.
func (r *Relay) Add(client, server int) error {
	r.mu.Lock()
	if r.closing {
		r.mu.Unlock()
		return net.ErrClosed
	}
	r.adds = append(r.adds, [2]int{client, server})
	r.mu.Unlock()
	r.wake()
	return nil
}

func (r *Relay) wake() {
	var one = [8]byte{1}
	unix.Write(r.wakeFd, one[:])
}

// Close ends every pair (shutting both sockets, then closing them) and
// the loop, and waits for it. It returns why the loop had ended by
// itself, if it had.
func (r *Relay) Close() error {
	r.mu.Lock()
	already := r.closing
	r.closing = true
	r.mu.Unlock()
	if !already {
		r.wake()
	}
	<-r.done
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.wakeFd >= 0 {
		unix.Close(r.wakeFd)
		r.wakeFd = -1
	}
	return r.err
}

// Done is closed when the loop has ended.
func (r *Relay) Done() <-chan struct{} { return r.done }

// Stats returns the loop's counters as of its last turn.
func (r *Relay) Stats() RelayStats {
	r.smu.Lock()
	defer r.smu.Unlock()
	return r.shared
}

// Live is the number of pairs being relayed, as of the loop's last turn.
func (r *Relay) Live() int {
	s := r.Stats()
	return int(s.Pairs - s.Closed)
}

func (r *Relay) loop(cfg RelayConfig, started chan<- error) {
	defer close(r.done)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	flags := cfg.Flags
	if flags == 0 {
		flags = SetupSingleIssuer | SetupDeferTaskrun
	}
	ring, err := New(cfg.Entries, flags)
	if err != nil && cfg.Flags == 0 && errors.Is(err, unix.EINVAL) {
		ring, err = New(cfg.Entries, 0)
	}
	if err != nil {
		started <- err
		return
	}
	defer ring.Close()
	bufs, err := ring.NewBufRing(0, cfg.Buffers, cfg.BufSize)
	if err != nil {
		started <- err
		return
	}
	wakeB, err := unix.Mmap(-1, 0, 8, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		bufs.Close()
		started <- err
		return
	}
	if err := probeRecvMultishot(ring, bufs); err != nil {
		ring.Close() // first: it ends a receive the probe left armed
		unix.Munmap(wakeB)
		bufs.Close()
		started <- err
		return
	}
	r.ring, r.bufs, r.wakeB = ring, bufs, wakeB
	r.cqes = make([]CQE, ring.CQEntries())
	defer func() {
		// Every pair is closed by now, or the loop failed: close what is
		// left, then the ring (which cancels the eventfd read), then the
		// memory the kernel wrote to.
		for i := range r.pairs {
			if r.pairs[i].used {
				r.closePair(i)
			}
		}
		r.mu.Lock()
		exts := r.exts
		r.exts, r.aborts = nil, nil
		r.closing = true
		r.mu.Unlock()
		for _, s := range exts {
			deliver(s, End{SrcErr: errAborted}, End{})
		}
		r.publish()
		ring.Close()
		unix.Munmap(wakeB)
		bufs.Close()
	}()
	r.armWake()
	started <- nil
	if err := r.run(); err != nil {
		r.mu.Lock()
		r.err = err
		r.closing = true
		r.mu.Unlock()
	}
}

func (r *Relay) run() error {
	closing := false
	var closed, added uint64 // pairs closed and added as of the last publish
	for {
		if closing && r.live == 0 {
			return nil
		}
		r.stats.Turns++
		var err error
		if r.rawWait > 0 {
			_, err = r.ring.SubmitAndWaitRaw(1, r.rawWait)
			if errors.Is(err, unix.ETIME) || errors.Is(err, unix.EINTR) {
				err = nil
			}
			runtime.Gosched() // the P was held: let the others run
		} else if r.peekFirst {
			// Without blocking first: a blocking io_uring_enter goes
			// through Go's system call bookkeeping (sysmon may hand the
			// P away, and wakes up for it).
			if _, err = r.ring.SubmitAndPeek(); err == nil && r.ring.Ready() == 0 {
				_, err = r.ring.SubmitAndWait(1)
			}
		} else if n := r.quietSends(); n > 0 {
			// Every send in flight was submitted this turn and needs
			// nothing done when it completes: wait past their own
			// completions (posted at once when the kernel sends inline)
			// for one event more. Bounded, in case a send waits on its
			// peer longer than an event that needs an answer.
			_, err = r.ring.SubmitAndWaitTimeout(uint32(n)+1, time.Millisecond)
			if errors.Is(err, unix.ETIME) {
				err = nil
			}
		} else if r.timed > 0 {
			_, err = r.ring.SubmitAndWaitTimeout(1, time.Duration(r.tick))
			if errors.Is(err, unix.ETIME) {
				err = nil
			}
		} else {
			_, err = r.ring.SubmitAndWait(1)
		}
		if r.timed > 0 {
			r.now = r.clock()
		}
		r.turnSends = r.turnSends[:0]
		if err != nil {
			if errors.Is(err, unix.EBUSY) || errors.Is(err, unix.EAGAIN) {
				// Completions are waiting to be reaped first: go on.
			} else {
				return fmt.Errorf("io_uring_enter: %w", err)
			}
		}
		for {
			n := r.ring.Reap(r.cqes)
			if n == 0 {
				break
			}
			r.stats.CQEs += uint64(n)
			for _, c := range r.cqes[:n] {
				if c.UserData>>56 == kindWake {
					if r.takeAdds() {
						closing = true
					}
					r.armWake()
					continue
				}
				r.complete(c)
			}
		}
		r.rearmWaiting()
		if r.timed > 0 && r.now >= r.nextScan {
			r.scan()
		}
		if r.stats.Turns%64 == 0 || r.stats.Closed != closed || r.stats.Pairs != added {
			closed, added = r.stats.Closed, r.stats.Pairs
			r.publish()
		}
	}
}

func (r *Relay) publish() {
	r.stats.Enters = r.ring.Enters
	r.smu.Lock()
	r.shared = r.stats
	r.smu.Unlock()
}

// sqe returns a free entry, submitting the prepared ones when the ring is
// full.
func (r *Relay) sqe() *SQE {
	s := r.ring.GetSQE()
	if s == nil {
		r.ring.Submit()
		s = r.ring.GetSQE()
	}
	return s
}

func (r *Relay) armWake() {
	s := r.sqe()
	if s == nil {
		return
	}
	s.PrepRead(r.wakeFd, unsafe.Pointer(&r.wakeB[0]), 8, kindWake<<56)
}

// takeAdds starts the pairs added since the last wake-up; on Close it
// fails every pair and reports true.
func (r *Relay) takeAdds() bool {
	r.mu.Lock()
	adds, exts, aborts := r.adds, r.exts, r.aborts
	r.adds, r.exts, r.aborts = nil, nil, nil
	closing := r.closing
	r.mu.Unlock()
	for _, a := range adds {
		if closing {
			unix.Close(a[0])
			unix.Close(a[1])
			continue
		}
		r.start(a[0], a[1])
	}
	for _, s := range exts {
		if closing || s.aborted.Load() {
			deliver(s, End{SrcErr: errAborted}, End{})
			continue
		}
		r.startSession(s)
	}
	for _, s := range aborts {
		if i := s.pair; i >= 0 && i < len(r.pairs) && r.pairs[i].used && r.pairs[i].ext == s {
			r.failWith(i, 0, true, errAborted)
		}
	}
	if closing {
		for i := range r.pairs {
			if r.pairs[i].used {
				r.failWith(i, 0, true, errAborted)
			}
		}
	}
	return closing
}

// deliver ends s with its results.
func deliver(s *Session, in, out End) {
	s.in, s.out = in, out
	s.pair = -1
	close(s.done)
}

func (r *Relay) clock() int64 { return int64(time.Since(r.epoch)) }

// startSession starts s's pair, with its timeouts.
func (r *Relay) startSession(s *Session) {
	i := r.start(s.client, s.server)
	p := &r.pairs[i]
	p.ext = s
	s.pair = i
	ci, si := max(int64(s.clientIdle), 0), max(int64(s.serverIdle), 0)
	p.dirs[0].srcIdle, p.dirs[0].dstIdle = ci, si
	p.dirs[1].srcIdle, p.dirs[1].dstIdle = si, ci
	if ci == 0 && si == 0 {
		return
	}
	p.timed = true
	r.timed++
	r.now = r.clock()
	p.dirs[0].last, p.dirs[1].last = r.now, r.now
	shortest := ci
	if shortest == 0 || (si > 0 && si < shortest) {
		shortest = si
	}
	tick := min(max(shortest/8, int64(time.Millisecond)), int64(time.Second))
	if tick < r.tick || r.timed == 1 {
		r.tick = tick
	}
	if r.timed == 1 || r.now+r.tick < r.nextScan {
		r.nextScan = r.now + r.tick
	}
}

// scan ends the timed pairs idle for longer than their timeout.
func (r *Relay) scan() {
	r.nextScan = r.now + r.tick
	for i := range r.pairs {
		p := &r.pairs[i]
		if !p.used || p.failed || !p.timed {
			continue
		}
		for d := range p.dirs {
			dir := &p.dirs[d]
			idle := r.now - dir.last
			if len(dir.queue) > 0 || dir.sending {
				if dir.dstIdle > 0 && idle >= dir.dstIdle {
					r.failWith(i, d, false, opErr("write", os.ErrDeadlineExceeded))
					break
				}
			} else if !dir.eof && dir.srcIdle > 0 && r.now-max(dir.last, p.dirs[1-d].last) >= dir.srcIdle {
				// (bytes written to the source refresh its read timeout,
				// as epoll.Pair and netio.Relay: HAProxy's default)
				r.failWith(i, d, true, opErr("read", os.ErrDeadlineExceeded))
				break
			}
		}
	}
}

// failWith fails pair i, recording err as direction d's (its source's
// when src, else its destination's) if it is the pair's first.
func (r *Relay) failWith(i, d int, src bool, err error) {
	p := &r.pairs[i]
	if p.failed {
		return
	}
	if src {
		p.dirs[d].srcErr = err
	} else {
		p.dirs[d].dstErr = err
	}
	r.fail(i)
}

func (r *Relay) start(client, server int) int {
	var i int
	if n := len(r.free); n > 0 {
		i = r.free[n-1]
		r.free = r.free[:n-1]
	} else {
		i = len(r.pairs)
		r.pairs = append(r.pairs, pair{})
	}
	p := &r.pairs[i]
	*p = pair{used: true}
	p.dirs[0] = direction{src: client, dst: server}
	p.dirs[1] = direction{src: server, dst: client}
	r.live++
	r.stats.Pairs++
	r.arm(i, 0)
	r.arm(i, 1)
	return i
}

func userData(kind uint64, i int, d int) uint64 {
	return kind<<56 | uint64(d)<<48 | uint64(uint32(i))
}

func (r *Relay) arm(i, d int) {
	p := &r.pairs[i]
	s := r.sqe()
	if s == nil {
		r.fail(i)
		return
	}
	s.PrepRecvMultishot(p.dirs[d].src, r.bufs.Group(), userData(kindRecv, i, d))
	p.dirs[d].armed = true
	p.pending++
}

func (r *Relay) rearmWaiting() {
	if len(r.rearms) == 0 || r.bufs.Out() >= int(r.bufs.entries) {
		return
	}
	w := r.rearms
	r.rearms = r.rearms[:0]
	for _, k := range w {
		i, d := k>>1, k&1
		p := &r.pairs[i]
		dir := &p.dirs[d]
		if !p.used || p.failed || !dir.rearm || dir.paused {
			continue
		}
		dir.rearm = false
		r.stats.Rearms++
		r.arm(i, d)
	}
}

func (r *Relay) complete(c CQE) {
	i := int(uint32(c.UserData))
	d := int(c.UserData>>48) & 1
	if i >= len(r.pairs) || !r.pairs[i].used {
		if id, ok := c.BufID(); ok { // cannot happen: a pair closes once idle
			r.bufs.Taken()
			r.bufs.Recycle(id)
		}
		return
	}
	p := &r.pairs[i]
	dir := &p.dirs[d]
	switch c.UserData >> 56 {
	case kindRecv:
		if !c.More() {
			dir.armed = false
			p.pending--
		}
		if id, ok := c.BufID(); ok {
			r.bufs.Taken()
			if c.Res <= 0 || p.failed {
				r.bufs.Recycle(id)
			} else {
				r.stats.Recvs++
				dir.last = r.now
				dir.queue = append(dir.queue, chunk{id: id, size: int(c.Res)})
				if !dir.sending {
					r.send(i, d)
				}
				if len(dir.queue) >= maxQueue && dir.armed && !dir.cancel {
					r.pause(i, d)
				}
			}
		}
		switch {
		case p.failed:
		case c.Res == 0:
			dir.eof = true
			r.drained(i, d)
		case c.Res == -int32(unix.ECANCELED) && dir.paused:
			r.resume(i, d)
		case c.Res == -int32(unix.ENOBUFS):
			if !dir.paused {
				dir.rearm = true
				r.rearms = append(r.rearms, i<<1|d)
			}
		case c.Res < 0:
			r.failWith(i, d, true, opErr("read", os.NewSyscallError("recv", c.Err())))
		case !c.More() && !dir.eof && !dir.paused:
			// The kernel ended the multishot receive with bytes (its
			// completion queue overflowed, for one): arm it again.
			r.arm(i, d)
		}
	case kindCancel:
		// Done (the receive ends with ECANCELED), or too late (ENOENT:
		// it had ended), or in progress (EALREADY: the next receive
		// completion cancels again if the queue is still full).
		dir.cancel = false
		p.pending--
	case kindSend:
		dir.sending = false
		p.pending--
		r.sendsInFlight--
		if c.Res > 0 {
			dir.n += int64(c.Res)
			dir.last = r.now
		}
		if len(dir.queue) == 0 { // cannot happen: one send per queued chunk
			r.fail(i)
			break
		}
		head := &dir.queue[0]
		if c.Res <= 0 || p.failed {
			if !p.failed {
				err := c.Err()
				if err == nil {
					err = io.ErrShortWrite
				} else {
					err = os.NewSyscallError("send", err)
				}
				r.failWith(i, d, false, opErr("write", err)) // recycles the whole queue: nothing is in flight
				break
			}
			for _, ch := range dir.queue {
				r.bufs.Recycle(ch.id)
			}
			dir.queue = nil
			break
		}
		head.off += int(c.Res)
		if head.off < head.size {
			r.stats.Partial++
		} else {
			r.bufs.Recycle(head.id)
			// Shifted rather than resliced, so the queue keeps its
			// backing array (it holds one or two chunks).
			n := copy(dir.queue, dir.queue[1:])
			dir.queue = dir.queue[:n]
		}
		if len(dir.queue) > 0 {
			r.send(i, d)
		} else {
			r.drained(i, d)
		}
		r.resume(i, d)
	}
	if p.used && p.pending == 0 && (p.failed || (p.dirs[0].shut && p.dirs[1].shut)) {
		r.closePair(i)
	}
}

// pause cancels direction d's receive: its queue is full.
func (r *Relay) pause(i, d int) {
	s := r.sqe()
	if s == nil {
		return // it stays armed: the queue grows, the buffers run out (ENOBUFS) at worst
	}
	s.PrepCancel(userData(kindRecv, i, d), userData(kindCancel, i, d))
	p := &r.pairs[i]
	p.dirs[d].paused = true
	p.dirs[d].cancel = true
	p.pending++
}

// resume arms a paused direction's receive again once its queue is down
// to half and the cancelled receive has ended.
func (r *Relay) resume(i, d int) {
	p := &r.pairs[i]
	dir := &p.dirs[d]
	if !dir.paused || dir.armed || p.failed || dir.eof || len(dir.queue) > maxQueue/2 {
		return
	}
	dir.paused = false
	r.arm(i, d)
}

func (r *Relay) send(i, d int) {
	p := &r.pairs[i]
	dir := &p.dirs[d]
	s := r.sqe()
	if s == nil {
		r.fail(i)
		return
	}
	h := dir.queue[0]
	b := r.bufs.Buf(h.id)[h.off:h.size]
	s.PrepSend(dir.dst, unsafe.Pointer(&b[0]), uint32(len(b)), unix.MSG_NOSIGNAL, userData(kindSend, i, d))
	dir.sending = true
	p.pending++
	r.stats.Sends++
	r.sendsInFlight++
	r.turnSends = append(r.turnSends, i<<1|d)
}

// quietSends is the number of sends in flight when each of them was
// prepared this turn and its completion will need nothing but recycling
// its buffer (the direction has nothing more queued, its source has not
// ended, the pair has not failed); 0 when WaitPastSends is off or any
// send in flight is not of that kind.
func (r *Relay) quietSends() int {
	if !r.waitPastSends || len(r.turnSends) == 0 || len(r.turnSends) != r.sendsInFlight {
		return 0
	}
	for _, k := range r.turnSends {
		p := &r.pairs[k>>1]
		dir := &p.dirs[k&1]
		if !p.used || p.failed || dir.eof || len(dir.queue) != 1 {
			return 0
		}
	}
	return len(r.turnSends)
}

// drained shuts the destination's write half once the source has ended
// and every byte read from it has been sent.
func (r *Relay) drained(i, d int) {
	dir := &r.pairs[i].dirs[d]
	if !dir.eof || dir.sending || len(dir.queue) > 0 || dir.shut {
		return
	}
	dir.shut = true
	if err := unix.Shutdown(dir.dst, unix.SHUT_WR); err != nil {
		r.failWith(i, d, false, opErr("write", os.NewSyscallError("shutdown", err)))
	}
}

// fail ends a pair: both sockets are shut, which ends their pending
// receives and sends; the pair closes when the last has completed.
func (r *Relay) fail(i int) {
	p := &r.pairs[i]
	if p.failed {
		return
	}
	p.failed = true
	unix.Shutdown(p.dirs[0].src, unix.SHUT_RDWR)
	unix.Shutdown(p.dirs[1].src, unix.SHUT_RDWR)
	for d := range p.dirs {
		dir := &p.dirs[d]
		for j, c := range dir.queue {
			if j == 0 && dir.sending {
				continue // the kernel may still read it: recycled at its completion
			}
			r.bufs.Recycle(c.id)
		}
		if dir.sending {
			dir.queue = dir.queue[:1]
		} else {
			dir.queue = nil
		}
	}
}

func (r *Relay) closePair(i int) {
	p := &r.pairs[i]
	if p.pending == 0 {
		// (With requests pending, only when the loop gives up: the ring's
		// close cancels them before the buffers are unmapped.)
		for d := range p.dirs {
			for _, c := range p.dirs[d].queue {
				r.bufs.Recycle(c.id)
			}
		}
	}
	if p.ext != nil {
		deliver(p.ext, End{N: p.dirs[0].n, SrcErr: p.dirs[0].srcErr, DstErr: p.dirs[0].dstErr},
			End{N: p.dirs[1].n, SrcErr: p.dirs[1].srcErr, DstErr: p.dirs[1].dstErr})
	} else {
		unix.Close(p.dirs[0].src)
		unix.Close(p.dirs[1].src)
	}
	if p.timed {
		r.timed--
	}
	*p = pair{}
	r.free = append(r.free, i)
	r.live--
	r.stats.Closed++
}

// Detach takes the socket out of a *net.TCPConn for a Relay: it returns a
// duplicate of its descriptor (close-on-exec, non-blocking) and closes
// the connection, so that Go's poller forgets it.
func Detach(c *net.TCPConn) (int, error) {
	rc, err := c.SyscallConn()
	if err != nil {
		return -1, err
	}
	fd := -1
	var derr error
	if err := rc.Control(func(s uintptr) {
		fd, derr = unix.FcntlInt(s, unix.F_DUPFD_CLOEXEC, 0)
	}); err != nil {
		return -1, err
	}
	if derr != nil {
		return -1, derr
	}
	c.Close()
	return fd, nil
}
