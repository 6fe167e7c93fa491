package proxy

import (
	"testing"
	"time"
	"unsafe"

	"github.com/fulcrum-proxy/fulcrum/conf"
)

// TestHistoryPoints drives the sampler by hand: each interval's requests,
// errors, p50/p99 and sessions, a missed interval as a gap, and the ring
// keeping the last HistorySlots points.
func TestHistoryPoints(t *testing.T) {
	p, err := New(testConfig(conf.ModeHTTP, []string{"127.0.0.1:1"}, nil), nopLogger())
	if err != nil {
		t.Fatal(err)
	}
	s := p.Backends[0].Servers()[0]
	c := &s.Counters
	end := time.Unix(1_800_000_000, 0)
	p.sampleHistory(1, end) // nothing yet: no history allocated
	if c.History() != nil {
		t.Fatal("a history for a server without traffic")
	}
	// Interval 2: 10 requests of 5 ms, one of them a 503.
	serve := func(n int, d time.Duration, errs int) {
		for i := range n {
			c.ReqTot.Add(1)
			c.Stot.Add(1)
			c.Timings[TimingResponse].Record(d)
			if i < errs {
				c.Hrsp[5].Add(1)
			}
		}
	}
	serve(10, 5*time.Millisecond, 1)
	p.sampleHistory(2, end.Add(time.Second)) // the first point: no previous counts
	serve(10, 5*time.Millisecond, 1)
	c.Scur.Store(3)
	p.sampleHistory(3, end.Add(2*time.Second))
	serve(100, 40*time.Millisecond, 0)
	serve(1, 400*time.Millisecond, 0)
	p.sampleHistory(3, end.Add(2*time.Second)) // the same interval twice (two samplers): once
	p.sampleHistory(5, end.Add(4*time.Second)) // 4 was missed
	pts := c.History().Points()
	if len(pts) != 4 {
		t.Fatalf("got %d points, want 4: %+v", len(pts), pts)
	}
	want := []HistoryPoint{
		{End: end.Add(time.Second).Unix()},
		{End: end.Add(2 * time.Second).Unix(), Requests: 10, Errors: 1, P50: 4864, P99: 4864, Sessions: 3},
		{},
		{End: end.Add(4 * time.Second).Unix(), Requests: 101, P50: 38912, P99: 38912, Sessions: 3},
	}
	for i, w := range want {
		if pts[i] != w {
			t.Errorf("point %d: got %+v, want %+v", i, pts[i], w)
		}
	}
	for i := range HistorySlots + 10 {
		p.sampleHistory(int64(6+i), end.Add(time.Duration(5+i)*time.Second))
	}
	pts = c.History().Points()
	if len(pts) != HistorySlots || pts[len(pts)-1].End != end.Add(time.Duration(HistorySlots+14)*time.Second).Unix() {
		t.Errorf("ring: got %d points ending at %d", len(pts), pts[len(pts)-1].End)
	}
}

// TestHistoryMemory: what an object that sees traffic holds for the
// history and the histograms stays within the 16 KiB per server the
// design allows.
func TestHistoryMemory(t *testing.T) {
	hist := NumTimings * int(unsafe.Sizeof(histData{}))
	total := HistoryBytes + hist
	t.Logf("history %d B, histograms %d B, total %d B per object", HistoryBytes, hist, total)
	if total > 16<<10 {
		t.Errorf("%d bytes per object, want at most 16 KiB", total)
	}
}

// TestHistorySampler runs the sampler at its smallest interval and waits
// for points to appear; it stops with the proxy.
func TestHistorySampler(t *testing.T) {
	u := newUpstream(t, "s1")
	cfg := testConfig(conf.ModeHTTP, []string{u.addr()}, nil)
	cfg.Global.StatsHistoryInterval = 100 * time.Millisecond
	p, addr := startProxy(t, cfg)
	rc := dialRaw(t, addr)
	rc.do(t, "GET / HTTP/1.1\r\nHost: a\r\n\r\n")
	waitFor(t, 5*time.Second, "three history points", func() bool {
		h := p.Backends[0].Counters.History()
		return h != nil && len(h.Points()) >= 3
	})
}

// TestHistogramsSurviveReload: after a reload the objects that keep their
// name record into the same histograms and history, and a backend keeps
// its downtime.
func TestHistogramsSurviveReload(t *testing.T) {
	cfg := testConfig(conf.ModeHTTP, []string{"127.0.0.1:1"}, nil)
	old, err := New(cfg, nopLogger())
	if err != nil {
		t.Fatal(err)
	}
	os := old.Backends[0].Servers()[0]
	os.Counters.Timings[TimingResponse].Record(time.Millisecond)
	os.Counters.ReqTot.Add(1)
	old.sampleHistory(1, time.Unix(1_800_000_000, 0))
	old.Backends[0].SetAdmin(os, AdminMaint) // the backend goes DOWN
	nu, err := NewFrom(old, testConfig(conf.ModeHTTP, []string{"127.0.0.1:1"}, nil), nopLogger())
	if err != nil {
		t.Fatal(err)
	}
	ns := nu.Backends[0].Servers()[0]
	ns.Counters.Timings[TimingResponse].Record(2 * time.Millisecond)
	os.Counters.Timings[TimingResponse].Record(3 * time.Millisecond) // finishing on the old proxy
	if got := ns.Counters.Timings[TimingResponse].Summary().Count; got != 3 {
		t.Errorf("response histogram after the reload: %d values, want 3", got)
	}
	if ns.Counters.History() != os.Counters.History() || ns.Counters.History() == nil {
		t.Errorf("the history did not carry over")
	}
	_, _, downs := nu.Backends[0].state.read(time.Now())
	if downs != 1 {
		t.Errorf("backend downs after the reload: got %d, want 1", downs)
	}
}
