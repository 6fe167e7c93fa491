package netio

import (
	"crypto/tls"
	"errors"
	"io"
	"net"
	"os"
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
	return pipe(dst, src, n, dstIdle, srcIdle, bulk, nil, nil)
}

// writeMarks are a Relay's records of when bytes were last written to each
// of its two sockets (Unix ns): a socket written to is not idle, and its
// read timeout starts again, as HAProxy refreshes both the write and the
// read timeout of a socket it sends on (configuration.txt, "option
// independent-streams", which 2.6 leaves off by default). A pipe reads src
// and writes dst: src is the socket its reads wait on, dst the one it
// marks.
type writeMarks struct {
	src, dst *atomic.Int64
	read     *atomic.Int64 // nil, or where the pipe records its reads' ends (Unix ns)
}

// readIdleUntil returns when src's reads time out, given the pipe's own
// last progress (Unix ns) and the other direction's last write to src.
func (m *writeMarks) readIdleUntil(last int64, srcIdle time.Duration) int64 {
	if m != nil {
		last = max(last, m.src.Load())
	}
	return last + int64(srcIdle)
}

func (m *writeMarks) wrote(now int64) {
	if m != nil {
		m.dst.Store(now)
	}
}

// pipe is Pipe, ended early once over (nil: never) is set: Relay sets it,
// and expires both connections' deadlines, when the other direction
// failed. A deadline is armed before over is looked at, so that either the
// copy sees over or Relay's expired deadline overrides the one it armed.
//
// marks (nil: none) are the Relay's write records: a read that times out
// while the other direction wrote to src within srcIdle waits on, until
// srcIdle after that write.
func pipe(dst, src net.Conn, n int64, dstIdle, srcIdle time.Duration, bulk bool, over *atomic.Bool, marks *writeMarks) CopyEnd {
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
		var last int64   // the last read's end (Unix ns)
		rearmed := false // the read deadline was moved by the other direction's writes
		for !bulk && (n < 0 || e.N < n) {
			now := time.Now()
			if !rearmed {
				sdl.ArmRead(src, now, srcIdle)
				last = now.UnixNano()
			}
			rearmed = false
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
			if m > 0 && marks != nil && marks.read != nil {
				marks.read.Store(time.Now().UnixNano())
			}
			if m > 0 {
				ddl.ArmWrite(dst, now, dstIdle)
				w, werr := dst.Write(buf[:m])
				e.N += int64(w)
				if w > 0 && marks != nil {
					marks.wrote(time.Now().UnixNano())
				}
				if werr != nil {
					e.DstErr = werr
					return e
				}
			}
			if err != nil {
				if marks != nil && srcIdle > 0 && IsTimeout(err) && !over.Load() {
					if until := marks.readIdleUntil(last, srcIdle); until > time.Now().UnixNano() {
						sdl.SetRead(src, time.Unix(0, until))
						rearmed = true
						continue
					}
				}
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
	// In a Relay a window lasts at most half the other direction's read
	// timeout on dst (dstIdle), so that its writes are marked in time.
	last := time.Now().UnixNano() // the last window with progress
	for n < 0 || e.N < n {
		now := time.Now()
		win := srcIdle
		if marks != nil && dstIdle > 0 && (win <= 0 || dstIdle/2 < win) {
			win = dstIdle / 2
		}
		if win > 0 {
			src.SetReadDeadline(now.Add(win))
		}
		writeDL := int64(0)
		if dstIdle > 0 {
			dst.SetWriteDeadline(now.Add(dstIdle))
			writeDL = now.Add(dstIdle).UnixNano()
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
		if m > 0 {
			last = time.Now().UnixNano()
			marks.wrote(last)
		}
		switch {
		case err == nil:
		case IsTimeout(err) && m > 0 && (over == nil || !over.Load()):
			// progress was made in this window: not idle
		case marks != nil && IsTimeout(err) && !over.Load() && (writeDL == 0 || time.Now().UnixNano() < writeDL):
			// The read window ended, not the write deadline (a splice
			// reports either as "readfrom"): a short window, or the other
			// direction wrote to src, waits on; else src was idle.
			if srcIdle <= 0 || marks.readIdleUntil(last, srcIdle) > time.Now().UnixNano() {
				continue
			}
			e.SrcErr = asRead(err)
			return e
		case IsWriteErr(err):
			e.DstErr = err
			return e
		default:
			return endOf(e, err, n)
		}
	}
	return e
}

// asRead is a splice's timeout as the read's it was ("read", not
// "readfrom": not a write error).
func asRead(err error) error {
	var op *net.OpError
	if errors.As(err, &op) {
		r := *op
		r.Op = "read"
		return &r
	}
	return err
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
	var toClient, toServer, fromClient atomic.Int64 // writeMarks
	var outEnded int64
	start := time.Now().UnixNano()
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
		in = pipe(server, client, -1, serverIdle, clientIdle, false, &over, &writeMarks{src: &toClient, dst: &toServer, read: &fromClient})
		CloseWrite(server)
		if in.SrcErr != nil || in.DstErr != nil {
			CloseRead(client)
			abort(1)
		}
	}()
	out = pipe(client, server, -1, clientIdle, serverIdle, false, &over, &writeMarks{src: &toServer, dst: &toClient})
	outEnded = time.Now().UnixNano()
	CloseWrite(client)
	if out.SrcErr != nil || out.DstErr != nil {
		CloseRead(server)
		abort(2)
	}
	wg.Wait()
	if first.Load() == 2 && clientIdle > 0 && IsTimeout(out.SrcErr) &&
		max(start, fromClient.Load(), toClient.Load())+int64(clientIdle) <= outEnded {
		// Both sides were idle past their timeouts when the server's
		// fired first (a byte relayed marks both at once): HAProxy looks
		// at the client's side first and blames it (cD), so does Relay.
		in.SrcErr = &net.OpError{Op: "read", Net: "tcp", Source: client.LocalAddr(), Addr: client.RemoteAddr(), Err: os.ErrDeadlineExceeded}
		out.SrcErr = nil
		first.Store(1)
	}
	switch first.Load() {
	case 1:
		out = aborted(out)
	case 2:
		in = aborted(in)
	}
	return
}

// Ender says which side ended a relay, and how (EndedBy).
type Ender int

// The ends of a relay.
const (
	EndClean         Ender = iota // both directions ended cleanly
	EndClient                     // the client's side failed (a reset, a close mid-write)
	EndClientTimeout              // the client's side was idle past its timeout
	EndServer                     // the server's side failed
	EndServerTimeout              // the server's side was idle past its timeout
)

// EndedBy says who ended a relay from how its two directions ended (in:
// client to server; out: server to client, as Relay returns them).
func EndedBy(in, out CopyEnd) Ender {
	clientErr := in.SrcErr
	if clientErr == nil {
		clientErr = out.DstErr
	}
	serverErr := out.SrcErr
	if serverErr == nil {
		serverErr = in.DstErr
	}
	switch {
	case clientErr == nil && serverErr == nil:
		return EndClean
	case in.SrcErr != nil && IsTimeout(in.SrcErr):
		return EndClientTimeout
	case out.SrcErr != nil && IsTimeout(out.SrcErr):
		return EndServerTimeout
	case clientErr != nil:
		return EndClient
	default:
		return EndServer
	}
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
