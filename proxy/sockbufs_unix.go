//go:build unix

package proxy

import (
	"syscall"

	"github.com/fulcrum-proxy/fulcrum/conf"
)

// sockBufsControl returns the Control function of a net.ListenConfig or
// net.Dialer that sets b's SO_SNDBUF and SO_RCVBUF on each socket before
// it listens or connects (HAProxy's tune.sndbuf.* and tune.rcvbuf.*; set
// before connect, the receive buffer also sizes the window offered in the
// handshake), or nil when b sets nothing. The listen or dial fails with
// the setsockopt error.
func sockBufsControl(b conf.SocketBufs) func(network, address string, c syscall.RawConn) error {
	if b.IsZero() {
		return nil
	}
	return func(_, _ string, c syscall.RawConn) error {
		var serr error
		err := c.Control(func(fd uintptr) {
			if b.Snd > 0 {
				serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_SNDBUF, b.Snd)
			}
			if serr == nil && b.Rcv > 0 {
				serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, b.Rcv)
			}
		})
		if err != nil {
			return err
		}
		return serr
	}
}
