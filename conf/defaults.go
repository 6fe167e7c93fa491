package conf

import "time"

// defaultsSection is [defaults]: values that every frontend and backend takes
// unless it sets its own, as HAProxy's "defaults" section. Each key applies
// only where HAProxy allows that keyword: a key marked "frontends" below is
// taken by frontends only, "backends" by backends only.
type defaultsSection struct {
	// Mode of frontends and backends: "http" or "tcp". A frontend and the
	// backends it routes to must have the same mode. Default "http".
	Mode *Mode `toml:"mode"`

	// MaxConn is each frontend's limit of concurrent client connections
	// (frontends); 0 means only [global] maxconn limits. Default 0.
	MaxConn *int `toml:"maxconn"`

	// Balance is the backends' algorithm to choose a server, written as in
	// HAProxy (see backend balance). Default "roundrobin".
	Balance *string `toml:"balance"`

	// HashType is how hash-based algorithms map a hash to a server
	// (backends; see backend hash_type). Default "map-based".
	HashType *string `toml:"hash_type"`

	// HashBalanceFactor bounds the load of consistent hashing (backends; see
	// backend hash_balance_factor). Default 0.
	HashBalanceFactor *int `toml:"hash_balance_factor"`

	// HashPreserveAffinity is what hashing algorithms do when the server
	// of a request's key is full (backends; see backend
	// hash_preserve_affinity). Default "always".
	HashPreserveAffinity *string `toml:"hash_preserve_affinity"`

	// FullConn is the backend load at which dynamic server limits reach
	// maxconn (backends; see backend fullconn). Default 0.
	FullConn *int `toml:"fullconn"`

	// HTTPReuse is the backends' policy for sending requests over idle
	// server connections: "never", "safe", "aggressive" or "always" (see
	// backend http_reuse). Default "safe".
	HTTPReuse *string `toml:"http_reuse"`

	// TimeoutConnect is how long a connection to a server may take to
	// establish (backends). Default "5s".
	TimeoutConnect *Duration `toml:"timeout_connect"`

	// TimeoutClient is how long a client may stay silent while it is
	// expected to send or to take data (frontends). "0s" means never time
	// out. Default "30s".
	TimeoutClient *Duration `toml:"timeout_client"`

	// TimeoutServer is how long a server may stay silent while it is expected
	// to answer or to take data (backends). "0s" means never time out.
	// Default "30s".
	TimeoutServer *Duration `toml:"timeout_server"`

	// TimeoutTunnel replaces timeout_client and timeout_server in
	// tunnels (backends: mode tcp sessions, HTTP/1 after a 101), as
	// HAProxy's "timeout tunnel". Default "0s": unset.
	TimeoutTunnel *Duration `toml:"timeout_tunnel"`

	// TimeoutQueue is how long a request may wait in a queue for a free
	// server slot before it gets a 503 (backends). "0s" means use
	// timeout_connect, as HAProxy. Default "0s".
	TimeoutQueue *Duration `toml:"timeout_queue"`

	// TimeoutHTTPRequest is how long a client may take to send a complete
	// request header, from the first byte or from the end of the previous
	// request on a kept-alive connection; past it the client gets a 408
	// (frontends, HTTP mode). Default "10s".
	TimeoutHTTPRequest *Duration `toml:"timeout_http_request"`

	// TimeoutHTTPKeepAlive is how long a kept-alive connection may wait
	// for its next request (frontends; see frontend
	// timeout_http_keep_alive). Default "0s": timeout_http_request.
	TimeoutHTTPKeepAlive *Duration `toml:"timeout_http_keep_alive"`

	// TimeoutClientHS is how long a client may take for its TLS handshake
	// and its PROXY protocol header (frontends; HAProxy's timeout
	// client-hs). "0s" means timeout_client applies. Default "0s".
	TimeoutClientHS *Duration `toml:"timeout_client_hs"`

	// TimeoutCheck is how long a health check may wait for its response once
	// connected (backends). "0s" means use the check's inter, as HAProxy.
	// Default "0s".
	TimeoutCheck *Duration `toml:"timeout_check"`

	// Retries is how many times a failed connection to a server is tried
	// again before the request fails (backends). 0 means no retry.
	// Default 3.
	Retries *int `toml:"retries"`

	// Redispatch lets the last retry of a connection go to another server
	// than the failed one, even a persistent one (backends). Default false.
	Redispatch *bool `toml:"redispatch"`

	// AbortOnClose drops a queued request whose client closed its
	// connection (backends; HAProxy's option abortonclose). Default false.
	AbortOnClose *bool `toml:"abortonclose"`

	// ForwardFor adds an X-Forwarded-For header with the client's address to
	// each request sent to a server (frontends and backends, HTTP mode).
	// Default false.
	ForwardFor *bool `toml:"forwardfor"`

	// Log lists the frontends' log targets (frontends; see frontend log);
	// none when absent.
	Log []*logTargetSection `toml:"log"`

	// LogFormat is the frontends' access log format (frontends; see
	// frontend log_format). Default "" (httplog or tcplog by mode).
	LogFormat *string `toml:"log_format"`

	// DontLogNull leaves out of the log the connections that sent nothing
	// (frontends; HAProxy's option dontlognull). Default false.
	DontLogNull *bool `toml:"dontlognull"`

	// DontLogNormal logs only the requests that failed (frontends; see
	// frontend dontlog_normal). Default false.
	DontLogNormal *bool `toml:"dontlog_normal"`

	// LogSeparateErrors sends the lines of failed requests at level err
	// (frontends; see frontend log_separate_errors). Default false.
	LogSeparateErrors *bool `toml:"log_separate_errors"`

	// DisableH2Upgrade turns off the implicit HTTP/2 upgrade (frontends;
	// see frontend disable_h2_upgrade). Default false.
	DisableH2Upgrade *bool `toml:"disable_h2_upgrade"`
}

// setDefaults gives every unset key of [defaults] its built-in default. It is
// called before the frontends and backends inherit from [defaults].
func (d *defaultsSection) setDefaults() {
	orDefault(&d.Mode, ModeHTTP)
	orDefault(&d.MaxConn, 0)
	orDefault(&d.Balance, "roundrobin")
	orDefault(&d.HashType, "map-based")
	orDefault(&d.HashBalanceFactor, 0)
	orDefault(&d.HashPreserveAffinity, "always")
	orDefault(&d.FullConn, 0)
	orDefault(&d.HTTPReuse, "safe")
	orDefault(&d.TimeoutConnect, Duration(5*time.Second))
	orDefault(&d.TimeoutClient, Duration(30*time.Second))
	orDefault(&d.TimeoutServer, Duration(30*time.Second))
	orDefault(&d.TimeoutTunnel, Duration(0))
	orDefault(&d.TimeoutQueue, 0)
	orDefault(&d.TimeoutHTTPRequest, Duration(10*time.Second))
	orDefault(&d.TimeoutHTTPKeepAlive, 0)
	orDefault(&d.TimeoutCheck, 0)
	orDefault(&d.TimeoutClientHS, 0)
	orDefault(&d.Retries, 3)
	orDefault(&d.Redispatch, false)
	orDefault(&d.AbortOnClose, false)
	orDefault(&d.ForwardFor, false)
	orDefault(&d.LogFormat, "")
	orDefault(&d.DontLogNull, false)
	orDefault(&d.DisableH2Upgrade, false)
	orDefault(&d.DontLogNormal, false)
	orDefault(&d.LogSeparateErrors, false)
	for _, l := range d.Log {
		l.setDefaults()
	}
}

// validate checks the values set in [defaults]. The checks are those of the
// frontends and backends, so that a bad default is reported once, here, and
// not once per section that inherits it.
func (d *defaultsSection) validate(s scope) {
	oneOf(s.at("mode"), d.Mode, ModeHTTP, ModeTCP)
	nonNegative(s.at("maxconn"), d.MaxConn)
	checkBalance(s.at("balance"), d.Balance)
	checkHashType(s.at("hash_type"), d.HashType)
	checkHashBalanceFactor(s.at("hash_balance_factor"), d.HashBalanceFactor)
	oneOf(s.at("hash_preserve_affinity"), d.HashPreserveAffinity, hashAffinities...)
	nonNegative(s.at("fullconn"), d.FullConn)
	oneOf(s.at("http_reuse"), d.HTTPReuse, httpReuseModes...)
	nonNegative(s.at("retries"), d.Retries)
	for i, l := range d.Log {
		l.validate(s.at("log").item(i), true)
	}
	validateLogFormat(s.at("log_format"), d.LogFormat)
}
