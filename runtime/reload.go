package runtime

import "strings"

// Reload commands: the configuration file read again (issue 11).
var reloadCommands = []Command{
	{Words: []string{"reload"}, Level: LevelAdmin, Usage: "reload", Help: "reload the configuration file (the old one keeps serving if it is invalid)", Run: reload, unheld: true},
}

// reload runs the daemon's reload (Options.Reload, set whenever this
// command is in the table). The reply is HAProxy's
// master CLI one (2.9+): "Success=1", then "--", then nothing; or
// "Success=0", "--" and the configuration's errors, one per line, when the
// file is invalid and nothing changed.
func reload(c *Context, args []string) error {
	if err := c.api.opts.Reload(); err != nil {
		return reply("Success=0\n--\n" + strings.TrimRight(err.Error(), "\n"))
	}
	return reply("Success=1\n--")
}
