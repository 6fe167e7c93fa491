package runtime

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestSplitLine(t *testing.T) {
	tests := []struct {
		name string
		line string
		want [][]string
	}{
		{"one command", "get weight web/s1", [][]string{{"get", "weight", "web/s1"}}},
		{"empty line is one empty command", "", [][]string{nil}},
		{"blanks only", " \t ", [][]string{nil}},
		{"tabs separate words", "show\tcli\tlevel", [][]string{{"show", "cli", "level"}}},
		{"runs of blanks", "  show   cli  level  ", [][]string{{"show", "cli", "level"}}},
		{"semicolons chain commands", "show cli level;get weight web/s2", [][]string{{"show", "cli", "level"}, {"get", "weight", "web/s2"}}},
		{"blanks around semicolons", "show cli level ; show cli level", [][]string{{"show", "cli", "level"}, {"show", "cli", "level"}}},
		{"empty command between semicolons", "a;;b", [][]string{{"a"}, nil, {"b"}}},
		{"trailing semicolon", "a;", [][]string{{"a"}, nil}},
		{"escaped space stays in the word", `show\ cli level`, [][]string{{"show cli", "level"}}},
		{"escaped semicolon stays in the word", `add map #4 k1 a\;b`, [][]string{{"add", "map", "#4", "k1", "a;b"}}},
		{"escaped backslash", `add map #4 kb a\\b`, [][]string{{"add", "map", "#4", "kb", `a\b`}}},
		{"backslash before a letter", `s\how`, [][]string{{"show"}}},
		{"lone trailing backslash", `show\`, [][]string{{"show"}}},
		{"escaped blank alone is a word", `a \  b`, [][]string{{"a", " ", "b"}}},
		{"quotes mean nothing", `show cli "level"`, [][]string{{"show", "cli", `"level"`}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := splitLine(tt.line); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("splitLine(%q): got %q, want %q", tt.line, got, tt.want)
			}
		})
	}
}

func TestSplitLineMaxWords(t *testing.T) {
	got := splitLine(strings.Repeat("w ", 100))
	if len(got) != 1 || len(got[0]) != maxWords {
		t.Errorf("got %d words, want %d", len(got[0]), maxWords)
	}
}

// escapeWord writes a word so that splitLine reads it back as is.
func escapeWord(w string) string {
	var b strings.Builder
	for i := 0; i < len(w); i++ {
		switch w[i] {
		case '\\', ';', ' ', '\t':
			b.WriteByte('\\')
		}
		b.WriteByte(w[i])
	}
	return b.String()
}

// FuzzSplitLine checks the parser's round trip: the commands and words
// read from any line, escaped and joined again, read back the same. The
// seed corpus is in testdata/fuzz/FuzzSplitLine.
func FuzzSplitLine(f *testing.F) {
	for _, s := range []string{"", "show stat", "a;b", `a\;b c\ d`, `\\`, "set weight web/s1 50%", "\t;\t"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		cmds := splitLine(line)
		if len(cmds) == 0 {
			t.Fatalf("splitLine(%q) returned no command", line)
		}
		if n := strings.Count(line, ";"); len(cmds) > n+1 {
			t.Fatalf("splitLine(%q): %d commands from %d semicolons", line, len(cmds), n)
		}
		parts := make([]string, len(cmds))
		for i, words := range cmds {
			if len(words) > maxWords {
				t.Fatalf("%d words", len(words))
			}
			esc := make([]string, len(words))
			for j, w := range words {
				if w == "" {
					t.Fatalf("splitLine(%q): empty word in %q", line, words)
				}
				esc[j] = escapeWord(w)
			}
			parts[i] = strings.Join(esc, " ")
		}
		again := splitLine(strings.Join(parts, ";"))
		if !reflect.DeepEqual(again, cmds) {
			t.Fatalf("round trip of %q: got %q, want %q", line, again, cmds)
		}
	})
}

// FuzzSession sends any line to a live admin session, followed by quit:
// the session must answer and close without panicking, whatever the line,
// and never reply to binary garbage with anything but the binary error.
func FuzzSession(f *testing.F) {
	for _, s := range []string{"help", "show stat", "set weight web/s1 50%", "prompt", "a <<", "\x00", "show servers state #1", "set server web/s1 addr ::1 port 1",
		"add server web/n1 127.0.0.1:1 weight 5 check inter 1s agent-check agent-port 2 id 9", "del server web/n1",
		"wait 10 srv-removable web/s1", "show resolvers", "set server web/s1 fqdn a.test", "show config-diff"} {
		f.Add(s)
	}
	// A short timeout: a payload left open ends quickly.
	e := startEnvOpts(f, fuzzConfig, Options{Timeout: 200 * time.Millisecond})
	e.api.waitMax.Store(int64(100 * time.Millisecond)) // a fuzzed "wait 1d" ends
	f.Fuzz(func(t *testing.T, line string) {
		if strings.ContainsAny(line, "\n") || len(line) > maxLine {
			return
		}
		got := dialRun(t, "unix", e.socks[LevelAdmin], line+"\nquit\n")
		if isBinary([]byte(strings.TrimSuffix(line, "\r"))) && got != msgBinary+"\n\n" {
			t.Fatalf("binary line %q: got %q", line, got)
		}
	})
}

const fuzzConfig = `
[[frontend]]
name = "fe"
bind = ["127.0.0.1:0"]
default_backend = "web"

[[backend]]
name = "web"

[[backend.server]]
name = "s1"
address = "127.0.0.1:18081"
weight = 10
`
