package conf

import (
	"os"
	"strings"
	"time"

	"github.com/fulcrum-proxy/fulcrum/proxy/acl"
	"github.com/fulcrum-proxy/fulcrum/proxy/logformat"
	"github.com/fulcrum-proxy/fulcrum/proxy/stick"
	"github.com/fulcrum-proxy/fulcrum/proxy/syslog"
	"github.com/fulcrum-proxy/fulcrum/proxy/tlsx"
)

// Mode is a proxy's mode: "http" or "tcp".
type Mode string

// Modes a frontend or backend may run in.
const (
	ModeHTTP Mode = "http"
	ModeTCP  Mode = "tcp"
)

// Config is a loaded, defaulted and validated configuration: the typed model
// that the proxy builds itself from. Every inheritance from [defaults] and
// [backend.default_server] has already been applied.
type Config struct {
	File      string // path the config was read from ("" for embedded)
	Global    Global
	Frontends []*Frontend
	Backends  []*Backend
	// Tables are the standalone [[table]]s, in file order.
	Tables []*StickTable
	// Peers are the [[peers]] sections, in file order.
	Peers []*Peers
	// Resolvers are the [[resolvers]] sections, in file order.
	Resolvers []*Resolvers
	// ACL numbers every pattern set of the ACLs (inline patterns and -f
	// files) as HAProxy's `show acl`; the Runtime API changes them live.
	ACL *acl.Registry
	// TLS holds the certificates and crt-lists the binds loaded (nil
	// without any ssl bind); the proxy builds its certificate store from
	// it.
	TLS *tlsx.Loader
	// Warnings are what loads but deserves a look (an expired
	// certificate), as `FILE:LINE: message`.
	Warnings []Error
}

// Global holds process-wide settings ([global]).
type Global struct {
	MaxConn       int           // 0 = unlimited (cmd/fulcrum derives it from RLIMIT_NOFILE)
	NbThread      int           // GOMAXPROCS; 0 = the process's default (cmd/fulcrum: one fewer than the CPUs, at least one)
	HardStopAfter time.Duration // 0 = wait forever for in-flight work at stop
	LogLevel      string        // debug | info | warn | error
	LogFormat     string        // json | console
	StatsSockets  []StatsSocket // [[global.stats_socket]], in file order
	StatsTimeout  time.Duration // idle timeout of a Runtime API session
	StateFile     string        // server state written at stop, read at start; "" = none
	MaxHdr        int           // tune_http_maxhdr: lines in a message head, start line included
	H2MaxStreams  int           // tune_h2_max_concurrent_streams: streams per HTTP/2 client connection, 0 = no limit
	NetIO         string        // tune_netio: "go" (Go's poller), "epoll" (proxy/netio/epoll, HTTP/1 and TCP, plaintext or TLS) or "uring" (epoll, and mode tcp relayed on io_uring)
	Log           []LogTarget   // [[global.log]], in file order
	// ClientBufs and ServerBufs are tune_sndbuf_client/tune_rcvbuf_client
	// and tune_sndbuf_server/tune_rcvbuf_server.
	ClientBufs SocketBufs
	ServerBufs SocketBufs
	LogTag     string // program name in syslog headers
	// StatsHistoryInterval is the length of a history point (stats page
	// sparklines); 0 = no history.
	StatsHistoryInterval time.Duration
}

// SocketBufs are the kernel buffer sizes set on a kind of connection, in
// bytes (SO_SNDBUF, SO_RCVBUF); 0 leaves the kernel's automatic sizing.
type SocketBufs struct {
	Snd, Rcv int
}

// IsZero reports whether b sets nothing.
func (b SocketBufs) IsZero() bool { return b.Snd == 0 && b.Rcv == 0 }

// LogTarget is one log target: a syslog destination with its format,
// facility and levels (syslog.Target), from the line Line.
type LogTarget struct {
	syslog.Target
	Line int
	// Global marks a "global" entry; only in sections that have not
	// replaced it by the global targets yet.
	Global bool
}

// Capture is one captured header: its name, and the length kept.
type Capture struct {
	Name string
	Len  int
}

// StatsSocket is one [[global.stats_socket]]: a Runtime API endpoint.
type StatsSocket struct {
	Path        string      // Unix socket path, "" = none
	Line        int         // line of the [[global.stats_socket]] header
	Level       string      // user | operator | admin
	Mode        os.FileMode // permission bits of the socket file
	Owner       string      // user name or uid, "" = unchanged
	Group       string      // group name or gid, "" = unchanged
	TCP         string      // host:port, "" = none
	AllowRemote bool        // tcp may be a non-loopback address
	MaxConn     int         // sessions served at once (HAProxy's stats maxconn)
}

// Frontend is one [[frontend]].
type Frontend struct {
	Name  string
	Line  int      // line of the [[frontend]] header
	Binds []string // addresses, as "host:port"
	// BindOptions are the binds with their options, one per address of
	// Binds, in order. A configuration built by hand may leave it nil:
	// plain binds.
	BindOptions        []*Bind
	Mode               Mode
	MaxConn            int
	DefaultBackend     string
	TimeoutClient      time.Duration
	TimeoutHTTPRequest time.Duration
	// TimeoutHTTPKeepAlive: the wait for a kept-alive connection's next
	// request; 0 = TimeoutHTTPRequest.
	TimeoutHTTPKeepAlive time.Duration
	TimeoutClientHS      time.Duration // TLS handshake and PROXY header: timeout_client_hs, else timeout_client
	ForwardFor           bool
	Stats                *StatsPage  // nil unless [frontend.stats] enable = true
	Rules                *acl.Rules  // tcp_request, http_request and use_backend, compiled
	StickTable           *StickTable // nil = none; named as the frontend

	// Log is where access log lines go besides stderr ("global" entries
	// replaced by the global targets); LogFormat is their format (never
	// nil), LogSamples the sample expressions its %[...] fetch, by index.
	Log             []LogTarget
	LogFormat       *logformat.Format
	LogSamples      []*acl.Expr
	CaptureRequest  []Capture // capture_request_header, in order
	CaptureResponse []Capture // capture_response_header, in order
	DontLogNull     bool
	// DisableH2Upgrade: no implicit HTTP/2 upgrade on plaintext binds.
	DisableH2Upgrade bool
	// DontLogNormal and LogSeparateErrors: HAProxy's option
	// dontlog-normal and log-separate-errors.
	DontLogNormal, LogSeparateErrors bool
}

// StatsPage is a frontend's stats page ([frontend.stats] with enable = true).
type StatsPage struct {
	URI         string        // path prefix, e.g. "/stats"
	Refresh     time.Duration // 0 = no auto-refresh
	Auth        []string      // "user:password" (password or bcrypt hash); empty = open
	Admin       string        // the admin condition as written
	AdminCond   *acl.Cond     // when admin actions are allowed; nil = never
	HideVersion bool
}

// Backend is one [[backend]].
type Backend struct {
	Name              string
	Line              int
	Mode              Mode
	Balance           string // the balance expression as written, e.g. "roundrobin"
	HashType          string
	HashBalanceFactor int
	PanicThreshold    int
	FullConn          int
	AllBackups        bool
	HTTPReuse         string // never | safe | aggressive | always
	TimeoutConnect    time.Duration
	TimeoutServer     time.Duration
	TimeoutTunnel     time.Duration // 0: unset (the client and server timeouts apply)
	TimeoutQueue      time.Duration
	TimeoutCheck      time.Duration // 0 = each check is bounded by its inter
	Check             *Check        // never nil: the defaults without [backend.check]
	Retries           int
	Redispatch        bool
	AbortOnClose      bool // drop a queued request whose client left (CQ)
	ForwardFor        bool
	Rules             *acl.Rules // http_request rules, compiled
	Servers           []*Server
	StickTable        *StickTable      // nil = none; named as the backend
	Stick             []*acl.StickRule // stick on/match/store-request, compiled
	Cookie            *Cookie          // nil = no cookie persistence

	// HashKey is the secret of keyed hashing: the backend's hash_key, else
	// [global]'s; "" for none. Never print it.
	HashKey string
	// HashPreserveAffinity is always | maxconn | maxqueue.
	HashPreserveAffinity string

	// DefaultServer is [backend.default_server] with its defaults: what a
	// [[backend.server]] gets for the keys it does not set (Name "").
	DefaultServer *Server
}

// StickTable is a stick table: a frontend's, a backend's or a [[table]].
type StickTable struct {
	Name   string
	Line   int
	Type   string // ip | ipv6 | integer | string | binary
	Len    int    // string and binary keys; 0 = 32
	Size   int
	Expire time.Duration // 0 = never
	Store  stick.Store
	// Peers is the [[peers]] section the table is shared through, "" =
	// none; PeersAggregate adds up counters across fulcrum members.
	Peers          string
	PeersAggregate bool
}

// AllTables returns every stick table of the configuration: the
// frontends', the backends' and the [[table]]s.
func (c *Config) AllTables() []*StickTable {
	var out []*StickTable
	for _, fe := range c.Frontends {
		if fe.StickTable != nil {
			out = append(out, fe.StickTable)
		}
	}
	for _, be := range c.Backends {
		if be.StickTable != nil {
			out = append(out, be.StickTable)
		}
	}
	return append(out, c.Tables...)
}

// PeersSection returns the [[peers]] named name, or nil.
func (c *Config) PeersSection(name string) *Peers {
	for _, p := range c.Peers {
		if p.Name == name {
			return p
		}
	}
	return nil
}

// Cookie is a backend's cookie persistence.
type Cookie struct {
	Name     string
	Mode     string // insert | rewrite | prefix | "" (passive)
	Indirect bool
	NoCache  bool
	HTTPOnly bool
	Secure   bool
	MaxIdle  time.Duration // 0 = no limit
	MaxLife  time.Duration // 0 = no limit
}

// Server is one [[backend.server]].
type Server struct {
	Name      string
	Line      int
	Address   string // host:port
	Weight    int    // 0..256
	MaxConn   int
	MaxQueue  int
	MinConn   int
	Backup    bool
	Disabled  bool
	Slowstart time.Duration
	Cookie    string // value of the backend's persistence cookie, "" = none

	Check      bool   // health checks with the backend's Check
	Agent      *Agent // nil = no agent check
	Observe    string // "", "layer4" or "layer7"
	ErrorLimit int    // observe: consecutive errors that trigger OnError
	OnError    string // fastinter | fail-check | sudden-death | mark-down

	// The server's own check timings, HAProxy's server keywords: 0 means
	// the backend's [backend.check] value (CheckTimes).
	Inter, FastInter, DownInter time.Duration
	Rise, Fall                  int

	PoolMaxConn    int           // idle connections kept, -1 = no limit
	PoolLowConn    int           // idle connections a purge leaves
	PoolPurgeDelay time.Duration // 0 = never purged

	// SSL says traffic to the server is TLS, CheckSSL that health checks
	// are; TLS holds the settings of both (nil when neither).
	SSL, CheckSSL bool
	TLS           *ServerTLS
	// SendProxy is the PROXY protocol version sent in front of
	// connections (0: none, 1, 2), ProxyV2Options the TLVs of version 2;
	// CheckSendProxy says health checks send one (a LOCAL one).
	SendProxy      int
	ProxyV2Options []string
	CheckSendProxy bool

	// DNS resolution at runtime. FQDN is the name resolved, lower-case
	// without a final dot: the host of Address, or a template's fqdn; ""
	// when the server has no resolvers or an IP address (nothing to
	// resolve). An FQDN starting with "_" is an SRV name: the server is a
	// template slot filled by one SRV record, and Port is 0.
	Resolvers     string   // name of a [[resolvers]], "" = none
	FQDN          string   // name resolved at runtime, "" = none
	Port          int      // the server's port (SRV: from the record)
	ResolvePrefer string   // ipv4 | ipv6
	InitAddr      []string // last | libc | none | IP, tried in order at start
	AllowDupIP    bool     // resolve_opts allow-dup-ip
	IgnoreWeight  bool     // resolve_opts ignore-weight
	Template      string   // the server_template's prefix, "" = a [[backend.server]]
	Proto         string   // "" (HTTP/1.1; with SSL and h2 in TLS.ALPN, what ALPN chose) or "h2" (HTTP/2: h2c, or ALPN h2 with SSL)
}

// Resolvers is a [[resolvers]] section: the name servers and timings of
// runtime DNS resolution.
type Resolvers struct {
	Name                string
	Line                int
	Nameservers         []Nameserver
	AcceptedPayloadSize int // EDNS0 UDP payload size, 512..65535
	ResolveRetries      int // queries sent before a resolution fails, >= 1
	TimeoutResolve      time.Duration
	TimeoutRetry        time.Duration
	HoldValid           time.Duration
	HoldObsolete        time.Duration
	HoldNX              time.Duration
	HoldTimeout         time.Duration
	HoldRefused         time.Duration
	HoldOther           time.Duration
}

// Nameserver is one name server of a [[resolvers]].
type Nameserver struct {
	Name string // as written (or the address, from resolv.conf)
	Addr string // "ip:port"
}

// IsSRV reports whether the server is filled from SRV records.
func (s *Server) IsSRV() bool { return strings.HasPrefix(s.FQDN, "_") }

// Check is a backend's [backend.check]: how its servers with check = true
// are checked. Durations are above 0 and FastInter/DownInter default to
// Inter.
type Check struct {
	Type         string // "tcp" | "http"
	Proto        string // "" (as Type says) or "grpc" (grpc.health.v1 over h2c)
	Path         string // http: request path
	Method       string // http: request method
	Host         string // http: Host header, "" = HTTP/1.0 without Host
	ExpectStatus string // http: "200-399", "200", "200,204,300-399"
	Inter        time.Duration
	FastInter    time.Duration
	DownInter    time.Duration
	Rise, Fall   int
}

// Agent is a server's agent check (HAProxy's agent-check).
type Agent struct {
	Addr  string // host, "" = the server's
	Port  int
	Inter time.Duration
	Send  string // sent verbatim once connected, "" = nothing
}
