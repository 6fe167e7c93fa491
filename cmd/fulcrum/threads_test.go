package main

import (
	goruntime "runtime"
	"testing"

	"github.com/rs/zerolog"
)

// TestThreadCount: GOMAXPROCS follows nbthread (or the base count without
// one) plus one per io_uring relay running, through reloads that set and
// remove nbthread and relays that start and stop.
func TestThreadCount(t *testing.T) {
	defer goruntime.GOMAXPROCS(goruntime.GOMAXPROCS(0))
	log := zerolog.Nop()
	tc := &threadCount{base: 1}
	steps := []struct {
		what string
		do   func()
		want int
	}{
		{"start, no nbthread", func() { tc.setNbthread(0, log) }, 1},
		{"a relay starts", func() { tc.ring(+1, log) }, 2},
		{"a reload sets nbthread 3", func() { tc.setNbthread(3, log) }, 4},
		{"the reload's new proxy starts its relay", func() { tc.ring(+1, log) }, 5},
		{"the old proxy's relay stops", func() { tc.ring(-1, log) }, 4},
		{"a reload removes nbthread", func() { tc.setNbthread(0, log) }, 2},
		{"the last relay stops", func() { tc.ring(-1, log) }, 1},
		{"a stray stop", func() { tc.ring(-1, log) }, 1},
	}
	for _, s := range steps {
		s.do()
		if got := goruntime.GOMAXPROCS(0); got != s.want {
			t.Errorf("%s: GOMAXPROCS %d, want %d", s.what, got, s.want)
		}
	}
}
