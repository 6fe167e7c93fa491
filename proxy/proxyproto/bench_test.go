package proxyproto

import (
	"net/netip"
	"testing"
	"time"
)

func BenchmarkParseV1(b *testing.B) {
	in := []byte("PROXY TCP4 192.0.2.1 198.51.100.7 56324 443\r\nGET / HTTP/1.1\r\n")
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := Parse(in); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkParseV2(b *testing.B) {
	in := v2(0x21, 0x11, addr4)
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := Parse(in); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkAppendV2(b *testing.B) {
	h := Header{Command: Proxy, Src: netip.MustParseAddrPort("192.0.2.1:1"), Dst: netip.MustParseAddrPort("192.0.2.2:2")}
	buf := make([]byte, 0, 64)
	b.ReportAllocs()
	for b.Loop() {
		buf = h.AppendV2(buf[:0])
	}
}

// BenchmarkReadV1 takes a v1 header off a loopback socket: the peek, the
// parse and the read of exactly the header (the write is in the loop too).
func BenchmarkReadV1(b *testing.B) {
	cl, sv := tcpPair(b)
	line := []byte("PROXY TCP4 192.0.2.1 198.51.100.7 56324 443\r\n")
	sv.SetReadDeadline(time.Now().Add(time.Minute))
	b.ReportAllocs()
	for b.Loop() {
		cl.Write(line)
		if _, err := Read(sv); err != nil {
			b.Fatal(err)
		}
	}
}
