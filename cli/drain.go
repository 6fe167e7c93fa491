package cli

import (
	"errors"
	"fmt"
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
}

// Expand resolves "B/S" and "B/*" arguments into backend/server names,
// reading the servers of B from the server (show stat, else show servers
// state). An unknown backend in "B/*" is an error.
func Expand(s *Session, args []string) ([]string, error) {
	var out []string
	live := &names{s: s}
	for _, a := range args {
		b, srv, ok := strings.Cut(a, "/")
		if !ok || b == "" || srv == "" {
			return nil, fmt.Errorf("%w: %q: expected BACKEND/SERVER or BACKEND/*", ErrUsage, a)
		}
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

// setState sends `set server S state STATE` to each server (asked for as
// a whole beforehand: each command is not asked about again).
func setState(c *Client, servers []string, state string) int {
	for _, s := range servers {
		if err := c.run("set server "+s+" state "+state, c.Format); err != nil {
			if err == ErrReply {
				fmt.Fprintf(c.Err, "fulcrumctl: %s: could not set %s\n", s, state)
				return ExitError
			}
			fmt.Fprintln(c.Err, "fulcrumctl:", err)
			return exitCode(err)
		}
	}
	return ExitOK
}

// Ready puts servers back in READY. It returns the exit code.
func Ready(c *Client, args []string) int {
	servers, err := Expand(c.Sess, args)
	if err != nil {
		fmt.Fprintln(c.Err, "fulcrumctl:", err)
		return exitCode(err)
	}
	if code := setState(c, servers, "ready"); code != ExitOK {
		return code
	}
	fmt.Fprintf(c.Out, "%s: READY\n", strings.Join(servers, ", "))
	return ExitOK
}

// Drain puts servers in DRAIN and, with Wait, polls show stat until each
// has no session (scur) and no queued request (qcur), printing a progress
// line on c.Err. It returns ExitOK, or ExitTimeout when sessions are left
// at the deadline: the servers then stay in DRAIN.
func Drain(c *Client, args []string, o DrainOptions) int {
	servers, err := Expand(c.Sess, args)
	if err != nil {
		fmt.Fprintln(c.Err, "fulcrumctl:", err)
		return exitCode(err)
	}
	if !c.Yes {
		what := "drain " + strings.Join(args, " ")
		actions := []serverAction{{servers: servers, what: "drain"}}
		if err := c.guard(actions, what); err != nil {
			if !errors.Is(err, ErrRefused) {
				fmt.Fprintln(c.Err, "fulcrumctl:", err)
			}
			return exitCode(err)
		}
	}
	if code := setState(c, servers, "drain"); code != ExitOK {
		return code
	}
	if !o.Wait && !o.MaintAfter {
		fmt.Fprintf(c.Out, "%s: DRAIN\n", strings.Join(servers, ", "))
		return ExitOK
	}
	if o.Poll <= 0 {
		o.Poll = 500 * time.Millisecond
	}
	start := time.Now()
	deadline := start.Add(o.Timeout)
	last := ""
	for {
		left, total, err := pending(c.Sess, servers)
		if err != nil {
			fmt.Fprintln(c.Err, "\nfulcrumctl:", err)
			return exitCode(err)
		}
		if total == 0 {
			if o.TTY && last != "" {
				fmt.Fprint(c.Err, "\r\x1b[K")
			}
			break
		}
		// Issue 23: the deadline is the deadline, not its rounding (a wait
		// of 10s gave up at 9.5s).
		remaining := time.Until(deadline)
		if remaining <= 0 && o.Timeout > 0 {
			if o.TTY {
				fmt.Fprint(c.Err, "\r\x1b[K")
			}
			fmt.Fprintf(c.Err, "fulcrumctl: timeout after %v: %s; left in DRAIN\n", o.Timeout, left)
			return ExitTimeout
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
	msg := fmt.Sprintf("%s: drained in %v", strings.Join(servers, ", "), time.Since(start).Round(100*time.Millisecond))
	if o.MaintAfter {
		if code := setState(c, servers, "maint"); code != ExitOK {
			return code
		}
		msg += ", now in MAINT"
	}
	fmt.Fprintln(c.Out, msg)
	return ExitOK
}

// pending reads scur and qcur of servers from show stat and returns a
// summary of those not yet empty ("web/s1 3 sessions, 1 queued") and the
// total left.
func pending(s *Session, servers []string) (string, int, error) {
	reply, err := s.Exec("show stat")
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

// exitCode maps an error to fulcrumctl's exit code.
func exitCode(err error) int {
	switch {
	case err == nil:
		return ExitOK
	case isUnreachable(err):
		return ExitUnreachable
	case errors.Is(err, ErrUsage), errors.Is(err, ErrRefused):
		return ExitUsage
	}
	return ExitError
}
