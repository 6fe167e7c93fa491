package lb

// The machinery shared by the hashing algorithms (source, uri, url_param,
// hdr, hash): each of them only says how to find and hash its key in a
// request (a keyFunc, in its own file); this file maps the hash to a server
// the way hash_type says, and falls back to round-robin when the request
// has no key, as HAProxy does.
//
//   - map-based (static): slot hash % len(map) of static-rr's map; the
//     fallback is static-rr over the same map. O(1) and lock-free.
//   - consistent (dynamic): the ring of chash.go, with bounded loads when
//     hash_balance_factor is set; the fallback is roundrobin. O(1) expected
//     and lock-free for the lookup; the fallback takes roundrobin's mutex.
//
// What happens when the key's server is full is hash_preserve_affinity
// (HAProxy 3.2's hash-preserve-affinity, Config.Affinity): "always" (the
// default, and HAProxy 2.6's behaviour) keeps the key on its server, which
// Pick then returns full (PickAffine says so: the backend queues the
// request there); "maxconn" skips a full server (the next slot, or the next
// point clockwise); "maxqueue" skips a server only when its own queue is
// full too. avoid is skipped whatever the mode and returned only as a last
// resort. The round-robin fallback always skips full servers.

// keyFunc finds the key of r and returns its hash by hash type t; ok is
// false when r has no key (the algorithm then falls back to round-robin).
// r is nil in tests and for requests without a view. The hasher lives in
// the keyFunc, not in its caller: a pointer passed through a func value
// would escape and cost an allocation per pick.
type keyFunc func(r *Request, t HashType) (hash uint32, ok bool)

// newHashing returns the algorithm hashing key with hash type c.Hash,
// keyed by c.Key when it is set.
func newHashing(c Config, key keyFunc) Algorithm {
	typ := c.Hash
	typ.key = c.Key
	if typ.Consistent {
		return &ringHash{chash: newChash(c), rr: newRoundRobin(), key: key, typ: typ, aff: c.Affinity}
	}
	return &mapHash{staticRR: newStaticRR(), key: key, typ: typ, aff: c.Affinity}
}

// mapHash is a hashing algorithm with hash_type map-based.
type mapHash struct {
	*staticRR // the map, and the round-robin fallback
	key       keyFunc
	typ       HashType
	aff       Affinity
}

// Pick implements Algorithm.
func (m *mapHash) Pick(r *Request, avoid *Server) *Server {
	s, _ := m.PickAffine(r, avoid)
	return s
}

// PickAffine implements AffinityPicker.
func (m *mapHash) PickAffine(r *Request, avoid *Server) (*Server, bool) {
	if v, ok := m.key(r, m.typ); ok {
		return m.pickHash(v, avoid, m.aff), m.aff != AffinityMaxConn
	}
	return m.staticRR.Pick(r, avoid), false
}

// ringHash is a hashing algorithm with hash_type consistent.
type ringHash struct {
	*chash
	rr  *roundRobin // the fallback when the request has no key
	key keyFunc
	typ HashType
	aff Affinity
}

// Pick implements Algorithm.
func (rh *ringHash) Pick(r *Request, avoid *Server) *Server {
	s, _ := rh.PickAffine(r, avoid)
	return s
}

// PickAffine implements AffinityPicker.
func (rh *ringHash) PickAffine(r *Request, avoid *Server) (*Server, bool) {
	if v, ok := rh.key(r, rh.typ); ok {
		return rh.lookup(rh.r.Load(), uint64(v)<<32, avoid, rh.aff), rh.aff != AffinityMaxConn
	}
	return rh.rr.Pick(r, avoid), false
}

// Rebuild implements Algorithm: the ring and the fallback.
func (rh *ringHash) Rebuild(servers []*Server) {
	rh.chash.Rebuild(servers)
	rh.rr.Rebuild(servers)
}

// ConnTaken implements ConnObserver: the backend's load, for bounded loads.
func (rh *ringHash) ConnTaken(s *Server) {
	rh.count(1)
	rh.rr.ConnTaken(s)
}

// ConnReleased implements ConnObserver.
func (rh *ringHash) ConnReleased(s *Server) {
	rh.count(-1)
	rh.rr.ConnReleased(s)
}

var (
	_ Algorithm      = (*mapHash)(nil)
	_ AffinityPicker = (*mapHash)(nil)
	_ Algorithm      = (*ringHash)(nil)
	_ AffinityPicker = (*ringHash)(nil)
	_ ConnObserver   = (*ringHash)(nil)
)
