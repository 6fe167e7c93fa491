package runtime

import (
	"math"
	"strconv"
	"strings"
	"time"
)

// The commands about the session itself: help, prompt, quit, levels,
// timeouts, and what the process says about its sockets and version.
var cliCommands = []Command{
	{Words: []string{"help"}, Level: LevelUser, Usage: "help [<command>]", Help: "list matching or all commands", Run: runHelp},
	{Words: []string{"prompt"}, Level: LevelUser, Usage: "prompt", Help: "toggle interactive mode with prompt", Run: runPrompt},
	{Words: []string{"quit"}, Level: LevelUser, Usage: "quit", Help: "disconnect", Run: runQuit},
	{Words: []string{"operator"}, Level: LevelOperator, Usage: "operator", Help: "lower the level of the current CLI session to operator", Run: lowerLevel(LevelOperator)},
	{Words: []string{"user"}, Level: LevelUser, Usage: "user", Help: "lower the level of the current CLI session to user", Run: lowerLevel(LevelUser)},
	{Words: []string{"show", "cli", "level"}, Level: LevelUser, Usage: "show cli level", Help: "display the level of the current CLI session", Run: showCLILevel},
	{Words: []string{"show", "cli", "sockets"}, Level: LevelUser, Usage: "show cli sockets", Help: "dump list of cli sockets", Run: showCLISockets},
	{Words: []string{"show", "version"}, Level: LevelUser, Usage: "show version", Help: "show version of the current process", Run: showVersion},
	{Words: []string{"set", "timeout"}, Level: LevelUser, Usage: "set timeout [cli] <delay>", Help: "change a timeout setting", Run: setTimeout},
}

// runHelp lists the commands of the session's level, or those matching the
// words given.
func runHelp(c *Context, args []string) error {
	c.Printf("%s", c.api.table.usage(c.sess.level, args, true))
	return nil
}

// runPrompt toggles interactive mode (the dispatcher reads the flag to
// frame this very reply).
func runPrompt(c *Context, _ []string) error {
	c.sess.prompt = !c.sess.prompt
	return nil
}

// runQuit ends the session without a reply.
func runQuit(c *Context, _ []string) error {
	c.sess.quit = true
	return nil
}

// lowerLevel returns the handler of `operator` and `user`: the session's
// level drops to l, never rises (the command's own level refuses that).
func lowerLevel(l Level) func(*Context, []string) error {
	return func(c *Context, _ []string) error {
		c.sess.level = min(c.sess.level, l)
		return nil
	}
}

func showCLILevel(c *Context, _ []string) error {
	c.Printf("%s\n", c.sess.level)
	return nil
}

// showCLISockets lists the listening sockets: `# socket lvl processes`.
func showCLISockets(c *Context, _ []string) error {
	c.Printf("# socket lvl processes\n")
	c.api.mu.Lock()
	defer c.api.mu.Unlock()
	for _, l := range c.api.listeners {
		c.Printf("%s %s all\n", l.name, l.level)
	}
	return nil
}

func showVersion(c *Context, _ []string) error {
	c.Printf("%s\n", c.api.opts.Version)
	return nil
}

// setTimeout is `set timeout cli <delay>`: the session's idle timeout, in
// seconds unless a unit is given (hatop sends `set timeout cli 60`).
func setTimeout(c *Context, args []string) error {
	if len(args) == 0 || args[0] != "cli" {
		return reply("'set timeout' only supports 'cli'.")
	}
	if len(args) < 2 || args[1] == "" {
		return reply("Expects an integer value.")
	}
	d, ok := parseHAProxyTime(args[1], time.Second)
	if !ok || d < time.Second {
		return reply("Invalid timeout value.")
	}
	c.sess.timeout = d
	return nil
}

// parseHAProxyTime parses a delay as HAProxy's parse_time_err: digits,
// then an optional unit (us, ms, s, m, h, d); unit applies without one.
func parseHAProxyTime(s string, unit time.Duration) (time.Duration, bool) {
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	if i == 0 {
		return 0, false
	}
	n, err := strconv.ParseInt(s[:i], 10, 64)
	if err != nil {
		return 0, false
	}
	switch strings.ToLower(s[i:]) {
	case "":
	case "us":
		unit = time.Microsecond
	case "ms":
		unit = time.Millisecond
	case "s":
		unit = time.Second
	case "m":
		unit = time.Minute
	case "h":
		unit = time.Hour
	case "d":
		unit = 24 * time.Hour
	default:
		return 0, false
	}
	if n > int64(math.MaxInt64/unit) {
		return 0, false
	}
	return time.Duration(n) * unit, true
}
