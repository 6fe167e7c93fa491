package proxy

// What a new connection to a server carries before the traffic: the PROXY
// protocol header (send_proxy, send_proxy_v2), then the TLS handshake
// (ssl), in that order as HAProxy 2.6 does them (the header travels in
// clear, before the ClientHello). Both are part of connecting: they are
// bounded by timeout_connect, and a failure is a connect error, retried
// and redispatched as one, then 503 with SC.

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"time"

	"github.com/fulcrum-proxy/fulcrum/conf"
	"github.com/fulcrum-proxy/fulcrum/proxy/acl"
	"github.com/fulcrum-proxy/fulcrum/proxy/http1"
	"github.com/fulcrum-proxy/fulcrum/proxy/tlsx"
)

// setupTLS makes the server's TLS client and PROXY options from its
// configuration, when it is built.
func (s *Server) setupTLS() {
	sc := s.Conf
	s.pp = parsePPOptions(sc.ProxyV2Options)
	if sc.SendProxy != 0 {
		// The header names one client: a connection that carries it
		// serves that client's connection only (kept private to it, as
		// http_reuse never does).
		s.up.Reuse = http1.ReuseNever
	}
	s.up.TLS = sc.SSL && sc.TLS != nil
	if t := sc.TLS; t != nil {
		s.tlsc = tlsx.NewClient(tlsx.ClientOptions{
			Verify: t.Verify, CAs: t.CAs, VerifyHost: t.VerifyHost,
			ALPN: t.ALPN, Cert: t.Cert,
		})
	}
}

// byALPN reports whether s, in an http backend, speaks on each connection
// what its TLS handshake selected by ALPN, as HAProxy 2.6 picks the mux of
// a server with ssl and alpn but no proto: h2 (HTTP/2, multiplexed) or
// http/1.1 and none (HTTP/1.1). It is so when its alpn offers h2 without
// proto = "h2" (which speaks HTTP/2 whatever ALPN chose).
func (s *Server) byALPN() bool {
	sc := s.Conf
	return sc.Proto == "" && sc.SSL && sc.TLS != nil && slices.Contains(sc.TLS.ALPN, "h2") &&
		s.Backend.Conf.Mode != conf.ModeTCP
}

// CheckConn readies a health check's connection c to the server as
// check_ssl and check_send_proxy ask, within deadline: a PROXY header
// without a client (v1 "PROXY UNKNOWN", v2 LOCAL), then a TLS handshake
// sending no SNI. It returns c unchanged when neither is set, and
// handshake reports whether a TLS handshake ran. On error c is left to
// the caller to close.
func (s *Server) CheckConn(c net.Conn, deadline time.Time) (out net.Conn, handshake bool, err error) {
	sc := s.Conf
	if !sc.CheckSendProxy && !(sc.CheckSSL && s.tlsc != nil) {
		return c, false, nil
	}
	c.SetDeadline(deadline)
	defer c.SetDeadline(time.Time{})
	if sc.CheckSendProxy {
		v := max(sc.SendProxy, 1)
		if _, err := c.Write(appendProxyHeader(nil, v, s.pp, &ppClient{})); err != nil {
			return nil, false, err
		}
	}
	if !sc.CheckSSL || s.tlsc == nil {
		return c, false, nil
	}
	cfg := s.tlsc.Config("")
	if ck := s.Backend.Conf.Check; ck != nil && ck.Proto == "grpc" {
		cfg.NextProtos = []string{"h2"} // gRPC health checks speak HTTP/2
	} else {
		// HTTP checks speak HTTP/1.1: h2 is not offered to them, even
		// by a proto = "h2" server's alpn, or one that picks its
		// protocol by ALPN.
		cfg.NextProtos = withoutH2(cfg.NextProtos)
	}
	tc := tls.Client(c, cfg)
	if err := tc.Handshake(); err != nil {
		return nil, true, err
	}
	return tc, true, nil
}

// withoutH2 returns protos without "h2", in a new slice when it must
// change (a tls.Config clone shares the server's).
func withoutH2(protos []string) []string {
	if !slices.Contains(protos, "h2") {
		return protos
	}
	return slices.DeleteFunc(slices.Clone(protos), func(p string) bool { return p == "h2" })
}

// sni returns the server name a new connection to srv sends for x: the
// value of srv's sni expression ("" without one, or when it fetches
// nothing). An integer or an address is sent as its text, as HAProxy's
// sample cast to string.
func (x *Stream) sni(srv *Server) string {
	t := srv.Conf.TLS
	if t == nil || t.SNI == nil || !srv.Conf.SSL {
		return ""
	}
	v, ok := t.SNI.Fetch(&x.areq)
	if !ok {
		return ""
	}
	switch v.Kind {
	case acl.ValueInt:
		return strconv.FormatInt(v.Int, 10)
	case acl.ValueIP:
		return v.IP.String()
	}
	return string(v.Str)
}

// ConnKey is the key of the assigned server's idle connections that x
// may reuse: the SNI its connections send (a connection made for one
// server name never serves a request for another, HAProxy's conn hash).
func (x *Stream) ConnKey() string {
	if x.srv == nil {
		return ""
	}
	return x.sni(x.srv)
}

// prepare readies new connection c to srv for x: its PROXY header, then
// its TLS handshake, within timeout_connect (timeout_server without it).
// A failed handshake is logged with its reason. It returns the connection
// to use (c, or the TLS connection over it); on error the caller closes c.
func (x *Stream) prepare(srv *Server, c net.Conn) (net.Conn, error) {
	sc := srv.Conf
	if sc.SendProxy == 0 && !(sc.SSL && srv.tlsc != nil) {
		return c, nil
	}
	be := x.be
	d := be.Conf.TimeoutConnect
	if d <= 0 {
		d = be.Conf.TimeoutServer
	}
	if d > 0 {
		c.SetDeadline(time.Now().Add(d))
		defer c.SetDeadline(time.Time{})
	}
	if sc.SendProxy != 0 {
		if _, err := c.Write(appendProxyHeader(nil, sc.SendProxy, srv.pp, x.ppClient())); err != nil {
			return nil, err
		}
	}
	if !sc.SSL || srv.tlsc == nil {
		return c, nil
	}
	name := x.sni(srv)
	cfg := srv.tlsc.Config(name)
	if x.h1only && srv.up.ByALPN {
		cfg.NextProtos = withoutH2(cfg.NextProtos)
	}
	tc := tls.Client(c, cfg)
	x.fe.p.ssl.Cum.Add(1) // CumSslConns counts server connections too (HAProxy's ssl_sock_init)
	if err := tc.Handshake(); err != nil {
		srv.SSL.handshake(false, false)
		be.SSL.handshake(false, false)
		ev := x.fe.p.log.Warn().Str("backend", be.Name).Str("server", srv.Name).Str("addr", srv.Addr())
		if name != "" {
			ev = ev.Str("sni", name)
		}
		ev.Err(err).Msg("SSL handshake failure with server")
		return nil, err
	}
	resumed := tc.ConnectionState().DidResume
	srv.SSL.handshake(true, resumed)
	be.SSL.handshake(true, resumed)
	if !resumed {
		ssl := x.fe.p.ssl
		storeMax(&ssl.BeKeyRateMax, ssl.BeKeyRate.Add(time.Now(), 1))
	}
	if err := checkALPN(sc, tc.ConnectionState().NegotiatedProtocol); err != nil {
		x.fe.p.log.Warn().Str("backend", be.Name).Str("server", srv.Name).Str("addr", srv.Addr()).
			Err(err).Msg("server connection refused: no HTTP/2")
		tc.Close()
		return nil, err
	}
	return tc, nil
}

// ErrNoH2 is the connection failure of a proto = "h2" server whose TLS
// handshake selected another protocol by ALPN.
var ErrNoH2 = errors.New("proto h2")

// checkALPN returns an error when the protocol a server's TLS handshake
// selected by ALPN (proto, "" for none) is not what sc speaks: a proto
// = "h2" server must select h2. A server that selects none gets HTTP/2
// all the same, as HAProxy 2.6's forced h2 mux does; one that selects
// http/1.1 is refused (HAProxy would send its HTTP/2 preface anyway and
// fail there, as a connection error too).
func checkALPN(sc *conf.Server, proto string) error {
	if sc.Proto != "h2" || proto == "" || proto == "h2" {
		return nil
	}
	return fmt.Errorf("%w: the server selected ALPN %q, not h2", ErrNoH2, proto)
}

// ppClient is what x's PROXY header says: the client's addresses as the
// frontend sees them (a received PROXY header's included) and its TLS.
func (x *Stream) ppClient() *ppClient {
	return &ppClient{src: x.cc.src, dst: x.areq.Dst, tls: x.cc.tls}
}
