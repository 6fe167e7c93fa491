package proxy

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/rs/zerolog"

	"github.com/fulcrum-proxy/fulcrum/conf"
	"github.com/fulcrum-proxy/fulcrum/proxy/h2mux"
	"github.com/fulcrum-proxy/fulcrum/proxy/http1"
	"github.com/fulcrum-proxy/fulcrum/proxy/lb"
	"github.com/fulcrum-proxy/fulcrum/proxy/queue"
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
// state, every call to the algorithm's Rebuild, and the publication of
// the servers (servers.go); it is taken only when a server's state or
// weight changes or a server is added or deleted, never per request. Pick
// and the session hooks synchronise inside the algorithm. Lock order: mu,
// then a server's bal.mu.
type Backend struct {
	Name string
	ID   int // 1-based position in the configuration (HAProxy's iid)
	Conf *conf.Backend

	// dialControl sets tune_sndbuf_server and tune_rcvbuf_server on each
	// server connection before it connects (sockBufsControl); nil when
	// they are unset.
	dialControl func(network, address string, c syscall.RawConn) error

	// set is the servers (Servers, servers.go), replaced as a whole under
	// mu. nextID is the id the next server added without one gets: one
	// more than any the backend gave, so that none is reused; retired
	// are the ids of deleted servers, which nextID skips when it reaches
	// them (a deleted server's id forced above nextID); both guarded by
	// mu.
	set     atomic.Pointer[serverSet]
	nextID  int
	retired map[int]bool

	mu       sync.Mutex
	algo     lb.Algorithm
	observer lb.ConnObserver // algo's hooks, nil when it has none
	dynamic  bool            // runtime weight changes apply (HAProxy's dynamic algorithms)
	hashes   bool            // the algorithm hashes a key of the request (HAProxy's BE_LB_KIND_HI)
	// prepConns: a server sends a PROXY header or speaks TLS, so new
	// connections go through Stream.prepare (servertls.go); set when such
	// a server is built (a server added at runtime too), never cleared.
	prepConns atomic.Bool
	log       zerolog.Logger // panic-mode warnings
	// event is its proxy's LogEvent (nil in tests that build a Backend
	// alone).
	event    func(level int, msg string)
	clock    clock       // slowstart's time source; tests replace it
	panicked bool        // the usable set is in panic mode
	ramp     func() bool // stops the pending slowstart step, nil when none
	rampGen  uint64      // generation of the pending step: a stale one returns

	// free counts the servers of the usable set that have a free slot, so
	// that a request finds "every server is full" in O(1) instead of making
	// an algorithm walk all of them. Each server adds 1 while it is in the
	// set and not full; its own bal.mu orders those changes.
	free atomic.Int64
	// usable is the size of the usable set, written by rebuildLocked: a
	// request finds "no server at all" (503 at once) apart from "every
	// server is full" (it queues). act is the number of usable active
	// servers (HAProxy's srv_act), which the retry logic reads.
	usable atomic.Int64
	act    atomic.Int64
	// view is what stats show of the backend as a whole; guarded by mu.
	view backendView

	// queue holds the requests waiting for a slot (proxy/queue); qobs is
	// algo's QueueObserver, nil when it has none; affine is algo as an
	// AffinityPicker when it keeps keys on full servers
	// (hash_preserve_affinity "always" or "maxqueue"), else nil. fullConn is the
	// effective fullconn (configured, else derived from the frontends at
	// start) and timeoutQueue the effective timeout queue.
	queue        *queue.Queues
	qobs         lb.QueueObserver
	affine       lb.AffinityPicker
	fullConn     atomic.Int64
	timeoutQueue time.Duration

	Counters Counters
	state    backendState // UP/DOWN changes and downtime (snapshot_obs.go)
	// H2 are the HTTP/2 counters of the connections to the backend's
	// servers with proto h2 (HAProxy's h2 statistics module).
	H2 h2mux.Counters
	// H1 are the h1 counters of the connections to its HTTP/1 servers
	// (h1stats.go).
	H1 http1.Counters
	// SSL counts the TLS handshakes with its servers (servertls.go).
	SSL SSLCounters
}

// serverBalance is a server's balancing state, kept by its backend.
type serverBalance struct {
	// rampStart is when slowstart began ramping the server up: zero unless
	// the server is STARTING, in HAProxy's terms. eweight is its effective
	// weight in lb units (HAProxy's cur_eweight), frozen when a ramp was
	// cut short; throttle the percentage stats show, -1 for none; usable
	// whether it takes new traffic (srv_currently_usable). Written by
	// rebuildLocked; all guarded by the backend's mu.
	rampStart time.Time
	eweight   int
	frozen    bool
	throttle  int
	usable    bool

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
	aff, err := lb.ParseAffinity(bc.HashPreserveAffinity)
	if err != nil {
		return nil, fmt.Errorf("backend %q: hash_preserve_affinity: %w", bc.Name, err)
	}
	ringWeight := 0
	for _, sc := range bc.Servers {
		ringWeight += sc.Weight
	}
	algo := bal.New(lb.Config{Hash: hash, Key: lb.NewHashKey(bc.HashKey), Affinity: aff,
		BalanceFactor: bc.HashBalanceFactor, RingWeight: ringWeight})
	b := &Backend{Name: bc.Name, ID: id, Conf: bc, algo: algo, dynamic: bal.IsDynamic(hash),
		log: zerolog.Nop(), clock: systemClock{}}
	b.observer, _ = algo.(lb.ConnObserver)
	b.qobs, _ = algo.(lb.QueueObserver)
	ap, hashes := algo.(lb.AffinityPicker)
	b.hashes = hashes
	if aff != lb.AffinityMaxConn {
		b.affine = ap
	}
	b.timeoutQueue = bc.TimeoutQueue
	if b.timeoutQueue == 0 {
		b.timeoutQueue = bc.TimeoutConnect // HAProxy's fallback
	}
	b.fullConn.Store(int64(max(bc.FullConn, 1)))
	// The configured servers: ids 1 to n in file order, slots 0 to n-1.
	now := time.Now()
	list := make([]*Server, len(bc.Servers))
	lens := make([]*atomic.Int64, len(bc.Servers))
	for i, sc := range bc.Servers {
		list[i] = b.newServer(sc, i+1, i, false, now)
		lens[i] = &list[i].lb.Queued
	}
	b.nextID = len(list) + 1
	b.queue = queue.New(lens)
	b.mu.Lock()
	b.publishLocked(list)
	b.rebuildLocked()
	b.mu.Unlock()
	return b, nil
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
// the usable set, hands the set to the algorithm, recounts the free
// servers and records what stats show (weights, throttle, act, bck). It is
// called with b.mu held, after any change of state, weight, maxconn or
// slowstart step. This is the one place that decides who is usable, with
// which weight, and how that is reported: the algorithm, the queue, the
// snapshot and the retry logic all read what it wrote.
//
// The rules, HAProxy 2.6's unless said otherwise:
//   - a server is usable when it is operationally UP, admin READY and its
//     effective weight is above 0 (HAProxy's srv_currently_usable; DRAIN
//     takes persistent traffic only, which the algorithm never sees);
//   - the effective weight is the user weight, and during slowstart
//     (rampStart set: the server came UP or left MAINT less than
//     `slowstart` ago) a sixteenth of it times 1 + floor(16 x elapsed /
//     slowstart) with dynamic algorithms, as HAProxy's
//     server_recalc_eweight; static ones keep the full weight. Its maxconn
//     ramps with every algorithm to max(1, maxconn x floor(100 x elapsed /
//     slowstart) / 100), as srv_dynamic_maxconn. The steps are driven by
//     b.clock; the end of the ramp is a state change (lastchg restarts), as
//     HAProxy's STARTING to RUNNING. A ramp cut short (DOWN, NOLB or MAINT)
//     leaves the weight where it was until the next weight change or ramp:
//     HAProxy stops recomputing a server that is not STARTING;
//   - the set is the usable active servers; when there is none, the first
//     usable backup server in order, or all usable backups with allbackups;
//   - panic_threshold (from Envoy): when fewer than that percentage of the
//     active servers that could take traffic (READY, weight above 0, not
//     stopping) are UP, the set is all of them, UP or DOWN, as if every one
//     were UP; with no active server UP, backups are used first if any is
//     usable. Entering and leaving panic are logged once each.
//
// What stats show (HAProxy's stats_fill_sv_stats and stats_fill_be_stats,
// checked against HAProxy 2.6's `show stat` through a slowstart ramp): a
// server's weight is its effective weight rounded up, whatever its state;
// its throttle is the percentage 100 x eweight / full weight (rounded
// down, after HAProxy's +15/16) while it ramps and is neither DRAIN nor at
// weight 0, else empty. The backend's act and bck count the usable active
// and backup servers; its weight and uweight sum the effective and user
// weights of the servers in use: the usable active ones, else the first
// usable backup only (without allbackups), else every usable backup. Panic
// mode does not change them.
func (b *Backend) rebuildLocked() {
	now := b.clock.Now()
	set0 := b.set.Load()
	var active, candidates, backups []*lb.Server
	var step time.Duration // time to the next slowstart step, 0 when none ramps
	for _, s := range set0.list {
		uw := int(s.UserWeight.Load())
		full := uw * lb.WeightScale
		mc := s.MaxConn()
		starting := false
		if !s.bal.rampStart.IsZero() {
			ss, elapsed := s.Conf.Slowstart, now.Sub(s.bal.rampStart)
			switch {
			case s.Op() != OpUp || s.Admin() == AdminMaint:
				// No longer STARTING: the weight stays where the ramp left
				// it (frozen) until the next change recomputes it.
				s.bal.rampStart, s.bal.frozen = time.Time{}, true
			case elapsed >= ss || elapsed < 0:
				s.bal.rampStart, s.bal.frozen = time.Time{}, false
				s.lastChange.Store(now.UnixNano())
			default:
				starting, s.bal.frozen = true, false
				s.bal.eweight = full
				if b.dynamic {
					s.bal.eweight = uw * rampWeight(elapsed, ss)
				}
				if mc > 0 {
					mc = rampMaxConn(mc, elapsed, ss)
				}
				if st := nextRampStep(elapsed, ss, s.MaxConn(), b.dynamic); step == 0 || st < step {
					step = st
				}
			}
		}
		if !starting && !s.bal.frozen {
			s.bal.eweight = full
		}
		s.lb.MaxConn.Store(int64(mc))
		s.lb.Weight = s.bal.eweight
		s.bal.throttle = -1
		if starting && uw > 0 && s.Admin() != AdminDrain {
			s.bal.throttle = (100*s.bal.eweight + lb.WeightScale - 1) / (lb.WeightScale * uw)
		}
		ready := s.Admin() == AdminReady && s.bal.eweight > 0
		s.bal.usable = ready && s.Op() == OpUp
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
	b.view = backendView{act: len(active), bck: len(backups)}
	for _, v := range set { // the set before panic: the servers in use
		b.view.eweight += v.Weight
		b.view.uweight += int(set0.slots[v.Index].UserWeight.Load())
	}
	b.act.Store(int64(len(active)))
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
	b.usable.Store(int64(len(set)))
	b.noteUsable(len(set)) // backend last change and downtime (snapshot_obs.go)
	in := make([]int8, len(set0.slots))
	for _, v := range set {
		in[v.Index] = 1
	}
	for _, s := range set0.list {
		b.countFree(s, in[s.lb.Index])
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
	// Limits or the usable set changed: waiting requests may go now.
	if b.queue != nil {
		b.queue.DispatchAll(b)
	}
}

// backendView is what rebuildLocked decided about a backend as a whole,
// for stats: HAProxy's srv_act, srv_bck, tot_weight and the uweight sum.
type backendView struct {
	act, bck int // usable active and backup servers
	eweight  int // effective weights of the servers in use, lb units
	uweight  int // user weights of the servers in use
}

// rampWeight is HAProxy's slowstart weight factor, in sixteenths of the
// full weight: 1 + floor(16 x elapsed / slowstart), for 0 <= elapsed <
// slowstart (1 at the start, 16 in the last sixteenth).
func rampWeight(elapsed, ss time.Duration) int {
	return 1 + int(lb.WeightScale*int64(elapsed)/int64(ss))
}

// rampMaxConn is HAProxy's slowstart maxconn: max(1, mc x floor(100 x
// elapsed / slowstart) / 100).
func rampMaxConn(mc int, elapsed, ss time.Duration) int {
	return max(1, mc*int(100*int64(elapsed)/int64(ss))/100)
}

// nextRampStep returns how long after elapsed the ramp of a server next
// changes its weight (dynamic algorithms) or its maxconn mc, or ends: the
// slowstart timer fires then, and only then.
func nextRampStep(elapsed, ss time.Duration, mc int, dynamic bool) time.Duration {
	e, s := int64(elapsed), int64(ss)
	next := s
	if dynamic {
		k := int64(rampWeight(elapsed, ss)) // the next step is the k-th sixteenth
		next = min(next, (k*s+lb.WeightScale-1)/lb.WeightScale)
	}
	if mc > 0 {
		cur := rampMaxConn(mc, elapsed, ss)
		for r := 100*e/s + 1; r < 100; r++ {
			if max(1, mc*int(r)/100) != cur {
				next = min(next, (r*s+99)/100)
				break
			}
		}
	}
	return time.Duration(max(next-e, 1))
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
	s.bal.frozen = false // recomputed from the new weight, as HAProxy's
	b.rebuildLocked()
	return old, nil
}

// SetAdmin sets a server's admin state and returns the previous one. A
// server leaving MAINT starts its slowstart, as in HAProxy. The last
// change (lastchg) moves unless the server is DOWN: one that was DOWN
// and enters or leaves maintenance stays DOWN for HAProxy 2.6, whose
// lastchg keeps counting (a fresh-user trial: 12 then 17 s, where
// fulcrum went back to 0).
func (b *Backend) SetAdmin(s *Server, a AdminState) AdminState {
	b.mu.Lock()
	defer b.mu.Unlock()
	old := AdminState(s.admin.Swap(int32(a)))
	if old != a {
		now := b.clock.Now()
		if s.Op() != OpDown {
			s.lastChange.Store(now.UnixNano())
		}
		if old == AdminMaint {
			s.bal.frozen = false
			if s.Conf.Slowstart > 0 {
				s.bal.rampStart = now
			}
		}
		b.rebuildLocked()
		if a != AdminReady {
			b.redistribute(s)
		}
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
		if o == OpUp {
			s.bal.frozen = false
			if s.Conf.Slowstart > 0 {
				s.bal.rampStart = now
			}
		}
		b.rebuildLocked()
		if o != OpUp {
			b.redistribute(s)
		}
	}
	return old
}

// assign picks a server for r (avoiding avoid when another is usable) and
// starts a session on it: lbtot (unless it is avoid again), the server's
// scur and stot, and the load the algorithm sees. It returns nil when no
// server is usable, every usable one is full ("none free": the request
// queues), or a hashing algorithm keeps r on its full key's server
// (assignOrQueue). Every successful assign is paired with one unassign
// when the session ends.
func (b *Backend) assign(r *lb.Request, avoid *Server, now time.Time) *Server {
	s, _ := b.assignOrQueue(r, avoid, now)
	return s
}

// assignOrQueue is assign that also returns, when it starts no session,
// the server r must wait for: the full server a hashing algorithm chose by
// r's key under hash_preserve_affinity "always" or "maxqueue" (HAProxy
// queues such a request on its server, as a persistent one). queueOn is
// nil when r may go to any server (the backend queue).
func (b *Backend) assignOrQueue(r *lb.Request, avoid *Server, now time.Time) (srv, queueOn *Server) {
	if b.affine == nil && (b.free.Load() <= 0 || b.queue.Len(-1) > 0) {
		return nil, nil // full, or older requests wait: join them
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
	//
	// A server deleted meanwhile (servers.go) is not in its slot any more,
	// or is marked gone once its session is counted: the pick is then lost
	// as a race is, and the request tries again.
	for range len(b.Servers()) + 1 {
		var v *lb.Server
		affine := false
		if b.affine != nil {
			v, affine = b.affine.PickAffine(r, av)
		} else {
			v = b.algo.Pick(r, av)
		}
		if v == nil {
			return nil, nil
		}
		s := b.slot(v.Index)
		if s == nil || &s.lb != v {
			continue // deleted after the pick
		}
		if affine && v.Queued.Load() > 0 {
			return nil, s // older requests wait for the key's server: join them
		}
		if !reserve(v) {
			b.countFree(s, -1)
			if affine {
				return nil, s // the key's server is full: wait for it
			}
			continue
		}
		if s.gone.Load() {
			b.unreserve(s)
			continue
		}
		if v.MaxConn.Load() > 0 {
			b.countFree(s, -1)
		}
		b.countLbtot(s, avoid)
		s.Counters.sessionStart(now)
		if b.observer != nil {
			b.observer.ConnTaken(v)
		}
		return s, nil
	}
	return nil, nil
}

// countLbtot counts a pick of the algorithm in lbtot, unless it picked the
// server the request had before (avoid, on a redispatch): HAProxy's
// cum_lbconn, which counts a server change, not a retry.
func (b *Backend) countLbtot(s, avoid *Server) {
	if s != avoid {
		s.Counters.Lbtot.Add(1)
		b.Counters.Lbtot.Add(1)
	}
}

// reserve counts one more session on v unless that would exceed its
// effective maxconn (lb.Server.Limit: dynamic with minconn).
func reserve(v *lb.Server) bool {
	for {
		m, c := v.Limit(), v.Cur.Load()
		if m > 0 && c >= m {
			return false
		}
		if v.Cur.CompareAndSwap(c, c+1) {
			return true
		}
	}
}

// unassign ends a session started by assign or take, and hands the freed
// slot to the oldest request waiting for it, if any.
func (b *Backend) unassign(s *Server) {
	s.Counters.sessionEnd()
	b.release(s)
}

// release frees a slot of s (Cur already counted it) and dispatches it.
// The slot is released before the queue is looked at (queue.Queues'
// lost-wakeup rule).
func (b *Backend) release(s *Server) {
	s.lb.Cur.Add(-1)
	if s.lb.MaxConn.Load() > 0 {
		b.countFree(s, -1)
	}
	b.queue.Dispatch(s.lb.Index, b)
	if b.observer != nil {
		b.observer.ConnReleased(&s.lb)
	}
}

// Take implements queue.Slots: it reserves a session on the server in
// slot i for a request leaving a queue, if it has a free slot below its
// effective maxconn and, for a request of the backend queue (not pinned),
// is in the usable set; never on a server deleted meanwhile. Called by
// proxy/queue under its lock; takes s.bal.mu.
func (b *Backend) Take(i int, pinned bool) bool {
	s := b.slot(i)
	if s == nil {
		return false
	}
	if !pinned {
		s.bal.mu.Lock()
		in := s.bal.inSet
		s.bal.mu.Unlock()
		if !in {
			return false
		}
	}
	if !reserve(&s.lb) {
		return false
	}
	if s.gone.Load() {
		b.unreserve(s)
		return false
	}
	if s.lb.MaxConn.Load() > 0 {
		b.countFree(s, -1)
	}
	return true
}

// Why a request that queued got no server (take's errors). The HTTP and
// TCP engines map them to 503 and the log's termination flags.
var (
	errQueueTimeout = errors.New("timeout queue expired")         // sQ
	errQueueAbort   = errors.New("client went away while queued") // CQ
	errQueueFull    = errors.New("server queue full")             // SQ (maxqueue, no redispatch)
)

// pendingPool recycles Pendings with their channels.
var pendingPool = sync.Pool{New: func() any { return new(queue.Pending) }}

// tryTake is take's assignment without a queue (Stream.TryTake; not under
// hash_preserve_affinity): the server it starts a session on, or nil when
// r would have to queue, no server is usable, or pin was deleted; nothing
// is then counted or reserved (take does it all again).
func (b *Backend) tryTake(r *lb.Request, pin *Server, now time.Time) *Server {
	if pin != nil {
		if pin.lb.Queued.Load() != 0 || !reserve(&pin.lb) {
			return nil
		}
		if pin.gone.Load() {
			b.unreserve(pin)
			return nil
		}
		if pin.lb.MaxConn.Load() > 0 {
			b.countFree(pin, -1)
		}
		b.started(pin, now)
		return pin
	}
	srv, _ := b.assignOrQueue(r, nil, now)
	return srv
}

// take starts a session for r on a server of b, waiting in a queue while
// every slot is taken, and returns the server and how long r waited.
//
// pin, when non-nil, is the server r is pinned to (cookie or stick table
// persistence, decided by the caller, which has checked that persistence
// may use it): r gets a slot on pin or waits in pin's own queue, whatever
// pin's state; when that queue holds maxqueue requests, r is redispatched
// to the algorithm with `redispatch` (counted in wredis), else it fails
// with errQueueFull. Without pin, r goes to the algorithm (avoid as in
// assign), and waits in the backend queue when every usable server is
// full, or in its server's own queue when a hashing algorithm keeps r's
// key there (hash_preserve_affinity): then a full queue fails with
// errQueueFull whatever `redispatch` says, as in HAProxy (the algorithm
// would choose the same server again). With no usable server at all r
// fails with errNoServer at once. A request waiting in a server's queue
// moves to the backend queue when that server stops taking traffic and
// `redispatch` is on (redistribute); served elsewhere, it counts in the
// server's wredis.
//
// A wait ends with a slot, errQueueTimeout (timeout queue, falling back to
// timeout connect), or errQueueAbort when wait saw the client go away: in
// both cases r never reaches a server, and the slot handed to it in a race
// is given back. Every successful take is paired with one unassign.
//
// tw is -1 when r never waited in a queue, else the time it waited.
func (b *Backend) take(r *lb.Request, pin, avoid *Server, now time.Time, wake queue.Waker, wait queue.WaitFunc) (srv *Server, tw time.Duration, err error) {
	direct := pin != nil // persistence chose the server, not the algorithm
	if direct && pin.lb.Queued.Load() == 0 && reserve(&pin.lb) {
		if !pin.gone.Load() {
			if pin.lb.MaxConn.Load() > 0 {
				b.countFree(pin, -1)
			}
			b.started(pin, now)
			return pin, -1, nil
		}
		// Deleted since persistence chose it: the algorithm chooses.
		b.unreserve(pin)
		return b.take(r, nil, avoid, now, wake, wait)
	}
	if !direct {
		if srv, pin = b.assignOrQueue(r, avoid, now); srv != nil {
			return srv, -1, nil
		}
		if pin != nil {
			b.countLbtot(pin, avoid) // HAProxy counts the pick, queued or not
		} else if b.usable.Load() == 0 {
			return nil, -1, errNoServer
		}
	}
	qi := -1
	if pin != nil {
		qi = pin.lb.Index
	}
	p := pendingPool.Get().(*queue.Pending)
	defer func() {
		p.Reset()
		pendingPool.Put(p)
	}()
	p.Wake = wake
	if !b.queue.Enqueue(p, qi, pin.maxQueue(), now, b) {
		if pin.gone.Load() {
			// Deleted meanwhile: its queue is closed; the algorithm chooses.
			return b.take(r, nil, avoid, now, wake, wait)
		}
		// pin's queue is full (maxqueue).
		if !direct || !b.Conf.Redispatch {
			pin.Counters.Econ.Add(1)
			b.Counters.Econ.Add(1)
			return pin, -1, errQueueFull
		}
		pin.Counters.Wredis.Add(1)
		b.Counters.Wredis.Add(1)
		return b.take(r, nil, avoid, now, wake, wait)
	}
	if pin != nil && b.qobs != nil {
		b.qobs.QueueChanged(&pin.lb)
	}
	end := queue.WaitServed
	if p.Served() < 0 {
		var deadline time.Time
		if b.timeoutQueue > 0 {
			deadline = now.Add(b.timeoutQueue)
		}
		end = wait(p, deadline)
	}
	i := b.queue.Cancel(p) // -1: still waiting, unlinked now
	moved := p.Redistributed()
	after := time.Now()
	tw = after.Sub(now)
	if pin != nil && b.qobs != nil && i < 0 && !moved {
		b.qobs.QueueChanged(&pin.lb)
	}
	switch {
	case i >= 0 && end == queue.WaitGone:
		b.release(b.slot(i)) // served in the race: give it back
		return nil, tw, errQueueAbort
	case i >= 0:
		// The session handed over keeps the server in its slot: a server
		// with a session is never deleted.
		srv = b.slot(i)
		// A queue pop: not in lbtot, as HAProxy. A request moved off its
		// server counts as HAProxy counts a reassigned stream.
		b.started(srv, after)
		if moved {
			sc, bc := &pin.Counters.Wredis, &b.Counters.Wredis
			if srv == pin {
				sc, bc = &pin.Counters.Wretr, &b.Counters.Wretr
			}
			sc.Add(1)
			bc.Add(1)
		}
		return srv, tw, nil
	case end == queue.WaitGone:
		return pin, tw, errQueueAbort
	}
	// HAProxy counts a queue timeout as a failed connection.
	if pin != nil {
		pin.Counters.Econ.Add(1)
	}
	b.Counters.Econ.Add(1)
	return pin, tw, errQueueTimeout
}

// redistribute moves the requests waiting in s's own queue to the backend
// queue, where the other servers serve them, when `redispatch` allows: as
// HAProxy's pendconn_redistribute when a server goes DOWN, NOLB, DRAIN or
// MAINT. Without redispatch they stay and wait for s (or their timeout).
// Called by SetOp and SetAdmin with b.mu held, after rebuildLocked took s
// out of the usable set.
func (b *Backend) redistribute(s *Server) {
	if !b.Conf.Redispatch {
		return
	}
	if b.queue.Redistribute(s.lb.Index, b) > 0 && b.qobs != nil {
		b.qobs.QueueChanged(&s.lb)
	}
}

// started counts a session that take started on s outside assign: a slot
// reserved directly (pinned) or handed over from a queue. Neither is in
// lbtot: HAProxy counts only the algorithm's picks there (its stats doc:
// "ignores queue pop and stickiness").
func (b *Backend) started(s *Server, now time.Time) {
	s.Counters.sessionStart(now)
	if b.observer != nil {
		b.observer.ConnTaken(&s.lb)
	}
}

// maxQueue is s's maxqueue, 0 (no limit) for a nil server.
func (s *Server) maxQueue() int {
	if s == nil {
		return 0
	}
	return s.Conf.MaxQueue
}

// EffectiveMaxConn is the server's limit at this instant, 0 for none: its
// maxconn, lowered by slowstart while it ramps up and made dynamic by
// minconn and the backend's fullconn (HAProxy's srv_dynamic_maxconn). This
// is what stats print as slim and `show queue` as maxconn.
func (s *Server) EffectiveMaxConn() int { return int(s.lb.Limit()) }

// FullConn is the backend's effective fullconn: the configured value, else
// 10% of the sum of the maxconn of the frontends that route to it.
func (b *Backend) FullConn() int { return int(b.fullConn.Load()) }

// TimeoutQueue is how long a request may wait in the backend's queues:
// timeout queue, else timeout connect (0: no limit).
func (b *Backend) TimeoutQueue() time.Duration { return b.timeoutQueue }

// QueueState is one queue as `show queue` and the stats page report it.
type QueueState struct {
	Server   string        // "" for the backend queue
	Waiting  int           // requests waiting now (qcur)
	Max      int64         // most that ever waited at once (qmax)
	Oldest   time.Duration // how long the oldest has waited
	MaxQueue int           // server maxqueue, 0 = unlimited (qlimit)
	MaxConn  int           // effective maxconn, 0 = unlimited
	Cur      int64         // sessions on the server now
}

// Queues returns the backend queue first, then each server's queue, at now.
func (b *Backend) Queues(now time.Time) []QueueState {
	in := b.queue.Info(-1, now)
	out := []QueueState{{Waiting: in.Waiting, Max: in.Max, Oldest: in.Oldest}}
	for _, s := range b.Servers() {
		in := b.queue.Info(s.lb.Index, now)
		out = append(out, QueueState{Server: s.Name, Waiting: in.Waiting, Max: in.Max, Oldest: in.Oldest,
			MaxQueue: s.Conf.MaxQueue, MaxConn: s.EffectiveMaxConn(), Cur: s.lb.Cur.Load()})
	}
	return out
}
