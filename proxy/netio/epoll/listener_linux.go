package epoll

import (
	"errors"
	"net"
	"os"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Listener is a TCP listener whose Accept returns Conns of a Group. The
// listening socket stays Go's: Close, Addr and SetDeadline are its own
// (a reload wakes a blocked Accept with a past deadline and hands the
// listener over).
type Listener struct {
	*net.TCPListener
	g    *Group
	file *os.File // a duplicate of the listening socket, in Go's poller
	rc   syscall.RawConn

	closed atomic.Bool // Close was called

	// laddr is the local address of every accepted connection when the
	// listener is bound to one address (not a wildcard); nil otherwise.
	laddr *net.TCPAddr
}

// Listen wraps l; Accept then returns *Conn.
func (g *Group) Listen(l *net.TCPListener) (*Listener, error) {
	// A listener's own RawConn refuses Read (EINVAL): wait on a duplicate
	// of its socket, which os.File registers in Go's poller.
	lrc, err := l.SyscallConn()
	if err != nil {
		return nil, err
	}
	nfd := -1
	var derr error
	if err := lrc.Control(func(fd uintptr) {
		nfd, derr = unix.FcntlInt(fd, unix.F_DUPFD_CLOEXEC, 0)
	}); err != nil {
		return nil, err
	}
	if derr != nil {
		return nil, os.NewSyscallError("fcntl", derr)
	}
	f := os.NewFile(uintptr(nfd), "listener")
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return nil, err
	}
	el := &Listener{TCPListener: l, g: g, file: f, rc: rc}
	if a, ok := l.Addr().(*net.TCPAddr); ok && !a.IP.IsUnspecified() {
		el.laddr = a
	}
	return el, nil
}

// Accept waits for a connection and returns it as a *Conn, with
// TCP_NODELAY set as Go's listeners do. Errors are net's: net.ErrClosed
// once the listener is closed, a timeout at its deadline, and the accept4
// error (EMFILE...) otherwise.
func (l *Listener) Accept() (net.Conn, error) {
	var (
		nfd  int
		sa   syscall.Sockaddr
		aerr error
	)
	// syscall's Accept4, not x/sys/unix's: the latter asks every IPv4 and
	// IPv6 socket its protocol (getsockopt SO_PROTOCOL, for L2TP).
	err := l.rc.Read(func(fd uintptr) bool {
		for {
			nfd, sa, aerr = syscall.Accept4(int(fd), syscall.SOCK_NONBLOCK|syscall.SOCK_CLOEXEC)
			switch aerr {
			case syscall.EINTR, syscall.ECONNABORTED:
				continue
			case syscall.EAGAIN:
				return false
			}
			return true
		}
	})
	if err != nil {
		err = unwrapOp(err)
		if l.closed.Load() {
			// Close closed the duplicate, and os' RawConn says so with
			// internal/poll's "use of closed file": say it in net's word,
			// which callers (the proxy's accept loop) check.
			err = net.ErrClosed
		}
		return nil, &net.OpError{Op: "accept", Net: "tcp", Addr: l.Addr(), Err: err}
	}
	if aerr != nil {
		return nil, &net.OpError{Op: "accept", Net: "tcp", Addr: l.Addr(), Err: os.NewSyscallError("accept4", aerr)}
	}
	unix.SetsockoptInt(nfd, unix.IPPROTO_TCP, unix.TCP_NODELAY, 1)
	c, err := l.g.register(nfd, true)
	if err != nil {
		return nil, &net.OpError{Op: "accept", Net: "tcp", Addr: l.Addr(), Err: err}
	}
	c.raddr = sockaddrToTCP(sa)
	if l.laddr != nil {
		c.laddr.Store(l.laddr) // no getsockname: the bind's own address
	}
	return c, nil
}

// SetDeadline sets the deadline of Accept.
func (l *Listener) SetDeadline(t time.Time) error { return l.file.SetReadDeadline(t) }

// Close closes the listener and wakes a blocked Accept.
func (l *Listener) Close() error {
	l.closed.Store(true)
	l.file.Close()
	return l.TCPListener.Close()
}

// unwrapOp returns the cause inside a *net.OpError (RawConn errors come
// wrapped), so that the accept error is not wrapped twice.
func unwrapOp(err error) error {
	var op *net.OpError
	if errors.As(err, &op) {
		return op.Err
	}
	return err
}

// FromTCP moves an established *net.TCPConn (a server connection Go's
// dialer made) into g: its descriptor is duplicated into a Conn and the
// original is closed, which takes it out of Go's poller. On error c is
// left as it was.
func (g *Group) FromTCP(c *net.TCPConn) (*Conn, error) {
	rc, err := c.SyscallConn()
	if err != nil {
		return nil, err
	}
	nfd := -1
	var derr error
	if err := rc.Control(func(fd uintptr) {
		nfd, derr = unix.FcntlInt(fd, unix.F_DUPFD_CLOEXEC, 0)
	}); err != nil {
		return nil, err
	}
	if derr != nil {
		return nil, os.NewSyscallError("fcntl", derr)
	}
	// The duplicate shares the open file, O_NONBLOCK included.
	ec, err := g.register(nfd, false)
	if err != nil {
		return nil, err
	}
	ec.raddr = c.RemoteAddr()
	if la, ok := c.LocalAddr().(*net.TCPAddr); ok {
		ec.laddr.Store(la)
	}
	c.Close()
	return ec, nil
}
