//go:build linux

package uring

import (
	"errors"
	"fmt"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Opcodes used here (include/uapi/linux/io_uring.h, enum io_uring_op).
const (
	OpNop         uint8 = 0
	OpAsyncCancel uint8 = 14
	OpClose       uint8 = 19
	OpRead        uint8 = 22
	OpSend        uint8 = 26
	OpRecv        uint8 = 27
	OpShutdown    uint8 = 34
)

// Setup flags (IORING_SETUP_*) accepted by New.
const (
	SetupSubmitAll     uint32 = 1 << 7
	SetupCoopTaskrun   uint32 = 1 << 8
	SetupSingleIssuer  uint32 = 1 << 12
	SetupDeferTaskrun  uint32 = 1 << 13
	setupNoMmapMask    uint32 = 1 << 14 // IORING_SETUP_NO_MMAP: refused here
	setupSQE128OrCQE32 uint32 = 1<<10 | 1<<11
)

// SQE flags and receive flags.
const (
	SQEBufferSelect uint8  = 1 << 5 // IOSQE_BUFFER_SELECT
	RecvMultishot   uint16 = 1 << 1 // IORING_RECV_MULTISHOT, in the SQE's ioprio
)

// CQE flags.
const (
	CQEFBuffer       uint32 = 1 << 0 // IORING_CQE_F_BUFFER: Flags>>16 is the buffer id
	CQEFMore         uint32 = 1 << 1 // IORING_CQE_F_MORE: the request stays armed
	CQEFSockNonempty uint32 = 1 << 2
	cqeBufferShift          = 16
)

const (
	enterGetEvents = 1 << 0 // IORING_ENTER_GETEVENTS
	enterExtArg    = 1 << 3 // IORING_ENTER_EXT_ARG

	featSingleMmap = 1 << 0 // IORING_FEAT_SINGLE_MMAP
	featExtArg     = 1 << 8 // IORING_FEAT_EXT_ARG

	offSQRing = 0
	offCQRing = 0x8000000
	offSQEs   = 0x10000000

	registerProbe      = 8
	registerPbufRing   = 22
	unregisterPbufRing = 23

	probeOpSupported = 1 << 0
)

// SQE is a submission queue entry, laid out as struct io_uring_sqe (64
// bytes). Entries from GetSQE live in the ring shared with the kernel;
// the Prep methods fill them.
type SQE struct {
	Opcode      uint8
	Flags       uint8
	IoPrio      uint16
	Fd          int32
	Off         uint64
	Addr        uint64
	Len         uint32
	OpFlags     uint32 // msg_flags, rw_flags, cancel_flags...
	UserData    uint64
	BufIndex    uint16 // buf_index, or buf_group with IOSQE_BUFFER_SELECT
	Personality uint16
	SpliceFdIn  int32
	Addr3       uint64
	_           uint64
}

// CQE is a completion queue entry (struct io_uring_cqe): Res is the
// operation's result, a count or a negated errno.
type CQE struct {
	UserData uint64
	Res      int32
	Flags    uint32
}

// Err is nil when Res is not negative, else the errno it carries.
func (c CQE) Err() error {
	if c.Res >= 0 {
		return nil
	}
	return unix.Errno(-c.Res)
}

// BufID is the provided buffer the completion used, and whether it used
// one.
func (c CQE) BufID() (uint16, bool) {
	return uint16(c.Flags >> cqeBufferShift), c.Flags&CQEFBuffer != 0
}

// More reports whether the request that completed stays armed (multishot).
func (c CQE) More() bool { return c.Flags&CQEFMore != 0 }

type params struct {
	sqEntries    uint32
	cqEntries    uint32
	flags        uint32
	sqThreadCPU  uint32
	sqThreadIdle uint32
	features     uint32
	wqFd         uint32
	resv         [3]uint32
	sqOff        sqOffsets
	cqOff        cqOffsets
}

type sqOffsets struct {
	head, tail, ringMask, ringEntries, flags, dropped, array, resv1 uint32
	userAddr                                                        uint64
}

type cqOffsets struct {
	head, tail, ringMask, ringEntries, overflow, cqes, flags, resv1 uint32
	userAddr                                                        uint64
}

type geteventsArg struct {
	sigmask   uint64
	sigmaskSz uint32
	pad       uint32
	ts        uint64
}

// ErrClosed is returned by a Ring's methods once it is closed.
var ErrClosed = errors.New("uring: ring closed")

// ErrSQFull is returned by Prep helpers when no submission entry is free
// even after submitting the pending ones.
var ErrSQFull = errors.New("uring: submission queue full")

// Ring is one io_uring instance. It is not safe for concurrent use: one
// goroutine prepares, submits and reaps (with SetupSingleIssuer, one
// thread: lock the goroutine to it before New).
type Ring struct {
	fd       int
	features uint32
	flags    uint32

	sqMem, cqMem, sqeMem []byte

	sqHead, sqTail *uint32
	sqMask         uint32
	sqEntries      uint32
	sqes           unsafe.Pointer

	cqHead, cqTail *uint32
	cqMask         uint32
	cqEntries      uint32
	cqes           unsafe.Pointer

	sqeTail   uint32 // entries handed out by GetSQE
	submitted uint32 // entries passed to the kernel

	Enters uint64 // io_uring_enter calls made (for measurements)
}

func littleEndian() bool {
	x := uint16(1)
	return *(*byte)(unsafe.Pointer(&x)) == 1
}

// New sets up a ring with entries submission entries (a power of two up
// to 32768; the kernel rounds up) and the given setup flags. It fails
// with the kernel's errno (EPERM: io_uring disabled, ENOSYS: absent,
// EINVAL: a flag unknown to this kernel), or errors.ErrUnsupported on a
// big-endian machine.
func New(entries uint32, flags uint32) (*Ring, error) {
	if !littleEndian() {
		return nil, errors.ErrUnsupported
	}
	if flags&(setupNoMmapMask|setupSQE128OrCQE32) != 0 {
		return nil, fmt.Errorf("uring: setup flags %#x not supported by this binding", flags)
	}
	var p params
	p.flags = flags
	fd, _, errno := unix.Syscall(unix.SYS_IO_URING_SETUP, uintptr(entries), uintptr(unsafe.Pointer(&p)), 0)
	if errno != 0 {
		return nil, fmt.Errorf("io_uring_setup: %w", errno)
	}
	r := &Ring{fd: int(fd), features: p.features, flags: flags}
	if err := r.mapRings(&p); err != nil {
		r.Close()
		return nil, err
	}
	return r, nil
}

func (r *Ring) mapRings(p *params) error {
	sqSize := p.sqOff.array + p.sqEntries*4
	cqSize := p.cqOff.cqes + p.cqEntries*uint32(unsafe.Sizeof(CQE{}))
	if p.features&featSingleMmap != 0 {
		sqSize = max(sqSize, cqSize)
		cqSize = sqSize
	}
	var err error
	r.sqMem, err = unix.Mmap(r.fd, offSQRing, int(sqSize), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE)
	if err != nil {
		return fmt.Errorf("mmap sq ring: %w", err)
	}
	cq := r.sqMem
	if p.features&featSingleMmap == 0 {
		r.cqMem, err = unix.Mmap(r.fd, offCQRing, int(cqSize), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE)
		if err != nil {
			return fmt.Errorf("mmap cq ring: %w", err)
		}
		cq = r.cqMem
	}
	r.sqeMem, err = unix.Mmap(r.fd, offSQEs, int(p.sqEntries)*int(unsafe.Sizeof(SQE{})), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE)
	if err != nil {
		return fmt.Errorf("mmap sqes: %w", err)
	}
	sq := unsafe.Pointer(&r.sqMem[0])
	r.sqHead = (*uint32)(unsafe.Add(sq, p.sqOff.head))
	r.sqTail = (*uint32)(unsafe.Add(sq, p.sqOff.tail))
	r.sqMask = *(*uint32)(unsafe.Add(sq, p.sqOff.ringMask))
	r.sqEntries = *(*uint32)(unsafe.Add(sq, p.sqOff.ringEntries))
	// The SQ array maps ring slots to SQE indexes: identity, set once.
	arr := unsafe.Slice((*uint32)(unsafe.Add(sq, p.sqOff.array)), r.sqEntries)
	for i := range arr {
		arr[i] = uint32(i)
	}
	r.sqes = unsafe.Pointer(&r.sqeMem[0])
	c := unsafe.Pointer(&cq[0])
	r.cqHead = (*uint32)(unsafe.Add(c, p.cqOff.head))
	r.cqTail = (*uint32)(unsafe.Add(c, p.cqOff.tail))
	r.cqMask = *(*uint32)(unsafe.Add(c, p.cqOff.ringMask))
	r.cqEntries = *(*uint32)(unsafe.Add(c, p.cqOff.ringEntries))
	r.cqes = unsafe.Add(c, p.cqOff.cqes)
	r.sqeTail = atomic.LoadUint32(r.sqTail)
	r.submitted = r.sqeTail
	return nil
}

// Close unmaps the rings and closes the instance; the kernel cancels the
// requests still pending. It may be called more than once.
func (r *Ring) Close() error {
	if r.fd < 0 {
		return nil
	}
	for _, m := range []*[]byte{&r.sqeMem, &r.cqMem, &r.sqMem} {
		if *m != nil {
			unix.Munmap(*m)
			*m = nil
		}
	}
	err := unix.Close(r.fd)
	r.fd = -1
	r.sqHead, r.sqTail, r.cqHead, r.cqTail = nil, nil, nil, nil
	return err
}

// Fd is the ring's descriptor (-1 once closed).
func (r *Ring) Fd() int { return r.fd }

// SQEntries and CQEntries are the ring sizes the kernel chose.
func (r *Ring) SQEntries() uint32 { return r.sqEntries }

// CQEntries is the size of the completion ring.
func (r *Ring) CQEntries() uint32 { return r.cqEntries }

// GetSQE returns a zeroed free submission entry, or nil when the ring is
// full (submit first) or closed. The entry goes to the kernel with the
// next Submit or SubmitAndWait.
func (r *Ring) GetSQE() *SQE {
	if r.fd < 0 {
		return nil
	}
	head := atomic.LoadUint32(r.sqHead)
	if r.sqeTail-head >= r.sqEntries {
		return nil
	}
	s := (*SQE)(unsafe.Add(r.sqes, uintptr(r.sqeTail&r.sqMask)*unsafe.Sizeof(SQE{})))
	*s = SQE{}
	r.sqeTail++
	return s
}

// Pending is the number of prepared entries not yet submitted.
func (r *Ring) Pending() uint32 { return r.sqeTail - r.submitted }

// Submit passes the prepared entries to the kernel in one io_uring_enter
// (none when there are none) and returns how many it took.
func (r *Ring) Submit() (int, error) {
	if r.Pending() == 0 {
		return 0, nil
	}
	return r.enter(0, 0, nil)
}

// SubmitAndWait passes the prepared entries to the kernel and waits until
// at least waitNr completions are ready, in one io_uring_enter. It retries
// on EINTR.
func (r *Ring) SubmitAndWait(waitNr uint32) (int, error) {
	return r.enter(waitNr, enterGetEvents, nil)
}

// SubmitAndPeek passes the prepared entries to the kernel and has it post
// the completions that are ready (with SetupDeferTaskrun they are posted
// only when asked), without waiting, in one io_uring_enter that Go's
// scheduler does not see (it cannot block).
func (r *Ring) SubmitAndPeek() (int, error) {
	return r.enter(0, enterGetEvents, nil)
}

// SubmitAndWaitTimeout is SubmitAndWait bounded by d: when d passes first
// it fails with unix.ETIME (the entries are submitted all the same). It
// needs IORING_FEAT_EXT_ARG (Linux 5.11).
func (r *Ring) SubmitAndWaitTimeout(waitNr uint32, d time.Duration) (int, error) {
	return r.waitTimeout(waitNr, d, false)
}

// SubmitAndWaitRaw is SubmitAndWaitTimeout through a raw system call:
// Go's scheduler does not know the thread waits, so the goroutine keeps
// its P all along (no hand-off by sysmon, but no other goroutine runs on
// that P meanwhile): keep d short.
func (r *Ring) SubmitAndWaitRaw(waitNr uint32, d time.Duration) (int, error) {
	return r.waitTimeout(waitNr, d, true)
}

// waitTimeout submits and waits for waitNr completions at most d, through
// Go's system call bookkeeping or, raw, without it.
func (r *Ring) waitTimeout(waitNr uint32, d time.Duration, raw bool) (int, error) {
	if r.features&featExtArg == 0 {
		return 0, errors.ErrUnsupported
	}
	ts := unix.NsecToTimespec(max(d, 0).Nanoseconds())
	arg := geteventsArg{ts: uint64(uintptr(unsafe.Pointer(&ts)))}
	if raw {
		return r.enterRaw(waitNr, enterGetEvents|enterExtArg, &arg)
	}
	return r.enter(waitNr, enterGetEvents|enterExtArg, &arg)
}

func (r *Ring) enterRaw(waitNr uint32, flags uintptr, arg *geteventsArg) (int, error) {
	if r.fd < 0 {
		return 0, ErrClosed
	}
	toSubmit := r.sqeTail - r.submitted
	if toSubmit > 0 {
		atomic.StoreUint32(r.sqTail, r.sqeTail)
	}
	r.Enters++
	n, _, errno := unix.RawSyscall6(unix.SYS_IO_URING_ENTER, uintptr(r.fd), uintptr(toSubmit), uintptr(waitNr), flags,
		uintptr(unsafe.Pointer(arg)), unsafe.Sizeof(*arg))
	if errno != 0 {
		return 0, errno // EINTR too: the caller's loop comes back
	}
	r.submitted += uint32(n)
	return int(n), nil
}

func (r *Ring) enter(waitNr uint32, flags uintptr, arg *geteventsArg) (int, error) {
	if r.fd < 0 {
		return 0, ErrClosed
	}
	toSubmit := r.sqeTail - r.submitted
	if toSubmit > 0 {
		atomic.StoreUint32(r.sqTail, r.sqeTail)
	}
	for {
		r.Enters++
		var n uintptr
		var errno unix.Errno
		if waitNr == 0 {
			// Submitting only: the kernel does not block, and Go's
			// scheduler need not know (see proxy/netio/epoll/rawio_linux.go).
			n, _, errno = unix.RawSyscall6(unix.SYS_IO_URING_ENTER, uintptr(r.fd), uintptr(toSubmit), 0, flags, 0, 0)
		} else if arg != nil {
			n, _, errno = unix.Syscall6(unix.SYS_IO_URING_ENTER, uintptr(r.fd), uintptr(toSubmit), uintptr(waitNr), flags,
				uintptr(unsafe.Pointer(arg)), unsafe.Sizeof(*arg))
		} else {
			n, _, errno = unix.Syscall6(unix.SYS_IO_URING_ENTER, uintptr(r.fd), uintptr(toSubmit), uintptr(waitNr), flags, 0, 0)
		}
		if errno == unix.EINTR {
			continue
		}
		if errno != 0 {
			return 0, errno
		}
		// Entries the kernel did not take (it stops at one it cannot
		// read) stay in the ring for the next enter.
		r.submitted += uint32(n)
		return int(n), nil
	}
}

// Ready is the number of completions waiting in the ring.
func (r *Ring) Ready() uint32 {
	if r.fd < 0 {
		return 0
	}
	return atomic.LoadUint32(r.cqTail) - *r.cqHead
}

// Reap copies up to len(cqes) ready completions into cqes, frees their
// slots, and returns how many it copied. It makes no system call.
func (r *Ring) Reap(cqes []CQE) int {
	if r.fd < 0 {
		return 0
	}
	head := *r.cqHead
	tail := atomic.LoadUint32(r.cqTail)
	n := 0
	for head != tail && n < len(cqes) {
		cqes[n] = *(*CQE)(unsafe.Add(r.cqes, uintptr(head&r.cqMask)*unsafe.Sizeof(CQE{})))
		head++
		n++
	}
	atomic.StoreUint32(r.cqHead, head)
	return n
}

// Probe lists the opcodes this kernel supports (IORING_REGISTER_PROBE).
type Probe struct {
	LastOp uint8
	ops    [256]uint16 // flags per opcode
}

// Supported reports whether the kernel supports opcode op.
func (p *Probe) Supported(op uint8) bool {
	return op <= p.LastOp && p.ops[op]&probeOpSupported != 0
}

// Probe asks the kernel which opcodes it supports.
func (r *Ring) Probe() (*Probe, error) {
	if r.fd < 0 {
		return nil, ErrClosed
	}
	// struct io_uring_probe: 16-byte header, then 256 io_uring_probe_op
	// of 8 bytes.
	var buf [16 + 256*8]byte
	if err := r.register(registerProbe, unsafe.Pointer(&buf[0]), 256); err != nil {
		return nil, fmt.Errorf("io_uring_register(PROBE): %w", err)
	}
	p := &Probe{LastOp: buf[0]}
	n := int(buf[1])
	for i := 0; i < n; i++ {
		op := buf[16+i*8]
		p.ops[op] = uint16(buf[16+i*8+2]) | uint16(buf[16+i*8+3])<<8
	}
	return p, nil
}

func (r *Ring) register(opcode uintptr, arg unsafe.Pointer, nr uintptr) error {
	_, _, errno := unix.Syscall6(unix.SYS_IO_URING_REGISTER, uintptr(r.fd), opcode, uintptr(arg), nr, 0, 0)
	if errno != 0 {
		return errno
	}
	return nil
}

// PrepNop makes s a no-op completing with Res 0.
func (s *SQE) PrepNop(userData uint64) {
	s.Opcode = OpNop
	s.UserData = userData
}

// PrepSend makes s a send(2) of len bytes at addr on fd. The memory must
// stay valid and unchanged until the completion: memory the Go heap owns
// must be kept reachable by the caller (prefer memory from unix.Mmap, as
// BufRing's).
func (s *SQE) PrepSend(fd int, addr unsafe.Pointer, n uint32, msgFlags uint32, userData uint64) {
	s.prepIO(OpSend, fd, addr, n, msgFlags, userData)
}

// PrepRecv makes s a recv(2) of up to n bytes into addr (same rule as
// PrepSend for the memory).
func (s *SQE) PrepRecv(fd int, addr unsafe.Pointer, n uint32, msgFlags uint32, userData uint64) {
	s.prepIO(OpRecv, fd, addr, n, msgFlags, userData)
}

// prepIO fills the fields a send or a receive of n bytes at addr on fd
// shares.
func (s *SQE) prepIO(op uint8, fd int, addr unsafe.Pointer, n uint32, msgFlags uint32, userData uint64) {
	s.Opcode = op
	s.Fd = int32(fd)
	s.Addr = uint64(uintptr(addr))
	s.Len = n
	s.OpFlags = msgFlags
	s.UserData = userData
}

// PrepRecvMultishot makes s a multishot receive on fd into the buffers of
// group: one completion per arrival, each with its buffer id, flagged
// CQEFMore while the request stays armed. The request ends (no CQEFMore)
// at end of stream (Res 0), on an error, or when the group has no buffer
// left (Res -ENOBUFS).
func (s *SQE) PrepRecvMultishot(fd int, group uint16, userData uint64) {
	s.Opcode = OpRecv
	s.Fd = int32(fd)
	s.IoPrio = RecvMultishot
	s.Flags = SQEBufferSelect
	s.BufIndex = group
	s.UserData = userData
}

// PrepRead makes s a read(2) of n bytes into addr (same rule as PrepSend
// for the memory).
func (s *SQE) PrepRead(fd int, addr unsafe.Pointer, n uint32, userData uint64) {
	s.Opcode = OpRead
	s.Fd = int32(fd)
	s.Addr = uint64(uintptr(addr))
	s.Len = n
	s.Off = ^uint64(0) // the file position: none for sockets and eventfds
	s.UserData = userData
}

// PrepCancel makes s cancel the request pending whose user data is
// target (IORING_OP_ASYNC_CANCEL, Linux 5.5).
func (s *SQE) PrepCancel(target, userData uint64) {
	s.Opcode = OpAsyncCancel
	s.Addr = target
	s.UserData = userData
}

// PrepCancelFd makes s cancel every request pending on fd
// (IORING_ASYNC_CANCEL_FD | IORING_ASYNC_CANCEL_ALL, Linux 5.19).
func (s *SQE) PrepCancelFd(fd int, userData uint64) {
	s.Opcode = OpAsyncCancel
	s.Fd = int32(fd)
	s.OpFlags = 1<<0 | 1<<1
	s.UserData = userData
}

// BufRing is a ring of provided buffers registered with a Ring
// (IORING_REGISTER_PBUF_RING, Linux 5.19): receives that select a buffer
// take the next one, and the completion names it. Buffers and ring live
// outside the Go heap (unix.Mmap).
type BufRing struct {
	r       *Ring
	group   uint16
	entries uint16
	size    int
	ring    []byte // entries x struct io_uring_buf
	mem     []byte // entries x size bytes
	tail    uint16
	out     int // buffers the kernel holds or handed out, not yet recycled
}

// NewBufRing registers a group of entries buffers (a power of two, at most
// 32768) of size bytes each, all available at once.
func (r *Ring) NewBufRing(group uint16, entries uint16, size int) (*BufRing, error) {
	if r.fd < 0 {
		return nil, ErrClosed
	}
	if entries == 0 || entries&(entries-1) != 0 || entries > 32768 || size <= 0 || size > 1<<20 {
		return nil, fmt.Errorf("uring: bad buffer ring shape %d x %d", entries, size)
	}
	b := &BufRing{r: r, group: group, entries: entries, size: size}
	var err error
	b.ring, err = unix.Mmap(-1, 0, int(entries)*16, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return nil, fmt.Errorf("mmap buffer ring: %w", err)
	}
	b.mem, err = unix.Mmap(-1, 0, int(entries)*size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		unix.Munmap(b.ring)
		return nil, fmt.Errorf("mmap buffers: %w", err)
	}
	// struct io_uring_buf_reg
	var reg struct {
		ringAddr    uint64
		ringEntries uint32
		bgid        uint16
		flags       uint16
		resv        [3]uint64
	}
	reg.ringAddr = uint64(uintptr(unsafe.Pointer(&b.ring[0])))
	reg.ringEntries = uint32(entries)
	reg.bgid = group
	if err := r.register(registerPbufRing, unsafe.Pointer(&reg), 1); err != nil {
		unix.Munmap(b.ring)
		unix.Munmap(b.mem)
		return nil, fmt.Errorf("io_uring_register(PBUF_RING): %w", err)
	}
	b.out = int(entries)
	for id := range entries {
		b.add(id)
	}
	b.publish()
	return b, nil
}

// Group is the buffer group id to give PrepRecvMultishot.
func (b *BufRing) Group() uint16 { return b.group }

// Size is the length of each buffer.
func (b *BufRing) Size() int { return b.size }

// Out is the number of buffers handed out by completions and not yet
// recycled.
func (b *BufRing) Out() int { return b.out }

// Buf returns buffer id (its whole length), or nil for an id out of range.
func (b *BufRing) Buf(id uint16) []byte {
	if b.mem == nil || id >= b.entries {
		return nil
	}
	return b.mem[int(id)*b.size : (int(id)+1)*b.size : (int(id)+1)*b.size]
}

// add puts buffer id at the ring's local tail (not yet visible).
func (b *BufRing) add(id uint16) {
	e := unsafe.Pointer(&b.ring[int(b.tail&(b.entries-1))*16])
	*(*uint64)(e) = uint64(uintptr(unsafe.Pointer(&b.mem[int(id)*b.size])))
	*(*uint32)(unsafe.Add(e, 8)) = uint32(b.size)
	*(*uint16)(unsafe.Add(e, 12)) = id
	b.tail++
	b.out--
}

// publish makes the added buffers visible to the kernel: the tail shares
// its 32-bit word with the first entry's id, stored together atomically
// (a release store).
func (b *BufRing) publish() {
	w := (*uint32)(unsafe.Pointer(&b.ring[12]))
	bid0 := uint32(*(*uint16)(unsafe.Pointer(&b.ring[12])))
	atomic.StoreUint32(w, uint32(b.tail)<<16|bid0)
}

// Recycle gives buffers back to the kernel. Ids out of range are ignored,
// and so is a recycle that would hold more buffers than the ring has.
func (b *BufRing) Recycle(ids ...uint16) {
	if b.ring == nil {
		return
	}
	added := false
	for _, id := range ids {
		if id >= b.entries || b.out <= 0 {
			continue
		}
		b.add(id)
		added = true
	}
	if added {
		b.publish()
	}
}

// Taken records that a completion handed out a buffer (call once per
// completion that has one, so that Out counts right).
func (b *BufRing) Taken() { b.out++ }

// Close unregisters the group and unmaps its memory. The ring must have
// no receive pending on the group.
func (b *BufRing) Close() error {
	if b.ring == nil {
		return nil
	}
	var err error
	if b.r.fd >= 0 {
		var reg struct {
			ringAddr    uint64
			ringEntries uint32
			bgid        uint16
			flags       uint16
			resv        [3]uint64
		}
		reg.bgid = b.group
		err = b.r.register(unregisterPbufRing, unsafe.Pointer(&reg), 1)
	}
	unix.Munmap(b.ring)
	unix.Munmap(b.mem)
	b.ring, b.mem = nil, nil
	return err
}
