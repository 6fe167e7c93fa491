package cli

import (
	"errors"
	"fmt"
	"io"
	"strings"
)

// ErrReply is returned by Client.Do when the server answered a command
// with one of its error messages (see IsError).
var ErrReply = errors.New("error reply")

// Client runs command lines on a Session and prints the replies: the one
// code path of the one-shot mode, -c, commands from stdin and the shell.
type Client struct {
	Sess   *Session
	Out    io.Writer // replies
	Err    io.Writer // error replies
	Format Format    // FormatAuto renders the tables it recognises
	Colour bool      // colour statuses in tables
	// KeepGoing runs the commands after an error reply (the shell); else
	// Do stops at the first one (scripts).
	KeepGoing bool

	payload bool // the server is reading the lines of a payload
}

// InPayload reports whether the server waits for payload lines (it
// answered "+ "): the next lines are sent as they are, until an empty one.
func (c *Client) InPayload() bool { return c.payload }

// Do runs the commands of one line, separated by ';', and prints each
// reply. It returns ErrReply if a command got an error reply (printed on
// Err), or the Session's error (ErrUnreachable when the socket is gone).
func (c *Client) Do(line string) error {
	if c.payload {
		reply, err := c.Sess.Exec(line)
		if err != nil {
			c.payload = false
			return err
		}
		return c.print(reply, c.Format)
	}
	var failed error
	for _, cmd := range SplitCommands(line) {
		cmd, f := cutFlags(cmd, c.Format)
		reply, err := c.Sess.Exec(cmd)
		if err != nil {
			return err
		}
		if err := c.print(reply, f); err != nil {
			failed = err
			if !c.KeepGoing {
				return err
			}
		}
	}
	return failed
}

func (c *Client) print(reply string, f Format) error {
	if reply == "+ " {
		c.payload = true
		return nil
	}
	c.payload = false
	if IsError(reply) {
		fmt.Fprint(c.Err, withNewline(reply))
		return ErrReply
	}
	switch f {
	case FormatRaw:
		fmt.Fprint(c.Out, reply)
	case FormatJSON:
		c.Out.Write(ToJSON(reply))
	default:
		if t, ok := ParseTable(reply); ok {
			fmt.Fprint(c.Out, t.Render(c.Colour, 0))
		} else {
			fmt.Fprint(c.Out, withNewline(reply))
		}
	}
	return nil
}

func withNewline(s string) string {
	if s == "" || strings.HasSuffix(s, "\n") {
		return s
	}
	return s + "\n"
}

func isUnreachable(err error) bool { return errors.Is(err, ErrUnreachable) }

// ExitCode maps an error of Client.Do to fulcrumctl's exit code: 0, 1 for
// an error reply, 2 when the socket cannot be reached.
func ExitCode(err error) int { return exitCode(err) }
