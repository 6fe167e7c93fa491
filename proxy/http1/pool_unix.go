//go:build unix

package http1

import (
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// socketIdle reports whether the connected socket rc has nothing to read:
// no byte and no end of stream. It peeks without blocking, so a socket the
// peer closed (CLOSE_WAIT) or wrote to answers false. It allocates (the
// callback); the request path uses upConn.idleOK instead.
func socketIdle(rc syscall.RawConn) bool {
	idle := false
	err := rc.Read(func(fd uintptr) bool {
		idle = peekIdle(fd)
		return true // never wait for readiness
	})
	return err == nil && idle
}

// peekIdle peeks at one byte of the socket fd without blocking and without
// allocating (recvfrom with no address): true when there is none yet.
func peekIdle(fd uintptr) bool {
	var b [1]byte
	_, _, errno := unix.Syscall6(unix.SYS_RECVFROM, fd, uintptr(unsafe.Pointer(&b[0])), 1,
		unix.MSG_PEEK|unix.MSG_DONTWAIT, 0, 0)
	return errno == unix.EAGAIN || errno == unix.EWOULDBLOCK
}
