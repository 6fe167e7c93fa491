package proxy

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fulcrum-proxy/fulcrum/conf"
	"github.com/fulcrum-proxy/fulcrum/proxy/lb"
)

// dynServer returns the configuration of a server added at runtime, as
// conf.ParseServerLine gives it: in MAINT unless enabled.
func dynServer(name string, weight int, enabled bool) *conf.Server {
	return &conf.Server{Name: name, Address: "127.0.0.1:1", Weight: weight, Disabled: !enabled,
		ErrorLimit: 10, OnError: "fail-check", PoolMaxConn: -1, PoolPurgeDelay: 5 * time.Second}
}

// proxyOf returns a proxy around b alone, for AddServer and DeleteServer.
func proxyOf(b *Backend) *Proxy {
	return &Proxy{Backends: []*Backend{b}, fds: newFDBudget()}
}

// names returns the servers' names in order.
func serverNames(list []*Server) []string {
	var out []string
	for _, s := range list {
		out = append(out, fmt.Sprintf("%s#%d@%d", s.Name, s.ID, s.lb.Index))
	}
	return out
}

// TestAddDeleteServer: a server added at runtime gets the next id and the
// first free slot, starts in MAINT (no traffic) unless enabled, and takes
// its share once READY; deleting one needs MAINT, then frees its slot for
// the next server but never its id; errors come in HAProxy's order.
func TestAddDeleteServer(t *testing.T) {
	b := queueBackend(t, 2, nil) // s1#1 s2#2, maxconn 1
	p := proxyOf(b)
	n3, err := p.AddServer(b, dynServer("n3", 1, false), 0)
	if err != nil {
		t.Fatal(err)
	}
	if n3.ID != 3 || n3.lb.Index != 2 || n3.Admin() != AdminMaint || !n3.Dynamic() || n3.ForcedID() {
		t.Fatalf("n3: id %d slot %d admin %v dynamic %v forced %v", n3.ID, n3.lb.Index, n3.Admin(), n3.Dynamic(), n3.ForcedID())
	}
	// In MAINT: never picked.
	for range 4 {
		s := b.assign(nil, nil, time.Now())
		if s == nil || s == n3 {
			t.Fatalf("picked %v", s)
		}
		b.unassign(s)
	}
	b.SetAdmin(n3, AdminReady)
	got := map[string]int{}
	for range 30 {
		s := b.assign(nil, nil, time.Now())
		got[s.Name]++
		b.unassign(s)
	}
	if got["n3"] != 10 || got["s1"] != 10 || got["s2"] != 10 {
		t.Fatalf("after enable: %v, want 10 each", got)
	}
	// Errors: an id in use, then a name in use.
	if _, err := p.AddServer(b, dynServer("x", 1, false), 2); !errors.As(err, new(*IDInUseError)) {
		t.Fatalf("id 2: %v", err)
	}
	if _, err := p.AddServer(b, dynServer("s1", 1, false), 0); !errors.Is(err, ErrServerExists) {
		t.Fatalf("name s1: %v", err)
	}
	// Delete: READY is refused, a session is refused, then it goes.
	if err := p.DeleteServer(n3); !errors.Is(err, ErrServerNotMaint) {
		t.Fatalf("delete READY: %v", err)
	}
	b.SetAdmin(n3, AdminDrain)
	pinned := <-pinnedTake(b, n3) // a persistent client still on it
	b.SetAdmin(n3, AdminMaint)
	if pinned != n3 || !errors.Is(p.DeleteServer(n3), ErrServerBusy) || n3.Gone() {
		t.Fatalf("delete with a session: pinned %v, gone %v", pinned, n3.Gone())
	}
	b.unassign(n3)
	if err := p.DeleteServer(n3); err != nil || !n3.Gone() {
		t.Fatalf("delete: %v", err)
	}
	if b.Server("n3") != nil || b.ServerByID(3) != nil || len(b.Servers()) != 2 {
		t.Fatalf("still there: %v", serverNames(b.Servers()))
	}
	// The next server takes slot 2 again, and id 4: 3 is never given again.
	n4, err := p.AddServer(b, dynServer("n4", 1, true), 0)
	if err != nil || n4.ID != 4 || n4.lb.Index != 2 {
		t.Fatalf("n4: %v id %d slot %d", err, n4.ID, n4.lb.Index)
	}
	// A forced id is kept, and the numbering goes around it.
	f9, _ := p.AddServer(b, dynServer("f9", 1, false), 6)
	n5, _ := p.AddServer(b, dynServer("n5", 1, false), 0)
	n6, _ := p.AddServer(b, dynServer("n6", 1, false), 0)
	if !f9.ForcedID() || f9.ID != 6 || n5.ID != 5 || n6.ID != 7 {
		t.Fatalf("ids: f9 %d n5 %d n6 %d, want 6 5 7", f9.ID, n5.ID, n6.ID)
	}
	want := []string{"s1#1@0", "s2#2@1", "n4#4@2", "n5#5@4", "f9#6@3", "n6#7@5"}
	if got := serverNames(b.Servers()); !slices.Equal(got, want) {
		t.Fatalf("servers %v, want %v (id order)", got, want)
	}
	if b.ServerByID(6) != f9 || b.ServerByID(3) != nil {
		t.Fatal("ServerByID")
	}
	// A configured server may be deleted too.
	s1 := b.Servers()[0]
	b.SetAdmin(s1, AdminMaint)
	if err := p.DeleteServer(s1); err != nil {
		t.Fatalf("delete s1: %v", err)
	}
	// A deleted server's forced id above the numbering (f10's 10) is
	// skipped when the numbering reaches it: 8, 9, then 11.
	f10, _ := p.AddServer(b, dynServer("f10", 1, false), 10)
	if err := p.DeleteServer(f10); err != nil {
		t.Fatal(err)
	}
	var ids []int
	for _, name := range []string{"a", "b", "c"} {
		s, err := p.AddServer(b, dynServer(name, 1, false), 0)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, s.ID)
	}
	if !slices.Equal(ids, []int{8, 9, 11}) {
		t.Fatalf("ids after a deleted forced 10: %v, want [8 9 11]", ids)
	}
}

// TestDeleteServerWithQueue: a server whose own queue holds a request is
// not deleted; once the request is served elsewhere, it is.
func TestDeleteServerWithQueue(t *testing.T) {
	b := queueBackend(t, 2, nil)
	p := proxyOf(b)
	s1 := b.Servers()[0]
	<-pinnedTake(b, s1) // s1 full
	waiting := takeAsync(b, &lb.Request{}, s1)
	waitFor(t, 5*time.Second, "a request queued on s1", func() bool { return s1.lb.Queued.Load() == 1 })
	b.SetAdmin(s1, AdminMaint) // no redispatch: the request stays for s1
	b.unassign(s1)             // s1's slot goes to the request waiting for it
	if res := <-waiting; res.srv != s1 {
		t.Fatalf("the queued request got %v %v", res.srv, res.err)
	}
	if err := p.DeleteServer(s1); !errors.Is(err, ErrServerBusy) {
		t.Fatalf("delete while serving: %v", err)
	}
	b.unassign(s1)
	if err := p.DeleteServer(s1); err != nil {
		t.Fatal(err)
	}
}

// TestQueueSurvivesServerChanges: requests waiting in the backend queue
// while every server is full stay there while servers are added and
// deleted, and are served, oldest first, by a server added at runtime:
// none is lost.
func TestQueueSurvivesServerChanges(t *testing.T) {
	b := queueBackend(t, 1, nil)
	p := proxyOf(b)
	s1 := b.Servers()[0]
	first := b.assign(&lb.Request{}, nil, time.Now())
	if first != s1 {
		t.Fatal("s1 not free")
	}
	var waiting []<-chan connectResult
	for i := range 3 {
		waiting = append(waiting, takeAsync(b, &lb.Request{}, nil))
		waitFor(t, 5*time.Second, "queued", func() bool { return b.queue.Len(-1) == int64(i+1) })
	}
	// A server comes and goes without serving (MAINT), another comes.
	gone, _ := p.AddServer(b, dynServer("gone", 1, false), 0)
	if err := p.DeleteServer(gone); err != nil {
		t.Fatal(err)
	}
	dyn, _ := p.AddServer(b, &conf.Server{Name: "dyn", Address: "127.0.0.1:1", Weight: 1, MaxConn: 1, Disabled: true}, 0)
	if b.queue.Len(-1) != 3 {
		t.Fatalf("backend queue %d, want 3", b.queue.Len(-1))
	}
	b.SetAdmin(dyn, AdminReady) // its slot goes to the oldest at once
	if res := <-waiting[0]; res.srv != dyn || res.err != nil {
		t.Fatalf("oldest: got %v %v, want dyn", res.srv, res.err)
	}
	b.unassign(s1)
	if res := <-waiting[1]; res.srv != s1 {
		t.Fatalf("second: got %v, want s1", res.srv)
	}
	b.unassign(dyn)
	if res := <-waiting[2]; res.srv != dyn {
		t.Fatalf("third: got %v, want dyn", res.srv)
	}
	b.unassign(s1)
	b.unassign(dyn)
	if b.queue.Waiting() != 0 || s1.lb.Cur.Load() != 0 || dyn.lb.Cur.Load() != 0 {
		t.Fatal("left over sessions or waiters")
	}
}

// TestDeleteRacesPicks drives picks from several goroutines while servers
// are added, enabled, disabled and deleted, for every dynamic algorithm:
// no session ever starts on a deleted server (its stot never moves after
// the delete returned, and none is left on it once the pickers stopped),
// and every pick finds a server (s1 stays READY).
func TestDeleteRacesPicks(t *testing.T) {
	for _, bal := range []string{"roundrobin", "leastconn", "first", "random", "static-rr", "uri"} {
		t.Run(bal, func(t *testing.T) {
			bc := &conf.Backend{Name: "web", Balance: bal, HashPreserveAffinity: "maxconn", TimeoutQueue: 30 * time.Second}
			if bal == "uri" {
				bc.HashType = "consistent"
			}
			bc.Servers = []*conf.Server{{Name: "s1", Address: "127.0.0.1:1", Weight: 1}}
			b, err := newBackend(1, bc)
			if err != nil {
				t.Fatal(err)
			}
			p := proxyOf(b)
			var stop atomic.Bool
			var wg sync.WaitGroup
			var picks atomic.Int64
			for w := range 4 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					r := &lb.Request{Path: fmt.Sprintf("/%d", w)}
					for i := 0; !stop.Load(); i++ {
						s := b.assign(r, nil, time.Now())
						if s == nil {
							t.Error("no server picked although s1 is READY")
							return
						}
						if s.Gone() {
							t.Errorf("a session started on deleted server %s", s.Name)
						}
						picks.Add(1)
						b.unassign(s)
					}
				}()
			}
			// The pickers must be running before the set starts changing
			// (on a loaded machine they may not be scheduled before 150
			// quick changes are over).
			waitFor(t, 5*time.Second, "first pick", func() bool { return picks.Load() > 0 })
			for i := range 150 {
				s, err := p.AddServer(b, dynServer(fmt.Sprintf("d%d", i), 1+i%3, i%2 == 0), 0)
				if err != nil {
					t.Fatal(err)
				}
				b.SetAdmin(s, AdminReady)
				b.SetAdmin(s, AdminMaint)
				// A session may still be ending.
				waitFor(t, 5*time.Second, "deleted", func() bool { return p.DeleteServer(s) == nil })
				stot := s.Counters.Stot.Load()
				// A picker may hold a reservation on s for an instant
				// after the delete (it reserves, then sees the mark and
				// gives it back: servers.go), so Cur is checked once the
				// pickers stopped.
				defer func() {
					if got := s.Counters.Stot.Load(); got != stot {
						t.Errorf("%s: %d sessions started after it was deleted", s.Name, got-stot)
					}
					if cur := s.lb.Cur.Load(); cur != 0 {
						t.Errorf("%s: %d sessions left on it after its delete", s.Name, cur)
					}
				}()
			}
			stop.Store(true)
			wg.Wait()
			if picks.Load() == 0 {
				t.Fatal("no pick ran")
			}
			if len(b.Servers()) != 1 || len(b.set.Load().slots) > 3 {
				t.Fatalf("servers %v, slots %d: slots are not reused", serverNames(b.Servers()), len(b.set.Load().slots))
			}
		})
	}
}

// TestReloadCarriesAddedServers: a reload keeps the servers added at
// runtime, with their id, state and counters, unless the new file defines
// a server of the same name (the file wins); the ids given before stay
// given.
func TestReloadCarriesAddedServers(t *testing.T) {
	cfg := testConfig(conf.ModeHTTP, []string{"127.0.0.1:1", "127.0.0.1:2"}, nil)
	old, err := New(cfg, nopLogger())
	if err != nil {
		t.Fatal(err)
	}
	b := old.Backends[0]
	keep, _ := old.AddServer(b, dynServer("keep", 7, true), 0)   // id 3
	clash, _ := old.AddServer(b, dynServer("clash", 1, true), 0) // id 4
	gone, _ := old.AddServer(b, dynServer("gone", 1, false), 0)  // id 5
	if err := old.DeleteServer(gone); err != nil {
		t.Fatal(err)
	}
	b.SetWeight(keep, 9)
	keep.Counters.Stot.Store(12)
	_ = clash

	next := testConfig(conf.ModeHTTP, []string{"127.0.0.1:1", "127.0.0.1:2", "127.0.0.1:3"}, nil)
	next.Backends[0].Servers[2].Name = "clash" // the file now defines it
	p, err := NewFrom(old, next, nopLogger())
	if err != nil {
		t.Fatal(err)
	}
	nb := p.Backends[0]
	want := []string{"s1#1@0", "s2#2@1", "clash#3@2", "keep#6@3"}
	if got := serverNames(nb.Servers()); !slices.Equal(got, want) {
		t.Fatalf("after reload: %v, want %v (keep's id 3 is the file's clash now)", got, want)
	}
	k := nb.Server("keep")
	if !k.Dynamic() || k.UserWeight.Load() != 9 || k.Admin() != AdminReady || k.Counters.Stot.Load() != 12 {
		t.Fatalf("keep: dynamic %v weight %d admin %v stot %d", k.Dynamic(), k.UserWeight.Load(), k.Admin(), k.Counters.Stot.Load())
	}
	if c := nb.Server("clash"); c.Dynamic() || c.Addr() != "127.0.0.1:3" {
		t.Fatalf("clash: the file's server must win, got dynamic %v addr %s", c.Dynamic(), c.Addr())
	}
	n, _ := p.AddServer(nb, dynServer("later", 1, false), 0)
	if n.ID != 7 {
		t.Fatalf("next id after reload %d, want 7 (ids up to 6 were given)", n.ID)
	}
	p.Shutdown(contextBackground())
	old.Shutdown(contextBackground())
}

// TestAddedServerCookie: cookie persistence finds a server added at runtime
// by its cookie, and forgets it once deleted.
func TestAddedServerCookie(t *testing.T) {
	b := queueBackend(t, 1, nil)
	p := proxyOf(b)
	sc := dynServer("dyn", 1, true)
	sc.Cookie = "d1"
	dyn, _ := p.AddServer(b, sc, 0)
	if b.set.Load().cookies["d1"] != dyn {
		t.Fatal("the added server's cookie is not known")
	}
	b.SetAdmin(dyn, AdminMaint)
	if err := p.DeleteServer(dyn); err != nil {
		t.Fatal(err)
	}
	if b.set.Load().cookies["d1"] != nil || serverByID(b, dyn.ID) != nil {
		t.Fatal("a deleted server is still found by its cookie or id")
	}
}

// watchLog records a ServerWatcher's calls.
type watchLog struct {
	mu  sync.Mutex
	log []string
}

func (w *watchLog) ServerAdded(s *Server)   { w.add("+" + s.Name) }
func (w *watchLog) ServerDeleted(s *Server) { w.add("-" + s.Name) }
func (w *watchLog) add(e string) {
	w.mu.Lock()
	w.log = append(w.log, e)
	w.mu.Unlock()
}

// TestServerWatcher: the installed watcher hears of added and deleted
// servers; UnwatchServers removes only itself.
func TestServerWatcher(t *testing.T) {
	b := queueBackend(t, 1, nil)
	p := proxyOf(b)
	w := &watchLog{}
	if p.WatchServers(w) != nil {
		t.Fatal("a watcher was installed")
	}
	s, _ := p.AddServer(b, dynServer("a", 1, false), 0)
	p.DeleteServer(s)
	p.UnwatchServers(&watchLog{}) // not the installed one: stays
	p.AddServer(b, dynServer("b", 1, false), 0)
	p.UnwatchServers(w)
	p.AddServer(b, dynServer("c", 1, false), 0)
	if want := []string{"+a", "-a", "+b"}; !slices.Equal(w.log, want) {
		t.Fatalf("watcher heard %v, want %v", w.log, want)
	}
}
