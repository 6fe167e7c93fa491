package proxy

// The edge of a client connection, before its first byte reaches the HTTP
// or TCP path: the PROXY protocol header of a bind with accept-proxy, then
// the TLS handshake of a bind with ssl. Both run in the connection's own
// goroutine (serve), never in the accept loop, bounded by the frontend's
// timeout_client_hs (else timeout_client). A connection failing either is
// closed, counted on its frontend and logged with HAProxy's reason.
//
// The PROXY header is read off the socket itself, without a wrapper
// (proxyproto.Read): the connection stays a *net.TCPConn and a TCP relay
// still splices. Its addresses replace the connection's everywhere: src
// fetches, tcp_request connection rules and track-sc, stick tables,
// X-Forwarded-For, logs and show sess. (HAProxy runs tcp-request
// connection rules before the header and has tcp-request session rules
// for the relayed address; fulcrum has no session stage, so its
// connection rules see the relayed address, which is what a rule behind
// a load balancer means.)

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/netip"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/fulcrum-proxy/fulcrum/proxy/logformat"
	"github.com/fulcrum-proxy/fulcrum/proxy/netio"
	"github.com/fulcrum-proxy/fulcrum/proxy/proxyproto"
	"github.com/fulcrum-proxy/fulcrum/proxy/syslog"
	"github.com/fulcrum-proxy/fulcrum/proxy/tlsx"
)

// edge is what one bind does to its connections before serving them.
type edge struct {
	acceptProxy bool
	tls         *tlsx.Bind // nil: plain
	id          string     // the bind's number in its frontend, from 1 (HAProxy's listener id)
}

// buildEdges makes the edges of fe's binds from the configuration, with
// their TLS from the proxy's certificate store. Called by build.
func (fe *Frontend) buildEdges() {
	for i, b := range fe.Conf.BindOptions {
		if b == nil || (!b.AcceptProxy && b.TLS == nil) {
			fe.edges = append(fe.edges, nil)
			continue
		}
		e := &edge{acceptProxy: b.AcceptProxy, id: strconv.Itoa(i + 1)}
		if b.TLS != nil {
			e.tls = fe.p.certs.NewBind(b.TLS)
		}
		fe.edges = append(fe.edges, e)
	}
}

// setEdge records that the listener at addr is bind i of fe (listen).
func (fe *Frontend) setEdge(addr string, i int) {
	if i < len(fe.edges) && fe.edges[i] != nil {
		if fe.edgeAt == nil {
			fe.edgeAt = map[string]*edge{}
		}
		fe.edgeAt[addr] = fe.edges[i]
	}
}

// sslCounters are the process's TLS figures of show info (CurrSslConns,
// CumSslConns, SslRate, SslFrontendKeyRate, SslFrontendSessionReuse_pct).
// One set is shared by the proxies a chain of reloads builds, so that the
// figures are the process's, as in HAProxy.
type sslCounters struct {
	Cur        atomic.Int64 // TLS client connections open (handshaking or established)
	Cum        atomic.Int64 // TLS connections since start: clients', and to servers (health checks aside)
	Rate       FreqCtr      // TLS connections accepted per second
	RateMax    atomic.Int64
	KeyRate    FreqCtr // full handshakes (no session resumed) per second
	KeyRateMax atomic.Int64
	Resumed    atomic.Int64 // handshakes that resumed a session, since start
	Failed     atomic.Int64 // failed handshakes, since start
	// BeKeyRate counts the full handshakes with servers (ssl servers, TLS
	// health checks excluded) per second: SslBackendKeyRate.
	BeKeyRate    FreqCtr
	BeKeyRateMax atomic.Int64
}

// readProxyHeader takes the PROXY protocol header off cc and makes its
// addresses cc's. A LOCAL (or UNKNOWN) header keeps the connection's
// own. It returns false, having counted and logged why, when the header
// is missing, malformed or late.
func (fe *Frontend) readProxyHeader(cc *clientConn) bool {
	if d := fe.Conf.TimeoutClientHS; d > 0 {
		cc.c.SetReadDeadline(time.Now().Add(d))
	}
	h, err := proxyproto.Read(cc.c)
	cc.c.SetReadDeadline(time.Time{})
	if err != nil {
		fe.ProxyErrors.Add(1)
		fe.logEdgeError(cc, err.Error(), err)
		return false
	}
	if h.Command == proxyproto.Proxy && h.Src.IsValid() {
		// Under the owner's lock: show sess reads cc.src meanwhile.
		fe.mu.Lock()
		cc.src = netip.AddrPortFrom(h.Src.Addr().Unmap(), h.Src.Port())
		dst := netip.AddrPortFrom(h.Dst.Addr().Unmap(), h.Dst.Port())
		cc.dst = &dst
		fe.mu.Unlock()
	}
	return true
}

// handshake runs the TLS handshake of cc on e's bind and makes the TLS
// connection cc's. It returns false, having counted and logged why, when
// the handshake fails or does not end within the handshake timeout.
func (fe *Frontend) handshake(cc *clientConn, e *edge) bool {
	ssl := fe.p.ssl
	now := time.Now()
	ssl.Cur.Add(1)
	ssl.Cum.Add(1)
	storeMax(&ssl.RateMax, ssl.Rate.Add(now, 1))
	cc.ssl = true
	tc := e.tls.Server(cc.c)
	if d := fe.Conf.TimeoutClientHS; d > 0 {
		cc.c.SetDeadline(now.Add(d))
	}
	var served *tlsx.Cert
	err := tc.HandshakeContext(tlsx.WithServedCert(context.Background(), &served))
	cc.c.SetDeadline(time.Time{})
	if err != nil {
		ssl.Failed.Add(1)
		fe.SSL.handshake(false, false)
		fe.logEdgeError(cc, handshakeReason(err), err)
		return false
	}
	cs := tc.ConnectionState()
	fe.SSL.handshake(true, cs.DidResume)
	if cs.DidResume {
		ssl.Resumed.Add(1)
	} else {
		storeMax(&ssl.KeyRateMax, ssl.KeyRate.Add(time.Now(), 1))
	}
	info := tlsx.NewConnInfo(&cs)
	if served != nil {
		info.Served = served.Leaf
	}
	// Under the owner's lock: a stop or shutdown session closes cc.c.
	fe.mu.Lock()
	cc.c, cc.tls = tc, info
	fe.mu.Unlock()
	return true
}

// handshakeReason is HAProxy's wording of a failed handshake
// (conn_err_code_str).
func handshakeReason(err error) string {
	switch {
	case netio.IsTimeout(err):
		return "Timeout during SSL handshake"
	case errors.Is(err, io.EOF):
		return "Connection closed during SSL handshake"
	case netio.IsConnReset(err) || errors.Is(err, net.ErrClosed):
		return "Connection error during SSL handshake"
	case errors.As(err, new(*tls.CertificateVerificationError)):
		// The client's certificate failed verification (HAProxy's
		// CO_ER_SSL_CRT_FAIL; its CA_FAIL for a failure deeper in the
		// chain is not told apart).
		return "SSL client certificate not trusted"
	}
	return "SSL handshake failure"
}

// logEdgeError logs a connection closed at the edge, as HAProxy logs an
// embryonic session: the client, the frontend and bind, and the reason.
func (fe *Frontend) logEdgeError(cc *clientConn, reason string, err error) {
	ev := fe.p.log.Info().Str("client", cc.src.String()).Str("frontend", fe.Name).Str("bind", *cc.bind)
	if err != nil && err.Error() != reason {
		ev = ev.Err(err)
	}
	ev.Msg(reason)
	// The frontend's log targets get HAProxy's line for it, as its
	// access lines (a trial: alerts on these lines in syslog missed them).
	if len(fe.log.senders) == 0 {
		return
	}
	id := "-"
	if e := fe.edgeOf(cc); e != nil {
		id = e.id
	}
	line := logformat.AppendEmbryonic(nil, cc.src, cc.acceptTime(), fe.Name, id, reason)
	now := time.Now()
	for _, s := range fe.log.senders {
		s.Send(syslog.LevelInfo, now, line)
	}
}

// edgeOf returns the edge of the listener that accepted cc, nil for a
// plain one.
func (fe *Frontend) edgeOf(cc *clientConn) *edge { return fe.edgeAt[*cc.bind] }

// SSLSnapshot is the process's TLS figures at one instant, as show info
// names them.
type SSLSnapshot struct {
	CurrConns       int64 // CurrSslConns: TLS client connections open
	CumConns        int64 // CumSslConns: TLS connections since start, to servers too
	Rate, RateMax   int64 // SslRate, MaxSslRate: TLS connections accepted per second
	KeyRate         int64 // SslFrontendKeyRate: full handshakes per second
	KeyRateMax      int64 // SslFrontendMaxKeyRate
	ReusePct        int64 // SslFrontendSessionReuse_pct
	BeKeyRate       int64 // SslBackendKeyRate: full handshakes with servers per second
	BeKeyRateMax    int64 // SslBackendMaxKeyRate
	Resumed         int64 // handshakes that resumed a session, since start
	FailedHandshake int64 // failed handshakes, since start
}

// CertSnapshot is one certificate of the binds, for the expiry figures.
type CertSnapshot struct {
	Name     string
	Serial   string
	NotAfter time.Time
}

// edgeSnapshot fills snap's TLS figures and certificates.
func (p *Proxy) edgeSnapshot(snap *Snapshot, now time.Time) {
	ssl := p.ssl
	s := SSLSnapshot{
		CurrConns: ssl.Cur.Load(), CumConns: ssl.Cum.Load(),
		Rate: ssl.Rate.Rate(now), RateMax: ssl.RateMax.Load(),
		KeyRate: ssl.KeyRate.Rate(now), KeyRateMax: ssl.KeyRateMax.Load(),
		Resumed: ssl.Resumed.Load(), FailedHandshake: ssl.Failed.Load(),
		BeKeyRate: ssl.BeKeyRate.Rate(now), BeKeyRateMax: ssl.BeKeyRateMax.Load(),
	}
	// HAProxy's ratio (stats.c): the share of TLS connections over the
	// last second that did not compute a key.
	if s.KeyRate < s.Rate {
		s.ReusePct = 100 - (100*s.KeyRate+(s.Rate-1))/s.Rate
	}
	snap.SSL = s
	for _, c := range p.certs.Certs() {
		snap.Certs = append(snap.Certs, CertSnapshot{Name: c.Name, Serial: c.Serial(), NotAfter: c.Leaf.NotAfter})
	}
}
