package lb

import (
	"fmt"
	"slices"
	"testing"
)

// Servers added and deleted at runtime (the Runtime API's add and del
// server): every algorithm sees them only through Rebuild's sets, and a
// deleted server's slot (Index) may be given to a server added later.

// grown returns the servers of base plus a server named name of weight w in
// slot idx, in the backend's order (the new one last: the highest id).
func grown(base []*Server, name string, idx, w int) ([]*Server, *Server) {
	s := &Server{Index: idx, Name: name, Weight: w}
	return append(slices.Clone(base), s), s
}

// TestConsistentAddDelete: with consistent hashing, a server added at
// runtime takes keys only from the others (every key that moves, moves to
// it) and about its share of them; deleting it moves back exactly those
// keys. The same holds when the new server reuses the slot of a server
// deleted before, whose points must all leave the ring. Map-based hashing
// recomputes its map and moves most keys (HAProxy's lb_map does the same).
func TestConsistentAddDelete(t *testing.T) {
	rs := keyRequests(50000)
	for _, tc := range []struct {
		name   string
		reused bool // the new server takes the slot of a deleted one
	}{
		{"new slot", false},
		{"reused slot", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, _ := ParseHashType("consistent")
			a := mustNew(t, "url_param k", Config{Hash: h, RingWeight: 10})
			base := servers(16, 16, 16, 16, 16, 16, 16, 16, 16) // s1..s9
			idx := len(base)
			if tc.reused {
				// s10 (slot 9) was in the set, then deleted.
				old := &Server{Index: 9, Name: "s10", Weight: 16}
				a.Rebuild(append(slices.Clone(base), old))
				a.Rebuild(base)
				idx = 9
			} else {
				a.Rebuild(base)
			}
			before := mapping(a, rs)
			with, added := grown(base, "dyn1", idx, 16)
			a.Rebuild(with)
			after := mapping(a, rs)
			moved := 0
			for i := range rs {
				if before[i] != after[i] {
					moved++
					if after[i] != added.Index {
						t.Fatalf("key %d moved from slot %d to slot %d, not to the new server", i, before[i], after[i])
					}
				}
			}
			// The new server owns about a tenth of the ring.
			if frac := float64(moved) / float64(len(rs)); frac < 0.07 || frac > 0.13 {
				t.Errorf("the new server took %.2f%% of the keys, want about 10%%", 100*frac)
			}
			a.Rebuild(base) // deleted again
			if back := mapping(a, rs); !slices.Equal(back, before) {
				t.Errorf("after the new server left, the mapping differs from the first one")
			}
			// The ring equals one built from scratch for the same set: no
			// point of a server that left stayed behind.
			fresh := mustNew(t, "url_param k", Config{Hash: h, RingWeight: 10})
			fresh.Rebuild(with)
			a.Rebuild(with)
			if !slices.Equal(mapping(a, rs), mapping(fresh, rs)) {
				t.Errorf("the ring after add, delete and add differs from a ring built for the final set")
			}
		})
	}
}

// TestConsistentSlotReusedByAnotherName: a slot reused by a server of
// another name places that server's points by its own name: the mapping is
// the one of a ring built from scratch, whatever the slot held before.
func TestConsistentSlotReusedByAnotherName(t *testing.T) {
	rs := keyRequests(20000)
	h, _ := ParseHashType("consistent")
	a := mustNew(t, "url_param k", Config{Hash: h, RingWeight: 4})
	base := servers(16, 16, 16, 16)
	a.Rebuild(base)
	// s4 is deleted; "web-7" gets its slot.
	reborn := &Server{Index: 3, Name: "web-7", Weight: 16}
	set := append(slices.Clone(base[:3]), reborn)
	a.Rebuild(set)
	fresh := mustNew(t, "url_param k", Config{Hash: h, RingWeight: 4})
	fresh.Rebuild(set)
	if !slices.Equal(mapping(a, rs), mapping(fresh, rs)) {
		t.Fatal("a reused slot kept the points of the server that had it")
	}
}

// cycleOf returns the first n picks of a fresh roundrobin over set.
func cycleOf(set []*Server, n int) []string {
	a := NewRoundRobin()
	a.Rebuild(set)
	out := make([]string, n)
	for i := range out {
		out[i] = a.Pick(nil, nil).Name
	}
	return out
}

// picks returns the next n picks of a.
func picks(a Algorithm, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = a.Pick(nil, nil).Name
	}
	return out
}

// TestRoundRobinStaysSmooth: after a server is added or deleted in the
// middle of a cycle, roundrobin settles within one cycle into exactly the
// order a fresh roundrobin gives the new set (a rotation of its cycle):
// every cycle of sum(weights) picks gives each server exactly its weight,
// spread as smoothly as before. The new server neither waits a cycle nor
// catches up on the turns it missed: it is picked within one cycle, and no
// server is picked more than once above its weight in any window of one
// cycle (the windows across the change span a little more than a cycle of
// virtual time, since the new server skipped the turns already past).
func TestRoundRobinStaysSmooth(t *testing.T) {
	for _, tc := range []struct {
		name    string
		weights []int // the servers before the change
		add     int   // weight of the server added, 0 for none
		del     int   // index of the server deleted, -1 for none
		after   int   // picks made before the change
	}{
		{"add to 3:2:1 mid-cycle", []int{3, 2, 1}, 2, -1, 4},
		{"add to 1:1:1 at a cycle start", []int{1, 1, 1}, 1, -1, 3},
		{"add heavy to light", []int{1, 1}, 5, -1, 1},
		{"delete from 3:2:1 mid-cycle", []int{3, 2, 1}, 0, 1, 5},
		{"delete the heaviest", []int{5, 2, 2, 1}, 0, 0, 7},
		{"add to 256 servers", weightsOf(256), 7, -1, 300},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := NewRoundRobin()
			set := servers(tc.weights...)
			a.Rebuild(set)
			picks(a, tc.after)
			next := slices.Clone(set)
			if tc.add > 0 {
				next, _ = grown(set, "dyn", len(set), tc.add)
			}
			if tc.del >= 0 {
				next = slices.Delete(next, tc.del, tc.del+1)
			}
			a.Rebuild(next)
			total := 0
			want := map[string]int{}
			for _, s := range next {
				total += s.Weight
				want[s.Name] = s.Weight
			}
			got := picks(a, 4*total)
			// Settled: from some offset within the first cycle on, the
			// picks are the fresh cycle, repeated.
			canon := cycleOf(next, total)
			settled := -1
			for o := 0; o <= total && settled < 0; o++ {
				ok := true
				for i := o; i < o+2*total && ok; i++ {
					ok = got[i] == canon[(i-o)%total]
				}
				if ok {
					settled = o
				}
			}
			if settled < 0 {
				t.Fatalf("never settled into the fresh cycle %v; got %v", canon, got[:2*total])
			}
			// Each cycle after settling: exact counts.
			for c := range 2 {
				n := map[string]int{}
				for _, name := range got[settled+c*total : settled+(c+1)*total] {
					n[name]++
				}
				if fmt.Sprint(n) != fmt.Sprint(want) {
					t.Errorf("cycle %d after settling: %v, want %v", c, n, want)
				}
			}
			// Any window of one cycle, settling included: nobody more than
			// once above its weight, and the new server there within the
			// first.
			for o := 0; o+total <= len(got); o++ {
				n := map[string]int{}
				for _, name := range got[o : o+total] {
					n[name]++
				}
				for name, k := range n {
					if k > want[name]+1 || (o >= settled && k != want[name]) {
						t.Fatalf("window at %d (settled at %d): %s picked %d times, weight %d", o, settled, name, k, want[name])
					}
				}
			}
			if tc.add > 0 && !slices.Contains(got[:total], "dyn") {
				t.Errorf("the new server was not picked within one cycle: %v", got[:total])
			}
			for _, name := range got {
				if tc.del >= 0 && name == set[tc.del].Name {
					t.Fatalf("the deleted server %s was picked", name)
				}
			}
		})
	}
}

// weightsOf returns n weights 1, 2, 3, 1, 2, 3...
func weightsOf(n int) []int {
	w := make([]int, n)
	for i := range w {
		w[i] = 1 + i%3
	}
	return w
}

// TestLeastConnAddDelete: a server added to a loaded leastconn backend
// takes the next sessions until its load, relative to its weight, reaches
// the others'; a deleted one is never picked again, and the hooks of its
// last sessions, coming after its slot was given to another server, change
// nothing for that server.
func TestLeastConnAddDelete(t *testing.T) {
	a := mustNew(t, "leastconn", Config{})
	set := servers(1, 1, 2)
	a.Rebuild(set)
	for range 12 { // loads 3, 3, 6: equal relative to weight
		take(a, a.Pick(nil, nil))
	}
	if got := []int64{set[0].Cur.Load(), set[1].Cur.Load(), set[2].Cur.Load()}; !slices.Equal(got, []int64{3, 3, 6}) {
		t.Fatalf("loads %v, want [3 3 6]", got)
	}
	next, dyn := grown(set, "dyn", 3, 2)
	a.Rebuild(next)
	for i := range 6 {
		s := a.Pick(nil, nil)
		if s != dyn {
			t.Fatalf("pick %d after add: %s, want the new server until it holds 6 (weight 2)", i, s.Name)
		}
		take(a, s)
	}
	// s2 is deleted (drained first: its sessions end), and its slot goes
	// to "dyn2", added with no load.
	for range 3 {
		release(a, set[1])
	}
	gone := set[1]
	dyn2 := &Server{Index: gone.Index, Name: "dyn2", Weight: 1}
	final := []*Server{set[0], set[2], dyn, dyn2}
	a.Rebuild(final)
	take(a, gone) // a late hook of the deleted server
	release(a, gone)
	for i := range 3 {
		s := a.Pick(nil, nil)
		if s != dyn2 {
			t.Fatalf("pick %d after the slot was reused: %s, want dyn2", i, s.Name)
		}
		take(a, s)
	}
	for range 40 {
		s := a.Pick(nil, nil)
		if s == gone {
			t.Fatal("the deleted server was picked")
		}
		take(a, s)
	}
}

// TestFirstAddDelete: first fills servers in id order: a server added
// with the highest id gets traffic only when all the others are full; a
// deleted one leaves the order, and a late release for it does not free
// the slot of the server now in its place.
func TestFirstAddDelete(t *testing.T) {
	a := mustNew(t, "first", Config{})
	set := servers(1, 1)
	for _, s := range set {
		s.MaxConn.Store(2)
	}
	a.Rebuild(set)
	next, dyn := grown(set, "dyn", 2, 1)
	dyn.MaxConn.Store(2)
	a.Rebuild(next)
	var order []string
	for range 6 {
		s := a.Pick(nil, nil)
		order = append(order, s.Name)
		take(a, s)
	}
	if want := []string{"s1", "s1", "s2", "s2", "dyn", "dyn"}; !slices.Equal(order, want) {
		t.Fatalf("order %v, want %v", order, want)
	}
	if s := a.Pick(nil, nil); s != nil {
		t.Fatalf("all full, picked %s", s.Name)
	}
	// s1 is deleted (its sessions ended), dyn2 takes its slot, full.
	gone := set[0]
	gone.Cur.Store(0)
	dyn2 := &Server{Index: 0, Name: "dyn2", Weight: 1}
	dyn2.MaxConn.Store(1)
	dyn2.Cur.Store(1)
	a.Rebuild([]*Server{set[1], dyn, dyn2})
	release(a, gone) // late: must not mark dyn2's slot free
	if s := a.Pick(nil, nil); s != nil {
		t.Fatalf("a late release of the deleted server freed %s", s.Name)
	}
	release(a, dyn)
	if s := a.Pick(nil, nil); s != dyn {
		t.Fatalf("got %v, want dyn", s)
	}
}

// TestRoundRobinLateReleaseOfDeleted: roundrobin parks full servers; the
// release of a deleted server's last session, arriving after its slot was
// given to another server, must not put the deleted server back in the
// heap.
func TestRoundRobinLateReleaseOfDeleted(t *testing.T) {
	a := NewRoundRobin()
	set := servers(1, 1)
	set[0].MaxConn.Store(1)
	a.Rebuild(set)
	take(a, a.Pick(nil, nil)) // s1 full
	if s := a.Pick(nil, nil); s != set[1] {
		t.Fatalf("got %s, want s2", s.Name) // s1 parked
	}
	if s := a.Pick(nil, nil); s != set[1] {
		t.Fatalf("got %s, want s2", s.Name)
	}
	// s1 is deleted; "dyn" gets slot 0, full, so it is parked in turn.
	gone := set[0]
	dyn := &Server{Index: 0, Name: "dyn", Weight: 1}
	dyn.MaxConn.Store(1)
	dyn.Cur.Store(1)
	a.Rebuild([]*Server{dyn, set[1]})
	for range 4 {
		if s := a.Pick(nil, nil); s != set[1] {
			t.Fatalf("got %s, want s2", s.Name)
		}
	}
	release(a, gone)
	for range 4 {
		if s := a.Pick(nil, nil); s == gone {
			t.Fatal("the deleted server came back into the heap")
		}
	}
}

// TestStaticAndRandomAddDelete: static-rr's map and random's ring follow
// the set: an added server is picked by its weight, a deleted one never.
func TestStaticAndRandomAddDelete(t *testing.T) {
	t.Run("static-rr", func(t *testing.T) {
		a := mustNew(t, "static-rr", Config{})
		set := servers(2, 1)
		a.Rebuild(set)
		picks(a, 1)
		next, _ := grown(set, "dyn", 2, 3)
		a.Rebuild(next)
		n := map[string]int{}
		for _, name := range picks(a, 6*10) {
			n[name]++
		}
		if want := map[string]int{"s1": 20, "s2": 10, "dyn": 30}; fmt.Sprint(n) != fmt.Sprint(want) {
			t.Errorf("after add: %v, want %v", n, want)
		}
		a.Rebuild(next[1:]) // s1 deleted
		for _, name := range picks(a, 40) {
			if name == "s1" {
				t.Fatal("the deleted server was picked")
			}
		}
	})
	t.Run("random", func(t *testing.T) {
		a := mustNew(t, "random", Config{RingWeight: 3, Rand: seeded(7)})
		set := servers(16, 16)
		a.Rebuild(set)
		next, _ := grown(set, "dyn", 2, 32)
		a.Rebuild(next)
		n := map[string]int{}
		for range 20000 {
			n[a.Pick(nil, nil).Name]++ // no load: weights decide
		}
		// dyn owns half the ring's points; two draws pick the first of
		// equally loaded servers: about half.
		if n["dyn"] < 8000 || n["dyn"] > 12000 {
			t.Errorf("the new server got %d of 20000 picks, want about 10000 (%v)", n["dyn"], n)
		}
		a.Rebuild(next[1:])
		for range 2000 {
			if a.Pick(nil, nil) == set[0] {
				t.Fatal("the deleted server was picked")
			}
		}
	})
}
