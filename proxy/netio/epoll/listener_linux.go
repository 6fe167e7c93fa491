package epoll

import (
	"net"
	"os"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Listener is a TCP listener served by one of a Group's pollers: the
// listening socket is registered in the layer's own epoll instance (not in
// Go's poller), and Accept returns Conns of the group. net.Listener, with
// SetDeadline (a reload wakes a blocked Accept with a past deadline and
// hands the listener over to the next proxy, which keeps accepting on the
// same pollers).
type Listener struct {
	s    *Conn        // the listening socket: readiness, waiter, deadline, close
	g    *Group       // where accepted connections go
	addr *net.TCPAddr // the address bound (Addr)

	// laddr is the local address of every accepted connection when the
	// listener is bound to one address (not a wildcard); nil otherwise, and
	// the first LocalAddr of a connection asks the kernel (getsockname).
	laddr *localAddr

	// nodelay: TCP_NODELAY is set on the listening socket, and Linux
	// gives it to every connection accepted from it (no setsockopt per
	// connection); false when setting it failed, and each accepted socket
	// then gets its own.
	nodelay bool

	// accept is accept4(2) on the listening socket; tests replace it to
	// inject errors.
	accept func(fd int) (int, syscall.Sockaddr, error)
}

// Listen moves l into g: its socket (a duplicate of l's descriptor, which
// shares the open file and its O_NONBLOCK) becomes g's, and l itself is
// closed, which takes the socket out of Go's poller but leaves it
// listening. TCP_NODELAY is set on the listening socket, for the
// connections accepted from it. On error l is left as it was.
func (g *Group) Listen(l *net.TCPListener) (*Listener, error) {
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
	addr, _ := l.Addr().(*net.TCPAddr)
	el := &Listener{g: g, addr: addr, accept: accept4}
	el.nodelay = unix.SetsockoptInt(nfd, unix.IPPROTO_TCP, unix.TCP_NODELAY, 1) == nil
	if addr != nil && !addr.IP.IsUnspecified() {
		el.laddr = newLocalAddr(addr)
	}
	// Tried at once: connections may already wait in the backlog. The
	// socket enters the epoll instance at the first Accept that waits.
	el.s = g.socket(nfd, true)
	if addr != nil {
		el.s.raddr = addr.AddrPort()
	}
	l.Close()
	return el, nil
}

// accept4 accepts one connection, non-blocking and close-on-exec.
// syscall's Accept4, not x/sys/unix's: the latter asks every IPv4 and
// IPv6 socket its protocol (getsockopt SO_PROTOCOL, for L2TP).
func accept4(fd int) (int, syscall.Sockaddr, error) {
	if rawCalls {
		return rawAccept4(fd)
	}
	return syscall.Accept4(fd, syscall.SOCK_NONBLOCK|syscall.SOCK_CLOEXEC)
}

// Accept returns the next connection as a *Conn, with TCP_NODELAY set as
// Go's listeners do (inherited from the listening socket: no setsockopt),
// its peer's address from accept4 and its local
// address from the bind (no getsockname) when the listener is bound to one
// address. One accept4 per call: after a success the socket is taken as
// still readable, so the next call tries again, and only one that finds
// the backlog empty (EAGAIN) waits for the poller's next event; a burst of
// connections thus costs one failing accept4, not one per connection, and
// the connections beyond the caller's limits (maxconn) stay in the
// kernel's backlog. Errors are net's: net.ErrClosed once the listener is
// closed, a timeout at its deadline, and the accept4 error (EMFILE...)
// otherwise, after which the next call tries accept4 again at once: the
// caller backs off.
func (l *Listener) Accept() (net.Conn, error) {
	s := l.s
	if !s.incref() {
		return nil, l.opErr(net.ErrClosed)
	}
	defer s.decref()
	for {
		if s.r.expired() {
			return nil, l.opErr(os.ErrDeadlineExceeded)
		}
		if s.r.ready.Swap(0) != 0 {
			nfd, sa, err := l.accept(s.fd)
			switch err {
			case nil:
				s.r.ready.Store(1) // more may wait
				if !l.nodelay {
					unix.SetsockoptInt(nfd, unix.IPPROTO_TCP, unix.TCP_NODELAY, 1)
				}
				c := l.g.register(nfd, true)
				c.raddr = sockaddrAddrPort(sa)
				if l.laddr != nil {
					c.laddr.Store(l.laddr) // no getsockname: the bind's own address
				}
				return c, nil
			case syscall.EINTR, syscall.ECONNABORTED:
				s.r.ready.Store(1)
				continue
			case syscall.EAGAIN:
			default:
				s.r.ready.Store(1) // EMFILE...: the connection still waits
				return nil, l.opErr(os.NewSyscallError("accept4", err))
			}
		}
		if err := s.wait(&s.r); err != nil {
			return nil, l.opErr(err)
		}
	}
}

func (l *Listener) opErr(err error) error {
	var a net.Addr
	if l.addr != nil {
		a = l.addr
	}
	return &net.OpError{Op: "accept", Net: "tcp", Addr: a, Err: err}
}

// Control runs f on the listening socket's descriptor (as
// syscall.RawConn's Control), unless the listener is closed.
func (l *Listener) Control(f func(fd uintptr)) error {
	s := l.s
	if !s.incref() {
		return l.opErr(net.ErrClosed)
	}
	defer s.decref()
	f(uintptr(s.fd))
	return nil
}

// Addr returns the address the listener is bound to.
func (l *Listener) Addr() net.Addr { return l.addr }

// SetDeadline sets the deadline of Accept; a past one wakes a blocked
// Accept at once.
func (l *Listener) SetDeadline(t time.Time) error {
	l.s.r.setDeadline(t)
	return nil
}

// Close closes the listener and wakes a blocked Accept, which returns
// net.ErrClosed. The socket is closed once no Accept uses it, which also
// takes it out of the epoll instance.
func (l *Listener) Close() error {
	if err := l.s.Close(); err != nil {
		return l.opErr(net.ErrClosed)
	}
	return nil
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
	ec := g.register(nfd, false)
	if ra, ok := c.RemoteAddr().(*net.TCPAddr); ok {
		ec.raddr = ra.AddrPort()
	}
	if la, ok := c.LocalAddr().(*net.TCPAddr); ok {
		ec.laddr.Store(newLocalAddr(la))
	}
	c.Close()
	return ec, nil
}
