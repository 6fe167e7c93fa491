package runtime

import (
	"fmt"
	"slices"
	"strings"
)

// Help and the unknown-command reply, generated from the table as HAProxy's
// cli_gen_usage_msg() does (cli.c): the rows that match the words typed, or
// the closest ones by a word fingerprint when nothing matches exactly,
// sorted by usage, then always the help, prompt and quit lines.
//
// One departure from HAProxy 2.6, as the Runtime API issue asks: the lists
// hold only the commands the session's level may run (2.6 lists every
// command at every level).

// Limits from HAProxy's cli-t.h.
const (
	maxMatches  = 5 // CLI_MAX_MATCHES: fuzzy suggestions kept
	maxPrefixKW = 5 // CLI_PREFIX_KW_NB: words compared
)

// trailerWords are the commands HAProxy lists last, in this order, in every
// help and unknown-command reply.
var trailerWords = []string{"help", "prompt", "quit"}

// isTrailer reports whether c is one of the trailer commands.
func isTrailer(c *Command) bool {
	return len(c.Words) == 1 && slices.Contains(trailerWords, c.Words[0])
}

// helpLine formats c as one line of help: the usage padded to 40 columns.
func helpLine(c *Command) string {
	return fmt.Sprintf("  %-40s: %s\n", c.Usage, c.Help)
}

// usage returns the help text (isHelp, args being the words after "help")
// or the unknown-command reply for args, listing the commands visible at
// level.
func (t *cmdTable) usage(level Level, args []string, isHelp bool) string {
	visible := make([]*Command, 0, len(t.rows))
	for _, c := range t.rows {
		if c.Level <= level {
			visible = append(visible, c)
		}
	}
	word := func(i int) string {
		if i < len(args) {
			return args[i]
		}
		return ""
	}
	// matched returns how many of the first n words of args c matches.
	matched := func(c *Command, n int) int {
		i := 0
		for ; i < n && i < maxPrefixKW; i++ {
			if i >= len(c.Words) || word(i) == "" || c.Words[i] != word(i) {
				break
			}
		}
		return i
	}

	// length: the most leading words of args that some command matches.
	length := 0
	for _, c := range visible {
		length = max(length, matched(c, maxPrefixKW))
	}

	var b strings.Builder
	switch {
	case isHelp:
		b.WriteString("The following commands are valid at this level:\n")
	case length == 0 && word(0) == "":
		b.WriteString("Unknown command. Please enter one of the following commands only:\n")
	default:
		b.WriteString("Unknown command, but maybe one of the following ones is a better match:\n")
	}

	// Words past the matching ones are compared by fingerprint; the best
	// few candidates that are not much worse than the best one are kept.
	type match struct {
		c    *Command
		dist int
	}
	var matches []match
	if word(length) != "" {
		var typed fingerprint
		typedLen := 0
		for i := length; i < maxPrefixKW && word(i) != ""; i++ {
			typed.add(word(i))
			typedLen += len(word(i))
		}
		for _, c := range visible {
			if isTrailer(c) || matched(c, length) != length {
				continue
			}
			var cand fingerprint
			total := typedLen
			for i := length; i < maxPrefixKW && i < len(c.Words); i++ {
				cand.add(c.Words[i])
				total += len(c.Words[i])
			}
			d := typed.distance(&cand)
			if d >= 5*total/2 {
				continue
			}
			// Insert keeping the order by distance; ties keep table order.
			at := len(matches)
			for at > 0 && matches[at-1].dist > d {
				at--
			}
			if at < maxMatches {
				matches = slices.Insert(matches, at, match{c, d})
				if len(matches) > maxMatches {
					matches = matches[:maxMatches]
				}
			}
		}
	}
	var entries []*Command
	if len(matches) > 0 {
		for _, m := range matches {
			if m.dist > 5*matches[0].dist/2 {
				break
			}
			entries = append(entries, m.c)
		}
	} else {
		for _, c := range visible {
			if !isTrailer(c) && matched(c, length) == length {
				entries = append(entries, c)
			}
		}
	}
	slices.SortStableFunc(entries, func(a, b *Command) int { return strings.Compare(a.Usage, b.Usage) })
	for _, c := range entries {
		b.WriteString(helpLine(c))
	}
	for _, w := range trailerWords {
		if c, n := t.find([]string{w}); c != nil && n == 1 {
			b.WriteString(helpLine(c))
		}
	}
	return b.String()
}

// fingerprint is HAProxy's word fingerprint (tools.c
// update_word_fingerprint): a 32x32 matrix counting each pair of
// consecutive character classes (letters a-z, digits, other), with the
// begin and end of each word as "other". Two fingerprints are compared by
// the sum of the absolute differences of their cells.
type fingerprint [1024]uint8

// add counts the character pairs of word.
func (fp *fingerprint) add(word string) {
	from := 28 // begin of word
	for i := 0; i < len(word); i++ {
		c := word[i]
		var to int
		switch {
		case c >= 'a' && c <= 'z':
			to = int(c-'a') + 1
		case c >= 'A' && c <= 'Z':
			to = int(c-'A') + 1
		case c >= '0' && c <= '9':
			to = 27
		default:
			to = 28
		}
		fp[32*from+to]++
		from = to
	}
	fp[32*from+28]++ // end of word
}

// distance returns the distance between two fingerprints.
func (fp *fingerprint) distance(o *fingerprint) int {
	d := 0
	for i := range fp {
		k := int(fp[i]) - int(o[i])
		if k < 0 {
			k = -k
		}
		d += k
	}
	return d
}
