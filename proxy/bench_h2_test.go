package proxy

import (
	"context"
	"io"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/fulcrum-proxy/fulcrum/conf"
)

// BenchmarkProxyH2 is one request of an HTTP/2 client (prior knowledge,
// streams multiplexed on its connections) through fulcrum to an HTTP/1.1
// server: the per-stream cost of the HTTP/2 engine and the core.
func BenchmarkProxyH2(b *testing.B) {
	up := fastUpstream(b)
	cfg := testConfig(conf.ModeHTTP, []string{up}, nil)
	cfg.Frontends[0].BindOptions = []*conf.Bind{{Addr: "127.0.0.1:0", Proto: "h2"}}
	cfg.Global.H2MaxStreams = 100
	cfg.Backends[0].HTTPReuse = "always"
	p, err := New(cfg, nopLogger())
	if err != nil {
		b.Fatal(err)
	}
	if err := p.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { p.Shutdown(contextBackground()) })
	url := "http://" + p.Frontends[0].Addrs()[0].String() + "/"
	tr := h2cTransport()
	b.Cleanup(tr.CloseIdleConnections)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		req, _ := http.NewRequest("GET", url, nil)
		for pb.Next() {
			resp, err := tr.RoundTrip(req)
			if err != nil {
				b.Error(err)
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	})
}

// BenchmarkGRPCUnary compares a gRPC unary call made directly to the
// server (direct) with the same call through fulcrum (proxied), one call
// at a time, and reports each one's median latency (p50-us): the
// difference is what fulcrum adds to a call.
func BenchmarkGRPCUnary(b *testing.B) {
	s1 := startGRPC(b, "s1", nil)
	cfg := grpcConfig(s1)
	p, err := New(cfg, nopLogger())
	if err != nil {
		b.Fatal(err)
	}
	if err := p.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { p.Shutdown(contextBackground()) })
	for _, bc := range []struct{ name, addr string }{
		{"direct", s1.addr}, {"proxied", p.Frontends[0].Addrs()[0].String()},
	} {
		b.Run(bc.name, func(b *testing.B) {
			cc := grpcClient(b, bc.addr)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			if _, err := unary(ctx, cc, "echo:warm"); err != nil {
				b.Fatal(err)
			}
			lat := make([]time.Duration, 0, b.N)
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				t0 := time.Now()
				if _, err := unary(ctx, cc, "echo:x"); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(t0))
			}
			b.StopTimer()
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds())/1e3, "p50-us")
		})
	}
}
