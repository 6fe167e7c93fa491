//go:build !linux

package epoll

import "errors"

// SendBatch is not available on this system: its writes fail with
// errors.ErrUnsupported (no Conn of the layer exists to queue).
type SendBatch struct {
	reqs          []error
	Enters, Sends int64
}

// Len returns how many writes are queued.
func (b *SendBatch) Len() int { return len(b.reqs) }

// Add queues a write that Flush fails.
func (b *SendBatch) Add(c *Conn, p []byte) int {
	b.reqs = append(b.reqs, errors.ErrUnsupported)
	return len(b.reqs) - 1
}

// Flush does nothing.
func (b *SendBatch) Flush() {}

// Result returns errors.ErrUnsupported.
func (b *SendBatch) Result(i int) (int, error) { return 0, b.reqs[i] }

// Reset forgets the queued writes.
func (b *SendBatch) Reset() { b.reqs = b.reqs[:0] }

// SendRings returns 0 and true: io_uring is not used here.
func (g *Group) SendRings() (n int, refused bool) { return 0, true }

// ReadAheads returns 0, 0: there are no reads ahead here.
func (g *Group) ReadAheads() (reads, enters int64) { return 0, 0 }

// Await calls w.Wake at once: there is no poller to wait on.
func (c *Conn) Await(w Waker) { w.Wake() }

// AwaitRead calls w.Wake at once: there is no poller to wait on.
func (c *Conn) AwaitRead(w Waker) { w.Wake() }

// TryRead fails with errors.ErrUnsupported: no Conn of the layer exists.
func (c *Conn) TryRead([]byte) (int, error) { return 0, errors.ErrUnsupported }

// TryWrite fails with errors.ErrUnsupported: no Conn of the layer exists.
func (c *Conn) TryWrite([]byte) (int, error) { return 0, errors.ErrUnsupported }
