package proxy

import (
	"errors"
	"net"
	"time"

	"github.com/fulcrum-proxy/fulcrum/proxy/lb"
	"github.com/fulcrum-proxy/fulcrum/proxy/netio"
)

// TCP mode: a client connection relayed to one server connection.

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
	wake, wait := netio.PeerCloseWait(cc.c)
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
	in, out := netio.Relay(cc.c, sc, fe.timeoutClient, be.Conf.TimeoutServer)
	for _, c := range []*Counters{&fe.Counters, &be.Counters, &srv.Counters} {
		c.Bin.Add(in.N)
		c.Bout.Add(out.N)
	}
	e.bytes = out.N
	cc.st.end(-1, in.N, out.N) // bytes on the entries tracked at connection (released on return)
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
func tcpFlags(in, out netio.CopyEnd) string {
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
		return flagsNormal
	case in.SrcErr != nil && netio.IsTimeout(in.SrcErr):
		return "cD"
	case out.SrcErr != nil && netio.IsTimeout(out.SrcErr):
		return "sD"
	case clientErr != nil:
		return "CD"
	default:
		return "SD"
	}
}
