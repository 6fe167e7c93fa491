package lb

// Smooth weighted round-robin ("balance roundrobin"), by earliest deadline
// first.
//
// Algorithm: a server of weight w owns the deadlines (2k-1)/(2w) for
// k = 1, 2, ... on a virtual time axis: the midpoints of w equal slots in
// every unit of time. Each pick takes the server with the earliest pending
// deadline (lowest index on ties) and moves it to its next one. Every unit
// interval (t, t+1] holds exactly w deadlines of each server, so every cycle
// of sum(weights) picks gives each server exactly its weight, in the same
// order, and midpoints spread each server's picks evenly over the cycle
// (3:2:1 gives s1 s2 s1 s3 s2 s1). This is Envoy's EdfScheduler with exact
// rational deadlines instead of doubles, so ties are real ties.
//
// Cost per pick: O(log n) under one mutex, in a 4-ary heap of the usable
// servers (half the depth of a binary heap, and a node's children share a
// cache line or two), about 7 levels at 10,000 servers. Dynamic: Rebuild
// applies a weight change to the next pick, by giving the server its first
// deadline of the new weight after the current virtual time; a server that
// comes up joins the same way, so it neither waits a cycle nor catches up
// on missed turns.
//
// A full server found at the top of the heap leaves it ("parked") until a
// release frees one of its slots, so a pick skips each full server once,
// not at every pick. It keeps its deadline while parked, so parking does
// not let it jump the queue when it comes back.

import (
	"sync"
)

// rrRebase is the virtual time past which every deadline is shifted back
// by a whole number of cycles, so that numerators times denominators (at
// most 2^34 * 2^13) never overflow 64 bits. Shifting by whole units keeps
// every deadline's place in its cycle.
const rrRebase = 1 << 20

// rrEntry is one server in the heap: its pending deadline num/den, with num
// odd and den twice its weight.
type rrEntry struct {
	num, den uint64
	s        *Server
}

// rrState is what roundRobin remembers of the server of the same Index.
type rrState struct {
	srv    *Server // whose state this is (a slot is reused after a deletion)
	gen    uint64  // == roundRobin.gen while srv is in the usable set
	parked bool    // full: out of the heap until a slot frees
	num    uint64  // deadline numerator, kept while parked
	den    uint64
}

// roundRobin is the state of one backend's roundrobin. Lock: mu guards
// everything; Pick, Rebuild and the hooks all take it.
type roundRobin struct {
	mu     sync.Mutex
	heap   []rrEntry
	st     []rrState // by Server.Index
	gen    uint64    // generation of the current usable set
	nowNum uint64    // virtual time: the latest deadline consumed, nowNum/nowDen
	nowDen uint64
}

// parseRoundRobin checks "roundrobin".
func parseRoundRobin(a Args) (Balance, error) {
	return Balance{build: func(Config) Algorithm { return NewRoundRobin() }}, noArgs("roundrobin", a)
}

// NewRoundRobin returns an empty roundrobin algorithm; the backend fills it
// with Rebuild.
func NewRoundRobin() Algorithm { return newRoundRobin() }

func newRoundRobin() *roundRobin { return &roundRobin{nowDen: 1} }

// less orders heap entries by deadline, then by server index.
func (rr *roundRobin) less(i, j int) bool {
	a, b := &rr.heap[i], &rr.heap[j]
	x, y := a.num*b.den, b.num*a.den
	if x != y {
		return x < y
	}
	return a.s.Index < b.s.Index
}

// up and down restore the order of the 4-ary heap around entry i: the
// children of i are 4i+1 to 4i+4.
func (rr *roundRobin) up(i int) {
	for i > 0 {
		p := (i - 1) / 4
		if !rr.less(i, p) {
			return
		}
		rr.heap[i], rr.heap[p] = rr.heap[p], rr.heap[i]
		i = p
	}
}

func (rr *roundRobin) down(i int) {
	for {
		c := rr.minChild(i)
		if c < 0 || !rr.less(c, i) {
			return
		}
		rr.heap[i], rr.heap[c] = rr.heap[c], rr.heap[i]
		i = c
	}
}

// minChild returns the child of i with the earliest deadline, or -1.
func (rr *roundRobin) minChild(i int) int {
	first := 4*i + 1
	if first >= len(rr.heap) {
		return -1
	}
	c := first
	for j := first + 1; j < min(first+4, len(rr.heap)); j++ {
		if rr.less(j, c) {
			c = j
		}
	}
	return c
}

// joinNum returns the numerator of the first deadline of weight den/2
// strictly after the current virtual time: the smallest odd num with
// num/den > nowNum/nowDen.
func (rr *roundRobin) joinNum(den uint64) uint64 {
	q := rr.nowNum * den / rr.nowDen
	if q%2 == 0 {
		return q + 1
	}
	return q + 2
}

// Rebuild implements Algorithm. A server that stays with the same weight
// keeps its deadline; a new one, or one whose weight changed, joins at the
// current virtual time.
func (rr *roundRobin) Rebuild(servers []*Server) {
	rr.mu.Lock()
	defer rr.mu.Unlock()
	for _, e := range rr.heap { // remember the deadlines of the old set
		st := &rr.st[e.s.Index]
		st.num, st.den = e.num, e.den
	}
	rr.gen++
	if n := maxIndex(servers) + 1; n > len(rr.st) {
		rr.st = append(rr.st, make([]rrState, n-len(rr.st))...)
	}
	heap := make([]rrEntry, 0, len(servers))
	for _, s := range servers {
		st := &rr.st[s.Index]
		den := 2 * uint64(s.Weight)
		if st.srv != s || st.gen != rr.gen-1 || st.den != den { // new in the set, or reweighted
			st.num, st.den = rr.joinNum(den), den
		}
		st.srv, st.gen, st.parked = s, rr.gen, false // a full one is parked by Pick
		heap = append(heap, rrEntry{num: st.num, den: den, s: s})
	}
	rr.heap = heap
	rr.heapify()
}

// Pick implements Algorithm.
func (rr *roundRobin) Pick(_ *Request, avoid *Server) *Server {
	rr.mu.Lock()
	defer rr.mu.Unlock()
	for len(rr.heap) > 0 {
		i := 0
		if rr.heap[0].s == avoid && len(rr.heap) > 1 {
			i = rr.minChild(0) // the second earliest deadline
		}
		e := &rr.heap[i]
		if e.s.Full() {
			rr.park(i)
			continue
		}
		if e.num*rr.nowDen > rr.nowNum*e.den {
			rr.nowNum, rr.nowDen = e.num, e.den
		}
		e.num += 2
		s := e.s
		rr.down(i)
		if rr.nowNum > rrRebase*rr.nowDen {
			rr.rebase()
		}
		return s
	}
	return nil
}

// park takes heap entry i out of the heap because its server is full.
// rr.mu must be held.
func (rr *roundRobin) park(i int) {
	e := rr.heap[i]
	st := &rr.st[e.s.Index]
	st.num, st.den, st.parked = e.num, e.den, true
	last := len(rr.heap) - 1
	rr.heap[i] = rr.heap[last]
	rr.heap = rr.heap[:last]
	if i < last {
		rr.down(i)
		rr.up(i)
	}
}

// unpark puts a parked server back in the heap, at its own deadline or at
// the current virtual time, whichever is later. rr.mu must be held.
func (rr *roundRobin) unpark(s *Server) {
	st := &rr.st[s.Index]
	num := st.num
	if j := rr.joinNum(st.den); j > num {
		num = j
	}
	st.parked = false
	rr.heap = append(rr.heap, rrEntry{num: num, den: st.den, s: s})
	rr.up(len(rr.heap) - 1)
}

// rebase moves the virtual time and every deadline back by a whole number
// of units. rr.mu must be held.
func (rr *roundRobin) rebase() {
	t := rr.nowNum/rr.nowDen - 2
	shift := func(num, den uint64) uint64 {
		if num > t*den {
			return num - t*den // an odd minus an even: still odd
		}
		return 1
	}
	rr.nowNum -= t * rr.nowDen
	for i := range rr.heap {
		rr.heap[i].num = shift(rr.heap[i].num, rr.heap[i].den)
	}
	for i := range rr.st {
		if st := &rr.st[i]; st.gen == rr.gen && st.parked {
			st.num = shift(st.num, st.den)
		}
	}
	rr.heapify()
}

// heapify orders the whole heap. rr.mu must be held.
func (rr *roundRobin) heapify() {
	for i := (len(rr.heap) - 2) / 4; i >= 0; i-- {
		rr.down(i)
	}
}

// ConnTaken implements ConnObserver. Parking is lazy (Pick parks a full
// server when it reaches the top of the heap), so a session start costs
// nothing here.
func (rr *roundRobin) ConnTaken(*Server) {}

// ConnReleased implements ConnObserver: a parked server with a free slot
// again goes back in the heap. Servers without maxconn are never parked
// and cost no lock. A late call for a server no longer in the set (or no
// longer in the backend, its slot another server's) changes nothing.
func (rr *roundRobin) ConnReleased(s *Server) {
	if s.MaxConn.Load() == 0 {
		return
	}
	rr.mu.Lock()
	defer rr.mu.Unlock()
	if s.Index >= len(rr.st) {
		return
	}
	if st := &rr.st[s.Index]; st.srv == s && st.gen == rr.gen && st.parked && !s.Full() {
		rr.unpark(s)
	}
}

// maxIndex returns the highest Index in servers, or -1.
func maxIndex(servers []*Server) int {
	m := -1
	for _, s := range servers {
		m = max(m, s.Index)
	}
	return m
}

var (
	_ Algorithm    = (*roundRobin)(nil)
	_ ConnObserver = (*roundRobin)(nil)
)
