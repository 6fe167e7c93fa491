package proxy

import (
	"bufio"
	"context"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/fulcrum-proxy/fulcrum/conf"
	"github.com/fulcrum-proxy/fulcrum/proxy/http1"
)

const benchRequest = "GET /index.html?x=1 HTTP/1.1\r\nHost: www.example.com\r\nUser-Agent: wrk\r\n" +
	"Accept: */*\r\nAccept-Encoding: gzip\r\nCookie: SRV=s1; session=abc\r\n\r\n"

// fastUpstream answers every request on a connection with a fixed small
// response, as a minimal keep-alive server (no net/http, so the benchmark
// measures the proxy, not the test server).
func fastUpstream(b *testing.B) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { l.Close() })
	const resp = "HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Type: text/plain\r\n\r\nok\n"
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				br := bufio.NewReader(c)
				var h http1.Head
				for {
					if err := h.Read(br, false); err != nil {
						return
					}
					if _, err := io.WriteString(c, resp); err != nil {
						return
					}
				}
			}()
		}
	}()
	return l.Addr().String()
}

// BenchmarkProxyHTTPKeepAlive measures one request through the whole proxy
// on loopback (client, proxy and upstream in this process), per request.
// The latency histograms are on (they always are); the history is off.
func BenchmarkProxyHTTPKeepAlive(b *testing.B) { benchKeepAlive(b, 0) }

// BenchmarkProxyHTTPKeepAliveHistory is BenchmarkProxyHTTPKeepAlive with
// the history sampler running every 100 ms (its smallest interval, 100
// times its default rate).
func BenchmarkProxyHTTPKeepAliveHistory(b *testing.B) { benchKeepAlive(b, 100*time.Millisecond) }

// keepAliveClients runs b's parallel clients against addr: one keep-alive
// connection each, benchRequest after benchRequest, each response head
// parsed and its body skipped; wantLen >= 0 is the body length every
// response must have.
func keepAliveClients(b *testing.B, addr string, wantLen int64) {
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			b.Error(err)
			return
		}
		defer c.Close()
		br := bufio.NewReader(c)
		var h http1.Head
		for pb.Next() {
			if _, err := io.WriteString(c, benchRequest); err != nil {
				b.Error(err)
				return
			}
			if err := h.Read(br, true); err != nil {
				b.Error(err)
				return
			}
			if err := h.Parse(true); err != nil {
				b.Error(err)
				return
			}
			n := h.ContentLength()
			if wantLen >= 0 && n != wantLen {
				b.Errorf("content-length %d, want %d", n, wantLen)
				return
			}
			br.Discard(int(n))
		}
	})
}

func benchKeepAlive(b *testing.B, history time.Duration) {
	up := fastUpstream(b)
	cfg := testConfig(conf.ModeHTTP, []string{up}, nil)
	cfg.Backends[0].HTTPReuse = "always"
	cfg.Global.StatsHistoryInterval = history
	p, err := New(cfg, nopLogger())
	if err != nil {
		b.Fatal(err)
	}
	if err := p.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { p.Shutdown(contextBackground()) })
	addr := p.Frontends[0].Addrs()[0].String()
	keepAliveClients(b, addr, -1)
}

// BenchmarkWorkerNext measures an idle worker's wait for its next
// connection (Proxy.next): one op is a work item handed over the work
// channel to one of 4 idle workers and its acknowledgement. "trim" waits
// beside the proxy's trim ticks (the default), "timer" with a timer per
// worker reset at every wait (FULCRUM_WORKER_TRIM=0).
func BenchmarkWorkerNext(b *testing.B) {
	for _, mode := range []string{"trim", "timer"} {
		b.Run(mode, func(b *testing.B) {
			saved := workerTrim
			workerTrim = mode == "trim"
			defer func() { workerTrim = saved }()
			ctx, cancel := context.WithCancel(context.Background())
			p := &Proxy{ctx: ctx, work: make(chan work)}
			p.trim.ctx = ctx
			done := make(chan struct{})
			var wg sync.WaitGroup
			for range 4 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					var iw idleWait
					defer iw.stop()
					for {
						if _, ok := p.next(&iw); !ok {
							return
						}
						done <- struct{}{}
					}
				}()
			}
			b.ReportAllocs()
			for b.Loop() {
				p.work <- work{}
				<-done
			}
			cancel()
			wg.Wait()
		})
	}
}
