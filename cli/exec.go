package cli

import (
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
)

// ErrReply is returned by Client.Do when the server answered a command
// with one of its error messages (see IsError).
var ErrReply = errors.New("error reply")

// ErrRefused is returned when a command that would take every server of
// a backend out of service was not confirmed: nothing was sent.
var ErrRefused = errors.New("not confirmed")

// ErrUsage wraps a command line fulcrumctl itself cannot read (a bad
// flag value, a missing argument): nothing was sent.
var ErrUsage = errors.New("usage")

// Client runs command lines on a Session and prints the replies: the one
// code path of the one-shot mode, -c, commands from stdin and the shell.
type Client struct {
	Sess   *Session
	Out    io.Writer // replies
	Err    io.Writer // error replies
	Format Format    // FormatAuto renders the tables it recognises
	Colour bool      // colour statuses in tables
	// Width returns the screen's width for tables (0: no limit). nil is 0.
	Width func() int
	// KeepGoing runs the commands after an error reply (the shell); else
	// Do stops at the first one (scripts).
	KeepGoing bool
	// Yes takes every server of a backend out without asking (--yes).
	Yes bool
	// Confirm asks the operator a yes/no question on a terminal; nil means
	// there is none (a script): the command then needs Yes.
	Confirm func(question string) bool

	payload bool // the server is reading the lines of a payload
}

// InPayload reports whether the server waits for payload lines (it
// answered "+ "): the next lines are sent as they are, until an empty one.
func (c *Client) InPayload() bool { return c.payload }

// Do runs the commands of one line, separated by ';', and prints each
// reply. It returns ErrReply if a command got an error reply (printed on
// Err), ErrRefused when the line would take a backend's last servers out
// and that was not confirmed, or the Session's error (ErrUnreachable when
// the socket is gone).
func (c *Client) Do(line string) error {
	if c.payload {
		reply, err := c.Sess.Exec(line)
		if err != nil {
			c.payload = false
			return err
		}
		return c.print(line, reply, c.Format)
	}
	type command struct {
		text   string
		format Format
	}
	var cmds []command
	yes := c.Yes
	var targets []serverAction
	for _, text := range SplitCommands(line) {
		text, f, y := cutFlags(text, c.Format)
		yes = yes || y
		cmds = append(cmds, command{text, f})
		if a, ok := takesOut(text); ok {
			targets = append(targets, a)
		}
	}
	if len(targets) > 0 && !yes {
		if err := c.guard(targets, strings.TrimSpace(line)); err != nil {
			return err
		}
	}
	var failed error
	for _, cmd := range cmds {
		if err := c.run(cmd.text, cmd.format); err != nil {
			if !errors.Is(err, ErrReply) {
				return err
			}
			failed = err
			if !c.KeepGoing {
				return err
			}
		}
	}
	return failed
}

// run sends one command and prints its reply.
func (c *Client) run(cmd string, f Format) error {
	reply, err := c.Sess.Exec(cmd)
	if err != nil {
		return err
	}
	return c.print(cmd, reply, f)
}

func (c *Client) print(cmd, reply string, f Format) error {
	if reply == "+ " {
		c.payload = true
		return nil
	}
	c.payload = false
	if IsError(reply) {
		fmt.Fprint(c.Err, withNewline(reply))
		return ErrReply
	}
	switch f {
	case FormatRaw:
		fmt.Fprint(c.Out, reply)
	case FormatJSON:
		c.Out.Write(ReplyJSON(cmd, reply))
	default:
		if t, ok := ParseReply(cmd, reply); ok {
			fmt.Fprint(c.Out, t.Render(c.Colour, c.width()))
		} else {
			fmt.Fprint(c.Out, withNewline(reply))
		}
	}
	return nil
}

// width is the screen's width, 0 for no limit.
func (c *Client) width() int {
	if c.Width == nil {
		return 0
	}
	return c.Width()
}

func withNewline(s string) string {
	if s == "" || strings.HasSuffix(s, "\n") {
		return s
	}
	return s + "\n"
}

func isUnreachable(err error) bool { return errors.Is(err, ErrUnreachable) }

// ExitCode maps an error of Client.Do to fulcrumctl's exit code: 0, 1 for
// an error reply, 2 when nothing was sent (socket unreachable, usage
// error, not confirmed).
func ExitCode(err error) int { return exitCode(err) }

// serverAction is a command that takes servers out of service.
type serverAction struct {
	servers []string // "backend/server", or "backend/*"
	what    string   // "drain", "maint"...
}

// takesOut reports whether cmd takes a server out of service: a state of
// drain or maint, health down or stopping, agent down, a weight of 0, or
// disable server.
func takesOut(cmd string) (serverAction, bool) {
	w := strings.Fields(cmd)
	switch {
	case len(w) == 3 && w[0] == "disable" && w[1] == "server":
		return serverAction{[]string{w[2]}, "maint"}, true
	case len(w) == 5 && w[0] == "set" && w[1] == "server":
		switch {
		case w[3] == "state" && (w[4] == "drain" || w[4] == "maint"),
			w[3] == "health" && (w[4] == "down" || w[4] == "stopping"),
			w[3] == "agent" && w[4] == "down",
			w[3] == "weight" && isZeroWeight(w[4]):
			return serverAction{[]string{w[2]}, w[3] + " " + w[4]}, true
		}
	case len(w) == 4 && w[0] == "set" && w[1] == "weight" && isZeroWeight(w[3]):
		return serverAction{[]string{w[2]}, "weight 0"}, true
	}
	return serverAction{}, false
}

func isZeroWeight(v string) bool { return strings.TrimSuffix(v, "%") == "0" }

// inService returns, per backend, the servers that take traffic now
// (status UP or "no check", weight above 0), read from show stat.
func inService(s *Session) (map[string][]string, map[string][]string, error) {
	reply, err := s.Exec("show stat")
	if err != nil {
		return nil, nil, err
	}
	t, ok := ParseTable(reply)
	if !ok || t.Kind != "stat" {
		return nil, nil, fmt.Errorf("show stat: unexpected reply %q", firstLine(reply))
	}
	up, all := map[string][]string{}, map[string][]string{}
	for _, r := range t.Rows {
		px, sv := t.Get(r, "pxname"), t.Get(r, "svname")
		if sv == "FRONTEND" || sv == "BACKEND" {
			continue
		}
		all[px] = append(all[px], sv)
		st := t.Get(r, "status")
		if (strings.HasPrefix(st, "UP") || st == "no check") && t.Get(r, "weight") != "0" {
			up[px] = append(up[px], sv)
		}
	}
	return up, all, nil
}

// guard asks before a command line that takes every server still in
// service of a backend out of it: on a terminal it asks (Confirm), in a
// script it refuses with ErrRefused (--yes allows it). Servers already
// out of service do not count: draining the last of three is asked, a
// second drain of a drained server is not.
func (c *Client) guard(actions []serverAction, line string) error {
	up, all, err := inService(c.Sess)
	if err != nil {
		return err
	}
	out := map[string]map[string]bool{}
	for _, a := range actions {
		for _, bs := range a.servers {
			b, s, ok := strings.Cut(bs, "/")
			if !ok {
				continue
			}
			if out[b] == nil {
				out[b] = map[string]bool{}
			}
			if s == "*" {
				for _, name := range all[b] {
					out[b][name] = true
				}
				continue
			}
			out[b][s] = true
		}
	}
	var emptied []string
	for b, gone := range out {
		if len(up[b]) == 0 {
			continue // nothing in service to lose
		}
		left := 0
		for _, s := range up[b] {
			if !gone[s] {
				left++
			}
		}
		if left == 0 {
			emptied = append(emptied, b)
		}
	}
	if len(emptied) == 0 {
		return nil
	}
	sort.Strings(emptied)
	what := "backend " + emptied[0]
	if len(emptied) > 1 {
		what = "backends " + strings.Join(emptied, ", ")
	}
	question := fmt.Sprintf("%q takes every server of %s out of service", line, what)
	if c.Confirm == nil {
		fmt.Fprintf(c.Err, "fulcrumctl: not done: %s; add --yes to do it anyway\n", question)
		return ErrRefused
	}
	if !c.Confirm(question + "; go on? [y/N] ") {
		fmt.Fprintln(c.Err, "fulcrumctl: cancelled, nothing sent")
		return ErrRefused
	}
	return nil
}
