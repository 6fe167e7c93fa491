package lb

// Static weighted round-robin ("balance static-rr"), and the map that
// map-based hashing looks hashes up in (HAProxy src/lb_map.c).
//
// Algorithm: at Rebuild, the weights are divided by their greatest common
// divisor and one cycle of roundrobin's order is written into a map of
// sum(weights) slots: the servers' deadlines (2k-1)/(2w), sorted, ties by
// index. A pick takes the slot after the previous one (a shared atomic
// counter); a hash h takes slot h % len(map). With nothing changing,
// static-rr gives exactly roundrobin's sequence.
//
// Cost per pick: O(1) and lock-free, plus one step per full (or avoided)
// server met on the way: those are skipped by walking the map, which is
// O(sum(weights)) at worst when nearly every server is full. Rebuild is
// O(W log W) for W = sum(weights)/gcd. Static: the backend refuses weight
// changes other than to 0% or 100% of the initial weight, and a server going
// up or down recomputes the whole map, so map-based hashing moves most keys.

import (
	"slices"
	"sync/atomic"
)

// rrMap is one computed map; it is never modified once published.
type rrMap struct {
	slots   []*Server // one cycle of picks
	servers []*Server // the usable set it was built from
}

// staticRR is the state of one backend's static-rr, or the map of a
// map-based hashing algorithm.
type staticRR struct {
	m    atomic.Pointer[rrMap]
	next atomic.Uint64 // the next slot for round-robin picks, modulo len
}

// parseStaticRR checks "static-rr".
func parseStaticRR(a Args) (Balance, error) {
	return Balance{build: func(Config) Algorithm { return newStaticRR() }}, noArgs("static-rr", a)
}

func newStaticRR() *staticRR {
	rr := &staticRR{}
	rr.m.Store(&rrMap{})
	return rr
}

// Rebuild implements Algorithm: it computes a new map and publishes it.
func (rr *staticRR) Rebuild(servers []*Server) {
	rr.m.Store(buildMap(servers))
}

// buildMap writes one roundrobin cycle of servers into a map.
func buildMap(servers []*Server) *rrMap {
	g := 0
	for _, s := range servers {
		g = gcd(g, s.Weight)
	}
	type slot struct {
		num, den uint64 // deadline num/den
		s        *Server
	}
	var slots []slot
	for _, s := range servers {
		w := uint64(s.Weight / g)
		for k := uint64(1); k <= w; k++ {
			slots = append(slots, slot{2*k - 1, 2 * w, s})
		}
	}
	slices.SortFunc(slots, func(a, b slot) int {
		x, y := a.num*b.den, b.num*a.den
		switch {
		case x < y:
			return -1
		case x > y:
			return 1
		}
		return a.s.Index - b.s.Index
	})
	m := &rrMap{slots: make([]*Server, len(slots)), servers: servers}
	for i, sl := range slots {
		m.slots[i] = sl.s
	}
	return m
}

// Pick implements Algorithm: the next slot of the map.
func (rr *staticRR) Pick(_ *Request, avoid *Server) *Server {
	m := rr.m.Load()
	if len(m.slots) == 0 {
		return nil
	}
	return m.from(rr.next.Add(1)-1, avoid, AffinityMaxConn)
}

// pickHash returns the server of slot h % len(map) (HAProxy's
// map_get_server_hash), or the next one after it that affinity a does not
// pass by (hash_preserve_affinity).
func (rr *staticRR) pickHash(h uint32, avoid *Server, a Affinity) *Server {
	m := rr.m.Load()
	if len(m.slots) == 0 {
		return nil
	}
	return m.from(uint64(h), avoid, a)
}

// from returns the server of slot i % len(m.slots), or the first server
// after it that is not avoid and that affinity a does not pass by (with
// AffinityMaxConn: that is not full); avoid itself as a last resort; nil
// when every server is passed by.
func (m *rrMap) from(i uint64, avoid *Server, a Affinity) *Server {
	n := uint64(len(m.slots))
	i %= n
	avoided := false
	for j := uint64(0); j < n; j++ {
		s := m.slots[i]
		if s == avoid {
			avoided = true
		} else if !s.passedBy(a) {
			return s
		}
		if i++; i == n {
			i = 0
		}
	}
	if avoided && !avoid.passedBy(a) {
		return avoid
	}
	return nil
}

// gcd returns the greatest common divisor of a and b (gcd(0, b) = b).
func gcd(a, b int) int {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

var _ Algorithm = (*staticRR)(nil)
