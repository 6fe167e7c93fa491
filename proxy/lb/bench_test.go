package lb

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"
)

// benchCases are the algorithms benchmarked, with their hash type and
// balance factor.
var benchCases = []struct {
	name, expr, hash string
	factor           int
}{
	{"roundrobin", "roundrobin", "", 0},
	{"static-rr", "static-rr", "", 0},
	{"leastconn", "leastconn", "", 0},
	{"first", "first", "", 0},
	{"source-map", "source", "map-based", 0},
	{"url_param-map", "url_param id", "map-based", 0},
	{"hdr-consistent", "hdr(X-User)", "consistent", 0},
	{"hash-cookie-consistent", "hash req.cook(SID)", "consistent", 0},
	{"uri-consistent", "uri", "consistent", 0},
	{"uri-consistent-bounded", "uri", "consistent", 125},
	{"random2", "random(2)", "", 0},
}

// BenchmarkPickRelease measures one pick, the session start and its end,
// as the backend does them (Cur and the ConnObserver hooks), at 3, 100,
// 1,000 and 10,000 servers of weights 1, 2 and 3, every server with a
// maxconn that is never reached (so the hooks that watch fullness run).
// Hashing algorithms cycle through 1,024 different keys, with headers found
// without allocating, as the proxy's are.
func BenchmarkPickRelease(b *testing.B) {
	reqs := make([]*Request, 1024)
	for i := range reqs {
		reqs[i] = &Request{
			Src:  netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)}), 1234),
			Path: fmt.Sprintf("/obj/%d", i), Query: fmt.Sprintf("x=1&id=%d", i), Method: "GET", Host: "www.example.com",
			Headers: foldHeaders{"Host: www.example.com", fmt.Sprintf("X-User: user%d", i), fmt.Sprintf("Cookie: a=b; SID=%d", i)},
		}
	}
	for _, bc := range benchCases {
		for _, n := range []int{3, 100, 1000, 10000} {
			all := make([]*Server, n)
			total := 0
			for i := range all {
				w := 1 + i%3
				all[i] = &Server{Index: i, Name: fmt.Sprintf("s%d", i+1), Weight: w * WeightScale}
				all[i].MaxConn.Store(1 << 30)
				total += w
			}
			h, _ := ParseHashType(bc.hash)
			bal, err := Parse(bc.expr)
			if err != nil {
				b.Fatal(err)
			}
			mk := func() Algorithm {
				a := bal.New(Config{Hash: h, BalanceFactor: bc.factor, RingWeight: total})
				a.Rebuild(all)
				return a
			}
			co := func(a Algorithm) ConnObserver {
				if o, ok := a.(ConnObserver); ok {
					return o
				}
				return nopObserver{}
			}
			b.Run(fmt.Sprintf("%s/n=%d", bc.name, n), func(b *testing.B) {
				a := mk()
				o := co(a)
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					s := a.Pick(reqs[i&1023], nil)
					s.Cur.Add(1)
					o.ConnTaken(s)
					s.Cur.Add(-1)
					o.ConnReleased(s)
				}
			})
			b.Run(fmt.Sprintf("%s/n=%d/parallel", bc.name, n), func(b *testing.B) {
				a := mk()
				o := co(a)
				b.ReportAllocs()
				b.ResetTimer()
				b.RunParallel(func(pb *testing.PB) {
					i := 0
					for pb.Next() {
						s := a.Pick(reqs[i&1023], nil)
						s.Cur.Add(1)
						o.ConnTaken(s)
						s.Cur.Add(-1)
						o.ConnReleased(s)
						i++
					}
				})
			})
		}
	}
}

type nopObserver struct{}

func (nopObserver) ConnTaken(*Server)    {}
func (nopObserver) ConnReleased(*Server) {}

// BenchmarkHashKey measures one pick of each hashing algorithm and hash
// type, unkeyed (HAProxy's functions) and keyed (hash_key: SipHash-2-4),
// over 100 servers of weights 1, 2 and 3 and 1,024 different keys, with
// paths like "/static/img/1234/photo.jpg" (26 bytes).
func BenchmarkHashKey(b *testing.B) {
	reqs := make([]*Request, 1024)
	for i := range reqs {
		reqs[i] = &Request{
			Src:  netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)}), 1234),
			Path: fmt.Sprintf("/static/img/%04d/photo.jpg", i), Query: fmt.Sprintf("x=1&id=%d", i), Method: "GET",
			Headers: foldHeaders{"Host: www.example.com", fmt.Sprintf("X-User: user%d", i), fmt.Sprintf("Cookie: a=b; SID=%d", i)},
		}
	}
	all := make([]*Server, 100)
	total := 0
	for i := range all {
		w := 1 + i%3
		all[i] = &Server{Index: i, Name: fmt.Sprintf("s%d", i+1), Weight: w * WeightScale}
		total += w
	}
	for _, expr := range []string{"source", "uri", "url_param id", "hdr(X-User)", "hash req.cook(SID)"} {
		for _, ht := range []string{"map-based", "consistent"} {
			for _, key := range []HashKey{{}, NewHashKey("benchmark-secret-0123456789")} {
				h, _ := ParseHashType(ht)
				bal, err := Parse(expr)
				if err != nil {
					b.Fatal(err)
				}
				a := bal.New(Config{Hash: h, Key: key, RingWeight: total})
				a.Rebuild(all)
				name := fmt.Sprintf("%s/%s/unkeyed", strings.Fields(expr)[0], ht)
				if key.IsSet() {
					name = strings.TrimSuffix(name, "unkeyed") + "keyed"
				}
				b.Run(name, func(b *testing.B) {
					b.ReportAllocs()
					for i := 0; i < b.N; i++ {
						a.Pick(reqs[i&1023], nil)
					}
				})
			}
		}
	}
}
