// Package epoll serves TCP connections (and listening sockets) from the proxy's own
// epoll instances, so that a connection is read only once the kernel has
// said it is readable.
//
// Go's runtime reads a socket before waiting for it: every read that comes
// before the peer's bytes (the next request of a keep-alive client, the
// response of a server just written to) fails with EAGAIN and costs a
// system call, and Go offers no safe way to wait first (a
// syscall.RawConn.Read callback that declines forgets a readiness the
// runtime already recorded: issue 21). Here each connection keeps its own
// readiness, set by the events of an edge-triggered epoll instance and
// cleared only when a read finds the socket drained, so a read that would
// fail is not made. One goroutine per poller (the reaper) collects the
// events of all its connections in one epoll_wait and wakes the goroutines
// that wait on them; the reaper itself sleeps in Go's own poller, on the
// epoll descriptor. A socket enters its epoll instance at its first wait
// only, for input; it adds output events at its first write that finds the
// buffer full, and leaves when its last descriptor is closed (no
// EPOLL_CTL_DEL). An accepted socket is read at once (the client has
// usually sent its request), so a client served and closed without ever
// waiting costs no epoll_ctl; a server connection waits for its first
// event. Listening sockets are the layer's too: the acceptor waits on the
// same pollers, with one accept4 per connection and one failing accept4
// per burst. The short calls on the sockets (read, write, accept4, close,
// epoll_ctl, the reaper's epoll_wait) are raw system calls, without the
// runtime's bookkeeping, which would wake sysmon (rawio_linux.go). A
// deadline's runtime timer is made by the first wait that needs it
// (side.arm): a connection served without waiting costs none.
//
// The proxy uses it with `tune_netio = "epoll"`, its default on Linux
// (proxy/netiolayer.go), for HTTP/1, HTTP/2 and TCP binds, plaintext or
// TLS (crypto/tls over a Conn), and relays plaintext mode tcp sessions
// with a Pair (FULCRUM_TCP_RELAY=goroutines: netio.Relay instead);
// bench/README.md has what it saves and costs.
//
// Main types:
//   - Group: the pollers of a process (one per GOMAXPROCS by default), the
//     table from descriptors to connections, and the reference count that
//     closes them when the last proxy using them stops.
//   - Conn: a net.Conn on a non-blocking socket registered in one poller.
//     It also implements syscall.Conn (a RawConn with Go's semantics: the
//     callback runs first, returning false waits for the next event),
//     CloseRead/CloseWrite, and ReadFrom, which splices from another Conn.
//   - Conn.Hibernate: a connection with nothing to do until its next
//     bytes (an idle keep-alive client) waits with no goroutine at all:
//     the reaper's event, the read deadline (kept in the poller's parking,
//     one runtime timer per poller instead of one per connection) or Close
//     calls the Waker given, once, which starts the goroutine that reads
//     it (the proxy's HTTP/1 clients idle past IdleKeep, proxy/httpconn.go).
//   - Conn.Await: Hibernate for a short wait (an HTTP/1 request's
//     response, the next request of a client whose session is kept):
//     the Waker is called as Hibernate's, the read deadline keeps its
//     runtime timer; TryRead and TryWrite read and write without ever
//     waiting (ErrWouldBlock), for the Waker's code, which runs on the
//     reaper (proxy/http1/inline.go).
//   - Pair (StartPair): a mode tcp session relayed by the pollers
//     themselves, as HAProxy's event loop does: both Conns point at the
//     Pair, and the reaper that collects an event of either reads the
//     source at once into the direction's buffer (netio's pool, held
//     while bytes are pending) and writes it to the destination, all
//     non-blocking, instead of waking a goroutine per direction and
//     message (netio.Relay). A destination that is full keeps the rest,
//     is registered for EPOLLOUT, and its direction reads no more until
//     it drained (backpressure: one buffer per direction); a read that
//     fills the buffer switches the direction to splice(2) through a
//     pipe (bulk, as netio.Relay). The end of a source shuts its
//     destination's write half; an error, an inactivity timeout (one
//     lazy timer per pair over per-direction activity stamps: no timer
//     re-armed per message), Abort or the Close of either Conn ends the
//     pair, whose Wait returns netio.Relay's per-direction results. The
//     two Conns may be on two pollers: the pump runs in whichever
//     goroutine takes the pair's busy flag, the others mark it dirty, so
//     no reaper ever blocks on a pair; a reaper hands a flow that is
//     still moving after pairBudget bytes to a goroutine.
//   - Listener: a listening socket taken from a *net.TCPListener (which
//     is closed) into one of the pollers; Accept returns Conns, Close and
//     SetDeadline wake a waiting Accept (a reload hands the Listener over
//     with its pollers).
//
// Invariants: a descriptor is closed only once no operation uses it (a
// reference count, as internal/poll's fdMutex), and its table entry is
// removed before it is closed, so an event for a closed descriptor reaches
// nobody, or is dropped by its generation; a connection's readiness flag is
// set by the reaper before it looks for a waiter and the waiter announces
// itself before it looks at the flag, so no wake-up is lost.
//
// Linux only; elsewhere NewGroup fails with errors.ErrUnsupported and the
// proxy keeps Go's connections.
package epoll
