package runtime

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unsafe"
)

// Session commands: the streams in progress, and aborting one.
var sessionCommands = []Command{
	{Words: []string{"show", "sess"}, Level: LevelOperator, Usage: "show sess [id]", Help: "report the list of current sessions or dump this exact session", Run: showSess},
	{Words: []string{"shutdown", "session"}, Level: LevelAdmin, Usage: "shutdown session [id]", Help: "kill a specific session", Run: shutdownSession},
}

// sessInfo is one line of show sess: a proxy stream or a CLI session.
type sessInfo struct {
	id       uintptr
	proto    string
	src      string
	fe       string
	be, srv  string
	age      time.Duration
	started  time.Time
	cli      *session // set for a Runtime API session
	fromCore bool
}

// sessions lists the streams in progress (client connections with a
// request or TCP session under way), then the Runtime API's own sessions,
// which HAProxy lists too (fe=GLOBAL).
func (c *Context) sessions() []sessInfo {
	var out []sessInfo
	now := time.Now()
	for _, s := range c.Proxy.Sessions() {
		if !s.Active {
			continue // an idle keep-alive connection has no stream in HAProxy
		}
		proto := "tcpv4"
		if s.Src.Addr().Is6() && !s.Src.Addr().Is4In6() {
			proto = "tcpv6"
		}
		be, srv := "<NONE>", "<none>"
		if s.Backend != "" {
			be, srv = s.Backend, s.Server
		}
		out = append(out, sessInfo{id: s.ID, proto: proto, src: s.Src.String(), fe: s.Frontend,
			be: be, srv: srv, age: s.Age, started: now.Add(-s.Age), fromCore: true})
	}
	c.api.mu.Lock()
	for cs := range c.api.sessions {
		proto, src := "unix_stream", "unix:1"
		if cs.sock.path == "" {
			proto, src = "tcpv4", cs.conn.RemoteAddr().String()
		}
		out = append(out, sessInfo{id: uintptr(unsafe.Pointer(cs)), proto: proto, src: src, fe: "GLOBAL",
			be: "<NONE>", srv: "<none>", age: now.Sub(cs.started), started: cs.started, cli: cs})
	}
	c.api.mu.Unlock()
	return out
}

// humanAge formats an age as HAProxy's human_time: 45s, 3m12s, 2h5m, 1d3h.
func humanAge(d time.Duration) string {
	s := int64(d / time.Second)
	switch {
	case s < 60:
		return fmt.Sprintf("%ds", s)
	case s < 3600:
		return fmt.Sprintf("%dm%ds", s/60, s%60)
	case s < 86400:
		return fmt.Sprintf("%dh%dm", s/3600, s%3600/60)
	}
	return fmt.Sprintf("%dd%dh", s/86400, s%86400/3600)
}

// parseSessID reads a session id as HAProxy's strtoul(..., 0): 0x... hex.
// strtoul0 reads s as C's strtoul(s, NULL, 0) does: leading blanks and
// a sign, then a hexadecimal ("0x"), octal ("0") or decimal number, as far
// as its digits go; 0 when none does, the largest value on overflow.
func strtoul0(s string) uintptr {
	s = strings.TrimLeft(s, " \t\n\v\f\r")
	neg := false
	if s != "" && (s[0] == '+' || s[0] == '-') {
		neg = s[0] == '-'
		s = s[1:]
	}
	base := uint64(10)
	switch {
	case len(s) > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X') && hexDigit(s[2]) >= 0:
		base, s = 16, s[2:]
	case len(s) > 0 && s[0] == '0':
		base = 8
	}
	var v uint64
	for i := 0; i < len(s); i++ {
		d := hexDigit(s[i])
		if d < 0 || uint64(d) >= base {
			break
		}
		if v > (math.MaxUint64-uint64(d))/base {
			return ^uintptr(0)
		}
		v = v*base + uint64(d)
	}
	if neg {
		v = -v
	}
	return uintptr(v)
}

// hexDigit returns c's value as a hexadecimal digit, -1 if it is not one.
func hexDigit(c byte) int {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0')
	case c >= 'a' && c <= 'f':
		return int(c-'a') + 10
	case c >= 'A' && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}

func parseSessID(s string) (uintptr, bool) {
	v, err := strconv.ParseUint(s, 0, 64)
	return uintptr(v), err == nil
}

// showSess lists the sessions, or dumps the one whose id is given.
func showSess(c *Context, args []string) error {
	list := c.sessions()
	if a := arg(args, 0); a != "" && a != "all" {
		id, ok := parseSessID(a)
		for _, s := range list {
			if ok && s.id == id {
				c.Printf("0x%x: [%s] proto=%s source=%s\n  frontend=%s\n  backend=%s\n  server=%s\n  age=%s\n",
					s.id, haproxyDate(s.started), s.proto, s.src, s.fe, s.be, s.srv, humanAge(s.age))
				return nil
			}
		}
		return reply("Session not found.")
	}
	for _, s := range list {
		c.Printf("0x%x: proto=%s src=%s fe=%s be=%s srv=%s ts=00 age=%s\n",
			s.id, s.proto, s.src, s.fe, s.be, s.srv, humanAge(s.age))
	}
	return nil
}

// shutdownSession aborts one session: its client and server connections.
func shutdownSession(c *Context, args []string) error {
	a := arg(args, 0)
	// HAProxy reads the pointer with strtoul(arg, NULL, 0): what does not
	// read as a number ("abc") is a null pointer, which it refuses so.
	id := strtoul0(a)
	if id == 0 {
		return reply("Session pointer expected (use 'show sess').")
	}
	for _, s := range c.sessions() {
		if s.id != id {
			continue
		}
		ok := true
		switch {
		case s.fromCore:
			ok = c.Proxy.ShutdownSession(id)
		case s.cli != nil:
			s.cli.conn.Close()
		}
		if ok {
			c.Changed().Str("session", a).Str("frontend", s.fe).Str("backend", s.be).Str("server", s.srv).Msg("session shut down")
			return nil
		}
	}
	return reply("No such session (use 'show sess').")
}
