package epoll

import (
	"os"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// rawRead and rawWrite are read(2) and write(2) without the Go runtime's
// system call bookkeeping (entersyscall/exitsyscall): the goroutine keeps
// its P while the kernel works. That is safe only because the layer's
// sockets are non-blocking: the call returns at once, with bytes or
// EAGAIN. What it saves is measured in bench/README.md ("Raw system
// calls"): a P that sysmon sees in a system call across two of its ticks
// (20 µs apart under load; a write to a loopback peer often lasts that
// long) is handed to another thread, and sysmon keeps its 20 µs tick while
// it finds such Ps to retake, each tick a nanosleep and often a futex wake
// of an idle thread. splice(2), which may move a megabyte, keeps the
// bookkeeping.
//
// Each returns what unix.Read and unix.Write return: n and nil, or -1 and
// the errno.
//
// They are recvfrom(2) and sendto(2) with no address (HAProxy's calls):
// on a connected socket the same as read(2) and write(2), without the VFS
// layer's file-position lock and checks (fdget_pos, vfs_read, vfs_write:
// about 3% of fulcrum's CPU at h2load -c64 -m10, bench/README.md); the
// send has MSG_NOSIGNAL (a write to a reset connection fails with EPIPE
// either way: Go ignores SIGPIPE on such descriptors, here none is
// raised). FULCRUM_EPOLL_SOCKCALLS=0 keeps read(2) and write(2).
func rawRead(fd int, b []byte) (int, error) {
	if !sockCalls {
		return rawIO(unix.SYS_READ, fd, b, 0)
	}
	return rawIO(unix.SYS_RECVFROM, fd, b, 0)
}

func rawWrite(fd int, b []byte) (int, error) {
	if !sockCalls {
		return rawIO(unix.SYS_WRITE, fd, b, 0)
	}
	return rawIO(unix.SYS_SENDTO, fd, b, unix.MSG_NOSIGNAL)
}

// sockCalls: rawRead and rawWrite are recvfrom and sendto.
var sockCalls = os.Getenv("FULCRUM_EPOLL_SOCKCALLS") != "0"

// rawIO is read(2), write(2), recvfrom(2) or sendto(2) (trap) of b on
// fd, with flags for the last two (no address).
func rawIO(trap uintptr, fd int, b []byte, flags uintptr) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	n, _, e := unix.RawSyscall6(trap, uintptr(fd), uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)), flags, 0, 0)
	if e != 0 {
		return -1, e
	}
	return int(n), nil
}

// rawEpollWait is epoll_wait(2) with a timeout of 0 (it never blocks),
// without the runtime's bookkeeping, as rawRead; epoll_pwait with no
// signal mask is the call every architecture has. It returns the number
// of events written to events, or -1 and the errno.
func rawEpollWait(epfd int, events []unix.EpollEvent) (int, error) {
	if len(events) == 0 {
		return 0, nil
	}
	n, _, e := unix.RawSyscall6(unix.SYS_EPOLL_PWAIT, uintptr(epfd), uintptr(unsafe.Pointer(&events[0])), uintptr(len(events)), 0, 0, 0)
	if e != 0 {
		return -1, e
	}
	return int(n), nil
}

// rawCalls says whether the layer's other short calls on its sockets
// (accept4, close, epoll_ctl) are made raw as well: FULCRUM_RAW_CALLS=0
// turns that off (the runtime's wrapped calls), for comparison. Under
// load every one of those wrapped calls made while all Ps were idle woke
// sysmon from its deep sleep and reset its tick to 20 µs (proc.go's
// syscallWake): with a connection per request that kept sysmon polling,
// about a tenth of the proxy's CPU (bench/README.md, "http-close: where
// the CPU goes"). None of the three blocks: the listening sockets are
// non-blocking, and no socket of the layer has SO_LINGER set, so close
// does not wait for the peer.
var rawCalls = os.Getenv("FULCRUM_RAW_CALLS") != "0"

// closeFD closes fd (close(2)), raw unless rawCalls is off.
func closeFD(fd int) {
	if !rawCalls {
		unix.Close(fd)
		return
	}
	unix.RawSyscall(unix.SYS_CLOSE, uintptr(fd), 0, 0)
}

// epollCtl is unix.EpollCtl, raw unless rawCalls is off.
func epollCtl(epfd, op, fd int, ev *unix.EpollEvent) error {
	if !rawCalls {
		return unix.EpollCtl(epfd, op, fd, ev)
	}
	_, _, e := unix.RawSyscall6(unix.SYS_EPOLL_CTL, uintptr(epfd), uintptr(op), uintptr(fd), uintptr(unsafe.Pointer(ev)), 0, 0)
	if e != 0 {
		return e
	}
	return nil
}

// rawAccept4 is accept4(2) with SOCK_NONBLOCK|SOCK_CLOEXEC, raw: what
// syscall.Accept4 returns, for IPv4 and IPv6 peers (another family's
// address is returned as nil; the layer serves TCP only).
func rawAccept4(fd int) (int, syscall.Sockaddr, error) {
	var rsa syscall.RawSockaddrAny
	n := uint32(syscall.SizeofSockaddrAny)
	nfd, _, e := unix.RawSyscall6(unix.SYS_ACCEPT4, uintptr(fd), uintptr(unsafe.Pointer(&rsa)), uintptr(unsafe.Pointer(&n)),
		syscall.SOCK_NONBLOCK|syscall.SOCK_CLOEXEC, 0, 0)
	if e != 0 {
		return -1, nil, e
	}
	return int(nfd), rawSockaddr(&rsa), nil
}

// rawSockaddr converts an IPv4 or IPv6 address as the kernel wrote it;
// nil for another family.
func rawSockaddr(rsa *syscall.RawSockaddrAny) syscall.Sockaddr {
	switch rsa.Addr.Family {
	case syscall.AF_INET:
		p := (*syscall.RawSockaddrInet4)(unsafe.Pointer(rsa))
		sa := &syscall.SockaddrInet4{Addr: p.Addr}
		pp := (*[2]byte)(unsafe.Pointer(&p.Port))
		sa.Port = int(pp[0])<<8 + int(pp[1])
		return sa
	case syscall.AF_INET6:
		p := (*syscall.RawSockaddrInet6)(unsafe.Pointer(rsa))
		sa := &syscall.SockaddrInet6{Addr: p.Addr, ZoneId: p.Scope_id}
		pp := (*[2]byte)(unsafe.Pointer(&p.Port))
		sa.Port = int(pp[0])<<8 + int(pp[1])
		return sa
	}
	return nil
}
