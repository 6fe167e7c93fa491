package runtime

// The command-line grammar, as HAProxy's CLI reads it (runtime-api.md 1.2):
// a line holds commands separated by ';'; a command is words separated by
// spaces or tabs; a backslash makes the next character literal, so `\;`,
// `\ ` and `\\` put a semicolon, a space or a backslash inside a word.
// Quotes mean nothing. Blanks around ';' are ignored, and an empty command
// (an empty line, or nothing between two ';') is kept as a command with no
// words: it gets the unknown-command reply.

// maxWords bounds the words of one command (HAProxy's MAX_CLI_ARGS);
// further words are dropped, as HAProxy ignores them.
const maxWords = 64

// splitLine splits one line (without its line feed) into commands, each a
// list of words. It never fails: every byte sequence has a reading.
func splitLine(line string) [][]string {
	var (
		cmds  [][]string
		words []string
		word  []byte
		in    bool // inside a word
	)
	endWord := func() {
		if in {
			if len(words) < maxWords {
				words = append(words, string(word))
			}
			word, in = word[:0], false
		}
	}
	for i := 0; i < len(line); i++ {
		switch c := line[i]; c {
		case '\\':
			// A backslash ending the line escapes nothing and is dropped;
			// alone it must not make an empty word (found by FuzzSplitLine).
			if i+1 < len(line) {
				in = true
				i++
				word = append(word, line[i])
			}
		case ' ', '\t':
			endWord()
		case ';':
			endWord()
			cmds = append(cmds, words)
			words = nil
		default:
			in = true
			word = append(word, c)
		}
	}
	endWord()
	return append(cmds, words)
}
