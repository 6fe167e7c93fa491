package acl

import (
	"fmt"
	"strconv"
	"strings"
)

// splitWords splits a rule or an ACL line into words as HAProxy's
// configuration parser does: words are separated by spaces and tabs;
// inside double quotes spaces are kept; inside single quotes every byte is
// kept as is. Outside single quotes a backslash escapes one of
// \ " ' # $ and space, and \r \n \t \xNN are control bytes; before any
// other byte it is kept, so `path_reg \.php$` keeps its regex escape, as in
// HAProxy. A quote may start or end in the middle of a word: a"b c"d is the
// word "ab cd". The strings are copied: words outlive the text.
func splitWords(s string) ([]string, error) {
	var words []string
	var w strings.Builder
	inWord := false
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
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			if inWord {
				words = append(words, w.String())
				w.Reset()
				inWord = false
			}
		case c == '\\':
			inWord = true
			i = escape(i)
		case c == '"':
			inWord = true
			j := i + 1
			for ; j < len(s) && s[j] != '"'; j++ {
				if s[j] == '\\' {
					j = escape(j)
					continue
				}
				w.WriteByte(s[j])
			}
			if j >= len(s) {
				return nil, fmt.Errorf("unmatched double quote in %q", s)
			}
			i = j
		case c == '\'':
			inWord = true
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return nil, fmt.Errorf("unmatched single quote in %q", s)
			}
			w.WriteString(s[i+1 : i+1+j])
			i += j + 1
		default:
			inWord = true
			w.WriteByte(c)
		}
	}
	if inWord {
		words = append(words, w.String())
	}
	return words, nil
}
