package conf

import "time"

// serverParams is [backend.default_server], and the part of a
// [[backend.server]] that default_server gives defaults to, as HAProxy's
// "default-server" line. A server takes each key it does not set from its
// backend's default_server, and default_server from the defaults below.
type serverParams struct {
	// Weight is the server's share of the traffic relative to the other
	// servers of its backend: 0..256, where 0 means no new traffic (the
	// server still serves persistent clients). Default 1, as HAProxy.
	Weight *int `toml:"weight"`

	// MaxConn is the most concurrent connections sent to the server; more
	// requests wait in its queue. 0 means no limit. Default 0.
	MaxConn *int `toml:"maxconn"`

	// MaxQueue is the most requests waiting in the server's queue; past it,
	// requests go to the backend's queue, or elsewhere. 0 means no limit.
	// Default 0.
	MaxQueue *int `toml:"maxqueue"`

	// MinConn makes the limit dynamic: it grows from minconn at no load to
	// maxconn when the backend reaches fullconn. 0 means a fixed maxconn.
	// Default 0.
	MinConn *int `toml:"minconn"`

	// Check turns on the backend's health checks for this server. A server
	// without checks is always considered up. Default false.
	Check *bool `toml:"check"`

	// Inter is this server's own interval between two health checks while
	// it is up, as HAProxy's server keyword: it replaces the backend's
	// [backend.check] inter, and is this server's fastinter and downinter
	// unless they are set too. "0s" means the backend's. Default "0s".
	Inter *Duration `toml:"inter"`

	// FastInter is this server's own interval between two health checks
	// while its health is changing, as HAProxy's server keyword. "0s"
	// means its inter if set, else the backend's fastinter. Default "0s".
	FastInter *Duration `toml:"fastinter"`

	// DownInter is this server's own interval between two health checks
	// while it is down, as HAProxy's server keyword. "0s" means its inter
	// if set, else the backend's downinter. Default "0s".
	DownInter *Duration `toml:"downinter"`

	// Rise is this server's own count of consecutive passing checks that
	// bring it up, as HAProxy's server keyword. 0 means the backend's
	// [backend.check] rise. Default 0.
	Rise *int `toml:"rise"`

	// Fall is this server's own count of consecutive failing checks that
	// take it down, as HAProxy's server keyword. 0 means the backend's
	// [backend.check] fall. Default 0.
	Fall *int `toml:"fall"`

	// Backup makes the server a backup: it gets traffic only when no active
	// server of the backend is usable. Default false.
	Backup *bool `toml:"backup"`

	// Slowstart ramps the weight of a server that comes back up from 0 to
	// its full value over this time. "0s" means at once. Default "0s".
	Slowstart *Duration `toml:"slowstart"`

	// Disabled starts the server in maintenance (MAINT): no traffic until
	// the Runtime API enables it. Default false.
	Disabled *bool `toml:"disabled"`

	// Agent asks an agent on the server for its state and weight, as
	// HAProxy's agent-check (agent = { port = 9999, ... }).
	Agent *agentSection `toml:"agent"`

	// Observe judges the server by live traffic as well as by checks:
	// "layer4" (connection errors) or "layer7" (also bad HTTP responses).
	// Empty means off. Default "".
	Observe *string `toml:"observe"`

	// ErrorLimit is how many errors in a row, seen by observe, trigger
	// on_error. Default 10, as HAProxy.
	ErrorLimit *int `toml:"error_limit"`

	// OnError is what error_limit errors in a row do: "fastinter" (check
	// more often), "fail-check" (count as a failed check), "sudden-death"
	// (one more failed check marks the server down) or "mark-down" (mark it
	// down at once). Default "fail-check", as HAProxy.
	OnError *string `toml:"on_error"`

	// PoolMaxConn is the most idle connections to the server kept for
	// reuse (HAProxy's pool-max-conn): -1 means no limit, 0 keeps none.
	// Default -1.
	PoolMaxConn *int `toml:"pool_max_conn"`

	// PoolLowConn is how many idle connections a purge always leaves to
	// the server (HAProxy's pool-low-conn, which with fulcrum's one pool
	// per server only bounds the purge). Default 0.
	PoolLowConn *int `toml:"pool_low_conn"`

	// PoolPurgeDelay is how often idle connections to the server are
	// purged (HAProxy's pool-purge-delay): each time, half of those not
	// used since the previous purge are closed. A connection the server
	// closes is released within a quarter of a second whatever this says.
	// "0s" means never purged. Default "5s".
	PoolPurgeDelay *Duration `toml:"pool_purge_delay"`

	// SSL makes connections to the server TLS (HAProxy's ssl). The
	// server's certificate is verified as verify says. Health checks go
	// over TLS too. Default false.
	SSL *bool `toml:"ssl"`

	// Verify is "required" (the server's certificate must chain to
	// ca_file, or to the system's roots without one, and its names must
	// match the SNI sent, else verifyhost when set) or "none" (anything
	// is accepted, as HAProxy's verify none). A failed verification fails
	// the connection: a connect error, retried as one. Default
	// "required", as HAProxy without ssl-server-verify.
	Verify *string `toml:"verify"`

	// CAFile is a PEM file of the CAs that sign the server's certificate
	// (HAProxy's ca-file); "" or "@system-ca" means the system's roots.
	// Relative to the configuration's directory. Default "".
	CAFile *string `toml:"ca_file"`

	// SNI is a sample fetch expression whose value is sent as the TLS
	// server name (HAProxy's sni), evaluated for each new connection:
	// "req.hdr(host)" in http mode, "ssl_fc_sni" to pass on the client's.
	// Idle connections are reused only by requests with the same value.
	// "" sends none. Default "".
	SNI *string `toml:"sni"`

	// VerifyHost is the name the server's certificate must carry when no
	// SNI is sent (HAProxy's verifyhost); "" checks no name then. Default
	// "".
	VerifyHost *string `toml:"verifyhost"`

	// ALPN is the protocols offered to the server, comma-separated as
	// HAProxy writes them ("h2,http/1.1"). With ssl in http mode and no
	// proto, a list with "h2" makes each connection speak what the
	// handshake selected, as HAProxy 2.6 does: HTTP/2 for h2, HTTP/1.1
	// for http/1.1 or none. With proto = "h2" it must list "h2". ""
	// offers none, or "h2" for a proto = "h2" server. Default "".
	ALPN *string `toml:"alpn"`

	// Crt is a PEM file holding the client certificate fulcrum presents
	// to the server, with its chain and its key (HAProxy's crt). ""
	// presents none. Default "".
	Crt *string `toml:"crt"`

	// CheckSSL makes health checks go over TLS even when traffic does not
	// (HAProxy's check-ssl), with the server's TLS settings and no SNI. A
	// tcp check then passes when the handshake does (L6OK). Default false
	// (checks use TLS when ssl is true).
	CheckSSL *bool `toml:"check_ssl"`

	// SendProxy sends a PROXY protocol version 1 line in front of every
	// connection to the server, with the client's addresses (HAProxy's
	// send-proxy). Server connections then serve one client connection
	// only. Default false.
	SendProxy *bool `toml:"send_proxy"`

	// SendProxyV2 sends a PROXY protocol version 2 header instead
	// (HAProxy's send-proxy-v2), with the ALPN the client negotiated and
	// the TLVs proxy_v2_options asks for. Default false.
	SendProxyV2 *bool `toml:"send_proxy_v2"`

	// ProxyV2Options are the TLVs added to the version 2 header, HAProxy's
	// names: "ssl" (the client's TLS: version, and with "cert-cn" the
	// client certificate's CN, "ssl-cipher", "cert-sig" and "cert-key" of
	// the certificate served), "authority" (the client's SNI), "crc32c"
	// (a checksum), "unique-id" (the request's unique id, empty without
	// one). Needs send_proxy_v2. None by default.
	ProxyV2Options []string `toml:"proxy_v2_options"`

	// CheckSendProxy sends a PROXY header in front of health checks
	// (HAProxy's check-send-proxy): a LOCAL one, since a check has no
	// client. Checks send one anyway when send_proxy or send_proxy_v2 is
	// set. Default false.
	CheckSendProxy *bool `toml:"check_send_proxy"`

	// Resolvers names the [[resolvers]] that resolve the server's host name
	// at runtime: its address follows the DNS answers (new connections go
	// to the new address, those in flight finish on the old one). "" means
	// the name is resolved when connecting, by the system. Default "".
	Resolvers *string `toml:"resolvers"`

	// ResolvePrefer is the address family a resolved server prefers when
	// the name has both: "ipv4" or "ipv6". Default "ipv6", as HAProxy.
	ResolvePrefer *string `toml:"resolve_prefer"`

	// InitAddr is how a resolved server gets its address at start, the
	// methods tried in order, separated by commas: "last" (the address in
	// the state_file), "libc" (the system's resolver), "none" (start in
	// MAINT (resolution) until DNS answers) or an IP address. "" means
	// HAProxy's default, "last,libc", followed by "none" with resolvers.
	// Default "".
	InitAddr *string `toml:"init_addr"`

	// ResolveOpts are HAProxy's resolve-opts, separated by commas:
	// "allow-dup-ip" (servers resolving the same name may share an
	// address), "prevent-dup-ip" (they may not; the default) and
	// "ignore-weight" (SRV weights do not change the server's weight).
	// Default "".
	ResolveOpts *string `toml:"resolve_opts"`
	// Proto is the protocol spoken to the server: "" for HTTP/1.1 (or,
	// with ssl, what ALPN selected when alpn offers h2), or
	// "h2" for HTTP/2, as HAProxy's server option "proto h2": requests
	// of any client share few connections to the server, multiplexed as
	// streams (gRPC servers need it). In clear it is HTTP/2 with prior
	// knowledge (h2c); with ssl = true the TLS handshake offers ALPN h2
	// (alpn, when set, must list h2), and a server that selects another
	// protocol fails the connection (HAProxy 2.6 forces the h2 mux
	// whatever ALPN chose; fulcrum refuses the connection instead of
	// sending HTTP/2 where HTTP/1.1 was agreed). Default "".
	Proto *string `toml:"proto"`
}

// setDefaults gives every unset key of a [backend.default_server] its
// built-in default.
func (sp *serverParams) setDefaults() {
	orDefault(&sp.Weight, 1)
	orDefault(&sp.MaxConn, 0)
	orDefault(&sp.MaxQueue, 0)
	orDefault(&sp.MinConn, 0)
	orDefault(&sp.Check, false)
	orDefault(&sp.Inter, 0)
	orDefault(&sp.FastInter, 0)
	orDefault(&sp.DownInter, 0)
	orDefault(&sp.Rise, 0)
	orDefault(&sp.Fall, 0)
	orDefault(&sp.Backup, false)
	orDefault(&sp.Slowstart, 0)
	orDefault(&sp.Disabled, false)
	if sp.Agent != nil {
		sp.Agent.setDefaults()
	}
	orDefault(&sp.Observe, "")
	orDefault(&sp.ErrorLimit, 10)
	orDefault(&sp.OnError, "fail-check")
	orDefault(&sp.PoolMaxConn, -1)
	orDefault(&sp.PoolLowConn, 0)
	orDefault(&sp.PoolPurgeDelay, Duration(5*time.Second))
	orDefault(&sp.SSL, false)
	orDefault(&sp.Verify, "required")
	orDefault(&sp.CAFile, "")
	orDefault(&sp.SNI, "")
	orDefault(&sp.VerifyHost, "")
	orDefault(&sp.ALPN, "")
	orDefault(&sp.Crt, "")
	orDefault(&sp.CheckSSL, false)
	orDefault(&sp.SendProxy, false)
	orDefault(&sp.SendProxyV2, false)
	orDefault(&sp.CheckSendProxy, false)
	orDefault(&sp.Resolvers, "")
	orDefault(&sp.ResolvePrefer, "ipv6")
	orDefault(&sp.InitAddr, "")
	orDefault(&sp.ResolveOpts, "")
	orDefault(&sp.Proto, "")
}

// validate checks the values set in a [backend.default_server] or in the
// same keys of a [[backend.server]].
func (sp *serverParams) validate(s scope) {
	inRange(s.at("weight"), sp.Weight, 0, 256)
	nonNegative(s.at("maxconn"), sp.MaxConn)
	nonNegative(s.at("maxqueue"), sp.MaxQueue)
	nonNegative(s.at("minconn"), sp.MinConn)
	nonNegative(s.at("rise"), sp.Rise)
	nonNegative(s.at("fall"), sp.Fall)
	if sp.Agent != nil {
		sp.Agent.validate(s.at("agent"))
	}
	oneOf(s.at("observe"), sp.Observe, "layer4", "layer7", "")
	atLeast(s.at("error_limit"), sp.ErrorLimit, 1)
	oneOf(s.at("on_error"), sp.OnError, "fastinter", "fail-check", "sudden-death", "mark-down")
	atLeast(s.at("pool_max_conn"), sp.PoolMaxConn, -1)
	nonNegative(s.at("pool_low_conn"), sp.PoolLowConn)
	oneOf(s.at("verify"), sp.Verify, "required", "none")
	oneOf(s.at("proto"), sp.Proto, "", "h2")
	if sp.PoolPurgeDelay != nil && *sp.PoolPurgeDelay < 0 {
		s.at("pool_purge_delay").errorf("must not be negative, got %q", sp.PoolPurgeDelay.String())
	}
	oneOf(s.at("resolve_prefer"), sp.ResolvePrefer, "ipv4", "ipv6")
	checkInitAddr(s.at("init_addr"), sp.InitAddr)
	checkResolveOpts(s.at("resolve_opts"), sp.ResolveOpts)
}

// serverSection is one [[backend.server]]: a server of the backend.
type serverSection struct {
	// Name of the server in logs, stats and the Runtime API
	// ("backend/server"): letters, digits, "-", "_", "." and ":". Required,
	// unique in its backend.
	Name string `toml:"name"`

	// Address is where the server listens, "host:port". A host name is
	// resolved by the system when connecting, or at runtime by the
	// server's resolvers. Required.
	Address string `toml:"address"`

	// Cookie is this server's value of the backend's persistence cookie.
	// Empty means the server's name. Default "".
	Cookie string `toml:"cookie"`

	// The keys that [backend.default_server] gives defaults to.
	serverParams

	tls *ServerTLS // loaded by checkTLS, nil without ssl and check_ssl
}

// setDefaults gives every unset key of a server its value from the
// backend's default_server, which must have had its own setDefaults.
func (srv *serverSection) setDefaults(ds *serverParams) {
	srv.serverParams.inherit(ds)
}

// inherit gives every unset key of sp its value from ds, a
// default_server that had its own setDefaults.
func (sp *serverParams) inherit(ds *serverParams) {
	inherit(&sp.Weight, ds.Weight)
	inherit(&sp.MaxConn, ds.MaxConn)
	inherit(&sp.MaxQueue, ds.MaxQueue)
	inherit(&sp.MinConn, ds.MinConn)
	inherit(&sp.Check, ds.Check)
	inherit(&sp.Inter, ds.Inter)
	inherit(&sp.FastInter, ds.FastInter)
	inherit(&sp.DownInter, ds.DownInter)
	inherit(&sp.Rise, ds.Rise)
	inherit(&sp.Fall, ds.Fall)
	inherit(&sp.Backup, ds.Backup)
	inherit(&sp.Slowstart, ds.Slowstart)
	inherit(&sp.Disabled, ds.Disabled)
	if sp.Agent == nil && ds.Agent != nil {
		a := *ds.Agent
		sp.Agent = &a
	}
	if sp.Agent != nil {
		sp.Agent.setDefaults()
	}
	inherit(&sp.Observe, ds.Observe)
	inherit(&sp.ErrorLimit, ds.ErrorLimit)
	inherit(&sp.OnError, ds.OnError)
	inherit(&sp.PoolMaxConn, ds.PoolMaxConn)
	inherit(&sp.PoolLowConn, ds.PoolLowConn)
	inherit(&sp.PoolPurgeDelay, ds.PoolPurgeDelay)
	inherit(&sp.SSL, ds.SSL)
	inherit(&sp.Verify, ds.Verify)
	inherit(&sp.CAFile, ds.CAFile)
	inherit(&sp.SNI, ds.SNI)
	inherit(&sp.VerifyHost, ds.VerifyHost)
	inherit(&sp.ALPN, ds.ALPN)
	inherit(&sp.Crt, ds.Crt)
	inherit(&sp.CheckSSL, ds.CheckSSL)
	inherit(&sp.SendProxy, ds.SendProxy)
	inherit(&sp.SendProxyV2, ds.SendProxyV2)
	if sp.ProxyV2Options == nil {
		sp.ProxyV2Options = ds.ProxyV2Options
	}
	inherit(&sp.CheckSendProxy, ds.CheckSendProxy)
	inherit(&sp.Resolvers, ds.Resolvers)
	inherit(&sp.ResolvePrefer, ds.ResolvePrefer)
	inherit(&sp.InitAddr, ds.InitAddr)
	inherit(&sp.ResolveOpts, ds.ResolveOpts)
	inherit(&sp.Proto, ds.Proto)
}

// validate checks the values set in one [[backend.server]].
func (srv *serverSection) validate(s scope) {
	checkName(s.at("name"), srv.Name)
	if required(s.at("address"), srv.Address) {
		checkHostPort(s.at("address"), srv.Address, false)
		if host, _ := serverHostPort(srv.Address); isSRVName(host) {
			s.at("address").errorf("an SRV name needs a [[backend.server_template]], got %q", srv.Address)
		}
	}
	srv.serverParams.validate(s)
}

// agentSection is a server's agent: HAProxy's agent-check, a TCP
// connection to a small agent that answers with the server's state and
// weight ("up", "drain", "75%"...).
type agentSection struct {
	// Port of the agent. Required, 1..65535.
	Port int `toml:"port"`

	// Addr is the agent's host (IP or name) when it is not the server's.
	// Default "": the server's host.
	Addr string `toml:"addr"`

	// Inter is the time between two agent checks; also the agent check's
	// timeout when the backend has no timeout_check. Default "2s".
	Inter *Duration `toml:"inter"`

	// Send is a string sent to the agent once connected, e.g. "ping\n",
	// byte for byte. Default "": nothing is sent.
	Send string `toml:"send"`
}

// setDefaults gives every unset key of an agent its default.
func (a *agentSection) setDefaults() {
	orDefault(&a.Inter, Duration(2*time.Second))
}

// validate checks the values set in an agent.
func (a *agentSection) validate(s scope) {
	inRange(s.at("port"), &a.Port, 1, 65535)
	positive(s.at("inter"), a.Inter)
}

// model returns the agent for the model, nil when there is none.
func (a *agentSection) model() *Agent {
	if a == nil {
		return nil
	}
	return &Agent{Addr: a.Addr, Port: a.Port, Inter: a.Inter.Std(), Send: a.Send}
}

// server returns a server of the model named name with the parameters of
// sp, which had its defaults: Address, Cookie and the DNS keys are the
// caller's (resolution).
func (sp *serverParams) server(name string, line int) *Server {
	return &Server{
		Name:      name,
		Line:      line,
		Weight:    *sp.Weight,
		MaxConn:   *sp.MaxConn,
		MaxQueue:  *sp.MaxQueue,
		MinConn:   *sp.MinConn,
		Backup:    *sp.Backup,
		Disabled:  *sp.Disabled,
		Slowstart: sp.Slowstart.Std(),

		Check:      *sp.Check,
		Agent:      sp.Agent.model(),
		Observe:    *sp.Observe,
		ErrorLimit: *sp.ErrorLimit,
		OnError:    *sp.OnError,

		Inter:     optDuration(sp.Inter),
		FastInter: optDuration(sp.FastInter),
		DownInter: optDuration(sp.DownInter),
		Rise:      optInt(sp.Rise),
		Fall:      optInt(sp.Fall),

		PoolMaxConn:    *sp.PoolMaxConn,
		PoolLowConn:    *sp.PoolLowConn,
		PoolPurgeDelay: sp.PoolPurgeDelay.Std(),

		SSL:            *sp.SSL,
		CheckSSL:       *sp.SSL || *sp.CheckSSL,
		SendProxy:      sp.sendProxy(),
		ProxyV2Options: sp.ProxyV2Options,
		CheckSendProxy: *sp.CheckSendProxy || *sp.SendProxy || *sp.SendProxyV2,
		Proto:          *sp.Proto,
	}
}
