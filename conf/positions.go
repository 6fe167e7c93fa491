package conf

// Line numbers of keys.
//
// BurntSushi/toml v1.6.0 keeps a position for each key only inside its
// unexported MetaData.keyInfo, keyed by the dotted key without array indices,
// so that the second [[backend.server]]'s "weight" overwrites the first's.
// MetaData has no public position API, and ParseError carries a position only
// for syntax errors. So once the toml package has accepted the file (the file
// is then known to be valid TOML), scanPositions reads it a second time with
// a small lexer that knows only what it needs for this: comments, the four
// kinds of strings, table and array-of-tables headers, dotted keys, arrays and
// inline tables. It records the line of every key, every table header and
// every array element under its full path with array indices, such as
// backend[0].server[1].weight. The scanner never fails: on input it does not
// understand it stops, and lines it did not find fall back to the nearest
// enclosing table (see positions.line).

import (
	"strconv"
	"strings"
)

// path is the full address of a value in the TOML tree: table and key names,
// with an element "[i]" after an array for its i-th element (0-based).
type path []string

// child returns p extended by one key, in a new slice.
func (p path) child(key string) path {
	q := make(path, len(p), len(p)+1)
	copy(q, p)
	return append(q, key)
}

// index returns p extended by the array index i, in a new slice.
func (p path) index(i int) path { return p.child("[" + strconv.Itoa(i) + "]") }

// isIndex reports whether a path element is an array index.
func isIndex(elem string) bool { return strings.HasPrefix(elem, "[") && strings.HasSuffix(elem, "]") }

// indexOf returns the array index held by an index element, or -1.
func indexOf(elem string) int {
	if !isIndex(elem) {
		return -1
	}
	i, err := strconv.Atoi(elem[1 : len(elem)-1])
	if err != nil {
		return -1
	}
	return i
}

// key returns p as a map key. Each element is prefixed by its length, since
// a TOML key may hold any character, even NUL ("\u0000").
func (p path) key() string { return string(p.appendKey(nil)) }

// appendKey appends p's key to b. A lookup with m[string(b)] does not
// allocate, which matters for a file of thousands of servers.
func (p path) appendKey(b []byte) []byte {
	for _, e := range p {
		b = strconv.AppendInt(b, int64(len(e)), 10)
		b = append(b, ':')
		b = append(b, e...)
	}
	return b
}

// schema returns p without its array indices, as a dotted key: the form used
// in "unknown key" messages and in the notYet table ("backend.server.weight").
func (p path) schema() string {
	var b strings.Builder
	for _, e := range p {
		if isIndex(e) {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(quoteKey(e))
	}
	return b.String()
}

// quoteKey returns k as TOML writes it: bare when it can be, quoted otherwise.
func quoteKey(k string) string {
	if k == "" {
		return `""`
	}
	for _, r := range k {
		if !isBareKeyRune(r) {
			return strconv.Quote(k)
		}
	}
	return k
}

func isBareKeyRune(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-'
}

// positions maps full paths to the line where each was written.
type positions map[string]int

// line returns the line of p, or of the nearest enclosing table or array
// element found, or 0 when nothing is known (an empty file).
func (ps positions) line(p path) int {
	var buf [256]byte
	for n := len(p); n > 0; n-- {
		if l, ok := ps[string(p[:n].appendKey(buf[:0]))]; ok {
			return l
		}
	}
	return 0
}

// scanner is the state of scanPositions.
type scanner struct {
	src    string
	i      int // next byte
	line   int // line of src[i]
	pos    positions
	arrays map[string]int // array of tables (full path key) -> elements so far
	keyBuf []byte         // reused by record
}

// scanPositions returns the line of every key, table header and array element
// in src, which must already have been accepted by the toml package.
func scanPositions(src string) positions {
	s := &scanner{src: src, line: 1, pos: positions{}, arrays: map[string]int{}}
	s.document()
	return s.pos
}

// record notes the line of p, keeping the first one seen: an implicitly
// created table keeps the line where it first appeared.
func (s *scanner) record(p path, line int) {
	s.keyBuf = p.appendKey(s.keyBuf[:0])
	if _, ok := s.pos[string(s.keyBuf)]; !ok {
		s.pos[string(s.keyBuf)] = line
	}
}

func (s *scanner) eof() bool { return s.i >= len(s.src) }

func (s *scanner) peek() byte {
	if s.eof() {
		return 0
	}
	return s.src[s.i]
}

// advance moves past one byte, counting lines.
func (s *scanner) advance() {
	if s.src[s.i] == '\n' {
		s.line++
	}
	s.i++
}

// skip moves past blanks; with newlines also past line ends and comments.
func (s *scanner) skip(newlines bool) {
	for !s.eof() {
		switch c := s.peek(); {
		case c == ' ' || c == '\t':
			s.advance()
		case newlines && (c == '\n' || c == '\r'):
			s.advance()
		case newlines && c == '#':
			for !s.eof() && s.peek() != '\n' {
				s.advance()
			}
		default:
			return
		}
	}
}

// document scans the whole file: headers and key/value lines.
func (s *scanner) document() {
	var table path // the table that key/value lines go to
	for {
		s.skip(true)
		if s.eof() {
			return
		}
		start := s.i
		line := s.line
		if s.peek() == '[' {
			s.advance()
			isArray := s.peek() == '['
			if isArray {
				s.advance()
			}
			table = s.header(s.dottedKey(), isArray, line)
			s.skip(false)
			for !s.eof() && s.peek() == ']' {
				s.advance()
			}
		} else {
			key := s.dottedKey()
			s.skip(false)
			if s.peek() == '=' {
				s.advance()
			}
			s.skip(false)
			s.keyValue(table, key, line)
		}
		if s.i == start { // not understood: stop rather than loop
			return
		}
	}
}

// header resolves a [table] or [[array]] header to its full path: each prefix
// that is an array of tables means its last element so far; a [[header]]
// starts a new element.
func (s *scanner) header(key []string, isArray bool, line int) path {
	var p path
	for n, k := range key {
		p = p.child(k)
		last := n == len(key)-1
		count, isArr := s.arrays[p.key()]
		switch {
		case last && isArray:
			s.arrays[p.key()] = count + 1
			s.record(p, line)
			p = p.index(count)
		case isArr && count > 0:
			p = p.index(count - 1)
		}
		s.record(p, line)
	}
	return p
}

// keyValue records a dotted key and scans its value.
func (s *scanner) keyValue(table path, key []string, line int) {
	p := table
	for _, k := range key {
		p = p.child(k)
		s.record(p, line)
	}
	s.value(p)
}

// dottedKey reads a key such as a."b.c".'d' into its parts.
func (s *scanner) dottedKey() []string {
	var parts []string
	for {
		s.skip(false)
		start := s.i
		switch s.peek() {
		case '"':
			parts = append(parts, unquoteBasic(s.basicString()))
		case '\'':
			raw := s.literalString()
			parts = append(parts, strings.TrimSuffix(strings.TrimPrefix(raw, "'"), "'"))
		default:
			for !s.eof() && !strings.ContainsRune(" \t\r\n=.[]#\"',{}", rune(s.peek())) {
				s.advance()
			}
			parts = append(parts, s.src[start:s.i])
		}
		s.skip(false)
		if s.peek() != '.' || s.i == start {
			return parts
		}
		s.advance()
	}
}

// value scans one value at p, recording the keys and elements inside it.
func (s *scanner) value(p path) {
	switch s.peek() {
	case '"':
		s.basicString()
	case '\'':
		s.literalString()
	case '[':
		s.advance()
		for n := 0; ; n++ {
			s.skip(true)
			if s.eof() || s.peek() == ']' {
				break
			}
			start := s.i
			s.record(p.index(n), s.line)
			s.value(p.index(n))
			s.skip(true)
			if s.peek() == ',' {
				s.advance()
			} else if s.i == start {
				return
			}
		}
		if !s.eof() {
			s.advance()
		}
	case '{':
		s.advance()
		for {
			s.skip(true) // TOML 1.1 lets inline tables span lines
			if s.eof() || s.peek() == '}' {
				break
			}
			start, line := s.i, s.line
			key := s.dottedKey()
			s.skip(false)
			if s.peek() == '=' {
				s.advance()
			}
			s.skip(false)
			s.keyValue(p, key, line)
			s.skip(true)
			if s.peek() == ',' {
				s.advance()
			} else if s.i == start {
				return
			}
		}
		if !s.eof() {
			s.advance()
		}
	default: // number, boolean, date: no structure, may hold a blank
		for !s.eof() && !strings.ContainsRune(",]}#\r\n", rune(s.peek())) {
			s.advance()
		}
	}
}

// basicString scans a "string" or a """multi-line string""" and returns its
// source text, quotes included.
func (s *scanner) basicString() string { return s.quoted('"', true) }

// literalString scans a 'string' or a ”'multi-line string”'.
func (s *scanner) literalString() string { return s.quoted('\'', false) }

// quoted scans a string delimited by q, with backslash escapes if escapes.
func (s *scanner) quoted(q byte, escapes bool) string {
	start := s.i
	delim := string([]byte{q, q, q})
	triple := strings.HasPrefix(s.src[s.i:], delim)
	if triple {
		s.i += 3
	} else {
		s.advance()
	}
	for !s.eof() {
		c := s.peek()
		switch {
		case escapes && c == '\\':
			s.advance()
			if !s.eof() {
				s.advance()
			}
		case c == q && !triple:
			s.advance()
			return s.src[start:s.i]
		case c == q && strings.HasPrefix(s.src[s.i:], delim):
			s.i += 3
			// Up to two more quotes belong to the content: """a""""" is `a""`.
			for n := 0; n < 2 && s.peek() == q; n++ {
				s.advance()
			}
			return s.src[start:s.i]
		case c == '\n' && !triple:
			return s.src[start:s.i]
		default:
			s.advance()
		}
	}
	return s.src[start:s.i]
}

// unquoteBasic returns the value of a "quoted key". TOML's escapes are Go's
// but for TOML 1.1's \e (ESC) and \xHH, which is the code point U+00HH where
// Go's \xHH is a byte: both are rewritten as \u00HH. On anything odd the raw
// text is kept, which at worst costs the line of that key.
func unquoteBasic(raw string) string {
	var b strings.Builder
	for i := 0; i < len(raw); i++ {
		if raw[i] == '\\' && i+1 < len(raw) {
			switch raw[i+1] {
			case 'e':
				b.WriteString(`\u001b`)
			case 'x':
				b.WriteString(`\u00`)
			default:
				b.WriteString(raw[i : i+2])
			}
			i++
			continue
		}
		b.WriteByte(raw[i])
	}
	if v, err := strconv.Unquote(b.String()); err == nil {
		return v
	}
	return strings.TrimSuffix(strings.TrimPrefix(raw, `"`), `"`)
}
