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

// TestFrontendMaxconn: with maxconn 2 and 5 clients held by a slow server,
// at most 2 connections are accepted at once, none is refused, and all are
// served once the server lets go.
func TestFrontendMaxconn(t *testing.T) {
	release := make(chan struct{})
	var inflight, peak atomic.Int64
	u := newUpstream(t, "s1")
	u.handler = func(w http.ResponseWriter, r *http.Request) {
		n := inflight.Add(1)
		storeMax(&peak, n)
		<-release
		inflight.Add(-1)
		io.WriteString(w, "ok")
	}
	cfg := testConfig(conf.ModeHTTP, []string{u.addr()}, nil)
	cfg.Frontends[0].MaxConn = 2
	p, addr := startProxy(t, cfg)
	var wg sync.WaitGroup
	var ok atomic.Int64
	for i := 0; i < 5; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
			resp, err := c.Get("http://" + addr + "/")
			if err != nil {
				t.Error(err)
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == 200 {
				ok.Add(1)
			}
		}()
	}
	waitFor(t, 5*time.Second, "two requests at the server", func() bool { return inflight.Load() == 2 })
	waitFor(t, 5*time.Second, "maxconn hits counted", func() bool { return p.Frontends[0].MaxconnHits.Load() > 0 })
	if s := p.Snapshot().Frontends[0]; s.Scur != 2 || s.Slim != 2 {
		t.Errorf("frontend scur/slim: got %d/%d, want 2/2", s.Scur, s.Slim)
	}
	close(release)
	wg.Wait()
	if ok.Load() != 5 || peak.Load() != 2 {
		t.Errorf("served %d of 5, peak at server %d; want 5 and 2", ok.Load(), peak.Load())
	}
}
