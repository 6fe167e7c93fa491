// Command fulcrumctl talks to a running fulcrum (or HAProxy) through its
// Runtime API socket: an interactive shell, one-shot commands for scripts,
// deploy helpers (drain, ready, remove) and a live view (watch).
//
//	fulcrumctl -s /run/fulcrum/admin.sock              # interactive shell
//	fulcrumctl -s SOCK show stat                        # one-shot, as a table
//	fulcrumctl -s SOCK drain web/s1 --wait --timeout 60s
//	fulcrumctl -s a.sock -s b.sock drain web/s1 --wait # on several instances
//	fulcrumctl --fleet prod.fleet show stat             # one table, an instance column
//	fulcrumctl -s SOCK remove web/s4 --wait --timeout 60s
//
// Exit codes: 0 ok, 1 error reply (printed on stderr), 2 nothing was
// sent (usage error, not confirmed, socket unreachable), 3 drain or
// remove timeout; on several instances, the highest of theirs.
package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/chzyer/readline"
	"github.com/fulcrum-proxy/fulcrum/cli"
	"github.com/mattn/go-isatty"
	ucli "github.com/urfave/cli/v2"
)

func main() {
	os.Exit(run(os.Args, os.Stdin, os.Stdout, os.Stderr))
}

// defaultSocket returns $FULCRUM_SOCKET, else ./fulcrum.sock when it
// exists, else /run/fulcrum/admin.sock.
func defaultSocket() string {
	if s := os.Getenv("FULCRUM_SOCKET"); s != "" {
		return s
	}
	if _, err := os.Stat("fulcrum.sock"); err == nil {
		return "fulcrum.sock"
	}
	return "/run/fulcrum/admin.sock"
}

// isTTY reports whether f is a terminal.
func isTTY(f any) bool {
	o, ok := f.(*os.File)
	return ok && (isatty.IsTerminal(o.Fd()) || isatty.IsCygwinTerminal(o.Fd()))
}

const description = `fulcrumctl speaks only the Runtime API (HAProxy's stats socket protocol), so
it works against fulcrum and against HAProxy. Commands are the server's own:
"help" lists them, and Tab completes them in the shell.

Without a command and with a terminal on stdin, it opens an interactive shell
on one persistent session ("prompt" mode): line editing, history in
~/.fulcrumctl_history ($FULCRUMCTL_HISTORY), Tab completion of command words
and of their arguments (servers, set server subcommands and values, tables
and data.* filters, ACL and map ids), Ctrl-C cancels the line, Ctrl-D quits.
The session stays open while idle; if the proxy restarts, the next command
reconnects at the level the session was lowered to (user, operator) and says
so. drain, ready, remove and watch work inside the shell as on the command
line.

With a command (arguments, -c "cmd1; cmd2", or lines on stdin) it runs them in
order and stops at the first error reply.

Replies the tool recognises (show stat, show servers state, show table,
show backend, show queue and any "# " headed listing) are printed as aligned
tables, statuses coloured on a terminal unless NO_COLOR is set. --raw prints
the server's reply untouched, --json prints JSON (values as in the CSV). Both
may also end a command: "show stat --json".

With several sockets (-s repeated, or --fleet FILE) every command runs on
every instance at once (at most --parallel) and the results print in the
order given: tables merged into one with an INSTANCE column (--json and --csv
append an "instance" field after the server's columns), --raw replies each
under a "# instance: NAME" line, other replies line by line after "NAME: ".
A fleet file lists one instance per line, "NAME ADDRESS" or "ADDRESS" (paths
relative to the file), with # comments; an instance without a name, and one
given with -s, is named by the shortest tail of its socket path that tells it
apart ("lb1.sock", "a/admin.sock") or by its HOST:PORT. drain --wait waits
until every instance is drained, under one --timeout; watch shows every
instance in one table; the shell sends each line to all of them. An instance
that fails (error reply, unreachable) is named on stderr and does not stop
the others; the exit code is then the highest of the instances'.

Commands that would take every server still in service of a backend out of
it (drain 'web/*', set server ... state maint|drain, disable server, a weight
of 0...) ask first on a terminal; a script needs --yes (also as a suffix:
"set server web/s1 state maint --yes").

Exit codes: 0 ok; 1 error reply, the server refused (on stderr); 2 nothing
was sent: usage error, not confirmed, or socket unreachable; 3 drain or
remove timeout. On several instances, the highest of theirs.

Examples:
   fulcrumctl -s /run/fulcrum/admin.sock
   fulcrumctl show stat
   fulcrumctl set server web/s1 state drain
   fulcrumctl -c "disable server web/s1; show servers state web"
   fulcrumctl < commands.txt
   fulcrumctl drain web/s1 --wait --timeout 60s --maint-after
   fulcrumctl ready 'web/*'
   fulcrumctl watch web
   fulcrumctl add server web/s4 10.0.0.4:80 check enabled
   fulcrumctl remove web/s4 --wait --timeout 60s
   fulcrumctl -s /run/lb1.sock -s /run/lb2.sock show stat
   fulcrumctl --fleet prod.fleet drain web/s1 --wait --timeout 60s`

func run(args []string, stdin *os.File, stdout, stderr io.Writer) int {
	x := &fulcrumctl{stdin: stdin, stdout: stdout, stderr: stderr}
	return x.run(args)
}

// fulcrumctl is one run of the command: the command line, or one verb typed in the
// shell (then shared is the shell's client, and the verb runs on it).
type fulcrumctl struct {
	stdin          *os.File
	stdout, stderr io.Writer
	code           int
	shared         *cli.Client
}

// errUsagePrinted is a usage error already printed on one line.
var errUsagePrinted = errors.New("usage error")

// run runs the command line args (args[0] is the program) and returns the
// exit code.
func (x *fulcrumctl) run(args []string) int {
	if err := x.app().Run(hoistFlags(args)); err != nil && x.code == 0 {
		fmt.Fprintln(x.stderr, "fulcrumctl:", err)
		x.code = cli.ExitError
	}
	return x.code
}

// usageError prints a usage error on one line (not the whole help) and
// makes the exit code 2.
func (x *fulcrumctl) usageError(err error) error {
	fmt.Fprintf(x.stderr, "fulcrumctl: %v (fulcrumctl --help for the usage)\n", err)
	x.code = cli.ExitUsage
	return errUsagePrinted
}

// wait reads a duration flag ("60s", or "60" for seconds).
func (x *fulcrumctl) wait(c *ucli.Context, name string) (time.Duration, error) {
	d, err := cli.ParseWait(c.String(name))
	if err != nil {
		return 0, x.usageError(fmt.Errorf("--%s: %w", name, err))
	}
	return d, nil
}

// instances returns the sockets of the command line: one unnamed
// instance for a single -s (or the default socket), else the fleet of
// --fleet FILE and of every -s, named. On a usage error it prints it and
// returns nil.
func (x *fulcrumctl) instances(c *ucli.Context) []cli.Instance {
	socks := c.StringSlice("socket")
	file := c.String("fleet")
	if file == "" && len(socks) <= 1 {
		addr := defaultSocket()
		if len(socks) == 1 {
			addr = socks[0]
		}
		return []cli.Instance{{Addr: cli.Addr(addr)}}
	}
	var insts []cli.Instance
	if file != "" {
		f, err := os.Open(file)
		if err != nil {
			x.usageError(fmt.Errorf("--fleet: %w", err))
			return nil
		}
		insts, err = cli.ParseFleet(file, f)
		f.Close()
		if err != nil {
			for _, l := range strings.Split(err.Error(), "\n") {
				fmt.Fprintln(x.stderr, "fulcrumctl:", l)
			}
			x.code = cli.ExitUsage
			return nil
		}
	}
	named, err := cli.NameInstances(socks)
	if err != nil {
		x.usageError(fmt.Errorf("-s: %w", err))
		return nil
	}
	for _, in := range named {
		for _, other := range insts {
			if other.Name == in.Name {
				x.usageError(fmt.Errorf("-s %s: instance %q is also in %s", in.Addr, in.Name, file))
				return nil
			}
		}
		insts = append(insts, in)
	}
	return insts
}

// connect returns the client to run on and the func that releases it:
// the shell's own when the verb runs inside it, else new sessions on
// every socket of the command line. On failure (a usage error, or no
// socket that can be reached) it sets the exit code with a message and
// returns nil. On a fleet, sockets that cannot be reached while others
// can are left to the commands, which name them.
func (x *fulcrumctl) connect(c *ucli.Context) (*cli.Client, func()) {
	if x.shared != nil {
		cl := *x.shared // a verb's --yes is its own
		cl.Yes = cl.Yes || c.Bool("yes")
		return &cl, func() {}
	}
	timeout, err := cli.ParseWait(c.String("timeout"))
	if err != nil {
		x.usageError(fmt.Errorf("--timeout: %w", err))
		return nil, nil
	}
	insts := x.instances(c)
	if insts == nil {
		return nil, nil
	}
	const hint = "(is the proxy running? give the socket with -s or $FULCRUM_SOCKET)"
	ms, err := cli.DialMembers(insts, timeout, c.Int("parallel"))
	if err != nil {
		down := 0
		for _, m := range ms {
			if m.DialError() != nil {
				down++
			}
		}
		if down == len(ms) {
			for _, m := range ms {
				name := ""
				if m.Name != "" {
					name = m.Name + ": "
				}
				fmt.Fprintf(x.stderr, "fulcrumctl: %s%v\n", name, m.DialError())
			}
			fmt.Fprintln(x.stderr, hint)
			x.code = cli.ExitUnreachable
			return nil, nil
		}
	}
	f := cli.FormatAuto
	switch {
	case c.Bool("json"):
		f = cli.FormatJSON
	case c.Bool("csv"):
		f = cli.FormatCSV
	case c.Bool("raw"):
		f = cli.FormatRaw
	}
	cl := &cli.Client{Members: ms, Parallel: c.Int("parallel"), Out: x.stdout, Err: x.stderr, Format: f,
		Colour: colour(c, x.stdout), Yes: c.Bool("yes"), Width: func() int { return termWidth(x.stdout) }}
	if isTTY(x.stdin) && isTTY(x.stderr) {
		cl.Confirm = func(question string) bool {
			fmt.Fprint(x.stderr, question)
			answer, _ := bufio.NewReader(x.stdin).ReadString('\n')
			a := strings.ToLower(strings.TrimSpace(answer))
			return a == "y" || a == "yes"
		}
	}
	return cl, func() { cli.CloseMembers(ms) }
}

// verbArgs says what the arguments of each verb are, for the shell's
// completion; a verb added to the app (remove, cert update...) gets a
// line here.
var verbArgs = map[string]cli.ArgKind{
	"drain":  cli.ArgServers,
	"ready":  cli.ArgServers,
	"remove": cli.ArgServers,
	"watch":  cli.ArgBackend,
}

// verbs returns the app's commands as the shell's verbs: the shell runs
// them, on its own session, exactly as the command line does.
func (x *fulcrumctl) verbs(app *ucli.App, cl *cli.Client) []cli.Verb {
	var out []cli.Verb
	for _, cmd := range app.Commands {
		if cmd.Hidden || cmd.Name == "help" {
			continue
		}
		name := cmd.Name
		var flags []string
		for _, f := range cmd.Flags {
			for _, n := range f.Names() {
				if len(n) > 1 {
					flags = append(flags, "--"+n)
				}
			}
		}
		flags = append(flags, "--yes")
		out = append(out, cli.Verb{Name: name, Flags: flags, Args: verbArgs[name], Run: func(args []string) int {
			sub := &fulcrumctl{stdin: x.stdin, stdout: x.stdout, stderr: x.stderr, shared: cl}
			return sub.run(append([]string{"fulcrumctl", name}, args...))
		}})
	}
	return out
}

// app is fulcrumctl's command line.
func (x *fulcrumctl) app() *ucli.App {
	app := &ucli.App{
		Name:            "fulcrumctl",
		Usage:           "interactive shell and scripting tool for fulcrum's (or HAProxy's) Runtime API",
		UsageText:       "fulcrumctl [-s SOCKET]... [--fleet FILE] [--raw|--json|--csv] [--yes] [COMMAND...]\nfulcrumctl [-s SOCKET]... -c \"CMD1; CMD2\"\nfulcrumctl [-s SOCKET]... drain|ready|remove|watch ...",
		Description:     description,
		Writer:          x.stdout,
		ErrWriter:       x.stderr,
		HideHelpCommand: true,
		// Socket paths may hold commas: -s is repeated, never split.
		DisableSliceFlagSeparator: true,
		OnUsageError: func(c *ucli.Context, err error, _ bool) error {
			return x.usageError(err)
		},
		Flags: []ucli.Flag{
			&ucli.StringSliceFlag{Name: "socket", Aliases: []string{"s"},
				Usage: "Runtime API socket: a Unix socket path or tcp:HOST:PORT (default: $FULCRUM_SOCKET, ./fulcrum.sock, /run/fulcrum/admin.sock); repeat it to run on several instances"},
			&ucli.StringFlag{Name: "fleet", Aliases: []string{"f"}, Usage: "run on every instance listed in `FILE`, one per line: NAME ADDRESS (or ADDRESS), # comments"},
			&ucli.IntFlag{Name: "parallel", Value: 10, Usage: "on several instances, talk to at most this many at once"},
			&ucli.StringFlag{Name: "command", Aliases: []string{"c"}, Usage: "run these commands, separated by ';', and exit"},
			&ucli.BoolFlag{Name: "raw", Usage: "print the server's replies untouched (each under '# instance: NAME' on several instances)"},
			&ucli.BoolFlag{Name: "json", Usage: "print replies as JSON (tables as arrays of objects with the server's column names and values)"},
			&ucli.BoolFlag{Name: "csv", Usage: "print tables as CSV with the server's columns (then 'instance' on several instances)"},
			&ucli.BoolFlag{Name: "no-color", Usage: "no colours (also when $NO_COLOR is set or stdout is not a terminal)"},
			&ucli.BoolFlag{Name: "yes", Aliases: []string{"y"}, Usage: "take every server of a backend out of service without asking (scripts need it)"},
			&ucli.StringFlag{Name: "timeout", Value: "30s", Usage: "bound on one exchange with the server (60s, or 60 for seconds)"},
		},
		Action: func(c *ucli.Context) error {
			line := strings.Join(c.Args().Slice(), " ")
			if c.IsSet("command") {
				line = c.String("command")
			}
			cl, release := x.connect(c)
			if cl == nil {
				return nil
			}
			defer release()
			switch {
			case strings.Join(strings.Fields(line), " ") == "show ssl cert" && cl.Format == cli.FormatAuto:
				x.code = certTable(cl, time.Now()) // cert.go
			case line != "":
				x.code = cli.ExitCode(cl.Do(line))
			case isTTY(x.stdin):
				if err := cli.Shell(cl, x.stdin, x.verbs(x.app(), cl)); err != nil {
					fmt.Fprintln(x.stderr, "fulcrumctl:", err)
					x.code = cli.ExitError
				}
			default:
				x.code = fromStdin(cl, x.stdin)
			}
			return nil
		},
		Commands: []*ucli.Command{
			x.certCommand(), // cert.go
			{
				Name:      "drain",
				Usage:     "put servers in DRAIN, optionally wait until they are empty",
				ArgsUsage: "BACKEND/SERVER|BACKEND/*...",
				Description: `Sets each server's administrative state to DRAIN ("set server B/S state drain"):
it takes no new sessions (except persistent ones) and finishes the current
ones. With --wait, polls "show stat" until scur and qcur are 0 on every server,
showing what is left, then exits 0 (after setting MAINT with --maint-after).
At --timeout it exits 3 and leaves the servers in DRAIN. Draining every server
still in service of a backend asks first on a terminal, and needs --yes in a
script (exit 2 without it, nothing sent). On several instances, it drains on
all at once and waits until every one is drained (BACKEND/* is read on each),
under one --timeout; --maint-after then sets MAINT everywhere.`,
				OnUsageError: func(c *ucli.Context, err error, _ bool) error { return x.usageError(err) },
				Flags: []ucli.Flag{
					&ucli.BoolFlag{Name: "wait", Aliases: []string{"w"}, Usage: "wait until the servers have no session and no queue"},
					&ucli.StringFlag{Name: "timeout", Value: "60s", Usage: "give up waiting after this long, exit 3 (60s, or 60 for seconds)"},
					&ucli.BoolFlag{Name: "maint-after", Usage: "once drained, put the servers in MAINT (implies --wait)"},
					&ucli.StringFlag{Name: "poll", Value: "500ms", Usage: "how often to look at show stat"},
					&ucli.BoolFlag{Name: "yes", Aliases: []string{"y"}, Usage: "drain every server of a backend without asking"},
				},
				Action: func(c *ucli.Context) error {
					if c.NArg() == 0 {
						return x.usageError(errors.New("drain: give at least one BACKEND/SERVER"))
					}
					timeout, err := x.wait(c, "timeout")
					if err != nil {
						return err
					}
					poll, err := x.wait(c, "poll")
					if err != nil {
						return err
					}
					cl, release := x.connect(c)
					if cl == nil {
						return nil
					}
					defer release()
					cl.Yes = cl.Yes || c.Bool("yes")
					x.code = cli.Drain(cl, c.Args().Slice(), cli.DrainOptions{
						Wait: c.Bool("wait"), Timeout: timeout, MaintAfter: c.Bool("maint-after"),
						Poll: poll, TTY: isTTY(x.stderr),
					})
					return nil
				},
			},
			{
				Name:         "ready",
				Usage:        "put servers back in READY (after drain or maintenance)",
				ArgsUsage:    "BACKEND/SERVER|BACKEND/*...",
				Description:  `Sets each server's administrative state to READY ("set server B/S state ready").`,
				OnUsageError: func(c *ucli.Context, err error, _ bool) error { return x.usageError(err) },
				Action: func(c *ucli.Context) error {
					if c.NArg() == 0 {
						return x.usageError(errors.New("ready: give at least one BACKEND/SERVER"))
					}
					cl, release := x.connect(c)
					if cl == nil {
						return nil
					}
					defer release()
					x.code = cli.Ready(cl, c.Args().Slice())
					return nil
				},
			},
			{
				Name:      "remove",
				Usage:     "delete servers from their backend, optionally draining them first",
				ArgsUsage: "BACKEND/SERVER...",
				Description: `Puts each server in MAINT and deletes it ("set server B/S state maint", then
"del server B/S"), which the server refuses while sessions are left. With
--wait, drains it first ("set server B/S state drain", then "show stat" every
--poll until it has no session and no queue), puts it in MAINT, waits for the
sessions that came meanwhile ("wait <left> srv-removable B/S", HAProxy 3.0's;
show stat again where the server has no wait command) and deletes it. At
--timeout it exits 3 and leaves the server in DRAIN (or MAINT once there).
Removing every server still in service of a backend asks first on a
terminal, and needs --yes in a script (exit 2 without it, nothing sent).`,
				OnUsageError: func(c *ucli.Context, err error, _ bool) error { return x.usageError(err) },
				Flags: []ucli.Flag{
					&ucli.BoolFlag{Name: "wait", Aliases: []string{"w"}, Usage: "drain first and wait until the servers have no session and no queue"},
					&ucli.StringFlag{Name: "timeout", Value: "60s", Usage: "give up waiting after this long, exit 3 (60s, or 60 for seconds)"},
					&ucli.StringFlag{Name: "poll", Value: "500ms", Usage: "how often to look at show stat while draining"},
					&ucli.BoolFlag{Name: "yes", Aliases: []string{"y"}, Usage: "remove every server of a backend without asking"},
				},
				Action: func(c *ucli.Context) error {
					if c.NArg() == 0 {
						return x.usageError(errors.New("remove: give at least one BACKEND/SERVER"))
					}
					timeout, err := x.wait(c, "timeout")
					if err != nil {
						return err
					}
					poll, err := x.wait(c, "poll")
					if err != nil {
						return err
					}
					cl, release := x.connect(c)
					if cl == nil {
						return nil
					}
					defer release()
					cl.Yes = cl.Yes || c.Bool("yes")
					x.code = cli.Remove(cl, c.Args().Slice(), cli.RemoveOptions{
						Wait: c.Bool("wait"), Timeout: timeout, Poll: poll, TTY: isTTY(x.stderr),
					})
					return nil
				},
			},
			{
				Name:      "watch",
				Usage:     "live full-screen view of the servers, q quits",
				ArgsUsage: "[BACKEND]",
				Description: `Redraws the show stat table of the servers of BACKEND (all backends by
default) in place every --interval. Lines are cut to the terminal's width.
On several instances, one table of all of them with an INSTANCE column; one
that does not answer is named below it and tried again at the next redraw.`,
				OnUsageError: func(c *ucli.Context, err error, _ bool) error { return x.usageError(err) },
				Flags: []ucli.Flag{
					&ucli.StringFlag{Name: "interval", Aliases: []string{"n"}, Value: "2s", Usage: "time between two redraws (2s, or 2 for seconds)"},
				},
				Action: func(c *ucli.Context) error {
					interval, err := x.wait(c, "interval")
					if err != nil {
						return err
					}
					cl, release := x.connect(c)
					if cl == nil {
						return nil
					}
					defer release()
					if err := cli.Watch(cl, x.stdin, cli.WatchOptions{Backend: c.Args().First(), Interval: interval, Colour: cl.Colour}); err != nil {
						fmt.Fprintln(x.stderr, "fulcrumctl:", err)
						x.code = cli.ExitError
					}
					return nil
				},
			},
		},
		ExitErrHandler: func(c *ucli.Context, err error) {
			if err == nil || errors.Is(err, errUsagePrinted) {
				return
			}
			fmt.Fprintln(x.stderr, err)
			x.code = cli.ExitError
			var ec ucli.ExitCoder
			if errors.As(err, &ec) {
				x.code = ec.ExitCode()
			}
		},
	}
	return app
}

// termWidth is the width of w when it is a terminal, else 0 (no limit).
func termWidth(w io.Writer) int {
	f, ok := w.(*os.File)
	if !ok || !isTTY(f) {
		return 0
	}
	if width, _, err := readline.GetSize(int(f.Fd())); err == nil && width > 0 {
		return width
	}
	return 0
}

// colour: statuses coloured only on a terminal, without NO_COLOR or --no-color.
func colour(c *ucli.Context, stdout io.Writer) bool {
	return isTTY(stdout) && os.Getenv("NO_COLOR") == "" && !c.Bool("no-color")
}

// fromStdin runs the lines of stdin in order (payload lines included),
// skipping blank lines and '#' comments outside a payload, and stops at the
// first error (on a fleet, each instance at its own). It returns the
// highest exit code.
func fromStdin(cl *cli.Client, stdin io.Reader) int {
	code := cli.ExitOK
	sc := bufio.NewScanner(stdin)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for cl.Live() > 0 && sc.Scan() {
		line := sc.Text()
		if !cl.InPayload() {
			line = strings.TrimSpace(line)
			if line == "" || strings.HasPrefix(line, "#") {
				continue
			}
		}
		code = max(code, cli.ExitCode(cl.Do(line)))
	}
	return code
}

// hoistFlags moves the flags of drain, ready, remove and watch before their
// arguments, so that "drain web/s1 --wait" works as the usage shows
// (urfave/cli stops parsing flags at the first argument).
func hoistFlags(args []string) []string {
	takesValue := map[string]bool{"--timeout": true, "-timeout": true, "--poll": true, "-poll": true,
		"--interval": true, "-interval": true, "-n": true, "-s": true, "--socket": true, "-c": true, "--command": true,
		"-f": true, "--fleet": true, "-fleet": true, "--parallel": true, "-parallel": true}
	i := 1
	for i < len(args) && strings.HasPrefix(args[i], "-") {
		if takesValue[args[i]] {
			i++
		}
		i++
	}
	if i >= len(args) || (args[i] != "drain" && args[i] != "ready" && args[i] != "remove" && args[i] != "watch") {
		return args
	}
	out := append([]string{}, args[:i+1]...)
	var flags, rest []string
	for j := i + 1; j < len(args); j++ {
		a := args[j]
		switch {
		case a == "--":
			rest = append(rest, args[j+1:]...)
			j = len(args)
		case strings.HasPrefix(a, "-") && len(a) > 1:
			flags = append(flags, a)
			if takesValue[a] && j+1 < len(args) {
				flags = append(flags, args[j+1])
				j++
			}
		default:
			rest = append(rest, a)
		}
	}
	return append(append(out, flags...), rest...)
}
