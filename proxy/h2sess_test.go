package proxy

import (
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

// TestH2ShowSessListsStreams: `show sess` lists a client connection in
// HTTP/2 once per stream in progress, each with its backend and server
// (HAProxy lists streams), and not at all once it is idle; `shutdown
// session` on one stream's id ends that stream only: the client gets an
// error for it, and the other streams of the same connection are served.
func TestH2ShowSessListsStreams(t *testing.T) {
	release := make(chan struct{})
	var arrived sync.WaitGroup
	arrived.Add(3)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			arrived.Done()
			select {
			case <-release:
			case <-r.Context().Done():
				return
			case <-time.After(10 * time.Second):
			}
		}
		io.WriteString(w, "ok")
	}))
	t.Cleanup(up.Close)
	p, addr := startProxy(t, h2Config([]string{up.Listener.Addr().String()}, ""))
	tr := h2cTransport()
	t.Cleanup(tr.CloseIdleConnections)
	get := func(path string) (int, error) {
		req, _ := http.NewRequest("GET", "http://"+addr+path, nil)
		resp, err := tr.RoundTrip(req)
		if err != nil {
			return 0, err
		}
		defer resp.Body.Close()
		_, err = io.ReadAll(resp.Body)
		return resp.StatusCode, err
	}
	if code, err := get("/"); code != 200 || err != nil {
		t.Fatalf("first request: %d %v", code, err)
	}
	if ss := p.Sessions(); len(ss) != 0 {
		t.Fatalf("an idle HTTP/2 connection: sessions %+v, want none", ss)
	}
	type result struct {
		code int
		err  error
	}
	results := make(chan result, 3)
	for range 3 {
		go func() {
			code, err := get("/slow")
			results <- result{code, err}
		}()
	}
	arrived.Wait()
	ss := p.Sessions()
	if len(ss) != 3 {
		t.Fatalf("three streams in progress: sessions %+v, want 3", ss)
	}
	ids := map[uintptr]bool{}
	for _, s := range ss {
		if s.Backend != "web" || s.Server != "s1" || !s.Active || s.Frontend != "www" {
			t.Errorf("stream %+v: want www -> web/s1, active", s)
		}
		ids[s.ID] = true
	}
	if len(ids) != 3 {
		t.Errorf("stream ids %v: want 3 distinct", ids)
	}
	if !p.ShutdownSession(ss[0].ID) {
		t.Fatal("shutdown session: stream not found")
	}
	waitFor(t, 5*time.Second, "two streams left", func() bool { return len(p.Sessions()) == 2 })
	close(release)
	ok, failed := 0, 0
	for range 3 {
		r := <-results
		if r.err == nil && r.code == 200 {
			ok++
		} else {
			failed++
		}
	}
	if ok != 2 || failed != 1 {
		t.Errorf("after shutting one stream down: %d served, %d failed; want 2 and 1", ok, failed)
	}
	if p.ShutdownSession(ss[0].ID) {
		t.Error("shutdown session found the ended stream again")
	}
}
