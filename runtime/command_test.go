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
	// A subcommand never needs less than its row's level (help lists the
	// row from that level).
	row, _ := commandTable.find([]string{"set", "server"})
	for _, op := range setServerOps {
		if op.level < row.Level || op.level > LevelAdmin {
			t.Errorf("set server %s: level %v, row level %v", op.name, op.level, row.Level)
		}
		if got := row.levelFor([]string{"web/s1", op.name}); got != op.level {
			t.Errorf("set server web/s1 %s: needs %v, want %v", op.name, got, op.level)
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
			if want := l < c.levelFor(nil); denied != want {
				t.Errorf("%q at %s (command level %s): denied=%v, reply %q", name, l, c.Level, denied, got)
			}
		}
	}
}

// levelMatrix is fulcrum's access matrix with real arguments: the least
// level that may run each command. user reads; operator also changes
// weights and server states (the Runtime API issue's levels; HAProxy 2.6
// asks admin for them, see levelDeviations), edits ACLs and stick table
// entries and sees sessions; admin changes everything else.
var levelMatrix = []struct {
	cmd   string
	least Level
}{
	{"show stat", LevelUser},
	{"show info", LevelUser},
	{"show servers state web", LevelUser},
	{"show servers conn web", LevelUser},
	{"get weight web/s1", LevelUser},
	{"show table", LevelUser},
	{"show acl", LevelUser},

	{"set weight web/s1 100%", LevelOperator},
	{"set weight web/s1 100", LevelOperator},
	{"set server web/s1 weight 100", LevelOperator},
	{"set server web/s1 weight 100%", LevelOperator},
	{"set server web/s1 state drain", LevelOperator},
	{"set server web/s1 state maint", LevelOperator},
	{"set server web/s1 state ready", LevelOperator},
	{"set server web/s1 health up", LevelOperator},
	{"set server web/s6 agent up", LevelOperator},
	{"disable server web/s7", LevelOperator},
	{"enable server web/s1", LevelOperator},
	{"set server web/s1", LevelOperator},       // the usage reply
	{"set server web/s1 bogus", LevelOperator}, // the usage reply
	{"add acl #0 198.51.100.1", LevelOperator},
	{"del acl #0 198.51.100.1", LevelOperator},
	{"show sess", LevelOperator},
	{"show env NO_SUCH_VAR", LevelOperator},
	{"set table tbl_int key 7 data.gpc0 1", LevelOperator},
	{"clear table tbl_int key 7", LevelOperator},

	{"set server web/s1 addr 127.0.0.1", LevelAdmin},
	{"set server web/s1 addr 127.0.0.1 port 18081", LevelAdmin},
	{"set server web/s1 check-port 18081", LevelAdmin},
	{"set server web/s1 check-addr 127.0.0.1", LevelAdmin},
	{"set server web/s6 agent-addr 127.0.0.1", LevelAdmin},
	{"set server web/s6 agent-port 18090", LevelAdmin},
	{"set server web/s6 agent-send web/s6", LevelAdmin},
	{"set server web/s1 fqdn example.com", LevelAdmin},
	{"set server web/s1 ssl on", LevelAdmin},
	{"set server web/nosrv addr 127.0.0.1", LevelAdmin}, // refused before the lookup
	{"enable health web/s1", LevelAdmin},
	{"enable agent web/s6", LevelAdmin},
	{"set maxconn server web/s1 0", LevelAdmin},
	{"set maxconn frontend fe_web 500", LevelAdmin},
	{"set maxconn global 2000", LevelAdmin},
	{"shutdown sessions server web/s5", LevelAdmin},
	{"shutdown session 0x1", LevelAdmin},
}

// TestLevelMatrix: levelMatrix, at each level, through the sockets:
// refused with exactly HAProxy's "Permission denied" below the command's
// level, run (never refused, never unknown) at and above it.
func TestLevelMatrix(t *testing.T) {
	e := startEnv(t, parityConfig(t))
	for _, m := range levelMatrix {
		for _, l := range []Level{LevelUser, LevelOperator, LevelAdmin} {
			got := e.run(t, l, m.cmd)
			if l < m.least {
				if got != "Permission denied\n\n" {
					t.Errorf("%q at %s: got %q, want Permission denied (needs %s)", m.cmd, l, got, m.least)
				}
				continue
			}
			if got == "Permission denied\n\n" || strings.HasPrefix(got, "Unknown command") {
				t.Errorf("%q at %s: got %q, want it run", m.cmd, l, got)
			}
		}
	}
}

// TestSetServerUsagePerLevel: the usage reply of `set server` lists the
// subcommands the session may run, HAProxy's whole list at admin.
func TestSetServerUsagePerLevel(t *testing.T) {
	e := startEnv(t, fuzzConfig)
	for _, tt := range []struct {
		level Level
		want  string
	}{
		{LevelUser, "Permission denied\n\n"},
		{LevelOperator, "usage: set server <backend>/<server> agent | health | state | weight\n\n"},
		{LevelAdmin, "usage: set server <backend>/<server> addr | agent | agent-addr | agent-port | agent-send | check-addr | check-port | fqdn | health | ssl | state | weight\n\n"},
	} {
		if got := e.run(t, tt.level, "set server web/s1 nosuch"); got != tt.want {
			t.Errorf("at %s: got %q, want %q", tt.level, got, tt.want)
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
