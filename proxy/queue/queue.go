// Package queue holds the requests that wait for a server slot: one queue
// per server for requests pinned to it, one per backend for the others, as
// HAProxy's pendconn (src/queue.c).
//
// Invariants:
//
//   - A Pending is in exactly one of three places: the queue of the server it
//     is pinned to (Enqueue with srv >= 0), the backend queue (srv < 0), or
//     unlinked. It is linked once, by Enqueue, and unlinked once: by a
//     dispatcher that hands it a slot (Served then returns the server), or
//     by Cancel (timeout, client gone). Redistribute moves it, linked, from
//     a server's queue to the backend queue (HAProxy's
//     pendconn_redistribute, when the server stops taking traffic), and
//     marks it Redistributed; it is never moved back. All of these run
//     under Queues.mu; nothing else touches the links.
//
//   - Every queue is in arrival order: seq grows by one per Enqueue, under
//     mu, across the backend queue and all server queues of one Queues.
//     A server with a free slot serves the older of the heads of its own
//     queue and of the backend queue; pinned requests are never served by
//     another server.
//
//   - waiting is the number of linked Pendings, changed under mu and read
//     without it. Callers keep the lost-wakeup rule: a slot is released
//     (the server's session count lowered) before Dispatch reads waiting,
//     and Enqueue raises waiting before it tries the slots; so a slot freed
//     while a request queues is seen by one side or the other.
//
//   - A freed slot goes to one waiter (no thundering herd): the dispatcher
//     takes the slot through Slots.Take under mu and hands it over; the
//     waiter owns the session when it wakes, and must release it (or give
//     it back with the server's release path) if it no longer wants it.
//
//   - Servers come and go (the Runtime API's add and del server): a server's
//     queue is indexed by the server's slot, which the backend gives it
//     (AddServer) and takes back (RemoveServer) only while nothing waits
//     there; a removed slot has no queue, Enqueue refuses it and the
//     dispatchers skip it, so no request is ever linked where nobody would
//     serve it. The backend queue and every waiting request stay as they
//     are through these changes.
//
// Lock order: the caller's backend lock (if any), then Queues.mu, then
// whatever Slots.Take takes (a server's balancing lock). Notify callbacks
// (Pending.Wake) run under mu and must not block.
package queue

import (
	"sync"
	"sync/atomic"
	"time"
)

// Slots is the backend as the dispatcher sees it.
type Slots interface {
	// Take reserves one session on the server of slot i if it has a free
	// slot (below its effective maxconn). For a request of the backend
	// queue (pinned false) the server must also be usable for new traffic.
	// Called under Queues.mu, only for a slot that has a queue (AddServer,
	// not yet RemoveServer); must not call back into the Queues.
	Take(i int, pinned bool) bool
}

// Waker is woken when its Pending is served. It is a request's connection
// blocked in a read (the HTTP waiting path): waking sets its read deadline
// in the past. It must not block.
type Waker interface {
	SetReadDeadline(t time.Time) error
}

// Pending is one request waiting for a slot (HAProxy's pendconn). Its zero
// value is ready for Enqueue; it may be reused after it was unlinked (served
// or cancelled) and its Ready channel drained.
type Pending struct {
	prev, next *Pending
	list       *list
	seq        uint64
	since      time.Time // when it was queued

	// served is the slot of the server that took it plus one, 0 while it
	// waits. Written under Queues.mu, read by the waiter without it.
	served atomic.Int32
	ready  chan struct{} // one token when served
	// moved is set by Redistribute, under mu.
	moved bool

	// Wake, if set, is also woken when the request is served.
	Wake Waker
}

// Ready returns a channel that receives once when p is served.
func (p *Pending) Ready() <-chan struct{} {
	if p.ready == nil {
		p.ready = make(chan struct{}, 1)
	}
	return p.ready
}

// Served returns the slot of the server that p was handed a session on,
// or -1 while it waits (or after it was cancelled before being served).
func (p *Pending) Served() int { return int(p.served.Load()) - 1 }

// Since returns when p was queued.
func (p *Pending) Since() time.Time { return p.since }

// Redistributed reports whether p was moved from its server's queue to the
// backend queue (Redistribute). The waiter reads it once Cancel returned.
func (p *Pending) Redistributed() bool { return p.moved }

// Reset prepares a served or cancelled Pending for reuse.
func (p *Pending) Reset() {
	select {
	case <-p.ready:
	default:
	}
	p.served.Store(0)
	p.moved = false
	p.Wake = nil
}

// list is one FIFO queue, intrusive and doubly linked. length mirrors n
// for readers without the lock (the backend queue's Len, a server's
// lb.Server.Queued).
type list struct {
	head, tail *Pending
	n          int
	max        int64 // highest n seen (qmax)
	length     *atomic.Int64
}

func (l *list) push(p *Pending) {
	p.list, p.prev, p.next = l, l.tail, nil
	if l.tail != nil {
		l.tail.next = p
	} else {
		l.head = p
	}
	l.tail = p
	l.grew()
}

// grew records one more request in l. mu must be held.
func (l *list) grew() {
	l.n++
	l.length.Store(int64(l.n))
	if int64(l.n) > l.max {
		l.max = int64(l.n)
	}
}

// insertBefore links p before at, or at the tail when at is nil.
func (l *list) insertBefore(p, at *Pending) {
	if at == nil {
		l.push(p)
		return
	}
	p.list, p.prev, p.next = l, at.prev, at
	if at.prev != nil {
		at.prev.next = p
	} else {
		l.head = p
	}
	at.prev = p
	l.grew()
}

func (l *list) remove(p *Pending) {
	if p.prev != nil {
		p.prev.next = p.next
	} else {
		l.head = p.next
	}
	if p.next != nil {
		p.next.prev = p.prev
	} else {
		l.tail = p.prev
	}
	p.prev, p.next, p.list = nil, nil, nil
	l.n--
	l.length.Store(int64(l.n))
}

// Queues are one backend's queues: the backend queue and one queue per
// server, indexed by the servers' slots (lb.Server.Index). Lock: mu guards
// the lists, the slots, seq and every Pending's links; waiting and the
// lengths are also kept in atomics for lock-free reads.
type Queues struct {
	mu      sync.Mutex
	seq     uint64
	backend list
	servers []*list // by slot; nil for a slot without a server

	waiting atomic.Int64 // linked Pendings, all queues
	blen    atomic.Int64 // the backend queue's length
}

// New returns the queues of a backend whose servers hold slots 0 to
// len(lens)-1, their queue lengths mirrored in lens (one counter per
// server, in order; the backend keeps them where its algorithm reads
// them, lb.Server.Queued). The counters are written under mu and may be
// read without it.
func New(lens []*atomic.Int64) *Queues {
	q := &Queues{}
	q.backend.length = &q.blen
	for i, l := range lens {
		q.AddServer(i, l)
	}
	return q
}

// AddServer gives slot i an empty queue, whose length is mirrored in
// length, for a server that joins the backend. The slot must have no
// queue (never used, or given back by RemoveServer).
func (q *Queues) AddServer(i int, length *atomic.Int64) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for len(q.servers) <= i {
		q.servers = append(q.servers, nil)
	}
	if q.servers[i] != nil {
		panic("queue: slot already has a server")
	}
	length.Store(0)
	q.servers[i] = &list{length: length}
}

// RemoveServer takes slot i's queue away, for a server that leaves the
// backend, and reports whether it did: not while requests wait in it
// (they would never be served). From then on Enqueue refuses the slot and
// the dispatchers skip it, until AddServer gives it to another server.
func (q *Queues) RemoveServer(i int) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if i >= len(q.servers) || q.servers[i] == nil {
		return true
	}
	if q.servers[i].n > 0 {
		return false
	}
	q.servers[i] = nil
	return true
}

// Waiting returns how many requests wait, all queues together. Lock-free.
func (q *Queues) Waiting() int64 { return q.waiting.Load() }

// Len returns how many requests wait in the queue of slot i (0 for a
// slot without a server), or in the backend queue for i < 0: the latter
// lock-free; a server's length is also its mirror (New, AddServer).
func (q *Queues) Len(i int) int64 {
	if i < 0 {
		return q.blen.Load()
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if l := q.slot(i); l != nil {
		return int64(l.n)
	}
	return 0
}

// Servers returns the number of slots, with or without a server.
func (q *Queues) Servers() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.servers)
}

// slot returns slot i's queue, nil when it has none. mu must be held.
func (q *Queues) slot(i int) *list {
	if i < 0 || i >= len(q.servers) {
		return nil
	}
	return q.servers[i]
}

// Enqueue links p at the tail of the queue of slot srv (a request pinned
// to its server) or of the backend queue (srv < 0), then serves whatever
// the free slots allow, oldest first, p included. It returns false,
// without linking p, when srv's queue already holds maxQueue requests
// (maxQueue 0: no limit) or srv has no server (RemoveServer): the caller
// tells the two apart by its server's state. The backend queue has no
// limit. p must be unlinked; now is when it queues.
func (q *Queues) Enqueue(p *Pending, srv int, maxQueue int, now time.Time, s Slots) bool {
	p.Ready()
	q.mu.Lock()
	defer q.mu.Unlock()
	l := &q.backend
	if srv >= 0 {
		if l = q.slot(srv); l == nil || (maxQueue > 0 && l.n >= maxQueue) {
			return false
		}
	}
	q.seq++
	p.seq, p.since = q.seq, now
	l.push(p)
	q.waiting.Add(1)
	q.serveAllLocked(s)
	return true
}

// Dispatch is called after a session on server i ended (its slot already
// released): while the server has a free slot, it hands it to the oldest
// request of its own queue or of the backend queue. Cheap when nothing
// waits (one atomic load).
func (q *Queues) Dispatch(i int, s Slots) {
	if q.waiting.Load() == 0 {
		return
	}
	q.mu.Lock()
	if q.slot(i) != nil {
		q.serveLocked(i, s)
	}
	q.mu.Unlock()
}

// DispatchAll serves every server's free slots, after limits changed (a
// server came up, its maxconn grew, the backend's load raised a dynamic
// limit).
func (q *Queues) DispatchAll(s Slots) {
	if q.waiting.Load() == 0 {
		return
	}
	q.mu.Lock()
	q.serveAllLocked(s)
	q.mu.Unlock()
}

// serveAllLocked serves the free slots of every server. Called with mu
// held.
func (q *Queues) serveAllLocked(s Slots) {
	for i, l := range q.servers {
		if l != nil {
			q.serveLocked(i, s)
		}
	}
}

// serveLocked hands the free sessions of slot i's server to the oldest
// waiters that it may serve. Called with mu held, for a slot with a queue.
func (q *Queues) serveLocked(i int, s Slots) {
	own := q.servers[i]
	for {
		p, l := own.head, own
		if b := q.backend.head; b != nil && (p == nil || b.seq < p.seq) {
			p, l = b, &q.backend
		}
		if p == nil || !s.Take(i, l == own) {
			// The backend's head may not go to i (unusable), but i's own
			// queue still may.
			if p != nil && l != own && own.head != nil && s.Take(i, true) {
				p, l = own.head, own
			} else {
				return
			}
		}
		l.remove(p)
		q.waiting.Add(-1)
		p.served.Store(int32(i) + 1)
		p.ready <- struct{}{}
		if p.Wake != nil {
			p.Wake.SetReadDeadline(time.Unix(1, 0))
		}
	}
}

// Redistribute moves every request waiting in server i's queue to the
// backend queue, where any usable server may serve it, and returns how
// many moved. The backend calls it when i stops taking traffic (DOWN,
// NOLB, DRAIN or MAINT) and `redispatch` lets its requests go elsewhere,
// as HAProxy's pendconn_redistribute: they keep their place in arrival
// order among the backend queue's (a merge by seq), are marked
// Redistributed, and are served at once where slots are free.
func (q *Queues) Redistribute(i int, s Slots) int {
	q.mu.Lock()
	defer q.mu.Unlock()
	from, to := q.slot(i), &q.backend
	if from == nil || from.n == 0 {
		return 0
	}
	n := 0
	at := to.head // the first backend request younger than the one moved
	for p := from.head; p != nil; p = from.head {
		from.remove(p)
		for at != nil && at.seq < p.seq {
			at = at.next
		}
		to.insertBefore(p, at)
		p.moved = true
		n++
	}
	q.serveAllLocked(s)
	return n
}

// Cancel unlinks p if it still waits (timeout, client gone) and returns -1;
// if a dispatcher served it meanwhile, it returns the server index: the
// caller then owns a session there and must release it.
func (q *Queues) Cancel(p *Pending) int {
	q.mu.Lock()
	defer q.mu.Unlock()
	if l := p.list; l != nil {
		l.remove(p)
		q.waiting.Add(-1)
		return -1
	}
	return p.Served()
}

// Info is one queue as `show queue` reports it.
type Info struct {
	Waiting int           // requests waiting now
	Max     int64         // most that ever waited at once (qmax)
	Oldest  time.Duration // how long the oldest has waited, 0 when none
}

// Info returns the queue of slot i (the backend queue for i < 0) at now;
// the zero Info for a slot without a server.
func (q *Queues) Info(i int, now time.Time) Info {
	q.mu.Lock()
	defer q.mu.Unlock()
	l := &q.backend
	if i >= 0 {
		if l = q.slot(i); l == nil {
			return Info{}
		}
	}
	in := Info{Waiting: l.n, Max: l.max}
	if l.head != nil {
		in.Oldest = now.Sub(l.head.since)
	}
	return in
}

// ResetMax makes each queue's peak (Max) its current length, as
// HAProxy's "clear counters" zeroes nbpend_max.
func (q *Queues) ResetMax() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.backend.max = int64(q.backend.n)
	for _, l := range q.servers {
		if l != nil {
			l.max = int64(l.n)
		}
	}
}

// Max returns the most requests that ever waited at once in the queue of
// slot i (the backend queue for i < 0; 0 for a slot without a server).
func (q *Queues) Max(i int) int64 {
	q.mu.Lock()
	defer q.mu.Unlock()
	if i < 0 {
		return q.backend.max
	}
	if l := q.slot(i); l != nil {
		return l.max
	}
	return 0
}
