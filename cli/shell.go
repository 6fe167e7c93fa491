package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/chzyer/readline"
)

// HistoryFile is where the shell keeps its history: $FULCRUMCTL_HISTORY,
// else ~/.fulcrumctl_history.
func HistoryFile() string {
	if f := os.Getenv("FULCRUMCTL_HISTORY"); f != "" {
		return f
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return ""
	}
	return filepath.Join(home, ".fulcrumctl_history")
}

// Shell runs the interactive shell on c until Ctrl-D, `quit` or `exit`:
// readline editing, history in HistoryFile, Tab completion (Completer),
// Ctrl-C cancels the line being typed. When the connection is lost (the
// proxy restarted) the next command reconnects and the shell says so; when
// the socket cannot be reached it says so and keeps the prompt.
func Shell(c *Client, stdin io.ReadCloser) error {
	comp := &Completer{Sess: c.Sess}
	c.Sess.OnReconnect = func() {
		fmt.Fprintf(c.Err, "fulcrumctl: connection lost; reconnected to %s\n", c.Sess.Addr)
		comp.usage = nil // under comp.mu: Exec runs with it held
	}
	prompt := filepath.Base(string(c.Sess.Addr)) + "> "
	rl, err := readline.NewEx(&readline.Config{
		Prompt:          prompt,
		HistoryFile:     HistoryFile(),
		AutoComplete:    comp,
		InterruptPrompt: "^C",
		EOFPrompt:       "",
		Stdin:           stdin,
		Stdout:          c.Out,
		Stderr:          c.Err,
	})
	if err != nil {
		return err
	}
	defer rl.Close()
	fmt.Fprintf(c.Out, "Connected to %s. Tab completes, Ctrl-C cancels the line, Ctrl-D quits.\n", c.Sess.Addr)
	c.KeepGoing = true
	for {
		if c.InPayload() {
			rl.SetPrompt("+ ")
		} else {
			rl.SetPrompt(prompt)
		}
		line, err := rl.Readline()
		if errors.Is(err, readline.ErrInterrupt) {
			continue
		}
		if err != nil { // io.EOF: Ctrl-D
			return nil
		}
		if !c.InPayload() {
			line = strings.TrimSpace(line)
			switch line {
			case "":
				continue
			case "quit", "exit":
				return nil
			}
		}
		comp.mu.Lock()
		err = c.Do(line)
		comp.mu.Unlock()
		if errors.Is(err, ErrUnreachable) {
			fmt.Fprintf(c.Err, "fulcrumctl: %v (retrying at the next command)\n", err)
		} else if err != nil && !errors.Is(err, ErrReply) {
			fmt.Fprintf(c.Err, "fulcrumctl: %v\n", err)
		}
	}
}
