package haproxycfg

import (
	"strings"
)

// line is one keyword line of the configuration.
type line struct {
	num     int    // 1-based
	text    string // the line as written, without its comment, trimmed
	raw     string // the line as written, trimmed of its indentation
	words   []word
	comment string   // the trailing comment, "" for none
	lead    []string // the comment lines just above it, without '#'
	env     bool     // holds an environment variable (not expanded: no Env)
	// expanded names the environment variables replaced by their values
	// (Options.Env); envErr is a variable HAProxy would refuse.
	expanded []string
	unset    []string // those of expanded that were not set (empty)
	envErr   error
	err      error // unmatched quote
}

// kw returns the i-th word's text, "" past the end.
func (l *line) kw(i int) string {
	if i < len(l.words) {
		return l.words[i].text
	}
	return ""
}

// rest returns the line as written from word i to the end (without the
// comment): a rule, an ACL or a balance expression, passed on exactly as
// written so that its quoting and escapes reach fulcrum's rule parser.
func (l *line) rest(i int) string {
	if i >= len(l.words) {
		return ""
	}
	return strings.TrimSpace(l.text[l.words[i].start:])
}

// args returns the texts of the words from i on.
func (l *line) args(i int) []string {
	var out []string
	for j := i; j < len(l.words); j++ {
		out = append(out, l.words[j].text)
	}
	return out
}

// section is one section of the file: its header line and its keyword
// lines.
type section struct {
	kind  string // global, defaults, frontend, backend, listen, peers, ...
	name  string // "" for global and unnamed defaults
	from  string // "from NAME" of a defaults or proxy section
	hdr   *line
	lines []*line
}

// file is a parsed configuration.
type file struct {
	name     string
	lead     []string // comment lines at the top of the file, before any section
	sections []*section
	orphans  []*line  // keyword lines before the first section
	tail     []string // comment lines after the last keyword line
}

// sectionKinds are the section keywords of HAProxy 2.6: a line whose first
// word is one of them starts a section, whatever its indentation.
var sectionKinds = map[string]bool{
	"global": true, "defaults": true, "frontend": true, "backend": true, "listen": true,
	"peers": true, "resolvers": true, "userlist": true, "mailers": true, "http-errors": true,
	"ring": true, "cache": true, "program": true, "fcgi-app": true,
}

// parseFile reads the configuration text into sections. It never fails:
// a line it cannot read (an unmatched quote) keeps its error for the
// converter to report.
func parseFile(name, text string, env Env) *file {
	f := &file{name: name}
	var cur *section
	var pending []string // comment lines waiting for the next line
	text = strings.ReplaceAll(text, "\r\n", "\n")
	for i, raw := range strings.Split(text, "\n") {
		num := i + 1
		trimmed := strings.TrimSpace(raw)
		if trimmed == "" {
			continue
		}
		if strings.HasPrefix(trimmed, "#") {
			pending = append(pending, strings.TrimSpace(strings.TrimPrefix(trimmed, "#")))
			continue
		}
		words, comment, hasEnv, err := lexLine(trimmed)
		if len(words) == 0 && err == nil {
			continue
		}
		raw := trimmed
		var expanded, unset []string
		var envErr error
		if env != nil && err == nil {
			// The line read again with its variables' values, as HAProxy
			// reads it (expand.go).
			var x string
			x, expanded, unset, envErr = expandEnv(trimmed, words, env)
			if expanded != nil {
				trimmed = x
				words, comment, hasEnv, err = lexLine(trimmed)
			} else if envErr == nil {
				hasEnv = false
			}
		}
		l := &line{num: num, raw: raw, words: words, comment: comment, lead: pending, env: hasEnv, err: err,
			expanded: expanded, unset: unset, envErr: envErr}
		pending = nil
		l.text = trimmed
		if i := commentStart(trimmed, words, comment); i >= 0 {
			l.text = strings.TrimSpace(trimmed[:i])
		}
		if len(words) > 0 && sectionKinds[words[0].text] {
			cur = &section{kind: words[0].text, hdr: l}
			if len(f.sections) == 0 && len(f.orphans) == 0 && f.lead == nil {
				// Comments above the first section describe the file.
				f.lead, l.lead = l.lead, nil
			}
			args := l.args(1)
			if len(args) > 0 && args[0] != "from" {
				cur.name, args = args[0], args[1:]
			}
			if len(args) >= 2 && args[0] == "from" {
				cur.from = args[1]
			}
			f.sections = append(f.sections, cur)
			continue
		}
		if cur == nil {
			f.orphans = append(f.orphans, l)
			continue
		}
		cur.lines = append(cur.lines, l)
	}
	f.tail = pending
	return f
}

// commentStart returns where the trailing comment starts in s, or -1: the
// '#' after the last word.
func commentStart(s string, words []word, comment string) int {
	from := 0
	if len(words) > 0 {
		from = words[len(words)-1].end
	}
	if comment == "" && !strings.Contains(s[from:], "#") {
		return -1
	}
	if i := strings.IndexByte(s[from:], '#'); i >= 0 {
		return from + i
	}
	return -1
}
