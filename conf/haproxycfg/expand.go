package haproxycfg

import (
	"errors"
	"slices"
	"strings"
)

// Environment variables, as HAProxy 2.6 expands them while it reads its
// configuration (configuration manual 2.3; src/tools.c):
//
//   - inside double quotes, anywhere: "$NAME", "${NAME}" and
//     "${NAME-default}" (the default replaces a variable that is not set,
//     not an empty one); a name starts with a letter or '_' (parse_line:
//     "forbidden first char in environment variable name" otherwise);
//   - in an address, quoted or not (str2sa_range's env_expand: bind,
//     server, log, peer, nameserver, stats socket, source ...): '$', an
//     optional '{', then letters, digits and '_', an optional '}'.
//
// An unset variable is empty. A '$' elsewhere, and anything inside single
// quotes, is kept as written (an unquoted crypt(3) hash such as
// $6$salt$hash in a userlist is not expanded by HAProxy either).

// Env looks up an environment variable (os.LookupEnv).
type Env func(name string) (string, bool)

// errEnvName is a '$' inside double quotes followed by what cannot start
// a variable name, which HAProxy refuses.
var errEnvName = errors.New("forbidden first character in an environment variable's name")

// errEnvList is "${NAME[*]}", a variable expanded into several words:
// not converted.
var errEnvList = errors.New("${NAME[*]} (a variable expanded into several words)")

// addressWord returns the index of the word of a line that HAProxy parses
// as an address (and so expands variables in even unquoted), -1 for none.
func addressWord(words []word) int {
	kw := func(i int) string {
		if i < len(words) {
			return words[i].text
		}
		return ""
	}
	switch kw(0) {
	case "bind", "log", "source", "dgram-bind":
		return 1
	case "server", "peer", "nameserver", "mailer":
		return 2
	case "server-template":
		return 3
	case "stats":
		if kw(1) == "socket" {
			return 2
		}
	}
	return -1
}

// expandEnv returns line s (its words as lexLine read them) with its
// environment variables replaced by their values, written so that
// lexLine reads each value as one piece of its word, the names it
// replaced, in order, and those that were not set and had no default
// (empty). s is returned as is when it has none.
func expandEnv(s string, words []word, env Env) (string, []string, []string, error) {
	if !strings.Contains(s, "$") {
		return s, nil, nil, nil
	}
	addrStart, addrEnd := -1, -1
	if i := addressWord(words); i >= 0 && i < len(words) {
		addrStart, addrEnd = words[i].start, words[i].end
	}
	var b strings.Builder
	var names, unset []string
	lookup := func(name string) (string, bool) {
		names = append(names, name)
		return env(name)
	}
	inDQ := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\\':
			// An escape: kept as written, the byte after it too.
			b.WriteByte(c)
			if i+1 < len(s) {
				i++
				b.WriteByte(s[i])
			}
		case c == '\'' && !inDQ:
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				b.WriteString(s[i:])
				return b.String(), names, unset, nil // lexLine reports the quote
			}
			b.WriteString(s[i : i+j+2])
			i += j + 1
		case c == '"':
			inDQ = !inDQ
			b.WriteByte(c)
		case c == '$' && inDQ:
			n, value, name, err := quotedVar(s[i:], lookup)
			if err != nil {
				return s, nil, nil, err
			}
			if name != "" {
				unset = append(unset, name)
			}
			b.WriteString(escapeQuoted(value))
			i += n - 1
		case c == '$' && i >= addrStart && i < addrEnd:
			n, value, name := addressVar(s[i:], lookup)
			if name != "" {
				unset = append(unset, name)
			}
			b.WriteString(escapeUnquoted(value))
			i += n - 1
		default:
			b.WriteByte(c)
		}
	}
	if names == nil {
		return s, nil, nil, nil
	}
	return b.String(), names, unset, nil
}

// quotedVar reads the variable at v[0] == '$' inside double quotes and
// returns its length in v, its value, and its name when it was not set
// and had no default.
func quotedVar(v string, lookup Env) (int, string, string, error) {
	if len(v) < 2 {
		return 0, "", "", errEnvName // a '$' last: no name
	}
	braced := v[1] == '{'
	i := 1
	if braced {
		i = 2
	}
	start := i
	if i >= len(v) || !(isLetter(v[i]) || v[i] == '_') {
		return 0, "", "", errEnvName // HAProxy refuses the file
	}
	for i < len(v) && (isLetter(v[i]) || isDigit(v[i]) || v[i] == '_') {
		i++
	}
	name := v[start:i]
	if !braced {
		value, set := lookup(name)
		return i, value, unsetName(name, set), nil
	}
	if strings.HasPrefix(v[i:], "[*]") {
		return 0, "", "", errEnvList
	}
	def, hasDef := "", false
	if i < len(v) && v[i] == '-' {
		j := strings.IndexByte(v[i:], '}')
		if j < 0 {
			return 0, "", "", errEnvName
		}
		def, hasDef = v[i+1:i+j], true
		i += j
	}
	if i >= len(v) || v[i] != '}' {
		return 0, "", "", errEnvName
	}
	value, set := lookup(name)
	if hasDef && !set {
		return i + 1, def, "", nil
	}
	return i + 1, value, unsetName(name, set), nil
}

// unsetName is name when it was not set, else "".
func unsetName(name string, set bool) string {
	if set {
		return ""
	}
	return name
}

// addressVar reads the variable at v[0] == '$' in an address, as
// env_expand: an optional '{', letters, digits and '_', an optional '}'.
// It returns its length in v (at least 1: a lone '$' is dropped, as
// HAProxy's), its value, and its name when it was not set.
func addressVar(v string, lookup Env) (int, string, string) {
	i := 1
	braced := i < len(v) && v[i] == '{'
	if braced {
		i++
	}
	start := i
	for i < len(v) && (isLetter(v[i]) || isDigit(v[i]) || v[i] == '_') {
		i++
	}
	name := v[start:i]
	if braced && i < len(v) && v[i] == '}' {
		i++
	}
	if name == "" {
		return i, "", "" // getenv("") is unset: the '$' is dropped
	}
	value, set := lookup(name)
	return i, value, unsetName(name, set)
}

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
func isDigit(c byte) bool  { return c >= '0' && c <= '9' }

// escapeQuoted writes value for the inside of double quotes.
func escapeQuoted(value string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, `$`, `\$`)
	return r.Replace(value)
}

// escapeUnquoted writes value for an unquoted word.
func escapeUnquoted(value string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, `'`, `\'`, `$`, `\$`, `#`, `\#`, ` `, `\ `, "\t", `\t`)
	return r.Replace(value)
}

// envNotes returns a note for each line whose environment variables were
// expanded, naming them (not their values, which may be secrets) and
// those that were not set: an unset variable is empty, as HAProxy's, which
// may be a mistake to see (a secret missing from the environment).
func (f *file) envNotes() []Note {
	var notes []Note
	add := func(ln *line) {
		if len(ln.expanded) > 0 && ln.envErr == nil {
			why := "environment variables expanded from the environment (" + strings.Join(unique(ln.expanded), ", ") + ")"
			if len(ln.unset) > 0 {
				why += "; not set, so empty: " + strings.Join(unique(ln.unset), ", ")
			}
			notes = append(notes, Note{Line: ln.num, Keyword: keywordOf(ln), Kind: Differs, Why: why})
		}
	}
	for _, ln := range f.orphans {
		add(ln)
	}
	for _, s := range f.sections {
		add(s.hdr)
		for _, ln := range s.lines {
			add(ln)
		}
	}
	return notes
}

// unique returns names without repeats, in order.
func unique(names []string) []string {
	var out []string
	for _, n := range names {
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}
