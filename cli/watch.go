package cli

import (
	"fmt"

	"os"
	"strings"
	"time"

	"github.com/chzyer/readline"
)

// WatchOptions are the flags of `fulcrumctl watch`.
type WatchOptions struct {
	Backend  string        // only this backend's rows, "" = all backends
	Interval time.Duration // between two redraws
	Colour   bool
	// Width of the screen, 0 = ask the terminal (80 if it cannot say).
	Width int
}

// Watch shows the servers of one or all backends full-screen, redrawn in
// place every Interval from show stat (every member's, as one table with
// an instance column on a fleet), until q (or Ctrl-C) is read on in.
// When in is a terminal it is put in raw mode for the duration; the
// screen is restored at the end.
func Watch(c *Client, in *os.File, o WatchOptions) error {
	if o.Interval <= 0 {
		o.Interval = 2 * time.Second
	}
	quit := make(chan struct{})
	if in != nil {
		if readline.IsTerminal(int(in.Fd())) {
			st, err := readline.MakeRaw(int(in.Fd()))
			if err == nil {
				defer readline.Restore(int(in.Fd()), st)
			}
		}
		go func() {
			b := make([]byte, 1)
			for {
				n, err := in.Read(b)
				if err != nil || n == 1 && (b[0] == 'q' || b[0] == 'Q' || b[0] == 3) {
					close(quit)
					return
				}
			}
		}()
	}
	out := c.Out
	fmt.Fprint(out, "\x1b[?1049h\x1b[?25l") // alternate screen, no cursor
	defer fmt.Fprint(out, "\x1b[?25h\x1b[?1049l")
	tick := time.NewTicker(o.Interval)
	defer tick.Stop()
	for {
		fmt.Fprint(out, "\x1b[H"+strings.ReplaceAll(WatchScreen(c, o, width(o)), "\n", "\x1b[K\r\n")+"\x1b[J")
		select {
		case <-quit:
			return nil
		case <-tick.C:
		}
	}
}

func width(o WatchOptions) int {
	if o.Width > 0 {
		return o.Width
	}
	if w, _, err := readline.GetSize(int(os.Stdout.Fd())); err == nil && w > 0 {
		return w
	}
	return 80
}

// WatchScreen renders one screen of the watch view: a title line, then the
// show stat table of the servers (and the backend line) of o.Backend, cut
// to w columns. On a fleet the table is every member's, merged with an
// instance column, and a member that does not answer is named below it
// (its session redials at the next screen).
func WatchScreen(c *Client, o WatchOptions, w int) string {
	what := string(c.Members[0].Sess.Addr)
	if c.Members[0].Name != "" {
		what = fmt.Sprintf("%d instances", len(c.Members))
	}
	title := fmt.Sprintf("fulcrumctl watch %s  every %v  %s", what, o.Interval, time.Now().Format("15:04:05"))
	if o.Backend != "" {
		title += "  backend " + o.Backend
	}
	title = cut(title, max(w-10, 10))
	title += strings.Repeat(" ", max(w-len([]rune(title))-8, 1)) + "q: quit"
	replies := make([]string, len(c.Members))
	errs := make([]error, len(c.Members))
	each(c.Members, c.Parallel, func(i int, m *Member) { replies[i], errs[i] = m.exec("show stat") })
	var tables []*Table
	var names []string
	var problems strings.Builder
	rows := 0
	for i, m := range c.Members {
		t, ok := ParseTable(replies[i])
		switch {
		case errs[i] != nil:
			problems.WriteString("fulcrumctl: " + m.prefix() + errs[i].Error() + " (retrying)\n")
			continue
		case IsError(replies[i]) || !ok || t.Kind != "stat":
			problems.WriteString(prefixLines(m.prefix(), replies[i]))
			continue
		}
		var keep [][]string
		for _, r := range t.Rows {
			if t.Get(r, "svname") == "FRONTEND" || o.Backend != "" && t.Get(r, "pxname") != o.Backend {
				continue
			}
			keep = append(keep, r)
		}
		t.Rows = keep
		rows += len(keep)
		tables = append(tables, t)
		names = append(names, m.Name)
	}
	body := ""
	switch {
	case len(tables) == 0:
	case rows == 0 && o.Backend != "":
		body = "No such backend.\n"
	case names[0] == "":
		body = tables[0].Render(o.Colour, w)
	default:
		body = mergeTables(tables, names).Render(o.Colour, w)
	}
	for _, l := range strings.SplitAfter(problems.String(), "\n") {
		if l != "" {
			body += cut(strings.TrimSuffix(l, "\n"), w) + "\n"
		}
	}
	return cut(title, w) + "\n\n" + body
}
