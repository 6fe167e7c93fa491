package runtime

import (
	"net"
	"syscall"

	"golang.org/x/sys/unix"
)

// pendingInput tells, without waiting and without consuming anything,
// whether bytes from the client are waiting in the kernel (inputReady),
// the client has closed its side (inputEOF), or neither (inputNone).
// inputUnknown when c is not a socket this can ask.
func pendingInput(c net.Conn) inputState {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return inputUnknown
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return inputUnknown
	}
	st := inputUnknown
	var b [1]byte
	err = rc.Read(func(fd uintptr) bool {
		n, _, err := unix.Recvfrom(int(fd), b[:], unix.MSG_PEEK|unix.MSG_DONTWAIT)
		switch {
		case n > 0:
			st = inputReady
		case err == nil: // 0 bytes: the client shut its side down
			st = inputEOF
		case err == unix.EAGAIN:
			st = inputNone
		}
		return true // never wait for readiness
	})
	if err != nil {
		return inputUnknown
	}
	return st
}

// peerClosed reports, without waiting, whether the client has closed its
// connection entirely (POLLHUP): on a Unix socket that is a close, which a
// client that only shut its sending side (socat after its input ends,
// still reading the reply) does not cause. A TCP client's close looks like
// a shutdown until something is written, so it is not seen here.
func peerClosed(c net.Conn) bool {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return false
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	hup := false
	rc.Control(func(fd uintptr) {
		p := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		if n, err := unix.Poll(p, 0); n == 1 && err == nil {
			hup = p[0].Revents&(unix.POLLHUP|unix.POLLERR) != 0
		}
	})
	return hup
}
