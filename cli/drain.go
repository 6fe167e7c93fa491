package cli

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Exit codes of the deploy helpers (and of fulcrumctl as a whole).
const (
	ExitOK    = 0
	ExitError = 1 // an error reply: the server refused a command
	// ExitUsage: nothing was sent. A usage error (a missing argument, a
	// bad flag value), a command that would take a backend's last servers
	// out without --yes, or a socket that cannot be reached
	// (ExitUnreachable).
	ExitUsage       = 2
	ExitUnreachable = 2
	ExitTimeout     = 3 // drain --wait: sessions left at the deadline
)

// ParseWait reads a duration flag: a Go duration ("60s", "1m30s") or a
// number of seconds ("5"). The error is one line, for a usage message.
func ParseWait(s string) (time.Duration, error) {
	if n, err := strconv.ParseFloat(s, 64); err == nil && n >= 0 && n < 1e9 {
		return time.Duration(n * float64(time.Second)), nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("%w: %q is not a duration (60s, 1m30s, or 60 for seconds)", ErrUsage, s)
	}
	return d, nil
}

// DrainOptions are the flags of `fulcrumctl drain`.
type DrainOptions struct {
	Wait       bool          // wait until no session and no queue is left
	Timeout    time.Duration // bound on the wait
	MaintAfter bool          // then set MAINT (implies Wait)
	Poll       time.Duration // between two looks at show stat, default 500ms
	TTY        bool          // progress rewritten in place on one line

	// For Remove: quiet prints no final line; noState only waits (the
	// servers' state is set already).
	quiet, noState bool
}

// checkServerArgs checks, before anything is sent, that each argument
// reads BACKEND/SERVER or BACKEND/*.
func checkServerArgs(args []string) error {
	for _, a := range args {
		if b, srv, ok := strings.Cut(a, "/"); !ok || b == "" || srv == "" {
			return fmt.Errorf("%w: %q: expected BACKEND/SERVER or BACKEND/*", ErrUsage, a)
		}
	}
	return nil
}

// Expand resolves "B/S" and "B/*" arguments into backend/server names,
// reading the servers of B from the server (show stat, else show servers
// state). An unknown backend in "B/*" is an error.
func Expand(s *Session, args []string) ([]string, error) {
	if err := checkServerArgs(args); err != nil {
		return nil, err
	}
	var out []string
	live := &names{s: s}
	for _, a := range args {
		b, srv, _ := strings.Cut(a, "/")
		if srv != "*" {
			out = append(out, a)
			continue
		}
		if len(live.Servers(b)) == 0 {
			return nil, fmt.Errorf("%s: No such backend (or it has no server).", a)
		}
		for _, name := range live.Servers(b) {
			out = append(out, b+"/"+name)
		}
	}
	return out, nil
}

// target is a member and the servers that drain's or ready's arguments
// name on it (B/* may differ from one instance to another).
type target struct {
	m       *Member
	servers []string
	took    time.Duration // how long it took to drain
}

func membersOf(ts []*target) []*Member {
	ms := make([]*Member, len(ts))
	for i, t := range ts {
		ms[i] = t.m
	}
	return ms
}

// stop ends a member's script at a failure (not in the shell).
func (c *Client) stop(m *Member, err error) {
	if !c.KeepGoing {
		m.failed = err
	}
}

// targets resolves args on every live member at once (Expand) and
// returns the members where it worked, printing the failures of the
// others; code is the highest exit code of those.
func (c *Client) targets(args []string) (ts []*target, code int) {
	ms := c.live()
	servers := make([][]string, len(ms))
	errs := make([]error, len(ms))
	each(ms, c.Parallel, func(i int, m *Member) {
		if err := m.dialErr; err != nil {
			m.dialErr, errs[i] = nil, err
			return
		}
		servers[i], errs[i] = Expand(m.Sess, args)
	})
	for i, m := range ms {
		if errs[i] != nil {
			c.fail(m, errs[i])
			code = max(code, exitCode(errs[i]))
			continue
		}
		ts = append(ts, &target{m: m, servers: servers[i]})
	}
	return ts, code
}

// setState sends `set server S state STATE` for each server of each
// target (asked for as a whole beforehand: each command is not asked
// about again), the targets at once, and returns those where every
// command worked. The failures of the others are printed; code is raised
// to theirs.
func (c *Client) setState(ts []*target, state string, code *int) []*target {
	out := make([]string, len(ts))
	errs := make([]error, len(ts))
	each(membersOf(ts), c.Parallel, func(i int, m *Member) {
		var b strings.Builder
		defer func() { out[i] = b.String() }()
		for _, s := range ts[i].servers {
			reply, err := m.exec("set server " + s + " state " + state)
			switch {
			case err != nil:
				errs[i] = err
				return
			case IsError(reply):
				b.WriteString(prefixLines(m.prefix(), reply))
				b.WriteString("fulcrumctl: " + m.prefix() + s + ": could not set " + state + "\n")
				errs[i] = ErrReply
				return
			case reply != "":
				b.WriteString(prefixLines(m.prefix(), reply))
			}
		}
	})
	var ok []*target
	for i, t := range ts {
		switch {
		case errors.Is(errs[i], ErrReply):
			fmt.Fprint(c.Err, out[i])
			c.stop(t.m, ErrReply)
		case errs[i] != nil:
			fmt.Fprint(c.Out, out[i])
			c.fail(t.m, errs[i])
		default:
			fmt.Fprint(c.Out, out[i])
			ok = append(ok, t)
			continue
		}
		*code = max(*code, exitCode(errs[i]))
	}
	return ok
}

// Ready puts servers back in READY on every member. It returns the exit
// code: the highest of the members'.
func Ready(c *Client, args []string) int {
	if err := checkServerArgs(args); err != nil {
		fmt.Fprintln(c.Err, "fulcrumctl:", err)
		return exitCode(err)
	}
	ts, code := c.targets(args)
	for _, t := range c.setState(ts, "ready", &code) {
		fmt.Fprintf(c.Out, "%s%s: READY\n", t.m.prefix(), strings.Join(t.servers, ", "))
	}
	return code
}

// Drain puts servers in DRAIN on every member and, with Wait, polls show
// stat on each until each server has no session (scur) and no queued
// request (qcur), printing a progress line on c.Err. One deadline bounds
// the whole wait. It returns the exit code, the highest of the members':
// ExitOK when every member's servers drained, ExitTimeout when sessions
// are left on some at the deadline (the servers then stay in DRAIN,
// everywhere: MaintAfter sets MAINT only after a wait that did not time
// out). A member that fails is named and does not stop the others.
func Drain(c *Client, args []string, o DrainOptions) int {
	if err := checkServerArgs(args); err != nil {
		fmt.Fprintln(c.Err, "fulcrumctl:", err)
		return exitCode(err)
	}
	ts, code := c.targets(args)
	if len(ts) > 0 && !c.Yes && !o.noState {
		actions := make([][]serverAction, len(ts))
		for i, t := range ts {
			actions[i] = []serverAction{{servers: t.servers, what: "drain"}}
		}
		asked := membersOf(ts)
		kept, _, failed, err := c.guard(asked, actions, "drain "+strings.Join(args, " "))
		if code = max(code, exitCode(joinFailures(failed))); err != nil {
			for _, m := range asked {
				c.stop(m, err)
			}
			return max(code, exitCode(err))
		}
		ts = slices.DeleteFunc(ts, func(t *target) bool { return !slices.Contains(kept, t.m) })
	}
	if !o.noState {
		ts = c.setState(ts, "drain", &code)
	}
	if !o.Wait && !o.MaintAfter {
		for _, t := range ts {
			fmt.Fprintf(c.Out, "%s%s: DRAIN\n", t.m.prefix(), strings.Join(t.servers, ", "))
		}
		return code
	}
	if o.Poll <= 0 {
		o.Poll = 500 * time.Millisecond
	}
	start := time.Now()
	deadline := start.Add(o.Timeout)
	waiting, last := ts, ""
	for len(waiting) > 0 {
		lefts := make([]string, len(waiting))
		totals := make([]int, len(waiting))
		errs := make([]error, len(waiting))
		each(membersOf(waiting), c.Parallel, func(i int, m *Member) {
			lefts[i], totals[i], errs[i] = pending(m, waiting[i].servers)
		})
		var still []*target
		var parts []string
		for i, t := range waiting {
			switch {
			case errs[i] != nil:
				fmt.Fprint(c.Err, "\n")
				c.fail(t.m, errs[i])
				code = max(code, exitCode(errs[i]))
				t.m = nil // neither drained nor waited for
			case totals[i] == 0:
				t.took = time.Since(start)
			default:
				still = append(still, t)
				parts = append(parts, t.m.prefix()+lefts[i])
			}
		}
		waiting = still
		if len(waiting) == 0 {
			if o.TTY && last != "" {
				fmt.Fprint(c.Err, "\r\x1b[K")
			}
			break
		}
		left := strings.Join(parts, "; ")
		// Issue 23: the deadline is the deadline, not its rounding (a wait
		// of 10s gave up at 9.5s).
		remaining := time.Until(deadline)
		if remaining <= 0 && o.Timeout > 0 {
			if o.TTY {
				fmt.Fprint(c.Err, "\r\x1b[K")
			}
			for _, t := range ts {
				if t.m != nil && !slices.Contains(waiting, t) && !o.quiet {
					fmt.Fprintf(c.Out, "%s%s: drained in %v\n", t.m.prefix(), strings.Join(t.servers, ", "), t.took.Round(100*time.Millisecond))
				}
			}
			if o.noState {
				fmt.Fprintf(c.Err, "fulcrumctl: timeout after %v: %s\n", o.Timeout, left)
			} else {
				fmt.Fprintf(c.Err, "fulcrumctl: timeout after %v: %s; left in DRAIN\n", o.Timeout, left)
			}
			for _, t := range waiting {
				c.stop(t.m, errDrainTimeout)
			}
			return max(code, ExitTimeout)
		}
		line := "draining: " + left
		if o.Timeout > 0 {
			line += fmt.Sprintf(" (%v left)", remaining.Round(time.Second))
		}
		switch {
		case o.TTY:
			fmt.Fprint(c.Err, "\r\x1b[K"+line)
		case left != last:
			fmt.Fprintln(c.Err, line)
		}
		last = left
		wait := o.Poll
		if o.Timeout > 0 && time.Until(deadline) < wait {
			wait = max(time.Until(deadline), time.Millisecond)
		}
		time.Sleep(wait) // the polling period, not a synchronisation
	}
	ts = slices.DeleteFunc(ts, func(t *target) bool { return t.m == nil })
	suffix := ""
	if o.MaintAfter {
		ts = c.setState(ts, "maint", &code)
		suffix = ", now in MAINT"
	}
	for _, t := range ts {
		if !o.quiet {
			fmt.Fprintf(c.Out, "%s%s: drained in %v%s\n", t.m.prefix(), strings.Join(t.servers, ", "), t.took.Round(100*time.Millisecond), suffix)
		}
	}
	return code
}

// errDrainTimeout stops a member whose servers did not drain in time.
var errDrainTimeout = errors.New("drain timeout")

// pending reads scur and qcur of servers from show stat and returns a
// summary of those not yet empty ("web/s1 3 sessions, 1 queued") and the
// total left.
func pending(m *Member, servers []string) (string, int, error) {
	reply, err := m.exec("show stat")
	if err != nil {
		return "", 0, err
	}
	t, ok := ParseTable(reply)
	if !ok || t.Kind != "stat" {
		return "", 0, fmt.Errorf("show stat: unexpected reply %q", firstLine(reply))
	}
	want := map[string]bool{}
	for _, s := range servers {
		want[s] = true
	}
	var parts []string
	total := 0
	for _, r := range t.Rows {
		name := t.Get(r, "pxname") + "/" + t.Get(r, "svname")
		if !want[name] {
			continue
		}
		scur, _ := strconv.Atoi(t.Get(r, "scur"))
		qcur, _ := strconv.Atoi(t.Get(r, "qcur"))
		if scur+qcur > 0 {
			parts = append(parts, fmt.Sprintf("%s %d sessions, %d queued", name, scur, qcur))
			total += scur + qcur
		}
	}
	return strings.Join(parts, "; "), total, nil
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}

// exitCode maps an error to fulcrumctl's exit code; a fleet's is the
// highest of its members'.
func exitCode(err error) int {
	if fe, ok := err.(*fleetError); ok {
		code := ExitOK
		for _, e := range fe.errs {
			code = max(code, exitCode(e))
		}
		return code
	}
	switch {
	case err == nil:
		return ExitOK
	case errors.Is(err, errDrainTimeout):
		return ExitTimeout
	case isUnreachable(err):
		return ExitUnreachable
	case errors.Is(err, ErrUsage), errors.Is(err, ErrRefused):
		return ExitUsage
	}
	return ExitError
}
