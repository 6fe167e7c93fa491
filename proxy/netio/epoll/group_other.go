//go:build !linux

package epoll

import (
	"errors"
	"net"
	"time"

	"github.com/fulcrum-proxy/fulcrum/proxy/netio"
)

// Group is not available on this system: NewGroup fails and the proxy
// keeps Go's connections.
type Group struct{}

// Conn is not available on this system.
type Conn struct{ net.Conn }

// Listener is not available on this system.
type Listener struct{ *net.TCPListener }

// NewGroup fails with errors.ErrUnsupported outside Linux.
func NewGroup(int) (*Group, error) { return nil, errors.ErrUnsupported }

// Ref reports false: there is no group.
func (g *Group) Ref() bool { return false }

// Unref does nothing.
func (g *Group) Unref() {}

// Close does nothing.
func (g *Group) Close() error { return nil }

// Listen fails with errors.ErrUnsupported.
func (g *Group) Listen(*net.TCPListener) (*Listener, error) { return nil, errors.ErrUnsupported }

// FromTCP fails with errors.ErrUnsupported.
func (g *Group) FromTCP(*net.TCPConn) (*Conn, error) { return nil, errors.ErrUnsupported }

// Group returns nil: there is no group.
func (c *Conn) Group() *Group { return nil }

// Conns returns 0.
func (g *Group) Conns() int64 { return 0 }

// Idle reports true.
func (c *Conn) Idle() bool { return true }

// Quiet reports true.
func (c *Conn) Quiet() bool { return true }

// Hibernate calls w.Wake at once: there is no poller to wait on.
func (c *Conn) Hibernate(w Waker) { w.Wake() }

// Hibernating returns 0.
func (g *Group) Hibernating() int64 { return 0 }

// Awaiting returns 0: there is no group.
func (g *Group) Awaiting() int64 { return 0 }

// Parked returns 0.
func (g *Group) Parked() int64 { return 0 }

// Readable reports true.
func (c *Conn) Readable() bool { return true }

// Speculate does nothing.
func (c *Conn) Speculate() {}

// ReadExpired reports false.
func (c *Conn) ReadExpired() bool { return false }

// Lend fails with errors.ErrUnsupported.
func (c *Conn) Lend(func()) (int, func(), error) { return -1, nil, errors.ErrUnsupported }

// Pair is not available on this system.
type Pair struct{}

// StartPair fails with errors.ErrUnsupported.
func StartPair(client, server *Conn, clientIdle, serverIdle time.Duration) (*Pair, error) {
	return nil, errors.ErrUnsupported
}

// Abort does nothing.
func (p *Pair) Abort() {}

// Wait returns at once: there is no pair.
func (p *Pair) Wait() (in, out netio.CopyEnd) { return }

// Done returns a closed channel: there is no pair.
func (p *Pair) Done() <-chan struct{} { ch := make(chan struct{}); close(ch); return ch }

// Pairs returns 0.
func (g *Group) Pairs() int64 { return 0 }
