// Command fulcrumctl talks to a running fulcrum (or HAProxy) through its
// Runtime API socket: an interactive shell, one-shot commands for scripts,
// deploy helpers (drain, ready) and a live view (watch).
//
//	fulcrumctl -s /run/fulcrum/admin.sock              # interactive shell
//	fulcrumctl -s SOCK show stat                        # one-shot, as a table
//	fulcrumctl -s SOCK drain web/s1 --wait --timeout 60s
//
// Exit codes: 0 ok, 1 error reply (printed on stderr), 2 socket
// unreachable, 3 drain timeout.
package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

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
and of backend/server/table names, Ctrl-C cancels the line, Ctrl-D quits. If
the proxy restarts, the next command reconnects and says so.

With a command (arguments, -c "cmd1; cmd2", or lines on stdin) it runs them in
order and stops at the first error reply.

Replies the tool recognises (show stat, show servers state, show table,
show backend, show queue and any "# " headed listing) are printed as aligned
tables, statuses coloured on a terminal unless NO_COLOR is set. --raw prints
the server's reply untouched, --json prints JSON (values as in the CSV). Both
may also end a command: "show stat --json".

Exit codes: 0 ok; 1 error reply (on stderr); 2 socket unreachable; 3 drain
timeout.

Examples:
   fulcrumctl -s /run/fulcrum/admin.sock
   fulcrumctl show stat
   fulcrumctl set server web/s1 state drain
   fulcrumctl -c "disable server web/s1; show servers state web"
   fulcrumctl < commands.txt
   fulcrumctl drain web/s1 --wait --timeout 60s --maint-after
   fulcrumctl ready 'web/*'
   fulcrumctl watch web`

func run(args []string, stdin *os.File, stdout, stderr io.Writer) int {
	code := 0
	// connect opens the session; on failure it sets code 2 with a message.
	connect := func(c *ucli.Context) *cli.Client {
		addr := c.String("socket")
		s, err := cli.Dial(cli.Addr(addr), c.Duration("timeout"))
		if err != nil {
			fmt.Fprintf(stderr, "fulcrumctl: %v\n(is the proxy running? give the socket with -s or $FULCRUM_SOCKET)\n", err)
			code = cli.ExitUnreachable
			return nil
		}
		f := cli.FormatAuto
		switch {
		case c.Bool("json"):
			f = cli.FormatJSON
		case c.Bool("raw"):
			f = cli.FormatRaw
		}
		return &cli.Client{Sess: s, Out: stdout, Err: stderr, Format: f,
			Colour: colour(c, stdout)}
	}
	app := &ucli.App{
		Name:            "fulcrumctl",
		Usage:           "interactive shell and scripting tool for fulcrum's (or HAProxy's) Runtime API",
		UsageText:       "fulcrumctl [-s SOCKET] [--raw|--json] [COMMAND...]\nfulcrumctl [-s SOCKET] -c \"CMD1; CMD2\"\nfulcrumctl [-s SOCKET] drain|ready|watch ...",
		Description:     description,
		Writer:          stdout,
		ErrWriter:       stderr,
		HideHelpCommand: true,
		Flags: []ucli.Flag{
			&ucli.StringFlag{Name: "socket", Aliases: []string{"s"}, Value: defaultSocket(), EnvVars: nil,
				Usage: "Runtime API socket: a Unix socket path or tcp:HOST:PORT (default: $FULCRUM_SOCKET, ./fulcrum.sock, /run/fulcrum/admin.sock)"},
			&ucli.StringFlag{Name: "command", Aliases: []string{"c"}, Usage: "run these commands, separated by ';', and exit"},
			&ucli.BoolFlag{Name: "raw", Usage: "print the server's replies untouched"},
			&ucli.BoolFlag{Name: "json", Usage: "print replies as JSON (tables as arrays of objects with the server's column names and values)"},
			&ucli.BoolFlag{Name: "no-color", Usage: "no colours (also when $NO_COLOR is set or stdout is not a terminal)"},
			&ucli.DurationFlag{Name: "timeout", Value: 30 * time.Second, Usage: "bound on one exchange with the server"},
		},
		Action: func(c *ucli.Context) error {
			line := strings.Join(c.Args().Slice(), " ")
			if c.IsSet("command") {
				line = c.String("command")
			}
			cl := connect(c)
			if cl == nil {
				return nil
			}
			defer cl.Sess.Close()
			switch {
			case line != "":
				code = report(stderr, cl.Do(line))
			case isTTY(stdin):
				if err := cli.Shell(cl, stdin); err != nil {
					fmt.Fprintln(stderr, "fulcrumctl:", err)
					code = cli.ExitError
				}
			default:
				code = fromStdin(cl, stdin, stderr)
			}
			return nil
		},
		Commands: []*ucli.Command{
			{
				Name:      "drain",
				Usage:     "put servers in DRAIN, optionally wait until they are empty",
				ArgsUsage: "BACKEND/SERVER|BACKEND/*...",
				Description: `Sets each server's administrative state to DRAIN ("set server B/S state drain"):
it takes no new sessions (except persistent ones) and finishes the current
ones. With --wait, polls "show stat" until scur and qcur are 0 on every server,
showing what is left, then exits 0 (after setting MAINT with --maint-after).
At --timeout it exits 3 and leaves the servers in DRAIN.`,
				Flags: []ucli.Flag{
					&ucli.BoolFlag{Name: "wait", Aliases: []string{"w"}, Usage: "wait until the servers have no session and no queue"},
					&ucli.DurationFlag{Name: "timeout", Value: 60 * time.Second, Usage: "give up waiting after this long (exit 3)"},
					&ucli.BoolFlag{Name: "maint-after", Usage: "once drained, put the servers in MAINT (implies --wait)"},
					&ucli.DurationFlag{Name: "poll", Value: 500 * time.Millisecond, Usage: "how often to look at show stat"},
				},
				Action: func(c *ucli.Context) error {
					if c.NArg() == 0 {
						return ucli.Exit("fulcrumctl drain: give at least one BACKEND/SERVER", cli.ExitError)
					}
					cl := connect(c)
					if cl == nil {
						return nil
					}
					defer cl.Sess.Close()
					code = cli.Drain(cl, c.Args().Slice(), cli.DrainOptions{
						Wait: c.Bool("wait"), Timeout: c.Duration("timeout"), MaintAfter: c.Bool("maint-after"),
						Poll: c.Duration("poll"), TTY: isTTY(stderr),
					})
					return nil
				},
			},
			{
				Name:        "ready",
				Usage:       "put servers back in READY (after drain or maintenance)",
				ArgsUsage:   "BACKEND/SERVER|BACKEND/*...",
				Description: `Sets each server's administrative state to READY ("set server B/S state ready").`,
				Action: func(c *ucli.Context) error {
					if c.NArg() == 0 {
						return ucli.Exit("fulcrumctl ready: give at least one BACKEND/SERVER", cli.ExitError)
					}
					cl := connect(c)
					if cl == nil {
						return nil
					}
					defer cl.Sess.Close()
					code = cli.Ready(cl, c.Args().Slice())
					return nil
				},
			},
			{
				Name:      "watch",
				Usage:     "live full-screen view of the servers, q quits",
				ArgsUsage: "[BACKEND]",
				Description: `Redraws the show stat table of the servers of BACKEND (all backends by
default) in place every --interval. Lines are cut to the terminal's width.`,
				Flags: []ucli.Flag{
					&ucli.DurationFlag{Name: "interval", Aliases: []string{"n"}, Value: 2 * time.Second, Usage: "time between two redraws"},
				},
				Action: func(c *ucli.Context) error {
					cl := connect(c)
					if cl == nil {
						return nil
					}
					defer cl.Sess.Close()
					if err := cli.Watch(cl, stdin, cli.WatchOptions{Backend: c.Args().First(), Interval: c.Duration("interval"), Colour: cl.Colour}); err != nil {
						fmt.Fprintln(stderr, "fulcrumctl:", err)
						code = cli.ExitError
					}
					return nil
				},
			},
		},
		ExitErrHandler: func(c *ucli.Context, err error) {
			if err == nil {
				return
			}
			fmt.Fprintln(stderr, err)
			code = cli.ExitError
			var ec ucli.ExitCoder
			if errors.As(err, &ec) {
				code = ec.ExitCode()
			}
		},
	}
	if err := app.Run(hoistFlags(args)); err != nil {
		if code == 0 {
			fmt.Fprintln(stderr, "fulcrumctl:", err)
			code = cli.ExitError
		}
	}
	return code
}

// colour: statuses coloured only on a terminal, without NO_COLOR or --no-color.
func colour(c *ucli.Context, stdout io.Writer) bool {
	return isTTY(stdout) && os.Getenv("NO_COLOR") == "" && !c.Bool("no-color")
}

// report prints a session error (an error reply is already printed) and
// returns the exit code.
func report(stderr io.Writer, err error) int {
	if err != nil && !errors.Is(err, cli.ErrReply) {
		fmt.Fprintln(stderr, "fulcrumctl:", err)
	}
	return cli.ExitCode(err)
}

// fromStdin runs the lines of stdin in order (payload lines included),
// skipping blank lines and '#' comments outside a payload, and stops at the
// first error.
func fromStdin(cl *cli.Client, stdin io.Reader, stderr io.Writer) int {
	sc := bufio.NewScanner(stdin)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !cl.InPayload() {
			line = strings.TrimSpace(line)
			if line == "" || strings.HasPrefix(line, "#") {
				continue
			}
		}
		if err := cl.Do(line); err != nil {
			return report(stderr, err)
		}
	}
	return cli.ExitOK
}

// hoistFlags moves the flags of drain, ready and watch before their
// arguments, so that "drain web/s1 --wait" works as the usage shows
// (urfave/cli stops parsing flags at the first argument).
func hoistFlags(args []string) []string {
	takesValue := map[string]bool{"--timeout": true, "-timeout": true, "--poll": true, "-poll": true,
		"--interval": true, "-interval": true, "-n": true, "-s": true, "--socket": true, "-c": true, "--command": true}
	i := 1
	for i < len(args) && strings.HasPrefix(args[i], "-") {
		if takesValue[args[i]] {
			i++
		}
		i++
	}
	if i >= len(args) || (args[i] != "drain" && args[i] != "ready" && args[i] != "watch") {
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
