package proxy

// Connecting to a server: connect retries, redispatch and the turn-around
// delay, as HAProxy 2.6's back_handle_st_cer and stream_choose_redispatch
// (src/backend.c, include/haproxy/stream.h) do them.

import (
	"errors"
	"net"
	"time"

	"github.com/fulcrum-proxy/fulcrum/proxy/lb"
	"github.com/fulcrum-proxy/fulcrum/proxy/netio"
	"github.com/fulcrum-proxy/fulcrum/proxy/tlsx"
)

// connectServer connects to srv with the backend's timeout_connect,
// retrying a failed connect up to `retries` times. Every attempt is
// reported to the server's traffic observer (passive health checks).
//
// After a failure, with `redispatch`, the retry goes to another server
// chosen by the algorithm (avoiding srv) when HAProxy would redispatch it:
// srv is not running (DOWN, MAINT); or this is the last retry; or nothing
// ties the request to srv (direct is false: no persistence chose it), the
// algorithm does not hash a key of the request and more than one active
// server is usable, so a roundrobin, static-rr, leastconn, first or random
// request moves on at its first retry. The session then moves (unassigned
// from srv, assigned to the new server) and the redispatch is counted in
// the wredis of the server it left; when the algorithm has nothing better
// than srv, the retry is counted in srv's wretr, as every retry that stays
// on srv is. When every other server is full, the request retries srv.
//
// A retry that stays on srv after a connection error (refused, reset,
// unreachable; not a connect timeout, which has waited already) first
// waits HAProxy's turn-around delay, min(1s, timeout_connect), on the
// backend's clock, instead of hammering a server that just refused; so
// does a redispatched one when only one active server is usable (it would
// come back to the same server).
//
// On final failure econ is counted on the last server tried, which is
// returned with the error. Otherwise the server connected to is returned,
// with the connection and the connect time in ms: from the first attempt,
// retries and delays included (HAProxy's Tc).
//
// prep, when not nil, readies each new connection (its PROXY header and
// TLS handshake: Stream.prepare) and returns the one to use; its failure
// is a failed attempt, as a refused connect (the connection is closed).
// lg, if not nil, is the request's log entry (retries, connect time, the
// connection's addresses).
func connectServer(be *Backend, srv *Server, view *lb.Request, direct bool, prep func(*Server, net.Conn) (net.Conn, error), lg *logEntry) (*Server, net.Conn, int64, error) {
	d := net.Dialer{Timeout: be.Conf.TimeoutConnect, Control: be.dialControl}
	retries := be.Conf.Retries
	start := time.Now()
	for n := 0; ; n++ { // n retries done so far
		c, err := d.Dial("tcp", srv.Addr())
		if err == nil && prep != nil {
			var pc net.Conn
			if pc, err = prep(srv, c); err != nil {
				c.Close()
			}
			c = pc
		}
		srv.observeConnect(err == nil)
		if err == nil { // Go sets TCP_NODELAY on TCP connections by default
			d := time.Since(start)
			lg.logConnected(srv, c, d) // log.go
			return srv, c, d.Milliseconds(), nil
		}
		if n < retries && errors.Is(err, tlsx.ErrMismatchSNI) {
			// HAProxy 2.6's back_handle_st_cer: a certificate for another
			// name than the SNI sent is not retried, and the log shows
			// the retries as spent.
			for ; n < retries; n++ {
				lg.logRetry(false, false)
			}
		}
		if n >= retries {
			srv.Counters.Econ.Add(1)
			be.Counters.Econ.Add(1)
			return srv, nil, -1, err
		}
		redispatched, moved := false, false
		if be.redispatchAt(srv, n+1, direct) {
			if other := be.assign(view, srv, time.Now()); other != nil {
				redispatched = true
				be.unassign(srv)
				if other != srv {
					moved = true
					srv.Counters.Wredis.Add(1)
					be.Counters.Wredis.Add(1)
				} else {
					srv.Counters.Wretr.Add(1)
					be.Counters.Wretr.Add(1)
				}
				srv = other
			}
		}
		if !redispatched {
			srv.Counters.Wretr.Add(1)
			be.Counters.Wretr.Add(1)
			srv.Counters.sessionRetried(time.Now()) // a redispatch's assign counts its own
		}
		lg.logRetry(moved, redispatched) // log.go: retries, "+" after a redispatch
		if !netio.IsTimeout(err) && (!redispatched || be.act.Load() <= 1) {
			be.turnAround()
		}
	}
}

// redispatchAt reports whether retry number retry (1 for the first) of a
// request on srv goes back to the algorithm, as HAProxy's
// stream_choose_redispatch with `option redispatch` (redispatch on the
// last retry) and the fix of HAProxy 2.7 (commit 406efb96d, backported to
// 2.6) that redispatches at once whatever is not a hash. direct says that
// persistence chose srv. Lock-free.
func (b *Backend) redispatchAt(srv *Server, retry int, direct bool) bool {
	if !b.Conf.Redispatch {
		return false
	}
	return srv.Op() == OpDown || srv.Admin() == AdminMaint || // not running
		retry == b.Conf.Retries || // the last retry
		!direct && !b.hashes && b.act.Load() > 1 // nothing holds the request to srv
}

// turnAround waits HAProxy's turn-around delay before a connect retry on
// the same server: one second, or timeout_connect when it is shorter. It
// waits on b.clock, which tests move.
func (b *Backend) turnAround() {
	d := time.Second
	if tc := b.Conf.TimeoutConnect; tc > 0 && tc < d {
		d = tc
	}
	done := make(chan struct{})
	b.clock.AfterFunc(d, func() { close(done) })
	<-done
}
