package conf

// The access log as HAProxy's: `log` targets (syslog over UDP, TCP or a
// Unix socket, or stdout/stderr), `log-format` in HAProxy's %-variable
// language with the predefined httplog/tcplog formats, header captures
// and `option dontlognull`.

import (
	"fmt"

	"github.com/fulcrum-proxy/fulcrum/proxy/acl"
	"github.com/fulcrum-proxy/fulcrum/proxy/logformat"
	"github.com/fulcrum-proxy/fulcrum/proxy/syslog"
)

// logTargetSection is one `log` target: [[global.log]], or an element of
// the log list of [defaults] or a [[frontend]], as HAProxy's `log` line
// (`log <target> [len <n>] [format <f>] <facility> [<level> [<minlevel>]]`).
type logTargetSection struct {
	// Target is where lines go: "host:port" or "udp@host:port" (syslog
	// over UDP; port 514 when omitted), "tcp@host:port" (over TCP, one
	// line per message), a path or "unix@path" (a Unix datagram socket
	// such as "/dev/log"), "stdout" or "stderr". In [defaults] and a
	// frontend, "global" means the [[global.log]] targets (HAProxy's
	// `log global`); it takes no other key. Required.
	Target string `toml:"target"`

	// Format of each message: "rfc3164" (HAProxy's default: <PRI>, date,
	// tag[pid]: line), "rfc5424", "local" (rfc3164 without hostname),
	// "short" (<level> and the line), "priority" (<PRI> and the line),
	// "timed", "iso" or "raw" (the line alone, for stdout/stderr). Default
	// "rfc3164".
	Format *string `toml:"format"`

	// Facility is the syslog facility: "kern", "user", ..., "local0" to
	// "local7". Default "local0".
	Facility *string `toml:"facility"`

	// Level is the least severe level sent (HAProxy's max level): access
	// log lines are "info", errors "err". One of "emerg", "alert", "crit",
	// "err", "warning", "notice", "info", "debug". Default "debug" (all).
	Level *string `toml:"level"`

	// MinLevel is the most severe level sent, HAProxy's min level. Default
	// "emerg".
	MinLevel *string `toml:"min_level"`

	// Len is the longest message sent, header included; longer lines are
	// truncated. 80 to 65535. Default 1024, as HAProxy.
	Len *int `toml:"len"`
}

// setDefaults gives every unset key of a log target its default.
func (l *logTargetSection) setDefaults() {
	orDefault(&l.Format, "rfc3164")
	orDefault(&l.Facility, "local0")
	orDefault(&l.Level, "debug")
	orDefault(&l.MinLevel, "emerg")
	orDefault(&l.Len, 1024)
}

// validate checks a log target; allowGlobal is true outside [global].
func (l *logTargetSection) validate(s scope, allowGlobal bool) {
	switch {
	case l.Target == "global" && allowGlobal:
		for key, set := range map[string]bool{"format": l.Format != nil, "facility": l.Facility != nil,
			"level": l.Level != nil, "min_level": l.MinLevel != nil, "len": l.Len != nil} {
			if set {
				s.at(key).errorf("not allowed with target \"global\" (the [[global.log]] targets have their own)")
			}
		}
		return
	case l.Target == "global":
		s.at("target").errorf("\"global\" is only allowed in [defaults] and frontends")
		return
	}
	required(s.at("target"), l.Target)
	if l.Target != "" {
		if _, _, err := syslog.ParseAddress(l.Target); err != nil {
			s.at("target").errorf("%v", err)
		}
	}
	oneOf(s.at("format"), l.Format, syslog.Formats...)
	oneOf(s.at("facility"), l.Facility, syslog.Facilities[:]...)
	oneOf(s.at("level"), l.Level, syslog.Levels[:]...)
	oneOf(s.at("min_level"), l.MinLevel, syslog.Levels[:]...)
	if l.Len != nil && (*l.Len < 80 || *l.Len > 65535) {
		s.at("len").errorf("must be 80..65535, got %d", *l.Len)
	}
	if l.Level != nil && l.MinLevel != nil && syslog.Level(*l.MinLevel) > syslog.Level(*l.Level) {
		s.at("min_level").errorf("%q is less severe than level %q: nothing would be sent", *l.MinLevel, *l.Level)
	}
}

// model returns the target as the proxy uses it.
func (l *logTargetSection) model(line int) LogTarget {
	if l.Target == "global" {
		return LogTarget{Global: true, Line: line}
	}
	network, addr, _ := syslog.ParseAddress(l.Target)
	return LogTarget{Line: line, Target: syslog.Target{
		Network: network, Address: addr, Format: *l.Format, Facility: syslog.Facility(*l.Facility),
		MaxLevel: syslog.Level(*l.Level), MinLevel: syslog.Level(*l.MinLevel), Len: *l.Len,
	}}
}

// captureSection is one captured header, HAProxy's `capture request
// header <name> len <length>` (or response).
type captureSection struct {
	// Name is the header's name, case-insensitive. Required.
	Name string `toml:"name"`
	// Len is the most characters of its value kept. 1 to 4096. Required.
	Len int `toml:"len"`
}

// validate checks one capture.
func (c *captureSection) validate(s scope) {
	required(s.at("name"), c.Name)
	if c.Len < 1 || c.Len > 4096 {
		s.at("len").errorf("must be 1..4096, got %d", c.Len)
	}
}

// validateLogFormat checks a log_format value: a predefined name or a
// format string in HAProxy's language. HTTP-only variables in a tcp
// frontend are checked by checkLogFormatMode, after inheritance.
func validateLogFormat(s scope, v *string) {
	if v == nil {
		return
	}
	if _, ok := logformat.Named(*v); ok {
		return
	}
	// Sample expressions are compiled later, in the frontend's scope.
	if _, err := logformat.Parse(*v, func(string) (int, error) { return 0, nil }); err != nil {
		s.errorf("%v", err)
	}
}

// compileLogFormat compiles a frontend's log format once its mode and ACL
// scope are known: the name of a predefined format is replaced by its
// text, %[expr] are compiled in sc, and HTTP-only variables are refused in
// tcp mode (as HAProxy: "format variable 'r' is reserved for HTTP mode").
func compileLogFormat(s scope, text string, mode Mode, sc *acl.Scope) (*logformat.Format, []*acl.Expr) {
	if named, ok := logformat.Named(text); ok {
		text = named
	}
	var exprs []*acl.Expr
	f, err := logformat.Parse(text, func(expr string) (int, error) {
		e, err := sc.SampleExpr(expr)
		if err != nil {
			return 0, err
		}
		if e.L7() && mode == ModeTCP {
			return 0, fmt.Errorf("fetch %q needs mode http", expr)
		}
		exprs = append(exprs, e)
		return len(exprs) - 1, nil
	})
	if err != nil {
		s.errorf("%v", err)
		return nil, nil
	}
	if vars := f.HTTPVariables(); mode == ModeTCP && len(vars) > 0 {
		s.errorf("format variable '%s' is reserved for HTTP mode", vars[0])
		return nil, nil
	}
	return f, exprs
}
