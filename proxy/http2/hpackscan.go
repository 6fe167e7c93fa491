package http2

import "errors"

// errLateSizeUpdate is a dynamic table size update after a field of its
// header block.
var errLateSizeUpdate = errors.New("http2: hpack dynamic table size update after a field")

// repScan follows the representations of a header block (RFC 7541 6),
// fragment by fragment, without decoding them, for the one rule x/net's
// hpack.Decoder enforces only while its dynamic table holds an entry: a
// dynamic table size update must come before the block's first field
// (RFC 7541 4.2). HAProxy 2.6 answers a late one with GOAWAY
// COMPRESSION_ERROR whatever its table holds; so does the engine. The
// decoder checks everything else (indexes, string lengths, Huffman
// codes); the scan only needs each representation's length.
//
// The zero repScan is at the start of a block.
type repScan struct {
	field  bool   // a field representation began in this block
	step   uint8  // what the bytes now being read are (scan* below)
	then   uint8  // for scanInt: what its value is
	strs   uint8  // strings still to read in the current field
	shift  uint   // for scanInt: bits of the integer read so far
	val    uint64 // for scanInt: the integer so far
	remain uint64 // for scanBody: string bytes still to skip
}

const (
	scanRep  = iota // the first byte of a representation
	scanInt         // continuation bytes of an integer
	scanStr         // the first byte of a string (H bit and length)
	scanBody        // a string's bytes
)

// What an integer read is.
const (
	intIndex  = iota // an indexed field's index: the field ends with it
	intName          // a literal's name index: 0 means a name string follows
	intSize          // a dynamic table size update
	intStrLen        // a string's length
)

// reset puts the scan at the start of a block.
func (s *repScan) reset() { *s = repScan{} }

// boundary reports whether the bytes fed so far end on a representation's
// end (a whole block must).
func (s *repScan) boundary() bool { return s.step == scanRep }

// feed follows p, the next bytes of the block. It returns
// errLateSizeUpdate for a size update after a field; other malformations
// are the decoder's to report.
func (s *repScan) feed(p []byte) error {
	for i := 0; i < len(p); {
		switch s.step {
		case scanRep:
			b := p[i]
			i++
			switch {
			case b&0x80 != 0: // indexed field, 7-bit prefix
				s.field = true
				s.integer(b&0x7f, 0x7f, intIndex)
			case b&0xc0 == 0x40: // literal with incremental indexing, 6-bit
				s.field = true
				s.strs = 1
				s.integer(b&0x3f, 0x3f, intName)
			case b&0xe0 == 0x20: // dynamic table size update, 5-bit
				if s.field {
					return errLateSizeUpdate
				}
				s.integer(b&0x1f, 0x1f, intSize)
			default: // literal without indexing or never indexed, 4-bit
				s.field = true
				s.strs = 1
				s.integer(b&0x0f, 0x0f, intName)
			}
		case scanInt:
			b := p[i]
			i++
			if s.shift < 63 {
				s.val += uint64(b&0x7f) << s.shift
			} else {
				s.val = 1 << 62 // beyond any length: the decoder refuses it
			}
			s.shift += 7
			if b&0x80 == 0 {
				s.intDone()
			}
		case scanStr:
			b := p[i]
			i++
			s.integer(b&0x7f, 0x7f, intStrLen)
		case scanBody:
			n := uint64(len(p) - i)
			if n >= s.remain {
				i += int(s.remain)
				s.remain = 0
				s.strDone()
			} else {
				i = len(p)
				s.remain -= n
			}
		}
	}
	return nil
}

// integer starts an integer whose prefix bits are v (all ones, max, when
// continuation bytes follow), read as what.
func (s *repScan) integer(v, max byte, what uint8) {
	s.then, s.val, s.shift = what, uint64(v), 0
	if v < max {
		s.intDone()
		return
	}
	s.step = scanInt
}

// intDone acts on the integer just read.
func (s *repScan) intDone() {
	switch s.then {
	case intIndex, intSize:
		s.step = scanRep
	case intName:
		if s.val == 0 {
			s.strs = 2
		}
		s.step = scanStr
	case intStrLen:
		if s.val == 0 {
			s.strDone()
			return
		}
		s.remain = s.val
		s.step = scanBody
	}
}

// strDone ends a string: the field's next string, or its end.
func (s *repScan) strDone() {
	s.strs--
	if s.strs > 0 {
		s.step = scanStr
		return
	}
	s.step = scanRep
}
