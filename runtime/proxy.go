package runtime

import (
	"errors"
	"math"

	"github.com/fulcrum-proxy/fulcrum/proxy"
)

// Proxy commands: the list of backends and the connection limits of
// frontends and of the process.
var proxyCommands = []Command{
	{Words: []string{"show", "backend"}, Level: LevelUser, Usage: "show backend", Help: "list backends in the current running config", Run: showBackend},
	{Words: []string{"set", "maxconn", "frontend"}, Level: LevelAdmin, Usage: "set maxconn frontend <frontend> <value>", Help: "change a frontend's maxconn setting", Run: setMaxconnFrontend},
	{Words: []string{"disable", "frontend"}, Level: LevelAdmin, Usage: "disable frontend <frontend>", Help: "temporarily disable specific frontend", Run: disableFrontend},
	{Words: []string{"enable", "frontend"}, Level: LevelAdmin, Usage: "enable frontend <frontend>", Help: "re-enable specific frontend", Run: enableFrontend},
	{Words: []string{"shutdown", "frontend"}, Level: LevelAdmin, Usage: "shutdown frontend <frontend>", Help: "stop a specific frontend", Run: shutdownFrontend},
	{Words: []string{"set", "maxconn", "global"}, Level: LevelAdmin, Usage: "set maxconn global <value>", Help: "change the per-process maxconn setting", Run: setMaxconnGlobal},
	{Words: []string{"clear", "counters"}, Level: LevelOperator, LevelOf: clearCountersLevel, Usage: "clear counters [all]", Help: "clear max statistics counters (or all counters)", Run: clearCounters},
}

// clearCountersLevel: "clear counters" is an operator's, "clear counters
// all" an administrator's (HAProxy's cli_parse_clear_counters).
func clearCountersLevel(args []string) Level {
	if arg(args, 0) == "all" {
		return LevelAdmin
	}
	return LevelOperator
}

// clearCounters zeroes the peak values of every frontend, backend and
// server ("clear counters"), or every counter but the current sessions
// ("clear counters all"). HAProxy replies nothing, and ignores any other
// word after "counters".
func clearCounters(c *Context, args []string) error {
	all := arg(args, 0) == "all"
	c.Proxy.ClearCounters(all)
	c.Changed().Bool("all", all).Msg("counters cleared")
	return nil
}

// showBackend lists the backends in configuration order.
func showBackend(c *Context, _ []string) error {
	c.Printf("# name\n")
	for _, b := range c.Proxy.Backends {
		c.Printf("%s\n", b.Name)
	}
	return nil
}

// findFrontend returns the frontend named name, or whose id is #N.
func findFrontend(p *proxy.Proxy, name string) *proxy.Frontend {
	if len(name) > 1 && name[0] == '#' {
		v, rest, ok := strtol(name[1:])
		if !ok || rest != "" {
			return nil
		}
		for _, fe := range p.Frontends {
			if int64(fe.ID) == v {
				return fe
			}
		}
		return nil
	}
	return p.Frontend(name)
}

// atoi is C's atoi: the leading integer, 0 when there is none, clamped to
// the int range.
func atoi(s string) int {
	v, _, _ := strtol(s)
	return int(max(min(v, math.MaxInt32), math.MinInt32))
}

// setMaxconnFrontend changes a frontend's maxconn (0 = unlimited); a value
// that is not a number counts as 0, as HAProxy's atoi.
func setMaxconnFrontend(c *Context, args []string) error {
	fe, err := frontendArg(c, args)
	if err != nil {
		return err
	}
	if arg(args, 1) == "" {
		return reply("Integer value expected.")
	}
	v := atoi(args[1])
	if v < 0 {
		return reply("Value out of range.")
	}
	if old := fe.SetMaxConn(v); old != v {
		c.Changed().Str("frontend", fe.Name).Int("maxconn", v).Int("previous_maxconn", old).Msg("frontend maxconn changed")
	}
	return nil
}

// frontendArg returns the frontend args[0] names, or the reply HAProxy's
// cli_find_frontend gives.
func frontendArg(c *Context, args []string) (*proxy.Frontend, error) {
	name := arg(args, 0)
	if name == "" {
		return nil, reply("A frontend name is expected.")
	}
	fe := findFrontend(c.Proxy, name)
	if fe == nil {
		return nil, reply("No such frontend.")
	}
	return fe, nil
}

// disableFrontend pauses a frontend: its ports stay bound, new
// connections are refused, established ones go on; its status is PAUSED.
// Replies as HAProxy 2.6's.
func disableFrontend(c *Context, args []string) error {
	fe, err := frontendArg(c, args)
	if err != nil {
		return err
	}
	switch err := fe.Pause(); {
	case errors.Is(err, proxy.ErrFrontendShutDown):
		return reply("Frontend was previously shut down, cannot disable.")
	case errors.Is(err, proxy.ErrFrontendAlreadyPaused):
		return reply(err.Error())
	case err != nil:
		c.Changed().Err(err).Str("frontend", fe.Name).Msg("frontend pause failed")
		return reply("Failed to pause frontend, check logs for precise cause.")
	}
	c.Changed().Str("frontend", fe.Name).Msg("frontend paused")
	return nil
}

// enableFrontend resumes a paused frontend. Replies as HAProxy 2.6's.
func enableFrontend(c *Context, args []string) error {
	fe, err := frontendArg(c, args)
	if err != nil {
		return err
	}
	switch err := fe.Resume(); {
	case errors.Is(err, proxy.ErrFrontendShutDown):
		return reply("Frontend was previously shut down, cannot enable.")
	case errors.Is(err, proxy.ErrFrontendAlreadyOpen):
		return reply(err.Error())
	case err != nil:
		c.Changed().Err(err).Str("frontend", fe.Name).Msg("frontend resume failed")
		return reply("Failed to resume frontend, check logs for precise cause (port conflict?).")
	}
	c.Changed().Str("frontend", fe.Name).Msg("frontend resumed")
	return nil
}

// shutdownFrontend closes a frontend's listeners for good (status STOP;
// a reload opens them again); its HTTP connections close after their
// next response (Frontend.Shutdown). As HAProxy's stop, the log line
// gives the connections it accepted.
func shutdownFrontend(c *Context, args []string) error {
	fe, err := frontendArg(c, args)
	if err != nil {
		return err
	}
	if err := fe.Shutdown(); err != nil {
		return reply(err.Error())
	}
	c.Changed().Str("frontend", fe.Name).Int64("cumulated_conns", fe.Counters.Stot.Load()).Msg("frontend stopped")
	return nil
}

// setMaxconnGlobal changes the process's maxconn, within the configured
// one (Hard_maxconn); 0 or less goes back to it (unlimited when the
// configuration sets none).
func setMaxconnGlobal(c *Context, args []string) error {
	if arg(args, 0) == "" {
		return reply("Expects an integer value.")
	}
	v := atoi(args[0])
	hard := c.Proxy.HardMaxConn()
	if hard > 0 && v > hard {
		return reply("Value out of range.")
	}
	if v <= 0 {
		v = hard
	}
	if old := c.Proxy.SetMaxConn(v); old != v {
		c.Changed().Int("maxconn", v).Int("previous_maxconn", old).Msg("global maxconn changed")
	}
	return nil
}
