package conf

import (
	"net"
	"strconv"
	"time"
)

// globalSection is [global]: settings of the whole process.
type globalSection struct {
	// MaxConn is the most client connections the process serves at once,
	// over all frontends. Past it, new connections wait in the kernel's
	// listen queue. 0 means what the file descriptor limit allows, as
	// HAProxy's: `fulcrum run` raises the soft RLIMIT_NOFILE to the hard
	// one and takes (limit - reserved) / 2, reserved counting listeners,
	// checks and Runtime API sessions (show info reports Ulimit-n and
	// Maxconn). Default 0.
	MaxConn int `toml:"maxconn"`

	// NbThread is how many threads run Go code at once (GOMAXPROCS), as
	// HAProxy's nbthread. 0 means one fewer than the available CPUs (the
	// affinity mask or the cgroup's CPU limit), at least one, unless the
	// GOMAXPROCS environment variable is set: the CPU left serves the
	// kernel's network processing (cmd/fulcrum defaultThreads). Default 0.
	NbThread int `toml:"nbthread"`

	// HardStopAfter bounds a graceful stop (SIGTERM, SIGINT): listeners close
	// at once, requests in flight get this long to finish, then the process
	// exits anyway. "0s" means wait for them however long they take.
	// Default "0s".
	HardStopAfter *Duration `toml:"hard_stop_after"`

	// LogLevel is the least severe level logged: "debug", "info", "warn" or
	// "error". Access log lines are logged at "info". Default "info".
	LogLevel *string `toml:"log_level"`

	// LogFormat is how log lines are written to stderr: "json", one JSON
	// object per line, or "console", aligned text for people (access log
	// fields in a fixed order). Default "json". (A frontend's log_format is
	// another thing: HAProxy's log-format, for its log targets.)
	LogFormat *string `toml:"log_format"`

	// Log lists the process's log targets ([[global.log]]), HAProxy's
	// global `log` lines: the frontends whose log list says "global" send
	// their access log lines there.
	Log []*logTargetSection `toml:"log"`

	// LogTag is the program name in syslog headers, HAProxy's log-tag.
	// Default "fulcrum".
	LogTag *string `toml:"log_tag"`

	// StatsHistoryInterval is the length of one point of the stats page's
	// history: each frontend, backend and server keeps its last 90 points
	// (request and error counts, p50/p99 response time, queue, sessions),
	// 15 minutes at the default. "0s" turns the history off. Default "10s".
	StatsHistoryInterval *Duration `toml:"stats_history_interval"`

	// StatsSocket lists the Runtime API sockets ([[global.stats_socket]]),
	// which speak HAProxy's Runtime API (socat, hatop, fulcrumctl).
	StatsSocket []*statsSocketSection `toml:"stats_socket"`

	// StatsTimeout closes a Runtime API session that sends no complete
	// command line for this long (HAProxy's `stats timeout`); `set timeout
	// cli` changes it for one session. Default "10s".
	StatsTimeout *Duration `toml:"stats_timeout"`

	// StateFile is a file the servers' state is written to at stop and read
	// from at start, as HAProxy's server-state-file: the admin state set at
	// runtime (DRAIN, MAINT), the user weight, the operational state from
	// checks and the check counters of every server survive a restart as
	// they survive a reload. Its format is the reply of `show servers
	// state`; lines naming a backend or server that no longer exists are
	// ignored, and a weight is restored only while the configured weight
	// stays. A missing file at start is not an error. "" means no state
	// file. Default "".
	StateFile string `toml:"state_file"`

	// TuneHTTPMaxHdr is the most lines an HTTP message head may have,
	// its start line included (HAProxy's tune.http.maxhdr): a request with
	// more gets 400, a response 502. 1..32767. Default 101.
	TuneHTTPMaxHdr *int `toml:"tune_http_maxhdr"`

	// HashKey is the backends' hash_key when they set none: a secret that
	// keys the hashing algorithms (see backend hash_key). Leaving it out
	// means HAProxy's unkeyed hashing; when set, 16 to 256 characters.
	// Default "" (unkeyed).
	HashKey *string `toml:"hash_key"`
	// TuneH2MaxConcurrentStreams is the most streams an HTTP/2 client
	// connection may have open at once (HAProxy's
	// tune.h2.max-concurrent-streams, announced in SETTINGS); a client
	// opening more has them refused. 0 means no limit (fulcrum then
	// announces 2^31-1). Default 100, as HAProxy.
	TuneH2MaxConcurrentStreams *int `toml:"tune_h2_max_concurrent_streams"`

	// TuneNetIO is the connection layer of client connections (HTTP/1,
	// HTTP/2 and TCP, plaintext or TLS) and plaintext HTTP/1 and TCP
	// server connections: "go", Go's own network poller, or "epoll"
	// (Linux only), fulcrum's edge-triggered epoll instances, which keep
	// each connection's readiness so that a read that would find the
	// socket empty is not made, and accept on them (proxy/netio/epoll;
	// bench/README.md says what it saves). TLS and HTTP/2 server
	// connections stay on Go's poller either way. A listener kept across
	// a reload keeps the layer it was opened with. With "epoll", mode tcp
	// sessions between plaintext client and server sockets are relayed by
	// its pollers, which move the bytes themselves (epoll.Pair). No HAProxy
	// equivalent. "uring" is "epoll" plus mode tcp sessions between
	// plaintext client and server sockets relayed by one io_uring loop
	// (proxy/netio/uring; Linux 6.0 or later): fewer system calls and
	// less CPU per message, but no splice for bulk transfers
	// (bench/README.md); where io_uring is refused (EPERM: a container's
	// seccomp profile, kernel.io_uring_disabled; ENOSYS, EINVAL: an older
	// kernel) it is said once in the log at start (info) and they are
	// relayed as with "epoll". Default "uring" on Linux, "go" elsewhere
	// (DefaultNetIO).
	TuneNetIO *string `toml:"tune_netio"`

	// TuneSndbufClient, TuneRcvbufClient, TuneSndbufServer and
	// TuneRcvbufServer fix the kernel's send and receive buffers of client
	// and server connections, in bytes (HAProxy's tune.sndbuf.client,
	// tune.rcvbuf.client, tune.sndbuf.server, tune.rcvbuf.server):
	// SO_SNDBUF and SO_RCVBUF, which Linux doubles for its bookkeeping and
	// which turn its automatic sizing of that buffer off. The client ones
	// are set on the listening sockets, whose connections inherit them (a
	// listener kept across a reload keeps what it was opened with), the
	// server ones on each server connection before it connects (health
	// checks excluded). 0 leaves the kernel's automatic sizing. Default 0.
	TuneSndbufClient int `toml:"tune_sndbuf_client"`
	// TuneRcvbufClient is the receive buffer of client connections, in
	// bytes (HAProxy's tune.rcvbuf.client; see TuneSndbufClient). 0 leaves
	// the kernel's automatic sizing. Default 0.
	TuneRcvbufClient int `toml:"tune_rcvbuf_client"`
	// TuneSndbufServer is the send buffer of server connections, in bytes
	// (HAProxy's tune.sndbuf.server; see TuneSndbufClient). 0 leaves the
	// kernel's automatic sizing. Default 0.
	TuneSndbufServer int `toml:"tune_sndbuf_server"`
	// TuneRcvbufServer is the receive buffer of server connections, in
	// bytes (HAProxy's tune.rcvbuf.server; see TuneSndbufClient). 0 leaves
	// the kernel's automatic sizing. Default 0.
	TuneRcvbufServer int `toml:"tune_rcvbuf_server"`
}

// setDefaults gives every unset key of [global] its default.
func (g *globalSection) setDefaults() {
	orDefault(&g.HardStopAfter, 0)
	orDefault(&g.LogLevel, "info")
	orDefault(&g.LogFormat, "json")
	orDefault(&g.StatsTimeout, Duration(10*time.Second))
	orDefault(&g.TuneHTTPMaxHdr, 101)
	orDefault(&g.HashKey, "")
	orDefault(&g.LogTag, "fulcrum")
	orDefault(&g.StatsHistoryInterval, Duration(10*time.Second))
	for _, l := range g.Log {
		l.setDefaults()
	}
	orDefault(&g.TuneH2MaxConcurrentStreams, 100)
	orDefault(&g.TuneNetIO, DefaultNetIO)
	for _, ss := range g.StatsSocket {
		ss.setDefaults()
	}
}

// validate checks the values set in [global].
func (g *globalSection) validate(s scope) {
	nonNegative(s.at("maxconn"), &g.MaxConn)
	nonNegative(s.at("nbthread"), &g.NbThread)
	oneOf(s.at("log_level"), g.LogLevel, "debug", "info", "warn", "error")
	oneOf(s.at("log_format"), g.LogFormat, "json", "console")
	positive(s.at("stats_timeout"), g.StatsTimeout)
	inRange(s.at("tune_http_maxhdr"), g.TuneHTTPMaxHdr, 1, 32767)
	nonNegative(s.at("tune_sndbuf_client"), &g.TuneSndbufClient)
	nonNegative(s.at("tune_rcvbuf_client"), &g.TuneRcvbufClient)
	nonNegative(s.at("tune_sndbuf_server"), &g.TuneSndbufServer)
	nonNegative(s.at("tune_rcvbuf_server"), &g.TuneRcvbufServer)
	checkHashKey(s.at("hash_key"), g.HashKey)
	for i, l := range g.Log {
		l.validate(s.at("log").item(i), false)
	}
	if g.LogTag != nil && *g.LogTag == "" {
		s.at("log_tag").errorf("must not be empty")
	}
	if g.StatsHistoryInterval != nil && *g.StatsHistoryInterval != 0 && *g.StatsHistoryInterval < Duration(100*time.Millisecond) {
		s.at("stats_history_interval").errorf("must be 0s (off) or at least 100ms, got %s", g.StatsHistoryInterval.Std())
	}
	nonNegative(s.at("tune_h2_max_concurrent_streams"), g.TuneH2MaxConcurrentStreams)
	oneOf(s.at("tune_netio"), g.TuneNetIO, "go", "epoll", "uring")
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

// statsSocketSection is one [[global.stats_socket]]: a Unix socket (and
// optionally a TCP address) serving HAProxy's Runtime API.
type statsSocketSection struct {
	// Path of the Unix socket, created at start and removed at stop. A
	// stale socket file left by a crashed run is replaced; a file that is
	// not a socket, or a socket another process answers on, is an error.
	// Required unless tcp is set.
	Path string `toml:"path"`

	// Level is what the socket's clients may do: "user" (read only),
	// "operator" (also weights, server states, ACL and table entries) or
	// "admin" (everything: addresses, checks, maxconn, shutdowns, reload).
	// Default "operator", as HAProxy.
	Level *string `toml:"level"`

	// MaxConn is how many sessions the socket serves at once; more clients
	// wait in the kernel's listen queue and are served in turn (HAProxy's
	// `stats maxconn`). Default 10.
	MaxConn *int `toml:"maxconn"`

	// Mode is the socket file's permissions, in octal, as a string. Default
	// "0600": only the process's user may connect.
	Mode *string `toml:"mode"`

	// Owner is the user owning the socket file, a name or a numeric uid.
	// Changing it needs the privilege to chown. Empty keeps the process's
	// user. Default "".
	Owner string `toml:"owner"`

	// Group is the group owning the socket file, a name or a numeric gid
	// (with mode "0660", its members may connect). Empty keeps the
	// process's group. Default "".
	Group string `toml:"group"`

	// TCP is a host:port serving the same API over TCP, besides path or
	// instead of it. The Runtime API has no authentication, so the address
	// must be a loopback one (127.0.0.0/8, ::1, localhost) unless
	// allow_remote is true. Empty serves no TCP. Default "".
	TCP string `toml:"tcp"`

	// AllowRemote lets tcp be any address, reachable from other hosts.
	// Default false.
	AllowRemote bool `toml:"allow_remote"`
}

// setDefaults gives every unset key of a stats socket its default.
func (ss *statsSocketSection) setDefaults() {
	orDefault(&ss.Level, "operator")
	orDefault(&ss.Mode, "0600")
	orDefault(&ss.MaxConn, 10)
}

// validate checks the values set in a [[global.stats_socket]].
func (ss *statsSocketSection) validate(s scope) {
	if ss.TCP == "" {
		required(s.at("path"), ss.Path)
	}
	oneOf(s.at("level"), ss.Level, "user", "operator", "admin")
	atLeast(s.at("maxconn"), ss.MaxConn, 1)
	if ss.Mode != nil {
		if m, err := strconv.ParseUint(*ss.Mode, 8, 32); err != nil || m > 0o777 {
			s.at("mode").errorf("must be octal permissions such as \"0600\", got %q", *ss.Mode)
		}
	}
	if ss.TCP != "" {
		host, port, err := net.SplitHostPort(ss.TCP)
		switch {
		case err != nil || port == "":
			s.at("tcp").errorf("must be host:port, got %q", ss.TCP)
		case !ss.AllowRemote && !isLoopback(host):
			s.at("tcp").errorf("%q is not a loopback address; the Runtime API has no authentication (set allow_remote = true to serve it)", host)
		}
	}
}

// isLoopback reports whether host is a loopback IP address or "localhost".
func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// socketMode returns a stats socket's mode bits ("0600" -> 0o600).
func socketMode(s string) uint32 {
	m, _ := strconv.ParseUint(s, 8, 32)
	return uint32(m)
}
