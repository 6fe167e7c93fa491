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

// certUpdate runs set ssl cert then commit ssl cert on every member of
// the client (one after the other: a fleet's members all get the file),
// and reports each; the exit code is the worst member's.
func certUpdate(cl *cli.Client, name, file string) int {
	pem, err := os.ReadFile(file)
	if err != nil {
		fmt.Fprintln(cl.Err, "fulcrumctl:", err)
		return cli.ExitError
	}
	code := cli.ExitOK
	for _, m := range cl.Members {
		code = max(code, certUpdateOne(cl, m, name, pem))
	}
	return code
}

// memberPrefix is "NAME: " for a named fleet member, "" for a lone socket.
func memberPrefix(m *cli.Member) string {
	if m.Name == "" {
		return ""
	}
	return m.Name + ": "
}

// certUpdateOne updates certificate name on one member.
func certUpdateOne(cl *cli.Client, m *cli.Member, name string, pem []byte) int {
	p := memberPrefix(m)
	reply, err := send(m, "set ssl cert "+name+" <<")
	if err == nil && reply == "+ " {
		for _, line := range strings.Split(strings.TrimRight(string(pem), "\n"), "\n") {
			if strings.TrimSpace(line) == "" {
				continue // an empty line would end the payload
			}
			if reply, err = send(m, line); err != nil {
				break
			}
		}
		if err == nil {
			reply, err = send(m, "")
		}
	}
	if err != nil {
		fmt.Fprintln(cl.Err, p+"fulcrumctl:", err)
		return cli.ExitCode(err)
	}
	if !strings.HasPrefix(reply, "Transaction ") {
		fmt.Fprint(cl.Err, p+reply)
		return cli.ExitError
	}
	if reply, err = send(m, "commit ssl cert "+name); err != nil || !strings.Contains(reply, "\nSuccess!") {
		if err == nil {
			fmt.Fprint(cl.Err, p+reply)
		}
		send(m, "abort ssl cert "+name)
		return cli.ExitError
	}
	d, err := certDetail(m, name)
	if err != nil {
		fmt.Fprintln(cl.Err, p+"fulcrumctl:", err)
		return cli.ExitError
	}
	fmt.Fprintf(cl.Out, "%s%s: committed, serial %s, notAfter %s (%s days)\n", p, name, d["Serial"], d["notAfter"], daysLeft(d["notAfter"], time.Now()))
	return cli.ExitOK
}

// certTable prints every certificate with its status, serial, expiry and
// the days left; on a fleet, one table with an instance column first.
func certTable(cl *cli.Client, now time.Time) int {
	fleet := len(cl.Members) > 1 || (len(cl.Members) == 1 && cl.Members[0].Name != "")
	w := tablewriter.NewTable(cl.Out)
	head := []any{"filename", "status", "serial", "not after", "days left", "subject"}
	if fleet {
		head = append([]any{"instance"}, head...)
	}
	w.Header(head...)
	code := cli.ExitOK
	for _, m := range cl.Members {
		code = max(code, certRows(cl, m, w, fleet, now))
	}
	w.Render()
	return code
}

// certRows appends one member's certificates to w.
func certRows(cl *cli.Client, m *cli.Member, w *tablewriter.Table, fleet bool, now time.Time) int {
	p := memberPrefix(m)
	list, err := send(m, "show ssl cert")
	if err != nil {
		fmt.Fprintln(cl.Err, p+"fulcrumctl:", err)
		return cli.ExitCode(err)
	}
	if cli.IsError(list) {
		fmt.Fprint(cl.Err, p+list)
		return cli.ExitError
	}
	section := ""
	for _, name := range strings.Split(strings.TrimRight(list, "\n"), "\n") {
		if strings.HasPrefix(name, "# ") {
			section = name
			continue
		}
		if name == "" || section == "# transaction" {
			continue // the uncommitted one, shown by show ssl cert *NAME
		}
		d, err := certDetail(m, name)
		if err != nil {
			fmt.Fprintln(cl.Err, p+"fulcrumctl:", err)
			return cli.ExitError
		}
		row := []any{name, d["Status"], d["Serial"], d["notAfter"], daysLeft(d["notAfter"], now), d["Subject"]}
		if fleet {
			row = append([]any{m.Name}, row...)
		}
		w.Append(row...)
	}
	return cli.ExitOK
}

// certDetail returns the fields of `show ssl cert NAME`.
func certDetail(m *cli.Member, name string) (map[string]string, error) {
	reply, err := send(m, "show ssl cert "+name)
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

// send sends one line of the member's session and returns the server's
// reply.
func send(m *cli.Member, line string) (string, error) { return m.Sess.Exec(line) }
