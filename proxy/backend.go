package proxy

import (
	"fmt"
	"sync"
	"time"

	"github.com/fulcrum-proxy/fulcrum/conf"
	"github.com/fulcrum-proxy/fulcrum/proxy/lb"
)

// Backend is a set of servers and the algorithm that balances among them.
//
// Lock: mu guards the usable set and every call to the algorithm's Rebuild;
// it is taken only when a server's state or weight changes, never per
// request. Pick synchronises inside the algorithm.
type Backend struct {
	Name    string
	ID      int // 1-based position in the configuration (HAProxy's iid)
	Conf    *conf.Backend
	Servers []*Server

	mu   sync.Mutex
	algo lb.Algorithm

	Counters Counters
}

// newBackend builds a backend from its configuration.
func newBackend(id int, bc *conf.Backend) (*Backend, error) {
	entry, err := lb.Lookup(bc.Balance)
	if err != nil {
		return nil, err
	}
	if entry.New == nil {
		return nil, fmt.Errorf("backend %q: balance %q: not supported yet", bc.Name, bc.Balance)
	}
	b := &Backend{Name: bc.Name, ID: id, Conf: bc, algo: entry.New()}
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

// rebuildLocked recomputes effective weights and the usable set and hands it
// to the algorithm. b.mu must be held.
func (b *Backend) rebuildLocked() {
	usable := make([]*lb.Server, 0, len(b.Servers))
	for _, s := range b.Servers {
		w := int(s.UserWeight.Load())
		if s.Admin() != AdminReady || s.Op() != OpUp {
			w = 0
		}
		s.lb.EffectiveWeight = w
		if w > 0 {
			usable = append(usable, &s.lb)
		}
	}
	b.algo.Rebuild(usable)
}

// SetWeight sets a server's user weight (0..256) and applies it to the next
// pick. It returns the previous weight.
func (b *Backend) SetWeight(s *Server, w int) (old int, err error) {
	if w < 0 || w > 256 {
		return 0, fmt.Errorf("weight must be 0..256, got %d", w)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	old = int(s.UserWeight.Swap(int32(w)))
	b.rebuildLocked()
	return old, nil
}

// SetAdmin sets a server's admin state and returns the previous one.
func (b *Backend) SetAdmin(s *Server, a AdminState) AdminState {
	b.mu.Lock()
	defer b.mu.Unlock()
	old := AdminState(s.admin.Swap(int32(a)))
	if old != a {
		s.lastChange.Store(time.Now().UnixNano())
		b.rebuildLocked()
	}
	return old
}

// SetOp sets a server's operational state and returns the previous one.
func (b *Backend) SetOp(s *Server, o OpState) OpState {
	b.mu.Lock()
	defer b.mu.Unlock()
	old := OpState(s.op.Swap(int32(o)))
	if old != o {
		s.lastChange.Store(time.Now().UnixNano())
		b.rebuildLocked()
	}
	return old
}

// assign picks a server for r (avoiding avoid when another is usable) and
// starts a session on it: lbtot, the server's scur and stot, and the load
// the algorithm sees. It returns nil when no server is usable. Every
// successful assign is paired with one unassign when the session ends.
func (b *Backend) assign(r *lb.Request, avoid *Server, now time.Time) *Server {
	var av *lb.Server
	if avoid != nil {
		av = &avoid.lb
	}
	v := b.algo.Pick(r, av)
	if v == nil {
		return nil
	}
	s := b.Servers[v.Index]
	s.Counters.Lbtot.Add(1)
	b.Counters.Lbtot.Add(1)
	s.Counters.sessionStart(now)
	s.lb.Cur.Add(1)
	if co, ok := b.algo.(lb.ConnObserver); ok {
		co.ConnTaken(v)
	}
	return s
}

// unassign ends a session started by assign.
func (b *Backend) unassign(s *Server) {
	s.lb.Cur.Add(-1)
	s.Counters.sessionEnd()
	if co, ok := b.algo.(lb.ConnObserver); ok {
		co.ConnReleased(&s.lb)
	}
}
