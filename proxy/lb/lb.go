package lb

import (
	"net/netip"
	"sync/atomic"
)

// Server is the view of a backend server that algorithms see.
type Server struct {
	// Index is the server's position in its backend (0-based); it is also
	// the tie-breaker that makes every algorithm deterministic.
	Index int
	// Name is "server" of "backend/server", for messages only.
	Name string
	// EffectiveWeight is the weight the algorithm uses, 0..256 (HAProxy's
	// cur_eweight). The backend sets it before calling Rebuild or a hook.
	EffectiveWeight int
	// Cur is the number of sessions currently on the server (in-flight HTTP
	// requests or TCP connections); maintained by the proxy.
	Cur atomic.Int64
}

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
	// Pick returns the server for r, or nil if none is usable (or all are
	// full). avoid, if non-nil, just failed for r: return it only as a last
	// resort. Pick is safe for concurrent use.
	Pick(r *Request, avoid *Server) *Server
	// Rebuild replaces the set of usable servers. It is called by the
	// backend, with the backend's lock held, whenever a server's usability or
	// effective weight changes. servers is owned by the caller and may be
	// kept read-only until the next Rebuild.
	Rebuild(servers []*Server)
}

// ConnObserver is implemented by algorithms that track load (leastconn,
// bounded-load hashing). The proxy calls ConnTaken when a session starts on s
// and ConnReleased when it ends; both may be called concurrently.
type ConnObserver interface {
	ConnTaken(s *Server)
	ConnReleased(s *Server)
}
