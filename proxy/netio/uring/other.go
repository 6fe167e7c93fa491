//go:build !linux

package uring

import (
	"errors"
	"net"
	"time"
)

// RelayConfig shapes a Relay (fields as on Linux).
type RelayConfig struct {
	Entries       uint32
	Buffers       uint16
	BufSize       int
	Flags         uint32
	PeekFirst     bool
	RawWait       time.Duration
	WaitPastSends bool
}

// RelayStats are the loop's counters.
type RelayStats struct {
	Enters, Turns, CQEs, Recvs, Sends, Pairs, Closed, Rearms, Partial uint64
}

// Relay is not available on this system.
type Relay struct{}

// NewRelay fails with errors.ErrUnsupported outside Linux.
func NewRelay(RelayConfig) (*Relay, error) { return nil, errors.ErrUnsupported }

// Add fails with errors.ErrUnsupported.
func (r *Relay) Add(client, server int) error { return errors.ErrUnsupported }

// Close does nothing.
func (r *Relay) Close() error { return nil }

// Done is a closed channel.
func (r *Relay) Done() <-chan struct{} { c := make(chan struct{}); close(c); return c }

// Stats returns zeros.
func (r *Relay) Stats() RelayStats { return RelayStats{} }

// Live returns 0.
func (r *Relay) Live() int { return 0 }

// Detach fails with errors.ErrUnsupported.
func Detach(*net.TCPConn) (int, error) { return -1, errors.ErrUnsupported }

// End says how one direction of a Session ended (as on Linux).
type End struct {
	N      int64
	SrcErr error
	DstErr error
}

// Session is not available on this system.
type Session struct{}

// Session returns a session that Start refuses.
func (r *Relay) Session(clientIdle, serverIdle time.Duration) *Session { return &Session{} }

// Start fails with errors.ErrUnsupported.
func (r *Relay) Start(s *Session, client, server int) error { return errors.ErrUnsupported }

// Abort does nothing.
func (s *Session) Abort() {}

// Done is a closed channel.
func (s *Session) Done() <-chan struct{} { c := make(chan struct{}); close(c); return c }

// Wait returns at once.
func (s *Session) Wait() (in, out End) { return }
