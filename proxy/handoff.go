package proxy

// Keep-alive client connections across a reload (issue 11). An HTTP
// connection that the old proxy accepted finishes its in-flight request on
// the old configuration, then moves to the frontend of the same name in
// the new proxy, which serves its next requests: a reload closes no
// keep-alive connection, so a client that pipelines or sends its next
// request at once (wrk, most load generators, non-idempotent requests that
// a browser may not retry) sees no error. HAProxy's old process closes
// idle keep-alive connections at a reload instead (unless
// idle-close-on-response); fulcrum can do better because both
// configurations live in one process.
//
// A connection moves only to a frontend that is in http mode, whose proxy
// is not stopping itself (a later reload: the chain of successors is
// followed) and that still listens on the address that accepted it: one
// whose bind was removed closes after its in-flight work, as before. TCP
// mode connections stay on the old proxy until they end.
//
// Moving takes the connection out of the old frontend's set, session count,
// slots and stop wait (p.wg) and into the new one's, under both frontends'
// locks (always old then new). An idle connection is moved by the old
// proxy's stop (closeIdle) while its goroutine waits for the next request;
// the state connMoving makes that goroutine wait (setActive) until the move
// is done, and it then picks up its new owner (httpSession.follow). A busy
// connection moves itself when its request ends.

import "github.com/fulcrum-proxy/fulcrum/conf"

// linkSuccessors makes each HTTP frontend of p the successor of old's
// frontend of the same name, if that one is in http mode too.
func (p *Proxy) linkSuccessors(old *Proxy) {
	for _, ofe := range old.Frontends {
		nfe := p.Frontend(ofe.Name)
		if ofe.Conf.Mode == conf.ModeHTTP && nfe != nil && nfe.Conf.Mode == conf.ModeHTTP {
			ofe.successor.Store(nfe)
		}
	}
}

// canHandOff reports whether cc, owned by fe, would find a frontend to
// move to; a response then need not close the connection.
func (fe *Frontend) canHandOff(cc *clientConn) bool {
	for nfe := fe.successor.Load(); nfe != nil; nfe = nfe.successor.Load() {
		nfe.mu.Lock()
		ok := !nfe.p.stopping.Load() && nfe.listensOn(*cc.bind)
		nfe.mu.Unlock()
		if ok {
			return true
		}
	}
	return false
}

// handOff moves cc, an idle connection owned by fe, to fe's successor and
// reports whether it moved (or was moved already by the stop's closeIdle,
// which may come first once cc is idle). A connection closed meanwhile by
// the stop does not move. It is called by the connection's goroutine when
// its request ended on a stopping proxy.
func (fe *Frontend) handOff(cc *clientConn) bool {
	fe.mu.Lock()
	defer fe.mu.Unlock()
	if cc.owner.Load() != fe {
		return true
	}
	if !cc.state.CompareAndSwap(connIdle, connMoving) {
		return false
	}
	moved := fe.handOffLocked(cc)
	cc.state.Store(connIdle)
	return moved
}

// handOffActive moves cc, owned by fe and marked active by its goroutine
// for a request that has just arrived, to fe's successor and reports
// whether it moved (a stop's closeIdle moves only idle connections, so
// none moves it meanwhile).
func (fe *Frontend) handOffActive(cc *clientConn) bool {
	fe.mu.Lock()
	defer fe.mu.Unlock()
	if cc.owner.Load() != fe {
		return true
	}
	return fe.handOffLocked(cc)
}

// handOffLocked moves cc, marked connMoving, to the first successor of fe
// that adopts it. fe.mu is held.
func (fe *Frontend) handOffLocked(cc *clientConn) bool {
	if !fe.conns.has(cc) {
		return false
	}
	fe.conns.remove(cc) // out of fe's list before it enters another's
	for nfe := fe.successor.Load(); nfe != nil; nfe = nfe.successor.Load() {
		if nfe.adopt(cc) {
			fe.Counters.sessionEnd()
			fe.p.releaseSlots(fe)
			fe.p.wg.Done()
			return true
		}
	}
	fe.conns.add(cc)
	return false
}

// adopt takes cc over unless fe's proxy is stopping or fe no longer
// listens on cc's bind. The connection's slots are taken even beyond
// maxconn: it was admitted already, and a limit is never a reason to cut a
// connection (the same rule as a lowered limit, see limiter).
func (fe *Frontend) adopt(cc *clientConn) bool {
	fe.mu.Lock()
	defer fe.mu.Unlock()
	// Shutdown sets stopping before it takes fe.mu (closeListeners) and
	// waits on p.wg only after that: seen false here, the Add below comes
	// before the Wait.
	if fe.p.stopping.Load() || !fe.listensOn(*cc.bind) {
		return false
	}
	fe.p.wg.Add(1)
	fe.slots.force()
	fe.p.globalSlots.force()
	fe.p.fds.adoptConn()
	storeMax(&fe.Counters.Smax, fe.Counters.Scur.Add(1))
	fe.conns.add(cc)
	cc.owner.Store(fe)
	return true
}

// listensOn reports whether one of fe's listeners has address bind.
// fe.mu is held.
func (fe *Frontend) listensOn(bind string) bool {
	for _, a := range fe.listeners {
		if a.addr == bind {
			return true
		}
	}
	return false
}
