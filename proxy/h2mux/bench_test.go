package h2mux

import (
	"bytes"
	"testing"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// BenchmarkGuardRead: the client guard following 64 request heads as
// h2load sends them (HEADERS of the same five fields, indexed after the
// first), per head: "decode" with the guard's own HPACK decoder (Limits
// with MaxHeaderList, as under the x/net engine), "scan" without it (the
// own engine, which refuses oversized lists as it decodes:
// proxy/http2/hblock.go).
func BenchmarkGuardRead(b *testing.B) {
	var hb bytes.Buffer
	enc := hpack.NewEncoder(&hb)
	var in bytes.Buffer
	fr := http2.NewFramer(&in, nil)
	const heads = 64
	for i := range heads {
		hb.Reset()
		for _, kv := range [][2]string{{":method", "GET"}, {":scheme", "http"}, {":authority", "127.0.0.1:8085"}, {":path", "/"}, {"user-agent", "h2load nghttp2/1.52.0"}} {
			enc.WriteField(hpack.HeaderField{Name: kv[0], Value: kv[1]})
		}
		fr.WriteHeaders(http2.HeadersFrameParam{StreamID: uint32(2*i + 1), BlockFragment: hb.Bytes(), EndStream: true, EndHeaders: true})
	}
	wire := in.Bytes()
	for _, tc := range []struct {
		name string
		list int
	}{{"decode", 64 << 10}, {"scan", 0}} {
		b.Run(tc.name, func(b *testing.B) {
			lim := DefaultLimits(100)
			lim.MaxHeaderList = tc.list
			buf := make([]byte, len(wire))
			var r bytes.Reader
			var cs Counters
			b.ReportAllocs()
			for b.Loop() {
				r.Reset(wire)
				g := NewClientGuard(&pipeConn{r: &r}, &cs, lim)
				g.rd.skip = 0 // no preface in wire
				for {
					if n, err := g.Read(buf); n == 0 || err != nil {
						break
					}
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*heads), "ns/head")
		})
	}
}
