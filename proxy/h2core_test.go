package proxy

import (
	"fmt"
	"io"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/fulcrum-proxy/fulcrum/proxy/stick"
)

// TestH2StreamsAreRequests: the streams of one HTTP/2 client connection
// go through the core exactly as HTTP/1 requests: balancing (roundrobin,
// one server after the other), cookie persistence (inserted, then
// followed), http_request rules (deny), use_backend, the queue of a
// server at its maxconn, stick-table tracking (http_req_cnt) and the
// access log, each stream a request of its own.
func TestH2StreamsAreRequests(t *testing.T) {
	release := make(chan struct{})
	ups := []*upstream{newUpstream(t, "s1"), newUpstream(t, "s2"), newUpstream(t, "s3"), newUpstream(t, "b")}
	var inflight sync.WaitGroup
	ups[3].handler = func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/b/slow" {
			inflight.Done()
			<-release
		}
		fmt.Fprint(w, "b")
	}
	text := fmt.Sprintf(`
[[frontend]]
name = "www"
bind = ["127.0.0.1:0 proto h2"]
default_backend = "web"
stick_table = { type = "ip", size = 100, expire = "1m", store = ["http_req_cnt"] }
http_request = ["track-sc0 src", "deny deny_status 429 if { path_beg /deny }"]
use_backend = [{ backend = "b", if = "{ path_beg /b }" }]

[[backend]]
name = "web"
cookie = { name = "SRV", mode = "insert", indirect = true }
%s
[[backend]]
name = "b"
timeout_queue = "10s"
[[backend.server]]
name = "b"
address = %q
maxconn = 1
`, fmt.Sprintf(threeServers, ups[0].addr(), ups[1].addr(), ups[2].addr()), ups[3].addr())
	p, addr, logs := startLogged(t, loadConfig(t, t.TempDir(), text))
	tr := h2cTransport()
	defer tr.CloseIdleConnections()
	get := func(path string, hdr ...string) *http.Response {
		t.Helper()
		req := mustReq(t, "http://"+addr+path)
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		resp, err := tr.RoundTrip(req)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	for i, want := range []string{"s1", "s2", "s3"} {
		resp := get("/")
		if srv, ck := resp.Header.Get("X-Server"), resp.Header.Get("Set-Cookie"); srv != want || ck != "SRV="+want+"; path=/" {
			t.Errorf("request %d: server %q, Set-Cookie %q; want %q, \"SRV=%s; path=/\"", i, srv, ck, want, want)
		}
	}
	for i := range 3 {
		resp := get("/", "Cookie", "SRV=s2")
		if srv, ck := resp.Header.Get("X-Server"), resp.Header.Get("Set-Cookie"); srv != "s2" || ck != "" {
			t.Errorf("request %d with SRV=s2: server %q, Set-Cookie %q; want s2 and none", i, srv, ck)
		}
	}
	if resp := get("/deny"); resp.StatusCode != 429 {
		t.Errorf("/deny: status %d, want 429", resp.StatusCode)
	}
	// Two streams for b's only slot: the second waits in the queue.
	inflight.Add(1)
	codes := make(chan int, 2)
	for range 2 {
		go func() {
			resp, err := tr.RoundTrip(mustReq(t, "http://"+addr+"/b/slow"))
			if err != nil {
				codes <- 0
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			codes <- resp.StatusCode
		}()
	}
	inflight.Wait()
	waitFor(t, 5*time.Second, "the second stream queued", func() bool { return p.Snapshot().Backends[1].Qcur == 1 })
	inflight.Add(1)
	release <- struct{}{}
	inflight.Wait()
	release <- struct{}{}
	for range 2 {
		if c := <-codes; c != 200 {
			t.Errorf("/b/slow: status %d, want 200", c)
		}
	}
	if s := p.Snapshot().Backends[1]; s.Qmax != 1 || s.Servers[0].Smax != 1 {
		t.Errorf("backend b: qmax %d, server smax %d; want 1 and 1", s.Qmax, s.Servers[0].Smax)
	}
	waitFor(t, 5*time.Second, "9 log lines", func() bool { return len(logLines(t, logs)) == 9 })
	for _, l := range logLines(t, logs) {
		if v, _ := l["request"].(string); len(v) < 9 || v[len(v)-8:] != "HTTP/2.0" {
			t.Errorf("log line %v: want an HTTP/2.0 request", l)
		}
	}
	tbl := p.Table("www")
	k, _ := tbl.ParseKey("127.0.0.1")
	e := tbl.Lookup(k)
	if e == nil {
		t.Fatal("no stick-table entry for 127.0.0.1")
	}
	defer tbl.Release(e)
	if n, _ := tbl.Value(e, stick.HTTPReqCnt); n != 9 {
		t.Errorf("http_req_cnt: got %d, want 9 (one per stream)", n)
	}
	if s := p.Snapshot().Frontends[0]; s.ReqTot != 9 {
		t.Errorf("frontend req_tot: got %d, want 9", s.ReqTot)
	}
}
