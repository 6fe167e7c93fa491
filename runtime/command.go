package runtime

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/fulcrum-proxy/fulcrum/proxy"
	"github.com/rs/zerolog"
)

// Command is one row of the command table: the words that name it, the
// least level allowed to run it, its line in `help`, and its handler.
//
// Run receives the words that follow Words. It writes its reply to c and
// never writes the empty line that ends a reply (the dispatcher does). A
// reply error (see reply) is written as the reply; handlers never check
// the level (the dispatcher does, before Run).
type Command struct {
	Words []string // "set", "weight"
	Level Level    // the least level that may run it (and sees it in help)
	Usage string   // "set weight <bk>/<srv> <weight>[%]"
	Help  string   // "change a server's weight"
	Run   func(c *Context, args []string) error

	// LevelOf, when set, returns the level needed to run the command with
	// args (the words after Words), for a command whose subcommands need
	// different levels: `set server <b>/<s> state` is operator's, `set
	// server <b>/<s> addr` admin's. Level is then the least of them, so
	// that help lists the row from there. See (*Command).levelFor.
	LevelOf func(args []string) Level

	// unheld commands run while API.Hold holds the others: reload, which
	// takes Hold itself.
	unheld bool

	// unpaced commands are not charged to the API's CPU budget
	// (budget.go): an administrator's deliberate changes of the server
	// set (add server, del server), which automation sends by the
	// thousand and which must not wait behind the pacing meant for
	// floods of monitoring reads. They still wait while the budget is
	// overdrawn by others.
	unpaced bool
}

// levelFor returns the level needed to run c with args: Level, raised by
// LevelOf for the subcommand args name. It is never below Level.
func (c *Command) levelFor(args []string) Level {
	if c.LevelOf == nil {
		return c.Level
	}
	return max(c.Level, c.LevelOf(args))
}

// Context is what a handler works with: the proxy, the session that runs
// the command, and the reply being written (Context is an io.Writer).
type Context struct {
	Proxy *proxy.Proxy
	// Payload holds the lines sent after a command line ending in " <<",
	// up to the empty line that ends them ("" when none).
	Payload string

	api   *API
	sess  *session
	w     io.Writer
	words []string // the whole command, for change logs
}

// Write appends p to the reply.
func (c *Context) Write(p []byte) (int, error) { return c.w.Write(p) }

// Printf appends a formatted line to the reply.
func (c *Context) Printf(format string, args ...any) { fmt.Fprintf(c.w, format, args...) }

// Level returns the session's current level.
func (c *Context) Level() Level { return c.sess.level }

// Changed returns an info log event for a change made by the command,
// carrying the command as typed and the socket it came from. The caller
// adds the object, the new value and the previous one (so that an operator
// can undo it), then calls Msg.
func (c *Context) Changed() *zerolog.Event {
	return c.api.log.Info().Str("socket", c.sess.sock.name).Str("command", strings.Join(c.words, " "))
}

// replyError is a command's reply sent as is, as HAProxy's cli_err() and
// cli_msg(): the text, then a line feed unless noLF.
type replyError struct {
	msg  string
	noLF bool
}

func (e *replyError) Error() string { return e.msg }

// reply returns the error whose text msg is the command's whole reply.
func reply(msg string) error { return &replyError{msg: msg} }

// replyf is reply with formatting.
func replyf(format string, args ...any) error { return reply(fmt.Sprintf(format, args...)) }

// replyNoLF returns a reply that HAProxy sends without its own line feed,
// so that no empty line follows it (runtime-api.md 4.99). Scripts that read
// up to the empty line depend on this quirk, so it is kept.
func replyNoLF(msg string) error { return &replyError{msg: msg, noLF: true} }

// Replies shared by many commands, with HAProxy's exact texts.
var (
	errPermission    = reply("Permission denied")
	errRequireServer = reply("Require 'backend/server'.")
	errNoBackend     = reply("No such backend.")
	errNoServer      = reply("No such server.")
)

// writeError writes err as the reply: a replyError's text as is, anything
// else as an internal error line.
func writeError(w io.Writer, err error) {
	var re *replyError
	if errors.As(err, &re) {
		io.WriteString(w, re.msg)
		if !re.noLF {
			io.WriteString(w, "\n")
		}
		return
	}
	fmt.Fprintf(w, "Internal error: %v\n", err)
}

// cmdTable is every command, in table order (commands.go).
type cmdTable struct {
	rows []*Command
}

// newTable builds the table from the per-file tables. It panics on a
// duplicate command, a programming error caught by the first test.
func newTable(tables ...[]Command) *cmdTable {
	t := &cmdTable{}
	seen := map[string]bool{}
	for _, tab := range tables {
		for i := range tab {
			key := strings.Join(tab[i].Words, " ")
			if seen[key] {
				panic("runtime: duplicate command " + key)
			}
			seen[key] = true
			t.rows = append(t.rows, &tab[i])
		}
	}
	return t
}

// with returns a table with t's rows then those of tables.
func (t *cmdTable) with(tables ...[]Command) *cmdTable {
	n := newTable(tables...)
	n.rows = append(slices.Clone(t.rows), n.rows...)
	return n
}

// find returns the command named by the first words of args, the longest
// match winning, and how many words name it; nil when none does.
func (t *cmdTable) find(args []string) (*Command, int) {
	var best *Command
	for _, c := range t.rows {
		if len(c.Words) <= len(args) && slices.Equal(c.Words, args[:len(c.Words)]) {
			if best == nil || len(c.Words) > len(best.Words) {
				best = c
			}
		}
	}
	if best == nil {
		return nil, 0
	}
	return best, len(best.Words)
}
