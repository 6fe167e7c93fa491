package runtime

import (
	"slices"
	"strings"
	"testing"
)

// TestTableRows: every row names itself, has a level, a usage line and a
// help text (help is generated from them), and a handler.
func TestTableRows(t *testing.T) {
	for _, c := range commandTable.rows {
		name := strings.Join(c.Words, " ")
		switch {
		case len(c.Words) == 0:
			t.Errorf("a row has no words (usage %q)", c.Usage)
		case c.Usage == "" || c.Help == "":
			t.Errorf("%s: empty Usage or Help", name)
		case c.Level < LevelUser || c.Level > LevelAdmin:
			t.Errorf("%s: level %v", name, c.Level)
		case c.Run == nil:
			t.Errorf("%s: no handler", name)
		case !strings.HasPrefix(c.Usage, strings.Join(c.Words, " ")):
			t.Errorf("%s: usage %q does not start with the command's words", name, c.Usage)
		}
	}
}

func TestFind(t *testing.T) {
	tests := []struct {
		name  string
		words []string
		want  string // the row's words, "" = none
		n     int
	}{
		{"exact", []string{"show", "backend"}, "show backend", 2},
		{"arguments follow", []string{"get", "weight", "web/s1"}, "get weight", 2},
		{"longest row wins", []string{"show", "servers", "state", "web"}, "show servers state", 3},
		{"prefix of a row is not a command", []string{"show", "servers"}, "", 0},
		{"unknown", []string{"bogus"}, "", 0},
		{"empty", nil, "", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, n := commandTable.find(tt.words)
			got := ""
			if c != nil {
				got = strings.Join(c.Words, " ")
			}
			if got != tt.want || n != tt.n {
				t.Errorf("find(%q): got %q/%d, want %q/%d", tt.words, got, n, tt.want, tt.n)
			}
		})
	}
}

// TestHelpPerLevel: help lists exactly the rows of the session's level and
// below, sorted by usage, the help/prompt/quit trailer last.
func TestHelpPerLevel(t *testing.T) {
	for _, l := range []Level{LevelUser, LevelOperator, LevelAdmin} {
		t.Run(l.String(), func(t *testing.T) {
			lines := strings.Split(strings.TrimSuffix(commandTable.usage(l, nil, true), "\n"), "\n")
			if lines[0] != "The following commands are valid at this level:" {
				t.Fatalf("header: got %q", lines[0])
			}
			body, trailer := lines[1:len(lines)-3], lines[len(lines)-3:]
			var want []string
			for _, c := range commandTable.rows {
				if c.Level <= l && !isTrailer(c) {
					want = append(want, helpLine(c))
				}
			}
			slices.Sort(want)
			if got := strings.Join(body, "\n") + "\n"; got != strings.Join(want, "") {
				t.Errorf("got:\n%s\nwant:\n%s", got, strings.Join(want, ""))
			}
			wantTrailer := []string{
				"  help [<command>]                        : list matching or all commands",
				"  prompt                                  : toggle interactive mode with prompt",
				"  quit                                    : disconnect",
			}
			if !slices.Equal(trailer, wantTrailer) {
				t.Errorf("trailer: got %q", trailer)
			}
		})
	}
}

// TestUsageReplies: the unknown-command replies' first lines and
// suggestions, after HAProxy's cli_gen_usage_msg (errors.txt).
func TestUsageReplies(t *testing.T) {
	tests := []struct {
		name   string
		args   []string
		header string
		has    []string // usages that must be suggested
		not    []string // usages that must not
	}{
		{"empty command lists everything", nil, "Unknown command. Please enter one of the following commands only:", []string{"show backend", "set weight"}, nil},
		{"unknown word gets fuzzy matches", []string{"bogus"}, "Unknown command, but maybe one of the following ones is a better match:", nil, nil},
		{"known prefix lists its commands", []string{"show"}, "Unknown command, but maybe one of the following ones is a better match:", []string{"show backend", "show stat", "show servers state"}, []string{"get weight"}},
		{"wrong last word", []string{"set", "maxconn", "foo", "10"}, "Unknown command, but maybe one of the following ones is a better match:", []string{"set maxconn frontend", "set maxconn global"}, []string{"set weight"}},
		{"same fuzzy matches as HAProxy 2.6 for foo", []string{"foo"}, "Unknown command, but maybe one of the following ones is a better match:", []string{"show info", "user"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := commandTable.usage(LevelAdmin, tt.args, false)
			if h, _, _ := strings.Cut(got, "\n"); h != tt.header {
				t.Errorf("header: got %q, want %q", h, tt.header)
			}
			for _, u := range tt.has {
				if !strings.Contains(got, "\n  "+u) {
					t.Errorf("%q not suggested in:\n%s", u, got)
				}
			}
			for _, u := range tt.not {
				if strings.Contains(got, "\n  "+u) {
					t.Errorf("%q suggested in:\n%s", u, got)
				}
			}
			if !strings.HasSuffix(got, "  quit                                    : disconnect\n") {
				t.Errorf("no trailer in:\n%s", got)
			}
		})
	}
}

// TestPermissionMatrix: every command is refused with "Permission denied"
// below its level, by the dispatcher, and is never refused at or above it.
func TestPermissionMatrix(t *testing.T) {
	e := startEnv(t, fuzzConfig)
	for _, c := range commandTable.rows {
		name := strings.Join(c.Words, " ")
		if name == "prompt" || name == "quit" {
			continue // no reply of their own; covered by the protocol tests
		}
		for _, l := range []Level{LevelUser, LevelOperator, LevelAdmin} {
			got := e.run(t, l, name)
			denied := got == "Permission denied\n\n"
			if want := l < c.Level; denied != want {
				t.Errorf("%q at %s (command level %s): denied=%v, reply %q", name, l, c.Level, denied, got)
			}
		}
	}
}

func TestParseWeight(t *testing.T) {
	tests := []struct {
		name    string
		value   string
		initial int
		dynamic bool
		want    int
		err     string // "" = none; replies without LF end in "(no LF)"
	}{
		{"absolute", "50", 100, true, 50, ""},
		{"zero", "0", 100, true, 0, ""},
		{"max", "256", 1, true, 256, ""},
		{"percent of initial", "50%", 100, true, 50, ""},
		{"percent rounds down", "33%", 10, true, 3, ""},
		{"percent capped at 256", "1000%", 100, true, 256, ""},
		{"huge percent", "99999999999%", 100, true, 256, ""},
		{"plus sign", "+7", 100, true, 7, ""},
		{"missing", "", 100, true, 0, "Require <weight> or <weight%>."},
		{"garbage", "abc", 100, true, 0, "Empty weight string empty or preceded by garbage(no LF)"},
		{"trailing garbage", "50abc", 100, true, 0, "Trailing garbage in weight string(no LF)"},
		{"garbage after percent", "50%x", 100, true, 0, "Trailing garbage in weight string(no LF)"},
		{"out of range first", "300abc", 100, true, 0, "Absolute weight can only be between 0 and 256 inclusive."},
		{"negative", "-5", 100, true, 0, "Absolute weight can only be between 0 and 256 inclusive."},
		{"negative percent", "-5%", 100, true, 0, "Relative weight must be positive."},
		{"static: other weight", "5", 10, false, 0, "Backend is using a static LB algorithm and only accepts weights '0%' and '100%'."},
		{"static: percent", "50%", 10, false, 0, "Backend is using a static LB algorithm and only accepts weights '0%' and '100%'."},
		{"static: 0%", "0%", 10, false, 0, ""},
		{"static: 100%", "100%", 10, false, 10, ""},
		{"static: initial", "10", 10, false, 10, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseWeight(tt.value, tt.initial, tt.dynamic)
			gotErr := ""
			if err != nil {
				re := err.(*replyError)
				gotErr = re.msg
				if re.noLF {
					gotErr += "(no LF)"
				}
			}
			if got != tt.want || gotErr != tt.err {
				t.Errorf("parseWeight(%q, %d, %v): got %d %q, want %d %q", tt.value, tt.initial, tt.dynamic, got, gotErr, tt.want, tt.err)
			}
		})
	}
}
