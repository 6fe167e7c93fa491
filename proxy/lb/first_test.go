package lb

import (
	"slices"
	"testing"
)

func TestFirst(t *testing.T) {
	cases := []struct {
		name    string
		maxconn []int64
		held    int   // sessions started, each held
		want    []int // sessions per server
	}{
		{"fills in id order", []int64{2, 2, 2}, 5, []int{2, 2, 1}},
		{"ignores weights", []int64{1, 3, 0}, 3, []int{1, 2, 0}},
		{"no maxconn: everything on the first", []int64{0, 0}, 4, []int{4, 0}},
		{"all full", []int64{1, 1}, 2, []int{1, 1}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			all := servers(1, 5, 2)[:len(tc.maxconn)]
			for i, m := range tc.maxconn {
				all[i].MaxConn.Store(m)
			}
			f := mustNew(t, "first", Config{})
			f.Rebuild(all)
			for range tc.held {
				take(f, f.Pick(nil, nil))
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

func TestFirstReleaseGoesBackToLowest(t *testing.T) {
	all := servers(1, 1, 1)
	for _, s := range all {
		s.MaxConn.Store(1)
	}
	f := mustNew(t, "first", Config{})
	f.Rebuild(all)
	take(f, f.Pick(nil, nil))
	take(f, f.Pick(nil, nil))
	release(f, all[0])
	if s := f.Pick(nil, nil); s != all[0] {
		t.Errorf("got %v, want s1 again", s.Name)
	}
}

func TestBitmap(t *testing.T) {
	var b bitmap
	b.reset(10000)
	for _, i := range []int{5, 64, 4095, 4096, 9999} {
		b.set(i, true)
	}
	var got []int
	for i := b.next(0); i >= 0; i = b.next(i + 1) {
		got = append(got, i)
	}
	if want := []int{5, 64, 4095, 4096, 9999}; !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	b.set(64, false)
	b.set(5, false)
	if got := b.next(0); got != 4095 {
		t.Errorf("next(0) after clearing: got %d, want 4095", got)
	}
	if got := b.next(10000); got != -1 {
		t.Errorf("next past the end: got %d, want -1", got)
	}
}
