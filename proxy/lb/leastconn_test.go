package lb

import (
	"slices"
	"testing"
)

func TestLeastConn(t *testing.T) {
	cases := []struct {
		name    string
		weights []int
		loads   []int64 // sessions held before the picks
		picks   int     // picks, each held
		want    []int   // sessions per server after the picks
	}{
		{"fills the idle server first", []int{1, 1, 1}, []int64{3, 0, 3}, 3, []int{3, 3, 3}},
		{"relative to weight", []int{2, 1}, []int64{0, 0}, 6, []int{4, 2}},
		{"weight 3:1 from uneven loads", []int{3, 1}, []int64{1, 5}, 16, []int{16, 6}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			all := servers(tc.weights...)
			lc := mustNew(t, "leastconn", Config{})
			lc.Rebuild(all)
			for i, n := range tc.loads {
				for range n {
					take(lc, all[i])
				}
			}
			for range tc.picks {
				take(lc, lc.Pick(nil, nil))
			}
			var got []int
			for _, s := range all {
				got = append(got, int(s.Cur.Load()))
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

// TestLeastConnRoundRobinAmongEquals: short sessions, each released before
// the next pick, leave every load at 0; every server must still be used,
// in turn.
func TestLeastConnRoundRobinAmongEquals(t *testing.T) {
	all := servers(1, 1, 1)
	lc := mustNew(t, "leastconn", Config{})
	lc.Rebuild(all)
	var seq []int
	for range 9 {
		s := lc.Pick(nil, nil)
		seq = append(seq, s.Index)
		take(lc, s)
		release(lc, s)
	}
	if want := []int{0, 1, 2, 0, 1, 2, 0, 1, 2}; !slices.Equal(seq, want) {
		t.Errorf("got %v, want %v", seq, want)
	}
}

func TestLeastConnWeightChange(t *testing.T) {
	all := servers(1, 1)
	lc := mustNew(t, "leastconn", Config{})
	lc.Rebuild(all)
	all[0].Weight = 3
	lc.Rebuild(all)
	for range 8 {
		take(lc, lc.Pick(nil, nil))
	}
	if got := []int64{all[0].Cur.Load(), all[1].Cur.Load()}; !slices.Equal(got, []int64{6, 2}) {
		t.Errorf("after weight 3:1, got %v, want [6 2]", got)
	}
}
