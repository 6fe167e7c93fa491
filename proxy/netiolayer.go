package proxy

// The connection layer of HTTP/1, HTTP/2 and TCP binds, plaintext or TLS:
// fulcrum's own epoll instances (tune_netio = "epoll", proxy/netio/epoll;
// "uring", the default on Linux, relays mode tcp sessions on io_uring
// besides) or Go's netpoller (tune_netio = "go"). Only where
// the bytes are read and written changes (a TLS connection is crypto/tls
// over the layer's net.Conn): the accepted and dialled connections are
// net.Conns either way, and the rest of the path (rules, balancing,
// queues, counters, logs, reloads) does not know which layer serves them.

import (
	"crypto/tls"
	"errors"
	"net"
	"os"
	"syscall"
	"time"

	"github.com/fulcrum-proxy/fulcrum/conf"
	"github.com/fulcrum-proxy/fulcrum/proxy/netio"
	"github.com/fulcrum-proxy/fulcrum/proxy/netio/epoll"
	"github.com/fulcrum-proxy/fulcrum/proxy/netio/uring"
)

// NetIOEnv, when set to "go", "epoll" or "uring", overrides the configuration's
// tune_netio: the proxy's tests run their suites on either layer with it,
// and bench/syscalls.sh compares them (FUL_NETIO).
const NetIOEnv = "FULCRUM_TUNE_NETIO"

// H2EngineEnv, when set to "xnet", serves HTTP/2 clients with
// golang.org/x/net/http2's Server instead of fulcrum's own engine
// (http2.EngineOwn, the default): for comparison only (bench/README.md).
const H2EngineEnv = "FULCRUM_H2_ENGINE"

// TCPRelayEnv chooses how the epoll layer relays mode tcp sessions and
// HTTP/1 tunnels (tune_netio "epoll"): "pair" (the default) in the
// pollers' reapers (epoll.Pair: no goroutine wake-up per message),
// "goroutines" with netio.Relay (a goroutine per direction, as on Go's
// poller), for comparison (bench/README.md).
const TCPRelayEnv = "FULCRUM_TCP_RELAY"

// H1InlineEnv set to "0" keeps a goroutine per HTTP/1 request while its
// response comes, instead of letting the epoll layer's reapers finish
// simple responses (http1.Settings.Inline), for comparison
// (bench/README.md).
const H1InlineEnv = "FULCRUM_H1INLINE"

// H1InlineReqEnv set to "0" keeps the request phase of a parked HTTP/1
// client connection's next request on a worker (the reapers then finish
// responses only), for comparison (bench/README.md).
const H1InlineReqEnv = "FULCRUM_H1INLINE_REQ"

// H1InlineFirstEnv set to "0" serves a new HTTP/1 connection's first
// request on a worker goroutine, instead of awaiting it on the epoll
// layer's pollers (http1.AwaitFirst; with the request phase there), for
// comparison (bench/README.md).
const H1InlineFirstEnv = "FULCRUM_H1INLINE_FIRST"

// H2InlineEnv set to "0" runs every HTTP/2 stream's phases on a worker
// goroutine, instead of letting the connection's reader send a bodiless
// request and park its stream on the epoll layer until the response
// comes (http2.Server.SetInline), for comparison (bench/README.md).
const H2InlineEnv = "FULCRUM_H2INLINE"

// H2BatchEnv set to "0" hands each woken HTTP/2 stream to a worker of its
// own, instead of running those whose responses are whole one after the
// other on one worker of their connection (http2.Server.SetBatch), for
// comparison (bench/README.md).
const H2BatchEnv = "FULCRUM_H2BATCH"

// H2SendBatchEnv set to "0" has HTTP/2's connection readers send each
// request they begin at once, a system call each, instead of the requests
// of one client read together in one io_uring_enter
// (http2.Server.SetSendBatch; tune_netio "uring" only), for comparison
// (bench/README.md).
const H2SendBatchEnv = "FULCRUM_H2SENDBATCH"

// netIOMode returns the layer cfg asks for, after NetIOEnv; an unset
// tune_netio (a Config not made by conf.Parse) is conf.DefaultNetIO.
func (p *Proxy) netIOMode() string {
	switch v := os.Getenv(NetIOEnv); v {
	case "go", "epoll", "uring":
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
	case "", "go", "epoll", "uring":
	default:
		p.log.Warn().Str(NetIOEnv, v).Msg("unknown connection layer in the environment (want go, epoll or uring): tune_netio applies")
	}
	mode := p.netIOMode()
	p.epoll = mode == "epoll" || mode == "uring"
	p.uringOn = mode == "uring"
	switch v := os.Getenv(TCPRelayEnv); v {
	case "", "pair":
		p.pairOn = p.epoll
	case "goroutines":
	default:
		p.log.Warn().Str(TCPRelayEnv, v).Msg("unknown tcp relay in the environment (want pair or goroutines): pair applies")
		p.pairOn = p.epoll
	}
	// Responses finished by the reapers write their access log lines
	// there (a log writer that blocks stalls the poller's connections,
	// as it stalls every worker otherwise).
	p.h1inline = p.epoll && os.Getenv(H1InlineEnv) != "0"
	p.h1inlineReq = p.h1inline && os.Getenv(H1InlineReqEnv) != "0"
	p.h1inlineFirst = p.h1inlineReq && os.Getenv(H1InlineFirstEnv) != "0"
	p.h2inline = p.epoll && os.Getenv(H2InlineEnv) != "0"
	p.h2batch = p.h2inline && os.Getenv(H2BatchEnv) != "0"
	p.h2sendBatch = p.h2inline && p.uringOn && os.Getenv(H2SendBatchEnv) != "0"
	if old != nil && old.group != nil && old.group.Ref() {
		p.group = old.group
	}
	if p.epoll && p.group == nil {
		g, err := epoll.NewGroup(0)
		if err != nil {
			p.log.Warn().Err(err).Msg("tune_netio epoll unavailable, using Go's poller")
			p.epoll = false
			p.uringOn = false
			p.h2sendBatch = false
			return
		}
		p.group = g
	}
	// The io_uring relay starts with a proxy that has mode tcp frontends,
	// so that the listening lines can say which relay their sessions get
	// and a host that refuses io_uring is told at start.
	if p.uringOn {
		for _, fe := range p.Frontends {
			if fe.Conf.Mode == conf.ModeTCP {
				p.tcpRing()
				break
			}
		}
	}
}

// dropNetIO releases p's reference on the epoll group, once p's
// connections are closed (Shutdown) or when Start fails.
func (p *Proxy) dropNetIO() {
	p.uringMu.Lock()
	p.uringDown = true
	r := p.uring.Swap(nil)
	p.uringMu.Unlock()
	p.ringThread.stop()
	if r != nil {
		r.Close() // ends the sessions still relayed, if any (there are none)
	}
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

// relayTCP relays a mode tcp session as netio.Relay does (same results).
// When both connections are plaintext sockets of the epoll layer, the
// bytes are moved by the layer's pollers (epoll.Pair, tune_netio "epoll")
// or by p's io_uring loop (tune_netio "uring": the session's goroutine
// lends both sockets to uring.Relay, one per Proxy, started by the first
// session; where io_uring is refused, by the pollers); the session's
// goroutine waits for the pair to end. Closing
// either connection meanwhile (shutdown session, a stop) aborts the pair;
// the descriptors are closed by the connections' Close, once.
func (p *Proxy) relayTCP(client, server net.Conn, clientIdle, serverIdle time.Duration) (in, out netio.CopyEnd) {
	if p.uringOn {
		if ok, in, out := p.relayOnUring(client, server, clientIdle, serverIdle); ok {
			return in, out
		}
	}
	if p.pairOn {
		if ok, in, out := relayOnPollers(client, server, clientIdle, serverIdle); ok {
			return in, out
		}
	}
	return netio.Relay(client, server, clientIdle, serverIdle)
}

// relayTunnel relays an HTTP/1 tunnel (after a 101) as netio.Relay does,
// on the pollers when both connections are plaintext Conns of the epoll
// layer (http1.Settings.Relay, set when p relays mode tcp that way).
func relayTunnel(client, server net.Conn, clientIdle, serverIdle time.Duration) (in, out netio.CopyEnd) {
	if ok, in, out := relayOnPollers(client, server, clientIdle, serverIdle); ok {
		return in, out
	}
	return netio.Relay(client, server, clientIdle, serverIdle)
}

// relayOnPollers relays client and server with an epoll.Pair when both are
// plaintext Conns of one group; ok false when they are not, or the pair
// could not start (a connection closed: netio.Relay says so as usual).
func relayOnPollers(client, server net.Conn, clientIdle, serverIdle time.Duration) (ok bool, in, out netio.CopyEnd) {
	cc, ok1 := client.(*epoll.Conn)
	sc, ok2 := server.(*epoll.Conn)
	if !ok1 || !ok2 {
		return false, in, out
	}
	pr, err := epoll.StartPair(cc, sc, clientIdle, serverIdle)
	if err != nil {
		return false, in, out
	}
	in, out = pr.Wait()
	return true, in, out
}

func (p *Proxy) relayOnUring(client, server net.Conn, clientIdle, serverIdle time.Duration) (ok bool, in, out netio.CopyEnd) {
	cc, ok1 := client.(*epoll.Conn)
	sc, ok2 := server.(*epoll.Conn)
	if !ok1 || !ok2 {
		return false, in, out
	}
	r := p.tcpRing()
	if r == nil {
		return false, in, out
	}
	s := r.Session(clientIdle, serverIdle)
	cfd, clientBack, err := cc.Lend(s.Abort)
	if err != nil {
		return false, in, out // closed: netio.Relay says so as usual
	}
	sfd, serverBack, err := sc.Lend(s.Abort)
	if err != nil {
		clientBack()
		return false, in, out
	}
	p.ringThread.start()
	defer p.ringThread.end()
	if err := r.Start(s, cfd, sfd); err != nil {
		serverBack()
		clientBack()
		return false, in, out
	}
	i, o := s.Wait()
	serverBack()
	clientBack()
	return true, netio.CopyEnd(i), netio.CopyEnd(o)
}

// tcpRing returns p's io_uring relay, started on first use; nil when
// io_uring is unavailable (said once in the log) or p has stopped.
func (p *Proxy) tcpRing() *uring.Relay {
	if r := p.uring.Load(); r != nil {
		return r
	}
	p.uringMu.Lock()
	defer p.uringMu.Unlock()
	if r := p.uring.Load(); r != nil || p.uringDown {
		return r
	}
	r, err := uring.NewRelay(uring.RelayConfig{})
	if err != nil {
		p.uringDown = true
		ev := p.log.Warn()
		if uringRefused(err) {
			ev = p.log.Info() // the host's choice, not a fault: tune_netio's default
		}
		ev.Err(err).Msg("tune_netio uring: io_uring unavailable, mode tcp sessions relayed on the epoll layer")
		return nil
	}
	p.uring.Store(r)
	return r
}

// uringRefused reports whether err says the kernel refuses io_uring or
// lacks a part the relay needs (EPERM: disabled by a seccomp profile or
// kernel.io_uring_disabled; ENOSYS: absent; EINVAL, EOPNOTSUPP: an older
// kernel), rather than a fault of the moment (ENOMEM, EMFILE).
func uringRefused(err error) bool {
	for _, e := range []error{syscall.EPERM, syscall.ENOSYS, syscall.EINVAL, syscall.EOPNOTSUPP} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// OnRingThread has fn told, with +1, when p's io_uring relay (tune_netio
// "uring") starts relaying a session while it had none for a second (or
// ever), and with -1 when it has had none for a second since, or p
// stops: the relay's loop holds an OS thread of its own and blocks in
// io_uring_enter between turns, and while sessions flow cmd/fulcrum gives
// that thread a P of its own (GOMAXPROCS + 1; ringThread says why). Call
// it before Start; fn must not block and must not call back into p.
func (p *Proxy) OnRingThread(fn func(delta int)) {
	p.ringThread.fn = fn
	p.ringThread.idleAfter = ringIdleAfter
}
