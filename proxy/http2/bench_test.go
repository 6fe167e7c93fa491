package http2

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"net/http"
	"syscall"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// The per-stream cost of the two ways golang.org/x/net/http2 can serve
// HTTP/2 (issue 17, point 5): its Server (flow control, settings,
// priorities, a goroutine and an http.Request per stream) against a
// minimal loop over its Framer and hpack that answers each HEADERS with
// HEADERS and DATA (no flow control, no goroutine, no request object: the
// floor an engine of our own could reach before doing what the Server
// does). The client is the same raw framer for both, on loopback; one
// stream at a time, so the figures are per stream.

// benchClient sends GET streams on c and reads each response.
type benchClient struct {
	c   net.Conn
	w   *bufio.Writer
	fr  *http2.Framer
	hb  []byte
	id  uint32
	dec *hpack.Decoder
}

func newBenchClient(b *testing.B, addr string) *benchClient {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		b.Fatal(err)
	}
	bc := &benchClient{c: c, id: 1, dec: hpack.NewDecoder(4096, nil)}
	bw := bufio.NewWriter(c)
	bc.w = bw
	bc.fr = http2.NewFramer(bw, bufio.NewReader(c))
	var buf bytes.Buffer
	enc := hpack.NewEncoder(&buf)
	for _, kv := range [][2]string{{":method", "GET"}, {":scheme", "http"}, {":authority", "a"}, {":path", "/"}} {
		enc.WriteField(hpack.HeaderField{Name: kv[0], Value: kv[1]})
	}
	bc.hb = buf.Bytes()
	io.WriteString(bw, http2.ClientPreface)
	bc.fr.WriteSettings()
	bw.Flush()
	return bc
}

// stream sends one request and reads frames until its END_STREAM,
// acknowledging SETTINGS and giving back flow-control credit.
func (bc *benchClient) stream(b *testing.B) { bc.streams(b, 1) }

func (bc *benchClient) flush() { bc.w.Flush() }

// streams sends n requests in one write, as h2load -m does, and reads
// frames until each has ended.
func (bc *benchClient) streams(b *testing.B, n int) {
	first := bc.id
	for range n {
		bc.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: bc.id, BlockFragment: bc.hb, EndStream: true, EndHeaders: true})
		bc.id += 2
	}
	bc.flush()
	for left := n; left > 0; {
		f, err := bc.fr.ReadFrame()
		if err != nil {
			b.Fatal(err)
		}
		ended := false
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if !f.IsAck() {
				bc.fr.WriteSettingsAck()
				bc.flush()
			}
		case *http2.DataFrame:
			if k := len(f.Data()); k > 0 {
				bc.fr.WriteWindowUpdate(0, uint32(k))
				bc.flush()
			}
			ended = f.StreamEnded()
		case *http2.HeadersFrame:
			bc.dec.DecodeFull(f.HeaderBlockFragment())
			ended = f.StreamEnded()
		}
		if ended && f.Header().StreamID >= first {
			left--
		}
	}
}

// cpuTime returns the CPU time (user and system) the process used so far.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkStreamOwnBatch: the own engine, a local answer "ok", streams
// sent ten at a time on one connection (h2load -m10): each batch is
// handed to the workers that served the previous one and wait for it.
// cpu-ns/op is the process's CPU time per stream (client included), a
// figure less disturbed than ns/op by other work on a shared machine.
func BenchmarkStreamOwnBatch(b *testing.B) {
	e := startEngine(b, 0, 0, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }))
	bc := newBenchClient(b, e.addr)
	defer bc.c.Close()
	bc.streams(b, 10) // the workers started
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cpuTime(b)
	for i := 0; i < b.N; i += 10 {
		bc.streams(b, min(10, b.N-i))
	}
	b.ReportMetric(float64(cpuTime(b)-cpu0)/float64(b.N), "cpu-ns/op")
}

// BenchmarkStreamServer: x/net's Server, a handler writing "ok".
func BenchmarkStreamServer(b *testing.B) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	srv := &http2.Server{}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go srv.ServeConn(c, &http2.ServeConnOpts{Handler: h})
		}
	}()
	bc := newBenchClient(b, l.Addr().String())
	defer bc.c.Close()
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		bc.stream(b)
	}
}

// BenchmarkStreamFramer: a loop over the Framer and hpack answering each
// HEADERS with HEADERS (:status 200) and DATA "ok".
func BenchmarkStreamFramer(b *testing.B) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	go func() {
		c, err := l.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		br := bufio.NewReader(c)
		br.Discard(len(http2.ClientPreface))
		bw := bufio.NewWriter(c)
		fr := http2.NewFramer(bw, br)
		fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
		var hb bytes.Buffer
		enc := hpack.NewEncoder(&hb)
		fr.WriteSettings()
		bw.Flush()
		for {
			f, err := fr.ReadFrame()
			if err != nil {
				return
			}
			switch f := f.(type) {
			case *http2.SettingsFrame:
				if !f.IsAck() {
					fr.WriteSettingsAck()
					bw.Flush()
				}
			case *http2.MetaHeadersFrame:
				hb.Reset()
				enc.WriteField(hpack.HeaderField{Name: ":status", Value: "200"})
				enc.WriteField(hpack.HeaderField{Name: "content-type", Value: "text/plain"})
				fr.WriteHeaders(http2.HeadersFrameParam{StreamID: f.StreamID, BlockFragment: hb.Bytes(), EndHeaders: true})
				fr.WriteData(f.StreamID, true, []byte("ok"))
				bw.Flush()
			}
		}
	}()
	bc := newBenchClient(b, l.Addr().String())
	defer bc.c.Close()
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		bc.stream(b)
	}
}

// BenchmarkStreamOwn: fulcrum's own engine (engine.go), a local answer
// writing "ok" (the core reduced to a stub: the engine and the stream's
// phases of a local answer). In "deep" the handler first uses about 32
// KiB of stack, as the request path through the core does: a stream on
// a new goroutine grows its stack each time (runtime.newstack in a CPU
// profile), one on a worker of its connection (workers.go) does not.
func BenchmarkStreamOwn(b *testing.B) {
	for _, bc := range []struct {
		name  string
		depth int
	}{{"flat", 0}, {"deep", 32}} {
		b.Run(bc.name, func(b *testing.B) {
			e := startEngine(b, 0, 0, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				stackUse(bc.depth)
				io.WriteString(w, "ok")
			}))
			bc := newBenchClient(b, e.addr)
			defer bc.c.Close()
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				bc.stream(b)
			}
		})
	}
}

// BenchmarkStreamOwnTimeout is BenchmarkStreamOwn with a client timeout
// (10 s), as most frontends have: the engine's writes re-arm the write
// timeout.
func BenchmarkStreamOwnTimeout(b *testing.B) {
	e := startEngine(b, 0, 10*time.Second, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }))
	bc := newBenchClient(b, e.addr)
	defer bc.c.Close()
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		bc.stream(b)
	}
}

// stackUse uses about n KiB of stack.
//
//go:noinline
func stackUse(n int) byte {
	var pad [1000]byte
	if n <= 0 {
		return 0
	}
	pad[n%len(pad)] = byte(n)
	return stackUse(n-1) + pad[(n+1)%len(pad)]
}
