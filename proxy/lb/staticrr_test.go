package lb

import (
	"slices"
	"testing"
)

func TestStaticRRSameOrderAsRoundRobin(t *testing.T) {
	for _, weights := range [][]int{{1, 1, 1}, {3, 2, 1}, {7, 5, 3, 2}, {48, 32, 16}} {
		rr, st := NewRoundRobin(), newStaticRR()
		rr.Rebuild(servers(weights...))
		st.Rebuild(servers(weights...))
		for i := range 200 {
			a, b := rr.Pick(nil, nil), st.Pick(nil, nil)
			if a.Index != b.Index {
				t.Fatalf("weights %v, pick %d: roundrobin %d, static-rr %d", weights, i, a.Index, b.Index)
			}
		}
	}
}

func TestStaticRRMap(t *testing.T) {
	cases := []struct {
		name    string
		weights []int
		want    []int // the map, by index
	}{
		{"3:2:1", []int{3, 2, 1}, []int{0, 1, 0, 2, 1, 0}},
		{"divided by the gcd", []int{32, 16}, []int{0, 1, 0}},
		{"equal", []int{16, 16, 16}, []int{0, 1, 2}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := buildMap(servers(tc.weights...))
			var got []int
			for _, s := range m.slots {
				got = append(got, s.Index)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestStaticRRHashLookup(t *testing.T) {
	st := newStaticRR()
	all := servers(3, 2, 1)
	st.Rebuild(all)
	// The map is s1 s2 s1 s3 s2 s1: hash h takes slot h % 6.
	for h, want := range []int{0, 1, 0, 2, 1, 0, 0, 1} {
		if got := st.pickHash(uint32(h), nil, AffinityMaxConn); got.Index != want {
			t.Errorf("hash %d: got s%d, want s%d", h, got.Index+1, want+1)
		}
	}
	// A full server is skipped to the next slot; avoid likewise.
	all[2].MaxConn.Store(1)
	all[2].Cur.Store(1)
	if got := st.pickHash(3, nil, AffinityMaxConn); got != all[1] {
		t.Errorf("slot 3 full: got %v, want s2 (slot 4)", got.Name)
	}
	if got := st.pickHash(0, all[0], AffinityMaxConn); got != all[1] {
		t.Errorf("slot 0 avoided: got %v, want s2 (slot 1)", got.Name)
	}
}
