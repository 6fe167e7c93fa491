package http2

import (
	"errors"
	"strings"
	"sync/atomic"

	"golang.org/x/net/http/httpguts"
	xh2 "golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// Header blocks decoded by the engine's reader itself, into a slice the
// connection keeps, rather than by the Framer into a MetaHeadersFrame
// (a frame, a closure and a growing slice of fields per block). The
// checks are those x/net/http2's Framer makes with ReadMetaHeaders
// (v0.62.0, readMetaFrame and checkPseudos), with the same outcomes: a
// malformed field or pseudo-header is a stream error (PROTOCOL_ERROR),
// a list beyond maxListSize is truncated (the stream is then refused),
// a fragment far beyond the list's budget, or a CONTINUATION after an
// invalid field, is a connection error (PROTOCOL_ERROR), and a block
// that does not decode a COMPRESSION_ERROR — as is one with a dynamic
// table size update after a field, which the decoder lets pass while its
// table is empty and HAProxy 2.6 refuses (hpackscan.go). The Framer still checks that
// CONTINUATION frames follow their HEADERS (RFC 9113 6.10).

// maxListSize is the decoded list size accepted, as the Framer's
// MaxHeaderListSize was: above maxHeaderList, which refuses a larger
// list first (a bomb, below).
const maxListSize = maxHeaderList + 1024

// Oversized header lists and HPACK bombs (h2mux.Guard's protection, made
// here for the engine: the guard's own decoder of every block would
// decode each block a second time): a header list larger than
// maxHeaderList once decoded (RFC 9113 sizes: name, value and 32 bytes a
// field, every field counted, malformed ones too), or a string longer
// than that, fails the connection with COMPRESSION_ERROR and counts a
// header flood, as HAProxy 2.6 answers a list that does not fit its
// buffer. The block is refused as it decodes, before its stream opens.

// hblock is the header block being read, and once whole the request head
// or trailers it carries (the reader's only).
type hblock struct {
	dec         *hpack.Decoder
	scan        repScan // the block's representations (hpackscan.go)
	id          uint32
	open        bool // its HEADERS was read, its END_HEADERS not yet
	end         bool // END_STREAM was on its HEADERS
	fields      []hpack.HeaderField
	list        uint64 // the decoded list's size so far (RFC 9113)
	bomb        bool   // list went beyond maxHeaderList
	flood       *atomic.Int64
	truncated   bool
	invalid     error // a malformed field (pseudo-header checks aside)
	sawRegular  bool
	headersLeft uint32
	trailerLeft uint32
}

var (
	errPseudoAfterRegular = errors.New("http2: pseudo header field after regular")
	errBadField           = errors.New("http2: invalid header field")
	errBadPseudo          = errors.New("http2: invalid or duplicate pseudo header field")
)

// newHblock returns the block reader of a connection, counting the
// header lists it refuses (bombs, oversized strings) in flood.
func newHblock(flood *atomic.Int64) *hblock {
	b := &hblock{flood: flood}
	b.dec = hpack.NewDecoder(4096, b.field)
	b.dec.SetMaxStringLength(maxHeaderList)
	return b
}

// start begins the block of f.
func (b *hblock) start(f *xh2.HeadersFrame) {
	clear(b.fields)
	if cap(b.fields) > 256 {
		b.fields = nil
	}
	*b = hblock{dec: b.dec, flood: b.flood, id: f.StreamID, open: true, end: f.StreamEnded(), fields: b.fields[:0],
		headersLeft: maxListSize, trailerLeft: maxListSize}
	b.dec.SetEmitEnabled(true)
}

// field takes one decoded field. Every field is counted in the list's
// size; those after a malformed one or beyond the budget are not kept.
func (b *hblock) field(hf hpack.HeaderField) {
	b.list += uint64(hf.Size())
	if b.list > maxHeaderList {
		b.bomb = true
		b.dec.SetEmitEnabled(false) // the connection fails at this fragment
		return
	}
	if b.invalid != nil || b.truncated {
		return
	}
	if !httpguts.ValidHeaderFieldValue(hf.Value) {
		b.invalid = errBadField
	}
	if strings.HasPrefix(hf.Name, ":") {
		if b.sawRegular {
			b.invalid = errPseudoAfterRegular
		}
	} else {
		b.sawRegular = true
		if !validFieldName(hf.Name) {
			b.invalid = errBadField
		}
	}
	if b.invalid != nil {
		return
	}
	left, size := &b.headersLeft, hf.Size()
	if hf.Name == "trailer" {
		left = &b.trailerLeft
		n := strings.Count(hf.Value, ",") + 1
		size = uint32(len(hf.Value)-n+1) + uint32(n)*hpack.HeaderField{}.Size()
	}
	if size > *left {
		b.truncated = true
		b.headersLeft, b.trailerLeft = 0, 0
		return
	}
	*left -= size
	b.fields = append(b.fields, hf)
}

// validFieldName reports whether a field name received is a token in
// lower case.
func validFieldName(v string) bool {
	if v == "" {
		return false
	}
	for _, r := range v {
		if !httpguts.IsTokenRune(r) || 'A' <= r && r <= 'Z' {
			return false
		}
	}
	return true
}

// fragment decodes the next fragment of the block; whole says it ended
// it. A connection error is returned as connError; a stream error as
// xh2.StreamError.
func (b *hblock) fragment(frag []byte, whole bool) error {
	if int64(len(frag)) > 2*int64(b.headersLeft+b.trailerLeft) || b.invalid != nil {
		return connError(xh2.ErrCodeProtocol)
	}
	if b.scan.feed(frag) != nil {
		return connError(xh2.ErrCodeCompression)
	}
	if _, err := b.dec.Write(frag); err != nil || b.bomb {
		if b.bomb || errors.Is(err, hpack.ErrStringLength) {
			b.flood.Add(1)
		}
		return connError(xh2.ErrCodeCompression)
	}
	if !whole {
		return nil
	}
	b.open = false
	if err := b.dec.Close(); err != nil {
		return connError(xh2.ErrCodeCompression)
	}
	if b.invalid != nil || !b.pseudosOK() {
		return xh2.StreamError{StreamID: b.id, Code: xh2.ErrCodeProtocol}
	}
	return nil
}

// pseudosOK checks the pseudo-header fields: known ones, each once, not
// those of a request and a response together.
func (b *hblock) pseudosOK() bool {
	pf := b.pseudo()
	var req, resp bool
	for i, hf := range pf {
		switch hf.Name {
		case ":method", ":path", ":scheme", ":authority", ":protocol":
			req = true
		case ":status":
			resp = true
		default:
			return false
		}
		for _, h := range pf[:i] {
			if h.Name == hf.Name {
				return false
			}
		}
	}
	return !(req && resp)
}

// pseudo returns the pseudo-header fields, first in the block.
func (b *hblock) pseudo() []hpack.HeaderField {
	for i, hf := range b.fields {
		if !hf.IsPseudo() {
			return b.fields[:i]
		}
	}
	return b.fields
}

// regular returns the fields after the pseudo-header fields.
func (b *hblock) regular() []hpack.HeaderField { return b.fields[len(b.pseudo()):] }
