package haproxycfg

import (
	"fmt"
	"strings"
)

// ctx is the conversion of one line into a proxy's tables.
type ctx struct {
	c    *converter
	p    *proxy
	ln   *line
	row  *keyword
	neg  bool     // the line starts with "no"
	argi int      // index of the first argument word
	from *section // the defaults section the line is in; nil for a section's own line

	partials []string // comments of the parts not converted, for the entry made next
	leadUsed bool     // the line's comments went to an entry already
}

// arg returns argument i (after the keyword), "" past the end.
func (x *ctx) arg(i int) string { return x.ln.kw(x.argi + i) }

// nargs returns the number of arguments.
func (x *ctx) nargs() int { return len(x.ln.words) - x.argi }

// args returns the arguments.
func (x *ctx) args() []string { return x.ln.args(x.argi) }

// rest returns the arguments as written.
func (x *ctx) rest() string { return x.ln.rest(x.argi) }

// keyword returns the line's keyword as the notes name it.
func (x *ctx) keyword() string {
	kw := x.row.name
	if x.neg {
		kw = "no " + kw
	}
	return kw
}

// side returns the table of the section the keyword writes to: the
// frontend, the backend, or for keywords of either the frontend when
// there is one. nil when the section has no such side.
func (x *ctx) side(s side) *table {
	switch s {
	case sideFront, sideStats:
		return x.p.fe
	case sideBack:
		return x.p.be
	}
	if x.p.fe != nil {
		return x.p.fe
	}
	return x.p.be
}

// home is where comments about the line go.
func (x *ctx) home() *table {
	if t := x.side(x.row.side); t != nil {
		return t
	}
	return x.side(sideAny)
}

// convert converts the line with its row.
func (x *ctx) convert() {
	if x.side(x.row.side) == nil {
		if x.from != nil {
			return // a default that does not apply to this side
		}
		switch x.row.side {
		case sideStats:
			x.skip(Unsupported, "the stats page is served by a frontend in fulcrum: put these lines in the frontend that routes here")
		case sideFront:
			x.skip(Ignored, "a frontend keyword: HAProxy ignores it in a backend")
		default:
			x.skip(Ignored, "a backend keyword: HAProxy ignores it in a frontend")
		}
		return
	}
	if x.row.conv == nil {
		x.skip(x.row.kind, x.row.why)
		return
	}
	if x.neg && !x.row.neg {
		x.skip(Unsupported, fmt.Sprintf("%q has no \"no\" form", x.row.name))
		return
	}
	x.row.conv(x)
	if len(x.partials) > 0 {
		x.home().comment(x.ln.num, x.takePartials()...)
	}
}

// skip leaves the whole line out, as a comment saying why.
func (x *ctx) skip(kind Kind, why string) {
	if x.from != nil {
		if b := x.c.blocks[x.from]; b != nil {
			key := fmt.Sprintf("%d\x00%s", x.ln.num, why)
			if !x.c.noted[key] {
				x.c.commentLine(b, x.ln, kind, why)
			}
		}
		return
	}
	x.c.commentLine(x.home(), x.ln, kind, why)
}

// part notes a part of the line that is not converted; the rest is.
func (x *ctx) part(kind Kind, why string) {
	key := fmt.Sprintf("%d\x00%s", x.ln.num, why)
	seen := x.c.noted[key]
	x.c.note(x.ln, x.keyword(), kind, why)
	if x.from != nil {
		if b := x.c.blocks[x.from]; b != nil && !seen {
			b.comment(x.ln.num, noteLine(x.ln, kind, why))
		}
		return
	}
	x.partials = append(x.partials, noteLine(x.ln, kind, why))
}

// takePartials returns the comments of the parts not converted so far,
// for the caller to place.
func (x *ctx) takePartials() []string {
	p := x.partials
	x.partials = nil
	return p
}

// lead returns the comments to write above what the line becomes: its
// own comment lines (once) and those of its parts not converted.
func (x *ctx) lead() []string {
	var out []string
	if !x.leadUsed && x.from == nil {
		out = append(out, x.ln.lead...)
		x.leadUsed = true
	}
	return append(out, x.takePartials()...)
}

// trail returns the trailing comment of what the line becomes.
func (x *ctx) trail() string {
	if x.from != nil {
		name := "defaults"
		if x.from.name != "" {
			name += " " + x.from.name
		}
		return fmt.Sprintf("from %s, line %d", name, x.ln.num)
	}
	return x.ln.comment
}

// put sets key in t to v, from this line.
func (x *ctx) put(t *table, key string, v any) *entry {
	e := t.set(key, v, x.ln.num)
	e.lead = append(e.lead, x.lead()...)
	if tr := x.trail(); tr != "" {
		e.trail = tr
	}
	return e
}

// push appends v to the array at key in t, from this line.
func (x *ctx) push(t *table, key string, v any) *entry {
	if s, ok := v.(string); ok {
		v = sampleAliases(s)
	}
	return t.add(key, &elem{v: v, src: x.ln.num, lead: x.lead(), trail: x.trail()})
}

// hexSamples are HAProxy's binary fetches fulcrum gives as the upper-case
// hex their ",hex" conversion makes (proxy/acl: no binary samples).
var hexSamples = []string{"ssl_c_serial"}

// sampleAliases rewrites, in a rule or a format, what HAProxy spells with
// a converter fulcrum's fetch already gives: "ssl_c_serial,hex" is
// fulcrum's "ssl_c_serial".
func sampleAliases(s string) string {
	for _, f := range hexSamples {
		s = strings.ReplaceAll(s, f+",hex", f)
	}
	return s
}
