package lb

import (
	"fmt"
	"slices"
	"testing"
)

func TestRoundRobinExactCycle(t *testing.T) {
	cases := []struct {
		name    string
		weights []int
		want    []int // the first cycle, by index
	}{
		{"equal", []int{1, 1, 1}, []int{0, 1, 2}},
		{"3:2:1", []int{3, 2, 1}, []int{0, 1, 0, 2, 1, 0}},
		{"2:1:1", []int{2, 1, 1}, []int{0, 1, 2, 0}},
		{"one server", []int{5}, []int{0, 0, 0, 0, 0}},
		{"scaled 48:32:16 as 3:2:1", []int{48, 32, 16}, nil},
		{"large weights", []int{256, 100, 1}, nil},
		{"primes", []int{7, 5, 3, 2}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rr := NewRoundRobin()
			rr.Rebuild(servers(tc.weights...))
			total := 0
			for _, w := range tc.weights {
				total += w
			}
			var first []int
			for cycle := range 3 {
				got := make([]int, len(tc.weights))
				var seq []int
				for range total {
					s := rr.Pick(nil, nil)
					got[s.Index]++
					seq = append(seq, s.Index)
				}
				if fmt.Sprint(got) != fmt.Sprint(tc.weights) {
					t.Fatalf("cycle %d: got %v, want %v", cycle, got, tc.weights)
				}
				if cycle == 0 {
					first = seq
				} else if !slices.Equal(seq, first) {
					t.Fatalf("cycle %d: order %v, want the first cycle's %v", cycle, seq, first)
				}
			}
			if tc.want != nil && !slices.Equal(first, tc.want) {
				t.Errorf("order: got %v, want %v", first, tc.want)
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
	for range 600 {
		seq = append(seq, rr.Pick(nil, nil).Index)
	}
	for start := 0; start+6 <= len(seq); start++ {
		c := make([]int, 3)
		for _, s := range seq[start : start+6] {
			c[s]++
		}
		for i, n := range c {
			if n > all[i].Weight {
				t.Fatalf("window at %d: server %d picked %d times, weight %d (seq %v)", start, i, n, all[i].Weight, seq[start:start+6])
			}
		}
	}
	// Smooth also means no run longer than needed: weight 3 of 6 never
	// gets two picks in a row here.
	for i := 1; i < len(seq); i++ {
		if seq[i] == seq[i-1] && seq[i] != 0 {
			t.Fatalf("pick %d: server %d twice in a row", i, seq[i])
		}
	}
}

func TestRoundRobinWeightChange(t *testing.T) {
	cases := []struct {
		name      string
		weights   []int
		before    int // picks before the change
		server    int
		newWeight int
		want      []int // counts over the cycle after the next one
	}{
		{"raise mid-cycle", []int{1, 1, 1}, 4, 0, 4, []int{4, 1, 1}},
		{"lower mid-cycle", []int{4, 1, 1}, 3, 0, 1, []int{1, 1, 1}},
		{"raise at a boundary", []int{2, 1}, 3, 1, 2, []int{2, 2}},
		{"new weight on the smallest", []int{3, 2, 1}, 5, 2, 3, []int{3, 2, 3}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			all := servers(tc.weights...)
			rr := NewRoundRobin()
			rr.Rebuild(all)
			for range tc.before {
				rr.Pick(nil, nil)
			}
			all[tc.server].Weight = tc.newWeight
			rr.Rebuild(all)
			total := 0
			for _, w := range tc.want {
				total += w
			}
			// The next pick already sees the change; within one cycle the
			// counts are exact again.
			if tc.newWeight > tc.weights[tc.server] {
				got := count(rr, nil, total, len(all))
				if got[tc.server] < tc.want[tc.server]-1 {
					t.Errorf("first cycle after the change: got %v, want about %v", got, tc.want)
				}
			} else {
				count(rr, nil, total, len(all))
			}
			if got := count(rr, nil, total, len(all)); !slices.Equal(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestRoundRobinServerComesBack(t *testing.T) {
	all := servers(1, 1, 1)
	rr := NewRoundRobin()
	rr.Rebuild(all)
	count(rr, nil, 30, 3)
	rr.Rebuild(all[:2])
	count(rr, nil, 7, 3)
	rr.Rebuild(all) // s3 back: no catching up on its missed turns
	got := count(rr, nil, 30, 3)
	for i, n := range got {
		// 30 picks from mid-cycle: each server 10, give or take the one
		// cycle boundary the window cuts.
		if n < 9 || n > 11 || i == 2 && n > 10 {
			t.Errorf("got %v, want 10 each (s3 at most 10)", got)
		}
	}
}

func TestRoundRobinFullServerParked(t *testing.T) {
	all := servers(1, 1, 1)
	all[1].MaxConn.Store(1)
	rr := NewRoundRobin()
	rr.Rebuild(all)
	take(rr, all[1])
	if got := count(rr, nil, 10, 3); !slices.Equal(got, []int{5, 0, 5}) {
		t.Fatalf("s2 full: got %v, want [5 0 5]", got)
	}
	release(rr, all[1])
	// Back at the current time, neither starved nor catching up.
	if got := count(rr, nil, 30, 3); !slices.Equal(got, []int{10, 10, 10}) {
		t.Errorf("after release: got %v, want [10 10 10]", got)
	}
}

// TestRoundRobinRebase runs past the point where deadlines are shifted back
// and checks that nothing changes for the picks.
func TestRoundRobinRebase(t *testing.T) {
	all := servers(3, 2, 1)
	r := newRoundRobin()
	r.nowNum, r.nowDen = 2*rrRebase, 1 // pretend a long run: servers join now
	r.Rebuild(all)
	var seq []int
	for range 60 {
		seq = append(seq, r.Pick(nil, nil).Index)
	}
	if r.nowNum > rrRebase*r.nowDen {
		t.Fatalf("time not rebased: %d/%d", r.nowNum, r.nowDen)
	}
	for c := 0; c+6 <= len(seq); c += 6 {
		got := make([]int, 3)
		for _, i := range seq[c : c+6] {
			got[i]++
		}
		if !slices.Equal(got, []int{3, 2, 1}) {
			t.Fatalf("cycle at %d: got %v, want [3 2 1] (seq %v)", c, got, seq)
		}
	}
}

// TestRoundRobinConcurrent: counts stay exact per cycle when several
// goroutines pick.
func TestRoundRobinConcurrent(t *testing.T) {
	rr := NewRoundRobin()
	rr.Rebuild(servers(2, 1, 1))
	results := make(chan []int)
	for range 4 {
		go func() { results <- count(rr, nil, 1000, 3) }()
	}
	got := make([]int, 3)
	for range 4 {
		for i, n := range <-results {
			got[i] += n
		}
	}
	if !slices.Equal(got, []int{2000, 1000, 1000}) {
		t.Errorf("got %v, want [2000 1000 1000]", got)
	}
}
