package proxy

// A backend's servers, and servers that come and go while traffic flows:
// the Runtime API's `add server` and `del server` (HAProxy 2.6's dynamic
// servers), which a reload and the state file carry over.
//
// The servers are published as one immutable serverSet, replaced as a
// whole (copy on write) under Backend.mu when one is added or deleted; the
// request path reads it with one atomic load and takes no lock for it. A
// server has an id (HAProxy's puid: what stats, `show servers state` and
// `#<id>` arguments name) and a slot (lb.Server.Index: where the
// algorithms and the queues keep its state). Ids are never reused while
// the process lives; slots are, once a deleted server has let go of its
// own, so that a process adding and deleting servers for months keeps its
// tables the size of its backends.
//
// Deleting a server races with requests picking it: an algorithm may
// return a server an instant before a Rebuild took it out, a queue may
// hand it a freed slot. The rule that keeps a request from starting a
// session on a deleted server is Dekker's: the deleter marks the server
// gone, then looks at its sessions (lb.Server.Cur); a request counts its
// session (reserve), then looks at the mark. Both are sequentially
// consistent atomics, so one side sees the other: the deleter finds the
// session and refuses ("still has connections"), or the request finds the
// mark and gives its session back (unreserve) before anything else saw
// it. Requests waiting in the server's own queue are covered by
// queue.Queues.RemoveServer, which refuses while any waits and closes the
// queue to new ones.

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/fulcrum-proxy/fulcrum/conf"
	"github.com/fulcrum-proxy/fulcrum/proxy/h2mux"
	"github.com/fulcrum-proxy/fulcrum/proxy/http1"
)

// serverSet is one published state of a backend's servers; never modified
// once published.
type serverSet struct {
	list    []*Server          // in id order
	slots   []*Server          // by slot (lb.Server.Index); nil for a free one
	cookies map[string]*Server // by cookie value, for cookie persistence
}

// Servers returns the backend's servers, in id order (HAProxy's order in
// stats). The slice is a published state: never modified, valid after
// servers are added or deleted, which it does not show.
func (b *Backend) Servers() []*Server { return b.set.Load().list }

// Server returns the server named name, or nil.
func (b *Backend) Server(name string) *Server {
	for _, s := range b.Servers() {
		if s.Name == name {
			return s
		}
	}
	return nil
}

// ServerByID returns the server whose id is id, or nil.
func (b *Backend) ServerByID(id int) *Server {
	list := b.Servers()
	i := sort.Search(len(list), func(i int) bool { return list[i].ID >= id })
	if i < len(list) && list[i].ID == id {
		return list[i]
	}
	return nil
}

// slot returns the server in slot i, nil when there is none: one atomic
// load, for the request path.
func (b *Backend) slot(i int) *Server {
	if slots := b.set.Load().slots; i >= 0 && i < len(slots) {
		return slots[i]
	}
	return nil
}

// publishLocked publishes list (in id order) with its slots and cookies.
// b.mu must be held (or b not yet shared).
func (b *Backend) publishLocked(list []*Server) {
	set := &serverSet{list: list}
	n := 0
	for _, s := range list {
		n = max(n, s.lb.Index+1)
	}
	set.slots = make([]*Server, n)
	for _, s := range list {
		set.slots[s.lb.Index] = s
		if s.Conf.Cookie != "" {
			if set.cookies == nil {
				set.cookies = map[string]*Server{}
			}
			if _, dup := set.cookies[s.Conf.Cookie]; !dup { // the first in id order, as before
				set.cookies[s.Conf.Cookie] = s
			}
		}
	}
	b.set.Store(set)
}

// newServer returns the server of sc in b with id and slot, not yet
// published, at its configured weight: in MAINT when sc is disabled.
// dynamic says it is not in the configuration file.
func (b *Backend) newServer(sc *conf.Server, id, slot int, dynamic bool, now time.Time) *Server {
	s := &Server{Name: sc.Name, ID: id, Backend: b, Conf: sc, InitialWeight: sc.Weight, dynamic: dynamic}
	addr := sc.Address
	s.addr.Store(&addr)
	s.UserWeight.Store(int32(sc.Weight))
	if sc.Disabled {
		s.admin.Store(int32(AdminMaint))
	}
	s.lastChange.Store(now.UnixNano())
	s.initDNS() // resolution.go
	s.lb.Index = slot
	s.lb.Name = sc.Name
	s.up.Pool.Configure(sc.PoolMaxConn, sc.PoolLowConn, sc.PoolPurgeDelay)
	s.up.Reuse, s.up.TimeoutServer = http1.ParseReuse(b.Conf.HTTPReuse), b.Conf.TimeoutServer
	s.up.TimeoutTunnel = b.Conf.TimeoutTunnel
	s.up.TimeoutConnect = b.Conf.TimeoutConnect
	s.up.H1 = &b.H1
	s.setupTLS()
	if sc.SSL || sc.SendProxy != 0 {
		b.prepConns.Store(true)
	}
	if sc.Proto == "h2" || s.byALPN() {
		s.up.H2 = h2mux.NewPool(&b.H2, sc.PoolPurgeDelay)
		s.up.ByALPN = sc.Proto != "h2"
	}
	s.lb.MinConn.Store(int64(sc.MinConn))
	s.lb.MaxQueue = sc.MaxQueue
	s.lb.BackendLoad = &b.Counters.Scur
	s.lb.FullConn = &b.fullConn
	return s
}

// Errors of AddServer and DeleteServer, named after HAProxy 2.6's replies
// (the Runtime API prints those).
var (
	// ErrServerExists: "Already exists a server with the same name in
	// backend."
	ErrServerExists = errors.New("a server with the same name exists in the backend")
	// ErrServerNotMaint: "Only servers in maintenance mode can be
	// deleted."
	ErrServerNotMaint = errors.New("only servers in maintenance mode can be deleted")
	// ErrServerBusy: "Server still has connections attached to it,
	// cannot remove it."
	ErrServerBusy = errors.New("server still has connections attached to it")
)

// IDInUseError is AddServer's error for an id another server has.
type IDInUseError struct {
	ID int
	By *Server
}

func (e *IDInUseError) Error() string {
	return fmt.Sprintf("id %d is used by server %q", e.ID, e.By.Name)
}

// AddServer adds a server built from sc to b while traffic flows, as
// HAProxy's `add server`: it starts in MAINT unless sc says otherwise
// (sc.Disabled, which the Runtime API sets unless told "enabled"), with id
// as its id when id > 0 (HAProxy's `id`), else the next id the backend
// never gave. It fails with IDInUseError for an id a server of b has, then
// with ErrServerExists for a name one has (HAProxy's order). sc must be
// valid (conf.ParseServerLine) and is kept as the server's configuration.
//
// The server's checks are started by the proxy's ServerWatcher, if one is
// installed (proxy/check's Checker), after it is published.
func (p *Proxy) AddServer(b *Backend, sc *conf.Server, id int) (*Server, error) {
	s, err := b.addServer(sc, addOpts{id: id, dynamic: true, fresh: true, fds: p.fds, now: time.Now()})
	if err != nil {
		return nil, err
	}
	if w := p.watcher.Load(); w != nil {
		(*w).ServerAdded(s)
	}
	return s, nil
}

// addOpts are addServer's settings.
type addOpts struct {
	id int // the server's id, 0 for the next one
	// dynamic: the server is not in the configuration file (added at
	// runtime, or carried over a reload or a restart as such). fresh: it
	// is added by an operator now, not carried: with health checks it
	// starts DOWN and takes traffic only once they pass (proxy/check).
	dynamic, fresh bool
	fds            http1.Budget // the process's descriptors, which its idle connections count in
	now            time.Time
}

// addServer adds the server of sc to b: see AddServer.
func (b *Backend) addServer(sc *conf.Server, o addOpts) (*Server, error) {
	id, now := o.id, o.now
	b.mu.Lock()
	defer b.mu.Unlock()
	list := b.Servers()
	if id > 0 {
		if by := b.ServerByID(id); by != nil {
			return nil, &IDInUseError{ID: id, By: by}
		}
	}
	if b.Server(sc.Name) != nil {
		return nil, ErrServerExists
	}
	forced := id > 0
	if !forced {
		for b.ServerByID(b.nextID) != nil || b.retired[b.nextID] { // taken by a forced id, or was
			b.nextID++
		}
		id = b.nextID
		b.nextID++
	}
	// The first free slot, else a new one at the end.
	slots := b.set.Load().slots
	slot := slices.Index(slots, nil)
	if slot < 0 {
		slot = len(slots)
	}
	s := b.newServer(sc, id, slot, o.dynamic, now)
	s.forcedID = forced
	if o.fresh && sc.Check {
		s.op.Store(int32(OpDown))
	}
	s.up.Pool.SetBudget(o.fds)
	b.queue.AddServer(slot, &s.lb.Queued)
	i := sort.Search(len(list), func(i int) bool { return list[i].ID > id })
	next := slices.Insert(slices.Clone(list), i, s)
	b.publishLocked(next)
	b.rebuildLocked()
	return s, nil
}

// removable reports why s cannot be deleted now, nil when it can: it must
// be in MAINT (ErrServerNotMaint), and have no session and no request
// waiting in its queue (ErrServerBusy). HAProxy's srv_check_for_deletion,
// which `wait srv-removable` polls.
func (s *Server) removable() error {
	if s.Admin() != AdminMaint {
		return ErrServerNotMaint
	}
	if s.lb.Cur.Load() > 0 || s.lb.Queued.Load() > 0 {
		return ErrServerBusy
	}
	return nil
}

// Removable reports whether DeleteServer would delete s now: nil, or the
// error it would return (ErrServerNotMaint, ErrServerBusy). For `wait
// <delay> srv-removable`.
func (b *Backend) Removable(s *Server) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return s.removable()
}

// DeleteServer deletes s from its backend while traffic flows, as
// HAProxy's `del server`: only a server in MAINT (ErrServerNotMaint) with
// no session and nothing waiting in its queue (ErrServerBusy). Its idle
// connections are closed (its HTTP/2 ones too), its checks stopped
// (ServerWatcher), its id is never given again and its slot goes to a
// server added later. Any server may be deleted, those of the
// configuration file included (a reload brings them back).
func (p *Proxy) DeleteServer(s *Server) error {
	if err := s.Backend.deleteServer(s); err != nil {
		return err
	}
	s.up.Pool.CloseAll()
	if s.up.H2 != nil {
		s.up.H2.CloseAll() // no stream is left on them: it has no session
	}
	if w := p.watcher.Load(); w != nil {
		(*w).ServerDeleted(s)
	}
	s.SetTrafficObserver(nil)
	return nil
}

// deleteServer takes s out of b's published servers: see DeleteServer and
// the race it settles (the file's header comment).
func (b *Backend) deleteServer(s *Server) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	list := b.Servers()
	i := slices.Index(list, s)
	if i < 0 {
		return ErrServerExists // deleted meanwhile: "No such server" to the caller
	}
	if err := s.removable(); err != nil {
		return err
	}
	s.gone.Store(true)
	if s.lb.Cur.Load() > 0 || !b.queue.RemoveServer(s.lb.Index) {
		s.gone.Store(false) // a request got there first
		return ErrServerBusy
	}
	if b.retired == nil {
		b.retired = map[int]bool{}
	}
	b.retired[s.ID] = true // never given again by nextID
	s.deleted.Store(true)
	b.publishLocked(slices.Delete(slices.Clone(list), i, i+1))
	b.rebuildLocked()
	return nil
}

// Gone reports whether s was deleted from its backend. A delete that backed
// out (the server still had a session) never shows here, even for the
// instant its mark was set.
func (s *Server) Gone() bool { return s.deleted.Load() }

// Dynamic reports whether s is not in the configuration file: added at
// runtime (`add server`), or carried over a reload or a restart as such.
func (s *Server) Dynamic() bool { return s.dynamic }

// ForcedID reports whether s's id was given by an operator (`id`), not
// numbered by the backend: HAProxy's srv_f_forced_id.
func (s *Server) ForcedID() bool { return s.forcedID }

// unreserve gives back a session reserve counted on s when the request
// must not use s after all (it was deleted meanwhile). Nothing else saw
// the session: no counter, no hook, no queue.
func (b *Backend) unreserve(s *Server) {
	s.lb.Cur.Add(-1)
	if s.lb.MaxConn.Load() > 0 {
		b.countFree(s, -1)
	}
}

// ServerWatcher is told of servers added to and deleted from a proxy's
// backends at runtime: proxy/check's Checker starts and stops their
// checks. The calls come after the change, from the goroutine that made
// it; they must not call back into the backend's lock-holding methods
// synchronously from another goroutine waiting on them.
type ServerWatcher interface {
	ServerAdded(s *Server)
	ServerDeleted(s *Server)
}

// WatchServers installs w as the proxy's ServerWatcher and returns the
// one it replaced; nil removes it.
func (p *Proxy) WatchServers(w ServerWatcher) ServerWatcher {
	var old *ServerWatcher
	if w == nil {
		old = p.watcher.Swap(nil)
	} else {
		old = p.watcher.Swap(&w)
	}
	if old == nil {
		return nil
	}
	return *old
}

// UnwatchServers removes w if it is the proxy's ServerWatcher, and leaves
// another one in place.
func (p *Proxy) UnwatchServers(w ServerWatcher) {
	if cur := p.watcher.Load(); cur != nil && *cur == w {
		p.watcher.CompareAndSwap(cur, nil)
	}
}

// carryDynamic adds to b, which replaces ob in a reload, every server ob
// has that is not in the configuration file (added at runtime) and whose
// name b's file does not define (the file wins): same configuration,
// address, and id when b has no server with it. The ids ob gave stay
// given: b numbers new servers after them. Nothing serves from b yet;
// ob's lock is taken. fds is the process's descriptor budget.
func (b *Backend) carryDynamic(ob *Backend, fds http1.Budget, now time.Time) {
	ob.mu.Lock()
	b.nextID = max(b.nextID, ob.nextID)
	for id := range ob.retired {
		if b.retired == nil {
			b.retired = map[int]bool{}
		}
		b.retired[id] = true
	}
	var carried []*Server
	for _, os := range ob.Servers() {
		if os.dynamic && b.Server(os.Name) == nil {
			carried = append(carried, os)
		}
	}
	ob.mu.Unlock()
	for _, os := range carried {
		id := os.ID
		if b.ServerByID(id) != nil {
			id = 0
		}
		s, err := b.addServer(os.Conf, addOpts{id: id, dynamic: true, fds: fds, now: now})
		if err != nil {
			continue // cannot happen: the name and id were free
		}
		s.forcedID = os.forcedID
	}
}
