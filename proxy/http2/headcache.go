package http2

import (
	"bytes"
	"strings"

	"golang.org/x/net/http/httpguts"
	"golang.org/x/net/http2/hpack"
)

// Response heads of the own engine without the header map, and an HPACK
// encoding cache in front of the connection's encoder.
//
// A response relayed from an HTTP/1 server with no http_response rule
// edit (h2stream.writeHead) goes as fields: names in lower case and
// values copied into the response writer's pooled buffers
// (respWriter.addField), then encoded in the server's order
// (respWriter.writeHead) — the same fields the header map would carry,
// without its per-field map operations, canonical keys and value strings.
//
// Encoding a field with x/net's hpack.Encoder searches its static and
// dynamic tables (a map lookup hashing name and value) and, when the
// field is inserted into the dynamic table, keeps the strings: they must
// be the encoder's own. Responses of a server repeat their fields at the
// same places (`:status 200`, server, content-type, content-length...),
// which once in the dynamic table encode as an index: headCache
// remembers, for each place in a head, the last few fields encoded there
// and their bytes, valid as long as the dynamic table did not change.
// Any insertion or table size change (an encoding starting with a
// literal with incremental indexing, 01xxxxxx, or a dynamic table size
// update, 001xxxxx: RFC 7541 6.2.1 and 6.3, seen by hpackSink on every
// encoder write of the connection, heads and trailers alike) and any
// change of the table's size limit (bump) make every remembered bytes
// stale. The bytes on the wire are the encoder's, only not recomputed:
// the dynamic table is kept (dropping it costs ~8 -> 120 bytes per
// response, see bench/README.md).

const (
	cacheSlots = 16 // places of a head remembered (:status is place 0)
	cacheWays  = 4  // fields remembered per place (e.g. three servers' values)
	cacheBytes = 6  // longest encoding remembered
)

type cacheEntry struct {
	name, value string // the encoder's own copies
	gen         uint32
	n           uint8
	enc         [cacheBytes]byte
}

// headCache is a connection's cache (under its write lock), made at its
// first direct head.
type headCache struct {
	slots [cacheSlots][cacheWays]cacheEntry
	next  [cacheSlots]uint8 // the way replaced next, round robin
}

// hpackSink is the connection's encoder's writer: it appends the encoder's
// bytes to c.hbuf and notes changes of the dynamic table (each encoder
// WriteField is one Write).
type hpackSink struct{ c *econn }

func (s hpackSink) Write(p []byte) (int, error) {
	if len(p) > 0 && (p[0]&0xc0 == 0x40 || p[0]&0xe0 == 0x20) {
		s.c.hgen++
	}
	return s.c.hbuf.Write(p)
}

// setTableLimit applies the client's SETTINGS_HEADER_TABLE_SIZE to the
// encoder (wmu held): entries may be evicted, the cached encodings are
// stale.
func (c *econn) setTableLimit(n uint32) {
	c.enc.SetMaxDynamicTableSizeLimit(n)
	c.hgen++
}

// encodeAt appends the encoding of field name: value, the field at place
// i of a head, to c.hbuf (wmu held). The field must be valid for HTTP/2.
func (c *econn) encodeAt(i int, name, value []byte) {
	if i >= cacheSlots {
		c.encodeOwned(name, value)
		return
	}
	if c.hcache == nil {
		c.hcache = new(headCache)
	}
	slot := &c.hcache.slots[i]
	for w := range slot {
		e := &slot[w]
		if e.n > 0 && e.gen == c.hgen && e.name == bstr(name) && e.value == bstr(value) {
			c.hbuf.Write(e.enc[:e.n])
			return
		}
	}
	gen, start := c.hgen, c.hbuf.Len()
	n, v := c.encodeOwned(name, value)
	out := c.hbuf.Bytes()[start:]
	if c.hgen != gen || len(out) > cacheBytes {
		return // the table changed: these bytes hold for this time only
	}
	w := c.hcache.next[i]
	c.hcache.next[i] = (w + 1) % cacheWays
	e := &slot[w]
	e.name, e.value, e.gen, e.n = n, v, gen, uint8(len(out))
	copy(e.enc[:], out)
}

// encodeOwned encodes name: value with copies the encoder may keep, and
// returns them.
func (c *econn) encodeOwned(name, value []byte) (n, v string) {
	var sb strings.Builder
	sb.Grow(len(name) + len(value))
	sb.Write(name)
	sb.Write(value)
	s := sb.String()
	n, v = s[:len(name)], s[len(name):]
	c.enc.WriteField(hpack.HeaderField{Name: n, Value: v})
	return n, v
}

// hfield is a field of a direct head: offsets in respBufs.hb.
type hfield struct{ off, nlen, vlen int }

// addField adds a field to the direct head (h2stream.writeHead): its name
// in lower case, then its value, copied; fields HTTP/2 does not carry and
// invalid ones are left out, as encodeField does for the header map.
func (w *respWriter) addField(name, value []byte) {
	b := w.bufs
	off := len(b.hb)
	for _, ch := range name {
		if 'A' <= ch && ch <= 'Z' {
			ch += 'a' - 'A'
		}
		b.hb = append(b.hb, ch)
	}
	lname := bstr(b.hb[off:])
	switch lname {
	case "connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade":
		b.hb = b.hb[:off]
		return
	}
	if !httpguts.ValidHeaderFieldName(lname) || !httpguts.ValidHeaderFieldValue(bstr(value)) {
		b.hb = b.hb[:off]
		return
	}
	b.hb = append(b.hb, value...)
	b.hf = append(b.hf, hfield{off: off, nlen: len(name), vlen: len(value)})
}

// addLines adds the fields of HTTP/1 text lines ("Name: value\r\n", as
// cookie persistence writes them), trimmed as fieldBuf.addTo does.
func (w *respWriter) addLines(text []byte) {
	for len(text) > 0 {
		line, tail, _ := bytes.Cut(text, []byte("\r\n"))
		text = tail
		if name, value, ok := bytes.Cut(line, []byte(":")); ok {
			w.addField(bytes.TrimSpace(name), bytes.TrimSpace(value))
		}
	}
}

// encodeDirect encodes the direct head's fields after :status (wmu held).
func (w *respWriter) encodeDirect() {
	c, b := w.es.c, w.bufs
	c.encodeAt(0, sbytes(":status"), sbytes(statusText(w.status)))
	for i, f := range b.hf {
		ne := f.off + f.nlen
		c.encodeAt(i+1, b.hb[f.off:ne], b.hb[ne:ne+f.vlen])
	}
}
