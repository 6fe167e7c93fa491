// Package uring is a small io_uring binding over golang.org/x/sys/unix,
// and a TCP relay built on it, written to evaluate io_uring for the
// plaintext relay (issue 21 point 3; bench/README.md "io_uring (issue 21
// point 3)" has the measurement and the verdict). The proxy relays mode
// tcp sessions on it with tune_netio = "uring" (proxy/netiolayer.go,
// relayTCP), through Session.
//
// Main types:
//   - Ring: one io_uring instance (io_uring_setup, the SQ and CQ rings and
//     the SQE array mapped into the process). GetSQE hands out a free
//     submission entry, Submit and SubmitAndWait pass all prepared entries
//     to the kernel in one io_uring_enter (the second also waits for
//     completions), Reap copies the completions ready without a system
//     call.
//   - BufRing: a provided-buffer ring (IORING_REGISTER_PBUF_RING) from
//     which receives with IOSQE_BUFFER_SELECT, multishot ones included,
//     take their buffers; Recycle gives a buffer back.
//   - Relay: one goroutine locked to its thread relaying between pairs of
//     connected sockets: a multishot receive per direction into the
//     provided buffers, a send from the same buffer, all of a turn's
//     sends submitted with the wait for the next completions in one
//     io_uring_enter.
//   - Session: a pair whose sockets the caller keeps (the proxy lends
//     them from the epoll layer, epoll.Conn.Lend): bytes counted and
//     errors reported per direction as netio.CopyEnd, inactivity
//     timeouts checked by the loop, Abort from any goroutine, and a
//     direction whose destination does not drain holds at most maxQueue
//     buffers (its receive is cancelled meanwhile).
//
// Results are the kernel's: a CQE's Res is a byte count or a negated
// errno (CQE.Err maps it); nothing here panics on a result.
//
// Linux only (little-endian); elsewhere New and NewRelay fail with
// errors.ErrUnsupported. A kernel that refuses io_uring (EPERM when
// kernel.io_uring_disabled is set, ENOSYS without it) makes New fail
// with that errno.
package uring
