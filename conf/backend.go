package conf

import (
	"github.com/fulcrum-proxy/fulcrum/proxy/acl"
	"github.com/fulcrum-proxy/fulcrum/proxy/stick"
	"strconv"
	"strings"
	"time"
)

// backendSection is one [[backend]]: a set of servers, how a request chooses
// one of them, and how they are checked.
type backendSection struct {
	// Name of the backend in logs, stats and the Runtime API: letters,
	// digits, "-", "_", "." and ":". Required, unique among backends.
	Name string `toml:"name"`

	// Mode is "http" or "tcp"; it must be the mode of the frontends routing
	// here. Inherited from [defaults]; default "http".
	Mode *Mode `toml:"mode"`

	// Balance is the algorithm choosing a server, with its arguments, as
	// HAProxy writes it: "roundrobin", "static-rr", "leastconn", "first",
	// "source", "uri [len N] [depth N] [whole] [path-only]",
	// "url_param NAME [check_post]", "hdr(NAME) [use_domain_only]",
	// "random", "random(N)", "rdp-cookie", "rdp-cookie(NAME)" or
	// "hash EXPR". Inherited from [defaults]; default "roundrobin".
	Balance *string `toml:"balance"`

	// HashType is how hash-based algorithms map a hash to a server: a method,
	// "map-based" (static, smooth) or "consistent" (a ring: few keys move
	// when servers come and go), optionally followed by a function ("sdbm",
	// "djb2", "wt6", "crc32") and the modifier "avalanche", as HAProxy.
	// Inherited from [defaults]; default "map-based".
	HashType *string `toml:"hash_type"`

	// HashBalanceFactor bounds the load of consistent hashing: no server gets
	// more than this percentage of the average load, e.g. 125 for 1.25 times.
	// 0 turns the bound off; otherwise it must be more than 100.
	// Inherited from [defaults]; default 0.
	HashBalanceFactor *int `toml:"hash_balance_factor"`

	// HashKey is a secret that keys the hashing algorithms (source, uri,
	// url_param, hdr, hash): the key of a request is hashed with SipHash
	// under it instead of HAProxy's public hash functions, so that nobody
	// who knows the server list can compute which URIs, addresses or header
	// values land on a chosen server. hash_type's method (map-based or
	// consistent) still applies, its function and "avalanche" no longer do.
	// Changing it moves most keys, as changing the server list does. 16 to
	// 256 characters when set; keep it out of version control like any
	// secret. Inherited from [global] hash_key; default "" (unkeyed, as
	// HAProxy).
	HashKey *string `toml:"hash_key"`

	// HashPreserveAffinity is what hashing algorithms do when the server of
	// a request's key is at its maxconn, as HAProxy 3.2's
	// hash-preserve-affinity: "always" keeps the key there and the request
	// waits in that server's queue (HAProxy's default and 2.6's only
	// behaviour); "maxconn" goes past a full server to the next one;
	// "maxqueue" goes past it only when its queue also holds maxqueue
	// requests. Inherited from [defaults]; default "always".
	HashPreserveAffinity *string `toml:"hash_preserve_affinity"`

	// PanicThreshold is a percentage: when the share of usable servers falls
	// below it, requests go to all servers, usable or not, instead of piling
	// onto the few left (from Envoy). 0 turns it off; 0..100. Default 0.
	PanicThreshold int `toml:"panic_threshold"`

	// FullConn is the backend load (concurrent connections) at which the
	// servers' dynamic limits reach their maxconn, from minconn at no load.
	// 0 means HAProxy's default: a tenth of the sum of the maxconn of the
	// frontends routing here. Inherited from [defaults]; default 0.
	FullConn *int `toml:"fullconn"`

	// AllBackups sends traffic to all backup servers, not only the first,
	// when no active server is usable. Default false.
	AllBackups bool `toml:"allbackups"`

	// HTTPReuse is the policy for sending requests over idle server
	// connections: "never"; "safe" (a pooled connection serves only requests
	// that are not the first of their client connection); "aggressive"
	// (also the first ones, on connections that already served a reused
	// request); "always" (any idle connection). Inherited from [defaults];
	// default "safe".
	HTTPReuse *string `toml:"http_reuse"`

	// Cookie is cookie-based persistence (cookie = { name = "SRV", ... }).
	Cookie *cookieSection `toml:"cookie"`

	// StickTable is this backend's stick table (stick_table = { ... }).
	StickTable *stickTableSection `toml:"stick_table"`

	// Stick lists HAProxy "stick" rules in HAProxy's syntax: "on src",
	// "match req.cook(SRV)", "store-request src". They need a stick_table.
	Stick []string `toml:"stick"`

	stickRules []*acl.StickRule // compiled by compileRules

	// ACL names conditions for this backend's http_request rules, as the
	// frontend's acl (names are visible in this backend only).
	ACL map[string]aclDefinitions `toml:"acl"`

	// HTTPRequest lists HAProxy "http-request" rules run after the frontend
	// chose this backend, e.g. "set-header X-Backend web". HTTP mode only.
	HTTPRequest []string `toml:"http_request"`

	// HTTPResponse lists HAProxy "http-response" rules run on the
	// responses of this backend's servers, before the frontend's (see the
	// frontend's http_response). HTTP mode only.
	HTTPResponse []string `toml:"http_response"`

	rules *acl.Rules // compiled by compileRules

	// Check configures active health checks ([backend.check]).
	Check *checkSection `toml:"check"`

	// DefaultServer gives defaults to this backend's servers
	// ([backend.default_server]), as HAProxy's "default-server".
	DefaultServer *serverParams `toml:"default_server"`

	// Servers lists the backend's servers ([[backend.server]]).
	Servers []*serverSection `toml:"server"`

	// ServerTemplates lists groups of servers whose addresses come from
	// DNS ([[backend.server_template]]). Servers and templates are
	// numbered together in file order.
	ServerTemplates []*serverTemplateSection `toml:"server_template"`

	// TimeoutConnect is how long a connection to a server may take to
	// establish. Inherited from [defaults]; default "5s".
	TimeoutConnect *Duration `toml:"timeout_connect"`

	// TimeoutServer is how long a server may stay silent while it is expected
	// to answer or to take data. "0s" means never time out. Inherited from
	// [defaults]; default "30s".
	TimeoutServer *Duration `toml:"timeout_server"`

	// TimeoutTunnel, when set, replaces timeout_client and timeout_server
	// once the connection is a tunnel: a mode tcp session once
	// connected, an HTTP/1 connection after a 101 (WebSocket), which ends
	// only after that long without bytes either way (HAProxy's "timeout
	// tunnel"). "0s": unset, the client and server timeouts apply.
	// Inherited from [defaults]; default "0s".
	TimeoutTunnel *Duration `toml:"timeout_tunnel"`

	// TimeoutQueue is how long a request may wait for a free server slot
	// before it gets a 503. "0s" means use timeout_connect, as HAProxy.
	// Inherited from [defaults]; default "0s".
	TimeoutQueue *Duration `toml:"timeout_queue"`

	// TimeoutCheck is how long a health check may wait for its response once
	// connected. "0s" means use the check's inter, as HAProxy. Inherited
	// from [defaults]; default "0s".
	TimeoutCheck *Duration `toml:"timeout_check"`

	// Retries is how many times a failed connection to a server is tried
	// again before the request fails. 0 means no retry. Inherited from
	// [defaults]; default 3.
	Retries *int `toml:"retries"`

	// Redispatch lets the last retry go to another server than the failed
	// one, even a persistent one. Inherited from [defaults]; default false.
	Redispatch *bool `toml:"redispatch"`

	// AbortOnClose drops a request waiting in a queue whose client closed
	// its connection (HAProxy's option abortonclose; logged CQ). Without
	// it the request is served, as HAProxy's default (the client may only
	// have closed its output). Inherited from [defaults]; default false.
	AbortOnClose *bool `toml:"abortonclose"`

	// ForwardFor adds an X-Forwarded-For header with the client's address to
	// each request sent to this backend's servers (HTTP mode). Inherited
	// from [defaults]; default false.
	ForwardFor *bool `toml:"forwardfor"`
}

// httpReuseModes are the values of http_reuse, least reuse first.
var httpReuseModes = []string{"never", "safe", "aggressive", "always"}

// hashAffinities are the values of hash_preserve_affinity.
var hashAffinities = []string{"always", "maxconn", "maxqueue"}

// hashKeyMin and hashKeyMax bound the length of a hash_key, in bytes: 16
// characters at least, so that the secret cannot be guessed by trying
// short ones.
const hashKeyMin, hashKeyMax = 16, 256

// setDefaults gives every unset key of a backend its value from [defaults],
// which must have had its own setDefaults, and its servers theirs from
// [backend.default_server].
func (b *backendSection) setDefaults(d *defaultsSection) {
	inherit(&b.Mode, d.Mode)
	inherit(&b.Balance, d.Balance)
	inherit(&b.HashType, d.HashType)
	inherit(&b.HashBalanceFactor, d.HashBalanceFactor)
	inherit(&b.HashPreserveAffinity, d.HashPreserveAffinity)
	orDefault(&b.HashKey, "") // after [global]'s, inherited by the file
	inherit(&b.FullConn, d.FullConn)
	inherit(&b.HTTPReuse, d.HTTPReuse)
	inherit(&b.TimeoutConnect, d.TimeoutConnect)
	inherit(&b.TimeoutServer, d.TimeoutServer)
	inherit(&b.TimeoutTunnel, d.TimeoutTunnel)
	inherit(&b.TimeoutQueue, d.TimeoutQueue)
	inherit(&b.TimeoutCheck, d.TimeoutCheck)
	inherit(&b.Retries, d.Retries)
	inherit(&b.Redispatch, d.Redispatch)
	inherit(&b.AbortOnClose, d.AbortOnClose)
	inherit(&b.ForwardFor, d.ForwardFor)
	if b.Cookie != nil {
		b.Cookie.setDefaults()
	}
	if b.Check != nil {
		b.Check.setDefaults()
	}
	if b.DefaultServer == nil {
		b.DefaultServer = &serverParams{}
	}
	b.DefaultServer.setDefaults()
	for _, srv := range b.Servers {
		srv.setDefaults(b.DefaultServer)
	}
	for _, st := range b.ServerTemplates {
		st.serverParams.inherit(b.DefaultServer)
	}
}

// validate checks the values set in one [[backend]] and its tables. Server
// names are checked for duplicates here; the link to frontends is checked by
// fileSection.
func (b *backendSection) validate(s scope) {
	checkName(s.at("name"), b.Name)
	oneOf(s.at("mode"), b.Mode, ModeHTTP, ModeTCP)
	checkBalance(s.at("balance"), b.Balance)
	checkHashType(s.at("hash_type"), b.HashType)
	checkHashBalanceFactor(s.at("hash_balance_factor"), b.HashBalanceFactor)
	checkHashKey(s.at("hash_key"), b.HashKey)
	oneOf(s.at("hash_preserve_affinity"), b.HashPreserveAffinity, hashAffinities...)
	inRange(s.at("panic_threshold"), &b.PanicThreshold, 0, 100)
	nonNegative(s.at("fullconn"), b.FullConn)
	oneOf(s.at("http_reuse"), b.HTTPReuse, httpReuseModes...)
	nonNegative(s.at("retries"), b.Retries)
	if b.Cookie != nil {
		b.Cookie.validate(s.at("cookie"))
	}
	if b.StickTable != nil {
		b.StickTable.validate(s.at("stick_table"))
	}
	for i, r := range b.Stick {
		if strings.TrimSpace(r) == "" {
			s.at("stick").item(i).errorf("empty rule")
		}
	}
	validateACLs(s.at("acl"), b.ACL)
	for i, r := range b.HTTPRequest {
		if strings.TrimSpace(r) == "" {
			s.at("http_request").item(i).errorf("empty rule")
		}
	}
	for i, r := range b.HTTPResponse {
		if strings.TrimSpace(r) == "" {
			s.at("http_response").item(i).errorf("empty rule")
		}
	}
	if b.Check != nil {
		b.Check.validate(s.at("check"))
	}
	if b.DefaultServer != nil {
		b.DefaultServer.validate(s.at("default_server"))
	}
	seen := map[string]int{}
	for i, srv := range b.Servers {
		item := s.at("server").item(i)
		srv.validate(item)
		if first, dup := seen[srv.Name]; dup && srv.Name != "" {
			item.at("name").errorf("duplicate server name, first defined at line %d", first)
		} else {
			seen[srv.Name] = item.at("name").line()
		}
	}
	for i, st := range b.ServerTemplates {
		item := s.at("server_template").item(i)
		st.validate(item)
		for _, name := range st.names() {
			if first, dup := seen[name]; dup && st.Prefix != "" {
				item.at("prefix").errorf("server %q duplicates a server name, first defined at line %d", name, first)
				break
			}
			seen[name] = item.at("prefix").line()
		}
	}
}

// checkHashType checks a hash_type: a method, then optionally a function and
// the modifier "avalanche".
func checkHashType(s scope, v *string) {
	if v == nil {
		return
	}
	words := strings.Fields(*v)
	ok := len(words) >= 1 && len(words) <= 3 && (words[0] == "map-based" || words[0] == "consistent")
	if ok && len(words) >= 2 {
		switch words[1] {
		case "sdbm", "djb2", "wt6", "crc32":
		default:
			ok = false
		}
	}
	if ok && len(words) == 3 && words[2] != "avalanche" {
		ok = false
	}
	if !ok {
		s.errorf(`must be "map-based" or "consistent", optionally followed by sdbm, djb2, wt6 or crc32 and then "avalanche", got %q`, *v)
	}
}

// checkHashKey checks a hash_key: 16 to 256 characters. The message never
// quotes the value: it is a secret, and errors end up in logs.
func checkHashKey(s scope, v *string) {
	switch {
	case v == nil:
	case *v == "":
		s.errorf("must not be empty (leave hash_key out for unkeyed hashing)")
	case len(*v) < hashKeyMin:
		s.errorf("must be at least %d characters, got %d", hashKeyMin, len(*v))
	case len(*v) > hashKeyMax:
		s.errorf("must be at most %d characters, got %d", hashKeyMax, len(*v))
	}
}

// checkHashBalanceFactor checks hash_balance_factor: 0, or more than 100.
func checkHashBalanceFactor(s scope, v *int) {
	if v != nil && *v != 0 && *v <= 100 {
		s.errorf("must be 0 (off) or more than 100, got %d", *v)
	}
}

// cookieSection is a backend's cookie: persistence by a cookie naming the
// server, as HAProxy's "cookie" keyword. The servers' own cookie keys give
// the values.
type cookieSection struct {
	// Name of the cookie, e.g. "SRV". Required.
	Name string `toml:"name"`

	// Mode is how the cookie is handled: "insert" (fulcrum sets it in
	// responses), "rewrite" (the server sets it and fulcrum rewrites its
	// value), "prefix" (fulcrum prefixes the server's own cookie), or ""
	// (passive: the cookie is only read). Default "".
	Mode *string `toml:"mode"`

	// Indirect keeps the cookie away from the server when fulcrum handles
	// it, and sets it only on clients that do not already send the right
	// one. Default false.
	Indirect bool `toml:"indirect"`

	// NoCache marks responses that set the cookie as not cacheable, so that
	// a shared cache does not hand one client's cookie to others.
	// Default false.
	NoCache bool `toml:"nocache"`

	// HTTPOnly adds the HttpOnly attribute to an inserted cookie.
	// Default false.
	HTTPOnly bool `toml:"httponly"`

	// Secure adds the Secure attribute to an inserted cookie. Default false.
	Secure bool `toml:"secure"`

	// MaxIdle ignores an inserted cookie that was last refreshed longer ago
	// than this; fulcrum refreshes it when it passes. Insert mode only.
	// "0s" means no limit. Default "0s".
	MaxIdle Duration `toml:"maxidle"`

	// MaxLife ignores an inserted cookie first emitted longer ago than this.
	// Insert mode only. "0s" means no limit. Default "0s".
	MaxLife Duration `toml:"maxlife"`
}

// setDefaults gives every unset key of a backend's cookie its default.
func (ck *cookieSection) setDefaults() {
	orDefault(&ck.Mode, "")
}

// model returns the cookie as the proxy uses it (nil when absent).
func (ck *cookieSection) model() *Cookie {
	if ck == nil {
		return nil
	}
	return &Cookie{Name: ck.Name, Mode: *ck.Mode, Indirect: ck.Indirect, NoCache: ck.NoCache,
		HTTPOnly: ck.HTTPOnly, Secure: ck.Secure, MaxIdle: ck.MaxIdle.Std(), MaxLife: ck.MaxLife.Std()}
}

// validate checks the values set in a backend's cookie.
func (ck *cookieSection) validate(s scope) {
	required(s.at("name"), ck.Name)
	oneOf(s.at("mode"), ck.Mode, "insert", "rewrite", "prefix", "")
	if ck.Mode != nil && *ck.Mode != "insert" {
		if ck.MaxIdle > 0 {
			s.at("maxidle").errorf("needs mode \"insert\"")
		}
		if ck.MaxLife > 0 {
			s.at("maxlife").errorf("needs mode \"insert\"")
		}
	}
}

// stickTableSection is a backend's stick_table: entries keyed by a sample
// (the client address, a header...) that remember a server and counters, as
// HAProxy's "stick-table".
type stickTableSection struct {
	// Type of the key: "ip" (IPv4), "ipv6", "integer", "string" or
	// "binary". Required.
	Type string `toml:"type"`

	// Len is the key length of "string" and "binary" tables, in bytes:
	// longer keys are cut. 0 means 32, as HAProxy. Default 0.
	Len int `toml:"len"`

	// Size is the most entries the table holds; when it is full, the least
	// recently used entries that no session holds go first. Required, more
	// than 0.
	Size int `toml:"size"`

	// Expire removes an entry this long after its last use: every use
	// re-arms it. "0s" means entries leave only when the table is full.
	// Default "0s".
	Expire Duration `toml:"expire"`

	// Store lists the data kept in each entry, as HAProxy names them:
	// "server_id", "conn_cur", "conn_cnt", "conn_rate(10s)",
	// "http_req_rate(10s)", "gpc0"...
	Store []string `toml:"store"`

	// Peers names the [[peers]] section the table is shared through: its
	// entries are sent to the other members and theirs learned, as
	// HAProxy's `peers` keyword. Tables pair up across members by name.
	// conn_cur is never learned. "" means not shared. Default "".
	Peers string `toml:"peers"`

	// PeersAggregate adds up the counters and rates of the fulcrum
	// members (fulcrum's own, never sent to HAProxy): each member sends
	// its own counts, and a member reads the sum, so that
	// `http_req_rate(10s) gt 100` holds across the cluster. Needs peers.
	// HAProxy members get the sums and their counts are not added. See
	// README "Cluster-wide counters". Default false.
	PeersAggregate bool `toml:"peers_aggregate"`
}

// validate checks the values set in a backend's stick_table.
func (st *stickTableSection) validate(s scope) {
	if required(s.at("type"), st.Type) {
		oneOf(s.at("type"), &st.Type, "ip", "ipv6", "integer", "string", "binary")
	}
	atLeast(s.at("size"), &st.Size, 1)
	nonNegative(s.at("len"), &st.Len)
	if st.Len > 0 && st.Type != "string" && st.Type != "binary" {
		s.at("len").errorf("only for type \"string\" or \"binary\"")
	}
	for i, d := range st.Store {
		if strings.TrimSpace(d) == "" {
			s.at("store").item(i).errorf("empty data type")
		} else if _, err := stick.ParseStore([]string{d}); err != nil {
			s.at("store").item(i).errorf("%v", err)
		}
	}
	if st.PeersAggregate && st.Peers == "" {
		s.at("peers_aggregate").errorf("needs peers (the [[peers]] section to add up with)")
	}
}

// model returns the table as the proxy builds it, named name.
func (st *stickTableSection) model(name string, line int) *StickTable {
	if st == nil {
		return nil
	}
	store, _ := stick.ParseStore(st.Store)
	return &StickTable{Name: name, Line: line, Type: st.Type, Len: st.Len, Size: st.Size,
		Expire: st.Expire.Std(), Store: store, Peers: st.Peers, PeersAggregate: st.PeersAggregate}
}

// tableSection is a top-level [[table]]: a stick table of its own, which
// track-sc rules and stick rules name with "table NAME", as HAProxy's
// "backend NAME" holding only a stick-table.
type tableSection struct {
	// Name of the table in rules and the Runtime API. Required, unique
	// among tables (a frontend's or backend's table has its section's name).
	Name string `toml:"name"`

	// Type of the key: "ip", "ipv6", "integer", "string" or "binary".
	// Required.
	Type string `toml:"type"`

	// Len is the key length of "string" and "binary" tables. 0 means 32.
	// Default 0.
	Len int `toml:"len"`

	// Size is the most entries the table holds. Required, more than 0.
	Size int `toml:"size"`

	// Expire removes an entry this long after its last use. "0s" means
	// never. Default "0s".
	Expire Duration `toml:"expire"`

	// Store lists the data kept in each entry, as stick_table's store.
	Store []string `toml:"store"`

	// Peers names the [[peers]] section the table is shared through, as
	// stick_table's peers. Default "".
	Peers string `toml:"peers"`

	// PeersAggregate adds up counters across the fulcrum members, as
	// stick_table's peers_aggregate. Default false.
	PeersAggregate bool `toml:"peers_aggregate"`
}

// stick returns the table's settings as a stick_table.
func (t *tableSection) stick() *stickTableSection {
	return &stickTableSection{Type: t.Type, Len: t.Len, Size: t.Size, Expire: t.Expire, Store: t.Store,
		Peers: t.Peers, PeersAggregate: t.PeersAggregate}
}

// validate checks a [[table]].
func (t *tableSection) validate(s scope) {
	name := t.Name
	if section, rest, ok := strings.Cut(t.Name, "/"); ok {
		// HAProxy's name of a table declared in a peers section,
		// "<peers>/<table>": shared through that section, and known to
		// the peers as <table>.
		if t.Peers != section && t.Peers != "" {
			// (no peers: a table of a peers section HAProxy removed,
			// kept unshared as HAProxy keeps it)
			s.at("name").errorf(`a name "<peers>/<table>" (HAProxy's table declared in a peers section) needs peers = %q or none, got %q`, section, t.Peers)
			return
		}
		checkName(s.at("name"), section)
		name = rest
	}
	checkName(s.at("name"), name)
	t.stick().validate(s)
}

// checkSection is [backend.check]: active health checks of the servers that
// set check = true.
type checkSection struct {
	// Type is what a check does: "tcp" (connect, as HAProxy's default check)
	// or "http" (send a request and look at the status). Default "tcp".
	Type *string `toml:"type"`

	// CheckProto "grpc" makes the checks gRPC health checks: the standard
	// grpc.health.v1.Health/Check call over HTTP/2 (h2c), for the whole
	// server (an empty service name); a server answering SERVING passes,
	// any other answer or a grpc-status other than 0 fails (L7STS).
	// Overrides type. Default "": as type says.
	CheckProto *string `toml:"check_proto"`

	// Path is the request path of "http" checks. Default "/".
	Path *string `toml:"path"`

	// Method is the request method of "http" checks. Default "GET" (HAProxy's
	// `option httpchk` sends OPTIONS, which many health endpoints refuse).
	Method *string `toml:"method"`

	// Host is the Host header of "http" checks; when set the check is sent
	// as HTTP/1.1, else as HTTP/1.0 without Host, as HAProxy. Default "".
	Host *string `toml:"host"`

	// ExpectStatus is the status codes that pass an "http" check: one code
	// ("200"), a range ("200-399") or a comma-separated list of both
	// ("200,204,300-399"). Default "200-399".
	ExpectStatus *string `toml:"expect_status"`

	// Inter is the time between two checks of a server that is up.
	// Default "2s".
	Inter *Duration `toml:"inter"`

	// FastInter is the time between two checks of a server that is going up
	// or going down. Not set means inter (so default "2s").
	FastInter *Duration `toml:"fastinter"`

	// DownInter is the time between two checks of a server that is down.
	// Not set means inter (so default "2s").
	DownInter *Duration `toml:"downinter"`

	// Rise is how many checks in a row must pass for a down server to be
	// marked up. Default 2, at least 1.
	Rise *int `toml:"rise"`

	// Fall is how many checks in a row must fail for an up server to be
	// marked down. Default 3, at least 1.
	Fall *int `toml:"fall"`
}

// setDefaults gives every unset key of [backend.check] its default; fastinter
// and downinter follow inter, as in HAProxy.
func (ch *checkSection) setDefaults() {
	orDefault(&ch.Type, "tcp")
	orDefault(&ch.CheckProto, "")
	orDefault(&ch.Path, "/")
	orDefault(&ch.Method, "GET")
	orDefault(&ch.Host, "")
	orDefault(&ch.ExpectStatus, "200-399")
	orDefault(&ch.Inter, Duration(2*time.Second))
	orDefault(&ch.FastInter, *ch.Inter)
	orDefault(&ch.DownInter, *ch.Inter)
	orDefault(&ch.Rise, 2)
	orDefault(&ch.Fall, 3)
}

// validate checks the values set in [backend.check].
func (ch *checkSection) validate(s scope) {
	oneOf(s.at("type"), ch.Type, "tcp", "http")
	oneOf(s.at("check_proto"), ch.CheckProto, "", "grpc")
	if ch.Path != nil && !strings.HasPrefix(*ch.Path, "/") {
		s.at("path").errorf("must start with \"/\", got %q", *ch.Path)
	}
	if ch.Method != nil && !isToken(*ch.Method) {
		s.at("method").errorf("must be an HTTP method such as \"GET\", got %q", *ch.Method)
	}
	if ch.ExpectStatus != nil && !validStatusList(*ch.ExpectStatus) {
		s.at("expect_status").errorf("must be a status code, a range such as \"200-399\" or a comma-separated list of them, got %q", *ch.ExpectStatus)
	}
	positive(s.at("inter"), ch.Inter)
	positive(s.at("fastinter"), ch.FastInter)
	positive(s.at("downinter"), ch.DownInter)
	atLeast(s.at("rise"), ch.Rise, 1)
	atLeast(s.at("fall"), ch.Fall, 1)
}

// validStatusList reports whether v is a comma-separated list of status
// codes and ranges (validStatusRange).
func validStatusList(v string) bool {
	for _, item := range strings.Split(v, ",") {
		if !validStatusRange(strings.TrimSpace(item)) {
			return false
		}
	}
	return true
}

// isToken reports whether v is a non-empty HTTP token (RFC 9110 section
// 5.6.2), as a method must be.
func isToken(v string) bool {
	if v == "" {
		return false
	}
	for _, r := range v {
		if r > 0x7e || r <= ' ' || strings.ContainsRune("\"(),/:;<=>?@[\\]{}", r) {
			return false
		}
	}
	return true
}

// validStatusRange reports whether v is "NNN" or "NNN-NNN" with codes in
// 100..599 and the range in order.
func validStatusRange(v string) bool {
	lo, hi, isRange := strings.Cut(v, "-")
	if !isRange {
		hi = lo
	}
	a, err1 := strconv.Atoi(lo)
	b, err2 := strconv.Atoi(hi)
	return err1 == nil && err2 == nil && isDigits(lo) && isDigits(hi) &&
		a >= 100 && b <= 599 && a <= b
}

// checkModel returns the backend's checks for the model: [backend.check]
// with its defaults, or the defaults alone when the table is absent (a
// server with check = true is then checked by TCP connect every 2s).
func (b *backendSection) checkModel() *Check {
	ch := b.Check
	if ch == nil {
		ch = &checkSection{}
		ch.setDefaults()
	}
	return &Check{
		Type: *ch.Type, Proto: *ch.CheckProto, Path: *ch.Path, Method: *ch.Method, Host: *ch.Host,
		ExpectStatus: *ch.ExpectStatus,
		Inter:        ch.Inter.Std(), FastInter: ch.FastInter.Std(), DownInter: ch.DownInter.Std(),
		Rise: *ch.Rise, Fall: *ch.Fall,
	}
}
