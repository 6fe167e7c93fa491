package proxy

import (
	"sync/atomic"
	"time"

	"github.com/fulcrum-proxy/fulcrum/conf"
	"github.com/fulcrum-proxy/fulcrum/proxy/http1"
	"github.com/fulcrum-proxy/fulcrum/proxy/lb"
	"github.com/fulcrum-proxy/fulcrum/proxy/tlsx"
)

// AdminState is a server's administrative state, set by the configuration
// (`disabled`) or by operators.
type AdminState int32

// Admin states, as HAProxy's SRV_ADMF_* reduced to what operators set.
const (
	AdminReady AdminState = iota // takes traffic
	AdminDrain                   // takes only persistent traffic (weight forced to 0)
	AdminMaint                   // takes nothing
)

// String returns the state's name as `show servers state` operators know it.
func (a AdminState) String() string {
	switch a {
	case AdminDrain:
		return "DRAIN"
	case AdminMaint:
		return "MAINT"
	}
	return "READY"
}

// OpState is a server's operational state from checks. Without checks a
// server is always OpUp ("no check" in stats).
type OpState int32

// Operational states.
const (
	OpUp OpState = iota
	OpDown
	// OpStopping is HAProxy's soft-stop (NOLB): the server finishes what
	// it has and takes only persistent traffic. Set by `set server ...
	// health stopping`; not usable for new traffic, like DOWN.
	OpStopping
)

// Server is one server of a backend.
//
// How the states combine into what `show stat` prints:
//
//	admin MAINT              -> MAINT (whatever the checks say)
//	admin DRAIN, op UP       -> DRAIN
//	admin READY, op UP       -> UP ("no check" in check_status without checks)
//	admin READY/DRAIN, DOWN  -> DOWN
//
// A server is usable for new, non-persistent traffic when it is op UP, admin
// READY and its EffectiveWeight is above 0.
type Server struct {
	Name string
	// ID is HAProxy's puid: 1 to n for the configured servers in file
	// order, then the next one for each server added at runtime (or the
	// one its `id` gives), never reused while the process lives.
	ID      int
	Backend *Backend
	Conf    *conf.Server

	// dynamic: not in the configuration file (added at runtime); forcedID:
	// its id was given (`id`); gone: marked by a delete that may still
	// back out if a request got there first (servers.go, where the rule
	// around it is); deleted: the delete went through (Gone).
	dynamic  bool
	forcedID bool
	gone     atomic.Bool
	deleted  atomic.Bool

	addr atomic.Pointer[string] // host:port, may change at runtime

	admin atomic.Int32 // AdminState
	op    atomic.Int32 // OpState

	// InitialWeight is the configured weight; UserWeight the one set at
	// runtime (starts equal). Both 0..256. The effective weight lives in
	// lb.EffectiveWeight and is recomputed by the backend.
	InitialWeight int
	UserWeight    atomic.Int32

	lastChange atomic.Int64 // unix nanoseconds of the last state change

	lb  lb.Server     // the algorithm's view; lb.Cur is the in-flight count
	bal serverBalance // slowstart and free-slot accounting (backend.go)

	Counters Counters
	// SSL counts the TLS handshakes with the server (servertls.go).
	SSL SSLCounters

	// up is the server as the HTTP/1 engine needs it: its idle
	// connections and its backend's reuse policy and timeout.
	up http1.Upstream

	// tlsc is the TLS of connections and checks to the server (ssl,
	// check_ssl), nil when neither; pp its proxy_v2_options (servertls.go).
	tlsc *tlsx.Client
	pp   ppOptions

	observer atomic.Pointer[TrafficObserver]

	// checks is the server's health and agent check state, installed by
	// proxy/check (nil while nothing checks the server); maxConnSet is the
	// runtime maxconn plus one (0 = the configured one applies).
	checks     atomic.Pointer[CheckReporter]
	maxConnSet atomic.Int64

	// DNS resolution (resolution.go): rmaint is HAProxy's
	// SRV_ADMF_RMAINT, maintenance because DNS gave the server no
	// address, kept apart from the operators' admin state; dns is what
	// resolution says of the server, nil for a server not resolved at
	// runtime.
	rmaint atomic.Bool
	dns    atomic.Pointer[DNSInfo]
}

// TrafficObserver receives the outcome of real traffic to a server, for
// passive health checks (HAProxy's `observe layer4|layer7`). Its methods are
// called on the request path, concurrently: they must be cheap and must not
// block.
type TrafficObserver interface {
	// ObserveConnect reports one connection attempt to the server.
	ObserveConnect(ok bool)
	// ObserveResponse reports one HTTP response from the server by status;
	// a response that could not be read is reported as 502, a server
	// timeout as 504.
	ObserveResponse(status int)
}

// SetTrafficObserver installs o (nil removes it).
func (s *Server) SetTrafficObserver(o TrafficObserver) {
	if o == nil {
		s.observer.Store(nil)
		return
	}
	s.observer.Store(&o)
}

func (s *Server) observeConnect(ok bool) {
	if o := s.observer.Load(); o != nil {
		(*o).ObserveConnect(ok)
	}
}

func (s *Server) observeResponse(status int) {
	if o := s.observer.Load(); o != nil {
		(*o).ObserveResponse(status)
	}
}

// Addr returns the server's current address (host:port).
func (s *Server) Addr() string { return *s.addr.Load() }

// Admin returns the server's admin state as it applies: MAINT while DNS
// resolution holds the server in maintenance (ResolutionMaint), else the
// state set by the configuration or operators (OperatorAdmin).
func (s *Server) Admin() AdminState {
	if s.rmaint.Load() {
		return AdminMaint
	}
	return AdminState(s.admin.Load())
}

// OperatorAdmin returns the admin state set by the configuration
// (`disabled`) or operators, whatever DNS resolution says: it is what an
// operator set that wins over discovery.
func (s *Server) OperatorAdmin() AdminState { return AdminState(s.admin.Load()) }

// Op returns the server's operational state.
func (s *Server) Op() OpState { return OpState(s.op.Load()) }

// LastChange returns the time of the last state change.
func (s *Server) LastChange() time.Time { return time.Unix(0, s.lastChange.Load()) }

// CheckReporter is a server's check state as proxy/check keeps it: the
// health check, the agent check and passive observation. Snapshot calls it
// once per server, without any backend lock held, to fill the check parts
// of the server's snapshot.
type CheckReporter interface {
	// ReportChecks fills ss.Check, ss.Agent and the check fields of ss as
	// they are at now.
	ReportChecks(now time.Time, ss *ServerSnapshot)
}

// SetCheckReporter installs r (proxy/check does it once per server) and
// returns false when another reporter was installed first, which stays.
func (s *Server) SetCheckReporter(r CheckReporter) bool {
	return s.checks.CompareAndSwap(nil, &r)
}

// CheckReporter returns the installed reporter, or nil.
func (s *Server) CheckReporter() CheckReporter {
	if r := s.checks.Load(); r != nil {
		return *r
	}
	return nil
}

// MaxConn returns the server's current maxconn, 0 = unlimited: the
// configured value until the agent (`maxconn:N`) or an operator changes it.
func (s *Server) MaxConn() int {
	if n := s.maxConnSet.Load(); n > 0 {
		return int(n - 1)
	}
	return s.Conf.MaxConn
}

// SetMaxConn changes a server's maxconn (0 = unlimited) and returns the
// previous value. Sessions above the new limit are not cut; new ones wait.
// The limit the algorithms see (lb.Server.MaxConn, lowered by slowstart
// while the server ramps up) follows at once, through rebuildLocked, which
// also tells the algorithm and the free-slot count.
func (b *Backend) SetMaxConn(s *Server, n int) (old int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	old = s.MaxConn()
	s.maxConnSet.Store(int64(n) + 1)
	b.rebuildLocked()
	return old
}

// ServersUp counts the backend's servers that are UP and neither in
// maintenance nor draining, active and backup, as HAProxy's "N active and
// M backup servers left" (the transition log line; srv_is_usable: a
// drained server is not counted).
func (b *Backend) ServersUp() (active, backup int) {
	for _, s := range b.Servers() {
		if s.Op() != OpUp || s.Admin() != AdminReady {
			continue
		}
		if s.Conf.Backup {
			backup++
		} else {
			active++
		}
	}
	return active, backup
}
