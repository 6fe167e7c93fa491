package conf

// Server lines: a server written as HAProxy writes it on a `server` line,
// "ADDR[:PORT] [keyword [value]]...", which the Runtime API's `add server`
// takes (HAProxy 2.6's dynamic servers) and the state file keeps for the
// servers added at runtime. One table, serverKeywords, lists every keyword
// with what it sets; ServerLine writes a server back in the same words.
//
// Replies are HAProxy 2.6's texts where it has one for the same mistake
// (testdata/runtime/haproxy/add-server.txt holds them), byte for byte:
// scripts compare them. Where HAProxy 2.6 reads a number as C's atol and
// takes "weight abc" as weight 0, fulcrum refuses it with its own text.

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"
)

// ServerLineError is a server line's error: Msg is the whole reply, as
// HAProxy writes it, without the line feed that ends it.
type ServerLineError struct{ Msg string }

func (e *ServerLineError) Error() string { return e.Msg }

func lineErr(format string, args ...any) error {
	return &ServerLineError{Msg: fmt.Sprintf(format, args...)}
}

// ServerLine is what a server line says beside the server itself.
type ServerLine struct {
	// ID is the server's id (`id N`), 0 when the line gives none.
	ID int
}

// serverKeyword is one keyword of a server line: its name, whether it
// takes a value, and what it sets; a keyword of configured servers only
// has notDynamic instead of set, so that taking it later is one row.
type serverKeyword struct {
	name string
	arg  bool
	set  func(l *lineParse, v string) error
	// notDynamic: a keyword of configured servers only, refused on a
	// server line in HAProxy 2.6's words.
	notDynamic bool
}

// lineParse is a server line being parsed.
type lineParse struct {
	s     *Server
	line  ServerLine
	agent bool // agent-check given
	tls   lineTLS
}

// serverKeywords are the keywords of a server line that fulcrum knows, in
// HAProxy's words. A keyword of configured servers only (DNS) answers
// HAProxy's "not accepted for dynamic server".
var serverKeywords = []serverKeyword{
	{name: "weight", arg: true, set: func(l *lineParse, v string) error {
		n, err := strconv.Atoi(v)
		if err != nil {
			return lineErr("'weight' expects an integer argument, got '%s'.", v)
		}
		if n < 0 || n > 256 {
			return lineErr("weight of server %s is not within 0 and 256 (%d)..", l.s.Name, n)
		}
		l.s.Weight = n
		return nil
	}},
	{name: "maxconn", arg: true, set: func(l *lineParse, v string) error { return setCount(&l.s.MaxConn, "maxconn", v, 0) }},
	{name: "maxqueue", arg: true, set: func(l *lineParse, v string) error { return setCount(&l.s.MaxQueue, "maxqueue", v, 0) }},
	{name: "minconn", arg: true, set: func(l *lineParse, v string) error { return setCount(&l.s.MinConn, "minconn", v, 0) }},
	{name: "check", set: func(l *lineParse, _ string) error { l.s.Check = true; return nil }},
	{name: "no-check", set: func(l *lineParse, _ string) error { l.s.Check = false; return nil }},
	{name: "inter", arg: true, set: func(l *lineParse, v string) error { return setInter(&l.s.Inter, l.s.Name, "inter", v) }},
	{name: "fastinter", arg: true, set: func(l *lineParse, v string) error { return setInter(&l.s.FastInter, l.s.Name, "fastinter", v) }},
	{name: "downinter", arg: true, set: func(l *lineParse, v string) error { return setInter(&l.s.DownInter, l.s.Name, "downinter", v) }},
	{name: "rise", arg: true, set: func(l *lineParse, v string) error { return setPositive(&l.s.Rise, "rise", v) }},
	{name: "fall", arg: true, set: func(l *lineParse, v string) error { return setPositive(&l.s.Fall, "fall", v) }},
	{name: "backup", set: func(l *lineParse, _ string) error { l.s.Backup = true; return nil }},
	{name: "no-backup", set: func(l *lineParse, _ string) error { l.s.Backup = false; return nil }},
	{name: "disabled", set: func(l *lineParse, _ string) error { l.s.Disabled = true; return nil }},
	{name: "enabled", set: func(l *lineParse, _ string) error { l.s.Disabled = false; return nil }},
	{name: "slowstart", arg: true, set: func(l *lineParse, v string) error {
		d, err := ParseHAProxyTime(v)
		if err != nil {
			return lineErr("unexpected character '%s' in 'slowstart' argument of server %s..", err.Error(), l.s.Name)
		}
		l.s.Slowstart = d
		return nil
	}},
	{name: "agent-check", set: func(l *lineParse, _ string) error { l.agent = true; return nil }},
	{name: "no-agent-check", set: func(l *lineParse, _ string) error { l.agent = false; return nil }},
	{name: "agent-port", arg: true, set: func(l *lineParse, v string) error {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 65535 {
			return lineErr("'agent-port' expects a port number (1..65535), got '%s'.", v)
		}
		l.agentConf().Port = n
		return nil
	}},
	{name: "agent-inter", arg: true, set: func(l *lineParse, v string) error {
		return setInter(&l.agentConf().Inter, l.s.Name, "agent-inter", v)
	}},
	{name: "agent-send", arg: true, set: func(l *lineParse, v string) error { l.agentConf().Send = v; return nil }},
	{name: "agent-addr", arg: true, set: func(l *lineParse, v string) error { l.agentConf().Addr = v; return nil }},
	{name: "observe", arg: true, set: func(l *lineParse, v string) error {
		switch v {
		case "none":
			l.s.Observe = ""
		case "layer4", "layer7":
			l.s.Observe = v
		default:
			return lineErr("'observe' expects one of 'none', 'layer4', 'layer7' but got '%s'.", v)
		}
		return nil
	}},
	{name: "on-error", arg: true, set: func(l *lineParse, v string) error {
		switch v {
		case "fastinter", "fail-check", "sudden-death", "mark-down":
			l.s.OnError = v
			return nil
		}
		return lineErr("'on-error' expects one of 'fastinter', 'fail-check', 'sudden-death' or 'mark-down' but got '%s'.", v)
	}},
	{name: "error-limit", arg: true, set: func(l *lineParse, v string) error {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return lineErr("error-limit has to be > 0..")
		}
		l.s.ErrorLimit = n
		return nil
	}},
	{name: "cookie", arg: true, set: func(l *lineParse, v string) error { l.s.Cookie = v; return nil }},
	{name: "id", arg: true, set: func(l *lineParse, v string) error {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return lineErr("'id' : custom id has to be > 0.")
		}
		l.line.ID = n
		return nil
	}},
	{name: "pool-max-conn", arg: true, set: func(l *lineParse, v string) error { return setCount(&l.s.PoolMaxConn, "pool-max-conn", v, -1) }},
	{name: "pool-low-conn", arg: true, set: func(l *lineParse, v string) error { return setCount(&l.s.PoolLowConn, "pool-low-conn", v, 0) }},
	{name: "pool-purge-delay", arg: true, set: func(l *lineParse, v string) error {
		d, err := ParseHAProxyTime(v)
		if err != nil {
			return lineErr("unexpected character '%s' in argument to <pool-purge-delay>..", err.Error())
		}
		l.s.PoolPurgeDelay = d
		return nil
	}},
	{name: "proto", arg: true, set: func(l *lineParse, v string) error {
		// HAProxy 2.6 also knows h1, fcgi and none; fulcrum's muxes are
		// HTTP/1.1 (no proto) and h2.
		if v != "h2" {
			return lineErr("'proto' : unknown protocol '%s' (fulcrum supports h2).", v)
		}
		l.s.Proto = v
		return nil
	}},
	// TLS and the PROXY protocol to servers, HAProxy 2.6's keywords on a
	// dynamic server; the files and the sni expression are loaded once
	// the line is read (lineParse.finishTLS).
	{name: "ssl", set: func(l *lineParse, _ string) error { l.tls.ssl = true; return nil }},
	{name: "no-ssl", notDynamic: true}, // as HAProxy 2.6
	{name: "verify", arg: true, set: func(l *lineParse, v string) error {
		if v != "none" && v != "required" {
			return lineErr("'verify' : unknown verify method '%s', only 'none' and 'required' are supported.", v)
		}
		l.tls.verify = v
		return nil
	}},
	{name: "ca-file", arg: true, set: func(l *lineParse, v string) error { l.tls.caFile = v; return nil }},
	{name: "verifyhost", arg: true, set: func(l *lineParse, v string) error { l.tls.verifyHost = v; return nil }},
	{name: "sni", arg: true, set: func(l *lineParse, v string) error { l.tls.sni = v; return nil }},
	{name: "alpn", arg: true, set: func(l *lineParse, v string) error { l.tls.alpn = v; return nil }},
	{name: "crt", arg: true, set: func(l *lineParse, v string) error { l.tls.crt = v; return nil }},
	{name: "check-ssl", set: func(l *lineParse, _ string) error { l.tls.checkSSL = true; return nil }},
	{name: "send-proxy", set: func(l *lineParse, _ string) error { l.tls.sendProxy = true; return nil }},
	{name: "send-proxy-v2", set: func(l *lineParse, _ string) error { l.tls.sendProxyV2 = true; return nil }},
	{name: "proxy-v2-options", arg: true, set: func(l *lineParse, v string) error {
		for _, o := range strings.Split(v, ",") {
			if !slices.Contains(proxyV2Options, o) {
				return lineErr("'%s' : proxy v2 option not implemented.", o)
			}
			if !slices.Contains(l.s.ProxyV2Options, o) {
				l.s.ProxyV2Options = append(l.s.ProxyV2Options, o)
			}
		}
		return nil
	}},
	{name: "check-send-proxy", set: func(l *lineParse, _ string) error { l.tls.checkSendProxy = true; return nil }},
	// DNS resolution is the configuration's alone ([[resolvers]], server
	// templates): HAProxy 2.6 refuses its keywords on a dynamic server.
	{name: "resolvers", arg: true, notDynamic: true},
	{name: "init-addr", arg: true, notDynamic: true},
	{name: "resolve-prefer", arg: true, notDynamic: true},
	{name: "resolve-opts", arg: true, notDynamic: true},
	{name: "resolve-net", arg: true, notDynamic: true},
}

// missingValue is the reply for a keyword without its value, in HAProxy's
// words where it has them.
var missingValue = map[string]string{
	"inter":            "'inter' expects a delay as argument..",
	"fastinter":        "'fastinter' expects a delay as argument..",
	"downinter":        "'downinter' expects a delay as argument..",
	"agent-inter":      "'agent-inter' expects a delay as argument..",
	"rise":             "'rise' expects an integer argument..",
	"fall":             "'fall' expects an integer argument..",
	"id":               "'id' : expects an integer argument.",
	"agent-send":       "'agent-send' expects a string as argument..",
	"agent-addr":       "'agent-addr' expects an address as argument..",
	"pool-max-conn":    "'pool-max-conn' expects <value> as argument..",
	"pool-low-conn":    "'pool-low-conn' expects <value> as argument..",
	"pool-purge-delay": "'pool-purge-delay' expects a delay as argument..",
	"slowstart":        "'slowstart' expects a delay as argument..",
	"verify":           "'verify' : missing verify method.",
	"ca-file":          "'ca-file' : missing CAfile path.",
	"verifyhost":       "'verifyhost' : missing hostname to verify against.",
	"sni":              "'sni' : missing sni expression.",
	"alpn":             "'alpn' : missing the comma-delimited ALPN protocol suite.",
	"crt":              "'crt' : missing certificate file path.",
	"proto":            "'proto' : missing value.",
	"proxy-v2-options": "'' : proxy v2 option not implemented.",
	"observe":          "'observe' expects one of 'none', 'layer4', 'layer7' but got ''.",
	"on-error":         "'on-error' expects one of 'fastinter', 'fail-check', 'sudden-death' or 'mark-down' but got ''.",
}

// agentConf returns the line's agent settings, created on first use.
func (l *lineParse) agentConf() *Agent {
	if l.s.Agent == nil {
		l.s.Agent = &Agent{Inter: 2 * time.Second}
	}
	return l.s.Agent
}

// setCount sets *dst from v, an integer of at least min.
func setCount(dst *int, kw, v string, min int) error {
	n, err := strconv.Atoi(v)
	if err != nil || n < min {
		return lineErr("'%s' expects an integer of at least %d, got '%s'.", kw, min, v)
	}
	*dst = n
	return nil
}

// setPositive sets *dst from v, an integer above 0, with HAProxy's reply
// (which reads "abc" as 0).
func setPositive(dst *int, kw, v string) error {
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		return lineErr("'%s' has to be > 0..", kw)
	}
	*dst = n
	return nil
}

// setInter sets *dst from v, a delay above 0 (HAProxy's time format).
func setInter(dst *time.Duration, server, kw, v string) error {
	d, err := ParseHAProxyTime(v)
	switch {
	case err != nil:
		return lineErr("unexpected character '%s' in '%s' argument of server %s..", err.Error(), kw, server)
	case d <= 0:
		return lineErr("invalid value %s for argument '%s' of server %s..", v, kw, server)
	}
	*dst = d
	return nil
}

// ParseHAProxyTime reads a delay as HAProxy's parse_time_err: digits, then
// an optional unit us, ms, s, m, h or d (milliseconds without one), as the
// Runtime API's arguments and server lines write them. The error's text is
// the first unexpected character ("" when v is empty).
func ParseHAProxyTime(v string) (time.Duration, error) {
	i := 0
	for i < len(v) && v[i] >= '0' && v[i] <= '9' {
		i++
	}
	if i == 0 {
		if v == "" {
			return 0, errors.New("")
		}
		return 0, errors.New(v[:1])
	}
	n, err := strconv.ParseInt(v[:i], 10, 64)
	if err != nil || n > 1<<31 {
		return 0, errors.New(v[i-1 : i])
	}
	units := map[string]time.Duration{"": time.Millisecond, "us": time.Microsecond, "ms": time.Millisecond,
		"s": time.Second, "m": time.Minute, "h": time.Hour, "d": 24 * time.Hour}
	u, ok := units[v[i:]]
	if !ok {
		return 0, errors.New(v[i : i+1])
	}
	return time.Duration(n) * u, nil
}

// ParseServerLine reads a server named name from args, the words after
// "add server <backend>/<name>": an address "host:port" (an IPv6 address
// with or without brackets), then keywords. The server has HAProxy's
// defaults for a dynamic server, not the backend's default_server (as
// HAProxy 2.6), and starts in MAINT unless the line says "enabled". Its
// TLS files are read and its sni compiled as env says (nil: relative
// paths from the working directory, mode http; serverline_tls.go). The
// error, a *ServerLineError, is the reply to give, in HAProxy's words.
func ParseServerLine(name string, args []string, env *LineEnv) (*Server, ServerLine, error) {
	l := &lineParse{s: &Server{Name: name, Weight: 1, Disabled: true, ErrorLimit: 10, OnError: "fail-check",
		PoolMaxConn: -1, PoolPurgeDelay: 5 * time.Second}}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_.:", r)) {
			return nil, l.line, lineErr("character '%c' is not permitted in server name '%s'.", r, name)
		}
	}
	if len(args) == 0 || args[0] == "" {
		return nil, l.line, lineErr("'server' expects <name> and <addr>[:<port>] as arguments.")
	}
	addr, err := serverAddr(args[0])
	if err != nil {
		return nil, l.line, err
	}
	l.s.Address = addr
	for i := 1; i < len(args); i++ {
		kw := findServerKeyword(args[i])
		if kw == nil {
			return nil, l.line, lineErr("unknown keyword '%s'.", args[i])
		}
		if kw.notDynamic {
			return nil, l.line, lineErr("'%s' option is not accepted for dynamic server", kw.name)
		}
		v := ""
		if kw.arg {
			if i+1 >= len(args) || args[i+1] == "" {
				if msg, ok := missingValue[kw.name]; ok {
					return nil, l.line, lineErr("%s", msg)
				}
				return nil, l.line, lineErr("'%s' expects an argument.", kw.name)
			}
			i++
			v = args[i]
		}
		if err := kw.set(l, v); err != nil {
			return nil, l.line, err
		}
	}
	switch {
	case l.agent && (l.s.Agent == nil || l.s.Agent.Port == 0):
		return nil, l.line, lineErr("server %s does not have agent port. Agent check has been disabled.", name)
	case !l.agent:
		l.s.Agent = nil // agent settings without agent-check do nothing, as HAProxy
	}
	if err := l.finishTLS(env); err != nil {
		return nil, l.line, err
	}
	if l.s.Proto == "h2" && env != nil && env.Mode != "" && env.Mode != ModeHTTP {
		return nil, l.line, lineErr("'proto' : MUX protocol 'h2' is not usable in a backend of mode %s.", env.Mode)
	}
	if l.s.MinConn > l.s.MaxConn && l.s.MaxConn > 0 {
		l.s.MinConn = l.s.MaxConn // HAProxy's srv_minmax_conn_apply
	}
	// The DNS keys as the file gives a server without resolvers, so that
	// an added server's model is the one its written-back table loads as.
	_, l.s.Port = serverHostPort(l.s.Address)
	l.s.ResolvePrefer, l.s.InitAddr = "ipv6", parseInitAddr("", false)
	return l.s, l.line, nil
}

// findServerKeyword returns the row of keyword name, or nil.
func findServerKeyword(name string) *serverKeyword {
	for i := range serverKeywords {
		if serverKeywords[i].name == name {
			return &serverKeywords[i]
		}
	}
	return nil
}

// serverAddr checks a server line's address and returns it as
// "host:port", with HAProxy's replies for a bad port. An IPv6 address may
// come without brackets, its port after the last colon ("::1:80"). A port
// is required: HAProxy's port-less server (the client's destination port)
// does not exist in fulcrum.
func serverAddr(a string) (string, error) {
	host, port, err := net.SplitHostPort(a)
	if err != nil {
		// "::1:80": an IPv6 address without brackets, then the port.
		if i := strings.LastIndexByte(a, ':'); i > 0 && strings.Count(a, ":") > 1 {
			if ip, perr := netip.ParseAddr(a[:i]); perr == nil && ip.Is6() {
				host, port, err = a[:i], a[i+1:], nil
			}
		}
		if err != nil {
			if _, perr := netip.ParseAddr(strings.Trim(a, "[]")); perr == nil || !strings.Contains(a, ":") {
				return "", lineErr("Missing port in server address '%s' (fulcrum needs one).", a)
			}
			return "", lineErr("invalid address: '%s'.", a)
		}
	}
	for i := 0; i < len(port); i++ {
		if port[i] < '0' || port[i] > '9' {
			return "", lineErr("invalid character '%c' in port number '%s' in '%s'\n", port[i], port, a)
		}
	}
	n, err := strconv.Atoi(port)
	if err != nil || n < 1 || n > 65535 {
		return "", lineErr("invalid port '%s'", port)
	}
	if host == "" {
		return "", lineErr("Missing address in '%s'.", a)
	}
	if looksNumeric(host) && net.ParseIP(host) == nil {
		return "", lineErr("invalid address: '%s'.", a)
	}
	return net.JoinHostPort(host, port), nil
}

// Keywords returns s as the words of a server line, after "add server
// <backend>/<name>": its address, then a keyword for every setting that is
// not HAProxy's default for a dynamic server, and `id` when id > 0.
// ParseServerLine reads it back to the same server. The state file keeps
// the servers added at runtime this way. enabled says the server must
// start READY ("enabled"), else it starts in MAINT.
func (s *Server) Keywords(id int, enabled bool) []string {
	w := []string{s.Address}
	add := func(kw ...string) { w = append(w, kw...) }
	num := strconv.Itoa
	if id > 0 {
		add("id", num(id))
	}
	if s.Weight != 1 {
		add("weight", num(s.Weight))
	}
	for _, c := range []struct {
		kw  string
		v   int
		def int
	}{{"maxconn", s.MaxConn, 0}, {"maxqueue", s.MaxQueue, 0}, {"minconn", s.MinConn, 0}} {
		if c.v != c.def {
			add(c.kw, num(c.v))
		}
	}
	if s.Check {
		add("check")
	}
	for _, c := range []struct {
		kw string
		d  time.Duration
	}{{"inter", s.Inter}, {"fastinter", s.FastInter}, {"downinter", s.DownInter}} {
		if c.d > 0 {
			add(c.kw, haproxyTime(c.d))
		}
	}
	if s.Rise > 0 {
		add("rise", num(s.Rise))
	}
	if s.Fall > 0 {
		add("fall", num(s.Fall))
	}
	if s.Backup {
		add("backup")
	}
	if s.Slowstart > 0 {
		add("slowstart", haproxyTime(s.Slowstart))
	}
	if a := s.Agent; a != nil {
		add("agent-check", "agent-port", num(a.Port), "agent-inter", haproxyTime(a.Inter))
		if a.Addr != "" {
			add("agent-addr", a.Addr)
		}
		if a.Send != "" {
			add("agent-send", a.Send)
		}
	}
	if s.Observe != "" {
		add("observe", s.Observe)
	}
	if s.ErrorLimit != 10 {
		add("error-limit", num(s.ErrorLimit))
	}
	if s.OnError != "fail-check" {
		add("on-error", s.OnError)
	}
	if s.Cookie != "" {
		add("cookie", s.Cookie)
	}
	if s.PoolMaxConn != -1 {
		add("pool-max-conn", num(s.PoolMaxConn))
	}
	if s.PoolLowConn != 0 {
		add("pool-low-conn", num(s.PoolLowConn))
	}
	if s.PoolPurgeDelay != 5*time.Second {
		add("pool-purge-delay", haproxyTime(s.PoolPurgeDelay))
	}
	if s.Proto != "" {
		add("proto", s.Proto)
	}
	add(s.tlsKeywords()...)
	if enabled {
		add("enabled")
	}
	return w
}

// haproxyTime writes d in HAProxy's time format: whole seconds as "Ns",
// else milliseconds, else microseconds.
func haproxyTime(d time.Duration) string {
	switch {
	case d%time.Second == 0:
		return strconv.FormatInt(int64(d/time.Second), 10) + "s"
	case d%time.Millisecond == 0:
		return strconv.FormatInt(int64(d/time.Millisecond), 10) + "ms"
	}
	return strconv.FormatInt(int64(d/time.Microsecond), 10) + "us"
}

// optDuration is an optional key's value, 0 when unset.
func optDuration(d *Duration) time.Duration {
	if d == nil {
		return 0
	}
	return d.Std()
}

// optInt is an optional key's value, 0 when unset.
func optInt(v *int) int {
	if v == nil {
		return 0
	}
	return *v
}

// CheckTimes returns the server's health-check timings: its own where it
// has them (HAProxy's server keywords inter, fastinter, downinter, rise,
// fall), else those of c, its backend's [backend.check] (HAProxy's
// defaults when c is nil: 2s, rise 2, fall 3). fastinter and downinter
// default to the server's own inter when only that is set, as HAProxy's.
func (s *Server) CheckTimes(c *Check) (inter, fastinter, downinter time.Duration, rise, fall int) {
	inter, fastinter, downinter, rise, fall = 2*time.Second, 2*time.Second, 2*time.Second, 2, 3
	if c != nil {
		inter, fastinter, downinter, rise, fall = c.Inter, c.FastInter, c.DownInter, c.Rise, c.Fall
	}
	if s.Inter > 0 {
		inter, fastinter, downinter = s.Inter, s.Inter, s.Inter
	}
	if s.FastInter > 0 {
		fastinter = s.FastInter
	}
	if s.DownInter > 0 {
		downinter = s.DownInter
	}
	if s.Rise > 0 {
		rise = s.Rise
	}
	if s.Fall > 0 {
		fall = s.Fall
	}
	return inter, fastinter, downinter, rise, fall
}
