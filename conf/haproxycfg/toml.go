package haproxycfg

// The TOML being built: tables of entries, each remembering the line of
// the HAProxy file it came from, so that a problem `fulcrum check` finds
// in the output can be traced back to the line that caused it.

import (
	"slices"
	"strconv"
	"strings"
)

// dur is a duration as fulcrum writes it ("5s", "500ms").
type dur string

// elem is one element of an array written one element per line.
type elem struct {
	v     any // string or *inline
	src   int
	lead  []string
	trail string
}

// inline is an inline table, keys in insertion order. Values are string,
// int, bool, dur or []string.
type inline struct {
	keys []string
	vals map[string]any
}

// set sets key to v, keeping the key's first position.
func (t *inline) set(key string, v any) {
	if t.vals == nil {
		t.vals = map[string]any{}
	}
	if _, ok := t.vals[key]; !ok {
		t.keys = append(t.keys, key)
	}
	t.vals[key] = v
}

// entry is one key of a table, or a block of comments when key is "".
type entry struct {
	key string
	// v is string, int, bool, dur, []string, *inline, or []*elem for an
	// array written one element per line.
	v any
	// one writes a []*elem of one element as that element alone (acl
	// takes a string or a list).
	one   bool
	src   int // the line it came from; 0 when the importer made it
	order int // its place among the table's entries (a source line)
	lead  []string
	trail string
}

// table is a TOML table: "[global]", "[[frontend]]", "[frontend.stats]",
// or, with an empty header, a block of comments.
type table struct {
	header  string
	src     int
	lead    []string
	trail   string
	entries []*entry
	subs    []*table
}

// get returns the entry of key, or nil.
func (t *table) get(key string) *entry {
	for _, e := range t.entries {
		if e.key == key {
			return e
		}
	}
	return nil
}

// set sets key to v from line src. A key set again (HAProxy: the last
// line wins) takes the new value and the new line; the comments of both
// lines are kept.
func (t *table) set(key string, v any, src int) *entry {
	if e := t.get(key); e != nil {
		e.v, e.src = v, src
		if src > 0 {
			e.order = src
		}
		return e
	}
	e := &entry{key: key, v: v, src: src, order: src}
	t.entries = append(t.entries, e)
	return e
}

// add appends an element to the array at key, creating it at the
// element's line.
func (t *table) add(key string, el *elem) *entry {
	e := t.get(key)
	if e == nil {
		e = &entry{key: key, src: el.src, order: el.src}
		t.entries = append(t.entries, e)
	}
	list, _ := e.v.([]*elem)
	e.v = append(list, el)
	return e
}

// comment adds comment lines at the place of line src.
func (t *table) comment(src int, lines ...string) {
	t.entries = append(t.entries, &entry{order: src, lead: lines})
}

// sub returns the sub-table with header h, creating it.
func (t *table) sub(h string, src int) *table {
	for _, s := range t.subs {
		if s.header == h {
			return s
		}
	}
	s := &table{header: h, src: src}
	t.subs = append(t.subs, s)
	return s
}

// output is the TOML text being written, with the source line of each of
// its lines.
type output struct {
	b   strings.Builder
	src []int // per output line: the input line it came from, 0 = none
}

// line writes one line of text from input line src.
func (o *output) line(text string, src int) {
	o.b.WriteString(text)
	o.b.WriteByte('\n')
	o.src = append(o.src, src)
}

// comments writes comment lines. Control characters and invalid UTF-8,
// which TOML does not allow in a comment, are written as '?'.
func (o *output) comments(lines []string, src int) {
	for _, l := range lines {
		l = strings.Map(func(r rune) rune {
			if r < 0x20 && r != '\t' || r == 0x7f || r == 0xfffd {
				return '?'
			}
			return r
		}, strings.ToValidUTF8(l, "?"))
		if l == "" {
			o.line("#", src)
		} else {
			o.line("# "+l, src)
		}
	}
}

// withTrail appends a trailing comment to text.
func withTrail(text, trail string) string {
	if trail == "" {
		return text
	}
	var o output
	o.comments([]string{trail}, 0)
	return text + "  " + strings.TrimSuffix(o.b.String(), "\n")
}

// write writes t, its entries in order (the name first, then by source
// line, entries the importer made before the others), then its sub-tables.
func (o *output) write(t *table) {
	if len(o.src) > 0 && (t.header != "" || len(t.lead) > 0) {
		o.line("", 0)
	}
	o.comments(t.lead, t.src)
	if t.header != "" {
		o.line(withTrail(t.header, t.trail), t.src)
	}
	entries := slices.Clone(t.entries)
	slices.SortStableFunc(entries, func(a, b *entry) int {
		ra, rb := rank(a), rank(b)
		if ra != rb {
			return ra - rb
		}
		return a.order - b.order
	})
	for _, e := range entries {
		if e.src == 0 {
			e.src = t.src // what the importer made answers for its section
		}
		o.entry(e)
	}
	for _, s := range t.subs {
		if len(s.entries) == 0 && len(s.subs) == 0 {
			o.comments(s.lead, s.src) // an empty table says nothing
			continue
		}
		o.write(s)
	}
}

// rank orders the entries: name first, then what the importer made, then
// the rest by line.
func rank(e *entry) int {
	switch {
	case e.key == "name":
		return 0
	case e.order == 0:
		return 1
	}
	return 2
}

// entry writes one entry.
func (o *output) entry(e *entry) {
	o.comments(e.lead, e.src)
	if e.key == "" {
		return
	}
	key := dottedKey(e.key)
	list, isList := e.v.([]*elem)
	if !isList {
		o.line(withTrail(key+" = "+value(e.v), e.trail), e.src)
		return
	}
	if len(list) == 1 {
		o.comments(list[0].lead, list[0].src)
		v := value(list[0].v)
		if !e.one {
			v = "[" + v + "]"
		}
		trail := list[0].trail
		if trail == "" {
			trail = e.trail
		}
		o.line(withTrail(key+" = "+v, trail), list[0].src)
		return
	}
	o.line(withTrail(key+" = [", e.trail), e.src)
	for _, el := range list {
		for _, l := range el.lead {
			o.line(strings.TrimRight("  # "+l, " "), el.src)
		}
		o.line(withTrail("  "+value(el.v)+",", el.trail), el.src)
	}
	o.line("]", e.src)
}

// dottedKey writes a key that may be dotted ("acl.is_api"), quoting the
// parts that need it.
func dottedKey(k string) string {
	head, rest, dotted := strings.Cut(k, ".")
	if !dotted {
		return bareOrQuoted(k)
	}
	return bareOrQuoted(head) + "." + bareOrQuoted(rest)
}

// bareOrQuoted returns k as a TOML key: bare when it can be.
func bareOrQuoted(k string) string {
	if k == "" {
		return `""`
	}
	for _, r := range k {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-') {
			return basicString(k)
		}
	}
	return k
}

// value writes a value.
func value(v any) string {
	switch v := v.(type) {
	case string:
		return tomlString(v)
	case dur:
		return tomlString(string(v))
	case int:
		return strconv.Itoa(v)
	case bool:
		return strconv.FormatBool(v)
	case []string:
		parts := make([]string, len(v))
		for i, s := range v {
			parts[i] = tomlString(s)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case *inline:
		parts := make([]string, len(v.keys))
		for i, k := range v.keys {
			parts[i] = bareOrQuoted(k) + " = " + value(v.vals[k])
		}
		return "{ " + strings.Join(parts, ", ") + " }"
	}
	return `""`
}

// tomlString writes s as a TOML string: a literal string ('...') when it
// holds a backslash and can be one, so that a regular expression reads as
// in haproxy.cfg, else a basic string with escapes.
func tomlString(s string) string {
	if strings.Contains(s, `\`) && !strings.ContainsAny(s, "'\n\r") && !hasControl(s) {
		return "'" + s + "'"
	}
	return basicString(s)
}

// basicString writes s as a TOML basic string.
func basicString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"':
			b.WriteString(`\"`)
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20 || r == 0x7f:
			b.WriteString(`\u00`)
			b.WriteString(strconv.FormatInt(int64(r)>>4, 16))
			b.WriteString(strconv.FormatInt(int64(r)&15, 16))
		case r == 0xfffd:
			b.WriteString(`\ufffd`)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// hasControl reports whether s holds a control character or invalid UTF-8.
func hasControl(s string) bool {
	for _, r := range s {
		if r < 0x20 && r != '\t' || r == 0x7f || r == 0xfffd {
			return true
		}
	}
	return false
}
