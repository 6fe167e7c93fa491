package cli

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// RemoveOptions are the flags of `fulcrumctl remove`.
type RemoveOptions struct {
	// Wait drains first: the servers finish their sessions (DRAIN, then a
	// look at show stat every Poll until they have no session and no
	// queue), then go to MAINT and are deleted once `wait srv-removable`
	// says so. Without it, they go to MAINT and are deleted at once, which
	// the server refuses while a session is left.
	Wait    bool
	Timeout time.Duration // bound on the whole wait; 0 for none
	Poll    time.Duration // between two looks at show stat, default 500ms
	TTY     bool          // progress rewritten in place on one line
}

// Remove takes servers out of their backends for good: HAProxy's `del
// server`, after `set server ... state maint`. With Wait it drains them
// first and waits for their sessions to end (Drain), puts them in MAINT,
// waits on the server side for the sessions that came meanwhile (HAProxy
// 3.0's `wait <delay> srv-removable`, or show stat where the server has no
// wait command, as HAProxy 2.6), then deletes them. It returns drain
// --wait's exit codes: ExitOK, ExitTimeout when sessions are left at the
// deadline (the servers stay in DRAIN, or in MAINT once they got there),
// ExitError for an error reply.
//
// On several instances it asks once (for every member's servers), then
// removes on each member in turn; the exit code is the highest of theirs.
func Remove(c *Client, args []string, o RemoveOptions) int {
	if err := checkServerArgs(args); err != nil {
		fmt.Fprintln(c.Err, "fulcrumctl:", err)
		return exitCode(err)
	}
	ts, code := c.targets(args)
	if len(ts) > 0 && !c.Yes {
		actions := make([][]serverAction, len(ts))
		for i, t := range ts {
			actions[i] = []serverAction{{servers: t.servers, what: "remove"}}
		}
		asked := membersOf(ts)
		kept, _, failed, err := c.guard(asked, actions, "remove "+strings.Join(args, " "))
		if code = max(code, exitCode(joinFailures(failed))); err != nil {
			for _, m := range asked {
				c.stop(m, err)
			}
			return max(code, exitCode(err))
		}
		ts = slices.DeleteFunc(ts, func(t *target) bool { return !slices.Contains(kept, t.m) })
	}
	for _, t := range ts {
		code = max(code, removeOn(c, t, o))
	}
	return code
}

// removeOn removes t's servers on its member: see Remove.
func removeOn(c *Client, t *target, o RemoveOptions) int {
	// One member's client, which asks nothing (Remove asked).
	one := *c
	one.Members, one.Yes = []*Member{t.m}, true
	servers := t.servers
	start := time.Now()
	deadline := start.Add(o.Timeout)
	if o.Wait {
		// Drain prints its own progress and the timeout.
		if code := Drain(&one, servers, DrainOptions{Wait: true, Timeout: o.Timeout, Poll: o.Poll, TTY: o.TTY, quiet: true}); code != ExitOK {
			return code
		}
	}
	code := ExitOK
	if len(one.setState([]*target{{m: t.m, servers: servers}}, "maint", &code)) == 0 {
		return max(code, ExitError)
	}
	for _, s := range servers {
		if o.Wait {
			if code := waitRemovable(&one, t.m, s, deadline, o); code != ExitOK {
				return code
			}
		}
		reply, err := t.m.exec("del server " + s)
		if err != nil {
			c.fail(t.m, err)
			return exitCode(err)
		}
		if IsError(reply) {
			fmt.Fprintf(c.Err, "fulcrumctl: %s%s: %s\n", t.m.prefix(), s, strings.TrimSpace(reply))
			return ExitError
		}
	}
	msg := t.m.prefix() + strings.Join(servers, ", ") + ": removed"
	if o.Wait {
		msg += fmt.Sprintf(" after draining for %v", time.Since(start).Round(100*time.Millisecond))
	}
	fmt.Fprintln(c.Out, msg)
	return code
}

// waitRemovable waits, until deadline (none when o.Timeout is 0), for s
// in MAINT to have no session and nothing queued: the server's `wait
// srv-removable`, or show stat against a server without it.
func waitRemovable(c *Client, m *Member, s string, deadline time.Time, o RemoveOptions) int {
	left := time.Until(deadline)
	if o.Timeout <= 0 {
		left = 24 * time.Hour
	}
	ms := max(left.Milliseconds(), 1)
	reply, err := m.Sess.ExecWait(fmt.Sprintf("wait %d srv-removable %s", ms, s), left)
	if err != nil {
		c.fail(m, err)
		return exitCode(err)
	}
	switch {
	case strings.HasPrefix(reply, "Done."):
		return ExitOK
	case strings.HasPrefix(reply, "Wait delay expired."):
		fmt.Fprintf(c.Err, "fulcrumctl: %stimeout after %v: %s still has sessions; left in MAINT\n", m.prefix(), o.Timeout, s)
		return ExitTimeout
	case strings.HasPrefix(reply, "Unknown command"):
		// HAProxy before 3.0: look at show stat.
		code := Drain(c, []string{s}, DrainOptions{Wait: true, Timeout: max(time.Until(deadline), time.Millisecond),
			Poll: o.Poll, TTY: o.TTY, quiet: true, noState: true})
		if code == ExitTimeout {
			fmt.Fprintf(c.Err, "fulcrumctl: %s%s left in MAINT\n", m.prefix(), s)
		}
		return code
	}
	fmt.Fprintf(c.Err, "fulcrumctl: %s%s: %s\n", m.prefix(), s, strings.TrimSpace(reply))
	return ExitError
}
