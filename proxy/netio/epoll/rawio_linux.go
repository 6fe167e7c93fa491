package epoll

import (
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
func rawRead(fd int, b []byte) (int, error) { return rawIO(unix.SYS_READ, fd, b) }

func rawWrite(fd int, b []byte) (int, error) { return rawIO(unix.SYS_WRITE, fd, b) }

// rawIO is read(2) or write(2) (trap) of b on fd.
func rawIO(trap uintptr, fd int, b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	n, _, e := unix.RawSyscall(trap, uintptr(fd), uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)))
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
