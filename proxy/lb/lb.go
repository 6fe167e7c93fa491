package lb

import (
	"errors"
	"math/rand/v2"
	"net/netip"
	"sync/atomic"
)

// WeightScale is the number of algorithm weight units in one point of a
// configured weight (HAProxy's BE_WEIGHT_SCALE). The scale lets slowstart
// ramp even a weight-1 server in steps instead of jumping from 0 to 1.
const WeightScale = 16

// MaxWeight is the largest configured weight (HAProxy's SRV_UWGHT_MAX).
const MaxWeight = 256

// Server is the view of a backend server that algorithms see.
//
// The backend writes Weight with its lock held, just before it calls
// Rebuild; algorithms read them only inside Rebuild and keep
// a copy, because picks and hooks run concurrently with the next write.
// MaxConn and Cur are atomics that anyone may read at any time.
type Server struct {
	// Index is the server's slot in its backend (0-based), unique among
	// the servers the backend has: the tie-breaker that makes every
	// algorithm deterministic, and where algorithms keep per-server state
	// (slices indexed by it). Servers come and go at runtime (the Runtime
	// API's add and del server): a slot freed by a deleted server may be
	// given to one added later, so a hook that receives a server checks
	// that the state at its Index is its own before using it (a hook may
	// come late, for a server deleted meanwhile). Constant for a server.
	Index int
	// Name is "server" of "backend/server". Constant. Consistent hashing
	// places a server's ring points by its name, so that adding a server,
	// in the middle of a backend or at runtime, does not move the others.
	Name string
	// Weight is the weight algorithms use: the configured or runtime weight
	// times WeightScale, lowered by slowstart while it ramps. A server in
	// the usable set has Weight >= 1.
	Weight int
	// MaxConn is the most sessions the server takes at once, 0 for no
	// limit. Slowstart may lower it for a while.
	MaxConn atomic.Int64
	// MaxQueue is the most requests the server's own queue holds, 0 for
	// no limit (hash_preserve_affinity "maxqueue" reads it). Constant.
	MaxQueue int
	// Cur is the number of sessions currently on the server (in-flight HTTP
	// requests or TCP connections); maintained by the backend.
	Cur atomic.Int64
	// Queued is the number of requests waiting in the server's own queue
	// (pinned to it); maintained by the backend. leastconn counts them in
	// the load, as HAProxy adds srv->queue.length.
	Queued atomic.Int64

	// MinConn (0: none) makes the limit dynamic, with FullConn and
	// BackendLoad: see Limit. Set by the backend.
	MinConn     atomic.Int64
	FullConn    *atomic.Int64 // the backend's effective fullconn
	BackendLoad *atomic.Int64 // the backend's current sessions (beconn)
}

// Limit returns the server's effective maxconn, 0 for no limit: MaxConn,
// or with a MinConn below it HAProxy's srv_dynamic_maxconn,
// max(MinConn, load × MaxConn / FullConn) capped at MaxConn, where load is
// the backend's current sessions (queued ones included).
func (s *Server) Limit() int64 {
	m := s.MaxConn.Load()
	mn := s.MinConn.Load()
	if m == 0 || mn == 0 || mn >= m || s.BackendLoad == nil || s.FullConn == nil {
		return m
	}
	fc := max(s.FullConn.Load(), 1)
	load := s.BackendLoad.Load()
	if load >= fc {
		return m
	}
	return min(max(mn, load*m/fc), m)
}

// Full reports whether the server has no free slot: it has a maxconn and
// as many sessions as its Limit. A full server is never picked, except by
// a hashing algorithm keeping a key's affinity (Affinity).
func (s *Server) Full() bool {
	m := s.Limit()
	return m > 0 && s.Cur.Load() >= m
}

// queueFull reports whether the server is full and its own queue holds
// MaxQueue requests: HAProxy 3.2's test for hash-preserve-affinity
// maxqueue (served + queued >= maxconn + maxqueue, with both set).
func (s *Server) queueFull() bool {
	m := s.Limit()
	return m > 0 && s.MaxQueue > 0 && s.Cur.Load()+s.Queued.Load() >= m+int64(s.MaxQueue)
}

// passedBy reports whether a pick under affinity a goes past s to the next
// server: never with AffinityAlways, when its queue is full with
// AffinityMaxQueue, when it is full otherwise (every algorithm but the
// hashing ones always picks as AffinityMaxConn).
func (s *Server) passedBy(a Affinity) bool {
	switch a {
	case AffinityAlways:
		return false
	case AffinityMaxQueue:
		return s.queueFull()
	}
	return s.Full()
}

// Affinity is hash_preserve_affinity (HAProxy 3.2's
// hash-preserve-affinity): what a hashing algorithm does when the server
// of a request's key is full.
type Affinity uint8

// The values of hash_preserve_affinity.
const (
	// AffinityAlways picks the key's server, full or not: the request
	// then waits in that server's queue (HAProxy's default, and HAProxy
	// 2.6's only behaviour).
	AffinityAlways Affinity = iota
	// AffinityMaxConn goes past a full server to the next one (the next
	// slot of the map, the next point of the ring), as the other
	// algorithms do; the request waits in the backend queue when every
	// server is full.
	AffinityMaxConn
	// AffinityMaxQueue goes past a server that is full and whose own queue
	// holds its maxqueue requests; servers without maxconn or maxqueue
	// are never passed by.
	AffinityMaxQueue
)

// affinityNames are the keywords of hash_preserve_affinity, by Affinity.
var affinityNames = [...]string{AffinityAlways: "always", AffinityMaxConn: "maxconn", AffinityMaxQueue: "maxqueue"}

// ParseAffinity parses a hash_preserve_affinity value; "" is "always".
func ParseAffinity(s string) (Affinity, error) {
	if s == "" {
		return AffinityAlways, nil
	}
	for a, name := range affinityNames {
		if s == name {
			return Affinity(a), nil
		}
	}
	return 0, errors.New(`must be "always", "maxconn" or "maxqueue"`)
}

// String returns the keyword of a.
func (a Affinity) String() string { return affinityNames[a] }

// Request is the small view of a request that hashing algorithms need. It
// never carries the HTTP engine's own types.
//
// In HTTP mode the strings alias the request's buffer: they are valid only
// during Pick and must not be kept.
type Request struct {
	Src    netip.AddrPort
	Method string // HTTP mode only, as every field below
	Path   string // without the query string
	Query  string // after '?', without it
	Host   string // the Host header
	// Headers gives access to every request header (nil in TCP mode).
	Headers HeaderGetter
}

// HeaderGetter returns the value of the first header called name (case
// insensitive) and whether there was one.
type HeaderGetter interface {
	Header(name string) (string, bool)
}

// Algorithm chooses one server among the usable servers of a backend.
type Algorithm interface {
	// Pick returns the server for r, or nil if none is usable or every
	// usable one is full. avoid, if non-nil, just failed for r: Pick
	// returns it only as a last resort. Pick never returns a full server,
	// except a hashing algorithm keeping the affinity of r's key
	// (AffinityPicker), and is safe for concurrent use; r may be nil for
	// algorithms that do not hash (and then hashing algorithms fall back
	// to round-robin).
	Pick(r *Request, avoid *Server) *Server
	// Rebuild replaces the set of usable servers. The backend calls it,
	// with its lock held, whenever a server comes up or goes down, changes
	// weight, or the backend switches between active, backup and panic
	// sets; the hooks HAProxy has for each of these (set_server_status_up,
	// set_server_status_down, update_server_eweight) are all this one call.
	// servers is in the backend's order (by server id, HAProxy's puid, the
	// order `first` follows), every one has Weight >= 1, and it is owned by
	// the caller: an algorithm may keep it read-only until the next
	// Rebuild. A server added to the backend at runtime first appears in a
	// set here, and a deleted one has left every set before it is deleted.
	// An algorithm diffs the new set against its own state, so that one
	// change costs it O(n) at most, not a from-scratch build.
	Rebuild(servers []*Server)
}

// AffinityPicker is implemented by the hashing algorithms (source, uri,
// url_param, hdr, hash): HAProxy's BE_LB_KIND_HI, which keep a key on its
// server. PickAffine is Pick that also reports whether the server was
// chosen by r's key under hash_preserve_affinity "always" or "maxqueue"
// (Config.Affinity): such a server may be full, and the request then waits
// in its own queue rather than going to another server. A request without
// a key falls back to round-robin and is never affine.
type AffinityPicker interface {
	PickAffine(r *Request, avoid *Server) (s *Server, affine bool)
}

// ConnObserver is implemented by algorithms that track load (leastconn,
// first, bounded-load hashing) or fullness. The backend calls ConnTaken
// after a session starts on s (s.Cur already counts it) and ConnReleased
// after it ends (s.Cur no longer counts it), without its lock; both may be
// called concurrently with each other, with Pick and with Rebuild, and for
// a server that has left the usable set, or the backend, meanwhile (whose
// Index may then be another server's).
type ConnObserver interface {
	ConnTaken(s *Server)
	ConnReleased(s *Server)
}

// QueueObserver is implemented by algorithms whose load counts queued
// requests (leastconn). The backend calls QueueChanged after s.Queued
// changed, under the same rules as ConnObserver's hooks.
type QueueObserver interface {
	QueueChanged(s *Server)
}

// Config is what an algorithm is built from, beside its own arguments in
// the balance expression: the backend's hashing settings and a random
// source.
type Config struct {
	// Hash is the backend's hash_type; the zero value is "map-based sdbm".
	Hash HashType
	// Key is the backend's hash_key: when set, hashing algorithms hash
	// with SipHash under it instead of Hash's function (hashkey.go). The
	// zero value hashes as HAProxy does.
	Key HashKey
	// BalanceFactor is hash_balance_factor: 0 for off, else more than 100;
	// used by consistent hashing and random.
	BalanceFactor int
	// Affinity is hash_preserve_affinity, for the hashing algorithms; the
	// zero value is HAProxy's default, "always".
	Affinity Affinity
	// RingWeight is the sum of the configured weights of the backend's
	// servers (active and backup). Consistent hashing sizes its ring from
	// it, once: the ring, and so the key-to-server mapping, depends on the
	// configuration only, never on which servers happen to be up.
	RingWeight int
	// Rand returns uniformly distributed 64-bit values and must be safe
	// for concurrent use. nil means math/rand/v2. Tests pass a seeded one.
	Rand func() uint64
}

// rng returns c.Rand, or math/rand/v2's when it is nil.
func (c Config) rng() func() uint64 {
	if c.Rand != nil {
		return c.Rand
	}
	return rand.Uint64
}
