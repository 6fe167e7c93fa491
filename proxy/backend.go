package proxy

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fulcrum-proxy/fulcrum/conf"
	"github.com/fulcrum-proxy/fulcrum/proxy/lb"
	"github.com/rs/zerolog"
)

// Backend is a set of servers and the algorithm that balances among them.
//
// The backend decides who is usable, once per change, and hands that set to
// the algorithm (lb.Algorithm.Rebuild); see rebuildLocked for the rules:
// operational and admin state, weight, slowstart, backup servers,
// allbackups and panic_threshold. Per request it only picks (assign) and
// counts sessions, so that a server at its maxconn is never given one more.
//
// Lock: mu guards the usable set, effective weights, slowstart and panic
// state, and every call to the algorithm's Rebuild; it is taken only when a
// server's state or weight changes, never per request. Pick and the
// session hooks synchronise inside the algorithm. Lock order: mu, then a
// server's bal.mu.
type Backend struct {
	Name    string
	ID      int // 1-based position in the configuration (HAProxy's iid)
	Conf    *conf.Backend
	Servers []*Server

	mu       sync.Mutex
	algo     lb.Algorithm
	observer lb.ConnObserver // algo's hooks, nil when it has none
	dynamic  bool            // runtime weight changes apply (HAProxy's dynamic algorithms)
	log      zerolog.Logger  // panic-mode warnings
	clock    clock           // slowstart's time source; tests replace it
	panicked bool            // the usable set is in panic mode
	ramp     func() bool     // stops the pending slowstart step, nil when none
	rampGen  uint64          // generation of the pending step: a stale one returns

	// free counts the servers of the usable set that have a free slot, so
	// that a request finds "every server is full" in O(1) instead of making
	// an algorithm walk all of them. Each server adds 1 while it is in the
	// set and not full; its own bal.mu orders those changes.
	free atomic.Int64

	Counters Counters
}

// serverBalance is a server's balancing state, kept by its backend.
type serverBalance struct {
	// rampStart is when slowstart began ramping the server up (zero when it
	// runs at full weight). Guarded by the backend's mu.
	rampStart time.Time

	// mu guards inSet and full: whether the server is in the usable set and
	// whether it was full when last looked at, i.e. whether it counts in
	// the backend's free.
	mu    sync.Mutex
	inSet bool
	full  bool
}

// ErrStaticWeight is returned by SetWeight for a weight that a static
// algorithm cannot apply (HAProxy: "Backend is using a static LB algorithm
// and only accepts weights '0%' and '100%'.").
var ErrStaticWeight = errors.New("backend is using a static LB algorithm and only accepts weights '0%' and '100%'")

// clock is the time source of slowstart.
type clock interface {
	Now() time.Time
	// AfterFunc calls f once after d, in its own goroutine, and returns a
	// function that cancels the call (false if it already ran).
	AfterFunc(d time.Duration, f func()) (stop func() bool)
}

// systemClock is the real clock.
type systemClock struct{}

func (systemClock) Now() time.Time { return time.Now() }

func (systemClock) AfterFunc(d time.Duration, f func()) func() bool {
	return time.AfterFunc(d, f).Stop
}

// newBackend builds a backend from its configuration. Its servers start UP
// at full weight: slowstart applies only to servers that come back.
func newBackend(id int, bc *conf.Backend) (*Backend, error) {
	bal, err := lb.Parse(bc.Balance)
	if err != nil {
		return nil, fmt.Errorf("backend %q: balance: %w", bc.Name, err)
	}
	if bal.HTTP && bc.Mode == conf.ModeTCP {
		return nil, fmt.Errorf("backend %q: balance %q needs mode http", bc.Name, bc.Balance)
	}
	var hash lb.HashType
	if bc.HashType != "" {
		if hash, err = lb.ParseHashType(bc.HashType); err != nil {
			return nil, fmt.Errorf("backend %q: hash_type: %w", bc.Name, err)
		}
	}
	ringWeight := 0
	for _, sc := range bc.Servers {
		ringWeight += sc.Weight
	}
	algo := bal.New(lb.Config{Hash: hash, BalanceFactor: bc.HashBalanceFactor, RingWeight: ringWeight})
	b := &Backend{Name: bc.Name, ID: id, Conf: bc, algo: algo, dynamic: bal.IsDynamic(hash),
		log: zerolog.Nop(), clock: systemClock{}}
	b.observer, _ = algo.(lb.ConnObserver)
	now := time.Now().UnixNano()
	for i, sc := range bc.Servers {
		s := &Server{Name: sc.Name, ID: i + 1, Backend: b, Conf: sc, InitialWeight: sc.Weight}
		addr := sc.Address
		s.addr.Store(&addr)
		s.UserWeight.Store(int32(sc.Weight))
		if sc.Disabled {
			s.admin.Store(int32(AdminMaint))
		}
		s.lastChange.Store(now)
		s.lb.Index = i
		s.lb.Name = sc.Name
		s.pool.max = 1024
		b.Servers = append(b.Servers, s)
	}
	b.mu.Lock()
	b.rebuildLocked()
	b.mu.Unlock()
	return b, nil
}

// Server returns the server named name, or nil.
func (b *Backend) Server(name string) *Server {
	for _, s := range b.Servers {
		if s.Name == name {
			return s
		}
	}
	return nil
}

// Dynamic reports whether the backend's algorithm applies runtime weight
// changes; a static one accepts only 0% and 100% of the initial weight.
func (b *Backend) Dynamic() bool { return b.dynamic }

// InPanic reports whether the backend is in panic mode (panic_threshold):
// it routes to all its active servers, up or not.
func (b *Backend) InPanic() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.panicked
}

// rebuildLocked recomputes every server's effective weight and maxconn and
// the usable set, hands the set to the algorithm and recounts the free
// servers. It is called with b.mu held, after any change of state, weight,
// maxconn or slowstart step.
//
// The rules, HAProxy's unless said otherwise:
//   - a server is usable when it is operationally UP, admin READY and its
//     weight is above 0 (DRAIN takes persistent traffic only, which the
//     algorithm never sees);
//   - slowstart: for `slowstart` after a server comes back UP (or out of
//     MAINT), its weight grows linearly from 1/16 of a point to its full
//     weight with dynamic algorithms, and its maxconn from 1 to its full
//     value with every algorithm; the steps are driven by b.clock;
//   - the set is the usable active servers; when there is none, the first
//     usable backup server in order, or all usable backups with allbackups;
//   - panic_threshold (from Envoy): when fewer than that percentage of the
//     active servers that could take traffic (READY, weight above 0, not
//     stopping) are UP, the set is all of them, UP or DOWN, as if every one
//     were UP; with no active server UP, backups are used first if any is
//     usable. Entering and leaving panic are logged once each.
func (b *Backend) rebuildLocked() {
	now := b.clock.Now()
	var active, candidates, backups []*lb.Server
	var step time.Duration // the next slowstart step, 0 when none ramps
	for _, s := range b.Servers {
		uw := int(s.UserWeight.Load())
		w := uw * lb.WeightScale
		mc := s.MaxConn()
		if !s.bal.rampStart.IsZero() {
			ss, elapsed := s.Conf.Slowstart, now.Sub(s.bal.rampStart)
			if elapsed >= ss || elapsed < 0 {
				s.bal.rampStart = time.Time{}
			} else {
				if b.dynamic {
					w = max(1, ramp(w, elapsed, ss))
				}
				if mc > 0 {
					mc = max(1, ramp(mc, elapsed, ss))
				}
				st := min(max(ss/20, 100*time.Millisecond), time.Second, ss-elapsed)
				if step == 0 || st < step {
					step = st
				}
			}
		}
		s.lb.MaxConn.Store(int64(mc))
		s.lb.Weight = w
		ready := s.Admin() == AdminReady && uw > 0
		s.lb.EffectiveWeight = 0
		if ready && s.Op() == OpUp {
			s.lb.EffectiveWeight = (w + lb.WeightScale - 1) / lb.WeightScale
		}
		switch {
		case !ready:
		case s.Conf.Backup:
			if s.Op() == OpUp {
				backups = append(backups, &s.lb)
			}
		case s.Op() == OpUp:
			active = append(active, &s.lb)
			candidates = append(candidates, &s.lb)
		case s.Op() != OpStopping:
			candidates = append(candidates, &s.lb)
		}
	}

	set, panicked := active, false
	threshold := b.Conf.PanicThreshold
	switch {
	case len(active) > 0:
		panicked = threshold > 0 && len(active)*100 < threshold*len(candidates)
	case len(backups) > 0:
		set = backups
		if !b.Conf.AllBackups {
			set = backups[:1]
		}
	default:
		panicked = threshold > 0 && len(candidates) > 0
	}
	if panicked {
		set = candidates
	}
	if panicked != b.panicked {
		b.panicked = panicked
		ev := b.log.Warn().Str("backend", b.Name).Int("up", len(active)).Int("servers", len(candidates)).Int("panic_threshold", threshold)
		if panicked {
			ev.Msg("entering panic mode: too few servers up, balancing over all of them")
		} else {
			ev.Msg("leaving panic mode")
		}
	}

	b.algo.Rebuild(set)
	in := make([]int8, len(b.Servers))
	for _, v := range set {
		in[v.Index] = 1
	}
	for i, s := range b.Servers {
		b.countFree(s, in[i])
	}

	if b.ramp != nil {
		b.ramp()
		b.ramp = nil
	}
	if step > 0 {
		b.rampGen++
		gen := b.rampGen
		b.ramp = b.clock.AfterFunc(step, func() { b.slowstartStep(gen) })
	}
}

// ramp returns ceil(full * elapsed / total).
func ramp(full int, elapsed, total time.Duration) int {
	return int((int64(full)*int64(elapsed) + int64(total) - 1) / int64(total))
}

// slowstartStep is the slowstart timer's callback: it recomputes the
// weights of the servers that ramp up. A step whose timer was replaced
// while it waited for the lock (gen is not the last one) does nothing, so
// that there is only ever one chain of steps.
func (b *Backend) slowstartStep(gen uint64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if gen != b.rampGen {
		return
	}
	b.ramp = nil
	b.rebuildLocked()
}

// countFree brings s's contribution to b.free up to date: 1 when s is in
// the usable set and not full. rebuildLocked calls it with the new
// membership (inSet 0 or 1); assign and unassign call it after a session
// starts or ends on a server with a maxconn, keeping the membership (-1).
// Reading Cur under s.bal.mu makes the last caller's view the one that
// stays, so the count never drifts.
func (b *Backend) countFree(s *Server, inSet int8) {
	s.bal.mu.Lock()
	defer s.bal.mu.Unlock()
	before := s.bal.inSet && !s.bal.full
	if inSet >= 0 {
		s.bal.inSet = inSet == 1
	}
	s.bal.full = s.lb.Full()
	after := s.bal.inSet && !s.bal.full
	switch {
	case after && !before:
		b.free.Add(1)
	case before && !after:
		b.free.Add(-1)
	}
}

// SetWeight sets a server's user weight (0..256) and applies it to the next
// pick. A static algorithm accepts only 0 and the initial weight
// (ErrStaticWeight). It returns the previous weight.
func (b *Backend) SetWeight(s *Server, w int) (old int, err error) {
	if w < 0 || w > lb.MaxWeight {
		return 0, fmt.Errorf("weight must be 0..%d, got %d", lb.MaxWeight, w)
	}
	if !b.dynamic && w != 0 && w != s.InitialWeight {
		return 0, ErrStaticWeight
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	old = int(s.UserWeight.Swap(int32(w)))
	b.rebuildLocked()
	return old, nil
}

// SetAdmin sets a server's admin state and returns the previous one. A
// server leaving MAINT starts its slowstart, as in HAProxy.
func (b *Backend) SetAdmin(s *Server, a AdminState) AdminState {
	b.mu.Lock()
	defer b.mu.Unlock()
	old := AdminState(s.admin.Swap(int32(a)))
	if old != a {
		now := b.clock.Now()
		s.lastChange.Store(now.UnixNano())
		if old == AdminMaint && s.Conf.Slowstart > 0 {
			s.bal.rampStart = now
		}
		b.rebuildLocked()
	}
	return old
}

// SetOp sets a server's operational state and returns the previous one. A
// server coming UP from another state starts its slowstart: this is the
// transition health checks drive.
func (b *Backend) SetOp(s *Server, o OpState) OpState {
	b.mu.Lock()
	defer b.mu.Unlock()
	old := OpState(s.op.Swap(int32(o)))
	if old != o {
		now := b.clock.Now()
		s.lastChange.Store(now.UnixNano())
		if o == OpUp && s.Conf.Slowstart > 0 {
			s.bal.rampStart = now
		}
		b.rebuildLocked()
	}
	return old
}

// assign picks a server for r (avoiding avoid when another is usable) and
// starts a session on it: lbtot, the server's scur and stot, and the load
// the algorithm sees. It returns nil when no server is usable or every
// usable one is full ("none free": the request would queue; until the
// queue exists it gets a 503). Every successful assign is paired with one
// unassign when the session ends.
func (b *Backend) assign(r *lb.Request, avoid *Server, now time.Time) *Server {
	if b.free.Load() <= 0 {
		return nil
	}
	var av *lb.Server
	if avoid != nil {
		av = &avoid.lb
	}
	// A pick and the slot it reserves are not one atomic step: another
	// session may take the last slot between them. The algorithm then sees
	// the server full and picks another. Each lost race means one more
	// server filled up meanwhile, so one try per server (and one more)
	// reaches a free slot if there is one left; the bound only keeps
	// servers that empty and fill again from spinning a request forever.
	for range len(b.Servers) + 1 {
		v := b.algo.Pick(r, av)
		if v == nil {
			return nil
		}
		s := b.Servers[v.Index]
		if !reserve(v) {
			b.countFree(s, -1)
			continue
		}
		if v.MaxConn.Load() > 0 {
			b.countFree(s, -1)
		}
		s.Counters.Lbtot.Add(1)
		b.Counters.Lbtot.Add(1)
		s.Counters.sessionStart(now)
		if b.observer != nil {
			b.observer.ConnTaken(v)
		}
		return s
	}
	return nil
}

// reserve counts one more session on v unless that would exceed its
// maxconn.
func reserve(v *lb.Server) bool {
	for {
		m, c := v.MaxConn.Load(), v.Cur.Load()
		if m > 0 && c >= m {
			return false
		}
		if v.Cur.CompareAndSwap(c, c+1) {
			return true
		}
	}
}

// unassign ends a session started by assign.
func (b *Backend) unassign(s *Server) {
	s.lb.Cur.Add(-1)
	s.Counters.sessionEnd()
	if s.lb.MaxConn.Load() > 0 {
		b.countFree(s, -1)
	}
	if b.observer != nil {
		b.observer.ConnReleased(&s.lb)
	}
}
