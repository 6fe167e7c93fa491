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

// Client runs command lines on the sessions of its members and prints
// the replies: the one code path of the one-shot mode, -c, commands from
// stdin and the shell, for one socket or a fleet.
//
// With one unnamed member (one socket), replies print as the server sent
// them or as tables. With named members (a fleet), each command goes to
// every member at once (at most Parallel exchanges at a time) and the
// replies print in the members' order once all have answered: tables of
// one kind merged into one with an instance column (JSON and CSV append
// an "instance" field after the server's), --raw replies each under a
// "# instance: NAME" line, anything else line by line after "NAME: ".
// Error replies and failures go to Err under the same prefix.
type Client struct {
	Members  []*Member
	Parallel int       // exchanges at once across members, <= 0: all
	Out      io.Writer // replies
	Err      io.Writer // error replies
	Format   Format    // FormatAuto renders the tables it recognises
	Colour   bool      // colour statuses in tables
	// Width returns the screen's width for tables (0: no limit). nil is 0.
	Width func() int
	// KeepGoing runs the commands after an error reply (the shell); else
	// Do stops at the first one (scripts): on a fleet, each member stops
	// at its own first failure and the others go on.
	KeepGoing bool
	// Yes takes every server of a backend out without asking (--yes).
	Yes bool
	// Confirm asks the operator a yes/no question on a terminal; nil means
	// there is none (a script): the command then needs Yes.
	Confirm func(question string) bool
}

// InPayload reports whether the server waits for payload lines (it
// answered "+ "): the next lines are sent as they are, until an empty one.
func (c *Client) InPayload() bool {
	for _, m := range c.live() {
		if m.payload {
			return true
		}
	}
	return false
}

// Live returns how many members still run commands: in a script
// (KeepGoing false), a member stops at its first failure.
func (c *Client) Live() int { return len(c.live()) }

func (c *Client) live() []*Member {
	var out []*Member
	for _, m := range c.Members {
		if m.failed == nil {
			out = append(out, m)
		}
	}
	return out
}

// Do runs the commands of one line, separated by ';', on every member,
// and prints each reply. Everything that went wrong is printed (error
// replies, unreachable sockets, refusals); the error returned says what,
// for the exit code (ExitCode): ErrReply when a command got an error
// reply, ErrRefused when the line would take a backend's last servers out
// and that was not confirmed (nothing sent), or the Session's error
// (ErrUnreachable when the socket is gone). On a fleet it holds the
// failure of each member it concerns.
func (c *Client) Do(line string) error {
	ms := c.live()
	if len(ms) == 0 {
		return nil
	}
	if c.InPayload() {
		var waiting []*Member
		for _, m := range ms {
			if m.payload {
				waiting = append(waiting, m)
			}
		}
		return joinFailures(c.exec(waiting, line, c.Format))
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
	var failed []error
	if len(targets) > 0 && !yes {
		actions := make([][]serverAction, len(ms))
		for i := range ms {
			actions[i] = targets
		}
		asked := ms
		var err error
		ms, _, failed, err = c.guard(ms, actions, strings.TrimSpace(line))
		if err != nil {
			if !c.KeepGoing { // a script stops at a refusal too
				for _, m := range asked {
					m.failed = err
				}
			}
			return err
		}
	}
	for _, cmd := range cmds {
		errs := c.exec(ms, cmd.text, cmd.format)
		failed = append(failed, errs...)
		ms = without(ms, errs, c.KeepGoing)
		if len(ms) == 0 {
			break
		}
	}
	return joinFailures(failed)
}

// without returns ms without the members that failed (errs holds
// memberErrors): all of them in a script, those whose session failed when
// keepGoing (an error reply does not stop the shell's line).
func without(ms []*Member, errs []error, keepGoing bool) []*Member {
	drop := map[*Member]bool{}
	for _, err := range errs {
		var me *memberError
		if errors.As(err, &me) && (!keepGoing || !errors.Is(err, ErrReply)) {
			drop[me.m] = true
		}
	}
	var out []*Member
	for _, m := range ms {
		if !drop[m] {
			out = append(out, m)
		}
	}
	return out
}

// reply is a member's answer that is not an error.
type reply struct {
	m    *Member
	text string
}

// exec sends one command to every member of ms at once, prints the
// replies (print) and the failures, and returns the failures as
// memberErrors. In a script, a member that failed runs nothing more.
func (c *Client) exec(ms []*Member, cmd string, f Format) []error {
	texts := make([]string, len(ms))
	errs := make([]error, len(ms))
	each(ms, c.Parallel, func(i int, m *Member) { texts[i], errs[i] = m.exec(cmd) })
	var ok []reply
	var failed []error
	for i, m := range ms {
		m.payload = false
		switch {
		case errs[i] != nil:
			c.fail(m, errs[i])
			failed = append(failed, &memberError{m, errs[i]})
			continue
		case texts[i] == "+ ":
			m.payload = true
		case IsError(texts[i]):
			fmt.Fprint(c.Err, prefixLines(m.prefix(), texts[i]))
			failed = append(failed, &memberError{m, ErrReply})
			if !c.KeepGoing {
				m.failed = ErrReply
			}
		default:
			ok = append(ok, reply{m, texts[i]})
		}
	}
	c.print(cmd, ok, f)
	return failed
}

// fail prints what went wrong with m's session ("fulcrumctl: NAME:
// cannot reach the socket..."), and in a script stops m.
func (c *Client) fail(m *Member, err error) {
	msg := "fulcrumctl: " + m.prefix() + err.Error()
	if c.KeepGoing && isUnreachable(err) {
		msg += " (retrying at the next command)"
	}
	fmt.Fprintln(c.Err, msg)
	if !c.KeepGoing {
		m.failed = err
	}
}

// print prints the replies to one command in format f: one unnamed
// member's as they are (or as a table), a fleet's merged (see Client).
func (c *Client) print(cmd string, rs []reply, f Format) {
	if len(rs) == 0 {
		return
	}
	if len(rs) == 1 && rs[0].m.Name == "" {
		c.printOne(cmd, rs[0].text, f)
		return
	}
	merged := mergeReplies(cmd, rs)
	switch {
	case f == FormatRaw:
		for _, r := range rs {
			fmt.Fprintf(c.Out, "# instance: %s\n%s\n", r.m.Name, withNewline(r.text))
		}
	case f == FormatJSON && merged != nil:
		c.Out.Write(merged.JSON())
	case f == FormatJSON:
		c.Out.Write(fleetJSON(cmd, rs))
	case f == FormatCSV && merged != nil:
		io.WriteString(c.Out, merged.CSV())
	case merged != nil:
		fmt.Fprint(c.Out, merged.Render(c.Colour, c.width()))
	default:
		for _, r := range rs {
			text := r.text
			if h, ok := ParseHistogram(r.text); ok && f != FormatCSV { // show histogram (histogram.go)
				text = h.Render(max(c.width()-len(r.m.prefix()), 0))
			} else if t, ok := ParseReply(cmd, r.text); ok {
				text = t.Render(c.Colour, max(c.width()-len(r.m.prefix()), 0))
			}
			fmt.Fprint(c.Out, prefixLines(r.m.prefix(), text))
		}
	}
}

// printOne prints one socket's reply in format f.
func (c *Client) printOne(cmd, reply string, f Format) {
	switch f {
	case FormatRaw:
		fmt.Fprint(c.Out, reply)
	case FormatJSON:
		c.Out.Write(ReplyJSON(cmd, reply))
	default:
		if h, ok := ParseHistogram(reply); ok && f != FormatCSV { // show histogram (histogram.go)
			fmt.Fprint(c.Out, h.Render(c.width()))
			return
		}
		t, ok := ParseReply(cmd, reply)
		switch {
		case ok && f == FormatCSV:
			fmt.Fprint(c.Out, t.CSV())
		case ok:
			fmt.Fprint(c.Out, t.Render(c.Colour, c.width()))
		default:
			fmt.Fprint(c.Out, withNewline(reply))
		}
	}
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
// error, not confirmed); on a fleet, the highest of its members'.
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
// (status UP or "no check", weight above 0), read from m's show stat.
func inService(m *Member) (map[string][]string, map[string][]string, error) {
	reply, err := m.exec("show stat")
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

// emptied returns, sorted, the backends of which actions take every
// server still in service out, as m's show stat reads now. Servers
// already out of service do not count: draining the last of three is
// asked, a second drain of a drained server is not.
func emptied(m *Member, actions []serverAction) ([]string, error) {
	up, all, err := inService(m)
	if err != nil {
		return nil, err
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
	var names []string
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
			names = append(names, b)
		}
	}
	sort.Strings(names)
	return names, nil
}

// guard asks before a command line that takes every server still in
// service of a backend out of it, on any member (actions[i] are what the
// line does on ms[i]): on a terminal it asks once for the whole fleet
// (Confirm), in a script it refuses with ErrRefused (--yes allows it);
// either way nothing is sent on a refusal. A member whose show stat
// cannot be read is left out, its failure printed and returned; the
// others are returned with their actions.
func (c *Client) guard(ms []*Member, actions [][]serverAction, line string) ([]*Member, [][]serverAction, []error, error) {
	gone := make([][]string, len(ms))
	errs := make([]error, len(ms))
	each(ms, c.Parallel, func(i int, m *Member) { gone[i], errs[i] = emptied(m, actions[i]) })
	type group struct {
		what  string
		names []string
	}
	var groups []*group
	var keep []*Member
	var keepActions [][]serverAction
	var failed []error
	for i, m := range ms {
		if errs[i] != nil {
			c.fail(m, errs[i])
			failed = append(failed, &memberError{m, errs[i]})
			continue
		}
		keep = append(keep, m)
		keepActions = append(keepActions, actions[i])
		if len(gone[i]) == 0 {
			continue
		}
		what := "backend " + gone[i][0]
		if len(gone[i]) > 1 {
			what = "backends " + strings.Join(gone[i], ", ")
		}
		var g *group
		for _, h := range groups {
			if h.what == what {
				g = h
			}
		}
		if g == nil {
			g = &group{what: what}
			groups = append(groups, g)
		}
		g.names = append(g.names, m.Name)
	}
	if len(groups) == 0 {
		return keep, keepActions, failed, nil
	}
	question := fmt.Sprintf("%q takes every server of %s out of service", line, groups[0].what)
	if groups[0].names[0] != "" {
		question += " on " + strings.Join(groups[0].names, ", ")
		for _, g := range groups[1:] {
			question += ", and of " + g.what + " on " + strings.Join(g.names, ", ")
		}
	}
	if c.Confirm == nil {
		fmt.Fprintf(c.Err, "fulcrumctl: not done: %s; add --yes to do it anyway\n", question)
		return nil, nil, failed, ErrRefused
	}
	if !c.Confirm(question + "; go on? [y/N] ") {
		fmt.Fprintln(c.Err, "fulcrumctl: cancelled, nothing sent")
		return nil, nil, failed, ErrRefused
	}
	return keep, keepActions, failed, nil
}
