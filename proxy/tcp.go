package proxy

import (
	"errors"
	"github.com/fulcrum-proxy/fulcrum/proxy/lb"
	"io"
	"net"
	"sync"
	"time"
)

// TCP mode and the byte relays shared with HTTP tunnels and large bodies.
//
// A relay starts by copying through a user-space buffer, which is the
// cheapest way to move the small messages of interactive protocols; once a
// read fills the whole buffer the flow is bulk, and the rest goes through
// io.CopyN between *net.TCPConn, which Linux turns into splice(2): bytes
// move socket to pipe to socket without entering user space.

// relayBufSize is the user-space copy buffer of one relay direction.
const relayBufSize = 16 << 10

// spliceWindow bounds one io.CopyN round so that the inactivity deadline is
// re-armed periodically on long transfers.
const spliceWindow = 1 << 30

var relayBufs = sync.Pool{New: func() any { b := make([]byte, relayBufSize); return &b }}

// copyEnd says how one direction of a copy ended: the bytes moved, and the
// error reading the source or writing the destination (both nil when the
// source ended cleanly, or the n bytes asked for were moved).
type copyEnd struct {
	n      int64
	srcErr error
	dstErr error
}

// pipe copies n bytes (or until EOF when n < 0) from src to dst; bulk says
// to splice from the start. Inactivity timeouts apply to src's reads
// (srcIdle) and dst's writes (dstIdle), 0 = none. With n >= 0 an early EOF
// is a source error (io.ErrUnexpectedEOF).
func pipe(dst, src net.Conn, n int64, dstIdle, srcIdle time.Duration, bulk bool) copyEnd {
	var e copyEnd
	if !bulk {
		bufp := relayBufs.Get().(*[]byte)
		defer relayBufs.Put(bufp)
		buf := *bufp
		var sdl, ddl deadlines
		for !bulk && (n < 0 || e.n < n) {
			now := time.Now()
			sdl.armRead(src, now, srcIdle)
			want := int64(len(buf))
			if n >= 0 && n-e.n < want {
				want = n - e.n
			}
			m, err := src.Read(buf[:want])
			if m > 0 {
				ddl.armWrite(dst, now, dstIdle)
				w, werr := dst.Write(buf[:m])
				e.n += int64(w)
				if werr != nil {
					e.dstErr = werr
					return e
				}
			}
			if err != nil {
				return endOf(e, err, n)
			}
			bulk = m == len(buf)
		}
		if !bulk {
			return e
		}
	}
	// Bulk: splice. A deadline that expires while bytes were still moving
	// in its window is re-armed: the connection is only cut after a whole
	// window of idleness, between one and two timeouts after the last byte.
	for n < 0 || e.n < n {
		now := time.Now()
		if srcIdle > 0 {
			src.SetReadDeadline(now.Add(srcIdle))
		}
		if dstIdle > 0 {
			dst.SetWriteDeadline(now.Add(dstIdle))
		}
		want := int64(spliceWindow)
		if n >= 0 && n-e.n < want {
			want = n - e.n
		}
		m, err := io.CopyN(dst, src, want)
		e.n += m
		switch {
		case err == nil:
		case isTimeout(err) && m > 0:
			// progress was made in this window: not idle
		case isWriteErr(err):
			e.dstErr = err
			return e
		default:
			return endOf(e, err, n)
		}
	}
	return e
}

// endOf records a read error that ended a copy; EOF is clean when the copy
// was to run until EOF.
func endOf(e copyEnd, err error, n int64) copyEnd {
	switch {
	case err == io.EOF && n < 0:
	case err == io.EOF:
		e.srcErr = io.ErrUnexpectedEOF
	default:
		e.srcErr = err
	}
	return e
}

// isWriteErr reports whether err came from writing (to dst).
func isWriteErr(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && (op.Op == "write" || op.Op == "readfrom")
}

// relay copies both ways between client and server until both directions
// have ended, propagating half-closes: when one side finishes sending, the
// other side's write half is shut. in is the client-to-server direction,
// out the server-to-client one.
func relay(client, server net.Conn, clientIdle, serverIdle time.Duration) (in, out copyEnd) {
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		in = pipe(server, client, -1, serverIdle, clientIdle, false)
		closeWrite(server)
		if in.srcErr != nil || in.dstErr != nil {
			closeRead(client)
			server.SetReadDeadline(time.Now()) // the session is over
		}
	}()
	out = pipe(client, server, -1, clientIdle, serverIdle, false)
	closeWrite(client)
	if out.srcErr != nil || out.dstErr != nil {
		closeRead(server)
		client.SetReadDeadline(time.Now()) // the session is over
	}
	wg.Wait()
	return
}

func closeWrite(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		tc.CloseWrite()
		return
	}
	c.Close()
}

func closeRead(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		tc.CloseRead()
	}
}

// serveTCP serves one client connection in tcp mode: pick a server, connect
// with retries, relay both ways, log.
func (fe *Frontend) serveTCP(cc *clientConn) {
	defer cc.st.release() // the connection's tracked entries (tcp_request connection)
	start := cc.accepted
	be := fe.backend
	e := logEntry{client: cc.src, frontend: fe.Name, backend: "<NOSRV>", server: "<NOSRV>",
		tw: -1, tc: -1, tcp: true}
	defer func() {
		e.tt = time.Since(start).Milliseconds()
		l := fe.p.log
		e.emit(&l)
	}()
	if be == nil {
		e.flags = "SC"
		return
	}
	e.backend = be.Name
	e.tw = 0
	now := time.Now()
	be.Counters.sessionStart(now)
	defer be.Counters.sessionEnd()
	view := lb.Request{Src: cc.src}
	// A queued TCP client is watched without consuming its bytes (see
	// peerCloseWait): one that goes away leaves the queue at once (CQ).
	pin, st := fe.p.tcpPersist(be, cc)
	wake, wait := peerCloseWait(cc.c)
	srv, tw, err := be.take(&view, pin, nil, now, wake, wait)
	e.tw = max(tw, 0).Milliseconds()
	if err != nil {
		e.flags = "SC"
		switch {
		case errors.Is(err, errQueueTimeout):
			e.flags = "sQ"
		case errors.Is(err, errQueueAbort):
			e.flags = "CQ"
		}
		return
	}
	cc.c.SetReadDeadline(time.Time{})   // the relay arms its own
	defer func() { be.unassign(srv) }() // srv may move with a redispatch
	var sc net.Conn
	var tc int64
	srv, sc, tc, err = connectServer(be, srv, &view)
	e.server = srv.Name
	e.tc = tc
	if err != nil {
		e.flags = "SC"
		return
	}
	defer sc.Close()
	if st != nil {
		st.storeServer(srv) // stick on / store-request, once connected
	}
	cc.stream.set(be, srv, sc) // for shutdown sessions (sessions.go)
	defer cc.stream.clear()
	srv.Counters.Ctime.Add(tc)
	be.Counters.Ctime.Add(tc)
	srv.Counters.queued(e.tw)
	be.Counters.queued(e.tw)
	in, out := relay(cc.c, sc, fe.timeoutClient, be.Conf.TimeoutServer)
	for _, c := range []*Counters{&fe.Counters, &be.Counters, &srv.Counters} {
		c.Bin.Add(in.n)
		c.Bout.Add(out.n)
	}
	e.bytes = out.n
	cc.st.end(-1, in.n, out.n) // bytes on the entries tracked at connection (released on return)
	tt := time.Since(start).Milliseconds()
	srv.Counters.Ttime.Add(tt)
	be.Counters.Ttime.Add(tt)
	e.flags = tcpFlags(in, out)
	if e.flags[0] == 'C' || e.flags[0] == 'c' {
		srv.Counters.CliAbrt.Add(1)
		be.Counters.CliAbrt.Add(1)
	} else if e.flags[0] == 'S' || e.flags[0] == 's' {
		srv.Counters.SrvAbrt.Add(1)
		be.Counters.SrvAbrt.Add(1)
	}
}

// tcpFlags derives HAProxy's termination state of a finished TCP session
// from how its two directions ended (in: client to server; out: server to
// client): who ended it (C client, S server; lower case for a timeout) in
// the data phase (D).
func tcpFlags(in, out copyEnd) string {
	clientErr := in.srcErr
	if clientErr == nil {
		clientErr = out.dstErr
	}
	serverErr := out.srcErr
	if serverErr == nil {
		serverErr = in.dstErr
	}
	switch {
	case clientErr == nil && serverErr == nil:
		return flagsNormal
	case in.srcErr != nil && isTimeout(in.srcErr):
		return "cD"
	case out.srcErr != nil && isTimeout(out.srcErr):
		return "sD"
	case clientErr != nil:
		return "CD"
	default:
		return "SD"
	}
}
