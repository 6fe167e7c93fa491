package proxy

// The process's file descriptor budget (issue 16: with `ulimit -n 256`,
// 771 of 1,000 concurrent clients got a 503 because the server connections
// failed with EMFILE, and idle pooled connections kept the table full).

import (
	"sync"
	"sync/atomic"

	"github.com/fulcrum-proxy/fulcrum/proxy/http1"
)

// fdBudget is what the file descriptors the process may use for its
// connections are spent on: each client connection takes two (itself and
// the server connection its request leads to), each idle pooled server
// connection one. The proxies a reload chains share one budget (build), as
// they share one descriptor table.
//
// With a limit (Proxy.LimitDescriptors), the process does not run out of
// descriptors, whatever maxconn says:
//   - an accept waits, before calling accept(2), until two are free,
//     closing idle pooled connections to make room (HAProxy kills idle
//     connections past tune.pool-high-fd-ratio for the same reason); the
//     client waits in the kernel's backlog meanwhile, as past maxconn;
//   - a server connection that would go idle into a pool is closed instead
//     when no descriptor is free (HAProxy's tune.pool-low-fd-ratio).
//
// Without a limit it only counts. Locks: slots and idle are atomics; mu
// guards proxies and is never held while a pool's lock is taken.
type fdBudget struct {
	slots limiter      // descriptors taken; max = the limit, 0 = none
	idle  atomic.Int64 // idle pooled connections, counted in slots

	mu      sync.Mutex
	proxies map[*Proxy]struct{} // whose pools may be emptied to make room
}

func newFDBudget() *fdBudget { return &fdBudget{proxies: map[*Proxy]struct{}{}} }

// connFDs is what a client connection takes from the budget: its own
// descriptor and its server connection's.
const connFDs = 2

// acquireConn takes a client connection's descriptors, closing idle pooled
// connections while too few are free and waiting when none is left. It
// returns false, with nothing taken, when done is closed first. Called by
// the accept loop before accept(2).
func (b *fdBudget) acquireConn(done <-chan struct{}) bool {
	return b.slots.acquireN(connFDs, done, b.closeOneIdle)
}

// releaseConn returns a client connection's descriptors.
func (b *fdBudget) releaseConn() { b.slots.releaseN(connFDs) }

// adoptConn takes a client connection's descriptors without waiting: the
// connection is open already (it moves between proxies at a reload,
// handoff.go; the one it leaves releases them).
func (b *fdBudget) adoptConn() { b.slots.forceN(connFDs) }

// AdmitIdle takes a descriptor for a connection going idle into a pool,
// and reports false, taking nothing, when none is free: the connection
// must then be closed (http1.Budget). A nil budget (a backend built alone
// in a test) admits everything.
func (b *fdBudget) AdmitIdle() bool {
	if b == nil {
		return true
	}
	if !b.slots.tryAcquireN(1) {
		return false
	}
	b.idle.Add(1)
	return true
}

// LeaveIdle returns the descriptor of a pooled connection leaving its pool:
// reused by a client connection (which holds its own) or closed
// (http1.Budget).
func (b *fdBudget) LeaveIdle() {
	if b == nil {
		return
	}
	b.idle.Add(-1)
	b.slots.releaseN(1)
}

// register adds p's pools to those closeOneIdle may empty; unregister
// removes them (at the end of p's Shutdown).
func (b *fdBudget) register(p *Proxy) {
	b.mu.Lock()
	b.proxies[p] = struct{}{}
	b.mu.Unlock()
}

func (b *fdBudget) unregister(p *Proxy) {
	b.mu.Lock()
	delete(b.proxies, p)
	b.mu.Unlock()
}

// closeOneIdle closes the longest idle pooled connection of the first
// server that has one, and reports whether there was one. Its cost is a
// scan of the servers, paid only when descriptors are short.
func (b *fdBudget) closeOneIdle() bool {
	if b.idle.Load() <= 0 {
		return false
	}
	b.mu.Lock()
	ps := make([]*Proxy, 0, len(b.proxies))
	for p := range b.proxies {
		ps = append(ps, p)
	}
	b.mu.Unlock()
	for _, p := range ps {
		for _, be := range p.Backends {
			for _, s := range be.Servers() {
				if s.up.Pool.CloseOldest() {
					return true
				}
			}
		}
	}
	return false
}

// LimitDescriptors bounds the file descriptors the process's connections
// may use to n, 0 = no bound (the default). n is RLIMIT_NOFILE less what
// the process keeps for everything else (listeners, checks, Runtime API
// sessions, logs); cmd/fulcrum computes it at start. Past the bound,
// accepting waits and idle pooled connections are closed (see fdBudget):
// connections wait in the backlog instead of failing with EMFILE. The
// bound is the process's: proxies that replace p at a reload share it.
func (p *Proxy) LimitDescriptors(n int) { p.fds.slots.setMax(n) }

var _ http1.Budget = (*fdBudget)(nil)
