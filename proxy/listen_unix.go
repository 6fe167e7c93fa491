//go:build unix

package proxy

import (
	"errors"
	"fmt"
	"net"

	"golang.org/x/sys/unix"
)

// listenBacklog is the backlog a resumed listener asks for; the kernel
// caps it at net.core.somaxconn, as it does Go's own listen.
const listenBacklog = 65535

// listenerControl runs f on l's socket.
func listenerControl(l net.Listener, f func(fd int) error) error {
	type controller interface{ Control(func(fd uintptr)) error }
	var c controller
	switch l := l.(type) {
	case *net.TCPListener:
		rc, err := l.SyscallConn()
		if err != nil {
			return err
		}
		c = rc
	case controller:
		c = l
	default:
		return errors.ErrUnsupported
	}
	var ferr error
	if err := c.Control(func(fd uintptr) { ferr = f(int(fd)) }); err != nil {
		return err
	}
	return ferr
}

// suspendListener stops l's socket listening while keeping its port:
// connections are refused until resumeListener (on Linux, shutdown of a
// listening socket disconnects it; HAProxy's pause does the same).
func suspendListener(l net.Listener) error {
	return listenerControl(l, func(fd int) error { return unix.Shutdown(fd, unix.SHUT_RD) })
}

// resumeListener makes l's socket listen again (a no-op on one that
// listens). A socket bound to port 0 lost its port at the suspend (Linux
// keeps only a port asked for): it is suspended again and the error says
// so.
func resumeListener(l net.Listener) error {
	return listenerControl(l, func(fd int) error {
		if err := unix.Listen(fd, listenBacklog); err != nil {
			return err
		}
		want, ok := l.Addr().(*net.TCPAddr)
		sa, err := unix.Getsockname(fd)
		if err != nil || !ok {
			return err
		}
		port := -1
		switch sa := sa.(type) {
		case *unix.SockaddrInet4:
			port = sa.Port
		case *unix.SockaddrInet6:
			port = sa.Port
		}
		if port != want.Port {
			unix.Shutdown(fd, unix.SHUT_RD)
			return fmt.Errorf("listening again moved %s to port %d: its port was not kept", want, port)
		}
		return nil
	})
}
