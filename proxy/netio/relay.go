package netio

import (
	"crypto/tls"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// The relay. It starts by copying through a user-space buffer, which is
// the cheapest way to move the small messages of interactive protocols;
// once a read fills the whole buffer the flow is bulk, and the rest goes
// through io.CopyN between *net.TCPConn (or the epoll layer's Conns),
// which Linux turns into splice(2):
// bytes move socket to pipe to socket without entering user space.
// (A plaintext mode tcp session on the epoll layer is relayed by the
// layer's pollers instead: epoll.Pair, with the same results.)

// relayBufSize is the user-space copy buffer of one relay direction.
const relayBufSize = 16 << 10

// pipeFirstRead is the buffer of a relay direction waiting for bytes
// (Pipe).
const pipeFirstRead = 1 << 10

// spliceWindow bounds one io.CopyN round so that the inactivity deadline is
// re-armed periodically on long transfers.
const spliceWindow = 1 << 30

var relayBufs = sync.Pool{New: func() any { b := make([]byte, relayBufSize); return &b }}

// CopyEnd says how one direction of a copy ended: the bytes moved, and the
// error reading the source or writing the destination (both nil when the
// source ended cleanly, or the n bytes asked for were moved).
type CopyEnd struct {
	N      int64 // bytes moved
	SrcErr error // reading the source failed (not a clean EOF)
	DstErr error // writing the destination failed
}

// Pipe copies n bytes (or until EOF when n < 0) from src to dst; bulk says
// to splice from the start. Inactivity timeouts apply to src's reads
// (srcIdle) and dst's writes (dstIdle), 0 = none. With n >= 0 an early EOF
// is a source error (io.ErrUnexpectedEOF).
func Pipe(dst, src net.Conn, n int64, dstIdle, srcIdle time.Duration, bulk bool) CopyEnd {
	return pipe(dst, src, n, dstIdle, srcIdle, bulk, nil)
}

// pipe is Pipe, ended early once over (nil: never) is set: Relay sets it,
// and expires both connections' deadlines, when the other direction
// failed. A deadline is armed before over is looked at, so that either the
// copy sees over or Relay's expired deadline overrides the one it armed.
func pipe(dst, src net.Conn, n int64, dstIdle, srcIdle time.Duration, bulk bool, over *atomic.Bool) CopyEnd {
	var e CopyEnd
	if !bulk {
		// The copy buffer is only held while bytes flow: a direction
		// waiting for its next bytes reads into a pipeFirstRead buffer, and
		// takes the relayBufSize one when that read came back full (an
		// idle tunnel or TCP session then holds 2 x 1 KiB, not 2 x 16 KiB).
		// A big read that does not fill its buffer gives it back.
		first := make([]byte, pipeFirstRead)
		var bufp *[]byte
		defer func() {
			if bufp != nil {
				relayBufs.Put(bufp)
			}
		}()
		var sdl, ddl Deadlines
		for !bulk && (n < 0 || e.N < n) {
			now := time.Now()
			sdl.ArmRead(src, now, srcIdle)
			if over != nil && over.Load() {
				return e
			}
			buf := first
			if bufp != nil {
				buf = *bufp
			}
			want := int64(len(buf))
			if n >= 0 && n-e.N < want {
				want = n - e.N
			}
			m, err := src.Read(buf[:want])
			if m > 0 {
				ddl.ArmWrite(dst, now, dstIdle)
				w, werr := dst.Write(buf[:m])
				e.N += int64(w)
				if werr != nil {
					e.DstErr = werr
					return e
				}
			}
			if err != nil {
				return endOf(e, err, n)
			}
			switch {
			case bufp == nil && m == len(buf):
				bufp = relayBufs.Get().(*[]byte)
			case bufp != nil && m == len(buf):
				bulk = true
			case bufp != nil:
				relayBufs.Put(bufp)
				bufp = nil
			}
		}
		if !bulk {
			return e
		}
	}
	// Bulk: splice. A deadline that expires while bytes were still moving
	// in its window is re-armed: the connection is only cut after a whole
	// window of idleness, between one and two timeouts after the last byte.
	for n < 0 || e.N < n {
		now := time.Now()
		if srcIdle > 0 {
			src.SetReadDeadline(now.Add(srcIdle))
		}
		if dstIdle > 0 {
			dst.SetWriteDeadline(now.Add(dstIdle))
		}
		want := int64(spliceWindow)
		if n >= 0 && n-e.N < want {
			want = n - e.N
		}
		if over != nil && over.Load() {
			return e
		}
		m, err := io.CopyN(dst, src, want)
		e.N += m
		switch {
		case err == nil:
		case IsTimeout(err) && m > 0 && (over == nil || !over.Load()):
			// progress was made in this window: not idle
		case IsWriteErr(err):
			e.DstErr = err
			return e
		default:
			return endOf(e, err, n)
		}
	}
	return e
}

// endOf records a read error that ended a copy; EOF is clean when the copy
// was to run until EOF.
func endOf(e CopyEnd, err error, n int64) CopyEnd {
	switch {
	case err == io.EOF && n < 0:
	case err == io.EOF:
		e.SrcErr = io.ErrUnexpectedEOF
	default:
		e.SrcErr = err
	}
	return e
}

// Relay copies both ways between client and server until both directions
// have ended, propagating half-closes: when one side finishes sending, the
// other side's write half is shut. in is the client-to-server direction,
// out the server-to-client one. When a direction fails (a reset, a
// timeout), the session is over, as HAProxy aborts a stream: the other
// direction is ended at once, even blocked writing to a peer that does not
// read, and the timeout that ended it is not reported (it is not its
// peer's doing).
func Relay(client, server net.Conn, clientIdle, serverIdle time.Duration) (in, out CopyEnd) {
	var over atomic.Bool
	var first atomic.Int32 // 1: in failed first, 2: out did
	abort := func(dir int32) {
		first.CompareAndSwap(0, dir)
		over.Store(true)
		past := time.Unix(1, 0)
		client.SetDeadline(past)
		server.SetDeadline(past)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		in = pipe(server, client, -1, serverIdle, clientIdle, false, &over)
		CloseWrite(server)
		if in.SrcErr != nil || in.DstErr != nil {
			CloseRead(client)
			abort(1)
		}
	}()
	out = pipe(client, server, -1, clientIdle, serverIdle, false, &over)
	CloseWrite(client)
	if out.SrcErr != nil || out.DstErr != nil {
		CloseRead(server)
		abort(2)
	}
	wg.Wait()
	switch first.Load() {
	case 1:
		out = aborted(out)
	case 2:
		in = aborted(in)
	}
	return
}

// aborted is how a direction ended by Relay's abort reports: the bytes it
// moved, without the timeout the abort's expired deadlines gave it.
func aborted(e CopyEnd) CopyEnd {
	if IsTimeout(e.SrcErr) {
		e.SrcErr = nil
	}
	if IsTimeout(e.DstErr) {
		e.DstErr = nil
	}
	return e
}

// CloseWrite shuts c's write half (or closes c when it has none). A TLS
// connection sends its close_notify, then shuts its TCP write half as a
// plain relay does: the peer sees the end of the stream and may still send.
// Connections of the epoll layer (proxy/netio/epoll) have their own.
func CloseWrite(c net.Conn) {
	switch tc := c.(type) {
	case *net.TCPConn:
		tc.CloseWrite()
	case *tls.Conn:
		tc.CloseWrite()
		if raw, ok := tc.NetConn().(halfCloser); ok { // *net.TCPConn, or the epoll layer's
			raw.CloseWrite()
		}
	case halfCloser:
		tc.CloseWrite()
	default:
		c.Close()
	}
}

// halfCloser is a connection with half-closes, other than net's and tls'.
type halfCloser interface {
	CloseRead() error
	CloseWrite() error
}

// CloseRead shuts c's read half (a TLS connection's TCP one), if it has one.
func CloseRead(c net.Conn) {
	if t, ok := c.(*tls.Conn); ok {
		c = t.NetConn()
	}
	if hc, ok := c.(halfCloser); ok {
		hc.CloseRead()
	}
}
