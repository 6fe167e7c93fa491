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
