package proxy

// Reload: a new Proxy replaces a running one without losing a connection
// or an operator's change (issue 11).
//
// The sequence, driven by the daemon (cmd/fulcrum reload.go):
//
//  1. NewFrom builds the new proxy from a validated configuration and
//     copies into it the state of every frontend, backend and server whose
//     name stays (inherit): admin state and user weight set at runtime,
//     operational state, slowstart progress, runtime address and maxconn,
//     and the counters. Stick tables whose definition stays are kept.
//  2. StartFrom opens the binds that are new and takes over the listeners
//     whose address stays: the old accept loop on each is stopped while
//     the socket stays open, so that connections wait in the kernel
//     backlog for the new loop and none is refused.
//  3. Retire stops the old proxy gracefully (Shutdown: its remaining
//     listeners close, its in-flight requests and TCP connections finish
//     on the old configuration, its HTTP keep-alive connections move to
//     the new proxy for their next requests, see handoff.go) and then adds what its counters counted
//     meanwhile to the new proxy's, so cumulative counters lose nothing.
//
// The old proxy is not changed by steps 1 and 2 until the hand-over of a
// listener; if either fails, the old proxy keeps serving as it was.

import (
	"context"
	"net"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/fulcrum-proxy/fulcrum/conf"
	"github.com/fulcrum-proxy/fulcrum/proxy/stick"
)

// NewFrom builds the proxy of cfg to replace old, inheriting old's state
// for every frontend, backend and server whose name stays (see inherit).
// Nothing listens until StartFrom. old keeps serving unchanged; it must not
// be nil.
func NewFrom(old *Proxy, cfg *conf.Config, log zerolog.Logger) (*Proxy, error) {
	p, err := build(cfg, log, old)
	if err != nil {
		return nil, err
	}
	p.inherit(old)
	return p, nil
}

// keptTable returns prev's table named name when it is defined exactly as
// a new one would be (origins: its aggregate slots), for a reload to keep
// it with its entries; else nil.
func (prev *Proxy) keptTable(name string, typ stick.KeyType, keyLen, size int, expire time.Duration, store stick.Store, origins int) *stick.Table {
	t := prev.tables.byName[name]
	if t == nil || t.Type() != typ || t.Size() != max(size, 1) || t.ExpireAfter() != expire.Truncate(time.Millisecond) || *t.Store() != store || t.Origins() != origins {
		return nil
	}
	if keyLen <= 0 {
		keyLen = 32
	}
	if t.KeyLen() != keyLen {
		return nil
	}
	return t
}

// inherit copies old's state into p, which is not serving yet. The
// servers old's backends have that their configuration file does not
// (added at runtime) are added to the backend of the same name, unless the
// new file defines a server of the same name (the file wins), keeping
// their id when no server of the file has it. For a server whose backend
// and name stay:
//   - the admin state, unless the configuration's `disabled` changed (the
//     file wins then, as HAProxy's server-state-file when the config moved);
//   - the user weight, unless the configured weight changed;
//   - the address and maxconn set at runtime, unless the configured ones
//     changed;
//   - the operational state and last change when the server is still
//     checked (an unchecked server is UP);
//   - its slowstart progress;
//   - the counters (counterCarry).
//
// Frontends keep their counters and a runtime maxconn, the process its
// runtime maxconn, when the configured one stays.
func (p *Proxy) inherit(old *Proxy) {
	if old.Conf.Global.MaxConn == p.Conf.Global.MaxConn {
		p.globalSlots.setMax(old.MaxConn())
	}
	for _, fe := range p.Frontends {
		ofe := old.Frontend(fe.Name)
		if ofe == nil {
			continue
		}
		if ofe.Conf.MaxConn == fe.Conf.MaxConn {
			fe.slots.setMax(ofe.MaxConn())
		}
		p.carry(&ofe.Counters, &fe.Counters)
		p.carryInt(&ofe.MaxconnHits, &fe.MaxconnHits)
		p.carryInt(&ofe.DeniedConn, &fe.DeniedConn)
		p.carryList(ofe.H2.Cumulative(), fe.H2.Cumulative())
		p.carryList(ofe.SSL.cumulative(), fe.SSL.cumulative())
		p.carryInt(&ofe.ProxyErrors, &fe.ProxyErrors)
	}
	for _, b := range p.Backends {
		ob := old.Backend(b.Name)
		if ob == nil {
			continue
		}
		p.carry(&ob.Counters, &b.Counters)
		b.state.inherit(&ob.state)            // backend last change and downtime (snapshot_obs.go)
		b.carryDynamic(ob, p.fds, time.Now()) // servers added at runtime (servers.go)
		p.carryList(ob.H2.Cumulative(), b.H2.Cumulative())
		p.carryList(ob.SSL.cumulative(), b.SSL.cumulative())
		ob.mu.Lock()
		b.mu.Lock()
		for _, s := range b.Servers() {
			if os := ob.Server(s.Name); os != nil {
				inheritServer(s, os)
				p.carry(&os.Counters, &s.Counters)
				p.carryList(os.SSL.cumulative(), s.SSL.cumulative())
			}
		}
		b.rebuildLocked()
		b.mu.Unlock()
		ob.mu.Unlock()
	}
}

// inheritServer copies old's runtime state into s (see inherit). Both
// backends' locks are held.
func inheritServer(s, old *Server) {
	if s.Conf.Disabled == old.Conf.Disabled {
		s.admin.Store(old.admin.Load())
	}
	if s.InitialWeight == old.InitialWeight {
		s.UserWeight.Store(old.UserWeight.Load())
	}
	if s.Conf.Address == old.Conf.Address {
		s.addr.Store(old.addr.Load())
	}
	if s.Conf.MaxConn == old.Conf.MaxConn {
		s.maxConnSet.Store(old.maxConnSet.Load())
	}
	if s.Conf.Check || s.Conf.Agent != nil {
		s.op.Store(old.op.Load())
		s.lastChange.Store(old.lastChange.Load())
	} else if old.Op() == OpUp {
		s.lastChange.Store(old.lastChange.Load())
	}
	if s.Conf.Slowstart > 0 {
		s.bal.rampStart = old.bal.rampStart
		if s.InitialWeight == old.InitialWeight { // a ramp cut short stays where it was
			s.bal.eweight, s.bal.frozen = old.bal.eweight, old.bal.frozen
		}
	}
}

// counterCarry is one set of counters inherited through a reload: what
// from had counted when the new proxy was built (base), added to to at
// once; Retire adds what from counted after that.
type counterCarry struct {
	from, to []*atomic.Int64
	base     []int64
}

// carry adds from's cumulative counters to to's and remembers them for
// Retire; the peaks (smax, rate_max, qtime_max...) take the larger value
// and the rates and averages continue from from's.
func (p *Proxy) carry(from, to *Counters) {
	p.carryList(from.cumulative(), to.cumulative())
	p.carryObservations(from, to) // histograms, history, obs counters (history.go)
	for _, m := range [][2]*atomic.Int64{
		{&from.Smax, &to.Smax}, {&from.rateMax, &to.rateMax}, {&from.reqRateMax, &to.reqRateMax},
		{&from.qtimeMax, &to.qtimeMax}, {&from.lastSess, &to.lastSess},
	} {
		storeMax(m[1], m[0].Load())
	}
	for _, f := range [][2]*FreqCtr{{&from.SessRate, &to.SessRate}, {&from.ReqRate, &to.ReqRate}} {
		f[1].sec.Store(f[0].sec.Load())
		f[1].cur.Store(f[0].cur.Load())
		f[1].prev.Store(f[0].prev.Load())
	}
	for _, a := range [][2]*SlidingAvg{{&from.Qtime, &to.Qtime}, {&from.Ctime, &to.Ctime}, {&from.Rtime, &to.Rtime}, {&from.Ttime, &to.Ttime}} {
		a[1].sum.Store(a[0].sum.Load())
		a[1].n.Store(a[0].n.Load())
	}
}

// carryInt is carry for one cumulative counter.
func (p *Proxy) carryInt(from, to *atomic.Int64) {
	p.carryList([]*atomic.Int64{from}, []*atomic.Int64{to})
}

func (p *Proxy) carryList(from, to []*atomic.Int64) {
	c := counterCarry{from: from, to: to, base: make([]int64, len(from))}
	for i := range from {
		c.base[i] = from[i].Load()
		to[i].Add(c.base[i])
	}
	p.carried = append(p.carried, c)
}

// cumulative returns the counters that only grow, in a fixed order.
func (c *Counters) cumulative() []*atomic.Int64 {
	return []*atomic.Int64{
		&c.Stot, &c.Bin, &c.Bout, &c.Dreq, &c.Ereq, &c.Econ, &c.Eresp, &c.Wretr, &c.Wredis,
		&c.ReqTot, &c.Hrsp[0], &c.Hrsp[1], &c.Hrsp[2], &c.Hrsp[3], &c.Hrsp[4], &c.Hrsp[5],
		&c.Lbtot, &c.CliAbrt, &c.SrvAbrt, &c.Dresp,
	}
}

// StartFrom starts p, built by NewFrom(old, ...), in old's place: it opens
// the binds that old does not have and takes over old's listeners whose
// address stays, matched by the configured address or by the address a
// listener is bound to (so a bind on port 0 can be kept by naming the port
// it got). If a bind cannot be opened, StartFrom returns the error and old
// keeps serving, unchanged.
//
// The hand-over of each listener stops old's accept loop on it (Accept is
// woken by a past deadline) without closing it, then starts p's: a
// connection arriving meanwhile waits in the kernel backlog. Connections
// old accepted stay on old; Retire then stops old.
func (p *Proxy) StartFrom(old *Proxy) error {
	type held struct {
		fe *Frontend
		a  *acceptor
	}
	byAddr := map[string]held{}
	for _, fe := range old.Frontends {
		fe.mu.Lock()
		for i, a := range fe.listeners {
			byAddr[a.l.Addr().String()] = held{fe, a}
			if i < len(fe.Conf.Binds) && !portZero(fe.Conf.Binds[i]) {
				byAddr[fe.Conf.Binds[i]] = held{fe, a}
			}
		}
		fe.mu.Unlock()
	}
	inherited := map[string]net.Listener{}
	from := map[net.Listener]held{}
	for _, fe := range p.Frontends {
		for _, addr := range fe.Conf.Binds {
			h, ok := byAddr[addr]
			if !ok {
				continue
			}
			if _, taken := from[h.a.l]; taken {
				continue // conf refuses a bind twice; be safe anyway
			}
			inherited[addr] = h.a.l
			from[h.a.l] = h
		}
	}
	p.initNetIO(old)
	if err := p.open(inherited); err != nil {
		p.dropNetIO()
		return err
	}
	// The process's start, as its counters: both carry over (show info's
	// Uptime_sec and Start_time_sec then agree with CumReq and CumConns).
	p.started = old.started
	// Link old's frontends to p's before old's listeners move here: a
	// keep-alive connection of old's own predecessor, still retiring, looks
	// for a frontend listening on its bind along the chain of successors,
	// and old stops listening at the hand-over below, before Retire runs.
	p.linkSuccessors(old)
	p.serve(func(l net.Listener) {
		if h, ok := from[l]; ok {
			h.fe.handOver(h.a)
		}
	})
	return nil
}

// portZero reports whether addr asks for any free port.
func portZero(addr string) bool {
	_, port, err := net.SplitHostPort(addr)
	return err == nil && (port == "0" || port == "")
}

// handOver removes a from fe's listeners, so that fe's stop does not close
// it, and stops its accept loop, returning once the loop has returned.
// The listener stays open.
func (fe *Frontend) handOver(a *acceptor) {
	fe.mu.Lock()
	for i, x := range fe.listeners {
		if x == a {
			fe.listeners = append(fe.listeners[:i:i], fe.listeners[i+1:]...)
			break
		}
	}
	fe.mu.Unlock()
	a.cancel()
	d, ok := a.l.(interface{ SetDeadline(time.Time) error })
	if ok {
		d.SetDeadline(time.Unix(1, 0)) // wakes a blocked Accept at once
	}
	<-a.done
	if ok {
		d.SetDeadline(time.Time{})
	}
}

// Retire stops old, which p replaced (NewFrom then StartFrom), within ctx
// as Shutdown does, then adds to p's counters what old's counted since p
// was built. When several reloads follow each other, each Retire settles
// only after the previous one did, so that no count is lost in the chain.
// It returns Shutdown's error.
func (p *Proxy) Retire(ctx context.Context, old *Proxy) error {
	p.linkSuccessors(old) // keep-alive connections move to p (handoff.go)
	p.retiring.Store(old)
	err := old.Shutdown(ctx)
	p.retiring.Store(nil)
	<-old.settled // old's own predecessor has added its last counts
	for _, c := range p.carried {
		for i := range c.from {
			c.to[i].Add(c.from[i].Load() - c.base[i])
		}
	}
	p.carried = nil // let old go
	close(p.settled)
	return err
}
