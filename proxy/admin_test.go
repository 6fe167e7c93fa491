package proxy

import (
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fulcrum-proxy/fulcrum/conf"
)

// TestSetMaxConnFrontend: raising a frontend's maxconn at runtime lets the
// waiting connections in at once; the snapshot reports the new limit.
func TestSetMaxConnFrontend(t *testing.T) {
	release := make(chan struct{})
	var inflight atomic.Int64
	u := newUpstream(t, "s1")
	u.handler = func(w http.ResponseWriter, r *http.Request) {
		inflight.Add(1)
		<-release
		io.WriteString(w, "ok")
	}
	cfg := testConfig(conf.ModeHTTP, []string{u.addr()}, nil)
	cfg.Frontends[0].MaxConn = 1
	p, addr := startProxy(t, cfg)
	fe := p.Frontends[0]
	var wg sync.WaitGroup
	for range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
			if resp, err := c.Get("http://" + addr + "/"); err == nil {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		}()
	}
	waitFor(t, 5*time.Second, "one request at the server", func() bool { return inflight.Load() == 1 })
	if old := fe.SetMaxConn(3); old != 1 {
		t.Errorf("SetMaxConn returned %d, want 1", old)
	}
	waitFor(t, 5*time.Second, "three requests at the server", func() bool { return inflight.Load() == 3 })
	if s := p.Snapshot().Frontends[0]; s.Slim != 3 || s.MaxConn != 3 {
		t.Errorf("snapshot slim/maxconn: got %d/%d, want 3/3", s.Slim, s.MaxConn)
	}
	close(release)
	wg.Wait()
}

// TestLimiterConcurrent drives one limiter from many goroutines while its
// limit changes: never more than the largest limit inside, every slot
// returned, no waiter stranded (run under -race).
func TestLimiterConcurrent(t *testing.T) {
	var l limiter
	l.setMax(4)
	done := make(chan struct{})
	var inside, peak atomic.Int64
	var wg sync.WaitGroup
	for range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 200 {
				if !l.acquire(done) {
					t.Error("acquire failed while not stopping")
					return
				}
				storeMax(&peak, inside.Add(1))
				inside.Add(-1)
				l.release()
			}
		}()
	}
	for i := range 50 {
		l.setMax(2 + i%6) // 2..7
	}
	wg.Wait()
	if l.cur.Load() != 0 {
		t.Errorf("%d slots still taken", l.cur.Load())
	}
	if peak.Load() > 7 {
		t.Errorf("peak %d inside, above every limit", peak.Load())
	}
	// Stopping releases a waiter without a slot.
	l.setMax(1)
	l.acquire(done)
	close(done)
	if l.acquire(done) {
		t.Error("acquire succeeded on a full limiter after done")
	}
}
