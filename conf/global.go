package conf

import "strconv"

// globalSection is [global]: settings of the whole process.
type globalSection struct {
	// MaxConn is the most client connections the process serves at once,
	// over all frontends. Past it, new connections wait in the kernel's
	// listen queue. 0 means no limit. Default 0.
	MaxConn int `toml:"maxconn"`

	// HardStopAfter bounds a graceful stop (SIGTERM, SIGINT): listeners close
	// at once, requests in flight get this long to finish, then the process
	// exits anyway. "0s" means wait for them however long they take.
	// Default "0s".
	HardStopAfter *Duration `toml:"hard_stop_after"`

	// LogLevel is the least severe level logged: "debug", "info", "warn" or
	// "error". Access log lines are logged at "info". Default "info".
	LogLevel *string `toml:"log_level"`

	// LogFormat is how log lines are written to stderr: "json", one JSON
	// object per line, or "console", aligned text for people. Default "json".
	LogFormat *string `toml:"log_format"`

	// StatsSocket lists the Runtime API sockets ([[global.stats_socket]]),
	// which speak HAProxy's Runtime API (socat, hatop, fulcrumctl).
	StatsSocket []*statsSocketSection `toml:"stats_socket"`
}

// setDefaults gives every unset key of [global] its default.
func (g *globalSection) setDefaults() {
	orDefault(&g.HardStopAfter, 0)
	orDefault(&g.LogLevel, "info")
	orDefault(&g.LogFormat, "json")
	for _, ss := range g.StatsSocket {
		ss.setDefaults()
	}
}

// validate checks the values set in [global].
func (g *globalSection) validate(s scope) {
	nonNegative(s.at("maxconn"), &g.MaxConn)
	oneOf(s.at("log_level"), g.LogLevel, "debug", "info", "warn", "error")
	oneOf(s.at("log_format"), g.LogFormat, "json", "console")
	seen := map[string]int{}
	for i, ss := range g.StatsSocket {
		item := s.at("stats_socket").item(i)
		ss.validate(item)
		if first, dup := seen[ss.Path]; dup && ss.Path != "" {
			item.at("path").errorf("duplicate socket path, first defined at line %d", first)
		} else {
			seen[ss.Path] = item.at("path").line()
		}
	}
}

// statsSocketSection is one [[global.stats_socket]]: a Unix socket serving
// HAProxy's Runtime API.
type statsSocketSection struct {
	// Path of the Unix socket. An old socket file there is replaced. Required.
	Path string `toml:"path"`

	// Level is what the socket's clients may do: "user" (read
	// non-sensitive state), "operator" (also non-sensitive changes such as
	// clearing max counters) or "admin" (everything: weights, states, tables).
	// Default "operator", as HAProxy.
	Level *string `toml:"level"`

	// Mode is the socket file's permissions, in octal, as a string: "0600".
	// Empty leaves them to the process umask. Default "".
	Mode string `toml:"mode"`
}

// setDefaults gives every unset key of a stats socket its default.
func (ss *statsSocketSection) setDefaults() {
	orDefault(&ss.Level, "operator")
}

// validate checks the values set in a [[global.stats_socket]].
func (ss *statsSocketSection) validate(s scope) {
	required(s.at("path"), ss.Path)
	oneOf(s.at("level"), ss.Level, "user", "operator", "admin")
	if ss.Mode != "" {
		if m, err := strconv.ParseUint(ss.Mode, 8, 32); err != nil || m > 0o777 {
			s.at("mode").errorf("must be octal permissions such as \"0600\", got %q", ss.Mode)
		}
	}
}
