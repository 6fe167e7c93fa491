package proxy

import (
	"fmt"
	"testing"
	"time"

	"github.com/fulcrum-proxy/fulcrum/conf"
	"github.com/fulcrum-proxy/fulcrum/proxy/lb"
)

// BenchmarkBackendAssign measures the backend's pick path as a request
// takes it: assign (the algorithm's pick, the slot reserved, the session
// counted) then unassign (the slot released, the queue looked at), for
// roundrobin, leastconn and consistent hashing at 1,000 servers of
// weights 1, 2 and 3, every server with a maxconn never reached.
func BenchmarkBackendAssign(b *testing.B) {
	reqs := make([]*lb.Request, 1024)
	for i := range reqs {
		reqs[i] = &lb.Request{Path: fmt.Sprintf("/obj/%d", i), Method: "GET", Host: "www.example.com"}
	}
	for _, bc := range []struct{ name, balance, hash string }{
		{"roundrobin", "roundrobin", ""},
		{"leastconn", "leastconn", ""},
		{"consistent", "uri", "consistent"},
	} {
		be := &conf.Backend{Name: "web", Mode: conf.ModeHTTP, Balance: bc.balance, HashType: bc.hash,
			HTTPReuse: "safe", TimeoutConnect: time.Second, HashPreserveAffinity: "maxconn"}
		for i := range 1000 {
			be.Servers = append(be.Servers, &conf.Server{Name: fmt.Sprintf("s%d", i+1),
				Address: "127.0.0.1:1", Weight: 1 + i%3, MaxConn: 1 << 30, PoolMaxConn: -1})
		}
		bk, err := newBackend(1, be)
		if err != nil {
			b.Fatal(err)
		}
		now := time.Now()
		b.Run(bc.name+"/n=1000", func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				s := bk.assign(reqs[i&1023], nil, now)
				bk.unassign(s)
			}
		})
		// The same pick while another goroutine adds a server, enables
		// it, puts it in MAINT and deletes it, without pause: the set the
		// picks see changes all the time (copy on write).
		b.Run(bc.name+"/n=1000/churn", func(b *testing.B) {
			p := proxyOf(bk)
			stop, done := make(chan struct{}), make(chan int)
			go func() {
				n := 0
				for {
					select {
					case <-stop:
						done <- n
						return
					default:
					}
					s, err := p.AddServer(bk, dynServer("churn", 2, true), 0)
					if err != nil {
						panic(err)
					}
					bk.SetAdmin(s, AdminMaint)
					for p.DeleteServer(s) != nil { // a pick still holds it
					}
					n++
				}
			}()
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				s := bk.assign(reqs[i&1023], nil, now)
				bk.unassign(s)
			}
			b.StopTimer()
			close(stop)
			b.ReportMetric(float64(<-done), "changes")
		})
		b.Run(bc.name+"/n=1000/parallel", func(b *testing.B) {
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				i := 0
				for pb.Next() {
					s := bk.assign(reqs[i&1023], nil, now)
					bk.unassign(s)
					i++
				}
			})
		})
	}
}
