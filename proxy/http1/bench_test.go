package http1

import (
	"bufio"
	"io"
	"net"
	"strings"
	"testing"
	"time"

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

// benchResponse is nginx's answer in the HTTP/2 benchmarks (bench/run.sh's
// upstreams: "return 200" with an add_header).
const benchResponse = "HTTP/1.1 200 OK\r\nServer: nginx/1.22.1\r\nDate: Wed, 02 Dec 2026 16:40:00 GMT\r\n" +
	"Content-Type: text/plain\r\nContent-Length: 3\r\nConnection: keep-alive\r\nX-Upstream: b1\r\n\r\n"

// BenchmarkParseResponseHead: a server's response head read and parsed
// (each field's name classified by knownName).
func BenchmarkParseResponseHead(b *testing.B) {
	r := strings.NewReader(benchResponse)
	br := bufio.NewReader(r)
	var h head
	b.ReportAllocs()
	b.SetBytes(int64(len(benchResponse)))
	for i := 0; i < b.N; i++ {
		r.Reset(benchResponse)
		br.Reset(r)
		if err := h.readHead(br, true); err != nil {
			b.Fatal(err)
		}
		if err := h.parse(true); err != nil {
			b.Fatal(err)
		}
	}
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

// BenchmarkPoolTakeRelease takes an idle connection from a server's pool
// and puts it back, as every keep-alive request on a reused connection
// does: the take looks at the socket (one recvfrom that finds nothing).
func BenchmarkPoolTakeRelease(b *testing.B) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	c, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	peer, err := l.Accept()
	if err != nil {
		b.Fatal(err)
	}
	defer peer.Close()
	up := &Upstream{}
	up.Pool.Configure(-1, 0, 0)
	newUpConn(c, up, "").release(time.Now())
	b.ReportAllocs()
	for b.Loop() {
		got := up.Pool.get(false, "")
		if got == nil {
			b.Fatal("no idle connection")
		}
		got.release(time.Now())
	}
	up.Pool.CloseAll()
}
