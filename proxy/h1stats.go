package proxy

import (
	"github.com/fulcrum-proxy/fulcrum/conf"
	"github.com/fulcrum-proxy/fulcrum/proxy/http1"
)

// HAProxy 2.6's h1 statistics module (the h1_* columns): per frontend,
// its HTTP/1 client connections, requests and bytes; per backend, its
// HTTP/1 server connections, requests and bytes (http1.Counters). The
// engine counts a backend's connections; the Stream counts requests and
// bytes; a frontend's connections are its sessions less its HTTP/2 ones.

// h1Begin counts a request of an HTTP/1 client begun, on its frontend
// (an earlier one that did not end is ended first).
func (x *Stream) h1Begin() {
	if !x.h1c {
		return
	}
	x.h1End()
	x.h1fe = x.fe
	x.fe.H1.OpenStreams.Add(1)
	x.fe.H1.TotalStreams.Add(1)
}

// h1End counts the request ended, and its bytes (those spliced apart).
func (x *Stream) h1End() {
	fe := x.h1fe
	if fe == nil {
		return
	}
	x.h1fe = nil
	fe.H1.OpenStreams.Add(-1)
	fe.H1.BytesIn.Add(x.bytesIn)
	fe.H1.BytesOut.Add(x.bytesOut - x.spliced)
	x.spliced = 0
}

// Spliced records n response body bytes copied socket to socket from an
// HTTP/1 server to an HTTP/1 client (http1.Stream).
func (x *Stream) Spliced(n int64) {
	x.spliced += n
	if x.h1c {
		x.fe.H1.SplicedOut.Add(n)
	}
	if x.srvH1() {
		x.be.H1.SplicedIn.Add(n)
	}
}

// srvH1 reports whether the request's server speaks HTTP/1 only (not
// proto h2, nor h2 by ALPN). Only HTTP requests call it.
func (x *Stream) srvH1() bool { return x.srv != nil && x.srv.up.H2 == nil }

// h1Values is a plain copy of c; for a frontend (fe), its connections are
// derived: its sessions (scur, cumulated) less its HTTP/2 connections, in
// http mode (none in tcp mode, as HAProxy's).
func h1Values(c *http1.Counters, fe *Frontend, idle int64) H1Values {
	v := H1Values{
		OpenConns: c.OpenConns.Load(), TotalConns: c.TotalConns.Load(),
		OpenStreams: c.OpenStreams.Load(), TotalStreams: c.TotalStreams.Load(),
		BytesIn: c.BytesIn.Load(), BytesOut: c.BytesOut.Load(),
		SplicedIn: c.SplicedIn.Load(), SplicedOut: c.SplicedOut.Load(),
	}
	switch {
	case fe != nil && fe.Conf.Mode != conf.ModeHTTP:
		return H1Values{}
	case fe != nil:
		v.OpenConns = max(0, fe.Counters.Scur.Load()-fe.H2.OpenConns.Load())
		v.TotalConns = max(0, fe.Counters.Stot.Load()-fe.H2.TotalConns.Load())
	default:
		v.OpenStreams = max(0, v.OpenConns-idle)
	}
	return v
}

// H1Values is a plain copy of http1.Counters (h1 statistics module) for
// a frontend or a backend.
type H1Values struct {
	OpenConns, TotalConns, OpenStreams, TotalStreams int64
	BytesIn, BytesOut, SplicedIn, SplicedOut         int64
}

// idleH1 is how many connections to b's servers wait idle in their pools.
func (b *Backend) idleH1() int64 {
	var n int
	for _, s := range b.Servers() {
		safe, unsafe := s.up.Pool.Idle()
		n += safe + unsafe
	}
	return int64(n)
}
