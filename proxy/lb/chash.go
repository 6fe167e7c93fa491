package lb

// The consistent-hash ring (hash_type "consistent", and "balance random"),
// with bounded loads (hash_balance_factor). HAProxy src/lb_chash.c.
//
// Algorithm: each usable server owns Weight*perUnit points on a 64-bit
// ring, placed by hashing its name with the point's number, so a server
// owns the same points whatever the other servers do. A key is looked up
// at its position: the first point at or after it, clockwise, names the
// server. Taking a server out removes only its points, so only the keys it
// owned move, each to the next point clockwise; a weight change adds or
// removes that server's last points only.
//
// perUnit is fixed when the algorithm is built, from the configured
// weights only (Config.RingWeight): enough points that a server of weight
// 1 gets a fair share (160 points when the ring is small, 16 as HAProxy at
// least), and about 2^20 points in all. The mapping therefore depends on the
// configuration, never on which servers are up at start.
//
// Bounded loads (Mirrokni, Thorup, Zadimoghaddam, "Consistent Hashing with
// Bounded Loads", 2018): with factor F, a server is eligible only while its
// sessions are below ceil((total+1) * F/100 * Weight/sumWeight), total being
// the sessions in flight on the backend; the lookup walks clockwise from
// the key's position to the first eligible server. With F > 100 one always
// exists, and the keys a server sheds go to its ring neighbours rather than
// all to one.
//
// Cost per lookup: O(1) expected to find the position (a bucket index over
// the sorted points, then a binary search inside a bucket of about two
// points), plus one step per point of a full, avoided or over-cap server
// passed on the walk. Lock-free: Rebuild publishes a new ring through an
// atomic pointer. Rebuild is O(P + k log k) for P points of which k change
// (a merge of the old ring with the changed points), not a full sort.

import (
	"hash/fnv"
	"math/bits"
	"slices"
	"sync"
	"sync/atomic"
)

const (
	// ringTarget is the number of ring points the configured weights of a
	// backend aim at.
	ringTarget = 1 << 20
	// ringMaxPerUnit bounds the points per weight unit: 10 per unit is 160
	// per point of configured weight, ten times HAProxy's 16, which keeps a
	// server's share of the ring within about 8% of its weight.
	ringMaxPerUnit = 10
)

// ring is one published state of the ring; never modified once published.
type ring struct {
	points  []ringPoint // sorted by position, then index
	servers []*Server   // by Server.Index; nil when not in the usable set
	weight  []uint64    // by Server.Index: Weight when in the set
	total   uint64      // sum of weight
	shift   uint        // bucket of a position: pos >> shift
	buckets []uint32    // bucket b's points are points[buckets[b]:buckets[b+1]]
}

// ringPoint is one point of the ring: its position and its server's Index,
// side by side so that a lookup reads one cache line, not two.
type ringPoint struct {
	pos uint64
	idx int32
}

// chash is a consistent-hash ring that can be rebuilt while lookups run.
type chash struct {
	perUnit int // ring points per weight unit
	factor  int // hash_balance_factor, 0 = off

	r atomic.Pointer[ring]
	// inflight is the number of sessions on the backend, kept by the
	// ConnObserver hooks of the algorithms that embed a chash.
	inflight atomic.Int64

	mu     sync.Mutex // serialises Rebuild
	counts []int      // by Server.Index: the server's points in the ring
	names  []uint64   // by Server.Index: hash of the name, 0 = unknown
	who    []*Server  // by Server.Index: the server names and counts are of
}

// newChash returns an empty ring sized for c.RingWeight.
func newChash(c Config) *chash {
	per := ringMaxPerUnit
	if c.RingWeight > 0 {
		per = min(ringMaxPerUnit, max(1, ringTarget/(c.RingWeight*WeightScale)))
	}
	ch := &chash{perUnit: per, factor: c.BalanceFactor}
	ch.r.Store(&ring{buckets: []uint32{0, 0}, shift: 64})
	return ch
}

// pointPos is the position of point i of the server whose name hashes to
// name: distinct for distinct i (mix64 is a bijection).
func pointPos(name uint64, i int) uint64 {
	return mix64(name + uint64(i)*0x9e3779b97f4a7c15)
}

// cmpPoint orders points by position, then by server.
func cmpPoint(a, b ringPoint) int {
	switch {
	case a.pos < b.pos:
		return -1
	case a.pos > b.pos:
		return 1
	}
	return int(a.idx - b.idx)
}

// Rebuild implements Algorithm for the ring: it publishes the ring of
// servers, made from the previous one by removing and adding the points of
// the servers that left, came or changed weight.
func (ch *chash) Rebuild(servers []*Server) {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	old := ch.r.Load()
	n := max(maxIndex(servers)+1, len(ch.counts))
	ch.counts = append(ch.counts, make([]int, n-len(ch.counts))...)
	ch.names = append(ch.names, make([]uint64, n-len(ch.names))...)
	ch.who = append(ch.who, make([]*Server, n-len(ch.who))...)
	want := make([]int, n)
	r := &ring{servers: make([]*Server, n), weight: make([]uint64, n)}
	var removed, added []ringPoint
	for _, s := range servers {
		i := s.Index
		want[i] = s.Weight * ch.perUnit
		r.servers[i], r.weight[i] = s, uint64(s.Weight)
		r.total += uint64(s.Weight)
		if ch.who[i] != s {
			// A new server in this slot (a slot is reused after a server
			// is deleted): whatever points the slot still has are the
			// previous server's, placed by its name.
			for k := range ch.counts[i] {
				removed = append(removed, ringPoint{pointPos(ch.names[i], k), int32(i)})
			}
			h := fnv.New64a()
			h.Write([]byte(s.Name))
			ch.who[i], ch.names[i], ch.counts[i] = s, h.Sum64()|1, 0
		}
	}
	for i := range n {
		for k := want[i]; k < ch.counts[i]; k++ {
			removed = append(removed, ringPoint{pointPos(ch.names[i], k), int32(i)})
		}
		for k := ch.counts[i]; k < want[i]; k++ {
			added = append(added, ringPoint{pointPos(ch.names[i], k), int32(i)})
		}
	}
	copy(ch.counts, want)
	slices.SortFunc(removed, cmpPoint)
	slices.SortFunc(added, cmpPoint)

	// Merge: the old points minus removed, plus added, in order.
	r.points = make([]ringPoint, 0, len(old.points)-len(removed)+len(added))
	a, d := 0, 0
	for _, p := range old.points {
		for d < len(removed) && cmpPoint(removed[d], p) < 0 {
			d++
		}
		if d < len(removed) && removed[d] == p {
			d++
			continue
		}
		for a < len(added) && cmpPoint(added[a], p) < 0 {
			r.points = append(r.points, added[a])
			a++
		}
		r.points = append(r.points, p)
	}
	r.points = append(r.points, added[a:]...)
	r.index()
	ch.r.Store(r)
}

// index builds the bucket index: about two points per bucket.
func (r *ring) index() {
	b := 0
	if len(r.points) > 2 {
		b = min(bits.Len(uint(len(r.points)/2))-1, 24)
	}
	r.shift = uint(64 - b)
	r.buckets = make([]uint32, 1<<b+1)
	j := 0
	for k := range 1 << b {
		for j < len(r.points) && r.points[j].pos>>r.shift < uint64(k) {
			j++
		}
		r.buckets[k] = uint32(j)
	}
	r.buckets[1<<b] = uint32(len(r.points))
}

// search returns the index of the first point at or after key, wrapping to
// 0 past the last. The ring must not be empty.
func (r *ring) search(key uint64) int {
	b := key >> r.shift // 0 when shift is 64
	lo, hi := int(r.buckets[b]), int(r.buckets[b+1])
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if r.points[m].pos < key {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo == len(r.points) {
		lo = 0
	}
	return lo
}

// lookup returns the server for ring position key: the owner of the first
// point clockwise whose server is neither passed by under affinity a (with
// AffinityMaxConn: full), nor avoid, nor over its bounded load. If every
// server not passed by is over its bound, the first of them; avoid as a
// last resort; nil when every server is passed by.
func (ch *chash) lookup(r *ring, key uint64, avoid *Server, a Affinity) *Server {
	n := len(r.points)
	if n == 0 {
		return nil
	}
	var over, avoided *Server
	inflight := ch.inflight.Load()
	i := r.search(key)
	for range n {
		s := r.servers[r.points[i].idx]
		if !s.passedBy(a) {
			switch {
			case s == avoid:
				avoided = s
			case ch.factor > 0 && !r.underCap(s, inflight, ch.factor):
				if over == nil {
					over = s
				}
			default:
				return s
			}
		}
		if i++; i == n {
			i = 0
		}
	}
	if over != nil {
		return over
	}
	return avoided
}

// count adds d to the sessions in flight, when bounded loads need them:
// without a factor the shared counter would be contention for nothing.
func (ch *chash) count(d int64) {
	if ch.factor > 0 {
		ch.inflight.Add(d)
	}
}

// underCap reports whether s may take one more session under the bounded
// load: its sessions are below ceil((inflight+1) * factor/100 * its share
// of the weight).
func (r *ring) underCap(s *Server, inflight int64, factor int) bool {
	num := uint64(max(inflight, 0)+1) * uint64(factor) * r.weight[s.Index]
	den := 100 * r.total
	limit := (num + den - 1) / den
	return uint64(max(s.Cur.Load(), 0)) < limit
}
