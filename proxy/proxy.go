package proxy

import (
	"context"
	"fmt"
	"net"
	"os"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/fulcrum-proxy/fulcrum/conf"
	"github.com/fulcrum-proxy/fulcrum/proxy/http1"
	"github.com/fulcrum-proxy/fulcrum/proxy/http2"
	"github.com/fulcrum-proxy/fulcrum/proxy/netio/epoll"
	"github.com/fulcrum-proxy/fulcrum/proxy/netio/uring"
	"github.com/fulcrum-proxy/fulcrum/proxy/tlsx"
)

// Proxy is a running configuration: its frontends, backends and servers.
type Proxy struct {
	Conf      *conf.Config
	Frontends []*Frontend
	Backends  []*Backend
	// Resolvers are the [[resolvers]] sections with their name servers'
	// counters, which proxy/resolve keeps (resolution.go).
	Resolvers []*Resolvers
	fqdn      atomic.Pointer[FQDNChanger] // installed by proxy/resolve while it runs

	log     zerolog.Logger
	ctx     context.Context
	cancel  context.CancelFunc
	started time.Time

	tables      tables                        // stick tables (stick.go)
	certs       *tlsx.Store                   // the binds' certificates (edge.go)
	ssl         *sslCounters                  // TLS figures, shared along a chain of reloads
	watcher     atomic.Pointer[ServerWatcher] // servers added and deleted (servers.go)
	globalSlots limiter                       // global maxconn (set maxconn global changes it)
	fds         *fdBudget                     // the process's descriptors, shared across reloads (fds.go)
	work        chan work                     // accepted connections for idle worker goroutines
	trim        trimmer                       // ends idle worker goroutines (workers.go)
	stopping    atomic.Bool
	wg          sync.WaitGroup // accept loops and connections

	// acceptWarnEvery spaces the accept failure warnings of a listener
	// (frontend.go); tests shorten it.
	acceptWarnEvery time.Duration

	// carried are the counters inherited from the proxy this one replaced
	// (reload.go); settled is closed once that proxy has drained and its
	// last counts were added here (at once for a proxy built by New).
	carried []counterCarry
	settled chan struct{}
	// retiring is the proxy p replaced while Retire stops it: `show sess`
	// and the shutdowns reach its sessions still finishing (sessions.go).
	retiring atomic.Pointer[Proxy]

	obs observers // log targets, captured errors (log.go, errcapture.go)

	// group is the epoll connection layer (netiolayer.go), shared along a
	// chain of reloads; nil on Go's poller. epoll says p's own plaintext
	// binds use it (tune_netio).
	group *epoll.Group
	epoll bool
	// uringOn: mode tcp sessions between plaintext sockets of the epoll
	// layer are relayed on io_uring (tune_netio "uring", netiolayer.go);
	// the relay is started by the first (uring, under uringMu; uringDown
	// once it failed to start or p dropped it).
	uringOn bool
	// pairOn: mode tcp sessions between plaintext sockets of the epoll
	// layer are relayed by the pollers themselves (epoll.Pair, tune_netio
	// "epoll" unless TCPRelayEnv says "goroutines"; netiolayer.go), and
	// so are HTTP/1 tunnels; under "uring", the tunnels and the sessions
	// io_uring could not take.
	pairOn   bool
	h1inline bool // http1.Settings.Inline (H1InlineEnv)
	// h1inlineReq: the reapers do the request phase too
	// (http1.InlineCounters.Requests, H1InlineReqEnv).
	h1inlineReq bool
	// h1inlineFirst: and the wait for a new connection's first request
	// (http1.InlineCounters.First, H1InlineFirstEnv).
	h1inlineFirst bool
	// h2inline: HTTP/2 readers send bodiless requests and park their
	// streams (http2.Server.SetInline; H2InlineEnv)
	h2inline bool
	h2batch  bool // and run woken streams with whole responses in batches (H2BatchEnv)
	// h2sendBatch: and send the requests of one client read together
	// (H2SendBatchEnv; tune_netio "uring")
	h2sendBatch bool
	uringMu     sync.Mutex
	uring       atomic.Pointer[uring.Relay]
	uringDown   bool
	// ringThread lends the io_uring relay's thread a P while it relays
	// sessions (OnRingThread).
	ringThread ringThread
}

// New builds a proxy from a validated configuration. Nothing listens until
// Start. log receives the access log (info) and events.
func New(cfg *conf.Config, log zerolog.Logger) (*Proxy, error) {
	return build(cfg, log, nil)
}

// build is New; prev, if non-nil, is the proxy a reload replaces, whose
// stick tables are kept when their definition stays (NewFrom, reload.go).
func build(cfg *conf.Config, log zerolog.Logger, prev *Proxy) (*Proxy, error) {
	ctx, cancel := context.WithCancel(context.Background())
	p := &Proxy{Conf: cfg, log: log, ctx: ctx, cancel: cancel, work: make(chan work), settled: make(chan struct{}),
		acceptWarnEvery: acceptWarnEvery}
	p.trim.ctx = ctx
	if prev == nil {
		close(p.settled) // nothing to inherit
		p.fds = newFDBudget()
	} else {
		p.fds = prev.fds
	}
	h2Engine := os.Getenv(H2EngineEnv) // read once per build, as NetIOEnv
	byName := map[string]*Backend{}
	for i, bc := range cfg.Backends {
		b, err := newBackend(i+1, bc)
		if err != nil {
			cancel()
			return nil, err
		}
		b.log = log // panic_threshold warnings
		b.event = p.LogEvent
		b.dialControl = sockBufsControl(cfg.Global.ServerBufs)
		p.Backends = append(p.Backends, b)
		byName[b.Name] = b
	}
	p.Resolvers = newResolvers(cfg.Resolvers)
	p.globalSlots.setMax(cfg.Global.MaxConn)
	loaded := cfg.TLS
	if loaded == nil {
		loaded = tlsx.NewLoader("")
	}
	var prevCerts *tlsx.Store
	p.ssl = &sslCounters{}
	if prev != nil {
		prevCerts, p.ssl = prev.certs, prev.ssl
	}
	p.certs = tlsx.NewStore(loaded, prevCerts)
	for i, fc := range cfg.Frontends {
		fe := &Frontend{
			Name: fc.Name, ID: i + 1, Conf: fc, p: p,
			timeoutClient:      fc.TimeoutClient,
			timeoutHTTPRequest: fc.TimeoutHTTPRequest,
			forwardFor:         fc.ForwardFor,
			idleKeep:           idleKeepBuffers,
		}
		if fc.DefaultBackend != "" {
			fe.backend = byName[fc.DefaultBackend]
			if fe.backend == nil {
				cancel()
				return nil, fmt.Errorf("frontend %q: default_backend %q: no such backend", fc.Name, fc.DefaultBackend)
			}
			// forwardfor may be set on the backend too (HAProxy allows it in
			// both sections); either turns it on.
			fe.forwardFor = fe.forwardFor || fe.backend.Conf.ForwardFor
		}
		if err := fe.buildRules(byName); err != nil {
			cancel()
			return nil, err
		}
		fe.slots.setMax(fc.MaxConn)
		fe.buildEdges()
		if fc.Mode == conf.ModeHTTP {
			// Every http frontend can speak HTTP/2: a bind with proto h2,
			// or an ssl bind whose ALPN negotiates h2.
			fe.h2 = http2.NewServer(cfg.Global.H2MaxStreams, fc.TimeoutClient, h2Engine)
		}
		p.Frontends = append(p.Frontends, fe)
	}
	p.numberProxies()
	if err := p.buildTables(prev); err != nil {
		cancel()
		return nil, err
	}
	p.deriveFullConn()
	for _, b := range p.Backends {
		for _, s := range b.Servers() {
			s.up.Pool.SetBudget(p.fds)
		}
	}
	p.fds.register(p)
	p.buildLogs() // log.go
	return p, nil
}

// deriveFullConn sets the fullconn of each backend that has none, as
// HAProxy does: 10% of the sum of the maxconn of the frontends that route
// to it by default_backend or use_backend (a frontend without maxconn
// counts the global one, and without a global one the limit HAProxy
// derives from the file descriptors: derivedMaxConn), at least 1.
func (p *Proxy) deriveFullConn() {
	reach := map[*Backend]int{}
	for _, fe := range p.Frontends {
		mc := fe.Conf.MaxConn
		if mc == 0 {
			mc = p.Conf.Global.MaxConn
		}
		if mc == 0 {
			mc = derivedMaxConn()
		}
		seen := map[*Backend]bool{}
		for _, be := range append([]*Backend{fe.backend}, fe.useBackend...) {
			if be != nil && !seen[be] {
				seen[be] = true
				reach[be] += mc
			}
		}
	}
	for _, b := range p.Backends {
		if b.Conf.FullConn == 0 {
			b.fullConn.Store(int64(max(1, (reach[b]+9)/10))) // rounded up, as HAProxy (9986 -> 999)
		}
	}
}

// numberProxies gives frontends and backends one numbering, in declaration
// order (by configuration line; frontends first among equal lines), as
// HAProxy numbers its proxies (the iid column of show stat). With a stats
// socket in the configuration the numbers start at 2: HAProxy 2.6's
// Runtime API is a proxy of its own ("GLOBAL", the fe of show sess), made
// when the global section's socket is read, and takes 1 (checked on
// loopback: fe 2 and be 3 with a socket, 1 and 2 without).
func (p *Proxy) numberProxies() {
	first := 1
	if len(p.Conf.Global.StatsSockets) > 0 {
		first = 2
	}
	type proxyRef struct {
		line int
		fe   *Frontend
		be   *Backend
	}
	all := make([]proxyRef, 0, len(p.Frontends)+len(p.Backends))
	for _, fe := range p.Frontends {
		all = append(all, proxyRef{line: fe.Conf.Line, fe: fe})
	}
	for _, be := range p.Backends {
		all = append(all, proxyRef{line: be.Conf.Line, be: be})
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].line < all[j].line })
	for i, r := range all {
		if r.fe != nil {
			r.fe.ID = first + i
		} else {
			r.be.ID = first + i
		}
	}
}

// Start opens every bind and starts accepting. If a bind fails, nothing is
// left listening and the error names the frontend and address.
func (p *Proxy) Start() error {
	p.initNetIO(nil)
	if err := p.open(nil); err != nil {
		p.dropNetIO()
		return err
	}
	p.serve(nil)
	return nil
}

// open opens the binds of every frontend, taking those in inherited (a
// reload's, by configured address) instead of opening them. On error
// nothing it opened is left open and the error names the frontend.
func (p *Proxy) open(inherited map[string]net.Listener) error {
	p.started = time.Now()
	for i, fe := range p.Frontends {
		fe.h2set = http1.Settings{
			TimeoutClient:      fe.timeoutClient,
			TimeoutHTTPRequest: fe.timeoutHTTPRequest,
			TimeoutKeepAlive:   fe.Conf.TimeoutHTTPKeepAlive,
			MaxHdr:             p.Conf.Global.MaxHdr,
			ForwardFor:         fe.forwardFor,
		}
		fe.h1set = fe.h2set
		fe.h1set.IdleKeep = fe.idleKeep
		if p.h1inline {
			fe.h1inl.Requests = p.h1inlineReq
			fe.h1inl.First = p.h1inlineFirst
			fe.h1set.Inline = &fe.h1inl
		}
		if fe.h2 != nil {
			fe.h2.SetInline(p.h2inline)
			fe.h2.SetBatch(p.h2batch)
			fe.h2.SetSendBatch(p.h2sendBatch)
		}
		if p.pairOn {
			fe.h1set.Relay = relayTunnel // tunnels after a 101 (WebSocket)
		}
		if err := fe.listen(inherited); err != nil {
			for _, prev := range p.Frontends[:i] {
				prev.mu.Lock()
				for _, a := range prev.listeners {
					if !isInherited(inherited, a.l) {
						a.l.Close()
					}
				}
				prev.listeners = nil
				prev.mu.Unlock()
			}
			return fmt.Errorf("frontend %q: %w", fe.Name, err)
		}
	}
	return nil
}

// serve starts the accept loops and the stick tables' expiry. before, if
// non-nil, is called for each listener just before its loop starts (a
// reload stops the previous proxy's loop on it there).
func (p *Proxy) serve(before func(net.Listener)) {
	for _, fe := range p.Frontends {
		fe.mu.Lock()
		ls := fe.listeners
		fe.mu.Unlock()
		for _, a := range ls {
			if before != nil {
				before(a.l)
			}
			p.wg.Add(1)
			go fe.acceptLoop(a)
		}
	}
	p.expireTables()
	p.startObservers() // log targets, history sampler (observe.go)
	p.wg.Add(1)
	go p.sweepPools()
}

// sweepPools checks the servers' idle connections every poolSweepEvery
// until the proxy stops: closed or dirty ones are released, idle ones
// purged (http1.Pool). It runs off the request path, one goroutine per proxy.
func (p *Proxy) sweepPools() {
	defer p.wg.Done()
	t := time.NewTicker(http1.SweepEvery)
	defer t.Stop()
	for {
		select {
		case <-p.ctx.Done():
			return
		case now := <-t.C:
			for _, b := range p.Backends {
				for _, s := range b.Servers() {
					s.up.Pool.Sweep(now)
					if s.up.H2 != nil {
						s.up.H2.Sweep()
					}
				}
			}
		}
	}
}

// Certs returns the certificate store of the binds, which the Runtime
// API's ssl commands change live.
func (p *Proxy) Certs() *tlsx.Store { return p.certs }

// Frontend returns the frontend named name, or nil.
func (p *Proxy) Frontend(name string) *Frontend {
	for _, fe := range p.Frontends {
		if fe.Name == name {
			return fe
		}
	}
	return nil
}

// Backend returns the backend named name, or nil.
func (p *Proxy) Backend(name string) *Backend {
	for _, b := range p.Backends {
		if b.Name == name {
			return b
		}
	}
	return nil
}

// Shutdown stops accepting, closes idle client connections and waits for
// in-flight requests and TCP sessions to finish. When ctx ends first (the
// hard_stop_after deadline), remaining connections are closed and ctx's
// error is returned.
func (p *Proxy) Shutdown(ctx context.Context) error {
	p.stopping.Store(true)
	for _, fe := range p.Frontends {
		fe.closeListeners()
	}
	p.cancel()
	done := make(chan struct{})
	go func() {
		p.wg.Wait()
		close(done)
	}()
	// Idle keep-alive connections are closed at once; a connection that
	// becomes idle later sees the stop flag and closes itself.
	for _, fe := range p.Frontends {
		fe.closeIdle()
		if fe.h2 != nil {
			fe.h2.Shutdown() // GOAWAY: HTTP/2 connections end once their streams are done
		}
	}
	var err error
	select {
	case <-done:
	case <-ctx.Done():
		err = ctx.Err()
		for _, fe := range p.Frontends {
			fe.closeAll()
		}
		<-done
	}
	for _, b := range p.Backends {
		for _, s := range b.Servers() {
			s.up.Pool.CloseAll()
			if s.up.H2 != nil {
				s.up.H2.CloseAll()
			}
		}
	}
	p.fds.unregister(p)
	p.dropNetIO() // every connection of p is closed
	p.stopLogs()  // after the last access log line (log.go)
	return err
}

// acquire takes a frontend slot, a global slot, then the connection's
// descriptors (fds.go), waiting while any is short. It returns false, with
// nothing taken, when done is closed first.
// done is the accept loop's: it ends with the proxy or at a hand-over.
func (p *Proxy) acquire(fe *Frontend, done <-chan struct{}) bool {
	if !fe.slots.tryAcquire() {
		fe.MaxconnHits.Add(1)
		if !fe.slots.acquire(done) {
			return false
		}
	}
	if !p.globalSlots.acquire(done) {
		fe.slots.release()
		return false
	}
	if !p.fds.acquireConn(done) {
		p.globalSlots.release()
		fe.slots.release()
		return false
	}
	return true
}

// releaseSlots returns the slots and descriptors taken by acquire.
func (p *Proxy) releaseSlots(fe *Frontend) {
	p.fds.releaseConn()
	p.globalSlots.release()
	fe.slots.release()
}
