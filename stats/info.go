package stats

import (
	"bufio"
	"fmt"
	"io"
	"runtime/metrics"
	"strconv"
	"time"

	"github.com/fulcrum-proxy/fulcrum/proxy"
)

// ProcessFacts are the facts about the running process that the snapshot
// does not hold; cmd/fulcrum gathers them once.
type ProcessFacts struct {
	Version     string // one word, e.g. "0.3.0" or "devel-1a2b3c4d5e6f"
	ReleaseDate string // "2025/06/01"; "" when unknown
	BuildInfo   string // Go version, VCS revision and the like, one line
	Pid         int
	Nbthread    int    // GOMAXPROCS
	Node        string // host name
	Tasks       int    // goroutines
	UlimitN     int    // RLIMIT_NOFILE (soft, raised to the hard one at start); 0 = unknown
	// The Runtime API's part of HAProxy's Listeners and Jobs: its
	// listening sockets and its sessions; the peers sessions running
	// (ActivePeers: connecting or connected) and established
	// (ConnectedPeers).
	APIListeners, APISessions int
	// APISessionsTotal is the Runtime API's sessions since start: HAProxy
	// 2.6 counts its stats socket's connections in CumConns and, each
	// being a stream, in CumReq (measured).
	APISessionsTotal            int64
	ActivePeers, ConnectedPeers int
	// HeapAlloc and HeapUsed are HeapFigures' (bytes).
	HeapAlloc, HeapUsed int64
}

// Info is `show info`: the process facts and the totals over frontends, at
// one instant. NewInfo builds it; WriteInfo prints it.
type Info struct {
	Name                        string
	Version                     string
	ReleaseDate                 string
	BuildInfo                   string
	Nbthread                    int
	Pid                         int
	Node                        string
	Started                     time.Time
	Uptime                      time.Duration
	UlimitN                     int   // the process's file descriptor limit, 0 = unknown
	MaxConn                     int   // global maxconn, 0 = unlimited
	CurrConns                   int64 // client connections now, over all frontends
	CumConns                    int64 // client connections since start
	CumReq                      int64 // HTTP requests since start
	ConnRate                    int64 // connections over the last second
	SessRate                    int64 // sessions over the last second (= ConnRate in fulcrum)
	Tasks                       int
	IdlePct                     int // the process's idle time, percent; -1 = unknown (proxy.Snapshot.IdlePct)
	Stopping                    bool
	BytesOut                    int64 // bytes sent to clients and servers since start
	SplicedOut                  int64 // bytes of them spliced socket to socket
	BytesOutRate                int64 // bytes sent to clients per second, lately (proxy.Snapshot.BytesOutRate)
	DroppedLogs                 int64 // log lines the log targets lost (proxy.Snapshot.DroppedLogs)
	ConnRateMax                 int64 // the highest ConnRate since the start (proxy.Snapshot.ConnRateMax)
	Listeners                   int   // listening sockets: the frontends' and the Runtime API's
	Jobs                        int64 // Listeners, client connections and Runtime API sessions, as HAProxy's jobs
	ActivePeers, ConnectedPeers int
	// HeapAlloc is the Go heap's memory obtained from the system and not
	// returned, HeapUsed the part of it holding objects (bytes): what
	// fulcrum has of HAProxy's pools (PoolAlloc, PoolUsed).
	HeapAlloc, HeapUsed int64

	SSL proxy.SSLSnapshot // TLS figures (CurrSslConns, SslRate...)
}

// NewInfo sums snap's frontends and adds the process facts.
func NewInfo(snap *proxy.Snapshot, p ProcessFacts) Info {
	in := Info{
		Name: "fulcrum", Version: p.Version, ReleaseDate: p.ReleaseDate, BuildInfo: p.BuildInfo,
		Nbthread: p.Nbthread, Pid: p.Pid, Node: p.Node, Tasks: p.Tasks, UlimitN: p.UlimitN,
		Started: snap.Started, MaxConn: snap.MaxConn, Stopping: snap.Stopping, SSL: snap.SSL,
		IdlePct: snap.IdlePct, BytesOutRate: snap.BytesOutRate, DroppedLogs: snap.DroppedLogs,
		ConnRateMax: snap.ConnRateMax, Listeners: snap.Listeners + p.APIListeners,
		ActivePeers: p.ActivePeers, ConnectedPeers: p.ConnectedPeers,
	}
	in.HeapAlloc, in.HeapUsed = p.HeapAlloc, p.HeapUsed
	if !snap.Started.IsZero() {
		in.Uptime = snap.Taken.Sub(snap.Started)
	}
	in.CumConns, in.CumReq = p.APISessionsTotal, p.APISessionsTotal
	for i := range snap.Frontends {
		c := &snap.Frontends[i].CounterValues
		in.CurrConns += c.Scur
		// HAProxy's CumConns counts every connection accepted (its
		// cum_conn: those refused at the edge too), its CumReq every
		// stream (HTTP requests, TCP sessions).
		in.CumConns += c.Stot + c.ConnEarly
		if snap.Frontends[i].Mode == "tcp" {
			in.CumReq += c.Stot
		} else {
			in.CumReq += c.ReqTot
		}
		in.ConnRate += c.Rate
		in.BytesOut += c.Bout
		in.SplicedOut += snap.Frontends[i].H1.SplicedOut
	}
	// HAProxy's TotalBytesOut counts every byte sent, to servers too (an
	// upload's body): the backends' bin are the requests sent to them.
	for i := range snap.Backends {
		in.BytesOut += snap.Backends[i].Bin
	}
	in.SessRate = in.ConnRate // a frontend session is a connection
	in.Jobs = int64(in.Listeners) + in.CurrConns + int64(p.APISessions)
	return in
}

// infoField is one line of `show info`, at HAProxy 2.6's position. Lines
// for what fulcrum does not have (memory pools, peers) are not
// printed; lines for features fulcrum lacks (TLS, pipes, compression)
// print 0.
type infoField struct {
	pos  int
	name string
	tags string
	typ  fieldType
	prom string // haproxy_process_<prom> in HAProxy's exporter; "" = none
	desc string
	get  func(in *Info) value
}

func infoZero(*Info) value { return num(0) }

var infoFields = []infoField{
	{0, "Name", "POS", tStr, "", "Product name", func(in *Info) value { return str(in.Name) }},
	{1, "Version", "POS", tStr, "", "Product version", func(in *Info) value { return str(in.Version) }},
	{2, "Release_date", "POS", tStr, "", "Date of latest source code update", func(in *Info) value { return str(in.ReleaseDate) }},
	{3, "Nbthread", "CGS", tU32, "nbthread", "Number of started threads (global.nbthread)", func(in *Info) value { return num(int64(in.Nbthread)) }},
	{4, "Nbproc", "CGS", tU32, "nbproc", "Number of started worker processes (historical, always 1)", func(*Info) value { return num(1) }},
	{5, "Process_num", "KGP", tU32, "relative_process_id", "Relative worker process number (1)", func(*Info) value { return num(1) }},
	{6, "Pid", "SGP", tU32, "", "This worker process identifier for the system", func(in *Info) value { return num(int64(in.Pid)) }},
	{7, "Uptime", "MDP", tStr, "", "How long ago this worker process was started (days+hours+minutes+seconds)", func(in *Info) value { return str(uptime(in.Uptime)) }},
	{8, "Uptime_sec", "MDP", tU32, "uptime_seconds", "How long ago this worker process was started (seconds)", func(in *Info) value { return num(int64(in.Uptime / time.Second)) }},
	{9, "Memmax_MB", "CLP", tU32, "", "Worker process's hard limit on memory usage in MB (-m on command line)", infoZero},
	// Ulimit-n is the descriptor limit the process runs with; Maxsock, the
	// sockets it may open, is the same bound in fulcrum (HAProxy sets its
	// limit to Maxsock, so the two are equal there too).
	// HAProxy's memory pools are Go's heap here (Info.HeapAlloc, HeapUsed);
	// an allocation does not fail, it panics the process.
	{10, "PoolAlloc_MB", "MGP", tU32, "", "Amount of memory allocated in pools (in MB)", func(in *Info) value { return num(in.HeapAlloc >> 20) }},
	{11, "PoolUsed_MB", "MGP", tU32, "", "Amount of pool memory currently used (in MB)", func(in *Info) value { return num(in.HeapUsed >> 20) }},
	{12, "PoolFailed", "MCP", tU32, "pool_failures_total", "Number of failed pool allocations since this worker was started", infoZero},
	{13, "Ulimit-n", "CLP", tU32, "max_fds", "Hard limit on the number of per-process file descriptors", func(in *Info) value { return num(int64(in.UlimitN)) }},
	{14, "Maxsock", "CLP", tU32, "max_sockets", "Hard limit on the number of per-process sockets", func(in *Info) value { return num(int64(in.UlimitN)) }},
	{15, "Maxconn", "CLP", tU32, "max_connections", "Hard limit on the number of per-process connections (configured or imposed by Ulimit-n)", func(in *Info) value { return num(int64(in.MaxConn)) }},
	{16, "Hard_maxconn", "CLP", tU32, "hard_max_connections", "Hard limit on the number of per-process connections (imposed by Memmax_MB or Ulimit-n)", func(in *Info) value { return num(int64(in.MaxConn)) }},
	{17, "CurrConns", "MGP", tU32, "current_connections", "Current number of connections on this worker process", func(in *Info) value { return num(in.CurrConns) }},
	{18, "CumConns", "MCP", tU32, "connections_total", "Total number of connections on this worker process since started", func(in *Info) value { return num(in.CumConns) }},
	{19, "CumReq", "MCP", tU32, "requests_total", "Total number of requests on this worker process since started", func(in *Info) value { return num(in.CumReq) }},
	{20, "MaxSslConns", "MMP", tU32, "max_ssl_connections", "Hard limit on the number of per-process SSL endpoints (front+back), 0=unlimited", infoZero},
	{21, "CurrSslConns", "MGP", tU32, "current_ssl_connections", "Current number of SSL endpoints on this worker process (front+back)", func(in *Info) value { return num(in.SSL.CurrConns) }},
	{22, "CumSslConns", "MCP", tU32, "ssl_connections_total", "Total number of SSL endpoints on this worker process since started (front+back)", func(in *Info) value { return num(in.SSL.CumConns) }},
	{23, "Maxpipes", "CLP", tU32, "max_pipes", "Hard limit on the number of pipes for splicing, 0=unlimited", infoZero},
	{24, "PipesUsed", "MGP", tU32, "pipes_used_total", "Current number of pipes in use in this worker process", infoZero},
	{25, "PipesFree", "MGP", tU32, "pipes_free_total", "Current number of allocated and available pipes in this worker process", infoZero},
	{26, "ConnRate", "MRP", tU32, "current_connection_rate", "Number of front connections created on this worker process over the last second", func(in *Info) value { return num(in.ConnRate) }},
	{27, "ConnRateLimit", "CLP", tU32, "limit_connection_rate", "Hard limit for ConnRate (global.maxconnrate)", infoZero},
	{28, "MaxConnRate", "MMP", tU32, "max_connection_rate", "Highest ConnRate reached on this worker process since started (in connections per second)", func(in *Info) value { return num(in.ConnRateMax) }},
	{29, "SessRate", "MRP", tU32, "current_session_rate", "Number of sessions created on this worker process over the last second", func(in *Info) value { return num(in.SessRate) }},
	{30, "SessRateLimit", "CLP", tU32, "limit_session_rate", "Hard limit for SessRate (global.maxsessrate)", infoZero},
	{31, "MaxSessRate", "MRP", tU32, "max_session_rate", "Highest SessRate reached on this worker process since started (in sessions per second)", func(in *Info) value { return num(in.ConnRateMax) }},
	{32, "SslRate", "MRP", tU32, "current_ssl_rate", "Number of SSL connections created on this worker process over the last second", func(in *Info) value { return num(in.SSL.Rate) }},
	{33, "SslRateLimit", "CLP", tU32, "limit_ssl_rate", "Hard limit for SslRate (global.maxsslrate)", infoZero},
	{34, "MaxSslRate", "MMP", tU32, "max_ssl_rate", "Highest SslRate reached on this worker process since started (in connections per second)", func(in *Info) value { return num(in.SSL.RateMax) }},
	// TLS to servers comes with the TLS issue's second round: the backend
	// key rates stay 0 until then. There is no session cache (sessions
	// resume from tickets), so its lookups and misses stay 0.
	{35, "SslFrontendKeyRate", "MGP", tU32, "current_frontend_ssl_key_rate", "Number of SSL keys created on frontends in this worker process over the last second", func(in *Info) value { return num(in.SSL.KeyRate) }},
	{36, "SslFrontendMaxKeyRate", "MMP", tU32, "max_frontend_ssl_key_rate", "Highest SslFrontendKeyRate reached on this worker process since started (in SSL keys per second)", func(in *Info) value { return num(in.SSL.KeyRateMax) }},
	{37, "SslFrontendSessionReuse_pct", "MGP", tU32, "frontend_ssl_reuse", "Percent of frontend SSL connections which did not require a new key", func(in *Info) value { return num(in.SSL.ReusePct) }},
	{38, "SslBackendKeyRate", "MRP", tU32, "current_backend_ssl_key_rate", "Number of SSL keys created on backends in this worker process over the last second", func(in *Info) value { return num(in.SSL.BeKeyRate) }},
	{39, "SslBackendMaxKeyRate", "MMP", tU32, "max_backend_ssl_key_rate", "Highest SslBackendKeyRate reached on this worker process since started (in SSL keys per second)", func(in *Info) value { return num(in.SSL.BeKeyRateMax) }},
	{40, "SslCacheLookups", "MCP", tU32, "ssl_cache_lookups_total", "Total number of SSL session ID lookups in the SSL session cache on this worker since started", infoZero},
	{41, "SslCacheMisses", "MCP", tU32, "ssl_cache_misses_total", "Total number of SSL session ID lookups that didn't find a session in the SSL session cache on this worker since started", infoZero},
	{42, "CompressBpsIn", "MRP", tU32, "http_comp_bytes_in_total", "Number of bytes submitted to the HTTP compressor in this worker process over the last second", infoZero},
	{43, "CompressBpsOut", "MRP", tU32, "http_comp_bytes_out_total", "Number of bytes emitted by the HTTP compressor in this worker process over the last second", infoZero},
	{44, "CompressBpsRateLim", "CLP", tU32, "limit_http_comp", "Limit of CompressBpsOut beyond which HTTP compression is automatically disabled", infoZero},
	// Tasks and Run_queue are among the keys hatop requires. Tasks counts
	// goroutines; Go does not expose its run queue, so Run_queue stays 0.
	{47, "Tasks", "MGP", tU32, "current_tasks", "Total number of tasks in the current worker process (active + sleeping)", func(in *Info) value { return num(int64(in.Tasks)) }},
	{48, "Run_queue", "MGP", tU32, "current_run_queue", "Total number of active tasks+tasklets in the current worker process", infoZero},
	// Idle_pct is the complement of the process's CPU use over its
	// threads since the previous read at least a second old (proxy/idle.go).
	{49, "Idle_pct", "MaP", tU32, "idle_time_percent", "Idle to total ratio over last sample (percent)", func(in *Info) value {
		if in.IdlePct < 0 {
			return value{}
		}
		return num(int64(in.IdlePct))
	}},
	{50, "node", "COS", tStr, "", "Node name (global.node)", func(in *Info) value { return str(in.Node) }},
	{52, "Stopping", "MGP", tU32, "stopping", "1 if the worker process is currently stopping, otherwise zero", func(in *Info) value { return boolValue(in.Stopping) }},
	{53, "Jobs", "MGP", tU32, "jobs", "Current number of active jobs on the current worker process (frontend connections, master connections, listeners)", func(in *Info) value { return num(in.Jobs) }},
	{54, "Unstoppable Jobs", "MGP", tU32, "unstoppable_jobs", "Current number of unstoppable jobs on the current worker process (master connections)", infoZero},
	{55, "Listeners", "MGP", tU32, "listeners", "Current number of active listeners on the current worker process", func(in *Info) value { return num(int64(in.Listeners)) }},
	{56, "ActivePeers", "MGP", tU32, "active_peers", "Current number of verified active peers connections on the current worker process", func(in *Info) value { return num(int64(in.ActivePeers)) }},
	{57, "ConnectedPeers", "MGP", tU32, "connected_peers", "Current number of peers having passed the connection step on the current worker process", func(in *Info) value { return num(int64(in.ConnectedPeers)) }},
	{58, "DroppedLogs", "MGP", tU32, "dropped_logs_total", "Total number of dropped logs for current worker process since started", func(in *Info) value { return num(in.DroppedLogs) }},
	{59, "BusyPolling", "MGP", tU32, "busy_polling_enabled", "1 if busy-polling is currently in use on the worker process, otherwise zero (config.busy-polling)", infoZero},
	// FailedResolutions is not counted yet: 0. Neither it nor
	// TotalSplicdedBytesOut (HAProxy's spelling: the response bytes
	// spliced to clients) is exported to Prometheus from here
	// (failed_resolutions is a counter there, promProcessExtra's, and
	// spliced bytes are in PromexOmitted).
	{60, "FailedResolutions", "MGP", tU32, "", "Total number of failed DNS resolutions in current worker process since started", infoZero},
	{61, "TotalBytesOut", "MGP", tU64, "bytes_out_total", "Total number of bytes emitted by current worker process since started", func(in *Info) value { return num(in.BytesOut) }},
	{62, "TotalSplicdedBytesOut", "MGP", tU64, "", "Total number of bytes emitted by current worker process through a kernel pipe since started", func(in *Info) value { return num(in.SplicedOut) }},
	{63, "BytesOutRate", "MRP", tU64, "bytes_out_rate", "Number of bytes emitted by current worker process over the last second", func(in *Info) value { return num(in.BytesOutRate) }},
	{64, "DebugCommandsIssued", "MGP", tU32, "", "Number of debug commands issued on this process (anything > 0 is unsafe)", infoZero},
	{65, "CumRecvLogs", "MCP", tU32, "recv_logs_total", "Total number of log messages received by log-forwarding listeners on this worker process since started", infoZero},
	{66, "Build info", "POS", tStr, "", "Build info", func(in *Info) value { return str(in.BuildInfo) }},
	{67, "Memmax_bytes", "CLP", tU32, "max_memory_bytes", "Worker process's hard limit on memory usage in byes (-m on command line)", infoZero},
	{68, "PoolAlloc_bytes", "MGP", tU64, "pool_allocated_bytes", "Amount of memory allocated in pools (in bytes)", func(in *Info) value { return num(in.HeapAlloc) }},
	{69, "PoolUsed_bytes", "MGP", tU64, "pool_used_bytes", "Amount of pool memory currently used (in bytes)", func(in *Info) value { return num(in.HeapUsed) }},
	{70, "Start_time_sec", "MDP", tU32, "start_time_seconds", "Start time in seconds", func(in *Info) value {
		if in.Started.IsZero() {
			return value{}
		}
		return num(in.Started.Unix())
	}},
	// Tainted is HAProxy's mask of experimental or unsafe features used,
	// as a hexadecimal string: none.
	{71, "Tainted", "SGP", tStr, "", "Experimental features used", func(*Info) value { return str("0") }},
}

// HeapFigures returns the Go heap's memory obtained from the system and
// not returned, and the part of it holding objects, in bytes
// (runtime/metrics: no stop of the world, unlike ReadMemStats): what
// ProcessFacts.HeapAlloc and HeapUsed hold.
func HeapFigures() (alloc, used int64) {
	samples := []metrics.Sample{
		{Name: "/memory/classes/heap/objects:bytes"},
		{Name: "/memory/classes/heap/unused:bytes"},
		{Name: "/memory/classes/heap/free:bytes"},
	}
	metrics.Read(samples)
	var v [3]int64
	for i, s := range samples {
		if s.Value.Kind() == metrics.KindUint64 {
			v[i] = int64(s.Value.Uint64())
		}
	}
	return v[0] + v[1] + v[2], v[0]
}

// uptime formats d as HAProxy: "0d 0h02m46s".
func uptime(d time.Duration) string {
	s := int64(d / time.Second)
	return fmt.Sprintf("%dd %dh%02dm%02ds", s/86400, s%86400/3600, s%3600/60, s%60)
}

// WriteInfo writes `show info` in format "" (Name: value lines), "typed"
// ("<pos>.<name>.1:<tags>:<type>:<value>"), "typed desc" (typed followed by
// the description) or "json". Without the Runtime API's final empty line.
func WriteInfo(w io.Writer, info Info, format string) error {
	bw := bufio.NewWriter(w)
	var b []byte
	switch format {
	case "", "typed", "typed desc", "desc":
		for i := range infoFields {
			fd := &infoFields[i]
			v := fd.get(&info)
			if !v.set {
				continue
			}
			b = b[:0]
			if format == "" || format == "desc" {
				b = append(b, fd.name...)
				b = append(b, ": "...)
				b = v.appendText(b, fd.typ)
			} else {
				b = strconv.AppendInt(b, int64(fd.pos), 10)
				b = append(b, '.')
				b = append(b, fd.name...)
				b = append(b, ".1:"...)
				b = append(b, fd.tags...)
				b = append(b, ':')
				b = append(b, fd.typ.String()...)
				b = append(b, ':')
				b = v.appendText(b, fd.typ)
				if format == "typed desc" {
					b = append(b, ":\""...)
					b = append(b, fd.desc...)
					b = append(b, '"')
				}
			}
			b = append(b, '\n')
			bw.Write(b)
		}
	case "json":
		b = append(b, '[')
		n := 0
		for i := range infoFields {
			fd := &infoFields[i]
			v := fd.get(&info)
			if !v.set {
				continue
			}
			if n > 0 {
				b = append(b, ',')
			}
			n++
			b = append(b, `{"field":{"pos":`...)
			b = strconv.AppendInt(b, int64(fd.pos), 10)
			b = append(b, `,"name":`...)
			b = appendJSONString(b, fd.name)
			b = append(b, `},"processNum":1,"tags":`...)
			b = appendJSONTags(b, fd.tags)
			b = append(b, `,"value":`...)
			b = appendJSONValue(b, v, fd.typ)
			b = append(b, '}')
		}
		b = append(b, "]\n"...)
		bw.Write(b)
	default:
		return fmt.Errorf("show info: unknown format %q", format)
	}
	return bw.Flush()
}
