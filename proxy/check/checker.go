package check

import (
	"context"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/fulcrum-proxy/fulcrum/proxy"
	"github.com/rs/zerolog"
)

// Checker runs the active checks of every server of a proxy, each on its
// own schedule: one goroutine per server and check kind, sleeping on the
// Clock between probes. A goroutine does one probe at a time, so a server
// is never probed twice at once by the same check.
//
// Schedule: the first probe of each check comes after a random part of its
// inter, so that servers configured together are not probed in the same
// millisecond; then each delay is inter, fastinter or downinter by the
// health counter (Server.interval), shortened by a random jitter of up to
// Jitter of itself.
//
// Servers added at runtime (the Runtime API's add server) get their checks
// started, and deleted ones stopped, through the proxy's ServerWatcher,
// which the Checker is while it runs.
type Checker struct {
	// Clock drives the schedule; the system clock by default.
	Clock Clock
	// Jitter is the largest share of each delay taken off at random, in
	// [0, 0.5]. Default 0.05.
	Jitter float64
	// Rand returns a uniform value in [0, n); math/rand/v2 by default.
	Rand func(n int64) int64

	log zerolog.Logger
	p   *proxy.Proxy

	// mu guards servers, probes, loops and ctx: the checked servers, their
	// probes and timings, and the check loops running for each (one
	// context and WaitGroup per server, so that a deleted server's loops
	// stop alone). ctx is nil until Start and after Stop.
	mu      sync.Mutex
	servers []*Server
	probes  map[*Server]probeSet
	loops   map[*Server]*serverLoops
	ctx     context.Context
	cancel  context.CancelFunc

	// onProbe, if set, is called after each probe result is applied
	// (tests wait on it).
	onProbe func(cs *Server, k kind, r Result)
}

// serverLoops are the check loops of one server.
type serverLoops struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// probeSet is the probes and timings of one server.
type probeSet struct {
	health, agent                       Probe
	inter, fastinter, downinter         time.Duration
	connect, read                       time.Duration // health probe timeouts
	agentInter, agentConnect, agentRead time.Duration
}

// New prepares the checks of every server of p that has `check`, an agent
// or `observe`; nothing runs until Start. log receives the transition lines.
// An http check with an unusable expect_status is an error (conf validates
// it first).
func New(p *proxy.Proxy, log zerolog.Logger) (*Checker, error) {
	c := &Checker{Clock: realClock{}, Jitter: 0.05, Rand: rand.Int64N, log: log, p: p,
		probes: map[*Server]probeSet{}, loops: map[*Server]*serverLoops{}}
	for _, b := range p.Backends {
		for _, s := range b.Servers() {
			if _, err := c.addLocked(s); err != nil {
				return nil, err
			}
		}
	}
	return c, nil
}

// addLocked prepares the checks of s, if it has `check`, an agent or
// `observe`, and returns its check state (nil when nothing checks it).
// c.mu must be held (or c not yet shared).
func (c *Checker) addLocked(s *proxy.Server) (*Server, error) {
	b, sc := s.Backend, s.Conf
	bc := b.Conf
	if !sc.Check && sc.Agent == nil {
		if sc.Observe != "" {
			c.log.Warn().Str("backend", b.Name).Str("server", s.Name).Msg("observe needs check = true: ignored")
		}
		return nil, nil
	}
	cs := Of(s)
	if _, known := c.probes[cs]; known {
		return cs, nil
	}
	cs.mu.Lock()
	cs.log = c.log
	cs.event = s.Backend.LogEvent // its proxy's (Backend.LogEvent), as newServer sets it
	cs.mu.Unlock()
	var ps probeSet
	if sc.Check && bc.Check != nil {
		ck := bc.Check
		ps.inter, ps.fastinter, ps.downinter, _, _ = sc.CheckTimes(ck)
		ps.connect, ps.read = timeouts(ps.inter, bc.TimeoutCheck, bc.TimeoutConnect)
		var prep ConnPrep
		if sc.CheckSSL || sc.CheckSendProxy {
			prep = s.CheckConn
		}
		ps.health = tcpProbe{prep: prep}
		if ck.Proto == "grpc" {
			ps.health = grpcProbe{prep: prep}
		} else if ck.Type == "http" {
			hp, err := newHTTPProbe(ck.Method, ck.Path, ck.Host, ck.ExpectStatus)
			if err != nil {
				return nil, err
			}
			hp.prep = prep
			ps.health = hp
		}
	}
	if a := sc.Agent; a != nil {
		ps.agentInter = a.Inter
		ps.agentConnect, ps.agentRead = timeouts(a.Inter, bc.TimeoutCheck, bc.TimeoutConnect)
		ps.agent = agentProbe{}
	}
	c.servers = append(c.servers, cs)
	c.probes[cs] = ps
	return cs, nil
}

// timeouts returns a check's connect and read timeouts, as HAProxy: with
// timeout_check, the connect gets min(timeout_connect, inter) and the
// reply timeout_check; without it, inter bounds both.
func timeouts(inter, timeoutCheck, timeoutConnect time.Duration) (connect, read time.Duration) {
	if timeoutCheck <= 0 {
		return inter, inter
	}
	connect = inter
	if timeoutConnect > 0 && timeoutConnect < inter {
		connect = timeoutConnect
	}
	return connect, timeoutCheck
}

// Servers returns the check states of the checked servers.
func (c *Checker) Servers() []*Server {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]*Server(nil), c.servers...)
}

// Start starts every server's checks, installs the traffic observers of
// servers with observe, and makes c the proxy's ServerWatcher, so that
// servers added at runtime get their checks too (those added since New
// start now). It must be called once; Stop ends it.
func (c *Checker) Start() {
	c.mu.Lock()
	c.ctx, c.cancel = context.WithCancel(context.Background())
	for _, cs := range c.servers {
		c.startLocked(cs)
	}
	c.mu.Unlock()
	c.p.WatchServers(c)
	for _, b := range c.p.Backends {
		for _, s := range b.Servers() {
			c.ServerAdded(s) // added between New and WatchServers: a no-op for the others
		}
	}
}

// startLocked starts the check loops of cs with c's context. c.mu must be
// held, after Start.
func (c *Checker) startLocked(cs *Server) {
	if c.loops[cs] != nil {
		return
	}
	ps := c.probes[cs]
	ctx, cancel := context.WithCancel(c.ctx)
	sl := &serverLoops{cancel: cancel}
	c.loops[cs] = sl
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if ps.health != nil {
		cs.wake[kindHealth] = make(chan time.Duration, 1)
		sl.wg.Add(1)
		go c.loop(ctx, &sl.wg, cs, kindHealth, ps, cs.wake[kindHealth])
		if cs.observe != "" {
			cs.srv.SetTrafficObserver(&observer{cs: cs, layer7: cs.observe == "layer7"})
		}
	}
	if ps.agent != nil {
		cs.wake[kindAgent] = make(chan time.Duration, 1)
		sl.wg.Add(1)
		go c.loop(ctx, &sl.wg, cs, kindAgent, ps, cs.wake[kindAgent])
	}
}

// ServerAdded implements proxy.ServerWatcher: the checks of a server added
// at runtime start at once (its first probe comes after a random part of
// its inter, as every server's). A server c already checks is left as is.
func (c *Checker) ServerAdded(s *proxy.Server) {
	c.mu.Lock()
	defer c.mu.Unlock()
	cs, err := c.addLocked(s)
	if err != nil {
		c.log.Error().Err(err).Str("backend", s.Backend.Name).Str("server", s.Name).Msg("health checks not started")
		return
	}
	if cs != nil && c.ctx != nil {
		c.startLocked(cs)
	}
}

// ServerDeleted implements proxy.ServerWatcher: the checks of a deleted
// server stop, and ServerDeleted returns once its probes in flight have
// returned.
func (c *Checker) ServerDeleted(s *proxy.Server) {
	cs, ok := s.CheckReporter().(*Server)
	if !ok {
		return
	}
	c.mu.Lock()
	sl := c.loops[cs]
	delete(c.loops, cs)
	delete(c.probes, cs)
	for i, x := range c.servers {
		if x == cs {
			c.servers = append(c.servers[:i:i], c.servers[i+1:]...)
			break
		}
	}
	c.mu.Unlock()
	if sl != nil {
		sl.cancel()
		sl.wg.Wait()
	}
	cs.mu.Lock()
	cs.wake = [2]chan time.Duration{}
	cs.mu.Unlock()
	s.SetTrafficObserver(nil)
}

// Stop ends every check, waits for probes in flight to return and removes
// the traffic observers. The servers keep their last state.
func (c *Checker) Stop() {
	c.p.UnwatchServers(c)
	c.mu.Lock()
	if c.cancel == nil {
		c.mu.Unlock()
		return
	}
	c.cancel()
	c.ctx, c.cancel = nil, nil
	loops := c.loops
	c.loops = map[*Server]*serverLoops{}
	servers := append([]*Server(nil), c.servers...)
	c.mu.Unlock()
	for _, sl := range loops {
		sl.wg.Wait()
	}
	for _, cs := range servers {
		cs.mu.Lock()
		cs.wake = [2]chan time.Duration{}
		cs.mu.Unlock()
		cs.srv.SetTrafficObserver(nil)
	}
}

// loop runs check k of cs until ctx ends: wait, probe, apply, repeat. A
// value on wake replaces the current wait (enable, observe's fastinter).
func (c *Checker) loop(ctx context.Context, wg *sync.WaitGroup, cs *Server, k kind, ps probeSet, wake chan time.Duration) {
	defer wg.Done()
	inter := ps.inter
	if k == kindAgent {
		inter = ps.agentInter
	}
	t := c.Clock.NewTimer(time.Duration(c.Rand(int64(inter))))
	for {
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case d := <-wake:
			t.Stop()
			t = c.Clock.NewTimer(d)
			continue
		case <-t.C():
		}
		c.probe(ctx, cs, k, ps)
		if ctx.Err() != nil {
			return
		}
		t = c.Clock.NewTimer(c.jitter(cs.interval(k, inter, ps.fastinter, ps.downinter)))
	}
}

// probe runs one probe of check k, if the check is enabled and the server
// not in maintenance (agents keep running in maintenance: their "ready"
// ends it), and applies the result.
func (c *Checker) probe(ctx context.Context, cs *Server, k kind, ps probeSet) {
	cs.mu.Lock()
	cs.syncLocked()
	st := cs.state(k)
	if !st.enabled || (k == kindHealth && cs.inMaint) {
		cs.mu.Unlock()
		return
	}
	st.running = true
	var (
		p               Probe
		addr            string
		connect, readTO time.Duration
	)
	if k == kindHealth {
		p, addr, connect, readTO = ps.health, cs.healthTarget(), ps.connect, ps.read
	} else {
		p, addr, connect, readTO = agentProbe{send: cs.agentSend}, cs.agentTarget(), ps.agentConnect, ps.agentRead
	}
	cs.mu.Unlock()

	start := time.Now()
	r := p.Run(ctx, addr, connect, readTO)
	if ctx.Err() != nil {
		cs.mu.Lock()
		st.running = false
		cs.mu.Unlock()
		return
	}
	d := time.Since(start)
	if k == kindHealth {
		cs.applyHealth(r, d)
	} else {
		cs.applyAgent(r, d)
	}
	if c.onProbe != nil {
		c.onProbe(cs, k, r)
	}
}

// jitter takes a random part of up to Jitter off d.
func (c *Checker) jitter(d time.Duration) time.Duration {
	j := min(max(c.Jitter, 0), 0.5)
	if j == 0 || d <= 0 {
		return d
	}
	span := int64(float64(d) * j)
	if span <= 0 {
		return d
	}
	return d - time.Duration(c.Rand(span))
}
