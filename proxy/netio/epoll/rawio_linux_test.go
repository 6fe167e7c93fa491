package epoll

import (
	"net"
	"net/netip"
	"testing"

	"golang.org/x/sys/unix"
)

// rawRead and rawWrite return what unix.Read and unix.Write return, on a
// non-blocking socket pair: bytes, EAGAIN on an empty socket, 0 at the
// end, and the errno of a bad descriptor; as read(2) and write(2), and as
// recvfrom(2) and sendto(2) (sockCalls, the default).
func TestRawReadWrite(t *testing.T) {
	for _, sock := range []bool{false, true} {
		t.Run(map[bool]string{false: "readwrite", true: "sockcalls"}[sock], func(t *testing.T) {
			old := sockCalls
			sockCalls = sock
			defer func() { sockCalls = old }()
			testRawReadWrite(t)
		})
	}
}

func testRawReadWrite(t *testing.T) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fds[0])
	buf := make([]byte, 16)
	if n, err := rawRead(fds[0], buf); n != -1 || err != unix.EAGAIN {
		t.Fatalf("read of an empty socket: %d, %v; want -1, EAGAIN", n, err)
	}
	if n, err := rawWrite(fds[1], []byte("hello")); n != 5 || err != nil {
		t.Fatalf("write: %d, %v", n, err)
	}
	if n, err := rawWrite(fds[1], nil); n != 0 || err != nil {
		t.Fatalf("empty write: %d, %v", n, err)
	}
	if n, err := rawRead(fds[0], buf[:3]); n != 3 || err != nil || string(buf[:3]) != "hel" {
		t.Fatalf("read: %d, %v, %q", n, err, buf[:n])
	}
	if n, err := rawRead(fds[0], buf); n != 2 || err != nil || string(buf[:2]) != "lo" {
		t.Fatalf("read: %d, %v, %q", n, err, buf[:n])
	}
	if n, err := rawRead(fds[0], nil); n != 0 || err != nil {
		t.Fatalf("empty read: %d, %v", n, err)
	}
	unix.Close(fds[1])
	if n, err := rawRead(fds[0], buf); n != 0 || err != nil {
		t.Fatalf("read at the end: %d, %v; want 0, nil", n, err)
	}
	if n, err := rawWrite(fds[0], []byte("x")); n != -1 || err != unix.EPIPE {
		t.Fatalf("write to a closed peer: %d, %v; want -1, EPIPE", n, err)
	}
	if n, err := rawRead(-1, buf); n != -1 || err != unix.EBADF {
		t.Fatalf("read of fd -1: %d, %v; want -1, EBADF", n, err)
	}
	if n, err := rawWrite(-1, buf); n != -1 || err != unix.EBADF {
		t.Fatalf("write to fd -1: %d, %v; want -1, EBADF", n, err)
	}
}

// rawEpollWait returns nothing on an idle instance, the event of a
// readable descriptor, and the errno of a bad one.
func TestRawEpollWait(t *testing.T) {
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(epfd)
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fds[0])
	defer unix.Close(fds[1])
	ev := unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(fds[0])}
	if err := unix.EpollCtl(epfd, unix.EPOLL_CTL_ADD, fds[0], &ev); err != nil {
		t.Fatal(err)
	}
	events := make([]unix.EpollEvent, 4)
	if n, err := rawEpollWait(epfd, events); n != 0 || err != nil {
		t.Fatalf("idle: %d, %v", n, err)
	}
	if _, err := rawWrite(fds[1], []byte("x")); err != nil {
		t.Fatal(err)
	}
	n, err := rawEpollWait(epfd, events)
	if n != 1 || err != nil || events[0].Fd != int32(fds[0]) || events[0].Events&unix.EPOLLIN == 0 {
		t.Fatalf("readable: %d, %v, %+v", n, err, events[0])
	}
	if n, err := rawEpollWait(-1, events); n != -1 || err != unix.EBADF {
		t.Fatalf("fd -1: %d, %v; want -1, EBADF", n, err)
	}
}

// rawAccept4 returns what syscall.Accept4 returns for IPv4 and IPv6
// clients (a non-blocking, close-on-exec socket and the peer's address),
// EAGAIN on an empty backlog and the errno of a bad descriptor;
// epollCtl and closeFD act as unix.EpollCtl and unix.Close.
func TestRawAcceptCloseCtl(t *testing.T) {
	for _, network := range []string{"tcp4", "tcp6"} {
		t.Run(network, func(t *testing.T) {
			addr := "127.0.0.1:0"
			if network == "tcp6" {
				addr = "[::1]:0"
			}
			ln, err := net.Listen(network, addr)
			if err != nil {
				t.Skip(err)
			}
			defer ln.Close()
			rc, err := ln.(*net.TCPListener).SyscallConn()
			if err != nil {
				t.Fatal(err)
			}
			var lfd int
			rc.Control(func(fd uintptr) { lfd = int(fd) })
			if nfd, sa, err := rawAccept4(lfd); nfd != -1 || sa != nil || err != unix.EAGAIN {
				t.Fatalf("empty backlog: %d, %v, %v; want -1, nil, EAGAIN", nfd, sa, err)
			}
			c, err := net.Dial(network, ln.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			pfd := []unix.PollFd{{Fd: int32(lfd), Events: unix.POLLIN}}
			if n, err := unix.Poll(pfd, 5000); n != 1 || err != nil {
				t.Fatalf("poll of the listener: %d, %v", n, err)
			}
			nfd, sa, err := rawAccept4(lfd)
			if err != nil {
				t.Fatal(err)
			}
			want := c.LocalAddr().(*net.TCPAddr).AddrPort()
			if got := sockaddrAddrPort(sa); got != netip.AddrPortFrom(want.Addr().Unmap(), want.Port()) {
				t.Fatalf("peer %v (%#v), want %v", got, sa, want)
			}
			fl, err := unix.FcntlInt(uintptr(nfd), unix.F_GETFL, 0)
			if err != nil || fl&unix.O_NONBLOCK == 0 {
				t.Fatalf("flags %#x, %v: want O_NONBLOCK", fl, err)
			}
			if fd, err := unix.FcntlInt(uintptr(nfd), unix.F_GETFD, 0); err != nil || fd&unix.FD_CLOEXEC == 0 {
				t.Fatalf("fd flags %#x, %v: want FD_CLOEXEC", fd, err)
			}
			epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
			if err != nil {
				t.Fatal(err)
			}
			defer unix.Close(epfd)
			ev := unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(nfd)}
			if err := epollCtl(epfd, unix.EPOLL_CTL_ADD, nfd, &ev); err != nil {
				t.Fatal(err)
			}
			if err := epollCtl(epfd, unix.EPOLL_CTL_ADD, nfd, &ev); err != unix.EEXIST {
				t.Fatalf("second add: %v, want EEXIST", err)
			}
			if _, err := c.Write([]byte("x")); err != nil {
				t.Fatal(err)
			}
			events := make([]unix.EpollEvent, 1)
			if n, err := unix.EpollWait(epfd, events, 5000); n != 1 || err != nil || events[0].Fd != int32(nfd) {
				t.Fatalf("wait: %d, %v, %+v", n, err, events[0])
			}
			if err := epollCtl(epfd, unix.EPOLL_CTL_DEL, nfd, nil); err != nil {
				t.Fatal(err)
			}
			closeFD(nfd)
			if _, err := unix.FcntlInt(uintptr(nfd), unix.F_GETFD, 0); err != unix.EBADF {
				t.Fatalf("after closeFD: %v, want EBADF", err)
			}
			if nfd, _, err := rawAccept4(-1); nfd != -1 || err != unix.EBADF {
				t.Fatalf("fd -1: %d, %v; want -1, EBADF", nfd, err)
			}
		})
	}
}

// BenchmarkRawIO: one write of 120 bytes on a loopback TCP connection and
// the read of them at its other end, non-blocking, in one goroutine:
// read(2) and write(2) against recvfrom(2) and sendto(2) (sockCalls).
func BenchmarkRawIO(b *testing.B) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	cc, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	defer cc.Close()
	sc, err := ln.Accept()
	if err != nil {
		b.Fatal(err)
	}
	defer sc.Close()
	fd := func(c net.Conn) int {
		f, err := c.(*net.TCPConn).File()
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { f.Close() })
		unix.SetNonblock(int(f.Fd()), true)
		return int(f.Fd())
	}
	wfd, rfd := fd(cc), fd(sc)
	msg, buf := make([]byte, 120), make([]byte, 4096)
	for _, sock := range []bool{false, true} {
		b.Run(map[bool]string{false: "readwrite", true: "sockcalls"}[sock], func(b *testing.B) {
			old := sockCalls
			sockCalls = sock
			defer func() { sockCalls = old }()
			for range b.N {
				if n, err := rawWrite(wfd, msg); n != len(msg) || err != nil {
					b.Fatalf("write: %d, %v", n, err)
				}
				for got := 0; got < len(msg); {
					n, err := rawRead(rfd, buf)
					if err == unix.EAGAIN {
						continue
					}
					if err != nil {
						b.Fatalf("read: %v", err)
					}
					got += n
				}
			}
		})
	}
}
