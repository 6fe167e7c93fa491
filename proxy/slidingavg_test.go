package proxy

import "testing"

// SlidingAvg is the plain mean while at most timeSamples values were
// seen (HAProxy's swrate_add_dynamic with a zero window until then), then
// a running average over the last timeSamples: two 3,005 ms responses
// average 3,005 (a trial saw 2,253), 1..10 average 6 (55/10 rounded up,
// as swrate_avg).
func TestSlidingAvg(t *testing.T) {
	var a SlidingAvg
	if a.Avg() != 0 {
		t.Fatalf("empty: %d", a.Avg())
	}
	a.Add(3005)
	a.Add(3005)
	if a.Avg() != 3005 {
		t.Errorf("two of 3005: %d", a.Avg())
	}
	var b SlidingAvg
	for v := int64(1); v <= 10; v++ {
		b.Add(v)
	}
	if b.Avg() != 6 {
		t.Errorf("1..10: %d, want 6", b.Avg())
	}
	var c SlidingAvg
	for range timeSamples {
		c.Add(100)
	}
	if c.Avg() != 100 {
		t.Errorf("%d of 100: %d", timeSamples, c.Avg())
	}
	for range 3 * timeSamples {
		c.Add(0)
	}
	// Past the window it decays by (1 - 1/N) per value: after 3N zeros
	// 100 x e^-3 = 5.
	if got := c.Avg(); got < 4 || got > 6 {
		t.Errorf("after %d zeros: %d, want about 5", 3*timeSamples, got)
	}
}
