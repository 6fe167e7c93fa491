package lb

import "sync"

// roundRobin is smooth weighted round-robin (the nginx scheme, also what
// HAProxy's roundrobin produces in effect: picks are spread so that over one
// cycle of sum(weights) picks each server is chosen exactly its weight times,
// and no server gets long runs).
//
// Each pick adds every server's weight to its running credit, takes the
// server with the highest credit (lowest index on ties) and subtracts the
// total weight from it. Cost per pick: O(n) under a mutex; weights may change
// at runtime (dynamic) and apply to the next pick. Servers of weight 0 are
// never in the set (the backend filters them out).
type roundRobin struct {
	mu      sync.Mutex
	servers []*Server
	weight  []int // copies of EffectiveWeight taken at Rebuild
	credit  []int
	total   int
}

// NewRoundRobin returns an empty roundrobin algorithm; the backend fills it
// with Rebuild.
func NewRoundRobin() Algorithm { return &roundRobin{} }

// Rebuild implements Algorithm. Credits of servers that stay in the set are
// kept, so a weight change does not restart the cycle.
func (rr *roundRobin) Rebuild(servers []*Server) {
	rr.mu.Lock()
	defer rr.mu.Unlock()
	old := make(map[*Server]int, len(rr.servers))
	for i, s := range rr.servers {
		old[s] = rr.credit[i]
	}
	rr.servers = servers
	rr.credit = make([]int, len(servers))
	rr.weight = make([]int, len(servers))
	rr.total = 0
	for i, s := range servers {
		rr.credit[i] = old[s]
		rr.weight[i] = s.EffectiveWeight
		rr.total += s.EffectiveWeight
	}
}

// Pick implements Algorithm.
func (rr *roundRobin) Pick(_ *Request, avoid *Server) *Server {
	rr.mu.Lock()
	defer rr.mu.Unlock()
	if len(rr.servers) == 0 || rr.total == 0 {
		return nil
	}
	best := -1
	for i, s := range rr.servers {
		rr.credit[i] += rr.weight[i]
		if s == avoid {
			continue
		}
		if best < 0 || rr.credit[i] > rr.credit[best] {
			best = i
		}
	}
	if best < 0 { // only the avoided server is usable: last resort
		for i, s := range rr.servers {
			if s == avoid {
				best = i
			}
		}
	}
	rr.credit[best] -= rr.total
	return rr.servers[best]
}

var _ Algorithm = (*roundRobin)(nil)
