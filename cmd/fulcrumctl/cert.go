package main

// fulcrumctl cert: certificate chores on top of the Runtime API's ssl
// commands. `cert update NAME FILE` replaces a certificate live (set ssl
// cert, commit ssl cert) and prints what is now served; `cert show` (and
// a one-shot `show ssl cert`) prints the certificates as a table with the
// days left until each expires.

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/fulcrum-proxy/fulcrum/cli"
	"github.com/olekukonko/tablewriter"
	ucli "github.com/urfave/cli/v2"
)

// certCommand returns the `cert` verb.
func (x *fulcrumctl) certCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "cert",
		Usage: "show the certificates, or replace one live",
		Subcommands: []*ucli.Command{
			{
				Name:      "update",
				Usage:     "replace certificate NAME (as show ssl cert names it) with the PEM file FILE",
				ArgsUsage: "NAME FILE",
				Description: `Sends FILE (certificate, chain and private key, PEM) with "set ssl cert NAME",
then "commit ssl cert NAME": new handshakes get the new certificate at once,
established connections keep theirs. Prints the serial and expiry now served.
A refused payload is aborted, leaving the served certificate as it was.`,
				Action: func(c *ucli.Context) error {
					if c.NArg() != 2 {
						return ucli.Exit("fulcrumctl cert update: give NAME and FILE", cli.ExitError)
					}
					cl, release := x.connect(c)
					if cl == nil {
						return nil
					}
					defer release()
					x.code = certUpdate(cl, c.Args().Get(0), c.Args().Get(1))
					return nil
				},
			},
			{
				Name:  "show",
				Usage: "the certificates as a table: status, serial, expiry and days left",
				Action: func(c *ucli.Context) error {
					cl, release := x.connect(c)
					if cl == nil {
						return nil
					}
					defer release()
					x.code = certTable(cl, time.Now())
					return nil
				},
			},
		},
	}
}

// certUpdate runs set ssl cert then commit ssl cert, and reports.
func certUpdate(cl *cli.Client, name, file string) int {
	pem, err := os.ReadFile(file)
	if err != nil {
		fmt.Fprintln(cl.Err, "fulcrumctl:", err)
		return cli.ExitError
	}
	reply, err := send(cl, "set ssl cert "+name+" <<")
	if err == nil && reply == "+ " {
		for _, line := range strings.Split(strings.TrimRight(string(pem), "\n"), "\n") {
			if strings.TrimSpace(line) == "" {
				continue // an empty line would end the payload
			}
			if reply, err = send(cl, line); err != nil {
				break
			}
		}
		if err == nil {
			reply, err = send(cl, "")
		}
	}
	if err != nil {
		fmt.Fprintln(cl.Err, "fulcrumctl:", err)
		return cli.ExitCode(err)
	}
	if !strings.HasPrefix(reply, "Transaction ") {
		fmt.Fprint(cl.Err, reply)
		return cli.ExitError
	}
	if reply, err = send(cl, "commit ssl cert "+name); err != nil || !strings.Contains(reply, "\nSuccess!") {
		if err == nil {
			fmt.Fprint(cl.Err, reply)
		}
		send(cl, "abort ssl cert "+name)
		return cli.ExitError
	}
	d, err := certDetail(cl, name)
	if err != nil {
		fmt.Fprintln(cl.Err, "fulcrumctl:", err)
		return cli.ExitError
	}
	fmt.Fprintf(cl.Out, "%s: committed, serial %s, notAfter %s (%s days)\n", name, d["Serial"], d["notAfter"], daysLeft(d["notAfter"], time.Now()))
	return cli.ExitOK
}

// certTable prints every certificate with its status, serial, expiry and
// the days left.
func certTable(cl *cli.Client, now time.Time) int {
	list, err := send(cl, "show ssl cert")
	if err != nil {
		fmt.Fprintln(cl.Err, "fulcrumctl:", err)
		return cli.ExitCode(err)
	}
	if cli.IsError(list) {
		fmt.Fprint(cl.Err, list)
		return cli.ExitError
	}
	w := tablewriter.NewTable(cl.Out)
	w.Header("filename", "status", "serial", "not after", "days left", "subject")
	section := ""
	for _, name := range strings.Split(strings.TrimRight(list, "\n"), "\n") {
		if strings.HasPrefix(name, "# ") {
			section = name
			continue
		}
		if name == "" || section == "# transaction" {
			continue // the uncommitted one, shown by show ssl cert *NAME
		}
		d, err := certDetail(cl, name)
		if err != nil {
			fmt.Fprintln(cl.Err, "fulcrumctl:", err)
			return cli.ExitError
		}
		w.Append(name, d["Status"], d["Serial"], d["notAfter"], daysLeft(d["notAfter"], now), d["Subject"])
	}
	w.Render()
	return cli.ExitOK
}

// certDetail returns the fields of `show ssl cert NAME`.
func certDetail(cl *cli.Client, name string) (map[string]string, error) {
	reply, err := send(cl, "show ssl cert "+name)
	if err != nil {
		return nil, err
	}
	if cli.IsError(reply) {
		return nil, fmt.Errorf("%s: %s", name, strings.TrimSpace(reply))
	}
	d := map[string]string{}
	for _, line := range strings.Split(reply, "\n") {
		if k, v, ok := strings.Cut(line, ": "); ok {
			if _, seen := d[k]; !seen {
				d[k] = v
			}
		}
	}
	return d, nil
}

// daysLeft returns the whole days from now to an OpenSSL date ("Jan  1
// 00:00:00 2045 GMT"), negative once expired; "" when there is none.
func daysLeft(notAfter string, now time.Time) string {
	t, err := time.Parse("Jan _2 15:04:05 2006 MST", notAfter)
	if err != nil {
		return ""
	}
	return strconv.Itoa(int(t.Sub(now).Hours() / 24))
}

// send sends one line of the session and returns the server's reply.
func send(cl *cli.Client, line string) (string, error) { return cl.Sess.Exec(line) }
