package epoll

// Waker resumes a hibernating connection (Conn.Hibernate).
type Waker interface {
	// Wake is called once per hibernation; it must not block.
	Wake()
}

// WakeFunc is a function as a Waker.
type WakeFunc func()

// Wake calls f.
func (f WakeFunc) Wake() { f() }

// ErrWouldBlock is what Conn.TryRead and Conn.TryWrite return when the
// operation would wait for the socket.
var ErrWouldBlock = errWouldBlock{}

type errWouldBlock struct{}

func (errWouldBlock) Error() string   { return "epoll: operation would block" }
func (errWouldBlock) Timeout() bool   { return false }
func (errWouldBlock) Temporary() bool { return true }
