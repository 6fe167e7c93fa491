package lb

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// TestHashKeys: for each hashing algorithm and hash type, requests with
// the same key reach the same server whatever else differs, and requests
// without the key are spread by round-robin.
func TestHashKeys(t *testing.T) {
	cases := []struct {
		expr string
		// same: requests that must all reach one server.
		same []*Request
		// absent: a request without the key.
		absent *Request
	}{
		{"source",
			[]*Request{req("10.1.2.3:1", "/a"), req("10.1.2.3:2", "/b"), req("10.1.2.3:3", "/c", "X-User: x")},
			&Request{}},
		{"uri",
			[]*Request{req("10.0.0.1:1", "/img/logo.png"), req("10.0.0.2:1", "/img/logo.png?v=2")},
			nil},
		{"uri whole",
			[]*Request{req("10.0.0.1:1", "/p?v=2"), req("10.0.0.2:1", "/p?v=2")},
			nil},
		{"uri depth 1",
			[]*Request{req("", "/img/a.png"), req("", "/img/b/c.png"), req("", "/img")},
			nil},
		{"uri len 4",
			[]*Request{req("", "/abcdef"), req("", "/abcxyz"), req("", "/abc")},
			nil},
		{"uri path-only",
			[]*Request{req("", "/x/y"), req("", "http://example.com/x/y"), req("", "https://other:8443/x/y")},
			nil},
		{"url_param user",
			[]*Request{req("", "/a?user=42"), req("", "/b?x=1&user=42&y=2"), req("", "/c?user=42&user=43")},
			req("", "/a?users=42&x=user")},
		{"hdr(X-Session)",
			[]*Request{req("", "/a", "X-Session: abc"), req("10.9.9.9:1", "/b", "x-session: abc")},
			req("", "/a", "X-Session: ")},
		{"hdr(Host) use_domain_only",
			[]*Request{req("", "/", "Host: www.example.com"), req("", "/", "Host: api.example.org"), req("", "/", "Host: example")},
			req("", "/")},
		{"hash req.cook(SID),lower",
			[]*Request{req("", "/", "Cookie: a=1; SID=Abc"), req("", "/x", "Cookie: SID=aBC")},
			req("", "/", "Cookie: a=1")},
		{"hash url_param(u)",
			[]*Request{req("", "/a?u=7"), req("", "/b?u=7&z=1")},
			req("", "/a?v=7")},
		{"hash src",
			[]*Request{req("10.1.2.3:1", "/a"), req("10.1.2.3:9", "/b")},
			&Request{}},
		{"hash base",
			[]*Request{req("", "/p?x=1", "Host: h"), req("", "/p?y=2", "Host: h")},
			nil},
	}
	for _, tc := range cases {
		for _, ht := range []string{"map-based", "consistent", "map-based djb2 avalanche", "consistent wt6", "map-based/keyed", "consistent/keyed"} {
			t.Run(tc.expr+"/"+ht, func(t *testing.T) {
				typ, keyed := strings.CutSuffix(ht, "/keyed")
				h, _ := ParseHashType(typ)
				var key HashKey
				if keyed {
					key = NewHashKey(testSecret)
				}
				all := servers(16, 16, 16, 16, 16, 16, 16)
				a := mustNew(t, tc.expr, Config{Hash: h, Key: key, RingWeight: 7})
				a.Rebuild(all)
				want := a.Pick(tc.same[0], nil)
				for range 3 { // and again: no round-robin state involved
					for i, r := range tc.same {
						if got := a.Pick(r, nil); got != want {
							t.Fatalf("request %d: got %s, want %s like request 0", i, got.Name, want.Name)
						}
					}
				}
				if tc.absent != nil {
					// Round-robin: 7 picks reach 7 servers.
					got := count(a, tc.absent, 7, len(all))
					if !slices.Equal(got, []int{1, 1, 1, 1, 1, 1, 1}) {
						t.Errorf("absent key: got %v, want one pick each", got)
					}
				}
			})
		}
	}
}

// TestHashKeysSpread: different keys reach different servers, in
// proportion to the weights (map-based is exact over a full set of
// hashes; here a loose check that no server is starved or flooded).
func TestHashKeysSpread(t *testing.T) {
	for _, ht := range []string{"map-based", "consistent", "map-based/keyed", "consistent/keyed"} {
		t.Run(ht, func(t *testing.T) {
			typ, keyed := strings.CutSuffix(ht, "/keyed")
			h, _ := ParseHashType(typ)
			var key HashKey
			if keyed {
				key = NewHashKey(testSecret)
			}
			all := servers(16, 32, 48)
			a := mustNew(t, "url_param id", Config{Hash: h, Key: key, RingWeight: 6})
			a.Rebuild(all)
			got := make([]int, 3)
			for i := range 6000 {
				got[a.Pick(req("", fmt.Sprintf("/?id=%d", i)), nil).Index]++
			}
			for i, want := range []int{1000, 2000, 3000} {
				if got[i] < want*7/10 || got[i] > want*13/10 {
					t.Errorf("got %v, want about [1000 2000 3000]", got)
				}
			}
		})
	}
}

func TestMainDomain(t *testing.T) {
	for in, want := range map[string]string{
		"haproxy.1wt.eu":  "1wt",
		"www.example.com": "example",
		"example.com":     "example",
		"localhost":       "localhost",
		".com":            "",
	} {
		if got := mainDomain(in); got != want {
			t.Errorf("mainDomain(%q): got %q, want %q", in, got, want)
		}
	}
}

func TestURIKey(t *testing.T) {
	// Two requests hash alike exactly when the key strings are equal.
	cases := []struct {
		expr    string
		uri     string
		wantKey string
	}{
		{"uri", "/a/b/c?x=1", "/a/b/c"},
		{"uri whole", "/a/b/c?x=1", "/a/b/c?x=1"},
		{"uri whole", "/a", "/a"},
		{"uri len 3", "/a/b/c", "/a/"},
		{"uri depth 2", "/a/b/c", "/a/b"},
		{"uri depth 2 len 3", "/a/b/c", "/a/"},
		{"uri depth 1 whole", "/a?x=/y", "/a?x="},
		{"uri path-only", "http://h:80/p?q", "/p"},
		{"uri path-only whole", "http://h/p?q", "/p?q"},
	}
	for _, tc := range cases {
		k, err := parseURIKey(strings.Fields(tc.expr)[1:])
		if err != nil {
			t.Fatal(err)
		}
		for _, typ := range []HashType{{}, {key: NewHashKey(testSecret)}} {
			got, _ := k.hash(req("", tc.uri), typ)
			h := newHasher(typ)
			h.writeString(tc.wantKey)
			if got != h.sum() {
				t.Errorf("%s on %q (keyed %v): hash differs from the hash of %q", tc.expr, tc.uri, typ.keyed(), tc.wantKey)
			}
		}
	}
}

// TestHashPreserveAffinity: what a hashing algorithm does when the server
// of a request's key is full, for each hash_preserve_affinity (HAProxy
// 3.2) and hash type. HAProxy 2.6 keeps the key on its full server and
// queues the request there ("always", the default); fulcrum used to skip
// it, which is "maxconn".
func TestHashPreserveAffinity(t *testing.T) {
	r := req("", "/?id=7")
	for _, ht := range []string{"map-based", "consistent"} {
		h, _ := ParseHashType(ht)
		build := func(a Affinity) (Algorithm, []*Server, *Server) {
			all := servers(16, 16, 16)
			alg := mustNew(t, "url_param id", Config{Hash: h, RingWeight: 3, Affinity: a})
			alg.Rebuild(all)
			home := alg.Pick(r, nil)
			home.MaxConn.Store(1)
			home.Cur.Store(1) // the key's server is full
			home.MaxQueue = 2
			return alg, all, home
		}
		cases := []struct {
			name     string
			aff      Affinity
			queued   int64 // requests in the home server's queue
			avoid    bool
			wantHome bool
			affine   bool
		}{
			{"always: the full home server", AffinityAlways, 5, false, true, true},
			{"always, avoid: the next server", AffinityAlways, 0, true, false, true},
			{"maxconn: the next server", AffinityMaxConn, 0, false, false, false},
			{"maxqueue, queue not full: home", AffinityMaxQueue, 1, false, true, true},
			{"maxqueue, queue full: the next server", AffinityMaxQueue, 2, false, false, true},
		}
		for _, tc := range cases {
			t.Run(ht+"/"+tc.name, func(t *testing.T) {
				alg, all, home := build(tc.aff)
				home.Queued.Store(tc.queued)
				var avoid *Server
				if tc.avoid {
					avoid = home
				}
				got, affine := alg.(AffinityPicker).PickAffine(r, avoid)
				if (got == home) != tc.wantHome || affine != tc.affine || got == nil {
					t.Fatalf("got %v (affine %v), want home %v (affine %v)", got, affine, tc.wantHome, tc.affine)
				}
				if p := alg.Pick(r, avoid); p != got {
					t.Errorf("Pick: got %v, PickAffine %v", p, got)
				}
				// A request without the key is balanced: never affine,
				// never to a full server.
				for range 6 {
					if s, affine := alg.(AffinityPicker).PickAffine(req("", "/"), nil); s == home || affine {
						t.Fatalf("no key: got %v (affine %v), want another server, not affine", s, affine)
					}
				}
				// Every server full: "always" still names the home server.
				for _, s := range all {
					s.MaxConn.Store(1)
					s.Cur.Store(1)
				}
				if got := alg.Pick(r, nil); (got == home) != (tc.aff == AffinityAlways || tc.aff == AffinityMaxQueue && tc.queued < 2) {
					t.Errorf("all full: got %v", got)
				}
			})
		}
	}
}
