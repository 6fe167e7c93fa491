//go:build unix

package http1

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// socketIdle reports whether the connected socket rc has nothing to read:
// no byte and no end of stream. It peeks without blocking, so a socket the
// peer closed (CLOSE_WAIT) or wrote to answers false.
func socketIdle(rc syscall.RawConn) bool {
	idle := false
	err := rc.Read(func(fd uintptr) bool {
		var b [1]byte
		n, _, err := unix.Recvfrom(int(fd), b[:], unix.MSG_PEEK|unix.MSG_DONTWAIT)
		idle = n <= 0 && (err == unix.EAGAIN || err == unix.EWOULDBLOCK)
		return true // never wait for readiness
	})
	return err == nil && idle
}
