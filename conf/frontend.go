package conf

import (
	"strings"

	"github.com/fulcrum-proxy/fulcrum/proxy/acl"
	"github.com/fulcrum-proxy/fulcrum/proxy/logformat"
)

// frontendSection is one [[frontend]]: where clients connect, and how their
// requests are routed to a backend.
type frontendSection struct {
	// Name of the frontend in logs, stats and the Runtime API: letters,
	// digits, "-", "_", "." and ":". Required, unique among frontends.
	Name string `toml:"name"`

	// Bind lists the addresses to listen on, as "host:port". An empty host
	// or "*" means all addresses; ":0" picks a free port. Required, at least
	// one. HAProxy's bind options may follow the address, as in
	// haproxy.cfg: "127.0.0.1:8443 ssl crt /etc/fulcrum/certs/ alpn
	// http/1.1" (TLS: ssl, crt FILE|DIR (repeatable), crt-list FILE, alpn,
	// ssl-min-ver, ssl-max-ver, ciphers, ciphersuites, curves, verify
	// none|optional|required, ca-file, no-tls-tickets, strict-sni; and
	// accept-proxy for the PROXY protocol; "proto h2" for HTTP/2 without
	// negotiation, h2c on a plaintext bind). An http mode frontend speaks
	// HTTP/2 to the clients whose ALPN chose h2 ("alpn h2,http/1.1"). See
	// README "TLS" and "HTTP/2 and gRPC".
	Bind []string `toml:"bind"`

	// Mode is "http" or "tcp"; it must be the mode of every backend the
	// frontend routes to. Inherited from [defaults]; default "http".
	Mode *Mode `toml:"mode"`

	// MaxConn is the most client connections this frontend serves at once;
	// past it, new ones wait in the kernel's listen queue. 0 means only
	// [global] maxconn limits. Inherited from [defaults]; default 0.
	MaxConn *int `toml:"maxconn"`

	// DefaultBackend is the backend that gets the requests no use_backend
	// rule routed. Empty means such requests get a 503. It must name a
	// backend of the same mode. Default "".
	DefaultBackend string `toml:"default_backend"`

	// ACL names conditions for the rules, as HAProxy's "acl" lines: the key is
	// the ACL's name, the value a fetch, flags and patterns, e.g.
	// is_api = "path_beg /api", or a list of such expressions that OR
	// together (HAProxy's several lines of one name). Names are visible in
	// this frontend's rules only. See README "ACLs and rules".
	ACL map[string]aclDefinitions `toml:"acl"`

	// UseBackend lists routing rules, tried in order: the first whose
	// condition holds sends the request to its backend.
	UseBackend []*useBackendRule `toml:"use_backend"`

	// HTTPRequest lists HAProxy "http-request" rules, in HAProxy's syntax,
	// e.g. "deny deny_status 403 if { path_beg /admin } !internal".
	HTTPRequest []string `toml:"http_request"`

	// HTTPResponse lists HAProxy "http-response" rules, in HAProxy's
	// syntax, run on every response this frontend relays after its
	// backend's own: set-header, add-header, del-header, set-status,
	// deny (502 unless deny_status says otherwise) and allow, e.g.
	// `set-header Strict-Transport-Security "max-age=63072000" if { ssl_fc }`.
	// Conditions may read the response (status, res.hdr). HTTP mode only.
	HTTPResponse []string `toml:"http_response"`

	// TCPRequest lists HAProxy "tcp-request" rules, in HAProxy's syntax,
	// e.g. "connection reject if { src -f /etc/blocklist }".
	TCPRequest []string `toml:"tcp_request"`

	// StickTable is this frontend's stick table, named as the frontend:
	// the table its track-sc rules use unless they name another one
	// (stick_table = { type = "ip", size = 100000, ... }).
	StickTable *stickTableSection `toml:"stick_table"`

	// TimeoutClient is how long a client may stay silent while it is
	// expected to send or to take data. "0s" means never time out.
	// Inherited from [defaults]; default "30s".
	TimeoutClient *Duration `toml:"timeout_client"`

	// TimeoutHTTPRequest is how long a client may take to send a complete
	// request header; past it the client gets a 408. Inherited from
	// [defaults]; default "10s".
	TimeoutHTTPRequest *Duration `toml:"timeout_http_request"`

	// TimeoutHTTPKeepAlive is how long a kept-alive HTTP/1 connection may
	// wait for the first byte of its next request before it is closed
	// (silently), HAProxy's timeout http-keep-alive; from that byte on,
	// timeout_http_request applies. "0s" means timeout_http_request for
	// the wait too, as HAProxy without it. Inherited from [defaults];
	// default "0s".
	TimeoutHTTPKeepAlive *Duration `toml:"timeout_http_keep_alive"`

	// TimeoutClientHS is how long a client may take for its TLS handshake
	// and its PROXY protocol header (HAProxy's timeout client-hs); past
	// it the connection is closed. "0s" means timeout_client applies.
	// Inherited from [defaults]; default "0s".
	TimeoutClientHS *Duration `toml:"timeout_client_hs"`

	// ForwardFor adds an X-Forwarded-For header with the client's address to
	// each request (HTTP mode). A request gets it when its frontend or its
	// backend sets it. Inherited from [defaults]; default false.
	ForwardFor *bool `toml:"forwardfor"`

	// Stats serves the HTML/CSV stats page on this frontend
	// ([frontend.stats]).
	Stats *statsPageSection `toml:"stats"`

	// Log lists where the frontend's access log lines go besides stderr,
	// as HAProxy's `log` lines: { target = "global" } for the
	// [[global.log]] targets, or targets of its own (see [[global.log]]).
	// [] means none (HAProxy's `no log`). Inherited from [defaults]; none
	// when absent from both.
	Log []*logTargetSection `toml:"log"`

	// LogFormat is the access log line sent to the log targets, in
	// HAProxy's log-format language ("%ci:%cp [%tr] %ft %b/%s ..."), or
	// the name of one of HAProxy's formats: "httplog", "tcplog", "clf" or
	// "default". HTTP-only variables are refused in mode tcp, where
	// "httplog" means "tcplog" (as HAProxy's option httplog). Inherited
	// from [defaults]; default "" (httplog in mode http, tcplog in tcp).
	LogFormat *string `toml:"log_format"`

	// CaptureRequestHeader lists request headers whose value is logged
	// (%hr, between braces, in order), each cut to len characters:
	// [{ name = "Host", len = 32 }], as HAProxy's `capture request header`.
	CaptureRequestHeader []*captureSection `toml:"capture_request_header"`

	// CaptureResponseHeader lists response headers whose value is logged
	// (%hs), as HAProxy's `capture response header`.
	CaptureResponseHeader []*captureSection `toml:"capture_response_header"`

	// DontLogNull leaves out of the log the connections that sent nothing
	// (probes, port scans), as HAProxy's option dontlognull. Inherited from
	// [defaults]; default false.
	DontLogNull *bool `toml:"dontlognull"`

	// DontLogNormal leaves out of the access log (stderr and targets) the
	// requests that went well, as HAProxy's option dontlog-normal: a
	// line is logged when the request was redispatched or retried, ended
	// with a termination cause other than none or local (the first
	// character of termination_state not '-' or 'L'), or, in mode http,
	// had a 5xx status. Inherited from [defaults]; default false.
	DontLogNormal *bool `toml:"dontlog_normal"`

	// LogSeparateErrors sends the lines of such failed requests to the
	// log targets at level err instead of info, as HAProxy's option
	// log-separate-errors (a target's level can then keep them apart).
	// Inherited from [defaults]; default false.
	LogSeparateErrors *bool `toml:"log_separate_errors"`

	// DisableH2Upgrade turns off the implicit HTTP/2 upgrade: by default a
	// plaintext bind of an http frontend serves as HTTP/2 a connection
	// whose first bytes are the HTTP/2 preface (h2c with prior
	// knowledge), as HAProxy does unless option disable-h2-upgrade; bind
	// option "proto h1" turns it off for one bind. Inherited from
	// [defaults]; default false.
	DisableH2Upgrade *bool `toml:"disable_h2_upgrade"`

	rules *acl.Rules // compiled by compileRules
	binds []*Bind    // Bind parsed by validate (nil elements: errors)

	logFormat  *logformat.Format // compiled by compileLog
	logSamples []*acl.Expr
}

// compileLog compiles the frontend's log format in its ACL scope sc, once
// its mode is known: an unset format is httplog in mode http and tcplog in
// mode tcp, where httplog and clf also mean tcplog (HAProxy downgrades
// option httplog in a tcp proxy).
func (f *frontendSection) compileLog(s scope, sc *acl.Scope) {
	text := deref(f.LogFormat)
	at := s.at("log_format")
	if _, ok := logformat.Named(text); ok || text == "" {
		if text == "" || text == "httplog" || text == "clf" {
			text = "httplog"
			if *f.Mode == ModeTCP {
				text = "tcplog"
			}
		}
	} else if f.LogFormat != nil && s.c.failed[at.p.key()] {
		return // already reported by validate
	}
	f.logFormat, f.logSamples = compileLogFormat(at, text, *f.Mode, sc)
}

// logModel returns the frontend's log targets, the "global" entries
// replaced by the global ones.
func (f *frontendSection) logModel(c *checker, i int, global []LogTarget) []LogTarget {
	var out []LogTarget
	for j, l := range f.Log {
		if l.Target == "global" {
			out = append(out, global...)
			continue
		}
		out = append(out, l.model(c.pos.line(path{"frontend"}.index(i).child("log").index(j))))
	}
	return out
}

// captures returns capture declarations as the model's.
func captures(cs []*captureSection) []Capture {
	var out []Capture
	for _, c := range cs {
		out = append(out, Capture{Name: c.Name, Len: c.Len})
	}
	return out
}

// setDefaults gives every unset key of a frontend its value from [defaults],
// which must have had its own setDefaults.
func (f *frontendSection) setDefaults(d *defaultsSection) {
	inherit(&f.Mode, d.Mode)
	inherit(&f.MaxConn, d.MaxConn)
	inherit(&f.TimeoutClient, d.TimeoutClient)
	inherit(&f.TimeoutHTTPRequest, d.TimeoutHTTPRequest)
	inherit(&f.TimeoutHTTPKeepAlive, d.TimeoutHTTPKeepAlive)
	inherit(&f.TimeoutClientHS, d.TimeoutClientHS)
	inherit(&f.ForwardFor, d.ForwardFor)
	inherit(&f.LogFormat, d.LogFormat)
	inherit(&f.DontLogNull, d.DontLogNull)
	inherit(&f.DisableH2Upgrade, d.DisableH2Upgrade)
	inherit(&f.DontLogNormal, d.DontLogNormal)
	inherit(&f.LogSeparateErrors, d.LogSeparateErrors)
	if f.Log == nil {
		f.Log = d.Log // the same targets, already defaulted
	} else {
		for _, l := range f.Log {
			l.setDefaults()
		}
	}
	if f.Stats != nil {
		f.Stats.setDefaults()
	}
}

// validate checks the values set in one [[frontend]]. That default_backend
// and use_backend name a backend of the same mode is checked by fileSection,
// which sees the backends.
func (f *frontendSection) validate(s scope) {
	checkName(s.at("name"), f.Name)
	if len(f.Bind) == 0 {
		s.at("bind").errorf("needs at least one address")
	}
	f.binds = make([]*Bind, len(f.Bind))
	for i, b := range f.Bind {
		f.binds[i] = parseBind(s.at("bind").item(i), b)
	}
	oneOf(s.at("mode"), f.Mode, ModeHTTP, ModeTCP)
	nonNegative(s.at("maxconn"), f.MaxConn)
	validateACLs(s.at("acl"), f.ACL)
	for i, r := range f.UseBackend {
		r.validate(s.at("use_backend").item(i))
	}
	for i, r := range f.HTTPRequest {
		if strings.TrimSpace(r) == "" {
			s.at("http_request").item(i).errorf("empty rule")
		}
	}
	for i, r := range f.HTTPResponse {
		if strings.TrimSpace(r) == "" {
			s.at("http_response").item(i).errorf("empty rule")
		}
	}
	for i, r := range f.TCPRequest {
		if strings.TrimSpace(r) == "" {
			s.at("tcp_request").item(i).errorf("empty rule")
		}
	}
	if f.StickTable != nil {
		f.StickTable.validate(s.at("stick_table"))
	}
	for i, l := range f.Log {
		l.validate(s.at("log").item(i), true)
	}
	validateLogFormat(s.at("log_format"), f.LogFormat)
	for i, c := range f.CaptureRequestHeader {
		c.validate(s.at("capture_request_header").item(i))
	}
	for i, c := range f.CaptureResponseHeader {
		c.validate(s.at("capture_response_header").item(i))
	}
	if f.Stats != nil {
		f.Stats.validate(s.at("stats"))
		if f.Stats.Enable && f.Mode != nil && *f.Mode == ModeTCP {
			s.at("stats").errorf("needs mode \"http\"")
		}
	}
}

// useBackendRule is one element of a frontend's use_backend: the backend to
// use when a condition holds, as HAProxy's "use_backend NAME if COND".
type useBackendRule struct {
	// Backend is the backend's name. It must be a backend of the frontend's
	// mode. Required.
	Backend string `toml:"backend"`

	// If is the condition in HAProxy's syntax: ACL names, "!" to negate,
	// "||" for or, { inline ACLs }. Empty with unless empty too means always.
	If string `toml:"if"`

	// Unless is the negated form of If; a rule has at most one of the two.
	Unless string `toml:"unless"`
}

// validate checks one use_backend rule.
func (r *useBackendRule) validate(s scope) {
	required(s.at("backend"), r.Backend)
	if r.If != "" && r.Unless != "" {
		s.at("unless").errorf("a rule has either if or unless, not both")
	}
}

// statsPageSection is [frontend.stats]: HAProxy's stats page (HTML, and CSV
// with ";csv") served by a frontend in HTTP mode.
type statsPageSection struct {
	// Enable turns the page on. Default false.
	Enable bool `toml:"enable"`

	// URI is the path prefix the page answers on. Default "/haproxy?stats",
	// as HAProxy.
	URI *string `toml:"uri"`

	// Refresh makes the HTML page reload itself this often; "0s" means never.
	// Default "0s".
	Refresh *Duration `toml:"refresh"`

	// Auth lists the "user:password" pairs allowed in with HTTP basic
	// authentication. Empty means no authentication.
	Auth []string `toml:"auth"`

	// Admin is the condition, in HAProxy's ACL syntax (as after `stats
	// admin if`), under which the page offers admin actions on servers (set
	// READY/DRAIN/MAINT, force health UP/DOWN, kill sessions): a named ACL of
	// this frontend ("internal"), an anonymous one ("{ src 10.0.0.0/8 }"),
	// a predefined one ("TRUE", "LOCALHOST"), or a combination ("internal
	// !blocked"). "src ADDRESS..." without braces is accepted too. Empty
	// means never. Default "".
	Admin string `toml:"admin"`

	// HideVersion leaves fulcrum's version and build out of the page, as
	// HAProxy's "stats hide-version". Default false.
	HideVersion bool `toml:"hide_version"`

	adminCond *acl.Cond // Admin compiled in the frontend's ACL scope
}

// setDefaults gives every unset key of [frontend.stats] its default.
func (sp *statsPageSection) setDefaults() {
	orDefault(&sp.URI, "/haproxy?stats")
	orDefault(&sp.Refresh, 0)
}

// validate checks the values set in [frontend.stats].
func (sp *statsPageSection) validate(s scope) {
	if sp.URI != nil && !strings.HasPrefix(*sp.URI, "/") {
		s.at("uri").errorf("must start with \"/\", got %q", *sp.URI)
	}
	for i, a := range sp.Auth {
		if user, _, ok := strings.Cut(a, ":"); !ok || user == "" {
			s.at("auth").item(i).errorf("must be \"user:password\"") // the value is a secret: not echoed
		}
	}
}

// model returns the page's model, nil when the section is absent or not
// enabled. It runs after validate succeeded.
func (sp *statsPageSection) model() *StatsPage {
	if sp == nil || !sp.Enable {
		return nil
	}
	return &StatsPage{URI: *sp.URI, Refresh: (*sp.Refresh).Std(), Auth: sp.Auth, Admin: sp.Admin,
		AdminCond: sp.adminCond, HideVersion: sp.HideVersion}
}

// statsAdminCondition returns the admin condition as the ACL engine reads
// it: "src ADDRESS..." without braces gets them.
func statsAdminCondition(cond string) string {
	f := strings.Fields(cond)
	if len(f) > 1 && f[0] == "src" {
		return "{ " + cond + " }"
	}
	return cond
}
