package stats

import (
	"fmt"
	"strings"
	"time"

	"github.com/fulcrum-proxy/fulcrum/proxy"
)

// Column is one `show stat` column, declared once in columns below (as
// HAProxy's stat_fields[] in src/stats.c): CSV, typed, JSON, `desc`, the
// HTML page and Prometheus are all generated from it.
//
// Which value a column holds follows one rule. fulcrum fills it when the
// core keeps the number; prints 0 when the feature it counts does not exist
// in fulcrum, so the count is exactly 0 (compression, cache, TLS, HTTP/2,
// response rules); and leaves it empty when fulcrum does the thing but does
// not count it yet, or has no such setting (never an invented value).
type Column struct {
	Name  string // CSV header name: "scur"
	Desc  string // HAProxy 2.6's description, printed by `show stat typed desc`
	Kinds Kind   // rows on which the column may hold a value

	typ   fieldType
	tags  string // typed tags: origin, nature, scope ("MGP")
	btags string // tags on BACKEND rows when they differ from tags

	// prom is the metric name after haproxy_<frontend|backend|server>_ in
	// HAProxy 2.6's built-in exporter, for the row kinds promKinds; values
	// are multiplied by promScale when it is set (milliseconds to seconds).
	prom      string
	promKinds Kind
	promScale float64

	get func(r *row) value
}

// cv and ck shorten the getters below.
type (
	cv = proxy.CounterValues
	ck = proxy.CheckSnapshot
	ag = proxy.AgentSnapshot
)

// columns is every column of HAProxy 2.6.12's `show stat`, in its order (the
// CSV header is checked against a capture column by column). Columns are
// only ever appended, never inserted or reordered (management.txt §9.1).
var columns = append([]Column{
	{Name: "pxname", Kinds: kFBS, typ: tStr, tags: "KNS",
		Desc: "Proxy name",
		get:  func(r *row) value { return str(r.pxname) }},
	{Name: "svname", Kinds: kFBS, typ: tStr, tags: "KNS",
		Desc: "Server name",
		get:  func(r *row) value { return str(r.svname) }},
	{Name: "qcur", Kinds: kBS, typ: tU32, tags: "MGP", prom: "current_queue", promKinds: kBS,
		Desc: "Number of current queued connections",
		get:  counter(func(c *cv) int64 { return c.Qcur })},
	{Name: "qmax", Kinds: kBS, typ: tU32, tags: "MMP", prom: "max_queue", promKinds: kBS,
		Desc: "Highest value of queued connections encountered since process started",
		get:  counter(func(c *cv) int64 { return c.Qmax })},
	{Name: "scur", Kinds: kFBS, typ: tU32, tags: "MGP", prom: "current_sessions", promKinds: kFBS,
		Desc: "Number of current sessions on the frontend, backend or server",
		get:  counter(func(c *cv) int64 { return c.Scur })},
	{Name: "smax", Kinds: kFBS, typ: tU32, tags: "MMP", prom: "max_sessions", promKinds: kFBS,
		Desc: "Highest value of current sessions encountered since process started",
		get:  counter(func(c *cv) int64 { return c.Smax })},
	{Name: "slim", Kinds: kFBS, typ: tU32, tags: "CLP", prom: "limit_sessions", promKinds: kFBS,
		Desc: "Frontend/listener/server's maxconn, backend's fullconn",
		get:  slim},
	{Name: "stot", Kinds: kFBS, typ: tU64, tags: "MCP", prom: "sessions_total", promKinds: kFBS,
		Desc: "Total number of sessions since process started",
		get:  counter(func(c *cv) int64 { return c.Stot })},
	{Name: "bin", Kinds: kFBS, typ: tU64, tags: "MCP", prom: "bytes_in_total", promKinds: kFBS,
		Desc: "Total number of request bytes since process started",
		get:  counter(func(c *cv) int64 { return c.Bin })},
	{Name: "bout", Kinds: kFBS, typ: tU64, tags: "MCP", prom: "bytes_out_total", promKinds: kFBS,
		Desc: "Total number of response bytes since process started",
		get:  counter(func(c *cv) int64 { return c.Bout })},
	{Name: "dreq", Kinds: kFB, typ: tU64, tags: "MCP", prom: "requests_denied_total", promKinds: kFB,
		Desc: "Total number of denied requests since process started",
		get:  counter(func(c *cv) int64 { return c.Dreq })},
	{Name: "dresp", Kinds: kFBS, typ: tU64, tags: "MCP", prom: "responses_denied_total", promKinds: kFBS,
		Desc: "Total number of denied responses since process started",
		get:  counter(func(c *cv) int64 { return c.Dresp })},
	{Name: "ereq", Kinds: kF, typ: tU64, tags: "MCP", prom: "request_errors_total", promKinds: kF,
		Desc: "Total number of invalid requests since process started",
		get:  counter(func(c *cv) int64 { return c.Ereq })},
	{Name: "econ", Kinds: kBS, typ: tU64, tags: "MCP", prom: "connection_errors_total", promKinds: kBS,
		Desc: "Total number of failed connections to server since the worker process started",
		get:  counter(func(c *cv) int64 { return c.Econ })},
	{Name: "eresp", Kinds: kBS, typ: tU64, tags: "MCP", prom: "response_errors_total", promKinds: kBS,
		Desc: "Total number of invalid responses since the worker process started",
		get:  counter(func(c *cv) int64 { return c.Eresp })},
	{Name: "wretr", Kinds: kBS, typ: tU64, tags: "MCP", prom: "retry_warnings_total", promKinds: kBS,
		Desc: "Total number of server connection retries since the worker process started",
		get:  counter(func(c *cv) int64 { return c.Wretr })},
	{Name: "wredis", Kinds: kBS, typ: tU64, tags: "MCP", prom: "redispatch_warnings_total", promKinds: kBS,
		Desc: "Total number of server redispatches due to connection failures since the worker process started",
		get:  counter(func(c *cv) int64 { return c.Wredis })},
	{Name: "status", Kinds: kFBS, typ: tStr, tags: "SGP", prom: "status", promKinds: kFBS,
		Desc: "Frontend/listen status: OPEN/WAITING/FULL/STOP; backend: UP/DOWN; server: last check status",
		get:  status},
	{Name: "weight", Kinds: kBS, typ: tU32, tags: "MaP", prom: "weight", promKinds: kBS,
		Desc: "Server's effective weight, or sum of active servers' effective weights for a backend",
		get:  weight},
	{Name: "act", Kinds: kBS, typ: tU32, tags: "SGP", btags: "MGP", prom: "active_servers", promKinds: kB,
		Desc: "Total number of active UP servers with a non-zero weight",
		get:  act},
	{Name: "bck", Kinds: kBS, typ: tU32, tags: "SGP", btags: "MGP", prom: "backup_servers", promKinds: kB,
		Desc: "Total number of backup UP servers with a non-zero weight",
		get:  bck},
	{Name: "chkfail", Kinds: kS, typ: tU64, tags: "MCP", prom: "check_failures_total", promKinds: kS,
		Desc: "Total number of failed individual health checks per server/backend, since the worker process started",
		get:  check(func(c *ck) value { return num(c.Failed) })},
	{Name: "chkdown", Kinds: kBS, typ: tU64, tags: "MCP", prom: "check_up_down_total", promKinds: kBS,
		Desc: "Total number of failed checks causing UP to DOWN server transitions, per server/backend, since the worker process started",
		get:  chkdown},
	{Name: "lastchg", Kinds: kBS, typ: tU32, tags: "MAP", prom: "check_last_change_seconds", promKinds: kBS,
		Desc: "How long ago the last server state changed, in seconds",
		get:  lastchg},
	{Name: "downtime", Kinds: kBS, typ: tU32, tags: "MCP", prom: "downtime_seconds_total", promKinds: kBS,
		Desc: "Total time spent in DOWN state, for server or backend",
		get:  downtime},
	{Name: "qlimit", Kinds: kS, typ: tU32, tags: "CGS", prom: "queue_limit", promKinds: kS,
		Desc: "Limit on the number of connections in queue, for servers only (maxqueue argument)",
		get:  func(r *row) value { return positive(r.sv.MaxQueue) }},
	{Name: "pid", Kinds: kFBS, typ: tU32, tags: "KGP",
		Desc: "Relative worker process number (1)",
		get:  func(*row) value { return num(1) }},
	{Name: "iid", Kinds: kFBS, typ: tU32, tags: "KGS",
		Desc: "Frontend or Backend numeric identifier ('id' setting)",
		get:  func(r *row) value { return num(int64(r.iid)) }},
	{Name: "sid", Kinds: kFBS, typ: tU32, tags: "KGS",
		Desc: "Server numeric identifier ('id' setting)",
		get:  func(r *row) value { return num(int64(r.sid)) }},
	{Name: "throttle", Kinds: kS, typ: tU32, tags: "MaP", prom: "current_throttle", promKinds: kS,
		Desc: "Throttling ratio applied to a server's maxconn and weight during the slowstart period (0 to 100%)",
		get:  throttle},
	{Name: "lbtot", Kinds: kBS, typ: tU64, tags: "MCP", prom: "loadbalanced_total", promKinds: kBS,
		Desc: "Total number of requests routed by load balancing since the worker process started (ignores queue pop and stickiness)",
		get:  counter(func(c *cv) int64 { return c.Lbtot })},
	{Name: "tracked", Kinds: kS, typ: tStr, tags: "CNS",
		Desc: "Name of the other server this server tracks for its state",
		get:  empty}, // no tracking yet
	{Name: "type", Kinds: kFBS, typ: tU32, tags: "CGS",
		Desc: "Type of the object (Listener, Frontend, Backend, Server)",
		get:  func(r *row) value { return num(r.kind.typeCode()) }},
	{Name: "rate", Kinds: kFBS, typ: tU32, tags: "MRP", btags: "MGP",
		Desc: "Total number of sessions processed by this object over the last second (sessions for listeners/frontends, requests for backends/servers)",
		get:  counter(func(c *cv) int64 { return c.Rate })},
	{Name: "rate_lim", Kinds: kF, typ: tU32, tags: "CLP", prom: "limit_session_rate", promKinds: kF,
		Desc: "Limit on the number of sessions accepted in a second (frontend only, 'rate-limit sessions' setting)",
		get:  zero}, // no rate-limit sessions: 0 = none, as HAProxy
	{Name: "rate_max", Kinds: kFBS, typ: tU32, tags: "MMP", btags: "MGP", prom: "max_session_rate", promKinds: kFBS,
		Desc: "Highest value of sessions per second observed since the worker process started",
		get:  counter(func(c *cv) int64 { return c.RateMax })},
	{Name: "check_status", Kinds: kS, typ: tStr, tags: "MOP", prom: "check_status", promKinds: kS,
		Desc: "Status report of the server's latest health check, prefixed with '*' if a check is currently in progress",
		get:  checkStatus},
	{Name: "check_code", Kinds: kS, typ: tU32, tags: "MOP", prom: "check_code", promKinds: kS,
		Desc: "HTTP/SMTP/LDAP status code reported by the latest server health check",
		get:  activeCheck(func(c *ck) value { return positive(c.Code) })},
	{Name: "check_duration", Kinds: kS, typ: tU64, tags: "MDP", prom: "check_duration_seconds", promKinds: kS, promScale: 0.001,
		Desc: "Total duration of the latest server health check, in milliseconds",
		get:  activeCheck(func(c *ck) value { return nonNegative(c.Duration) })},
	{Name: "hrsp_1xx", Kinds: kFBS, typ: tU64, tags: "MCP", prom: "http_responses_total", promKinds: kFBS,
		Desc: "Total number of HTTP responses with status 100-199 returned by this object since the worker process started",
		get:  httpCounter(func(c *cv) int64 { return c.Hrsp1xx })},
	{Name: "hrsp_2xx", Kinds: kFBS, typ: tU64, tags: "MCP", prom: "http_responses_total", promKinds: kFBS,
		Desc: "Total number of HTTP responses with status 200-299 returned by this object since the worker process started",
		get:  httpCounter(func(c *cv) int64 { return c.Hrsp2xx })},
	{Name: "hrsp_3xx", Kinds: kFBS, typ: tU64, tags: "MCP", prom: "http_responses_total", promKinds: kFBS,
		Desc: "Total number of HTTP responses with status 300-399 returned by this object since the worker process started",
		get:  httpCounter(func(c *cv) int64 { return c.Hrsp3xx })},
	{Name: "hrsp_4xx", Kinds: kFBS, typ: tU64, tags: "MCP", prom: "http_responses_total", promKinds: kFBS,
		Desc: "Total number of HTTP responses with status 400-499 returned by this object since the worker process started",
		get:  httpCounter(func(c *cv) int64 { return c.Hrsp4xx })},
	{Name: "hrsp_5xx", Kinds: kFBS, typ: tU64, tags: "MCP", prom: "http_responses_total", promKinds: kFBS,
		Desc: "Total number of HTTP responses with status 500-599 returned by this object since the worker process started",
		get:  httpCounter(func(c *cv) int64 { return c.Hrsp5xx })},
	{Name: "hrsp_other", Kinds: kFBS, typ: tU64, tags: "MCP", prom: "http_responses_total", promKinds: kFBS,
		Desc: "Total number of HTTP responses with status <100, >599 returned by this object since the worker process started (error -1 included)",
		get:  httpCounter(func(c *cv) int64 { return c.HrspOther })},
	{Name: "hanafail", Kinds: kS, typ: tU64, tags: "MCP",
		Desc: "Total number of failed checks caused by an 'on-error' directive after an 'observe' condition matched",
		get: check(func(c *ck) value {
			if !c.Observe {
				return value{}
			}
			return num(c.HanaFail)
		})},
	{Name: "req_rate", Kinds: kF, typ: tU32, tags: "MRP",
		Desc: "Number of HTTP requests processed over the last second on this object",
		get:  counter(func(c *cv) int64 { return c.ReqRate })},
	{Name: "req_rate_max", Kinds: kF, typ: tU32, tags: "MMP", prom: "http_requests_rate_max", promKinds: kF,
		Desc: "Highest value of http requests observed since the worker process started",
		get:  counter(func(c *cv) int64 { return c.ReqRateMax })},
	{Name: "req_tot", Kinds: kFBS, typ: tU64, tags: "MCP", prom: "http_requests_total", promKinds: kFB,
		Desc: "Total number of HTTP requests processed by this object since the worker process started",
		get:  reqTot},
	{Name: "cli_abrt", Kinds: kBS, typ: tU64, tags: "MCP", prom: "client_aborts_total", promKinds: kBS,
		Desc: "Total number of requests or connections aborted by the client since the worker process started",
		get:  counter(func(c *cv) int64 { return c.CliAbrt })},
	{Name: "srv_abrt", Kinds: kBS, typ: tU64, tags: "MCP", prom: "server_aborts_total", promKinds: kBS,
		Desc: "Total number of requests or connections aborted by the server since the worker process started",
		get:  counter(func(c *cv) int64 { return c.SrvAbrt })},
	{Name: "comp_in", Kinds: kFB, typ: tU64, tags: "MCP", prom: "http_comp_bytes_in_total", promKinds: kFB,
		Desc: "Total number of bytes submitted to the HTTP compressor for this object since the worker process started",
		get:  zero}, // no compression
	{Name: "comp_out", Kinds: kFB, typ: tU64, tags: "MCP", prom: "http_comp_bytes_out_total", promKinds: kFB,
		Desc: "Total number of bytes emitted by the HTTP compressor for this object since the worker process started",
		get:  zero}, // no compression
	{Name: "comp_byp", Kinds: kFB, typ: tU64, tags: "MCP", prom: "http_comp_bytes_bypassed_total", promKinds: kFB,
		Desc: "Total number of bytes that bypassed HTTP compression for this object since the worker process started (CPU/memory/bandwidth limitation)",
		get:  zero}, // no compression
	{Name: "comp_rsp", Kinds: kFB, typ: tU64, tags: "MCP", prom: "http_comp_responses_total", promKinds: kFB,
		Desc: "Total number of HTTP responses that were compressed for this object since the worker process started",
		get:  zero}, // no compression
	{Name: "lastsess", Kinds: kBS, typ: tS32, tags: "MAP", prom: "last_session_seconds", promKinds: kBS,
		Desc: "How long ago some traffic was seen on this object on this worker process, in seconds",
		get:  lastsess},
	{Name: "last_chk", Kinds: kS, typ: tStr, tags: "MOP",
		Desc: "Short description of the latest health check report for this server (see also check_desc)",
		get:  check(func(c *ck) value { return str(c.Info) })},
	{Name: "last_agt", Kinds: kS, typ: tStr, tags: "MOP",
		Desc: "Short description of the latest agent check report for this server (see also agent_desc)",
		get:  agent(func(a *ag) value { return str(a.Info) })},
	{Name: "qtime", Kinds: kBS, typ: tU32, tags: "MaP", prom: "queue_time_average_seconds", promKinds: kBS, promScale: 0.001,
		Desc: "Time spent in the queue, in milliseconds, averaged over the 1024 last requests (backend/server)",
		get:  counter(func(c *cv) int64 { return c.Qtime })},
	{Name: "ctime", Kinds: kBS, typ: tU32, tags: "MaP", prom: "connect_time_average_seconds", promKinds: kBS, promScale: 0.001,
		Desc: "Time spent waiting for a connection to complete, in milliseconds, averaged over the 1024 last requests (backend/server)",
		get:  counter(func(c *cv) int64 { return c.Ctime })},
	{Name: "rtime", Kinds: kBS, typ: tU32, tags: "MaP", prom: "response_time_average_seconds", promKinds: kBS, promScale: 0.001,
		Desc: "Time spent waiting for a server response, in milliseconds, averaged over the 1024 last requests (backend/server)",
		get:  counter(func(c *cv) int64 { return c.Rtime })},
	{Name: "ttime", Kinds: kBS, typ: tU32, tags: "MaP", prom: "total_time_average_seconds", promKinds: kBS, promScale: 0.001,
		Desc: "Total request+response time (request+queue+connect+response+processing), in milliseconds, averaged over the 1024 last requests (backend/server)",
		get:  counter(func(c *cv) int64 { return c.Ttime })},
	{Name: "agent_status", Kinds: kS, typ: tStr, tags: "MOP",
		Desc: "Status report of the server's latest agent check, prefixed with '*' if a check is currently in progress",
		get:  agentStatus},
	{Name: "agent_code", Kinds: kS, typ: tU32, tags: "MOP",
		Desc: "Status code reported by the latest server agent check",
		get:  agent(func(a *ag) value { return nonNegative(int64(a.Code)) })},
	{Name: "agent_duration", Kinds: kS, typ: tU64, tags: "MDP",
		Desc: "Total duration of the latest server agent check, in milliseconds",
		get:  agent(func(a *ag) value { return nonNegative(a.Duration) })},
	{Name: "check_desc", Kinds: kS, typ: tStr, tags: "MOP",
		Desc: "Textual description of the latest health check report for this server",
		get:  check(func(c *ck) value { return nonEmpty(c.Desc) })},
	{Name: "agent_desc", Kinds: kS, typ: tStr, tags: "MOP",
		Desc: "Textual description of the latest agent check report for this server",
		get:  agent(func(a *ag) value { return nonEmpty(a.Desc) })},
	{Name: "check_rise", Kinds: kS, typ: tU32, tags: "CGS",
		Desc: "Number of successful health checks before declaring a server UP (server 'rise' setting)",
		get:  activeCheck(func(c *ck) value { return num(int64(c.Rise)) })},
	{Name: "check_fall", Kinds: kS, typ: tU32, tags: "CGS",
		Desc: "Number of failed health checks before declaring a server DOWN (server 'fall' setting)",
		get:  activeCheck(func(c *ck) value { return num(int64(c.Fall)) })},
	{Name: "check_health", Kinds: kS, typ: tU32, tags: "CGS",
		Desc: "Current server health check level (0..fall-1=DOWN, fall..rise-1=UP)",
		get:  activeCheck(func(c *ck) value { return num(int64(c.Health)) })},
	{Name: "agent_rise", Kinds: kS, typ: tU32, tags: "CGS",
		Desc: "Number of successful agent checks before declaring a server UP (server 'rise' setting)",
		get:  agent(func(a *ag) value { return num(int64(a.Rise)) })},
	{Name: "agent_fall", Kinds: kS, typ: tU32, tags: "CGS",
		Desc: "Number of failed agent checks before declaring a server DOWN (server 'fall' setting)",
		get:  agent(func(a *ag) value { return num(int64(a.Fall)) })},
	{Name: "agent_health", Kinds: kS, typ: tU32, tags: "CGS",
		Desc: "Current server agent check level (0..fall-1=DOWN, fall..rise-1=UP)",
		get:  agent(func(a *ag) value { return num(int64(a.Health)) })},
	{Name: "addr", Kinds: kS, typ: tStr, tags: "CGS",
		Desc: "Server's address:port, shown only if show-legends is set, or at levels oper/admin for the CLI",
		get:  legend(func(r *row) string { return r.sv.Addr })},
	{Name: "cookie", Kinds: kBS, typ: tStr, tags: "CNS",
		Desc: "Backend's cookie name or Server's cookie value, shown only if show-legends is set, or at levels oper/admin for the CLI",
		get:  empty}, // no cookie persistence yet
	{Name: "mode", Kinds: kFBS, typ: tStr, tags: "CGS",
		Desc: "'mode' setting (tcp/http/health/cli)",
		get:  func(r *row) value { return str(r.mode) }},
	{Name: "algo", Kinds: kB, typ: tStr, tags: "CGS",
		Desc: "Backend's load balancing algorithm, shown only if show-legends is set, or at levels oper/admin for the CLI",
		get:  legend(algo)},
	{Name: "conn_rate", Kinds: kF, typ: tU32, tags: "MRP",
		Desc: "Number of new connections accepted over the last second on the frontend for this worker process",
		get:  counter(func(c *cv) int64 { return c.Rate })}, // a frontend session is a connection
	{Name: "conn_rate_max", Kinds: kF, typ: tU32, tags: "MMP", prom: "connections_rate_max", promKinds: kF,
		Desc: "Highest value of connections per second observed since the worker process started",
		get:  counter(func(c *cv) int64 { return c.RateMax })},
	{Name: "conn_tot", Kinds: kF, typ: tU64, tags: "MCP", prom: "connections_total", promKinds: kF,
		Desc: "Total number of new connections accepted on this frontend since the worker process started",
		get:  counter(func(c *cv) int64 { return c.Stot + c.ConnEarly })},
	{Name: "intercepted", Kinds: kFB, typ: tU64, tags: "MCP", prom: "intercepted_requests_total", promKinds: kF,
		Desc: "Total number of HTTP requests intercepted on the frontend (redirects/stats/services) since the worker process started",
		get: func(r *row) value {
			if r.kind != KindFrontend || r.mode != "http" {
				return value{} // requests a backend answers itself are not counted apart; none in mode tcp (HAProxy 2.6: empty)
			}
			return num(r.c.Obs.Intercepted)
		}},
	{Name: "dcon", Kinds: kF, typ: tU64, tags: "MCP", prom: "denied_connections_total", promKinds: kF,
		Desc: "Total number of incoming connections blocked on a listener/frontend by a tcp-request connection rule since the worker process started",
		get:  func(r *row) value { return num(r.fe.DeniedConn) }},
	{Name: "dses", Kinds: kF, typ: tU64, tags: "MCP", prom: "denied_sessions_total", promKinds: kF,
		Desc: "Total number of incoming sessions blocked on a listener/frontend by a tcp-request connection rule since the worker process started",
		get:  zero}, // no tcp-request session rules
	{Name: "wrew", Kinds: kFBS, typ: tU64, tags: "MCP", prom: "failed_header_rewriting_total", promKinds: kFBS,
		Desc: "Total number of failed HTTP header rewrites since the worker process started",
		get:  zero}, // no header rewrites
	{Name: "connect", Kinds: kBS, typ: tU64, tags: "MCP", prom: "connection_attempts_total", promKinds: kBS,
		Desc: "Total number of outgoing connection attempts on this backend/server since the worker process started",
		get:  counter(func(c *cv) int64 { return c.Obs.Connect })},
	{Name: "reuse", Kinds: kBS, typ: tU64, tags: "MCP", prom: "connection_reuses_total", promKinds: kBS,
		Desc: "Total number of reused connection on this backend/server since the worker process started",
		get:  counter(func(c *cv) int64 { return c.Obs.Reuse })},
	{Name: "cache_lookups", Kinds: kFB, typ: tU64, tags: "MCP", prom: "http_cache_lookups_total", promKinds: kFB,
		Desc: "Total number of HTTP requests looked up in the cache on this frontend/backend since the worker process started",
		get:  httpZero}, // no cache
	{Name: "cache_hits", Kinds: kFB, typ: tU64, tags: "MCP", prom: "http_cache_hits_total", promKinds: kFB,
		Desc: "Total number of HTTP requests not found in the cache on this frontend/backend since the worker process started",
		get:  httpZero}, // no cache
	{Name: "srv_icur", Kinds: kS, typ: tU32, tags: "MGP", prom: "idle_connections_current", promKinds: kS,
		Desc: "Current number of idle connections available for reuse on this server",
		get:  func(r *row) value { return num(int64(r.sv.Obs.Idle)) }},
	{Name: "src_ilim", Kinds: kS, typ: tU32, tags: "CLP", prom: "idle_connections_limit", promKinds: kS,
		Desc: "Limit on the number of available idle connections on this server (server 'pool_max_conn' directive)",
		get: func(r *row) value {
			if r.sv.Obs.PoolMax < 0 {
				return value{} // no limit: HAProxy prints nothing (NaN)
			}
			return num(int64(r.sv.Obs.PoolMax))
		}},
	{Name: "qtime_max", Kinds: kBS, typ: tU32, tags: "MMP", prom: "max_queue_time_seconds", promKinds: kBS, promScale: 0.001,
		Desc: "Maximum observed time spent in the queue, in milliseconds (backend/server)",
		get:  counter(func(c *cv) int64 { return c.QtimeMax })},
	{Name: "ctime_max", Kinds: kBS, typ: tU32, tags: "MMP", prom: "max_connect_time_seconds", promKinds: kBS, promScale: 0.001,
		Desc: "Maximum observed time spent waiting for a connection to complete, in milliseconds (backend/server)",
		get:  counter(func(c *cv) int64 { return c.Obs.CtimeMax })},
	{Name: "rtime_max", Kinds: kBS, typ: tU32, tags: "MMP", prom: "max_response_time_seconds", promKinds: kBS, promScale: 0.001,
		Desc: "Maximum observed time spent waiting for a server response, in milliseconds (backend/server)",
		get:  counter(func(c *cv) int64 { return c.Obs.RtimeMax })},
	{Name: "ttime_max", Kinds: kBS, typ: tU32, tags: "MMP", prom: "max_total_time_seconds", promKinds: kBS, promScale: 0.001,
		Desc: "Maximum observed total request+response time (request+queue+connect+response+processing), in milliseconds (backend/server)",
		get:  counter(func(c *cv) int64 { return c.Obs.TtimeMax })},
	{Name: "eint", Kinds: kFBS, typ: tU64, tags: "MCP", prom: "internal_errors_total", promKinds: kFBS,
		Desc: "Total number of internal errors since process started",
		get:  zero}, // no internal error class: allocation failures and the like do not exist in Go
	{Name: "idle_conn_cur", Kinds: kS, typ: tU32, tags: "MGP", prom: "unsafe_idle_connections_current", promKinds: kS,
		Desc: "Current number of unsafe idle connections",
		get:  func(r *row) value { return num(int64(r.sv.Obs.Idle - r.sv.Obs.SafeIdle)) }},
	{Name: "safe_conn_cur", Kinds: kS, typ: tU32, tags: "MGP", prom: "safe_idle_connections_current", promKinds: kS,
		Desc: "Current number of safe idle connections",
		get:  func(r *row) value { return num(int64(r.sv.Obs.SafeIdle)) }},
	{Name: "used_conn_cur", Kinds: kS, typ: tU32, tags: "MGP", prom: "used_connections_current", promKinds: kS,
		Desc: "Current number of connections in use",
		get:  counter(func(c *cv) int64 { return c.Scur })},
	{Name: "need_conn_est", Kinds: kS, typ: tU32, tags: "MGP", prom: "need_connections_current", promKinds: kS,
		Desc: "Estimated needed number of connections",
		get:  counter(func(c *cv) int64 { return c.Smax })}, // the peak of connections in use, as show servers conn's need_est: HAProxy's estimate keeps the last purge period's peak (1 after one request, where scur is 0)
	{Name: "uweight", Kinds: kBS, typ: tU32, tags: "MaP", prom: "uweight", promKinds: kBS,
		Desc: "Server's user weight, or sum of active servers' user weights for a backend",
		get:  uweight},
	{Name: "agg_server_status", Kinds: kB, typ: tU32, tags: "MGP", prom: "agg_server_status", promKinds: kB,
		Desc: "Backend's aggregated gauge of servers' status",
		get:  zero}, // always 0 in HAProxy 2.6
	{Name: "agg_server_check_status", Kinds: kB, typ: tU32, tags: "MGP", prom: "agg_server_check_status", promKinds: kB,
		Desc: "Backend's aggregated gauge of servers' state check status",
		get:  zero}, // always 0 in HAProxy 2.6
	{Name: "agg_check_status", Kinds: kB, typ: tU32, tags: "MGP", prom: "agg_check_status", promKinds: kB,
		Desc: "Backend's aggregated gauge of servers' state check status",
		get:  zero}, // always 0 in HAProxy 2.6
	{Name: "-", Kinds: kFBS, typ: tStr, get: func(*row) value { return str("-") }}, // end of the fixed columns; not in typed/json
	{Name: "ssl_sess", Kinds: kFBS, typ: tU64, tags: "MCP",
		Desc: "Total number of ssl sessions established",
		get:  ssl(func(v *proxy.SSLValues) int64 { return v.Sess })},
	{Name: "ssl_reused_sess", Kinds: kFBS, typ: tU64, tags: "MCP",
		Desc: "Total number of ssl sessions reused",
		get:  ssl(func(v *proxy.SSLValues) int64 { return v.ReusedSess })},
	{Name: "ssl_failed_handshake", Kinds: kFBS, typ: tU64, tags: "MCP",
		Desc: "Total number of failed handshake",
		get:  ssl(func(v *proxy.SSLValues) int64 { return v.FailedHandshake })},
	{Name: "h2_headers_rcvd", Kinds: kFB, typ: tU64, tags: "MCP",
		Desc: "Total number of received HEADERS frames",
		get:  h2(func(v *proxy.H2Values) int64 { return v.HeadersRcvd })},
	{Name: "h2_data_rcvd", Kinds: kFB, typ: tU64, tags: "MCP",
		Desc: "Total number of received DATA frames",
		get:  h2(func(v *proxy.H2Values) int64 { return v.DataRcvd })},
	{Name: "h2_settings_rcvd", Kinds: kFB, typ: tU64, tags: "MCP",
		Desc: "Total number of received SETTINGS frames",
		get:  h2(func(v *proxy.H2Values) int64 { return v.SettingsRcvd })},
	{Name: "h2_rst_stream_rcvd", Kinds: kFB, typ: tU64, tags: "MCP",
		Desc: "Total number of received RST_STREAM frames",
		get:  h2(func(v *proxy.H2Values) int64 { return v.RstStreamRcvd })},
	{Name: "h2_goaway_rcvd", Kinds: kFB, typ: tU64, tags: "MCP",
		Desc: "Total number of received GOAWAY frames",
		get:  h2(func(v *proxy.H2Values) int64 { return v.GoawayRcvd })},
	{Name: "h2_detected_conn_protocol_errors", Kinds: kFB, typ: tU64, tags: "MCP",
		Desc: "Total number of connection protocol errors",
		get:  h2(func(v *proxy.H2Values) int64 { return v.ConnProtoErr })},
	{Name: "h2_detected_strm_protocol_errors", Kinds: kFB, typ: tU64, tags: "MCP",
		Desc: "Total number of stream protocol errors",
		get:  h2(func(v *proxy.H2Values) int64 { return v.StrmProtoErr })},
	{Name: "h2_rst_stream_resp", Kinds: kFB, typ: tU64, tags: "MCP",
		Desc: "Total number of RST_STREAM sent on detected error",
		get:  h2(func(v *proxy.H2Values) int64 { return v.RstStreamResp })},
	{Name: "h2_goaway_resp", Kinds: kFB, typ: tU64, tags: "MCP",
		Desc: "Total number of GOAWAY sent on detected error",
		get:  h2(func(v *proxy.H2Values) int64 { return v.GoawayResp })},
	{Name: "h2_open_connections", Kinds: kFB, typ: tU64, tags: "MGP",
		Desc: "Count of currently open connections",
		get:  h2(func(v *proxy.H2Values) int64 { return v.OpenConns })},
	{Name: "h2_backend_open_streams", Kinds: kFB, typ: tU64, tags: "MGP",
		Desc: "Count of currently open streams",
		get:  h2(func(v *proxy.H2Values) int64 { return v.OpenStreams })},
	{Name: "h2_total_connections", Kinds: kFB, typ: tU64, tags: "MCP",
		Desc: "Total number of connections",
		get:  h2(func(v *proxy.H2Values) int64 { return v.TotalConns })},
	{Name: "h2_backend_total_streams", Kinds: kFB, typ: tU64, tags: "MCP",
		Desc: "Total number of streams",
		get:  h2(func(v *proxy.H2Values) int64 { return v.TotalStreams })},
	{Name: "h1_open_connections", Kinds: kFB, typ: tU64, tags: "MGP",
		Desc: "Count of currently open connections",
		get:  h1(func(v *proxy.H1Values) int64 { return v.OpenConns })},
	{Name: "h1_open_streams", Kinds: kFB, typ: tU64, tags: "MGP",
		Desc: "Count of currently open streams",
		get:  h1(func(v *proxy.H1Values) int64 { return v.OpenStreams })},
	{Name: "h1_total_connections", Kinds: kFB, typ: tU64, tags: "MCP",
		Desc: "Total number of connections",
		get:  h1(func(v *proxy.H1Values) int64 { return v.TotalConns })},
	{Name: "h1_total_streams", Kinds: kFB, typ: tU64, tags: "MCP",
		Desc: "Total number of streams",
		get:  h1(func(v *proxy.H1Values) int64 { return v.TotalStreams })},
	{Name: "h1_bytes_in", Kinds: kFB, typ: tU64, tags: "MCP",
		Desc: "Total number of bytes received",
		get:  h1(func(v *proxy.H1Values) int64 { return v.BytesIn })},
	{Name: "h1_bytes_out", Kinds: kFB, typ: tU64, tags: "MCP",
		Desc: "Total number of bytes send",
		get:  h1(func(v *proxy.H1Values) int64 { return v.BytesOut })},
	{Name: "h1_spliced_bytes_in", Kinds: kFB, typ: tU64, tags: "MCP",
		Desc: "Total number of bytes received using kernel splicing",
		get:  h1(func(v *proxy.H1Values) int64 { return v.SplicedIn })},
	{Name: "h1_spliced_bytes_out", Kinds: kFB, typ: tU64, tags: "MCP",
		Desc: "Total number of bytes sendusing kernel splicing",
		get:  h1(func(v *proxy.H1Values) int64 { return v.SplicedOut })},
}, timingColumns()...)

// timingColumns are fulcrum's own columns, after HAProxy 2.6's: the
// latency percentiles of the histograms (proxy/histogram.go) since start,
// <q|c|r|t>time_p<50|90|99|999>_us, in µs, within 6.25% of the true
// value; empty before a first value. hatop and the Prometheus haproxy
// exporter read the CSV with them (runtime/tools_test.go,
// cmd/fulcrum/stats_test.go).
func timingColumns() []Column {
	var cols []Column
	kinds := []struct{ prefix, what string }{
		{"qtime", "time spent in the queue"}, {"ctime", "time spent connecting to the server"},
		{"rtime", "server response time"}, {"ttime", "total request time"},
	}
	pcts := []struct {
		name, text string
		get        func(s *proxy.HistSummary) int64
	}{
		{"p50", "median", func(s *proxy.HistSummary) int64 { return s.P50 }},
		{"p90", "90th percentile", func(s *proxy.HistSummary) int64 { return s.P90 }},
		{"p99", "99th percentile", func(s *proxy.HistSummary) int64 { return s.P99 }},
		{"p999", "99.9th percentile", func(s *proxy.HistSummary) int64 { return s.P999 }},
	}
	for k, kind := range kinds {
		for _, p := range pcts {
			cols = append(cols, Column{
				Name: kind.prefix + "_" + p.name + "_us", Kinds: kFBS, typ: tU32, tags: "MDP",
				Desc: fmt.Sprintf("fulcrum: %s of the %s since started, in microseconds (latency histogram, within 6.25%%)", p.text, kind.what),
				get: func(r *row) value {
					s := r.timing(k)
					if s.Count == 0 {
						return value{}
					}
					return num(p.get(s))
				},
			})
		}
	}
	return cols
}

// h2 returns the getter of an h2 statistics module column: the
// frontend's counters (frames from clients) or the backend's (frames from
// servers), as HAProxy's h2 module fills both.
func h2(f func(v *proxy.H2Values) int64) func(r *row) value {
	return func(r *row) value {
		switch {
		case r.kind == KindFrontend && r.fe != nil:
			return num(f(&r.fe.H2))
		case r.kind == KindBackend && r.be != nil:
			return num(f(&r.be.H2))
		}
		return value{}
	}
}

// h1 returns the getter of one of the h1 module's columns (HAProxy
// 2.6's h1 statistics), for frontends and backends.
func h1(f func(v *proxy.H1Values) int64) func(r *row) value {
	return func(r *row) value {
		switch {
		case r.kind == KindFrontend && r.fe != nil:
			return num(f(&r.fe.H1))
		case r.kind == KindBackend && r.be != nil:
			return num(f(&r.be.H1))
		}
		return value{}
	}
}

// ssl returns the getter of one of the ssl module's columns (HAProxy
// 2.6 ssl_sock.c: the handshakes of a frontend's clients, of a backend's
// or server's connections to servers).
func ssl(f func(v *proxy.SSLValues) int64) func(r *row) value {
	return func(r *row) value {
		switch {
		case r.kind == KindFrontend && r.fe != nil:
			return num(f(&r.fe.SSL))
		case r.kind == KindBackend && r.be != nil:
			return num(f(&r.be.SSL))
		case r.kind == KindServer && r.sv != nil:
			return num(f(&r.sv.SSL))
		}
		return value{}
	}
}

// Columns returns the column table, in CSV order.
func Columns() []Column { return append([]Column(nil), columns...) }

// typedPos is a column's position in typed and JSON output, where the "-"
// column does not exist; -1 for "-" itself.
func typedPos(i int) int {
	switch {
	case i < dashCol:
		return i
	case i == dashCol:
		return -1
	}
	return i - 1
}

// dashCol is the index of the "-" column that ends the fixed part.
var dashCol = columnIndex("-")

// columnIndex returns the index of the column named name, or -1.
func columnIndex(name string) int {
	for i := range columns {
		if columns[i].Name == name {
			return i
		}
	}
	return -1
}

// value returns column c of row r: empty when the column does not apply to
// the row's kind.
func (c *Column) value(r *row) value {
	if c.Kinds&r.kind == 0 {
		return value{}
	}
	return c.get(r)
}

// tagsFor returns the typed tags of c on a row of kind k.
func (c *Column) tagsFor(k Kind) string {
	if k == KindBackend && c.btags != "" {
		return c.btags
	}
	return c.tags
}

// Getters shared by several columns.

func zero(*row) value  { return num(0) }
func empty(*row) value { return value{} }

// httpZero is 0 in HTTP mode and empty otherwise, as HAProxy 2.6 prints
// the cache columns (measured: empty on mode tcp frontends and backends).
func httpZero(r *row) value {
	if r.mode != "http" {
		return value{}
	}
	return num(0)
}

// counter reads one of the row's counters.
func counter(f func(c *cv) int64) func(*row) value {
	return func(r *row) value { return num(f(r.c)) }
}

// httpCounter reads a counter that HAProxy prints only in HTTP mode
// (hrsp_*; req_tot on backends and servers).
func httpCounter(f func(c *cv) int64) func(*row) value {
	return func(r *row) value {
		if r.mode != "http" {
			return value{}
		}
		return num(f(r.c))
	}
}

// check reads the server's health-check state; empty without checks and
// on backend rows.
func check(f func(c *ck) value) func(*row) value {
	return func(r *row) value {
		if r.sv == nil || r.sv.Check == nil {
			return value{}
		}
		return f(r.sv.Check)
	}
}

// activeCheck is check, empty while checks are paused (server in MAINT),
// as HAProxy prints check_code, check_duration, check_rise, check_fall and
// check_health then.
func activeCheck(f func(c *ck) value) func(*row) value {
	return check(func(c *ck) value {
		if c.Paused {
			return value{}
		}
		return f(c)
	})
}

// agent reads the server's agent-check state; empty without an agent.
func agent(f func(a *ag) value) func(*row) value {
	return func(r *row) value {
		if r.sv == nil || r.sv.Agent == nil {
			return value{}
		}
		return f(r.sv.Agent)
	}
}

func agentStatus(r *row) value {
	a := r.sv.Agent
	if a == nil || a.Status == "" {
		return value{}
	}
	if a.Running {
		return str("* " + a.Status)
	}
	return str(a.Status)
}

// legend is a column hidden on the HTTP page and at user level (addr, algo).
func legend(f func(r *row) string) func(*row) value {
	return func(r *row) value {
		if r.f.HideLegends {
			return value{}
		}
		return str(f(r))
	}
}

func reqTot(r *row) value {
	if r.kind == KindFrontend {
		return num(r.c.ReqTot)
	}
	return httpCounter(func(c *cv) int64 { return c.ReqTot })(r)
}

// slim: a frontend's maxconn (the global one when it has none), a backend's
// fullconn, a server's maxconn (empty when unlimited).
func slim(r *row) value {
	switch r.kind {
	case KindFrontend:
		if r.fe.MaxConn > 0 {
			return num(int64(r.fe.MaxConn))
		}
		return positive(r.snap.MaxConn)
	case KindBackend:
		return num(int64(r.be.FullConn))
	}
	return positive(r.sv.MaxConn)
}

func status(r *row) value {
	switch r.kind {
	case KindFrontend:
		return str(frontendStatus(r))
	case KindBackend:
		return str(backendStatus(r))
	}
	return str(r.sv.Status())
}

// weight: a server's effective weight whatever its state (HAProxy keeps
// DOWN, MAINT and DRAIN servers' weights; slowstart lowers it while the
// server ramps up), a backend's over the servers in use.
func weight(r *row) value {
	if r.kind == KindBackend {
		return num(int64(r.agg.weight))
	}
	return num(int64(r.sv.Weight))
}

// throttle: the percentage of its weight a server ramping up (slowstart)
// runs at; empty otherwise.
func throttle(r *row) value {
	if r.sv.Throttle < 0 {
		return value{}
	}
	return num(int64(r.sv.Throttle))
}

func uweight(r *row) value {
	if r.kind == KindBackend {
		return num(int64(r.agg.uweight))
	}
	return num(int64(r.sv.UserWeight))
}

func act(r *row) value {
	if r.kind == KindBackend {
		return num(int64(r.agg.act))
	}
	return boolValue(!r.sv.Backup)
}

func bck(r *row) value {
	if r.kind == KindBackend {
		return num(int64(r.agg.bck))
	}
	return boolValue(r.sv.Backup)
}

// lastchg: a server's last state change; a backend's last change between
// UP and DOWN (its start when it never changed, as HAProxy).
func lastchg(r *row) value {
	if r.kind == KindBackend {
		t := r.c.Obs.BackendChange
		if t.IsZero() {
			t = r.snap.Started
		}
		if t.IsZero() {
			return value{}
		}
		return num(r.secondsSince(t))
	}
	if r.sv.LastChange.IsZero() {
		return value{}
	}
	return num(r.secondsSince(r.sv.LastChange))
}

// chkdown: a checked server's UP to DOWN transitions; a backend's own.
func chkdown(r *row) value {
	if r.kind == KindBackend {
		return num(r.c.Obs.BackendDowns)
	}
	return check(func(c *ck) value { return num(c.Downs) })(r)
}

// downtime: a checked server's time DOWN, seconds; a backend's own, when
// it has servers (HAProxy prints none for a backend without).
func downtime(r *row) value {
	if r.kind == KindBackend {
		if len(r.be.Servers) == 0 {
			return value{}
		}
		return num(int64(r.c.Obs.BackendDowntime / time.Second))
	}
	return check(func(c *ck) value { return num(c.Downtime) })(r)
}

func lastsess(r *row) value {
	if r.c.LastSess.IsZero() {
		return num(-1)
	}
	return num(r.secondsSince(r.c.LastSess))
}

func checkStatus(r *row) value {
	c := r.sv.Check
	if c == nil || c.Status == "" {
		return value{}
	}
	if c.Running {
		return str("* " + c.Status)
	}
	return str(c.Status)
}

// algo is the balance algorithm's name without its arguments.
func algo(r *row) string {
	name, _, _ := strings.Cut(r.be.Balance, " ")
	name, _, _ = strings.Cut(name, "(")
	return name
}
