package runtime

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/fulcrum-proxy/fulcrum/proxy"
	"github.com/fulcrum-proxy/fulcrum/proxy/check"
)

// Server commands: weights, admin states, addresses, and the dumps of the
// servers' state and connections (HAProxy's server.c cli_kws).
var serverCommands = []Command{
	{Words: []string{"get", "weight"}, Level: LevelUser, Usage: "get weight <bk>/<srv>", Help: "report a server's current weight", Run: getWeight},
	{Words: []string{"set", "weight"}, Level: LevelOperator, Usage: "set weight <bk>/<srv>  (DEPRECATED)", Help: "change a server's weight (use 'set server' instead)", Run: setWeightCmd},
	{Words: []string{"set", "server"}, Level: LevelOperator, LevelOf: setServerLevel, Usage: "set server <bk>/<srv> [opts]", Help: "change a server's state, weight, address or ssl", Run: setServer},
	{Words: []string{"enable", "server"}, Level: LevelOperator, Usage: "enable server  (DEPRECATED)", Help: "enable a disabled server (use 'set server' instead)", Run: setAdminCmd(proxy.AdminReady)},
	{Words: []string{"disable", "server"}, Level: LevelOperator, Usage: "disable server (DEPRECATED)", Help: "disable a server for maintenance (use 'set server' instead)", Run: setAdminCmd(proxy.AdminMaint)},
	{Words: []string{"show", "servers", "state"}, Level: LevelUser, Usage: "show servers state [<backend>]", Help: "dump volatile server information (all or for a single backend)", Run: showServersState},
	{Words: []string{"show", "servers", "conn"}, Level: LevelUser, Usage: "show servers conn [<backend>]", Help: "dump server connections status (all or for a single backend)", Run: showServersConn},
	{Words: []string{"set", "maxconn", "server"}, Level: LevelAdmin, Usage: "set maxconn server <bk>/<srv>", Help: "change a server's maxconn setting", Run: setMaxconnServer},
	{Words: []string{"shutdown", "sessions", "server"}, Level: LevelAdmin, Usage: "shutdown sessions server <bk>/<srv>", Help: "kill sessions on a server", Run: shutdownSessionsServer},
}

// setServerOps are the subcommands of `set server <b>/<s>`, one row each,
// in HAProxy's order, with the level each needs; the usage reply lists the
// ones the session's level may run.
//
// Weights and states (the admin state, and the verdicts of the health and
// agent checks, which set the operational state) are operator's, as the
// Runtime API issue's levels ask; HAProxy 2.6 asks admin for every
// subcommand. What moves a server or its checks elsewhere (addresses,
// ports, the agent's string) stays admin's.
//
// maxconn is fulcrum's: `set server <b>/<s> maxconn N` is HAProxy's
// `set maxconn server <b>/<s> N` spelled as the other server settings (the
// Runtime API issue lists it); it is not in the usage reply, which stays
// HAProxy's list.
var setServerOps = []struct {
	name   string
	level  Level
	run    func(c *Context, b *proxy.Backend, s *proxy.Server, args []string) error
	hidden bool // not listed in the usage reply
}{
	{"addr", LevelAdmin, setServerAddr, false},
	{"agent", LevelOperator, setServerAgent, false},
	{"agent-addr", LevelAdmin, setServerAgentAddr, false},
	{"agent-port", LevelAdmin, setServerAgentPort, false},
	{"agent-send", LevelAdmin, setServerAgentSend, false},
	{"check-addr", LevelAdmin, setServerCheckAddr, false},
	{"check-port", LevelAdmin, setServerCheckPort, false},
	{"fqdn", LevelAdmin, setServerFQDN, false},
	{"health", LevelOperator, setServerHealth, false},
	{"maxconn", LevelAdmin, func(c *Context, b *proxy.Backend, s *proxy.Server, args []string) error {
		return setServerMaxconn(c, b, s, arg(args, 0))
	}, true},
	{"ssl", LevelAdmin, setServerSSL, false},
	{"state", LevelOperator, setServerState, false},
	{"weight", LevelOperator, func(c *Context, b *proxy.Backend, s *proxy.Server, args []string) error {
		return setWeight(c, b, s, arg(args, 0))
	}, false},
}

// setServerLevel is the level `set server <b>/<s> <subcommand> ...` needs:
// the subcommand's. A missing or unknown one gets the usage reply, which
// any level that may run some subcommand may read.
func setServerLevel(args []string) Level {
	sub := arg(args, 1)
	for _, op := range setServerOps {
		if op.name == sub {
			return op.level
		}
	}
	return LevelOperator
}

// arg returns args[i], or "" past the end (HAProxy's empty argument).
func arg(args []string, i int) string {
	if i < len(args) {
		return args[i]
	}
	return ""
}

// findBackend returns the backend named name, or whose id is #N.
func findBackend(p *proxy.Proxy, name string) *proxy.Backend {
	if id, ok := strings.CutPrefix(name, "#"); ok {
		n, err := strconv.Atoi(id)
		if err != nil {
			return nil
		}
		for _, b := range p.Backends {
			if b.ID == n {
				return b
			}
		}
		return nil
	}
	return p.Backend(name)
}

// findServer resolves "<backend>/<server>", each a name or #id, with
// HAProxy's replies (cli_find_server): a missing "/" or argument, then an
// unknown backend, then an unknown server.
func findServer(p *proxy.Proxy, spec string) (*proxy.Backend, *proxy.Server, error) {
	bname, sname, ok := strings.Cut(spec, "/")
	if !ok || bname == "" || sname == "" {
		// "be/" and "/s1" too, as HAProxy 2.6 answers them (checked on
		// loopback with set server, set weight, get weight and disable
		// server).
		return nil, nil, errRequireServer
	}
	b := findBackend(p, bname)
	if b == nil {
		return nil, nil, errNoBackend
	}
	if id, ok := strings.CutPrefix(sname, "#"); ok {
		if n, err := strconv.Atoi(id); err == nil {
			for _, s := range b.Servers() {
				if s.ID == n {
					return b, s, nil
				}
			}
		}
		return nil, nil, errNoServer
	}
	s := b.Server(sname)
	if s == nil {
		return nil, nil, errNoServer
	}
	return b, s, nil
}

// fullName is "backend/server", as logs and messages name a server.
func fullName(b *proxy.Backend, s *proxy.Server) string { return b.Name + "/" + s.Name }

func getWeight(c *Context, args []string) error {
	_, s, err := findServer(c.Proxy, arg(args, 0))
	if err != nil {
		return err
	}
	c.Printf("%d (initial %d)\n", s.UserWeight.Load(), s.InitialWeight)
	return nil
}

func setWeightCmd(c *Context, args []string) error {
	b, s, err := findServer(c.Proxy, arg(args, 0))
	if err != nil {
		return err
	}
	return setWeight(c, b, s, arg(args, 1))
}

// setWeight applies `set weight` / `set server ... weight`: an absolute
// weight 0..256 or a percentage of the initial weight, with HAProxy's
// replies (server_parse_weight_change_request).
func setWeight(c *Context, b *proxy.Backend, s *proxy.Server, value string) error {
	w, err := parseWeight(value, s.InitialWeight, b.Dynamic())
	if err != nil {
		return err
	}
	old, err := b.SetWeight(s, w)
	if err != nil {
		return reply("Absolute weight can only be between 0 and 256 inclusive.")
	}
	if old != w {
		c.Changed().Str("server", fullName(b, s)).Int("weight", w).Int("previous_weight", old).Msg("server weight changed")
	}
	return nil
}

// parseWeight reads a weight as HAProxy does, with its checks in its order:
// the value is read as C's strtol, so "300abc" is out of range before it
// is trailing garbage. A percentage applies to the initial weight and is
// capped at 256. With a static algorithm only 0 and the initial weight are
// accepted.
func parseWeight(value string, initial int, dynamic bool) (int, error) {
	if value == "" {
		return 0, reply("Require <weight> or <weight%>.")
	}
	v, rest, ok := strtol(value)
	switch {
	case !ok:
		return 0, replyNoLF("Empty weight string empty or preceded by garbage")
	case rest == "%":
		if v < 0 {
			return 0, reply("Relative weight must be positive.")
		}
		v = min(v, 25600) // as HAProxy, against overflow
		v = min(int64(initial)*v/100, 256)
	case v < 0 || v > 256:
		return 0, reply("Absolute weight can only be between 0 and 256 inclusive.")
	case rest != "":
		return 0, replyNoLF("Trailing garbage in weight string")
	}
	if v != 0 && int(v) != initial && !dynamic {
		return 0, reply("Backend is using a static LB algorithm and only accepts weights '0%' and '100%'.")
	}
	return int(v), nil
}

// strtol reads a leading base-10 integer as C's strtol: blanks, a sign,
// digits (saturating). ok is false when no digit was read; rest is what
// follows the number.
func strtol(s string) (v int64, rest string, ok bool) {
	i := 0
	for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\v' || s[i] == '\f' || s[i] == '\r') {
		i++
	}
	neg := false
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		neg = s[i] == '-'
		i++
	}
	start := i
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		d := int64(s[i] - '0')
		if v > (math.MaxInt64-d)/10 {
			v = math.MaxInt64
		} else if v != math.MaxInt64 {
			v = v*10 + d
		}
		i++
	}
	if i == start {
		return 0, s, false
	}
	if neg {
		v = -v
	}
	return v, s[i:], true
}

// setAdminCmd returns the handler of `enable server` (ready) and `disable
// server` (maint), which differ only by the state they set.
func setAdminCmd(state proxy.AdminState) func(*Context, []string) error {
	return func(c *Context, args []string) error {
		b, s, err := findServer(c.Proxy, arg(args, 0))
		if err != nil {
			return err
		}
		setAdmin(c, b, s, state)
		return nil
	}
}

// setAdmin sets s's admin state through its check state, so that the
// checks pause in MAINT and restart at rise when it ends, and logs the
// change. Entering maintenance also closes s's idle connections: the
// server is about to be stopped or redeployed, and the next request after
// `ready` must not meet a dead one.
func setAdmin(c *Context, b *proxy.Backend, s *proxy.Server, state proxy.AdminState) {
	old := check.Of(s).SetAdmin(state)
	if state == proxy.AdminMaint {
		s.CloseIdle()
	}
	if old != state {
		c.Changed().Str("server", fullName(b, s)).Stringer("state", state).Stringer("previous_state", old).Msg("server state changed")
	}
}

// setServer is `set server <b>/<s> <subcommand> ...`.
func setServer(c *Context, args []string) error {
	b, s, err := findServer(c.Proxy, arg(args, 0))
	if err != nil {
		return err
	}
	sub := arg(args, 1)
	for _, op := range setServerOps {
		if op.name == sub {
			return op.run(c, b, s, args[2:])
		}
	}
	// The usage lists the subcommands the session may run, as help does:
	// HAProxy's whole list at admin.
	var names []string
	for _, op := range setServerOps {
		if op.level <= c.Level() && !op.hidden {
			names = append(names, op.name)
		}
	}
	return reply("usage: set server <backend>/<server> " + strings.Join(names, " | "))
}

func setServerState(c *Context, b *proxy.Backend, s *proxy.Server, args []string) error {
	var state proxy.AdminState
	switch arg(args, 0) {
	case "ready":
		state = proxy.AdminReady
	case "drain":
		state = proxy.AdminDrain
	case "maint":
		state = proxy.AdminMaint
	default:
		return reply("'set server <srv> state' expects 'ready', 'drain' and 'maint'.")
	}
	setAdmin(c, b, s, state)
	return nil
}

// setServerFQDN is `set server <b>/<s> fqdn <name>`: a server resolved by
// DNS resolves name from now on (proxy/resolve), with HAProxy's replies
// (server.c srv_update_fqdn, "FDQN" as it spells it).
func setServerFQDN(c *Context, b *proxy.Backend, s *proxy.Server, args []string) error {
	name := arg(args, 0)
	if name == "" {
		return reply("set server <b>/<s> fqdn requires a FQDN.")
	}
	old, err := c.Proxy.SetFQDN(s, name)
	switch {
	case errors.Is(err, proxy.ErrNoResolution):
		return reply("set server <b>/<s> fqdn failed because no resolution is configured.")
	case errors.Is(err, proxy.ErrSRVResolution):
		return reply("set server <b>/<s> fqdn failed because SRV resolution is configured.")
	case errors.Is(err, proxy.ErrInvalidFQDN):
		return reply("invalid fqdn '" + name + "' by 'stats socket command'")
	case old == name:
		return reply("no need to change the FDQN by 'stats socket command'")
	}
	c.Changed().Str("server", fullName(b, s)).Str("fqdn", name).Str("previous_fqdn", old).Msg("server FQDN changed")
	return reply(fmt.Sprintf("%s/%s changed its FQDN from %s to %s by 'stats socket command'", b.Name, s.Name, old, name))
}

// setServerSSL answers as HAProxy for a server without SSL settings:
// fulcrum does not speak TLS to servers.
func setServerSSL(c *Context, b *proxy.Backend, s *proxy.Server, args []string) error {
	return reply("'set server <srv> ssl' cannot be set.  default-server should define ssl settings")
}

// setServerAddr is `set server <b>/<s> addr <ip> [port <port>]`. Its reply
// says what changed, in HAProxy's words (srv_update_addr_port): the address
// part, then the port part when a port was given, then the updater. An
// address change applies even when the port is refused.
func setServerAddr(c *Context, b *proxy.Backend, s *proxy.Server, args []string) error {
	addr := arg(args, 0)
	if addr == "" {
		return reply("set server <b>/<s> addr requires an address and optionally a port.")
	}
	port, hasPort := "", arg(args, 1) == "port"
	if hasPort {
		port = arg(args, 2)
	}
	curHost, curPort, err := net.SplitHostPort(s.Addr())
	if err != nil {
		curHost, curPort = s.Addr(), ""
	}
	newHost, newPort := curHost, curPort
	var msg strings.Builder
	ip, perr := netip.ParseAddr(addr)
	switch {
	case perr != nil || ip.Zone() != "":
		msg.WriteString("Invalid addr '" + addr + "'")
		port, hasPort = "", false // HAProxy stops at a bad address
	case sameIP(curHost, ip):
		msg.WriteString("no need to change the addr")
	default:
		newHost = ip.String()
		msg.WriteString("IP changed from '" + curHost + "' to '" + addr + "'")
	}
	if hasPort {
		msg.WriteString(", ")
		v, _, ok := strtol(port)
		switch {
		case port != "" && (port[0] == '+' || port[0] == '-'):
			// HAProxy reads a signed port as a port map (the client's
			// port plus an offset), which 2.6 refuses to a server
			// without a dedicated check port (measured beside 2.6.12,
			// checks or not); fulcrum's servers never map ports.
			msg.WriteString("can't change <port> to port map because it is incompatible with current health check port configuration (use 'port' statement from the 'server' directive.")
		case !ok || v < 0 || v > 65535:
			msg.WriteString("problem converting port '" + port + "' to an int")
		case strconv.FormatInt(v, 10) == curPort:
			msg.WriteString("no need to change the port")
		default:
			newPort = strconv.FormatInt(v, 10)
			msg.WriteString("port changed from '" + curPort + "' to '" + newPort + "'")
		}
	}
	msg.WriteString(" by 'stats socket command'")
	if newHost != curHost || newPort != curPort {
		next := net.JoinHostPort(newHost, newPort)
		old := b.SetAddr(s, next)
		c.Changed().Str("server", fullName(b, s)).Str("addr", next).Str("previous_addr", old).Msg("server address changed")
	}
	return reply(msg.String())
}

// sameIP reports whether host is the address ip.
func sameIP(host string, ip netip.Addr) bool {
	cur, err := netip.ParseAddr(host)
	return err == nil && cur.Unmap() == ip.Unmap()
}

// showServersState dumps every server (of one backend) in HAProxy's
// server-state format version 1 (runtime-api.md 4.5): what a reload would
// need to restore, one line per server, the check columns from the
// servers' check state.
func showServersState(c *Context, args []string) error {
	var only *proxy.Backend
	if name := arg(args, 0); name != "" {
		if only = findBackend(c.Proxy, name); only == nil {
			return reply("Can't find backend.")
		}
	}
	writeServersState(c, c.Proxy, only, c.api.started)
	return nil
}

// WriteServersState writes the reply of `show servers state` for every
// backend of p to w: the format of HAProxy's server-state-file, which the
// daemon writes at stop (state_file) and proxy.LoadServerState reads back.
// started is when the process started: a server still in MAINT by
// `disabled` since then is marked so (SRV_ADMF_CMAINT), not as set by an
// operator.
func WriteServersState(w io.Writer, p *proxy.Proxy, started time.Time) error {
	bw := bufio.NewWriter(w)
	writeServersState(bw, p, nil, started)
	return bw.Flush()
}

// WriteStateFile writes p's state file (global state_file), which the
// daemon writes at stop: WriteServersState's lines, then one comment line
// per server added at runtime (proxy.AddedServerLine), which
// proxy.LoadServerState reads to add it again. HAProxy reads such a file
// too: it skips comments.
func WriteStateFile(w io.Writer, p *proxy.Proxy, started time.Time) error {
	bw := bufio.NewWriter(w)
	writeServersState(bw, p, nil, started)
	first := true
	for _, b := range p.Backends {
		for _, s := range b.Servers() {
			if !s.Dynamic() {
				continue
			}
			if first {
				bw.WriteString("# servers added at runtime (fulcrum), as add server takes them:\n")
				first = false
			}
			bw.WriteString(proxy.AddedServerLine(s) + "\n")
		}
	}
	return bw.Flush()
}

// writeServersState is `show servers state [only]` written to w.
func writeServersState(w io.Writer, p *proxy.Proxy, only *proxy.Backend, started time.Time) {
	snap := p.Snapshot()
	fmt.Fprintf(w, "1\n# be_id be_name srv_id srv_name srv_addr srv_op_state srv_admin_state srv_uweight srv_iweight srv_time_since_last_change srv_check_status srv_check_result srv_check_health srv_check_state srv_agent_state bk_f_forced_id srv_f_forced_id srv_fqdn srv_port srvrecord srv_use_ssl srv_check_port srv_check_addr srv_agent_addr srv_agent_port\n")
	for bi := range snap.Backends {
		bs := &snap.Backends[bi]
		if only != nil && bs.ID != only.ID {
			continue
		}
		for i := range bs.Servers {
			ss := &bs.Servers[i]
			s := ss.Server
			host, port := ss.HostPort()
			hs := ss.HealthState
			op := 2 // SRV_ST_RUNNING
			switch ss.Op {
			case proxy.OpDown:
				op = 0
			case proxy.OpStopping:
				op = 3
			}
			if ss.Admin == proxy.AdminMaint {
				op = 0 // maintenance stops the server (SRV_ST_STOPPED)
			}
			admin := 0
			switch ss.OperatorAdmin {
			case proxy.AdminDrain:
				admin = 0x08 // SRV_ADMF_FDRAIN
			case proxy.AdminMaint:
				admin = 0x01 // SRV_ADMF_FMAINT
				if s.Conf.Disabled && !s.Dynamic() && ss.LastChange.Before(started) {
					admin |= 0x04 // SRV_ADMF_CMAINT: still `disabled` as configured
				}
			}
			fqdn, srvrecord := "-", "-"
			if r := ss.Resolution; r != nil {
				if r.Maint {
					admin |= 0x20 // SRV_ADMF_RMAINT
				}
				if r.FQDNSet {
					admin |= 0x40 // SRV_ADMF_HMAINT: an SRV record named it (2.6 keeps the bit)
				}
				if r.FQDN != "" {
					fqdn = r.FQDN
				}
				if r.SRV != "" {
					srvrecord = r.SRV
				}
			}
			checkAddr := "-"
			if r := s.CheckReporter(); r == nil {
				// No check state yet: the counter is rise, 0 when stopped
				// or once stopped by DNS resolution (nothing raises it).
				if op == 0 || ss.Resolution != nil && ss.Resolution.Stopped {
					hs.CheckHealth = 0
				}
			} else if a := check.Of(s).Info().CheckAddr; a != "" {
				checkAddr = a
			}
			agentAddr := hs.AgentAddr
			if agentAddr == "" {
				agentAddr = "-"
			}
			since := int64(snap.Taken.Sub(ss.LastChange) / time.Second)
			forced := 0
			if ss.ForcedID {
				forced = 1 // srv_f_forced_id: `id` on an added server
			}
			useSSL := 0
			if s.Conf.SSL {
				useSSL = 1 // srv_use_ssl: the server's `ssl`
			}
			fmt.Fprintf(w, "%d %s %d %s %s %d %d %d %d %d %d %d %d %d %d 0 %d %s %s %s %d %d %s %s %d\n",
				bs.ID, bs.Name, ss.ID, ss.Name, host, op, admin, ss.UserWeight, ss.InitialWeight,
				max(since, 0), hs.CheckStatus, hs.CheckResult, hs.CheckHealth, hs.CheckState, hs.AgentState,
				forced, fqdn, port, srvrecord, useSSL, hs.CheckPort, checkAddr, agentAddr, hs.AgentPort)
		}
	}
}

// showServersConn dumps each server's connection usage (runtime-api.md
// 4.6). fulcrum keeps one pool per server, so idle_per_thr has one column.
func showServersConn(c *Context, args []string) error {
	var only *proxy.Backend
	if name := arg(args, 0); name != "" {
		if only = findBackend(c.Proxy, name); only == nil {
			return reply("Can't find backend.")
		}
	}
	c.Printf("# bkname/svname bkid/svid addr port - purge_delay used_cur used_max need_est unsafe_nb safe_nb idle_lim idle_cur idle_per_thr[1]\n")
	for _, b := range c.Proxy.Backends {
		if only != nil && b != only {
			continue
		}
		for _, s := range b.Servers() {
			host, port, err := net.SplitHostPort(s.Addr())
			if err != nil {
				host, port = s.Addr(), "0"
			}
			safe, unsafe := s.IdleConns()
			cur, peak := s.Counters.Scur.Load(), s.Counters.Smax.Load()
			if busy, idle, most, ok := s.H2Conns(); ok {
				// An HTTP/2 server: connections, not the streams they
				// carry; an idle one is safe to reuse.
				cur, peak, safe, unsafe = int64(busy), int64(most), idle, 0
			}
			c.Printf("%s/%s %d/%d %s %s - %d %d %d %d %d %d %d %d %d\n",
				b.Name, s.Name, b.ID, s.ID, host, port, s.Conf.PoolPurgeDelay.Milliseconds(), cur, peak, peak,
				unsafe, safe, s.PoolMax(), safe+unsafe, safe+unsafe)
		}
	}
	return nil
}

// shutdownSessionsServer aborts every stream on a server.
func shutdownSessionsServer(c *Context, args []string) error {
	b, s, err := findServer(c.Proxy, arg(args, 0))
	if err != nil {
		return err
	}
	n := c.Proxy.ShutdownSessions(s)
	c.Changed().Str("server", fullName(b, s)).Int("sessions", n).Msg("server sessions shut down")
	return nil
}

// setMaxconnServer changes a server's maxconn (0 = unlimited), read as
// HAProxy's strtol. A negative value, which HAProxy wraps to 4294967295,
// means unlimited here too.
func setMaxconnServer(c *Context, args []string) error {
	b, s, err := findServer(c.Proxy, arg(args, 0))
	if err != nil {
		return err
	}
	return setServerMaxconn(c, b, s, arg(args, 1))
}

// setServerMaxconn sets s's maxconn from value, as setMaxconnServer.
func setServerMaxconn(c *Context, b *proxy.Backend, s *proxy.Server, value string) error {
	if value == "" {
		return reply("Require <maxconn>.")
	}
	v, rest, ok := strtol(value)
	switch {
	case !ok:
		return replyNoLF("maxconn string empty or preceded by garbage")
	case rest != "":
		return replyNoLF("Trailing garbage in maxconn string")
	}
	n := int(min(v, math.MaxInt32))
	if v < 0 {
		n = 0
	}
	if old := b.SetMaxConn(s, n); old != n {
		c.Changed().Str("server", fullName(b, s)).Int("maxconn", n).Int("previous_maxconn", old).Msg("server maxconn changed")
	}
	return nil
}
