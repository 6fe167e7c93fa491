package epoll

import (
	"io"
	"net"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Conn is a TCP connection served by a poller. Its methods may be called
// from several goroutines, as net.Conn's; one Read and one Write at a time
// (the proxy's engines never overlap them).
type Conn struct {
	fd  int
	gen int32
	// pidx is c's place in its poller's parking (its read deadline while
	// it hibernates), plus one; 0: not there. Under the parking's mu.
	pidx int32
	p    *poller

	// state counts the operations using fd (in units of 2) and has
	// closedBit once Close was called; the descriptor is closed when both
	// are true (destroy), by Close or by the last operation.
	state atomic.Int64

	r, w side

	// hup is set, before the read side is signalled, once an event said
	// the peer closed or the socket failed (EPOLLRDHUP, EPOLLHUP,
	// EPOLLERR): such a socket stays readable for good (the end of the
	// stream or the error is returned by every read), while the edge that
	// said so comes only once, often with the last bytes.
	hup atomic.Bool

	// reg is what the socket is registered for in its poller: regNone
	// until the first operation that has to wait (most accepted sockets of
	// a connection per request never do, and close without an epoll_ctl
	// at all), regIn once a read, an accept or a RawConn waited, regInOut
	// once a write waited for room. Changed under r.tmu (the read
	// side's lock, which otherwise guards its deadline).
	reg atomic.Uint32

	// counted: c is a connection counted in its group's live (not a
	// listening socket).
	counted bool

	// lent is the abort of the holder c's socket is lent to (Lend), or of
	// the Pair relaying it, until it gives it back; Close takes and calls
	// it.
	lent atomic.Pointer[func()]

	// pair is the Pair c is relayed by (StartPair), until it ends: the
	// reaper runs its pump on c's events instead of waking waiters.
	pair atomic.Pointer[Pair]

	// raddr is the peer's address, kept as a netip value (no net.Addr
	// allocated per connection: RemoteAddr makes one when asked).
	raddr netip.AddrPort
	laddr atomic.Pointer[localAddr] // looked up on first use

	// wk resumes c while it hibernates (Hibernate): written before r.hib
	// is set, read by whoever takes r.hib.
	wk Waker
	// short says the hibernation is an Await's (not counted in sleeping,
	// its deadline on its runtime timer): written with wk.
	short bool
	// ahead says the Await is an AwaitRead's: the reaper may read c
	// ahead as it wakes it (readahead_linux.go); written with wk, read
	// by the reaper before it takes the hibernation.
	ahead atomic.Bool
	// pre is what the reaper read ahead, for the next read.
	pre preRead
}

// Conn.reg's values.
const (
	regNone = iota
	regIn
	regInOut
)

const (
	closedBit    = 1
	refUnit      = 2
	destroyedBit = 1 << 62
)

// side is one direction's readiness, waiter and deadline.
type side struct {
	// ready is 1 once an event (or a read or write that did not drain or
	// fill the socket) says the next attempt may succeed; an attempt
	// clears it first, so that an event coming meanwhile sets it again.
	ready   atomic.Uint32
	waiting atomic.Bool // a goroutine is (about to be) blocked on ch
	// past says the deadline dl has passed: set by its timer (or by
	// setDeadline for a deadline already past), cleared when a later
	// deadline or none is set. The hot paths test it instead of reading
	// the clock (two vDSO clock reads per time.Now, each costly on a
	// virtual machine's paravirtual clock); like Go's own poller, a read
	// made between the deadline and its timer's run still succeeds.
	past atomic.Bool
	// parked: the deadline is in the poller's parking instead of timer
	// (a hibernating connection's read side); under tmu.
	parked bool
	// ch is the waiter's wake-up, one pending at most: made by the side's
	// first wait, dropped when the connection hibernates (no waiter then,
	// and an idle connection costs no channel).
	ch atomic.Pointer[chan struct{}]

	tmu   sync.Mutex
	dl    int64       // the deadline in Unix ns, 0: none; under tmu
	timer *time.Timer // wakes the waiter at the deadline
	// lazy says a deadline is set with no timer yet (lazyDeadlines): the
	// first wait makes it. Set under tmu before looking at waiting and
	// hib, as wait sets waiting (and Hibernate hib) before looking at
	// lazy, so one sees the other.
	lazy atomic.Bool

	// hib is the connection itself while it hibernates (Conn.Hibernate,
	// read side only), taken (once) by whatever would have woken a
	// waiter.
	hib atomic.Pointer[Conn]
}

func newConn(fd int, p *poller, gen int32) *Conn {
	c := &Conn{fd: fd, gen: gen, p: p}
	// Writes are tried at once; reads wait for the first event (which
	// registering a socket that already has bytes raises at once).
	c.w.ready.Store(1)
	return c
}

// signal records an event and wakes the side's waiter if there is one.
// Announcing the waiter before looking at ready (wait) and setting ready
// before looking for a waiter (here), both sequentially consistent, means
// one of them sees the other.
func (s *side) signal() {
	s.ready.Store(1)
	if s.waiting.Load() {
		s.wake()
	}
	if s.hib.Load() != nil && s.ready.Load() != 0 {
		s.rouse()
	}
}

// wake unblocks the waiter (or the next one) without blocking.
func (s *side) wake() {
	if ch := s.ch.Load(); ch != nil {
		select {
		case *ch <- struct{}{}:
		default:
		}
	}
}

// waitChan returns the side's wake-up channel, made on first use. It is
// there before the waiter announces itself (waiting), so a signal that
// sees the waiter sees its channel.
func (s *side) waitChan() chan struct{} {
	if ch := s.ch.Load(); ch != nil {
		return *ch
	}
	ch := make(chan struct{}, 1)
	if !s.ch.CompareAndSwap(nil, &ch) {
		return *s.ch.Load()
	}
	return ch
}

// expire is the deadline timer's: it marks the deadline past (unless a
// later one was set meanwhile: a run of the timer that began before its
// Reset finds the new deadline under tmu), then fires.
func (s *side) expire() {
	s.tmu.Lock()
	if s.dl != 0 {
		if left := s.dl - time.Now().UnixNano(); left <= 0 {
			s.past.Store(true)
		} else if s.timer != nil {
			s.timer.Reset(time.Duration(left)) // the wall clock went back
		}
	}
	s.tmu.Unlock()
	s.fire()
}

// fire wakes the waiter, or ends the hibernation of a connection whose
// deadline has passed.
func (s *side) fire() {
	s.wake()
	if s.hib.Load() != nil && s.past.Load() {
		s.rouse()
	}
}

// rouse ends the side's hibernation, if it has one: its resume is called
// here, once. Setting hib before looking at the side's state (Hibernate)
// and changing that state before looking at hib (signal, expire, Close),
// all sequentially consistent, means one of them sees the other; the swap
// makes sure only one of them calls resume. Those that look at hib check
// again that the state they changed still says the connection is to be
// read: an event or a timer handled late (its waiter already woken by
// it, the bytes read, the connection gone back to sleep) ends no
// hibernation.
func (s *side) rouse() {
	if c := s.hib.Swap(nil); c != nil {
		c.unpark()
		if c.short {
			c.p.g.awaiting.Add(-1)
			c.wk.Wake()
			return
		}
		c.p.g.sleeping.Add(-1)
		c.wk.Wake()
	}
}

// park moves the read deadline of c, which is about to hibernate or
// await (Hibernate, Await), from its runtime timer (stopped and dropped)
// to its poller's parking.
func (c *Conn) park() {
	s := &c.r
	s.tmu.Lock()
	if s.timer != nil {
		s.timer.Stop()
		s.timer = nil
	}
	s.lazy.Store(false) // the parking keeps the deadline
	if s.dl != 0 && !s.parked && !s.past.Load() {
		s.parked = true
		c.p.park.add(c, s.dl)
	}
	s.tmu.Unlock()
}

// unpark takes c's read deadline out of the parking when c's hibernation
// or await ends, and gives it back to a runtime timer for the reads that
// follow (unless one was set meanwhile): made by the first of them that
// waits (lazyDeadlines), or at once.
func (c *Conn) unpark() {
	s := &c.r
	s.tmu.Lock()
	defer s.tmu.Unlock()
	if !s.parked {
		return
	}
	s.parked = false
	c.p.park.remove(c)
	if s.dl == 0 || s.timer != nil || s.past.Load() {
		return
	}
	if lazyDeadlines {
		s.lazy.Store(true) // ensureTimer, at the next wait
		return
	}
	if left := s.dl - time.Now().UnixNano(); left > 0 {
		s.timer = time.AfterFunc(time.Duration(left), s.expire)
	} else {
		s.past.Store(true)
	}
}

// dropPark takes c's read deadline out of the parking, if it is there
// (a closed connection whose hibernation nothing ended yet).
func (c *Conn) dropPark() {
	c.r.tmu.Lock()
	if c.r.parked {
		c.r.parked = false
		c.p.park.remove(c)
	}
	c.r.tmu.Unlock()
}

// expireParked is the parking's for a read deadline found due at now
// (Unix ns) and taken out of it: as expire for a timer.
func (s *side) expireParked(now int64) {
	s.tmu.Lock()
	s.parked = false
	if s.dl != 0 && s.timer == nil {
		if left := s.dl - now; left <= 0 {
			s.past.Store(true)
		} else {
			s.timer = time.AfterFunc(time.Duration(left), s.expire)
		}
	}
	s.tmu.Unlock()
	s.fire()
}

// expired reports whether the side's deadline has passed (its timer has
// run, or it was set in the past).
func (s *side) expired() bool { return s.past.Load() }

// wait blocks until the side is ready, its deadline passes or c closes,
// registering c for input first if it is not yet.
func (c *Conn) wait(s *side) error {
	if c.reg.Load() == regNone {
		if err := c.arm(regIn); err != nil {
			return err
		}
	}
	ch := s.waitChan()
	for {
		if c.state.Load()&closedBit != 0 {
			return net.ErrClosed
		}
		if s.expired() {
			return os.ErrDeadlineExceeded
		}
		s.waiting.Store(true)
		if s.lazy.Load() && s.ensureTimer() {
			s.waiting.Store(false)
			return os.ErrDeadlineExceeded
		}
		if s.ready.Load() != 0 {
			s.waiting.Store(false)
			return nil
		}
		<-ch
		s.waiting.Store(false)
	}
}

// waitWrite waits until the socket may take more bytes, first adding
// EPOLLOUT to its registration if this is its first wait for room. The
// registration reports a socket writable by then at once (an
// edge-triggered registration is armed anew by EPOLL_CTL_ADD and
// EPOLL_CTL_MOD), so no room freed meanwhile is missed.
func (c *Conn) waitWrite() error {
	if c.reg.Load() != regInOut {
		if err := c.arm(regInOut); err != nil {
			return err
		}
	}
	return c.wait(&c.w)
}

// arm registers c in its poller for at least want (regIn: input, regInOut:
// output too), with EPOLL_CTL_ADD the first time and EPOLL_CTL_MOD when
// output is added. A socket is registered only at its first wait, never
// deregistered: closing its last descriptor takes it out of the epoll
// instance, so a connection that never waits costs no epoll_ctl.
//
// Registering late loses no event: the kernel looks at the socket's state
// when the registration is made, and a socket readable (or writable) by
// then raises its event at once. The caller holds a reference (incref),
// so that c.fd is still c's socket.
func (c *Conn) arm(want uint32) error {
	c.r.tmu.Lock()
	defer c.r.tmu.Unlock()
	cur := c.reg.Load()
	if cur >= want {
		return nil
	}
	events := uint32(inEvents)
	if want == regInOut {
		events = inOutEvents
	}
	op := unix.EPOLL_CTL_ADD
	if cur != regNone {
		op = unix.EPOLL_CTL_MOD
	}
	ev := unix.EpollEvent{Events: events, Fd: int32(c.fd), Pad: c.gen}
	if err := epollCtl(c.p.epfd, op, c.fd, &ev); err != nil {
		return os.NewSyscallError("epoll_ctl", err)
	}
	c.reg.Store(want)
	return nil
}

// Hibernate lets c wait for its next bytes with no goroutine: w.Wake is
// called once, from the poller's reaper, a deadline's timer, the
// goroutine that closes c, or this one, as soon as a Read would not block
// (bytes or the end of the stream are there, the socket failed, the read
// deadline passed, or c was closed), possibly before Hibernate returns;
// rarely when it would (Readable then says so).
// Wake must not block (it starts the goroutine that reads c). Until
// then no goroutine, timer or buffer of c's waits: what a hibernating
// connection costs is its Conn and an entry of its poller's parking for
// its read deadline (HAProxy's idle connections cost their connection
// structure alone); hibernating allocates nothing. The caller must not
// use c after calling Hibernate, until Wake runs; one read or
// RawConn.Read must not be in progress. A spurious Wake is possible (the
// first Read then waits as usual, or the caller hibernates c again).
func (c *Conn) Hibernate(w Waker) {
	// What only a waiter or a write needs goes: the wake-up channels, and
	// the write deadline with its timer (the caller arms a new one for
	// its next write; netio.Deadlines.ForgetWrite). The read deadline
	// stays, in the poller's parking: it ends the hibernation.
	c.r.ch.Store(nil)
	c.w.ch.Store(nil)
	c.w.dropDeadline()
	c.park()
	c.wk, c.short = w, false
	c.ahead.Store(false)
	c.p.g.sleeping.Add(1)
	c.r.hib.Store(c)
	if c.r.lazy.Load() {
		c.park() // a deadline set meanwhile without a timer (side.arm)
	}
	// A socket that never waited is not in the epoll instance yet: no
	// event would end the hibernation.
	if c.reg.Load() == regNone && c.incref() {
		err := c.arm(regIn)
		c.decref()
		if err != nil {
			c.r.ready.Store(1) // the Read that resume leads to fails as its wait would
		}
	}
	if c.Readable() {
		c.r.rouse()
	}
}

// Await is Hibernate for a short wait (a server's response, a keep-alive
// client's next request while its session is kept): w.Wake is called
// once, as Hibernate's, when a Read would not block (bytes or the end of
// the stream, the read deadline passed, c closed), possibly before Await
// returns. Unlike Hibernate it changes nothing else but the read
// deadline's timer: the wake-up channels and the write deadline stay, and
// c is not counted as hibernating. The read deadline waits in the
// poller's parking, as a hibernating connection's (one runtime timer per
// poller, not one per connection: a burst of waits whose deadlines pass
// together, as IdleKeep's, costs one timer run and goroutine, not one
// each), and goes back to a runtime timer when the wait ends. The caller
// must not use c after calling Await, until Wake runs; one read must not
// be in progress. A spurious Wake is possible.
func (c *Conn) Await(w Waker) { c.await(w, false) }

// await is Await, or AwaitRead when ahead.
func (c *Conn) await(w Waker, ahead bool) {
	c.wk, c.short = w, true
	c.ahead.Store(ahead)
	c.park()
	c.p.g.awaiting.Add(1)
	c.r.hib.Store(c)
	if c.r.lazy.Load() {
		c.park() // a deadline set meanwhile without a timer (side.arm)
	}
	if c.reg.Load() == regNone && c.incref() {
		err := c.arm(regIn)
		c.decref()
		if err != nil {
			c.r.ready.Store(1)
		}
	}
	if c.Readable() {
		c.r.rouse()
	}
}

// TryRead is Read without the wait: when the socket has nothing to read
// (or no event said it has) it returns 0 and ErrWouldBlock at once. It
// never blocks: the epoll layer's event callbacks (Await's Wake) read
// with it.
func (c *Conn) TryRead(b []byte) (int, error) { return c.read(b, false) }

// TryWrite is Write without the wait: it writes what the socket takes
// now and returns ErrWouldBlock with the count written when it did not
// take all of b (the caller writes the rest with Write).
func (c *Conn) TryWrite(b []byte) (int, error) { return c.write(b, false) }

// Readable reports whether a Read of c would not wait: an event (or a
// read that did not drain the socket) says bytes or the end may be there,
// its read deadline has passed, or c is closed. A hibernating connection
// resumed by a late event or timer is not (Hibernate it again).
func (c *Conn) Readable() bool {
	return c.r.ready.Load() != 0 || c.state.Load()&closedBit != 0 || c.r.expired() || c.pre.set.Load()
}

// Speculate marks c readable, so that its next read (TryRead, Read, or
// Readable's answer) tries the socket instead of waiting for an event: a
// connection just accepted often has its first bytes already (HAProxy
// reads a new connection before it polls it). A read that finds nothing
// then waits as usual.
func (c *Conn) Speculate() { c.r.ready.Store(1) }

// ReadExpired reports whether c's read deadline has passed (a Read would
// fail with os.ErrDeadlineExceeded).
func (c *Conn) ReadExpired() bool { return c.r.expired() }

// Awaiting returns how many of g's connections wait in an Await now.
func (g *Group) Awaiting() int64 { return g.awaiting.Load() }

// Hibernating returns how many of g's connections hibernate (Conn.Hibernate)
// now.
func (g *Group) Hibernating() int64 { return g.sleeping.Load() }

// setDeadline sets the side's deadline (zero: none) and arms or stops its
// timer; a deadline already past wakes the waiter now (the queue's
// dispatcher wakes a waiting reader this way).
func (s *side) setDeadline(t time.Time) {
	if s.arm(t) {
		s.fire() // not under tmu: ending a hibernation takes it (unpark)
	}
}

// arm is setDeadline's part under tmu; true when the deadline is past.
func (s *side) arm(t time.Time) bool {
	s.tmu.Lock()
	defer s.tmu.Unlock()
	s.dl = 0
	if !t.IsZero() {
		s.dl = max(t.UnixNano(), 1)
	}
	s.lazy.Store(false)
	if s.dl == 0 {
		s.past.Store(false)
		if s.timer != nil {
			s.timer.Stop()
		}
		return false
	}
	d := time.Until(t)
	if d <= 0 {
		if s.timer != nil {
			s.timer.Stop()
		}
		s.past.Store(true)
		return true
	}
	s.past.Store(false)
	if s.timer != nil {
		s.timer.Reset(d)
		return false
	}
	if lazyDeadlines && !s.parked {
		s.lazy.Store(true)
		if !s.waiting.Load() && s.hib.Load() == nil {
			return false // the first wait makes the timer (ensureTimer)
		}
		s.lazy.Store(false)
	}
	s.timer = time.AfterFunc(d, s.expire)
	return false
}

// lazyDeadlines defers a deadline's timer to the side's first wait
// (FULCRUM_LAZY_DEADLINES=0: a timer at once, for comparison). A
// connection served without ever waiting (an http-close client whose
// request was there at its accept and whose response fitted in the
// socket's buffer) then costs no runtime timer: no time.AfterFunc at its
// first deadline and no Stop at its close, about 2% of the proxy's CPU
// with a connection per request (bench/README.md). A side with a timer
// keeps it (Reset). What it changes is only when a deadline can end an
// operation that does not wait: such a read or write already succeeded
// when made between the deadline and its timer's run (as with Go's own
// poller); with no timer it succeeds until the side's next wait, which
// reports the deadline at once.
var lazyDeadlines = os.Getenv("FULCRUM_LAZY_DEADLINES") != "0"

// ensureTimer makes the timer of a deadline set lazily, for a waiter that
// has announced itself (waiting): true when that deadline has passed
// already (past is set then).
func (s *side) ensureTimer() bool {
	s.tmu.Lock()
	defer s.tmu.Unlock()
	s.lazy.Store(false)
	if s.dl == 0 || s.timer != nil || s.parked || s.past.Load() {
		return s.past.Load()
	}
	left := s.dl - time.Now().UnixNano()
	if left <= 0 {
		s.past.Store(true)
		return true
	}
	s.timer = time.AfterFunc(time.Duration(left), s.expire)
	return false
}

// dropDeadline clears the side's deadline and frees its timer.
func (s *side) dropDeadline() {
	s.tmu.Lock()
	s.dl = 0
	s.past.Store(false)
	s.lazy.Store(false)
	if s.timer != nil {
		s.timer.Stop()
		s.timer = nil
	}
	s.tmu.Unlock()
}

func (s *side) stopTimer() {
	s.tmu.Lock()
	if s.timer != nil {
		s.timer.Stop()
	}
	s.tmu.Unlock()
}

// incref takes a reference on the descriptor for an operation; false when
// c is closed.
func (c *Conn) incref() bool {
	for {
		st := c.state.Load()
		if st&closedBit != 0 {
			return false
		}
		if c.state.CompareAndSwap(st, st+refUnit) {
			return true
		}
	}
}

// decref drops an operation's reference, destroying c if it was the last
// one of a closed connection.
func (c *Conn) decref() {
	if c.state.Add(-refUnit) == closedBit {
		c.destroy()
	}
}

// destroy closes the descriptor once: its table entry goes first, so that
// the number, reused at once by the kernel, never maps to c.
func (c *Conn) destroy() {
	if !c.state.CompareAndSwap(closedBit, closedBit|destroyedBit) {
		return
	}
	c.p.g.conns.clear(c.fd, c)
	if c.counted {
		c.p.g.live.Add(-1)
	}
	c.r.stopTimer()
	c.w.stopTimer()
	c.dropPark()
	closeFD(c.fd)
}

// Close closes the connection; blocked reads and writes return
// net.ErrClosed. The descriptor is closed once no operation uses it.
func (c *Conn) Close() error {
	for {
		st := c.state.Load()
		if st&closedBit != 0 {
			return c.opErr("close", net.ErrClosed)
		}
		if c.state.CompareAndSwap(st, st|closedBit) {
			break
		}
	}
	c.r.wake()
	c.r.rouse()
	c.w.wake()
	if abort := c.lent.Swap(nil); abort != nil {
		(*abort)()
	}
	if c.state.Load() == closedBit {
		c.destroy()
	}
	return nil
}

// Lend takes c's socket out of its poller for a holder that does its own
// I/O on the descriptor (proxy/netio/uring's Session): fd stays open,
// and c's, until giveBack is called, and no event of the socket wakes the
// poller meanwhile. Closing c meanwhile calls abort (once, from the
// closing goroutine; it must not block), which is to make the holder stop
// using fd and give it back; the descriptor is then closed by giveBack,
// exactly once, and c's Close after giveBack is as usual. c must not be
// read or written while lent, nor hibernating. It fails with
// net.ErrClosed when c is closed (abort is not called then).
func (c *Conn) Lend(abort func()) (fd int, giveBack func(), err error) {
	if !c.incref() {
		return -1, nil, c.opErr("lend", net.ErrClosed)
	}
	c.r.tmu.Lock()
	if c.reg.Load() != regNone {
		// Out of the epoll instance: a relayed socket's events would
		// wake the reaper for nothing. A later wait registers it again.
		if err := epollCtl(c.p.epfd, unix.EPOLL_CTL_DEL, c.fd, nil); err != nil {
			c.r.tmu.Unlock()
			c.decref()
			return -1, nil, c.opErr("lend", os.NewSyscallError("epoll_ctl", err))
		}
		c.reg.Store(regNone)
	}
	c.r.tmu.Unlock()
	c.lent.Store(&abort)
	if c.state.Load()&closedBit != 0 && c.lent.Swap(nil) != nil {
		// Closed meanwhile, before its Close could see the abort.
		c.decref()
		return -1, nil, c.opErr("lend", net.ErrClosed)
	}
	var once sync.Once
	return c.fd, func() {
		once.Do(func() {
			c.lent.Store(nil)
			// The socket's readiness is unknown now: the next read tries.
			c.r.ready.Store(1)
			c.decref()
		})
	}, nil
}

// Read reads from the socket once it is readable: a read is made only
// when an event, or a previous read that filled b, says bytes may be
// there. As net.Conn, an expired deadline fails the read even with bytes
// waiting.
func (c *Conn) Read(b []byte) (int, error) { return c.read(b, true) }

// read is Read, or TryRead when !wait.
func (c *Conn) read(b []byte, wait bool) (int, error) {
	if !c.incref() {
		return 0, c.opErr("read", net.ErrClosed)
	}
	defer c.decref()
	if len(b) == 0 {
		return 0, nil
	}
	for {
		if c.r.expired() {
			return 0, c.opErr("read", os.ErrDeadlineExceeded)
		}
		if c.pre.set.Load() {
			return c.takePre(b), nil // read ahead (readahead_linux.go)
		}
		if c.r.ready.Swap(0) != 0 {
			n, err := ignoringEINTR(func() (int, error) { return sysRead(c.fd, b) })
			switch {
			case err == nil && n == 0:
				c.r.ready.Store(1) // the end of the stream stays readable
				return 0, io.EOF
			case err == nil:
				if n == len(b) || c.hup.Load() {
					c.r.ready.Store(1) // more, or the end, may be waiting
				}
				return n, nil
			case err != unix.EAGAIN:
				c.r.ready.Store(1)
				return 0, c.opErr("read", os.NewSyscallError("read", err))
			}
		}
		if !wait {
			return 0, ErrWouldBlock
		}
		if err := c.wait(&c.r); err != nil {
			return 0, c.opErr("read", err)
		}
	}
}

// Write writes all of b, waiting for room when the socket's buffer is full.
func (c *Conn) Write(b []byte) (int, error) { return c.write(b, true) }

// write is Write, or TryWrite when !wait.
func (c *Conn) write(b []byte, wait bool) (int, error) {
	if !c.incref() {
		return 0, c.opErr("write", net.ErrClosed)
	}
	defer c.decref()
	nn := 0
	for {
		if c.w.expired() {
			return nn, c.opErr("write", os.ErrDeadlineExceeded)
		}
		c.w.ready.Store(0)
		n, err := ignoringEINTR(func() (int, error) { return sysWrite(c.fd, b[nn:]) })
		if n > 0 {
			nn += n
		}
		if nn == len(b) {
			c.w.ready.Store(1)
			return nn, nil
		}
		if err != nil && err != unix.EAGAIN {
			c.w.ready.Store(1)
			return nn, c.opErr("write", os.NewSyscallError("write", err))
		}
		if !wait {
			if err == nil {
				continue // a short write: the next one says EAGAIN or takes more
			}
			return nn, ErrWouldBlock
		}
		if err := c.waitWrite(); err != nil {
			return nn, c.opErr("write", err)
		}
	}
}

// CloseRead shuts the read half of the connection.
func (c *Conn) CloseRead() error { return c.shutdown(unix.SHUT_RD) }

// CloseWrite shuts the write half: the peer reads the end of the stream.
func (c *Conn) CloseWrite() error { return c.shutdown(unix.SHUT_WR) }

func (c *Conn) shutdown(how int) error {
	if !c.incref() {
		return c.opErr("shutdown", net.ErrClosed)
	}
	defer c.decref()
	if err := unix.Shutdown(c.fd, how); err != nil {
		return c.opErr("shutdown", os.NewSyscallError("shutdown", err))
	}
	return nil
}

// localAddr is a local address in both forms: LocalAddr's and
// AddrPorts'. Immutable; shared by the connections a listener bound to one
// address accepts.
type localAddr struct {
	tcp *net.TCPAddr
	ap  netip.AddrPort
}

func newLocalAddr(a *net.TCPAddr) *localAddr { return &localAddr{tcp: a, ap: a.AddrPort()} }

// LocalAddr returns the socket's address, looked up on first use.
func (c *Conn) LocalAddr() net.Addr {
	if a := c.localAddr(); a != nil {
		return a.tcp
	}
	return nil
}

// localAddr returns c's local address, looked up on first use (nil when
// it cannot be).
func (c *Conn) localAddr() *localAddr {
	if a := c.laddr.Load(); a != nil {
		return a
	}
	if !c.incref() {
		return nil
	}
	defer c.decref()
	sa, err := syscall.Getsockname(c.fd) // not unix's: see Listener.Accept
	if err != nil {
		return nil
	}
	ta := sockaddrToTCP(sa)
	if ta == nil {
		return nil
	}
	a := newLocalAddr(ta)
	c.laddr.Store(a)
	return a
}

// Group returns the group whose poller serves c: a connection made for
// c's session (its server side) joins the same group.
func (c *Conn) Group() *Group { return c.p.g }

// RemoteAddr returns the peer's address, a *net.TCPAddr made at each
// call (nil when it is not known); AddrPorts makes none.
func (c *Conn) RemoteAddr() net.Addr {
	if !c.raddr.IsValid() {
		return nil
	}
	return net.TCPAddrFromAddrPort(c.raddr)
}

// AddrPorts returns LocalAddr and RemoteAddr as netip values (zero for
// one that is not known), converted once: the access log asks for them at
// every request on a kept connection.
func (c *Conn) AddrPorts() (local, remote netip.AddrPort) {
	if a := c.localAddr(); a != nil {
		local = a.ap
	}
	return local, c.raddr
}

// SetDeadline sets both deadlines.
func (c *Conn) SetDeadline(t time.Time) error {
	c.r.setDeadline(t)
	c.w.setDeadline(t)
	return nil
}

// SetReadDeadline sets the read deadline; a blocked Read returns at once
// when t is in the past.
func (c *Conn) SetReadDeadline(t time.Time) error { c.r.setDeadline(t); return nil }

// SetWriteDeadline sets the write deadline.
func (c *Conn) SetWriteDeadline(t time.Time) error { c.w.setDeadline(t); return nil }

// SyscallConn returns c's descriptor for raw operations.
func (c *Conn) SyscallConn() (syscall.RawConn, error) { return rawConn{c}, nil }

// opErr wraps err as net's connections do, so that callers classify it the
// same way (timeouts, closed connections, resets).
func (c *Conn) opErr(op string, err error) error {
	var src net.Addr
	if a := c.laddr.Load(); a != nil {
		src = a.tcp
	}
	return &net.OpError{Op: op, Net: "tcp", Source: src, Addr: c.RemoteAddr(), Err: err}
}

// rawConn is Conn's syscall.RawConn, with the semantics of Go's: Read and
// Write call f until it returns true, waiting for the next event of their
// direction between calls.
type rawConn struct{ c *Conn }

func (rc rawConn) Control(f func(fd uintptr)) error {
	if !rc.c.incref() {
		return rc.c.opErr("raw-control", net.ErrClosed)
	}
	defer rc.c.decref()
	f(uintptr(rc.c.fd))
	return nil
}

func (rc rawConn) Read(f func(fd uintptr) bool) error {
	return rc.c.raw(&rc.c.r, "raw-read", f)
}

func (rc rawConn) Write(f func(fd uintptr) bool) error {
	return rc.c.raw(&rc.c.w, "raw-write", f)
}

// raw runs f as RawConn.Read or Write. What f did to the socket is
// unknown, so the side is left ready when it returns: the next Read tries
// the socket (Idle knows better for the pool's check).
func (c *Conn) raw(s *side, op string, f func(fd uintptr) bool) error {
	if !c.incref() {
		return c.opErr(op, net.ErrClosed)
	}
	defer c.decref()
	for {
		if s.expired() {
			return c.opErr(op, os.ErrDeadlineExceeded)
		}
		s.ready.Store(0)
		if f(uintptr(c.fd)) {
			s.ready.Store(1)
			return nil
		}
		wait := c.wait
		if s == &c.w {
			wait = func(*side) error { return c.waitWrite() }
		}
		if err := wait(s); err != nil {
			return c.opErr(op, err)
		}
	}
}

// Idle reports whether nothing has come from the peer, not even the end of
// the stream, since the socket was last found drained: an idle pooled
// server connection can carry a request. Only when an event came, or the
// socket never waited (it is not in the epoll instance yet, so no event
// would say), does it look at the socket (one non-blocking peek);
// otherwise it makes no system call, as HAProxy trusts its poller for its
// idle connections (a byte whose event the reaper has not collected yet
// is not seen).
func (c *Conn) Idle() bool {
	if c.pre.set.Load() {
		return false // bytes read ahead, not taken
	}
	if c.r.ready.Load() == 0 && c.reg.Load() != regNone {
		return true
	}
	if !c.incref() {
		return false
	}
	defer c.decref()
	c.r.ready.Store(0)
	var b [1]byte
	_, _, err := unix.Recvfrom(c.fd, b[:], unix.MSG_PEEK|unix.MSG_DONTWAIT)
	if err == unix.EAGAIN {
		return true
	}
	c.r.ready.Store(1)
	return false
}

// Quiet reports, as Idle, whether nothing has come from the peer since
// the socket was last found drained, without changing c's readiness: it
// is safe while another goroutine uses c (the pool's sweeper looks at
// connections a request may take meanwhile). It makes a system call (one
// non-blocking peek) only when an event came or the socket never waited.
func (c *Conn) Quiet() bool {
	if c.pre.set.Load() {
		return false
	}
	if c.r.ready.Load() == 0 && c.reg.Load() != regNone {
		return true
	}
	if !c.incref() {
		return false
	}
	defer c.decref()
	var b [1]byte
	_, _, err := unix.Recvfrom(c.fd, b[:], unix.MSG_PEEK|unix.MSG_DONTWAIT)
	return err == unix.EAGAIN
}

func ignoringEINTR(f func() (int, error)) (int, error) {
	for {
		n, err := f()
		if err != unix.EINTR {
			return n, err
		}
	}
}

// sockaddrAddrPort is sa's address as a netip value (zero for one that
// is not TCP's); an IPv6 zone is the interface's name.
func sockaddrAddrPort(sa syscall.Sockaddr) netip.AddrPort {
	switch a := sa.(type) {
	case *syscall.SockaddrInet4:
		return netip.AddrPortFrom(netip.AddrFrom4(a.Addr), uint16(a.Port))
	case *syscall.SockaddrInet6:
		ip := netip.AddrFrom16(a.Addr)
		if a.ZoneId != 0 {
			if ifi, err := net.InterfaceByIndex(int(a.ZoneId)); err == nil {
				ip = ip.WithZone(ifi.Name)
			}
		}
		return netip.AddrPortFrom(ip, uint16(a.Port))
	}
	return netip.AddrPort{}
}

func sockaddrToTCP(sa syscall.Sockaddr) *net.TCPAddr {
	switch a := sa.(type) {
	case *syscall.SockaddrInet4:
		return &net.TCPAddr{IP: append(net.IP(nil), a.Addr[:]...), Port: a.Port}
	case *syscall.SockaddrInet6:
		ta := &net.TCPAddr{IP: append(net.IP(nil), a.Addr[:]...), Port: a.Port}
		if a.ZoneId != 0 {
			if ifi, err := net.InterfaceByIndex(int(a.ZoneId)); err == nil {
				ta.Zone = ifi.Name
			}
		}
		return ta
	}
	return nil
}

var (
	_ net.Conn        = (*Conn)(nil)
	_ syscall.Conn    = (*Conn)(nil)
	_ io.ReaderFrom   = (*Conn)(nil)
	_ syscall.RawConn = rawConn{}
)
