package proxy

// The connection layer of HTTP/1, HTTP/2 and TCP binds, plaintext or TLS:
// fulcrum's own epoll instances (tune_netio = "epoll", proxy/netio/epoll,
// the default on Linux) or Go's netpoller (tune_netio = "go"). Only where
// the bytes are read and written changes (a TLS connection is crypto/tls
// over the layer's net.Conn): the accepted and dialled connections are
// net.Conns either way, and the rest of the path (rules, balancing,
// queues, counters, logs, reloads) does not know which layer serves them.

import (
	"crypto/tls"
	"net"
	"os"

	"github.com/fulcrum-proxy/fulcrum/conf"
	"github.com/fulcrum-proxy/fulcrum/proxy/netio/epoll"
)

// NetIOEnv, when set to "go" or "epoll", overrides the configuration's
// tune_netio: the proxy's tests run their suites on either layer with it,
// and bench/syscalls.sh compares them (FUL_NETIO).
const NetIOEnv = "FULCRUM_TUNE_NETIO"

// H2EngineEnv, when set to "xnet", serves HTTP/2 clients with
// golang.org/x/net/http2's Server instead of fulcrum's own engine
// (http2.EngineOwn, the default): for comparison only (bench/README.md).
const H2EngineEnv = "FULCRUM_H2_ENGINE"

// netIOMode returns the layer cfg asks for, after NetIOEnv; an unset
// tune_netio (a Config not made by conf.Parse) is conf.DefaultNetIO.
func (p *Proxy) netIOMode() string {
	switch v := os.Getenv(NetIOEnv); v {
	case "go", "epoll":
		return v
	}
	if p.Conf.Global.NetIO == "" {
		return conf.DefaultNetIO
	}
	return p.Conf.Global.NetIO
}

// initNetIO readies the connection layer before p opens its binds. The
// epoll group is shared along a chain of reloads (old, the proxy p
// replaces, or nil): connections and listeners handed over keep their
// pollers. p.epoll says whether p's new plaintext binds use them; where the
// group cannot be made (not Linux) p stays on Go's poller and says so.
func (p *Proxy) initNetIO(old *Proxy) {
	switch v := os.Getenv(NetIOEnv); v {
	case "", "go", "epoll":
	default:
		p.log.Warn().Str(NetIOEnv, v).Msg("unknown connection layer in the environment (want go or epoll): tune_netio applies")
	}
	p.epoll = p.netIOMode() == "epoll"
	if old != nil && old.group != nil && old.group.Ref() {
		p.group = old.group
	}
	if !p.epoll || p.group != nil {
		return
	}
	g, err := epoll.NewGroup(0)
	if err != nil {
		p.log.Warn().Err(err).Msg("tune_netio epoll unavailable, using Go's poller")
		p.epoll = false
		return
	}
	p.group = g
}

// dropNetIO releases p's reference on the epoll group, once p's
// connections are closed (Shutdown) or when Start fails.
func (p *Proxy) dropNetIO() {
	if p.group != nil {
		p.group.Unref()
		p.group = nil
	}
}

// wrapListener returns l as the listener of fe's bind: on the epoll layer
// when p uses it (every bind: HTTP/1, HTTP/2 and TCP, plaintext or TLS);
// l itself otherwise, or when wrapping fails. The listening socket moves
// to the layer (l is closed).
func (fe *Frontend) wrapListener(l net.Listener) net.Listener {
	p := fe.p
	if !p.epoll || p.group == nil {
		return l
	}
	tl, ok := l.(*net.TCPListener)
	if !ok {
		return l
	}
	el, err := p.group.Listen(tl)
	if err != nil {
		p.log.Warn().Err(err).Str("frontend", fe.Name).Str("bind", l.Addr().String()).Msg("tune_netio epoll: bind stays on Go's poller")
		return l
	}
	return el
}

// serverConnOnEpoll returns the conversion of a new server connection to
// the epoll layer for a request whose client connection is on it (over
// TLS or not) and a plaintext HTTP/1 or TCP server (no TLS, no proto h2);
// nil when the connection stays Go's.
func serverConnOnEpoll(client net.Conn, srv *Server) func(net.Conn) net.Conn {
	if tc, ok := client.(*tls.Conn); ok {
		client = tc.NetConn()
	}
	ec, ok := client.(*epoll.Conn)
	if !ok || srv.Conf.SSL || srv.Conf.Proto == "h2" {
		return nil
	}
	return func(c net.Conn) net.Conn {
		tc, ok := c.(*net.TCPConn)
		if !ok {
			return c
		}
		if moved, err := ec.Group().FromTCP(tc); err == nil {
			return moved
		}
		return c
	}
}
