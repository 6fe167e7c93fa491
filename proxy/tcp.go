package proxy

import (
	"time"

	"github.com/fulcrum-proxy/fulcrum/proxy/netio"
	"github.com/fulcrum-proxy/fulcrum/proxy/stream"
)

// TCP mode: a client connection relayed to one server connection.

// serveTCP serves one client connection in tcp mode: pick a server, connect
// with retries, relay both ways, log. The core's Stream accounts for it as
// for an HTTP request.
func (fe *Frontend) serveTCP(cc *clientConn) {
	defer func() { cc.st.release() }() // the connection's tracked entries (tcp_request connection, stick rules): cc.st may be made later
	var x Stream
	x.bind(fe, cc)
	x.beginTCP(cc.acceptTime())
	// What a server's sni expression may fetch in tcp mode (ssl_fc_sni).
	x.areq.Src, x.areq.TLS, x.areq.SSL = cc.src, cc.tls, cc.tls != nil
	be := fe.backend
	if be == nil {
		x.End(stream.NoServer)
		return
	}
	x.be, x.tw = be, 0
	// A queued TCP client is watched without consuming its bytes (see
	// netio.PeerCloseWait): one that goes away leaves the queue at once (CQ).
	pin, st := fe.p.tcpPersist(be, cc)
	x.pin = pin
	wake, wait := netio.PeerCloseWait(cc.c)
	x.tHead = time.Now()
	defer x.Release()
	if o := x.Take(wake, wait); o != stream.Served {
		x.End(o)
		return
	}
	cc.c.SetReadDeadline(time.Time{}) // the relay arms its own
	sc, o := x.Connect()
	if o != stream.Served {
		x.End(o)
		return
	}
	defer sc.Close()
	if st != nil {
		st.storeServer(x.srv) // stick on / store-request, once connected
	}
	x.Connected(sc, false)
	defer x.Unbind()
	clientIdle, serverIdle := fe.timeoutClient, be.Conf.TimeoutServer
	if t := be.Conf.TimeoutTunnel; t > 0 {
		// HAProxy's timeout tunnel: in tcp mode once no analyzer is left
		// (connected, here), for both sides.
		clientIdle, serverIdle = t, t
	}
	in, out := fe.p.relayTCP(cc.c, sc, clientIdle, serverIdle)
	x.relayedTCP(in.N, out.N)
	cc.st.end(false, in.N, out.N) // bytes on the entries tracked at connection (released on return)
	x.End(stream.RelayOutcome(in, out, false))
}
