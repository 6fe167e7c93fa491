package proxy

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fulcrum-proxy/fulcrum/conf"
)

// Balance algorithms through the real proxy: the end-to-end cases.
// Backend-level rules (backup, panic, slowstart) are in backend_test.go.

// sequence sends n keep-alive GETs of uri on one connection and returns the
// answering servers in order.
func sequence(t *testing.T, addr string, n int, uri string, hdrs ...string) []string {
	t.Helper()
	rc := dialRaw(t, addr)
	var got []string
	extra := ""
	for _, h := range hdrs {
		extra += h + "\r\n"
	}
	for i := range n {
		resp := rc.do(t, "GET "+uri+" HTTP/1.1\r\nHost: test\r\n"+extra+"\r\n")
		if resp.StatusCode != 200 {
			t.Fatalf("request %d: status %d", i, resp.StatusCode)
		}
		got = append(got, strings.TrimSpace(bodyOf(resp)))
	}
	return got
}

// tally counts names.
func tally(names []string) map[string]int {
	m := map[string]int{}
	for _, n := range names {
		m[n]++
	}
	return m
}

// holdingUpstream is an HTTP server that holds every request until
// released, counting those it holds.
type holdingUpstream struct {
	*httptest.Server
	name    string
	held    atomic.Int64
	release chan struct{}
}

func newHoldingUpstream(t *testing.T, name string) *holdingUpstream {
	t.Helper()
	u := &holdingUpstream{name: name, release: make(chan struct{})}
	u.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u.held.Add(1)
		defer u.held.Add(-1)
		select {
		case <-u.release:
		case <-r.Context().Done():
		}
		fmt.Fprintf(w, "%s\n", name)
	}))
	t.Cleanup(func() {
		u.CloseClientConnections()
		u.Close()
	})
	return u
}

func (u *holdingUpstream) addr() string { return u.Listener.Addr().String() }

// releaseAtEnd releases every held request when the test ends, before the
// proxy's shutdown (cleanups run last-registered first) waits for them.
func releaseAtEnd(t *testing.T, us ...*holdingUpstream) {
	t.Cleanup(func() {
		for _, u := range us {
			close(u.release)
		}
	})
}

// holdRequests starts n GETs through the proxy in the background; their
// statuses arrive on the returned channel once released.
func holdRequests(t *testing.T, addr string, n int) <-chan int {
	t.Helper()
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 10 * time.Second}
	t.Cleanup(client.CloseIdleConnections)
	out := make(chan int, n)
	for range n {
		go func() {
			resp, err := client.Get("http://" + addr + "/hold")
			if err != nil {
				out <- -1
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			out <- resp.StatusCode
		}()
	}
	return out
}

// TestRoundRobinThroughProxy: weights 3:2:1 over 600 requests give exactly
// 300/200/100, and no window of 6 consecutive picks has a server more often
// than its weight; a weight change mid-stream is exact again within one
// cycle.
func TestRoundRobinThroughProxy(t *testing.T) {
	var addrs []string
	for i := 1; i <= 3; i++ {
		addrs = append(addrs, newUpstream(t, fmt.Sprintf("s%d", i)).addr())
	}
	p, addr := startProxy(t, testConfig(conf.ModeHTTP, addrs, []int{3, 2, 1}))
	seq := sequence(t, addr, 600, "/")
	if got, want := tally(seq), map[string]int{"s1": 300, "s2": 200, "s3": 100}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("got %v, want %v", got, want)
	}
	weight := map[string]int{"s1": 3, "s2": 2, "s3": 1}
	for i := 0; i+6 <= len(seq); i++ {
		for name, n := range tally(seq[i : i+6]) {
			if n > weight[name] {
				t.Fatalf("picks %d..%d: %s %d times, weight %d: %v", i, i+5, name, n, weight[name], seq[i:i+6])
			}
		}
	}

	be := p.Backends[0]
	sequence(t, addr, 4, "/") // mid-cycle
	if _, err := be.SetWeight(be.Server("s3"), 3); err != nil {
		t.Fatal(err)
	}
	seq = sequence(t, addr, 8*4, "/") // cycles of 3+2+3
	for c := 1; c < 4; c++ {          // the first cycle is the transition
		if got := tally(seq[8*c : 8*c+8]); fmt.Sprint(got) != fmt.Sprint(map[string]int{"s1": 3, "s2": 2, "s3": 3}) {
			t.Errorf("cycle %d after the change: got %v, want s1:3 s2:2 s3:3", c, got)
		}
	}
}

// TestLeastConnThroughProxy: with servers that hold their requests, a new
// request goes to the idle server.
func TestLeastConnThroughProxy(t *testing.T) {
	us := []*holdingUpstream{newHoldingUpstream(t, "s1"), newHoldingUpstream(t, "s2"), newHoldingUpstream(t, "s3")}
	cfg := testConfig(conf.ModeHTTP, []string{us[0].addr(), us[1].addr(), us[2].addr()}, nil)
	cfg.Backends[0].Balance = "leastconn"
	p, addr := startProxy(t, cfg)
	releaseAtEnd(t, us...)
	held := func() []int64 {
		return []int64{us[0].held.Load(), us[1].held.Load(), us[2].held.Load()}
	}
	// cur is the proxy's own count of sessions on server i, what
	// leastconn reads: a server's answer is held by the upstream's count
	// before the proxy has finished relaying it.
	cur := func(i int) int64 { return p.Backends[0].Servers()[i].lb.Cur.Load() }

	holdRequests(t, addr, 3)
	waitFor(t, 5*time.Second, "one request held on each server", func() bool {
		return slices.Equal(held(), []int64{1, 1, 1})
	})
	holdRequests(t, addr, 3)
	waitFor(t, 5*time.Second, "two requests held on each server", func() bool {
		return slices.Equal(held(), []int64{2, 2, 2})
	})
	us[1].release <- struct{}{} // s2 finishes one
	waitFor(t, 5*time.Second, "s2 down to one", func() bool { return us[1].held.Load() == 1 && cur(1) == 1 })
	holdRequests(t, addr, 1)
	waitFor(t, 5*time.Second, "the new request on s2, the least loaded", func() bool {
		return slices.Equal(held(), []int64{2, 2, 2})
	})
	us[0].release <- struct{}{}
	us[0].release <- struct{}{}
	waitFor(t, 5*time.Second, "s1 idle", func() bool { return us[0].held.Load() == 0 && cur(0) == 0 })
	holdRequests(t, addr, 2)
	waitFor(t, 5*time.Second, "both new requests on s1, the idle one", func() bool {
		return slices.Equal(held(), []int64{2, 2, 2})
	})
}

// TestFirstThroughProxy: maxconn 2 on each server and 5 concurrent held
// requests: s1 and s2 hold 2 each, s3 holds 1; a sixth request with every
// slot but one of s3's taken goes to s3, and a seventh finds every server
// full and gets a 503 (no queue yet).
func TestFirstThroughProxy(t *testing.T) {
	us := []*holdingUpstream{newHoldingUpstream(t, "s1"), newHoldingUpstream(t, "s2"), newHoldingUpstream(t, "s3")}
	cfg := testConfig(conf.ModeHTTP, []string{us[0].addr(), us[1].addr(), us[2].addr()}, []int{1, 100, 1})
	cfg.Backends[0].Balance = "first"
	for _, s := range cfg.Backends[0].Servers {
		s.MaxConn = 2
	}
	_, addr := startProxy(t, cfg)
	releaseAtEnd(t, us...)
	held := func() []int64 {
		return []int64{us[0].held.Load(), us[1].held.Load(), us[2].held.Load()}
	}
	done := holdRequests(t, addr, 5)
	waitFor(t, 5*time.Second, "2, 2 and 1 held", func() bool { return slices.Equal(held(), []int64{2, 2, 1}) })
	holdRequests(t, addr, 1)
	waitFor(t, 5*time.Second, "s3 full too", func() bool { return slices.Equal(held(), []int64{2, 2, 2}) })
	if code := <-holdRequests(t, addr, 1); code != 503 {
		t.Errorf("every server full: got status %d, want 503", code)
	}
	us[0].release <- struct{}{}
	if code := <-done; code != 200 {
		t.Fatalf("released request: status %d", code)
	}
	holdRequests(t, addr, 1)
	waitFor(t, 5*time.Second, "the freed slot of s1 taken again", func() bool { return slices.Equal(held(), []int64{2, 2, 2}) })
}

// TestHashingThroughProxy: the same key always reaches the same server,
// different keys are spread, and a request without the key is balanced
// round-robin.
func TestHashingThroughProxy(t *testing.T) {
	cases := []struct {
		balance, hashType string
		keyed             func(k int) (uri string, hdrs []string)
		absent            func() (uri string, hdrs []string)
	}{
		{"uri", "map-based",
			func(k int) (string, []string) { return fmt.Sprintf("/obj/%d?nocache=%d", k, k*7), nil },
			nil},
		{"uri whole", "consistent",
			func(k int) (string, []string) { return fmt.Sprintf("/obj?id=%d", k), nil },
			nil},
		{"url_param user", "map-based",
			func(k int) (string, []string) { return fmt.Sprintf("/x?a=1&user=u%d", k), nil },
			func() (string, []string) { return "/x?a=1", nil }},
		{"hdr(X-Session)", "consistent",
			func(k int) (string, []string) { return "/", []string{fmt.Sprintf("X-Session: s%d", k)} },
			func() (string, []string) { return "/", nil }},
		{"hash req.cook(SID)", "consistent djb2 avalanche",
			func(k int) (string, []string) { return "/", []string{fmt.Sprintf("Cookie: a=b; SID=%d", k)} },
			func() (string, []string) { return "/", []string{"Cookie: a=b"} }},
		{"source", "consistent",
			func(int) (string, []string) { return "/", nil },
			nil},
	}
	for _, tc := range cases {
		t.Run(tc.balance+"/"+tc.hashType, func(t *testing.T) {
			var addrs []string
			for i := 1; i <= 4; i++ {
				addrs = append(addrs, newUpstream(t, fmt.Sprintf("s%d", i)).addr())
			}
			cfg := testConfig(conf.ModeHTTP, addrs, nil)
			cfg.Backends[0].Balance, cfg.Backends[0].HashType = tc.balance, tc.hashType
			_, addr := startProxy(t, cfg)
			seen := map[string]bool{}
			for k := range 20 {
				uri, hdrs := tc.keyed(k)
				got := tally(sequence(t, addr, 5, uri, hdrs...))
				if len(got) != 1 {
					t.Fatalf("key %d reached several servers: %v", k, got)
				}
				for name := range got {
					seen[name] = true
				}
			}
			if tc.balance != "source" && len(seen) < 3 {
				t.Errorf("20 keys reached only %v", seen)
			}
			if tc.absent != nil {
				uri, hdrs := tc.absent()
				got := tally(sequence(t, addr, 8, uri, hdrs...))
				if fmt.Sprint(got) != fmt.Sprint(map[string]int{"s1": 2, "s2": 2, "s3": 2, "s4": 2}) {
					t.Errorf("without the key: got %v, want 2 each (round-robin)", got)
				}
			}
		})
	}
}

// TestAllServersFull503: with every usable server at its maxconn, a request
// gets a 503 at once, counted nowhere on the servers.
func TestAllServersFull503(t *testing.T) {
	u := newHoldingUpstream(t, "s1")
	cfg := testConfig(conf.ModeHTTP, []string{u.addr()}, nil)
	cfg.Backends[0].Servers[0].MaxConn = 1
	p, addr := startProxy(t, cfg)
	releaseAtEnd(t, u)
	done := holdRequests(t, addr, 1)
	waitFor(t, 5*time.Second, "one request held", func() bool { return u.held.Load() == 1 })
	if code := <-holdRequests(t, addr, 1); code != 503 {
		t.Errorf("got status %d, want 503", code)
	}
	u.release <- struct{}{}
	<-done
	if got := p.Snapshot().Backends[0].Servers[0].Stot; got != 1 {
		t.Errorf("server stot: got %d, want 1", got)
	}
	done = holdRequests(t, addr, 1)
	waitFor(t, 5*time.Second, "the next request held", func() bool { return u.held.Load() == 1 })
	u.release <- struct{}{}
	if code := <-done; code != 200 {
		t.Errorf("after the release: got status %d, want 200", code)
	}
}
