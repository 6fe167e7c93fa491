package stats

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/fulcrum-proxy/fulcrum/conf"
	"github.com/fulcrum-proxy/fulcrum/internal/testutil"
	"github.com/fulcrum-proxy/fulcrum/proxy"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/rs/zerolog"
)

// TestHistogramsControlledDelays sends 30 requests round robin to three
// servers answering after 10, 50 and 200 ms and checks where the
// percentiles and the Prometheus buckets put them. Only lower bounds and
// "not above the next server" hold under any load: a slow machine moves
// values up, never down.
func TestHistogramsControlledDelays(t *testing.T) {
	delays := []time.Duration{10 * time.Millisecond, 50 * time.Millisecond, 200 * time.Millisecond}
	var addrs []any
	for _, d := range delays {
		s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			time.Sleep(d) // the server's own answer time, the quantity measured
			io.WriteString(w, "ok\n")
		}))
		t.Cleanup(s.Close)
		addrs = append(addrs, s.Listener.Addr().String())
	}
	cfg, err := conf.Parse("h.toml", []byte(fmt.Sprintf(`
[[frontend]]
name = "www"
bind = ["127.0.0.1:0"]
default_backend = "web"
[[backend]]
name = "web"
[[backend.server]]
name = "fast"
address = %q
[[backend.server]]
name = "mid"
address = %q
[[backend.server]]
name = "slow"
address = %q
`, addrs...)))
	if err != nil {
		t.Fatal(err)
	}
	p, err := proxy.New(cfg, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	defer p.Shutdown(context.Background())
	addr := p.Frontends[0].Addrs()[0].String()
	c := &http.Client{Transport: &http.Transport{DialContext: (&net.Dialer{}).DialContext}}
	for range 30 {
		resp, err := c.Get("http://" + addr + "/")
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	c.CloseIdleConnections()
	// A request's timings are recorded when it is released, which may be
	// just after its client has the answer.
	testutil.WaitFor(t, 5*time.Second, "the 30 requests recorded", func() bool {
		n := int64(0)
		for _, name := range []string{"fast", "mid", "slow"} {
			n += int64(p.Backend("web").Server(name).Counters.Timings[proxy.TimingResponse].Summary().Count)
		}
		return n == 30 && p.Backend("web").Counters.Timings[proxy.TimingResponse].Summary().Count == 30
	})

	ms := func(us int64) time.Duration { return time.Duration(us) * time.Microsecond }
	be := p.Backend("web").Counters.Timings[proxy.TimingResponse].Summary()
	if be.Count != 30 {
		t.Fatalf("backend response histogram: %d values, want 30", be.Count)
	}
	// The median is a 50 ms answer, the p99 a 200 ms one: each within the
	// histogram's 6.25% below its true value at worst.
	if p50 := ms(be.P50); p50 < 47*time.Millisecond || p50 >= 188*time.Millisecond {
		t.Errorf("backend p50: got %v, want the 50 ms server's", p50)
	}
	if p99 := ms(be.P99); p99 < 188*time.Millisecond {
		t.Errorf("backend p99: got %v, want the 200 ms server's", p99)
	}
	for i, name := range []string{"fast", "mid", "slow"} {
		s := p.Backend("web").Server(name).Counters.Timings[proxy.TimingResponse].Summary()
		if s.Count != 10 {
			t.Errorf("%s: %d values, want 10", name, s.Count)
		}
		lo := delays[i] - delays[i]/16
		if p50 := ms(s.P50); p50 < lo || (i < 2 && p50 >= delays[i+1]-delays[i+1]/16) {
			t.Errorf("%s p50: got %v, want its own %v", name, p50, delays[i])
		}
	}

	reg := prometheus.NewRegistry()
	reg.MustRegister(NewProxyCollector(p, nil))
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var h *dto.Histogram
	for _, mf := range mfs {
		if mf.GetName() != "fulcrum_backend_response_time_seconds" {
			continue
		}
		for _, m := range mf.GetMetric() {
			h = m.GetHistogram()
		}
	}
	if h == nil {
		t.Fatal("no fulcrum_backend_response_time_seconds")
	}
	if h.GetSampleCount() != 30 || h.GetSampleSum() < 10*(0.010+0.050+0.200) {
		t.Errorf("count %d, sum %v: want 30 and at least %v", h.GetSampleCount(), h.GetSampleSum(), 10*(0.010+0.050+0.200))
	}
	for _, b := range h.GetBucket() {
		le, n := b.GetUpperBound(), b.GetCumulativeCount()
		switch {
		case le <= 0.005 && n != 0:
			t.Errorf("le=%v: got %d, want 0 (no answer under 10 ms)", le, n)
		case le < 0.05 && n > 10:
			t.Errorf("le=%v: got %d, want at most the fast server's 10", le, n)
		case le < 0.19 && n > 20:
			t.Errorf("le=%v: got %d, want at most 20 (the slow server's are above)", le, n)
		}
	}
}
