package h2mux

import (
	"bytes"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// pipeConn is a net.Conn that reads from r and writes to w.
type pipeConn struct {
	r io.Reader
	w io.Writer
}

func (p *pipeConn) Read(b []byte) (int, error)       { return p.r.Read(b) }
func (p *pipeConn) Write(b []byte) (int, error)      { return p.w.Write(b) }
func (p *pipeConn) Close() error                     { return nil }
func (p *pipeConn) LocalAddr() net.Addr              { return nil }
func (p *pipeConn) RemoteAddr() net.Addr             { return nil }
func (p *pipeConn) SetDeadline(time.Time) error      { return nil }
func (p *pipeConn) SetReadDeadline(time.Time) error  { return nil }
func (p *pipeConn) SetWriteDeadline(time.Time) error { return nil }

// oneByte reads one byte at a time: every frame header is split.
type oneByte struct{ r io.Reader }

func (o oneByte) Read(b []byte) (int, error) { return o.r.Read(b[:1]) }

// TestGuardCounts: frames read one byte at a time, and written, are
// counted as HAProxy's h2 module counts them.
func TestGuardCounts(t *testing.T) {
	var in bytes.Buffer
	in.WriteString(http2.ClientPreface)
	fr := http2.NewFramer(&in, nil)
	fr.WriteSettings()
	fr.WriteSettingsAck()
	fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: []byte{0x82}, EndHeaders: false})
	fr.WriteContinuation(1, true, []byte{0x84})
	fr.WriteData(1, false, []byte("abc"))
	fr.WriteData(1, true, nil)
	fr.WriteRSTStream(3, http2.ErrCodeCancel)
	fr.WritePing(false, [8]byte{})
	fr.WriteGoAway(1, http2.ErrCodeNo, []byte("bye"))
	var c Counters
	var out bytes.Buffer
	g := NewClientGuard(&pipeConn{r: oneByte{&in}, w: &out}, &c, DefaultLimits(100))
	if _, err := io.Copy(io.Discard, g); err != nil {
		t.Fatal(err)
	}
	wfr := http2.NewFramer(g, nil)
	wfr.WriteRSTStream(1, http2.ErrCodeProtocol)
	wfr.WriteRSTStream(3, http2.ErrCodeCancel)
	wfr.WriteGoAway(1, http2.ErrCodeFlowControl, nil)
	wfr.WriteData(1, true, []byte("x"))
	g.Close()
	g.Close()
	for _, tc := range []struct {
		name      string
		got, want int64
	}{
		{"headers", c.HeadersRcvd.Load(), 1},
		{"data", c.DataRcvd.Load(), 2},
		{"settings", c.SettingsRcvd.Load(), 2},
		{"rst_stream", c.RstStreamRcvd.Load(), 1},
		{"goaway", c.GoawayRcvd.Load(), 1},
		{"strm errors", c.StrmProtoErr.Load(), 1},
		{"rst resp", c.RstStreamResp.Load(), 1},
		{"conn errors", c.ConnProtoErr.Load(), 1},
		{"goaway resp", c.GoawayResp.Load(), 1},
		{"open conns", c.OpenConns.Load(), 0},
		{"total conns", c.TotalConns.Load(), 1},
		{"data sent", g.dataSent.Load(), 1},
	} {
		if tc.got != tc.want {
			t.Errorf("%s: got %d, want %d", tc.name, tc.got, tc.want)
		}
	}
}

// TestGuardLimits: each limit fails the next read with its
// ConnectionError and is counted once.
func TestGuardLimits(t *testing.T) {
	for _, tc := range []struct {
		name  string
		write func(fr *http2.Framer)
		ctr   func(c *Counters) int64
	}{
		{"rapid reset", func(fr *http2.Framer) {
			for id := uint32(1); id < 500; id += 2 {
				fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: []byte{0x82}, EndStream: true, EndHeaders: true})
				fr.WriteRSTStream(id, http2.ErrCodeCancel)
			}
		}, func(c *Counters) int64 { return c.RapidReset.Load() }},
		{"continuation flood", func(fr *http2.Framer) {
			fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: []byte{0x82}})
			for range 8000 {
				fr.WriteContinuation(1, false, nil)
			}
		}, func(c *Counters) int64 { return c.HeaderFlood.Load() }},
		{"oversized header block", func(fr *http2.Framer) {
			// Dynamic table size updates to 0: large on the wire, nothing
			// decoded.
			fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: bytes.Repeat([]byte{0x20}, 16000)})
			for range 4 {
				fr.WriteContinuation(1, false, bytes.Repeat([]byte{0x20}, 16000))
			}
		}, func(c *Counters) int64 { return c.HeaderFlood.Load() }},
		{"hpack bomb", func(fr *http2.Framer) {
			// One 4000-byte field into the dynamic table, then 20
			// references to it (one byte each), in a padded HEADERS frame
			// with priority: 80 KB decoded from 4 KB.
			var b bytes.Buffer
			enc := hpack.NewEncoder(&b)
			enc.WriteField(hpack.HeaderField{Name: "x-bomb", Value: strings.Repeat("b", 4000)})
			b.Write(bytes.Repeat([]byte{0xbe}, 20))
			fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: b.Bytes(), EndHeaders: true, PadLength: 200,
				Priority: http2.PriorityParam{StreamDep: 0, Weight: 15}})
		}, func(c *Counters) int64 { return c.HeaderFlood.Load() }},
		{"ping flood", func(fr *http2.Framer) {
			for range 1100 {
				fr.WritePing(false, [8]byte{})
			}
		}, func(c *Counters) int64 { return c.ControlFlood.Load() }},
		{"settings flood", func(fr *http2.Framer) {
			for range 1100 {
				fr.WriteSettings()
			}
		}, func(c *Counters) int64 { return c.ControlFlood.Load() }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var in bytes.Buffer
			in.WriteString(http2.ClientPreface)
			tc.write(http2.NewFramer(&in, nil))
			var c Counters
			g := NewClientGuard(&pipeConn{r: &in, w: io.Discard}, &c, DefaultLimits(100))
			_, err := io.Copy(io.Discard, g)
			want := http2.ErrCodeEnhanceYourCalm
			if tc.name == "hpack bomb" {
				want = http2.ErrCodeCompression // as HAProxy 2.6
			}
			if ce, ok := err.(http2.ConnectionError); !ok || http2.ErrCode(ce) != want {
				t.Errorf("got %v, want %v", err, want)
			}
			if n := tc.ctr(&c); n != 1 {
				t.Errorf("counted %d, want 1", n)
			}
		})
	}
	t.Run("work widens the control budget", func(t *testing.T) {
		var in bytes.Buffer
		in.WriteString(http2.ClientPreface)
		fr := http2.NewFramer(&in, nil)
		for i := range 1100 {
			fr.WritePing(false, [8]byte{})
			if i%10 == 0 {
				fr.WriteData(1, false, []byte("x"))
			}
		}
		var c Counters
		g := NewClientGuard(&pipeConn{r: &in, w: io.Discard}, &c, DefaultLimits(100))
		if _, err := io.Copy(io.Discard, g); err != nil {
			t.Errorf("got %v, want no error", err)
		}
	})
}
