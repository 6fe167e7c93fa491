package lb

// Power of N random choices ("balance random" and "random(N)"), HAProxy's
// get_server_rnd.
//
// Algorithm: N times, a random position on the consistent ring (chash.go)
// names a server, skipping full ones and, with hash_balance_factor, the
// ones over their bounded load; of the N, the one with the fewest sessions
// relative to its weight wins (ties: the earlier draw). Weights are
// respected through the ring's points. N = 2 by default: the least loaded
// of two random servers keeps the most loaded one far closer to the
// average than one random choice (Mitzenmacher, "The Power of Two Choices
// in Randomized Load Balancing"), at no coordination cost.
//
// Cost per pick: N ring lookups, O(1) expected each, lock-free. Dynamic:
// weight changes move the server's ring points at Rebuild. The random
// source is Config.Rand.

import (
	"errors"
	"fmt"
)

// random is the state of one backend's random(N).
type random struct {
	*chash
	draws int
	rnd   func() uint64
}

// parseRandom checks "random" and "random(N)".
func parseRandom(a Args) (Balance, error) {
	draws := 2
	if a.HasParen {
		n, ok := positiveInt(a.Paren)
		if !ok {
			return Balance{}, errors.New("random(N) needs a number N of at least 1")
		}
		draws = n
	}
	if len(a.Words) > 0 {
		return Balance{}, fmt.Errorf("random takes no arguments")
	}
	return Balance{build: func(c Config) Algorithm {
		return &random{chash: newChash(c), draws: draws, rnd: c.rng()}
	}}, nil
}

// Pick implements Algorithm.
func (rd *random) Pick(_ *Request, avoid *Server) *Server {
	r := rd.r.Load()
	var best *Server
	for range rd.draws {
		s := rd.lookup(r, rd.rnd(), avoid, AffinityMaxConn)
		if s == nil {
			return nil // every server is full
		}
		if best == nil || lighter(r, s, best) {
			best = s
		}
	}
	return best
}

// lighter reports whether a has fewer sessions than b relative to weight.
func lighter(r *ring, a, b *Server) bool {
	return uint64(max(a.Cur.Load(), 0))*r.weight[b.Index] < uint64(max(b.Cur.Load(), 0))*r.weight[a.Index]
}

// ConnTaken implements ConnObserver: the backend's load, for bounded loads.
func (rd *random) ConnTaken(*Server) { rd.count(1) }

// ConnReleased implements ConnObserver.
func (rd *random) ConnReleased(*Server) { rd.count(-1) }

var (
	_ Algorithm    = (*random)(nil)
	_ ConnObserver = (*random)(nil)
)
