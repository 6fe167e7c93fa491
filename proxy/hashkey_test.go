package proxy

import (
	"fmt"
	"testing"
	"time"

	"github.com/fulcrum-proxy/fulcrum/conf"
	"github.com/fulcrum-proxy/fulcrum/proxy/lb"
)

// TestHashKeyReachesTheAlgorithm: a backend's hash_key (issue 16 point 10)
// keys its hashing: 960 URIs that the unkeyed map-based `balance uri`
// sends to s2 of 4 servers (an attacker's offline computation: all 960
// reached s2 before) reach s2 about a quarter of the time once the
// backend has a key, and all of them without one.
func TestHashKeyReachesTheAlgorithm(t *testing.T) {
	unkeyed := func() *Backend {
		b, _ := testBackend(t, conf.Backend{Balance: "uri"},
			testServer{name: "s1"}, testServer{name: "s2"}, testServer{name: "s3"}, testServer{name: "s4"})
		return b
	}
	attacker := unkeyed()
	var aimed []*lb.Request
	for i := 0; len(aimed) < 960; i++ {
		r := &lb.Request{Path: fmt.Sprintf("/static/%d.png", i)}
		if attacker.algo.Pick(r, nil).Name == "s2" {
			aimed = append(aimed, r)
		}
	}
	for _, key := range []string{"", "0123456789abcdef-secret"} {
		b := unkeyed()
		if key != "" {
			b, _ = testBackend(t, conf.Backend{Balance: "uri", HashKey: key},
				testServer{name: "s1"}, testServer{name: "s2"}, testServer{name: "s3"}, testServer{name: "s4"})
		}
		hits := 0
		for _, r := range aimed {
			s := b.assign(r, nil, time.Now())
			if s.Name == "s2" {
				hits++
			}
			b.unassign(s)
		}
		if key == "" && hits != 960 || key != "" && (hits < 180 || hits > 300) {
			t.Errorf("hash_key %q: %d of 960 aimed requests reached s2, want %s", key, hits,
				map[bool]string{true: "all", false: "180..300"}[key == ""])
		}
	}
}
