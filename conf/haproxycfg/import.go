package haproxycfg

import (
	"cmp"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/fulcrum-proxy/fulcrum/conf"
)

// Options are Import's settings.
type Options struct {
	// Name is the HAProxy file's name, shown in the output's header.
	Name string
	// Dir is the directory the TOML will be written to: files the
	// configuration names by a relative path (acl -f) are looked up from
	// there when the output is checked. "" is the current directory.
	Dir string
	// LocalPeer and HostName say which instance the configuration is
	// for, as HAProxy decides its own peer name: LocalPeer (HAProxy's -L,
	// fulcrum's --localpeer), else the global localpeer, else HostName. A
	// peers section without a peer of that name is then removed, as
	// HAProxy 2.6 does ("Removing incomplete section"), and the tables
	// naming it are not shared. Both empty (fulcrum import, whose TOML
	// may be for another host): only the global localpeer, if any, says.
	LocalPeer, HostName string
	// Env, when set, expands the environment variables HAProxy 2.6
	// expands (inside double quotes, and in addresses: expand.go), each
	// line noted with the names; nil leaves them, and the lines holding
	// them are not converted.
	Env Env
}

// Result is a conversion.
type Result struct {
	// TOML is fulcrum's configuration. It passes conf.Parse (fulcrum
	// check), and holds every line that was not converted as a comment.
	TOML []byte
	// Notes lists the lines not converted as written, in line order.
	Notes []Note
	// NoFrontend is true when nothing of the file listens: fulcrum run
	// and check refuse a configuration without a [[frontend]].
	NoFrontend bool
}

// Blocking returns the notes of lines fulcrum would not run as HAProxy
// does (Kind.Blocking).
func (r *Result) Blocking() []Note {
	var out []Note
	for _, n := range r.Notes {
		if n.Kind.Blocking() {
			out = append(out, n)
		}
	}
	return out
}

// maxRounds bounds the check loop: each round comments out at least one
// more line, so a file of n lines needs at most n+1 rounds; the bound is
// a guard against a bug, never reached.
const maxRounds = 10000

// Import converts an HAProxy configuration into fulcrum's TOML. It never
// fails on input: whatever fulcrum cannot run becomes a note and a
// comment. It returns an error only if its own output does not pass
// fulcrum's check (a bug of the importer).
//
// The conversion runs, then its output is checked with conf.Parse; every
// problem found is traced to the input line that caused it, that line is
// set aside with the problem as its reason, and the conversion runs again
// until the output passes. A section whose header is set aside (a
// frontend without a bind fulcrum can run) is commented out whole.
func Import(data []byte, opt Options) (*Result, error) {
	f := parseFile(opt.Name, string(data), opt.Env)
	reject := map[int]string{}
	checkAs := filepath.Join(opt.Dir, "imported.toml")
	for round := 0; round < maxRounds; round++ {
		c := newConverter(f, reject)
		c.dir = opt.Dir
		c.localName = cmp.Or(opt.LocalPeer, c.localPeer(), opt.HostName)
		c.run()
		out := c.emit(opt.Name)
		cfg, err := conf.Parse(checkAs, []byte(out.b.String()))
		if err == nil {
			text := c.warnings(out, cfg.Warnings)
			notes := slices.Clone(c.notes)
			for _, n := range f.envNotes() {
				// Only on lines that were converted.
				if !slices.ContainsFunc(c.notes, func(o Note) bool { return o.Line == n.Line && o.Kind.Blocking() }) {
					notes = append(notes, n)
				}
			}
			notes = append(notes, f.orphanedCounters(notes)...)
			slices.SortStableFunc(notes, func(a, b Note) int { return a.Line - b.Line })
			return &Result{TOML: []byte(text), Notes: notes, NoFrontend: len(cfg.Frontends) == 0}, nil
		}
		var errs *conf.Errors
		if !errors.As(err, &errs) {
			return nil, fmt.Errorf("haproxycfg: checking the output: %w", err)
		}
		progress := false
		for _, e := range errs.List {
			src := 0
			if e.Line >= 1 && e.Line <= len(out.src) {
				src = out.src[e.Line-1]
			}
			if src == 0 {
				return nil, fmt.Errorf("haproxycfg: the output does not pass fulcrum check: %v\n%s", e, out.b.String())
			}
			if _, done := reject[src]; !done {
				reject[src] = checkMessage(e.Msg)
				progress = true
			}
		}
		if !progress {
			return nil, fmt.Errorf("haproxycfg: the output does not pass fulcrum check: %v", err)
		}
	}
	return nil, errors.New("haproxycfg: the conversion does not settle")
}

// warnings turns the warnings of fulcrum's check (a value it runs with a
// difference: a cipher crypto/tls lacks, an expired certificate) into notes on the lines they come from, and into
// comments above what those lines became. It returns the output with them.
func (c *converter) warnings(out *output, warns []conf.Error) string {
	if len(warns) == 0 {
		return out.b.String()
	}
	lines := strings.SplitAfter(out.b.String(), "\n")
	above := map[int][]string{}
	for _, w := range warns {
		if w.Line < 1 || w.Line > len(out.src) || out.src[w.Line-1] == 0 {
			continue
		}
		ln := c.f.lineAt(out.src[w.Line-1])
		if ln == nil {
			continue
		}
		why := "fulcrum check: " + checkMessage(w.Msg)
		key := strconv.Itoa(ln.num) + "\x00" + why
		if c.noted[key] {
			continue
		}
		c.note(ln, keywordOf(ln), Differs, why)
		indent := lines[w.Line-1][:len(lines[w.Line-1])-len(strings.TrimLeft(lines[w.Line-1], " "))]
		var o output
		o.comments([]string{noteLine(ln, Differs, why)}, 0)
		above[w.Line-1] = append(above[w.Line-1], indent+o.b.String())
	}
	var b strings.Builder
	for i, l := range lines {
		for _, a := range above[i] {
			b.WriteString(a)
		}
		b.WriteString(l)
	}
	return b.String()
}

// lineAt returns the line numbered num, nil if it is not a keyword line.
func (f *file) lineAt(num int) *line {
	for _, ln := range f.orphans {
		if ln.num == num {
			return ln
		}
	}
	for _, s := range f.sections {
		if s.hdr != nil && s.hdr.num == num {
			return s.hdr
		}
		for _, ln := range s.lines {
			if ln.num == num {
				return ln
			}
		}
	}
	return nil
}

// scopePrefix matches the place a problem of fulcrum's check is about
// (`frontend "www": http_request #2: `), which means nothing in the
// HAProxy file: the note gives the line instead.
var scopePrefix = regexp.MustCompile(`^(?:(?:frontend|backend|table|server|stats_socket|use_backend|http_request|tcp_request|stick|acl|bind|global|defaults|check|default_server|stats|stick_table|cookie)(?: "(?:[^"\\]|\\.)*"| #\d+)?: )+`)

// checkMessage returns a problem of fulcrum's check without its place.
func checkMessage(msg string) string {
	if m := scopePrefix.FindString(msg); m != "" && len(m) < len(msg) {
		return msg[len(m):]
	}
	return msg
}

// emit writes the conversion as TOML.
func (c *converter) emit(name string) *output {
	o := &output{}
	head := []string{
		"fulcrum configuration converted from " + name + " by `fulcrum import`.",
		"A line that is not converted is kept as a comment, below a line saying",
		"why: \"line N, not supported yet: ...\". Keys that " + name + " does not",
		"set take fulcrum's defaults (see conf/*.go).",
	}
	if len(c.f.lead) > 0 {
		head = append(append(head, ""), c.f.lead...)
	}
	o.comments(head, 0)
	if c.orphans != nil {
		o.write(c.orphans)
	}
	if len(c.global.entries) > 0 || len(c.global.subs) > 0 {
		o.write(c.global)
	} else if len(c.global.lead) > 0 {
		o.write(&table{lead: c.global.lead})
	}
	if c.defaults != nil {
		o.write(c.defaults)
	}
	for _, t := range c.body {
		if !c.explicit && t == c.blocks[c.primary] && len(t.entries) == 0 {
			continue // all of the defaults section is in [defaults]
		}
		o.write(t)
	}
	if len(c.f.tail) > 0 {
		o.line("", 0)
		o.comments(c.f.tail, 0)
	}
	return o
}

// IsHAProxy reports whether data looks like an HAProxy configuration
// rather than fulcrum's TOML: its first line that is not blank or a
// comment starts a section (global, defaults, frontend, backend, listen,
// peers...), and is not a TOML key or table.
func IsHAProxy(data []byte) bool {
	for _, l := range strings.Split(string(data), "\n") {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		if strings.HasPrefix(l, "[") || strings.Contains(l, "=") && !strings.Contains(strings.Fields(l)[0], "=") && len(strings.Fields(l)) > 1 && strings.Fields(l)[1] == "=" {
			return false
		}
		words, _, _, _ := lexLine(l)
		return len(words) > 0 && sectionKinds[words[0].text] && !strings.Contains(words[0].text, "=")
	}
	return false
}
