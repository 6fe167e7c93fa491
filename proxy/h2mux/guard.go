package h2mux

import (
	"encoding/binary"
	"errors"
	"net"
	"sync/atomic"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// Frame accounting and protections. A Guard wraps an HTTP/2 connection
// and follows the frame headers that cross it both ways, without copying
// or buffering: it counts the frames HAProxy 2.6's h2 statistics count,
// and on a connection from a client it enforces the limits below. A
// connection that breaks one is failed at the next read with a
// ConnectionError, which golang.org/x/net/http2's server answers with a
// GOAWAY carrying the code and a close, as HAProxy's mux_h2 answers a
// connection error (h2c_error, then GOAWAY).
//
// The limits, each counted in Counters and as a connection error:
//   - rapid reset (CVE-2023-44487): a client that resets more streams
//     than tune_h2_max_concurrent_streams beyond the streams it let
//     finish gets ENHANCE_YOUR_CALM. HAProxy 2.6 bounds the same attack by
//     keeping a reset stream's slot until its server side is released;
//     fulcrum frees the server side at once (a reset is a client abort,
//     CD) and bounds the resets instead.
//   - oversized header blocks and CONTINUATION floods: a HEADERS frame and
//     its CONTINUATION frames, frame headers included, larger than
//     MaxHeaderBlock get ENHANCE_YOUR_CALM (HAProxy 2.6 refuses a header
//     block that does not fit its buffer).
//   - oversized header lists and HPACK bombs: a header list larger than
//     MaxHeaderList once decoded, however small on the wire, gets
//     COMPRESSION_ERROR, as HAProxy 2.6 answers a list that does not fit
//     its buffer. The guard decodes each header block with an HPACK
//     decoder of its own, fed in step with the http2 server's, counting
//     sizes without keeping fields; the connection is failed before the
//     server decodes the block. (Only where Limits.MaxHeaderList is set:
//     fulcrum's own HTTP/2 engine makes this check as it decodes each
//     block once, proxy/http2/hblock.go, and sets it to 0.)
//   - SETTINGS and PING floods: a peer that sends more SETTINGS and PING
//     frames (acknowledgements aside) than MaxControl plus ten per frame
//     of real work (HEADERS and DATA received, DATA sent) gets
//     ENHANCE_YOUR_CALM. A client that does not read the acknowledgements
//     is held back as HAProxy 2.6 holds it, by not reading it while they
//     cannot be written; one that reads them would otherwise cost the
//     proxy a frame per frame for ever. gRPC's pings (keepalive, and the
//     bandwidth probes a client sends while it receives DATA) stay far
//     within the budget.

// Limits are the protections of a connection from a client. The zero
// Limits (connections to servers) protect nothing.
type Limits struct {
	// MaxStreams is the concurrent stream limit announced to the client;
	// the rapid-reset budget is this many resets beyond the streams
	// completed (at least 100).
	MaxStreams int
	// MaxHeaderBlock bounds a header block on the wire, in bytes.
	MaxHeaderBlock int
	// MaxHeaderList bounds a header list once decoded (RFC 9113 size: name,
	// value and 32 bytes per field); 0: not decoded.
	MaxHeaderList int
	// MaxControl is the SETTINGS and PING frames a peer may send beyond
	// ten per frame of real work.
	MaxControl int
}

// DefaultLimits are the limits of a client connection announcing
// maxStreams concurrent streams.
func DefaultLimits(maxStreams int) Limits {
	return Limits{MaxStreams: maxStreams, MaxHeaderBlock: 64 << 10, MaxHeaderList: 64 << 10, MaxControl: 1000}
}

// Frame types and flags, RFC 9113 section 6.
const (
	frameData         = 0x0
	frameHeaders      = 0x1
	frameRSTStream    = 0x3
	frameSettings     = 0x4
	framePing         = 0x6
	frameGoAway       = 0x7
	frameContinuation = 0x9

	flagAck        = 0x1
	flagEndHeaders = 0x4
	flagPadded     = 0x8
	flagPriority   = 0x20
)

// Guard is a net.Conn carrying HTTP/2 whose frames are counted and, for
// a client connection, limited. Read is called by one goroutine at a
// time, and so is Write (the http2 package's reader and writer).
type Guard struct {
	net.Conn
	c   *Counters
	lim Limits

	rd, wr scanner // the frames read and written

	// Read side (the reading goroutine only).
	block   int  // bytes of the header block being read
	inBlock bool // a HEADERS frame without END_HEADERS was read
	resets  int64

	control int64 // SETTINGS and PING received, acknowledgements aside
	work    int64 // HEADERS and DATA received

	// The header block being decoded (MaxHeaderList > 0).
	dec      *hpack.Decoder
	decBad   bool // the block did not decode: the server fails it itself
	list     int  // decoded size of the header list so far
	hpLeft   int  // payload bytes of the current frame still to come
	hpPad    int  // its padding length
	hpPrefix int  // pad length and priority bytes still to skip
	hpNeed   bool // the pad length byte is next

	completed atomic.Int64  // streams the engine saw finish (Completed)
	dataSent  atomic.Int64  // DATA frames written
	kill      atomic.Uint32 // an error code + 1: the next Read fails with it
	closed    atomic.Bool

	// settled is closed (a server connection's guard) once the server's
	// SETTINGS were applied, which the acknowledgement written tells, or
	// the connection closed.
	settled     chan struct{}
	settledDone atomic.Bool
}

// NewClientGuard wraps c, a connection from a client whose first bytes
// are the HTTP/2 preface, counting into cs and enforcing lim.
func NewClientGuard(c net.Conn, cs *Counters, lim Limits) *Guard {
	g := &Guard{Conn: c, c: cs, lim: lim}
	g.rd.skip = len(http2.ClientPreface)
	if lim.MaxHeaderList > 0 {
		// The http2 server's decoder starts with, and never announces
		// other than, a 4096-byte dynamic table.
		g.dec = hpack.NewDecoder(4096, g.onField)
		g.dec.SetMaxStringLength(lim.MaxHeaderList)
		g.rd.block = g.onBlock
	}
	cs.OpenConns.Add(1)
	cs.TotalConns.Add(1)
	return g
}

// NewServerGuard wraps c, a connection to a server, to which the preface
// is written first, counting into cs.
func NewServerGuard(c net.Conn, cs *Counters) *Guard {
	g := &Guard{Conn: c, c: cs, settled: make(chan struct{})}
	g.wr.skip = len(http2.ClientPreface)
	cs.OpenConns.Add(1)
	cs.TotalConns.Add(1)
	return g
}

// Completed tells the guard that a stream ended normally (its response
// was sent whole): it widens the rapid-reset budget by one.
func (g *Guard) Completed() { g.completed.Add(1) }

// Read reads from the connection and follows its frames; after a broken
// limit it returns the ConnectionError to answer with.
func (g *Guard) Read(p []byte) (int, error) {
	if k := g.kill.Load(); k != 0 {
		return 0, http2.ConnectionError(k - 1)
	}
	n, err := g.Conn.Read(p)
	if n > 0 {
		g.rd.scan(p[:n], g.onRead)
		if k := g.kill.Load(); k != 0 {
			// The server never sees the frames that broke a limit.
			return 0, http2.ConnectionError(k - 1)
		}
	}
	return n, err
}

// Write writes to the connection and follows the frames written.
//
// The frames are counted before they leave (a peer that has a GOAWAY sees
// it counted). A net.Conn's Write writes all of p or fails, and a failed
// write ends the connection, so counting p whole keeps the frame
// boundaries right.
func (g *Guard) Write(p []byte) (int, error) {
	g.wr.scan(p, g.onWrite)
	return g.Conn.Write(p)
}

// Close closes the connection; the open connections gauge drops once.
func (g *Guard) Close() error {
	if g.closed.CompareAndSwap(false, true) {
		g.c.OpenConns.Add(-1)
		g.settle()
	}
	return g.Conn.Close()
}

// Settled returns a channel closed once the server's first SETTINGS were
// applied by the http2 client (it writes their acknowledgement after), or
// the connection closed; nil for a client connection's guard.
func (g *Guard) Settled() <-chan struct{} { return g.settled }

// isSettled reports whether Settled's channel is closed: the server's
// first SETTINGS were applied (or the connection closed).
func (g *Guard) isSettled() bool { return g.settledDone.Load() }

func (g *Guard) settle() {
	if g.settled != nil && g.settledDone.CompareAndSwap(false, true) {
		close(g.settled)
	}
}

// violate fails the connection with code at the next read, counting ctr.
func (g *Guard) violate(ctr *atomic.Int64, code http2.ErrCode) {
	if g.kill.CompareAndSwap(0, uint32(code)+1) {
		ctr.Add(1)
	}
}

// onRead accounts for one frame received.
func (g *Guard) onRead(typ, flags byte, length int, _ []byte) {
	c := g.c
	switch typ {
	case frameData:
		c.DataRcvd.Add(1)
		g.work++
	case frameHeaders:
		c.HeadersRcvd.Add(1)
		g.work++
		g.block, g.inBlock = 9+length, flags&flagEndHeaders == 0
		g.checkBlock()
		g.list, g.decBad = 0, false
		g.hpLeft, g.hpPad, g.hpPrefix, g.hpNeed = length, 0, 0, flags&flagPadded != 0
		if flags&flagPriority != 0 {
			g.hpPrefix = 5
		}
	case frameContinuation:
		if g.inBlock {
			g.block += 9 + length
			g.inBlock = flags&flagEndHeaders == 0
			g.checkBlock()
		}
		g.hpLeft, g.hpPad, g.hpPrefix, g.hpNeed = length, 0, 0, false
	case frameSettings:
		c.SettingsRcvd.Add(1)
		if flags&flagAck == 0 {
			g.checkControl()
		}
	case framePing:
		if flags&flagAck == 0 {
			g.checkControl()
		}
	case frameRSTStream:
		c.RstStreamRcvd.Add(1)
		g.resets++
		if g.lim.MaxHeaderBlock > 0 && g.resets > int64(max(g.lim.MaxStreams, 100))+g.completed.Load() {
			g.violate(&c.RapidReset, http2.ErrCodeEnhanceYourCalm)
		}
	case frameGoAway:
		c.GoawayRcvd.Add(1)
	}
}

func (g *Guard) checkBlock() {
	if g.lim.MaxHeaderBlock > 0 && g.block > g.lim.MaxHeaderBlock {
		g.violate(&g.c.HeaderFlood, http2.ErrCodeEnhanceYourCalm)
	}
}

// onBlock takes p, the next bytes of a HEADERS or CONTINUATION payload:
// the header block fragment in it goes to the decoder, the pad length,
// priority and padding are skipped.
func (g *Guard) onBlock(p []byte) {
	for len(p) > 0 {
		switch {
		case g.hpNeed:
			g.hpPad, g.hpNeed = int(p[0]), false
			g.hpLeft--
			p = p[1:]
		case g.hpPrefix > 0:
			k := min(g.hpPrefix, len(p))
			g.hpPrefix -= k
			g.hpLeft -= k
			p = p[k:]
		default:
			k := min(len(p), g.hpLeft)
			frag := min(k, max(g.hpLeft-g.hpPad, 0))
			if frag > 0 && !g.decBad {
				if _, err := g.dec.Write(p[:frag]); err != nil {
					// A string longer than the whole list may be is an
					// oversized list; other errors the server finds too.
					if errors.Is(err, hpack.ErrStringLength) {
						g.violate(&g.c.HeaderFlood, http2.ErrCodeCompression)
					}
					g.decBad = true
				}
			}
			g.hpLeft -= k
			p = p[k:]
		}
	}
}

// onField accounts for one decoded field of the header list.
func (g *Guard) onField(f hpack.HeaderField) {
	g.list += int(f.Size())
	if g.list > g.lim.MaxHeaderList {
		g.violate(&g.c.HeaderFlood, http2.ErrCodeCompression)
	}
}

func (g *Guard) checkControl() {
	g.control++
	if g.lim.MaxControl > 0 && g.control > int64(g.lim.MaxControl)+10*(g.work+g.dataSent.Load()) {
		g.violate(&g.c.ControlFlood, http2.ErrCodeEnhanceYourCalm)
	}
}

// onWrite accounts for one frame sent: DATA, and the errors it reports.
func (g *Guard) onWrite(typ, flags byte, _ int, payload []byte) {
	c := g.c
	switch typ {
	case frameSettings:
		if flags&flagAck != 0 {
			g.settle()
		}
	case frameData:
		g.dataSent.Add(1)
	case frameRSTStream:
		if len(payload) >= 4 {
			switch http2.ErrCode(binary.BigEndian.Uint32(payload)) {
			case http2.ErrCodeNo, http2.ErrCodeCancel, http2.ErrCodeInternal, http2.ErrCodeRefusedStream:
				// INTERNAL_ERROR: the proxy aborted a response its server
				// broke; REFUSED_STREAM: a stream its server refused (or
				// one past the concurrent streams), to be retried: no
				// error of the peer's (HAProxy 2.6 counts neither, a
				// fresh-user trial measured).
			default:
				c.StrmProtoErr.Add(1)
				c.RstStreamResp.Add(1)
			}
		}
	case frameGoAway:
		if len(payload) >= 8 {
			if code := http2.ErrCode(binary.BigEndian.Uint32(payload[4:])); code != http2.ErrCodeNo {
				c.ConnProtoErr.Add(1)
				c.GoawayResp.Add(1)
			}
		}
	}
}

// scanner follows frame boundaries in a byte stream handed to it in
// pieces: it collects each 9-byte frame header, and the first bytes of
// the payload of RST_STREAM (its error code) and GOAWAY (last stream and
// error code), and skips the rest.
type scanner struct {
	skip int // bytes to pass: the preface, or the rest of a payload
	hdr  [9]byte
	hn   int
	// The frame whose payload start is being collected (want > 0).
	typ, flags byte
	length     int
	want       int
	pay        [8]byte
	pn         int
	// block, if set, is handed the payloads of HEADERS and CONTINUATION
	// frames, in pieces, instead of their being skipped.
	block func(p []byte)
	bleft int // payload bytes still to hand to block
}

// scan follows p, calling on for each frame once its header (and the
// payload bytes wanted) are in.
func (s *scanner) scan(p []byte, on func(typ, flags byte, length int, payload []byte)) {
	for len(p) > 0 {
		if s.bleft > 0 {
			k := min(s.bleft, len(p))
			s.block(p[:k])
			s.bleft -= k
			p = p[k:]
			continue
		}
		if s.want > 0 {
			k := copy(s.pay[s.pn:s.want], p)
			s.pn += k
			p = p[k:]
			if s.pn < s.want {
				return
			}
			on(s.typ, s.flags, s.length, s.pay[:s.want])
			s.skip = s.length - s.want
			s.want = 0
			continue
		}
		if s.skip > 0 {
			k := min(s.skip, len(p))
			s.skip -= k
			p = p[k:]
			continue
		}
		k := copy(s.hdr[s.hn:], p)
		s.hn += k
		p = p[k:]
		if s.hn < len(s.hdr) {
			return
		}
		s.hn = 0
		length := int(s.hdr[0])<<16 | int(s.hdr[1])<<8 | int(s.hdr[2])
		typ, flags := s.hdr[3], s.hdr[4]
		want := 0
		switch typ {
		case frameRSTStream:
			want = min(length, 4)
		case frameGoAway:
			want = min(length, 8)
		}
		if want == 0 {
			on(typ, flags, length, nil)
			if s.block != nil && (typ == frameHeaders || typ == frameContinuation) {
				s.bleft = length
			} else {
				s.skip = length
			}
			continue
		}
		s.typ, s.flags, s.length, s.want, s.pn = typ, flags, length, want, 0
	}
}
