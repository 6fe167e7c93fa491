package proxy

import (
	"bufio"
	"io"
	"net"
	"strings"
	"testing"

	"github.com/fulcrum-proxy/fulcrum/conf"
	"github.com/fulcrum-proxy/fulcrum/proxy/netio"
)

const benchRequest = "GET /index.html?x=1 HTTP/1.1\r\nHost: www.example.com\r\nUser-Agent: wrk\r\n" +
	"Accept: */*\r\nAccept-Encoding: gzip\r\nCookie: SRV=s1; session=abc\r\n\r\n"

func BenchmarkParseRequestHead(b *testing.B) {
	r := strings.NewReader(benchRequest)
	br := bufio.NewReader(r)
	var h head
	b.ReportAllocs()
	b.SetBytes(int64(len(benchRequest)))
	for i := 0; i < b.N; i++ {
		r.Reset(benchRequest)
		br.Reset(r)
		if err := h.readHead(br, false); err != nil {
			b.Fatal(err)
		}
		if err := h.parse(false); err != nil {
			b.Fatal(err)
		}
	}
}

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
				var h head
				for {
					if err := h.readHead(br, false); err != nil {
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
func BenchmarkProxyHTTPKeepAlive(b *testing.B) {
	up := fastUpstream(b)
	cfg := testConfig(conf.ModeHTTP, []string{up}, nil)
	cfg.Backends[0].HTTPReuse = "always"
	p, err := New(cfg, nopLogger())
	if err != nil {
		b.Fatal(err)
	}
	if err := p.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { p.Shutdown(contextBackground()) })
	addr := p.Frontends[0].Addrs()[0].String()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			b.Error(err)
			return
		}
		defer c.Close()
		br := bufio.NewReader(c)
		var h head
		for pb.Next() {
			if _, err := io.WriteString(c, benchRequest); err != nil {
				b.Error(err)
				return
			}
			if err := h.readHead(br, true); err != nil {
				b.Error(err)
				return
			}
			if err := h.parse(true); err != nil {
				b.Error(err)
				return
			}
			br.Discard(int(h.contentLength))
		}
	})
}

// BenchmarkCopyChunked relays a 1 MiB chunked body in 16 KiB chunks,
// parsed strictly and written anew (issue 16, point 2).
func BenchmarkCopyChunked(b *testing.B) {
	var sb strings.Builder
	chunk := strings.Repeat("x", 16<<10)
	for range 64 {
		sb.WriteString("4000\r\n" + chunk + "\r\n")
	}
	sb.WriteString("0\r\n\r\n")
	body := sb.String()
	r := strings.NewReader(body)
	br := bufio.NewReaderSize(r, netio.BufSize)
	bw := bufio.NewWriterSize(io.Discard, netio.BufSize)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		r.Reset(body)
		br.Reset(r)
		if _, err := copyChunked(bw, br, bw.Flush, 0); err != nil {
			b.Fatal(err)
		}
	}
}
