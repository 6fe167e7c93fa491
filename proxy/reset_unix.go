//go:build unix

package proxy

import (
	"net"
	"syscall"
)

// resetOnClose makes the close of c send a TCP reset (SO_LINGER 0) rather
// than a FIN, as HAProxy 2.6 ends a connection its `tcp-request
// connection reject` refused (measured: the client reads a reset).
func resetOnClose(c net.Conn) {
	if l, ok := c.(interface{ SetLinger(int) error }); ok {
		l.SetLinger(0)
		return
	}
	sc, ok := c.(syscall.Conn)
	if !ok {
		return
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return
	}
	rc.Control(func(fd uintptr) {
		syscall.SetsockoptLinger(int(fd), syscall.SOL_SOCKET, syscall.SO_LINGER, &syscall.Linger{Onoff: 1, Linger: 0})
	})
}
