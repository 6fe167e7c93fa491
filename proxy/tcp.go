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
// Copies go through io.CopyN between *net.TCPConn, which Linux turns into
// splice(2): bytes move socket to pipe to socket without entering user
// space.

// spliceWindow bounds one io.CopyN round so that the inactivity deadline is
// re-armed periodically on long transfers.
const spliceWindow = 1 << 30

// pipe copies n bytes (or until EOF when n < 0) from src to dst. Inactivity
// timeouts apply to src's reads (srcIdle) and dst's writes (dstIdle), 0 =
// none. A deadline that expires while bytes were still moving in its window
// is re-armed: the connection is only cut after a whole window of idleness,
// so it fires between one and two timeouts after the last byte. Errors on
// dst are wrapped as client-side when dst is the client (see relay).
func pipe(dst, src net.Conn, n int64, dstIdle, srcIdle time.Duration) (int64, error) {
	var total int64
	for n < 0 || total < n {
		now := time.Now()
		if srcIdle > 0 {
			src.SetReadDeadline(now.Add(srcIdle))
		}
		if dstIdle > 0 {
			dst.SetWriteDeadline(now.Add(dstIdle))
		}
		want := int64(spliceWindow)
		if n >= 0 && n-total < want {
			want = n - total
		}
		m, err := io.CopyN(dst, src, want)
		total += m
		if err == nil {
			continue
		}
		if isTimeout(err) && m > 0 {
			continue // progress was made in this window: not idle
		}
		if err == io.EOF && n < 0 {
			return total, nil
		}
		if err == io.EOF {
			return total, io.ErrUnexpectedEOF
		}
		if isWriteErr(err) {
			return total, wrapClient(err)
		}
		return total, err
	}
	return total, nil
}

// isWriteErr reports whether err came from writing (to dst).
func isWriteErr(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && (op.Op == "write" || op.Op == "readfrom")
}

// relay copies both ways between client and server until both directions
// have ended, propagating half-closes: when one side finishes sending, the
// other side's write half is shut. It returns the bytes sent to the client
// (out) and received from it (in), and the error that ended each direction.
func relay(client, server net.Conn, clientIdle, serverIdle time.Duration) (in, out int64, inErr, outErr error) {
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		in, inErr = pipe(server, client, -1, serverIdle, clientIdle)
		closeWrite(server)
		if inErr != nil {
			closeRead(client)
		}
	}()
	out, outErr = pipe(client, server, -1, clientIdle, serverIdle)
	closeWrite(client)
	if outErr != nil {
		closeRead(server)
		// Unblock the other direction: with one side broken the session is over.
		client.SetReadDeadline(time.Now())
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
	srv := be.assign(&view, nil, now)
	if srv == nil {
		e.flags = "SC"
		return
	}
	e.server = srv.Name
	defer be.unassign(srv)
	sc, tc, err := dialServer(be, srv)
	e.tc = tc
	if err != nil {
		e.flags = "SC"
		return
	}
	defer sc.Close()
	srv.Counters.Ctime.Add(tc)
	be.Counters.Ctime.Add(tc)
	srv.Counters.Qtime.Add(0)
	be.Counters.Qtime.Add(0)
	in, out, inErr, outErr := relay(cc.c, sc, fe.timeoutClient, be.Conf.TimeoutServer)
	for _, c := range []*Counters{&fe.Counters, &be.Counters, &srv.Counters} {
		c.Bin.Add(in)
		c.Bout.Add(out)
	}
	e.bytes = out
	tt := time.Since(start).Milliseconds()
	srv.Counters.Ttime.Add(tt)
	be.Counters.Ttime.Add(tt)
	e.flags = tcpFlags(inErr, outErr)
	if e.flags[0] == 'C' || e.flags[0] == 'c' {
		srv.Counters.CliAbrt.Add(1)
		be.Counters.CliAbrt.Add(1)
	} else if e.flags[0] == 'S' || e.flags[0] == 's' {
		srv.Counters.SrvAbrt.Add(1)
		be.Counters.SrvAbrt.Add(1)
	}
}

// tcpFlags derives HAProxy's termination state of a finished TCP session
// from the errors of its two directions (in: client to server; out: server
// to client).
func tcpFlags(inErr, outErr error) string {
	switch {
	case inErr == nil && outErr == nil:
		return flagsNormal
	case inErr != nil && isTimeout(inErr) && !isClientErr(inErr):
		return "cD" // the client stayed silent
	case outErr != nil && isTimeout(outErr) && !isClientErr(outErr):
		return "sD"
	case inErr != nil && !isClientErr(inErr):
		return "CD"
	case outErr != nil && isClientErr(outErr):
		return "CD"
	default:
		return "SD"
	}
}
