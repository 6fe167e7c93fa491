package proxy

import (
	"testing"
	"time"
)

// TestIdleMeter: the idle time is 100 less the CPU time used over the
// thread time available since the previous measure, which is at least a
// second old; clamped to 0..100; -1 when the CPU time is unknown.
func TestIdleMeter(t *testing.T) {
	var m idleMeter
	t0 := time.Unix(1000, 0)
	for _, st := range []struct {
		at      time.Duration // since t0
		cpu     time.Duration
		threads int
		want    int
	}{
		{0, 10 * time.Second, 2, 100},                                  // nothing measured yet
		{500 * time.Millisecond, 11 * time.Second, 2, 100},             // under a second: the previous measure
		{2 * time.Second, 11 * time.Second, 2, 75},                     // 1 s of CPU over 2 s × 2 threads
		{3 * time.Second, 13 * time.Second, 2, 0},                      // both threads busy
		{4 * time.Second, 18 * time.Second, 2, 0},                      // more than the threads (clamped)
		{6 * time.Second, 18*time.Second + 40*time.Millisecond, 1, 98}, // 40 ms over 2 s: 2 % busy
		{7 * time.Second, 19 * time.Second, 0, 4},                      // 0 threads counts as 1: 96 % busy
		{9 * time.Second, -1, 2, -1},                                   // unknown
	} {
		if got := m.percent(t0.Add(st.at), st.cpu, st.threads); got != st.want {
			t.Errorf("at %v, cpu %v, %d threads: got %d, want %d", st.at, st.cpu, st.threads, got, st.want)
		}
	}
	if got := (&Proxy{}).IdlePct(); got != 100 && got != -1 {
		t.Errorf("a new proxy's first IdlePct: got %d, want 100 (or -1 where the CPU time is unknown)", got)
	}
}

// TestRateMeter: a per-second rate between reads at least a second
// apart; a closer read gets the previous rate; a total that went down
// (never, for counters) gives 0, not a negative rate.
func TestRateMeter(t *testing.T) {
	var m rateMeter
	t0 := time.Unix(1000, 0)
	for _, st := range []struct {
		at    time.Duration
		total int64
		want  int64
	}{
		{0, 5000, 0},
		{500 * time.Millisecond, 9000, 0},
		{2 * time.Second, 11000, 3000},
		{2500 * time.Millisecond, 99000, 3000},
		{4 * time.Second, 11000 + 2*1632, 1632}, // over the 2 s since the last measure
		{5 * time.Second, 0, 0},
	} {
		if got := m.perSecond(t0.Add(st.at), st.total); got != st.want {
			t.Errorf("at %v, total %d: got %d/s, want %d/s", st.at, st.total, got, st.want)
		}
	}
}
