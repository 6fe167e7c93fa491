package runtime

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/fulcrum-proxy/fulcrum/conf"
	"github.com/fulcrum-proxy/fulcrum/proxy"
	"github.com/fulcrum-proxy/fulcrum/proxy/check"
)

// Servers that come and go: HAProxy 2.6's `add server` and `del server`,
// with its replies byte for byte (testdata/runtime/haproxy/add-server.txt,
// captured from HAProxy 2.6.12), and HAProxy 3.0's `wait <delay>
// [srv-removable <b>/<s>]`, which waits for a server to become deletable.
//
// Where fulcrum departs from HAProxy 2.6 (each also in README.md):
//   - a backend with a static algorithm (static-rr, map-based hashing)
//     takes added servers (HAProxy: "Backend must use a dynamic load
//     balancing to support dynamic servers."): its map is recomputed, as
//     for a server going up or down;
//   - `cookie` is taken; `enabled` makes the server start READY; `check`
//     and `agent-check` are enabled at once (HAProxy: after `enable
//     health` / `enable agent`), and a server with `check` is DOWN until
//     its checks pass;
//   - numbers are read strictly ("weight abc" is an error, not 0), and the
//     address needs a port;
//   - any server may be deleted, those of the configuration file too
//     (HAProxy 2.6 with Lua refuses them: "This server cannot be removed
//     at runtime due to other configuration elements pointing to it.");
//     a reload brings them back, as it would bring back the file's version
//     of a server added at runtime under the same name;
//   - ids are never reused while the process lives;
//   - the TLS keywords are read as the file's TLS keys (conf's
//     serverline_tls.go): `ssl` without `ca-file` verifies against the
//     system's roots (HAProxy: "verify is enabled by default but no CA
//     file specified..."), and an sni reading the request is refused in
//     a tcp backend; relative ca-file and crt paths are the
//     configuration file's directory's.
var dynServerCommands = []Command{
	{Words: []string{"add", "server"}, Level: LevelAdmin, Usage: "add server <bk>/<srv>", Help: "create a new server", Run: addServer, unpaced: true},
	{Words: []string{"del", "server"}, Level: LevelAdmin, Usage: "del server <bk>/<srv>", Help: "remove a dynamically added server", Run: delServer, unpaced: true},
	{Words: []string{"wait"}, Level: LevelAdmin, Usage: "wait {-h|<delay_ms>} cond [args...]", Help: "wait the specified delay or condition (-h to see list)", Run: waitCmd, unheld: true},
}

// splitServer splits "<backend>/<server>" as add and del server do, with
// HAProxy 2.6's reply (no line feed) when the server part is missing.
func splitServer(spec string) (string, string, error) {
	bname, sname, ok := strings.Cut(spec, "/")
	if !ok || sname == "" {
		return "", "", replyNoLF("Require 'backend/server'.")
	}
	return bname, sname, nil
}

// addServer is `add server <b>/<s> <addr>[:<port>] [keywords]`: the
// server starts in MAINT unless told "enabled", with HAProxy 2.6's replies.
func addServer(c *Context, args []string) error {
	bname, sname, err := splitServer(arg(args, 0))
	if err != nil {
		return err
	}
	b := c.Proxy.Backend(bname)
	if b == nil {
		return replyNoLF("No such backend.")
	}
	var words []string
	if len(args) > 1 {
		words = args[1:]
	}
	sc, line, err := conf.ParseServerLine(sname, words, c.Proxy.Conf.ServerLineEnv(b.Conf.Mode))
	if err != nil {
		return reply(err.Error())
	}
	s, err := c.Proxy.AddServer(b, sc, line.ID)
	var inUse *proxy.IDInUseError
	switch {
	case errors.As(err, &inUse):
		where := "(runtime):0"
		if by := inUse.By; !by.Dynamic() {
			where = fmt.Sprintf("%s:%d", c.Proxy.Conf.File, by.Conf.Line)
		}
		return replyf("'id' : custom id %d already used at %s ('server %s').", inUse.ID, where, inUse.By.Name)
	case errors.Is(err, proxy.ErrServerExists):
		return reply("Already exists a server with the same name in backend.")
	case err != nil:
		return err
	}
	if sc.Check || sc.Agent != nil {
		check.Of(s) // stats show its checks from now on, with or without a Checker
	}
	c.Changed().Str("server", fullName(b, s)).Int("id", s.ID).Str("addr", s.Addr()).
		Stringer("state", s.Admin()).Msg("server added")
	c.Printf("New server registered.\n")
	return nil
}

// delServer is `del server <b>/<s>`: only a server in MAINT, without
// sessions or queued requests, with HAProxy 2.6's replies (none of them
// followed by an empty line).
func delServer(c *Context, args []string) error {
	bname, sname, err := splitServer(arg(args, 0))
	if err != nil {
		return err
	}
	b := c.Proxy.Backend(bname)
	if b == nil {
		return replyNoLF("No such backend.")
	}
	s := b.Server(sname)
	if s == nil {
		return replyNoLF("No such server.")
	}
	if err := c.Proxy.DeleteServer(s); err != nil {
		return removableReply(err)
	}
	c.Changed().Str("server", fullName(b, s)).Int("id", s.ID).Str("addr", s.Addr()).Msg("server deleted")
	return replyNoLF("Server deleted.")
}

// removableReply is HAProxy's text for why a server cannot be deleted.
func removableReply(err error) error {
	switch {
	case errors.Is(err, proxy.ErrServerNotMaint):
		return replyNoLF("Only servers in maintenance mode can be deleted.")
	case errors.Is(err, proxy.ErrServerBusy):
		return replyNoLF("Server still has connections attached to it, cannot remove it.")
	case errors.Is(err, proxy.ErrServerExists):
		return replyNoLF("No such server.") // deleted meanwhile
	}
	return err
}

// waitUsage is HAProxy 3.0's reply to `wait -h` and to an unknown
// condition.
const waitUsage = "Usage: wait {-h|<duration>} [condition [args...]]\n" +
	"  - '-h' displays this help\n" +
	"  - <duration> is the maximum wait time, optionally suffixed by the unit among\n" +
	"    'us', 'ms', 's', 'm', 'h', and 'd'. ; the default unit is milliseconds.\n" +
	"  - <condition> indicates what to wait for, no longer than the specified\n" +
	"    duration. Supported conditions are:\n" +
	"    - <none> : by default, just sleep for the specified duration.\n" +
	"    - srv-removable <px>/<sv> : wait for this server to become removable.\n"

// waitPollMax bounds the time between two looks at the condition: HAProxy
// looks at elapsed/2 + 1 ms, at most a tenth of the delay, which for a
// minute's wait is six seconds past the moment the server was done.
const waitPollMax = 50 * time.Millisecond

// waitHupPoll is how often a wait without a condition looks whether its
// client closed the connection (peerClosed).
const waitHupPoll = 100 * time.Millisecond

// waitCmd is HAProxy 3.0's `wait <delay> [srv-removable <b>/<s>]`: without
// a condition it sleeps for delay; with srv-removable it returns "Done." as
// soon as `del server` would delete the server, "Failed. <why>" at once
// when it never will by waiting (no such server, not in MAINT), "Wait
// delay expired. <why>" when delay passes first. It runs outside the
// API's hold (a reload is not held up) and looks the server up by name at
// each look, on the proxy serving then.
func waitCmd(c *Context, args []string) error {
	if arg(args, 0) == "" {
		return reply("Expects a duration in milliseconds.")
	}
	d, err := conf.ParseHAProxyTime(args[0])
	if err != nil || d < time.Millisecond {
		if args[0] != "-h" {
			return reply("Invalid duration.")
		}
		args = append([]string{""}, args...) // "-h" is read as the condition
	}
	if m := time.Duration(c.api.waitMax.Load()); m > 0 {
		d = min(d, m)
	}
	var bname, sname string
	switch cond := arg(args, 1); cond {
	case "":
	case "srv-removable":
		spec := arg(args, 2)
		if spec == "" {
			return reply("Missing server name (<backend>/<server>).")
		}
		var ok bool
		if bname, sname, ok = strings.Cut(spec, "/"); !ok || sname == "" {
			return reply("Require 'backend/server'.")
		}
	default:
		return replyNoLF(waitUsage)
	}
	removable := func() (done bool, msg string, fatal bool) {
		b := c.api.Proxy().Backend(bname)
		if b == nil {
			return false, "No such backend.", true
		}
		s := b.Server(sname)
		if s == nil {
			return false, "No such server.", true
		}
		switch err := b.Removable(s); {
		case errors.Is(err, proxy.ErrServerNotMaint):
			return false, "Only servers in maintenance mode can be deleted.", true
		case err != nil:
			return false, "Server still has connections attached to it, cannot remove it.", false
		}
		return true, "", false
	}
	start := time.Now()
	deadline := start.Add(d)
	msg := ""
	for {
		if sname != "" {
			done, why, fatal := removable()
			switch {
			case done:
				return replyNoLF("Done.\n")
			case fatal:
				return replyNoLF("Failed. " + why + "\n")
			}
			msg = why
		}
		left := time.Until(deadline)
		if left <= 0 {
			if sname == "" {
				return replyNoLF("Done.\n")
			}
			return replyNoLF("Wait delay expired. " + msg + "\n")
		}
		// HAProxy's schedule (elapsed/2 + 1ms, at most a tenth of the
		// delay), bounded by waitPollMax.
		next := min(max(min(time.Since(start)/2+time.Millisecond, d/10, waitPollMax), time.Millisecond), left)
		if sname == "" {
			next = min(left, waitHupPoll)
		}
		t := time.NewTimer(next)
		select {
		case <-t.C:
		case <-c.api.done:
			t.Stop()
			return replyNoLF("Interrupted. " + msg + "\n")
		}
		if c.sess != nil && peerClosed(c.sess.conn) {
			// Nobody is left to read the reply: the wait ends, as
			// HAProxy releases a CLI stream whose client closed.
			return replyNoLF("Interrupted. " + msg + "\n")
		}
	}
}
