package haproxycfg

import (
	"errors"
	"strconv"
	"strings"
)

// word is one word of a configuration line as HAProxy reads it: text is
// unquoted and unescaped; start and end are its bytes in the line as
// written (quotes and escapes included), so that the rest of a line can
// be passed on exactly as written.
type word struct {
	text       string
	start, end int
}

// errUnmatchedQuote is a line whose quote is not closed.
var errUnmatchedQuote = errors.New("unmatched quote")

// lexLine splits one line into words, as HAProxy's parse_line: words are
// separated by spaces and tabs; an unquoted, unescaped '#' starts a
// comment (returned without the '#' and trimmed); inside double quotes
// spaces are kept and backslash escapes apply; inside single quotes every
// byte is kept; outside single quotes a backslash escapes one of
// \ " ' # $ and space, \r \n \t \xNN are control bytes, and before any
// other byte it is kept. env reports a '$' that HAProxy would expand as an
// environment variable ("$NAME" or "${NAME}" inside double quotes).
func lexLine(s string) (words []word, comment string, env bool, err error) {
	var w strings.Builder
	inWord, start := false, 0
	begin := func(i int) {
		if !inWord {
			inWord, start = true, i
		}
	}
	finish := func(end int) {
		if inWord {
			words = append(words, word{text: w.String(), start: start, end: end})
			w.Reset()
			inWord = false
		}
	}
	// escape reads the escape at s[i] == '\\' and returns the index of its
	// last byte.
	escape := func(i int) int {
		if i+1 >= len(s) {
			w.WriteByte('\\')
			return i
		}
		switch c := s[i+1]; c {
		case '\\', '"', '\'', '#', '$', ' ':
			w.WriteByte(c)
		case 'r':
			w.WriteByte('\r')
		case 'n':
			w.WriteByte('\n')
		case 't':
			w.WriteByte('\t')
		case 'x':
			if i+3 < len(s) {
				if v, err := strconv.ParseUint(s[i+2:i+4], 16, 8); err == nil {
					w.WriteByte(byte(v))
					return i + 3
				}
			}
			w.WriteString(s[i : i+2])
		default:
			w.WriteString(s[i : i+2])
		}
		return i + 1
	}
	isVar := func(i int) bool {
		return i+1 < len(s) && (s[i+1] == '{' || s[i+1] == '_' || s[i+1] >= 'A' && s[i+1] <= 'Z' || s[i+1] >= 'a' && s[i+1] <= 'z')
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\r' || c == '\n':
			finish(i)
		case c == '#':
			finish(i)
			return words, strings.TrimSpace(s[i+1:]), env, nil
		case c == '\\':
			begin(i)
			i = escape(i)
		case c == '"':
			begin(i)
			j := i + 1
			for ; j < len(s) && s[j] != '"'; j++ {
				switch {
				case s[j] == '\\':
					j = escape(j)
				case s[j] == '$' && isVar(j):
					env = true
					w.WriteByte('$')
				default:
					w.WriteByte(s[j])
				}
			}
			if j >= len(s) {
				return words, "", env, errUnmatchedQuote
			}
			i = j
		case c == '\'':
			begin(i)
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return words, "", env, errUnmatchedQuote
			}
			w.WriteString(s[i+1 : i+1+j])
			i += j + 1
		default:
			// A '$' outside double quotes is a character: HAProxy 2.6
			// expands environment variables only inside them
			// (cfgparse.c parses with PARSE_OPT_DQUOTE), so a crypt(3)
			// hash such as $6$salt$hash stays as written.
			begin(i)
			w.WriteByte(c)
		}
	}
	finish(len(s))
	return words, "", env, nil
}
