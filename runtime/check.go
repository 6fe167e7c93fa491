package runtime

import (
	"errors"
	"net/netip"
	"strconv"

	"github.com/fulcrum-proxy/fulcrum/proxy"
	"github.com/fulcrum-proxy/fulcrum/proxy/check"
)

// Health and agent check commands (HAProxy's server.c cli_kws): enabling
// and disabling the checks, and the `set server` subcommands that force
// their verdicts or move their targets. Every one goes through the server's
// check state (check.Of), so that the checks, the admin state and the
// stats stay in step.
var checkCommands = []Command{
	{Words: []string{"enable", "health"}, Level: LevelAdmin, Usage: "enable health", Help: "enable health checks", Run: checkToggle(true, false)},
	{Words: []string{"disable", "health"}, Level: LevelAdmin, Usage: "disable health", Help: "disable health checks", Run: checkToggle(false, false)},
	{Words: []string{"enable", "agent"}, Level: LevelAdmin, Usage: "enable agent", Help: "enable agent checks", Run: checkToggle(true, true)},
	{Words: []string{"disable", "agent"}, Level: LevelAdmin, Usage: "disable agent", Help: "disable agent checks", Run: checkToggle(false, true)},
}

// Replies of the check commands, with HAProxy's texts. The ones that
// srv_update_{agent,check}_addr_port build are sent without a line feed
// (runtime-api.md 4.99).
var (
	errHealthNotConfigured = reply("Health check was not configured on this server, cannot enable.")
	errAgentNotConfigured  = reply("Agent was not configured on this server, cannot enable.")
	errAgentNotEnabled     = reply("agent checks are not enabled on this server.")
	errAgentNotEnabledNoLF = replyNoLF("agent checks are not enabled on this server")
	errHealthNotEnabled    = replyNoLF("health checks are not enabled on this server")
	errPortNotInteger      = replyNoLF("provided port is not an integer")
	errPortInvalid         = replyNoLF("provided port is invalid")
)

// checkToggle returns the handler of `enable|disable health|agent <b>/<s>`:
// enable answers HAProxy's error on a server whose configuration has no
// such check; disable on it is a silent no-op.
func checkToggle(enable, agent bool) func(*Context, []string) error {
	what := "health"
	if agent {
		what = "agent"
	}
	return func(c *Context, args []string) error {
		b, s, err := findServer(c.Proxy, arg(args, 0))
		if err != nil {
			return err
		}
		cs := check.Of(s)
		before := cs.Info()
		was := before.HealthEnabled
		if agent {
			was = before.AgentEnabled
		}
		switch {
		case enable && agent:
			if cs.EnableAgent() != nil {
				return errAgentNotConfigured
			}
		case enable:
			if cs.EnableHealth() != nil {
				return errHealthNotConfigured
			}
		case agent:
			cs.DisableAgent()
		default:
			cs.DisableHealth()
		}
		if was != enable {
			msg := "server " + what + " check disabled"
			if enable {
				msg = "server " + what + " check enabled"
			}
			c.Changed().Str("server", fullName(b, s)).Bool(what+"_enabled", enable).Bool("previous_"+what+"_enabled", was).Msg(msg)
		}
		return nil
	}
}

// setServerHealth is `set server <b>/<s> health up|stopping|down`: it
// forces the health verdict, with or without checks; the next check result
// moves the counter from there.
func setServerHealth(c *Context, b *proxy.Backend, s *proxy.Server, args []string) error {
	var h check.Health
	switch arg(args, 0) {
	case "up":
		h = check.HealthUp
	case "stopping":
		h = check.HealthStopping
	case "down":
		h = check.HealthDown
	default:
		return reply("'set server <srv> health' expects 'up', 'stopping', or 'down'.")
	}
	old := s.Op()
	check.Of(s).SetHealth(h)
	if now := s.Op(); now != old {
		c.Changed().Str("server", fullName(b, s)).Str("op_state", opName(now)).Str("previous_op_state", opName(old)).Msg("server health changed")
	}
	return nil
}

// setServerAgent is `set server <b>/<s> agent up|down`: it forces the
// agent's verdict until its next reply.
func setServerAgent(c *Context, b *proxy.Backend, s *proxy.Server, args []string) error {
	cs := check.Of(s)
	if !cs.Info().AgentEnabled {
		return errAgentNotEnabled
	}
	var up bool
	switch arg(args, 0) {
	case "up":
		up = true
	case "down":
	default:
		return reply("'set server <srv> agent' expects 'up' or 'down'.")
	}
	old := s.Op()
	if err := cs.SetAgent(up); err != nil {
		return errAgentNotEnabled // disabled meanwhile
	}
	c.Changed().Str("server", fullName(b, s)).Bool("agent_up", up).Str("op_state", opName(s.Op())).
		Str("previous_op_state", opName(old)).Msg("server agent verdict forced")
	return nil
}

// parseCheckAddr reads an address as HAProxy's str2ip: an IPv4 or IPv6
// address, answered "invalid addr '<x>'" (no line feed) otherwise.
func parseCheckAddr(addr string) (string, error) {
	ip, err := netip.ParseAddr(addr)
	if err != nil || ip.Zone() != "" {
		return "", replyNoLF("invalid addr '" + addr + "'")
	}
	return ip.String(), nil
}

// parseCheckPort reads a port as HAProxy's strl2irc and its range check.
func parseCheckPort(port string) (int, error) {
	v, rest, ok := strtol(port)
	if !ok || rest != "" || port[0] == ' ' || port[0] == '\t' {
		return 0, errPortNotInteger
	}
	if v < 0 || v > 65535 {
		return 0, errPortInvalid
	}
	return int(v), nil
}

// setServerCheckAddr is `set server <b>/<s> check-addr <ip> [port <p>]`:
// HAProxy's srv_update_check_addr_port, checks in its order: checks
// configured, then the address, then the port.
func setServerCheckAddr(c *Context, b *proxy.Backend, s *proxy.Server, args []string) error {
	if arg(args, 0) == "" {
		return reply("set server <b>/<s> check-addr requires an address and optionally a port.")
	}
	port := ""
	if arg(args, 1) == "port" {
		port = arg(args, 2)
	}
	return updateCheckTarget(c, b, s, args[0], port, true)
}

// setServerCheckPort is `set server <b>/<s> check-port <p>`.
func setServerCheckPort(c *Context, b *proxy.Backend, s *proxy.Server, args []string) error {
	if arg(args, 0) == "" {
		return reply("set server <b>/<s> check-port requires a port.")
	}
	return updateCheckTarget(c, b, s, "", args[0], false)
}

// updateCheckTarget validates and applies a new health-check address
// and/or port ("" = unchanged).
func updateCheckTarget(c *Context, b *proxy.Backend, s *proxy.Server, addr, port string, withAddr bool) error {
	cs := check.Of(s)
	info := cs.Info()
	if !info.HealthConfigured {
		return errHealthNotEnabled
	}
	host, p := info.CheckAddr, info.CheckPort
	var err error
	if withAddr {
		if host, err = parseCheckAddr(addr); err != nil {
			return err
		}
	}
	if port != "" {
		if p, err = parseCheckPort(port); err != nil {
			return err
		}
	}
	if err := cs.SetCheckTarget(host, p); errors.Is(err, check.ErrHealthNotConfigured) {
		return errHealthNotEnabled
	}
	if host != info.CheckAddr || p != info.CheckPort {
		c.Changed().Str("server", fullName(b, s)).Str("check_addr", host).Int("check_port", p).
			Str("previous_check_addr", info.CheckAddr).Int("previous_check_port", info.CheckPort).Msg("server check target changed")
	}
	return nil
}

// setServerAgentAddr is `set server <b>/<s> agent-addr <ip> [port <p>]`
// (HAProxy's srv_update_agent_addr_port: agent enabled, then the address,
// then the port).
func setServerAgentAddr(c *Context, b *proxy.Backend, s *proxy.Server, args []string) error {
	if arg(args, 0) == "" {
		return reply("set server <b>/<s> agent-addr requires an address and optionally a port.")
	}
	port := ""
	if arg(args, 1) == "port" {
		port = arg(args, 2)
	}
	return updateAgentTarget(c, b, s, args[0], port)
}

// setServerAgentPort is `set server <b>/<s> agent-port <p>`.
func setServerAgentPort(c *Context, b *proxy.Backend, s *proxy.Server, args []string) error {
	if arg(args, 0) == "" {
		return reply("set server <b>/<s> agent-port requires a port.")
	}
	return updateAgentTarget(c, b, s, "", args[0])
}

// updateAgentTarget validates, then applies, a new agent address and/or
// port ("" = unchanged): nothing changes unless both are valid.
func updateAgentTarget(c *Context, b *proxy.Backend, s *proxy.Server, addr, port string) error {
	cs := check.Of(s)
	info := cs.Info()
	if !info.AgentEnabled {
		return errAgentNotEnabledNoLF
	}
	host, p := info.AgentAddr, info.AgentPort
	var err error
	if addr != "" {
		if host, err = parseCheckAddr(addr); err != nil {
			return err
		}
	}
	if port != "" {
		if p, err = parseCheckPort(port); err != nil {
			return err
		}
	}
	if host != info.AgentAddr {
		if cs.SetAgentAddr(host) != nil {
			return errAgentNotEnabledNoLF
		}
	}
	if p != info.AgentPort {
		if cs.SetAgentPort(p) != nil {
			return errAgentNotEnabledNoLF
		}
	}
	if host != info.AgentAddr || p != info.AgentPort {
		c.Changed().Str("server", fullName(b, s)).Str("agent_addr", host).Int("agent_port", p).
			Str("previous_agent_addr", info.AgentAddr).Int("previous_agent_port", info.AgentPort).Msg("server agent target changed")
	}
	return nil
}

// setServerAgentSend is `set server <b>/<s> agent-send <string>`: the
// string the agent check sends from its next probe on.
func setServerAgentSend(c *Context, b *proxy.Backend, s *proxy.Server, args []string) error {
	cs := check.Of(s)
	info := cs.Info()
	send := arg(args, 0)
	if cs.SetAgentSend(send) != nil {
		return errAgentNotEnabled
	}
	if send != info.AgentSend {
		c.Changed().Str("server", fullName(b, s)).Str("agent_send", strconv.Quote(send)).
			Str("previous_agent_send", strconv.Quote(info.AgentSend)).Msg("server agent-send changed")
	}
	return nil
}

// opName names an operational state in change logs as stats print it.
func opName(o proxy.OpState) string {
	switch o {
	case proxy.OpDown:
		return "DOWN"
	case proxy.OpStopping:
		return "NOLB"
	}
	return "UP"
}
