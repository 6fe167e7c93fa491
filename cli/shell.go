package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

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

// ShellIdleTimeout is the idle timeout the shell asks of the server
// (`set timeout cli`), in seconds; the shell says something every third of
// it (Session.Ping) while the operator thinks, so that the session is not
// closed under them.
const ShellIdleTimeout = 60

// Shell runs the interactive shell on c until Ctrl-D, `quit` or `exit`:
// readline editing, history in HistoryFile, Tab completion (Completer),
// Ctrl-C cancels the line being typed. fulcrumctl's verbs (drain, ready,
// watch...) run as on the command line. The sessions are kept open while
// idle; when a connection is lost anyway (the proxy restarted) the next
// command reconnects at the level the operator had chosen (`user`,
// `operator`) and the shell says so; when a socket cannot be reached it
// says so and keeps the prompt. On a fleet each line goes to every
// member (Client.Do), completion reads the first member that answers,
// and a member that cannot be reached is tried again at each command.
func Shell(c *Client, stdin io.ReadCloser, verbs []Verb) error {
	first := c.Members[0]
	for _, m := range c.Members {
		if m.dialErr == nil {
			first = m
			break
		}
	}
	fleet := first.Name != ""
	if fleet { // sessions redial at once, from several goroutines
		c.Err = &lockedWriter{w: c.Err}
	}
	comp := &Completer{Sess: first.Sess, Verbs: verbs}
	idle := fmt.Sprintf("set timeout cli %d", ShellIdleTimeout)
	var reached []*Member
	for _, m := range c.Members {
		m.Sess.Init = append(m.Sess.Init, idle)
		m.Sess.OnReconnect = func(level string) {
			msg := "fulcrumctl: " + m.prefix() + "connection lost; reconnected to " + string(m.Sess.Addr)
			if level != "" {
				msg += " at level " + level
			}
			fmt.Fprintln(c.Err, msg)
			if m == first {
				comp.usage = nil // under comp.mu: Exec runs with it held
			}
		}
		if err := m.dialErr; err != nil {
			fmt.Fprintf(c.Err, "fulcrumctl: %s%v (retrying at the next command)\n", m.prefix(), err)
			m.dialErr = nil
			continue
		}
		reached = append(reached, m)
	}
	comp.mu.Lock()
	each(reached, c.Parallel, func(_ int, m *Member) { m.Sess.Exec(idle) }) // dialled before Init had it
	comp.mu.Unlock()
	prompt := filepath.Base(string(first.Sess.Addr)) + "> "
	banner := "Connected to " + string(first.Sess.Addr) + "."
	if fleet {
		var names []string
		for _, m := range c.Members {
			names = append(names, m.Name)
		}
		list := strings.Join(names, ",")
		if len([]rune(list)) > 30 {
			list = fmt.Sprintf("%d instances", len(names))
		}
		prompt = list + "> "
		banner = fmt.Sprintf("Fleet of %d instances (%s): each line goes to all of them.", len(names), strings.Join(names, ", "))
	}
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
	c.Width = func() int { return rl.Config.FuncGetWidth() }
	c.Confirm = func(question string) bool {
		rl.SetPrompt(question)
		defer rl.SetPrompt(prompt)
		answer, err := rl.Readline()
		a := strings.ToLower(strings.TrimSpace(answer))
		return err == nil && (a == "y" || a == "yes")
	}
	stop := keepAlive(c, &comp.mu)
	defer stop()
	fmt.Fprintln(c.Out, banner+" Tab completes, Ctrl-C cancels the line, Ctrl-D quits.")
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
			if v, args := comp.verb(splitArgs(line)); v != nil {
				comp.mu.Lock()
				v.Run(args)
				comp.mu.Unlock()
				continue
			}
		}
		comp.mu.Lock()
		c.Do(line) // it prints what went wrong; the shell goes on
		comp.mu.Unlock()
	}
}

// lockedWriter serialises the writes of several goroutines to w.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// keepAlive pings the members' sessions once they have been idle for
// Session.KeepAliveEvery, while no command runs (mu is held by the
// commands) and no server waits for payload lines. It looks at most every
// 200ms, so that a shorter idle timeout set meanwhile (`set timeout cli
// 1`) is kept too. It returns the func that stops it.
func keepAlive(c *Client, mu *sync.Mutex) func() {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			mu.Lock()
			every := c.Members[0].Sess.KeepAliveEvery()
			for _, m := range c.Members[1:] {
				every = min(every, m.Sess.KeepAliveEvery())
			}
			mu.Unlock()
			t := time.NewTimer(min(every, 200*time.Millisecond))
			select {
			case <-done:
				t.Stop()
				return
			case <-t.C:
			}
			mu.Lock()
			if !c.InPayload() {
				for _, m := range c.Members {
					if m.Sess.IdleFor() >= every {
						m.Sess.Ping()
					}
				}
			}
			mu.Unlock()
		}
	}()
	return func() {
		close(done)
		wg.Wait()
	}
}

// splitArgs splits a verb's line into words as a shell would: quotes
// group ('web/*', "a b") and are removed.
func splitArgs(line string) []string {
	var out []string
	var w strings.Builder
	in, quote := false, byte(0)
	for i := 0; i < len(line); i++ {
		ch := line[i]
		switch {
		case quote != 0 && ch == quote:
			quote = 0
		case quote != 0:
			w.WriteByte(ch)
		case ch == '\'' || ch == '"':
			quote, in = ch, true
		case ch == ' ' || ch == '\t':
			if in {
				out = append(out, w.String())
				w.Reset()
				in = false
			}
		default:
			w.WriteByte(ch)
			in = true
		}
	}
	if in {
		out = append(out, w.String())
	}
	return out
}
