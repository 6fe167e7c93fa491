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
