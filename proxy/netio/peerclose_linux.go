package netio

import (
	"net"
	"syscall"
	"time"

	"github.com/fulcrum-proxy/fulcrum/proxy/queue"
	"golang.org/x/sys/unix"
)

// speculator is a connection whose reads wait for a readiness event
// (epoll.Conn): Speculate makes its next read try the socket.
type speculator interface{ Speculate() }

// PeerCloseWait returns the WaitFunc (and its waker) that watches a queued
// client for going away without reading anything from it: the client's
// bytes (a TCP stream, an HTTP body) belong to the server. It polls the
// socket for POLLRDHUP, in the waiting goroutine: Go's poller registers
// sockets edge-triggered with EPOLLRDHUP, so after a first look the wait
// sleeps until new bytes or the peer's FIN arrive, and looks again. A
// client that closes or resets while queued ends the wait at once
// (WaitGone, flag CQ), even with unread bytes before its FIN; the
// dispatcher wakes the wait by moving the read deadline to the past when
// it hands over a slot.
//
// Bytes the client sent meanwhile stay in the socket, and a connection
// that reads only once an event said it is readable (the epoll layer's,
// whose readiness the declined wait consumed) is marked readable again
// (Speculate) as the wait ends: its relay reads them at once, instead of
// waiting for the client's next bytes (a fresh-user trial: a TCP client
// that spoke first while queued got no answer until timeout client).
func PeerCloseWait(c net.Conn) (queue.Waker, queue.WaitFunc) {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return nil, queue.ChanWait
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return nil, queue.ChanWait
	}
	return c, func(p *queue.Pending, deadline time.Time) queue.WaitEnd {
		seen := false // bytes arrived while queued
		if sp, ok := c.(speculator); ok {
			defer func() {
				if seen {
					sp.Speculate()
				}
			}()
		}
		for {
			c.SetReadDeadline(deadline)
			if p.Served() >= 0 {
				return queue.WaitServed
			}
			gone := false
			err := rc.Read(func(fd uintptr) bool {
				fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN | unix.POLLRDHUP}}
				n, perr := unix.Poll(fds, 0)
				gone = perr == nil && n > 0 && fds[0].Revents&(unix.POLLRDHUP|unix.POLLHUP|unix.POLLERR) != 0
				seen = seen || perr == nil && n > 0 && fds[0].Revents&unix.POLLIN != 0
				return gone // false: sleep until the next readiness edge
			})
			switch {
			case err == nil && gone:
				return queue.WaitGone
			case err == nil:
				continue
			case !IsTimeout(err):
				return queue.WaitGone
			case p.Served() >= 0:
				return queue.WaitServed
			case !deadline.IsZero() && !time.Now().Before(deadline):
				return queue.WaitTimeout
			}
		}
	}
}
