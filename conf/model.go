package conf

import "time"

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
}

// Global holds process-wide settings ([global]).
type Global struct {
	MaxConn       int           // 0 = unlimited
	HardStopAfter time.Duration // 0 = wait forever for in-flight work at stop
	LogLevel      string        // debug | info | warn | error
	LogFormat     string        // json | console
}

// Frontend is one [[frontend]].
type Frontend struct {
	Name               string
	Line               int // line of the [[frontend]] header
	Binds              []string
	Mode               Mode
	MaxConn            int
	DefaultBackend     string
	TimeoutClient      time.Duration
	TimeoutHTTPRequest time.Duration
	ForwardFor         bool
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
	TimeoutQueue      time.Duration
	Retries           int
	Redispatch        bool
	ForwardFor        bool
	Servers           []*Server
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
}
