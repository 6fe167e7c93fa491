package lb

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// servers returns servers s1, s2, ... with the given algorithm weights
// (Weight, not scaled: the algorithms do not care about the scale).
func servers(weights ...int) []*Server {
	var out []*Server
	for i, w := range weights {
		s := &Server{Index: i, Name: fmt.Sprintf("s%d", i+1), Weight: w}
		out = append(out, s)
	}
	return out
}

// usable mimics the backend: only weight > 0 is handed to the algorithm.
func usable(all []*Server) []*Server {
	var out []*Server
	for _, s := range all {
		if s.Weight > 0 {
			out = append(out, s)
		}
	}
	return out
}

// seeded returns a concurrency-safe random source with a fixed seed.
func seeded(seed uint64) func() uint64 {
	var mu sync.Mutex
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	return func() uint64 {
		mu.Lock()
		defer mu.Unlock()
		return r.Uint64()
	}
}

// fataler is what mustNew and build need of a test: *testing.T, *testing.B
// and *rapid.T all have it.
type fataler interface {
	Helper()
	Fatalf(format string, args ...any)
}

// mustNew builds the algorithm of a balance expression.
func mustNew(t fataler, expr string, c Config) Algorithm {
	t.Helper()
	b, err := Parse(expr)
	if err != nil {
		t.Fatalf("Parse(%q): %v", expr, err)
	}
	if c.Rand == nil {
		c.Rand = seeded(1)
	}
	return b.New(c)
}

// headers is a HeaderGetter over a map of lowercase names.
type headers map[string]string

func (h headers) Header(name string) (string, bool) {
	v, ok := h[strings.ToLower(name)]
	return v, ok
}

// req returns a request from addr "ip:port" and a URI "/path?query", with
// headers given as "Name: value".
func req(src, uri string, hdrs ...string) *Request {
	r := &Request{Method: "GET", Headers: headers{}}
	if src != "" {
		r.Src = netip.MustParseAddrPort(src)
	}
	r.Path, r.Query, _ = strings.Cut(uri, "?")
	for _, h := range hdrs {
		k, v, _ := strings.Cut(h, ": ")
		r.Headers.(headers)[strings.ToLower(k)] = v
		if strings.EqualFold(k, "host") {
			r.Host = v
		}
	}
	return r
}

// take and release start and end a session on s as the backend does.
func take(a Algorithm, s *Server) {
	s.Cur.Add(1)
	if co, ok := a.(ConnObserver); ok {
		co.ConnTaken(s)
	}
}

func release(a Algorithm, s *Server) {
	s.Cur.Add(-1)
	if co, ok := a.(ConnObserver); ok {
		co.ConnReleased(s)
	}
}

// count picks n times with r and counts the picks by index.
func count(a Algorithm, r *Request, n, size int) []int {
	got := make([]int, size)
	for range n {
		got[a.Pick(r, nil).Index]++
	}
	return got
}

// every lists one balance expression per runnable algorithm, each hash
// algorithm with both hash types, as the conformance tests run them.
var every = []struct {
	expr string
	hash string
}{
	{"roundrobin", ""},
	{"static-rr", ""},
	{"leastconn", ""},
	{"first", ""},
	{"source", "map-based"},
	{"source", "consistent"},
	{"uri", "map-based"},
	{"uri whole", "consistent"},
	{"url_param id", "map-based"},
	{"url_param id", "consistent"},
	{"hdr(X-User)", "map-based"},
	{"hdr(Host) use_domain_only", "consistent"},
	{"hash req.cook(SID),lower", "map-based"},
	{"hash path", "consistent"},
	{"random", ""},
	{"random(1)", ""},
	{"random(3)", ""},
	{"source", "consistent"}, // with a balance factor, below
}

// build builds case i of every.
func build(t fataler, i int) Algorithm {
	t.Helper()
	return buildKeyed(t, i, HashKey{})
}

// buildKeyed builds case i of every with hash_key key. Hashing goes past
// full servers (hash_preserve_affinity "maxconn"), so that every algorithm
// keeps the invariants these tests check; affinity_test.go covers the
// other modes.
func buildKeyed(t fataler, i int, key HashKey) Algorithm {
	t.Helper()
	c := Config{RingWeight: 10, Key: key, Affinity: AffinityMaxConn}
	if every[i].hash != "" {
		h, err := ParseHashType(every[i].hash)
		if err != nil {
			t.Fatalf("%v", err)
		}
		c.Hash = h
	}
	if i == len(every)-1 {
		c.BalanceFactor = 150
	}
	return mustNew(t, every[i].expr, c)
}

// caseName names case i of every.
func caseName(i int) string {
	n := every[i].expr
	if every[i].hash != "" {
		n += "/" + every[i].hash
	}
	if i == len(every)-1 {
		n += "/factor 150"
	}
	return n
}

// sampleRequests are requests with every key the algorithms read, and
// without.
var sampleRequests = []*Request{
	req("10.0.0.1:1000", "/a/b?id=1", "X-User: alice", "Host: www.example.com", "Cookie: SID=x1"),
	req("10.0.0.2:1000", "/c?id=2", "X-User: bob", "Host: api.example.org", "Cookie: SID=x2"),
	req("192.168.1.7:1000", "/d/e/f?id=3&x=y", "X-User: carol", "Host: example.net"),
	req("[2001:db8::1]:1000", "/"),
	nil,
}

// TestConformance runs every algorithm through the cases STYLE.md asks
// each of them to cover: an empty backend, a down server, a full server,
// avoid, and a runtime weight change.
func TestConformance(t *testing.T) {
	for i := range every {
		t.Run(caseName(i), func(t *testing.T) {
			t.Run("empty backend", func(t *testing.T) {
				a := build(t, i)
				for _, r := range sampleRequests {
					if s := a.Pick(r, nil); s != nil {
						t.Fatalf("before Rebuild: got %s, want nil", s.Name)
					}
				}
				a.Rebuild(nil)
				for _, r := range sampleRequests {
					if s := a.Pick(r, nil); s != nil {
						t.Fatalf("after Rebuild(nil): got %s, want nil", s.Name)
					}
				}
			})
			t.Run("down server is never picked", func(t *testing.T) {
				all := servers(1, 1, 1)
				a := build(t, i)
				a.Rebuild(all)
				a.Rebuild([]*Server{all[0], all[2]}) // s2 went down
				for n := 0; n < 50; n++ {
					for _, r := range sampleRequests {
						if s := a.Pick(r, nil); s == all[1] || s == nil {
							t.Fatalf("got %v, want s1 or s3", s)
						}
					}
				}
				a.Rebuild(nil) // all down
				if s := a.Pick(sampleRequests[0], nil); s != nil {
					t.Fatalf("all down: got %s, want nil", s.Name)
				}
			})
			t.Run("full server is never picked", func(t *testing.T) {
				all := servers(1, 1, 1)
				all[0].MaxConn.Store(1)
				a := build(t, i)
				a.Rebuild(all)
				take(a, all[0])
				for n := 0; n < 50; n++ {
					for _, r := range sampleRequests {
						if s := a.Pick(r, nil); s == all[0] || s == nil {
							t.Fatalf("got %v, want s2 or s3", s)
						}
					}
				}
				all[1].MaxConn.Store(1)
				all[2].MaxConn.Store(1)
				take(a, all[1])
				all[2].Cur.Add(1) // full without the hook: Pick must check
				if s := a.Pick(sampleRequests[0], nil); s != nil {
					t.Fatalf("all full: got %s, want nil", s.Name)
				}
				release(a, all[1])
				for _, r := range sampleRequests {
					if s := a.Pick(r, nil); s != all[1] {
						t.Fatalf("after a release: got %v, want s2", s)
					}
				}
			})
			t.Run("avoid", func(t *testing.T) {
				all := servers(1, 1)
				a := build(t, i)
				a.Rebuild(all)
				for n := 0; n < 20; n++ {
					for _, r := range sampleRequests {
						if s := a.Pick(r, all[0]); s != all[1] {
							t.Fatalf("got %v, want s2", s)
						}
					}
				}
				all[1].MaxConn.Store(1)
				take(a, all[1])
				if s := a.Pick(sampleRequests[0], all[0]); s != all[0] {
					t.Fatalf("other full: got %v, want s1 as a last resort", s)
				}
				a.Rebuild(all[:1])
				if s := a.Pick(sampleRequests[1], all[0]); s != all[0] {
					t.Fatalf("alone: got %v, want s1 as a last resort", s)
				}
			})
			t.Run("runtime weight change", func(t *testing.T) {
				all := servers(1, 1)
				a := build(t, i)
				a.Rebuild(all)
				a.Pick(sampleRequests[0], nil)
				all[0].Weight = 3
				a.Rebuild(all)
				for n := 0; n < 20; n++ {
					for _, r := range sampleRequests {
						if s := a.Pick(r, nil); s == nil {
							t.Fatal("got nil after a weight change")
						}
					}
				}
			})
		})
	}
}

// TestConcurrentPicks drives each algorithm from several goroutines while
// the usable set and the weights change and sessions come and go, some
// servers filling up: -race must stay quiet (an algorithm reading Weight
// outside Rebuild, or a counter read without its lock, shows here).
func TestConcurrentPicks(t *testing.T) {
	for i := range every {
		t.Run(caseName(i), func(t *testing.T) {
			all := servers(3, 2, 1, 1)
			all[0].MaxConn.Store(2)
			all[1].MaxConn.Store(3)
			a := build(t, i)
			a.Rebuild(all)
			var wg sync.WaitGroup
			var picked atomic.Int64
			for g := range 4 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for n := range 500 {
						r := sampleRequests[(g+n)%len(sampleRequests)]
						if s := a.Pick(r, nil); s != nil {
							take(a, s)
							picked.Add(1)
							release(a, s)
						}
					}
				}()
			}
			for n := range 50 { // meanwhile: s4 flaps, s1 changes weight
				if n%2 == 0 {
					a.Rebuild(all[:3])
				} else {
					all[0].Weight = 1 + n%5
					a.Rebuild(all)
				}
			}
			wg.Wait()
			if picked.Load() == 0 {
				t.Error("no pick returned a server")
			}
		})
	}
}

// foldHeaders is a HeaderGetter that, like the proxy's, finds a header
// without allocating.
type foldHeaders []string // "Name: value"

func (h foldHeaders) Header(name string) (string, bool) {
	for _, kv := range h {
		if k, v, _ := strings.Cut(kv, ": "); strings.EqualFold(k, name) {
			return v, true
		}
	}
	return "", false
}

// TestPickAllocatesNothing: a pick, with or without a key, allocates
// nothing, for every algorithm (the hashers stay on the stack).
func TestPickAllocatesNothing(t *testing.T) {
	reqs := []*Request{
		{Src: netip.MustParseAddrPort("10.0.0.1:1"), Method: "GET", Path: "/a/b", Query: "id=1&x=2", Host: "www.example.com",
			Headers: foldHeaders{"X-User: alice", "Cookie: SID=x1; a=b", "Host: www.example.com"}},
		{Path: "/", Headers: foldHeaders{}},
		nil,
	}
	for i := range every {
		for _, key := range []HashKey{{}, NewHashKey(testSecret)} {
			a := buildKeyed(t, i, key)
			a.Rebuild(servers(16, 32, 48))
			for _, r := range reqs {
				if n := testing.AllocsPerRun(100, func() { a.Pick(r, nil) }); n != 0 {
					t.Errorf("%s (keyed %v): %v allocations per pick", caseName(i), key.IsSet(), n)
				}
			}
		}
	}
}
