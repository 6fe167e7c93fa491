// Command fulcrumctl talks to a running fulcrum (or HAProxy) through its
// Runtime API socket. Today it runs one-shot commands:
//
//	fulcrumctl -s /run/fulcrum/admin.sock show info
//
// prints the reply and exits 0; it exits 2 when the socket cannot be
// reached.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/fulcrum-proxy/fulcrum/cli"
	ucli "github.com/urfave/cli/v2"
)

func main() {
	os.Exit(run(os.Args, os.Stdout, os.Stderr))
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

func run(args []string, stdout, stderr io.Writer) int {
	code := 0
	app := &ucli.App{
		Name:      "fulcrumctl",
		Usage:     "send Runtime API commands to fulcrum (or HAProxy)",
		UsageText: "fulcrumctl [-s SOCKET] COMMAND...",
		Writer:    stdout,
		ErrWriter: stderr,
		Flags: []ucli.Flag{
			&ucli.StringFlag{Name: "socket", Aliases: []string{"s"}, Value: defaultSocket(),
				Usage: "Runtime API socket: a Unix socket path or tcp:HOST:PORT"},
			&ucli.DurationFlag{Name: "timeout", Value: 30 * time.Second, Usage: "bound on one exchange"},
		},
		Action: func(c *ucli.Context) error {
			if c.NArg() == 0 {
				return ucli.ShowAppHelp(c)
			}
			reply, err := cli.Run(cli.Addr(c.String("socket")), strings.Join(c.Args().Slice(), " "), c.Duration("timeout"))
			if err != nil {
				fmt.Fprintln(stderr, "fulcrumctl:", err)
				if errors.Is(err, cli.ErrUnreachable) {
					code = 2
				} else {
					code = 1
				}
				return nil
			}
			fmt.Fprint(stdout, reply)
			return nil
		},
	}
	if err := app.Run(args); err != nil {
		fmt.Fprintln(stderr, "fulcrumctl:", err)
		return 1
	}
	return code
}
