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
