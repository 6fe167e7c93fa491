package lb

import (
	"fmt"
	"sync"
	"testing"
)

func servers(weights ...int) []*Server {
	var out []*Server
	for i, w := range weights {
		out = append(out, &Server{Index: i, Name: fmt.Sprintf("s%d", i+1), EffectiveWeight: w})
	}
	return out
}

// usable mimics the backend: only weight > 0 is handed to the algorithm.
func usable(all []*Server) []*Server {
	var out []*Server
	for _, s := range all {
		if s.EffectiveWeight > 0 {
			out = append(out, s)
		}
	}
	return out
}

func TestRoundRobinExactCycle(t *testing.T) {
	cases := []struct {
		name    string
		weights []int
	}{
		{"equal", []int{1, 1, 1}},
		{"3:2:1", []int{3, 2, 1}},
		{"2:1:1", []int{2, 1, 1}},
		{"one server", []int{5}},
		{"large weights", []int{256, 100, 1}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			all := servers(tc.weights...)
			rr := NewRoundRobin()
			rr.Rebuild(usable(all))
			total := 0
			for _, w := range tc.weights {
				total += w
			}
			for cycle := 0; cycle < 3; cycle++ {
				got := make([]int, len(all))
				for i := 0; i < total; i++ {
					got[rr.Pick(nil, nil).Index]++
				}
				if fmt.Sprint(got) != fmt.Sprint(tc.weights) {
					t.Fatalf("cycle %d: got %v, want %v", cycle, got, tc.weights)
				}
			}
		})
	}
}

// TestRoundRobinSmooth: weights 3:2:1, in every window of 6 consecutive
// picks no server appears more than its weight.
func TestRoundRobinSmooth(t *testing.T) {
	all := servers(3, 2, 1)
	rr := NewRoundRobin()
	rr.Rebuild(all)
	var seq []int
	for i := 0; i < 600; i++ {
		seq = append(seq, rr.Pick(nil, nil).Index)
	}
	for start := 0; start+6 <= len(seq); start++ {
		count := make([]int, 3)
		for _, s := range seq[start : start+6] {
			count[s]++
		}
		for i, c := range count {
			if c > all[i].EffectiveWeight {
				t.Fatalf("window at %d: server %d picked %d times, weight %d (seq %v)", start, i, c, all[i].EffectiveWeight, seq[start:start+6])
			}
		}
	}
}

func TestRoundRobinEdgeCases(t *testing.T) {
	t.Run("empty backend", func(t *testing.T) {
		rr := NewRoundRobin()
		if s := rr.Pick(nil, nil); s != nil {
			t.Errorf("got %v, want nil", s.Name)
		}
		rr.Rebuild(nil)
		if s := rr.Pick(nil, nil); s != nil {
			t.Errorf("got %v, want nil", s.Name)
		}
	})
	t.Run("down server removed by rebuild", func(t *testing.T) {
		all := servers(1, 1, 1)
		rr := NewRoundRobin()
		rr.Rebuild(all)
		rr.Rebuild([]*Server{all[0], all[2]}) // s2 went down
		for i := 0; i < 30; i++ {
			if s := rr.Pick(nil, nil); s == all[1] {
				t.Fatal("picked a server no longer usable")
			}
		}
	})
	t.Run("avoid", func(t *testing.T) {
		all := servers(1, 1)
		rr := NewRoundRobin()
		rr.Rebuild(all)
		for i := 0; i < 10; i++ {
			if s := rr.Pick(nil, all[0]); s != all[1] {
				t.Fatalf("pick %d: got %s, want s2", i, s.Name)
			}
		}
	})
	t.Run("avoid as last resort", func(t *testing.T) {
		all := servers(1)
		rr := NewRoundRobin()
		rr.Rebuild(all)
		if s := rr.Pick(nil, all[0]); s != all[0] {
			t.Fatalf("got %v, want s1 as last resort", s)
		}
	})
	t.Run("runtime weight change applies within one cycle", func(t *testing.T) {
		all := servers(1, 1, 1)
		rr := NewRoundRobin()
		rr.Rebuild(all)
		for i := 0; i < 4; i++ { // mid-cycle
			rr.Pick(nil, nil)
		}
		all[0].EffectiveWeight = 4
		rr.Rebuild(all)
		// After at most one cycle of the new total (6), the next full cycle is exact.
		for i := 0; i < 6; i++ {
			rr.Pick(nil, nil)
		}
		got := make([]int, 3)
		for i := 0; i < 6; i++ {
			got[rr.Pick(nil, nil).Index]++
		}
		if fmt.Sprint(got) != "[4 1 1]" {
			t.Errorf("got %v, want [4 1 1]", got)
		}
	})
}

// TestRoundRobinConcurrent drives one algorithm from several goroutines
// while weights change: counts stay exact per cycle and -race stays quiet.
func TestRoundRobinConcurrent(t *testing.T) {
	all := servers(2, 1, 1)
	rr := NewRoundRobin()
	rr.Rebuild(all)
	var wg sync.WaitGroup
	var mu sync.Mutex
	got := make([]int, 3)
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			local := make([]int, 3)
			for i := 0; i < 1000; i++ {
				local[rr.Pick(nil, nil).Index]++
			}
			mu.Lock()
			for i := range got {
				got[i] += local[i]
			}
			mu.Unlock()
		}()
	}
	wg.Wait()
	if fmt.Sprint(got) != "[2000 1000 1000]" {
		t.Errorf("got %v, want [2000 1000 1000]", got)
	}
}

func TestRegistry(t *testing.T) {
	if e, err := Lookup("roundrobin"); err != nil || e.New == nil || !e.Dynamic {
		t.Errorf("roundrobin: got %+v %v", e, err)
	}
	if e, err := Lookup("uri len 8"); err != nil || e.Name != "uri" {
		t.Errorf("uri len 8: got %+v %v", e, err)
	}
	if e, err := Lookup("hdr(Host)"); err != nil || e.Name != "hdr" {
		t.Errorf("hdr(Host): got %+v %v", e, err)
	}
	_, err := Lookup("fastest")
	want := `unknown balance algorithm "fastest", expected one of: first, hash, hdr, leastconn, random, roundrobin, source, static-rr, uri, url_param`
	if err == nil || err.Error() != want {
		t.Errorf("got %v, want %s", err, want)
	}
}

func BenchmarkRoundRobinPick(b *testing.B) {
	for _, n := range []int{3, 100} {
		w := make([]int, n)
		for i := range w {
			w[i] = 1 + i%3
		}
		all := servers(w...)
		b.Run(fmt.Sprintf("servers=%d", n), func(b *testing.B) {
			rr := NewRoundRobin()
			rr.Rebuild(all)
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				rr.Pick(nil, nil)
			}
		})
		b.Run(fmt.Sprintf("servers=%d/parallel", n), func(b *testing.B) {
			rr := NewRoundRobin()
			rr.Rebuild(all)
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					rr.Pick(nil, nil)
				}
			})
		})
	}
}
