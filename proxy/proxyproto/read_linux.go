package proxyproto

import (
	"net"
	"syscall"

	"golang.org/x/sys/unix"
)

// readPeek reads the header of a socket by peeking: the bytes waiting are
// copied without being consumed (recv MSG_PEEK) and decoded; once a whole
// header is there, exactly its length is read. While the bytes are an
// incomplete header, the goroutine sleeps until more arrive: returning
// false from the raw read callback waits for the next readiness event of
// Go's edge-triggered poller, which bytes arriving after the peek raise.
// ok is false when c is not a socket: the caller reads otherwise.
func readPeek(c net.Conn) (h Header, err error, ok bool) {
	sc, isSock := c.(syscall.Conn)
	if !isSock {
		return h, nil, false
	}
	rc, serr := sc.SyscallConn()
	if serr != nil {
		return h, nil, false
	}
	var buf [MaxV1Len + 1]byte // enough for v1 and v2 with IPv6 addresses and ~60 bytes of TLVs
	b := buf[:]
	seen := -1 // bytes seen at the previous peek
	var perr error
	rerr := rc.Read(func(fd uintptr) bool {
		for {
			n, _, e := unix.Recvfrom(int(fd), b, unix.MSG_PEEK)
			switch {
			case e == unix.EINTR:
				continue
			case e == unix.EAGAIN:
				return false
			case e != nil:
				perr = readErr(e, max(seen, 0))
				return true
			case n == 0:
				perr = readErr(errEOF, max(seen, 0))
				return true
			}
			var used int
			h, used, perr = Parse(b[:n])
			switch {
			case perr == nil:
				// Consume the header, which is there whole.
				for got := 0; got < used; {
					m, e := unix.Read(int(fd), b[got:used])
					if e == unix.EINTR {
						continue
					}
					if e != nil || m <= 0 {
						perr = &Error{Code: Abort, Err: e}
						return true
					}
					got += m
				}
				return true
			case perr != ErrIncomplete:
				return true
			}
			// Incomplete: a version 2 header may need a larger buffer.
			if n == len(b) && len(b) >= v2HeadLen && b[0] == '\r' {
				need := v2HeadLen + (int(b[14])<<8 | int(b[15]))
				if need > len(b) && need <= MaxV2Len {
					b = make([]byte, need)
					continue
				}
			}
			seen = n
			// The peer may have closed after a partial header: the peek
			// keeps returning its bytes, never 0, so ask for the
			// half-close instead.
			fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLRDHUP}}
			if m, e := unix.Poll(fds, 0); e == nil && m > 0 && fds[0].Revents&(unix.POLLRDHUP|unix.POLLHUP|unix.POLLERR) != 0 {
				perr = &Error{Code: Truncated}
				return true
			}
			return false // wait for the next bytes
		}
	})
	if rerr != nil {
		return Header{}, readErr(rerr, max(seen, 0)), true
	}
	if perr != nil {
		return Header{}, asError(perr), true
	}
	return h, nil, true
}
