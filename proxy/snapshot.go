package proxy

import (
	"fmt"
	"time"

	"github.com/fulcrum-proxy/fulcrum/proxy/h2mux"
	"github.com/fulcrum-proxy/fulcrum/proxy/lb"
)

// CounterValues is a plain copy of Counters at one instant. Times are in
// milliseconds; LastSess is zero when no session was ever assigned.
type CounterValues struct {
	Scur, Smax, Slim, Stot      int64
	ConnEarly                   int64 // frontends: connections that ended before their session (conn_tot is Stot + ConnEarly)
	Bin, Bout                   int64
	Dreq, Ereq, Econ, Eresp     int64
	Dresp                       int64
	Wretr, Wredis               int64
	ReqTot                      int64
	Hrsp1xx, Hrsp2xx, Hrsp3xx   int64
	Hrsp4xx, Hrsp5xx, HrspOther int64
	Lbtot                       int64
	CliAbrt, SrvAbrt            int64
	LastSess                    time.Time
	Rate, RateMax               int64
	ReqRate, ReqRateMax         int64
	Qtime, Ctime, Rtime, Ttime  int64

	// Qcur and Qmax are the queue now and its peak: a server's own queue
	// (pinned requests), a backend's queue of requests not yet assigned
	// to a server (as HAProxy's qcur). QtimeMax is the longest queue
	// time, ms. Zero on frontends.
	Qcur, Qmax, QtimeMax int64

	// Obs holds the connection and timing counters, the histograms and
	// the history (snapshot_obs.go).
	Obs ObsValues
}

// values copies c at now.
func (c *Counters) values(now time.Time) CounterValues {
	v := CounterValues{
		Scur: c.Scur.Load(), Smax: c.Smax.Load(), Stot: c.Stot.Load(), ConnEarly: c.ConnEarly.Load(),
		Bin: c.Bin.Load(), Bout: c.Bout.Load(),
		Dreq: c.Dreq.Load(), Ereq: c.Ereq.Load(), Econ: c.Econ.Load(), Eresp: c.Eresp.Load(),
		Dresp: c.Dresp.Load(),
		Wretr: c.Wretr.Load(), Wredis: c.Wredis.Load(), ReqTot: c.ReqTot.Load(),
		HrspOther: c.Hrsp[0].Load(), Hrsp1xx: c.Hrsp[1].Load(), Hrsp2xx: c.Hrsp[2].Load(),
		Hrsp3xx: c.Hrsp[3].Load(), Hrsp4xx: c.Hrsp[4].Load(), Hrsp5xx: c.Hrsp[5].Load(),
		Lbtot: c.Lbtot.Load(), CliAbrt: c.CliAbrt.Load(), SrvAbrt: c.SrvAbrt.Load(),
		Rate: c.SessRate.Rate(now), RateMax: c.rateMax.Load(),
		ReqRate: c.ReqRate.Rate(now), ReqRateMax: c.reqRateMax.Load(),
		Qtime: c.Qtime.Avg(), Ctime: c.Ctime.Avg(), Rtime: c.Rtime.Avg(), Ttime: c.Ttime.Avg(),
		Obs: c.obsValues(),
	}
	if ns := c.lastSess.Load(); ns != 0 {
		v.LastSess = time.Unix(0, ns)
	}
	return v
}

// Snapshot is every frontend, backend and server counter and state at one
// instant, taken without stopping the data path (atomic loads only). It is
// the one source that stats/, runtime/ and the CLI render.
type Snapshot struct {
	Taken     time.Time
	Started   time.Time
	Frontends []FrontendSnapshot
	Backends  []BackendSnapshot

	MaxConn  int  // global maxconn, 0 = unlimited
	Stopping bool // the proxy is stopping (frontends print STOP)
	// IdlePct is the process's idle time, percent, HAProxy's Idle_pct
	// (idle.go); -1 when unknown.
	IdlePct int
	// BytesOutRate is the bytes sent to clients per second, over the
	// time since the previous snapshot at least a second old (HAProxy's
	// BytesOutRate; idle.go).
	BytesOutRate int64
	// DroppedLogs is the log lines the proxy's log targets lost (a full
	// queue, a send that failed), HAProxy's DroppedLogs.
	DroppedLogs int64
	// ConnRateMax is the highest rate of client connections over all
	// frontends, per second, since the start (HAProxy's MaxConnRate);
	// Listeners the frontends' listening sockets (part of its Listeners).
	ConnRateMax int64
	Listeners   int

	// SSL is the process's TLS figures and Certs the binds' certificates
	// (edge.go).
	SSL   SSLSnapshot
	Certs []CertSnapshot
}

// FrontendSnapshot is one frontend's state.
type FrontendSnapshot struct {
	Name    string
	ID      int
	Mode    string
	MaxConn int
	// DeniedConn is the connections closed by a tcp_request connection
	// reject rule (HAProxy's dcon).
	DeniedConn int64
	// ProxyErrors counts connections closed for a missing, malformed or
	// late PROXY header.
	ProxyErrors int64
	// SSL are the TLS handshakes of its clients.
	SSL SSLValues
	CounterValues
	// H2 are the HTTP/2 counters of its clients.
	H2 H2Values
	// H1 are the h1 counters of its HTTP/1 clients.
	H1 H1Values
	// State is OPEN, PAUSED (disable frontend) or STOP (shutdown
	// frontend): Frontend.State.
	State string
}

// H2Values is a plain copy of h2mux.Counters (HAProxy's h2 statistics
// module), for a frontend (frames from clients) or a backend (frames
// from servers).
type H2Values struct {
	HeadersRcvd, DataRcvd, SettingsRcvd, RstStreamRcvd, GoawayRcvd int64
	ConnProtoErr, StrmProtoErr, RstStreamResp, GoawayResp          int64
	OpenConns, OpenStreams, TotalConns, TotalStreams               int64
	// Connections refused by the protections (fulcrum's).
	RapidReset, HeaderFlood, ControlFlood int64
}

func h2Values(c *h2mux.Counters) H2Values {
	return H2Values{
		HeadersRcvd: c.HeadersRcvd.Load(), DataRcvd: c.DataRcvd.Load(), SettingsRcvd: c.SettingsRcvd.Load(),
		RstStreamRcvd: c.RstStreamRcvd.Load(), GoawayRcvd: c.GoawayRcvd.Load(),
		ConnProtoErr: c.ConnProtoErr.Load(), StrmProtoErr: c.StrmProtoErr.Load(),
		RstStreamResp: c.RstStreamResp.Load(), GoawayResp: c.GoawayResp.Load(),
		OpenConns: c.OpenConns.Load(), OpenStreams: c.OpenStreams.Load(),
		TotalConns: c.TotalConns.Load(), TotalStreams: c.TotalStreams.Load(),
		RapidReset: c.RapidReset.Load(), HeaderFlood: c.HeaderFlood.Load(), ControlFlood: c.ControlFlood.Load(),
	}
}

// BackendSnapshot is one backend's state and its servers'.
type BackendSnapshot struct {
	Name     string
	ID       int
	Mode     string
	Balance  string
	ActiveUp int // active servers UP and not in MAINT
	BackupUp int // backup servers likewise
	Servers  []ServerSnapshot
	CounterValues
	// SSL are the TLS handshakes with its servers (ssl servers).
	SSL SSLValues
	// H2 are the HTTP/2 counters of its connections to servers.
	H2 H2Values
	// H1 are the h1 counters of its connections to HTTP/1 servers.
	H1 H1Values

	// Act and Bck are the usable active and backup servers (HAProxy's
	// srv_act and srv_bck: UP, READY, weight above 0), the act and bck
	// columns. Weight and UserWeight are the weight and uweight columns:
	// the effective weights (rounded up once, over the sum) and the user
	// weights of the servers in use, which are the usable active servers,
	// else the first usable backup only (without allbackups), else every
	// usable backup. The backend decides them with the usable set
	// (Backend.rebuildLocked).
	Act, Bck           int
	Weight, UserWeight int

	// FullConn is HAProxy's fullconn (the backend's slim): the configured
	// value, else 10% of the maxconn of the frontends that route to it
	// (default_backend, use_backend), at least 1.
	FullConn int
	// TimeoutQueue is timeout queue, else timeout connect (0: none).
	TimeoutQueue time.Duration
}

// ServerSnapshot is one server's state.
type ServerSnapshot struct {
	Name            string
	ID              int
	Addr            string
	Admin           AdminState
	Op              OpState
	InitialWeight   int
	UserWeight      int
	EffectiveWeight int // Weight while the server is usable, else 0
	Backup          bool
	LastChange      time.Time
	CounterValues
	// SSL are the TLS handshakes with its servers (ssl servers).
	SSL SSLValues

	// Dynamic says the server is not in the configuration file (added at
	// runtime); ForcedID that its id was given by an operator (`id`,
	// HAProxy's srv_f_forced_id). Server is the server itself, for the
	// commands that act on what they print; it may be deleted since.
	Dynamic, ForcedID bool
	Server            *Server

	// Weight is the weight column: the effective weight (the user weight,
	// lowered by slowstart while the server ramps up), rounded up, whatever
	// the server's state, as HAProxy keeps it for DOWN, DRAIN and MAINT
	// servers. Throttle is the throttle column, the percentage of its
	// weight a ramping server runs at, -1 (empty) when it does not ramp,
	// drains or has weight 0. Usable says whether it takes new,
	// non-persistent traffic (UP, READY, weight above 0).
	Weight   int
	Throttle int
	Usable   bool

	MaxConn  int // effective maxconn (dynamic with minconn), 0 = unlimited
	MaxQueue int // 0 = unlimited
	// ConfMaxConn is the maxconn as configured or set at runtime, before
	// minconn/fullconn and slowstart lower it.
	ConfMaxConn int

	// Check is the health-check state, nil while the server has no health
	// check enabled (not configured, or `disable health`): stats print
	// "no check" and empty check columns.
	Check *CheckSnapshot

	// Agent is the agent-check state, nil while the server has no agent
	// check enabled (not configured, or `disable agent`).
	Agent *AgentSnapshot

	// HealthState is what `show servers state` prints for the checks,
	// filled whether or not checks are enabled.
	HealthState ServerCheckState

	// OperatorAdmin is the admin state set by the configuration or
	// operators; Admin is MAINT also while DNS resolution holds the server
	// (Resolution.Maint).
	OperatorAdmin AdminState
	// Resolution is the server's DNS resolution, nil for a server whose
	// address does not come from DNS at runtime (resolution.go).
	Resolution *ResolutionSnapshot
}

// ServerCheckState is the check part of a `show servers state` line
// (runtime-api.md 4.5), in HAProxy's numeric encodings.
type ServerCheckState struct {
	CheckStatus int // srv_check_status: HAProxy's HCHK_STATUS_* number (1 = INI)
	CheckResult int // srv_check_result: 0 unknown, 1 neutral, 2 failed, 3 passed, 4 cond. passed
	CheckHealth int // srv_check_health: the rise/fall counter (rise without checks, 0 in MAINT)
	CheckState  int // srv_check_state: 0x01 running, 0x02 configured, 0x04 enabled, 0x08 paused
	AgentState  int // srv_agent_state: the same bits, plus 0x10 (agent)
	CheckPort   int // srv_check_port: 0 = the server's port
	AgentAddr   string
	AgentPort   int // 0 = no agent
}

// CheckSnapshot is a server's health-check state as `show stat` prints it.
type CheckSnapshot struct {
	Status   string // result code: L4OK, L4CON, L7STS, ... ("" = none yet)
	Desc     string // the code's text: "Layer7 check passed"
	Info     string // last_chk: reason phrase or error text
	Code     int    // L7 status of the last check, 0 = none
	Duration int64  // ms, -1 = unknown
	Running  bool   // a check is in progress ("* " prefix)

	Rise, Fall, Health int   // health in [0, rise+fall-1]; up when >= rise
	Failed             int64 // failed checks (chkfail)
	Downs              int64 // UP to DOWN transitions (chkdown)
	Downtime           int64 // seconds spent DOWN

	// Paused is true while the server is in MAINT: checks do not run and
	// HAProxy prints check_status, check_code, check_duration, check_desc
	// and check_health empty (Status and Desc are "" then).
	Paused bool
	// Observe is true when the server has `observe`: hanafail is printed.
	Observe  bool
	HanaFail int64 // error_limit reached by observe (hanafail)
}

// AgentSnapshot is a server's agent-check state as `show stat` prints it
// (agent_status, agent_code, agent_duration, agent_desc, last_agt,
// agent_rise, agent_fall, agent_health).
type AgentSnapshot struct {
	Status   string // L7OK (up), L7STS (down/stopped/fail), CHECKED, L4CON, L4TOUT, ...; "" = none yet
	Desc     string // the code's text: "Layer7 check passed", "No status change"
	Info     string // last_agt: "via agent : up", "agent reports an error : hello"
	Code     int    // agent_code: 0 after an up/down reply, -1 = empty
	Duration int64  // ms, -1 = unknown
	Running  bool   // a probe is in progress ("* " prefix)

	Rise, Fall, Health int // 1, 1, and 1 (up) or 0 (down)

	// BadReplies counts the agent's replies that could not be parsed
	// (unknown words, or no end of line); they change nothing. fulcrum's
	// own: HAProxy only shows the last one in last_agt.
	BadReplies int64
}

// Status returns the server's status exactly as HAProxy's `show stat`
// prints it (stats-csv.md section 3): "MAINT (resolution)" while DNS gives
// it no address (whatever else holds it, as HAProxy); MAINT; UP, "UP 1/3",
// "DRAIN (agent)", "DRAIN 2/3", DRAIN or "no check" while running; NOLB or
// "NOLB 1/3" while soft-stopping; "DOWN (agent)", "DOWN 1/2" or DOWN while
// stopped. x/y is health-rise+1 / fall going down, health / rise going up.
func (s *ServerSnapshot) Status() string {
	ck, ag := s.Check, s.Agent
	if s.Resolution != nil && s.Resolution.Maint {
		return "MAINT (resolution)" // whatever else holds it (stats.c)
	}
	if s.Admin == AdminMaint {
		return "MAINT"
	}
	goingDown := ck != nil && ck.Health < ck.Rise+ck.Fall-1
	switch s.Op {
	case OpUp:
		switch {
		case s.Admin == AdminDrain && ag != nil:
			return "DRAIN (agent)"
		case s.Admin == AdminDrain && goingDown:
			return fmt.Sprintf("DRAIN %d/%d", ck.Health-ck.Rise+1, ck.Fall)
		case s.Admin == AdminDrain:
			return "DRAIN"
		case goingDown:
			return fmt.Sprintf("UP %d/%d", ck.Health-ck.Rise+1, ck.Fall)
		case ck == nil:
			return "no check"
		}
		return "UP"
	case OpStopping:
		if goingDown {
			return fmt.Sprintf("NOLB %d/%d", ck.Health-ck.Rise+1, ck.Fall)
		}
		return "NOLB"
	}
	switch {
	case ag != nil && ag.Health == 0:
		return "DOWN (agent)"
	case ck != nil && ck.Health == 0:
		return "DOWN"
	case ck != nil:
		return fmt.Sprintf("DOWN %d/%d", ck.Health, ck.Rise)
	}
	return "DOWN"
}

// Snapshot takes a snapshot of every counter and state.
func (p *Proxy) Snapshot() *Snapshot {
	now := time.Now()
	snap := &Snapshot{Taken: now, Started: p.started, MaxConn: p.MaxConn(), Stopping: p.stopping.Load(), IdlePct: p.IdlePct()}
	p.edgeSnapshot(snap, now) // edge.go
	var bout int64
	for _, fe := range p.Frontends {
		fs := FrontendSnapshot{Name: fe.Name, ID: fe.ID, Mode: string(fe.Conf.Mode), MaxConn: fe.MaxConn(),
			DeniedConn: fe.DeniedConn.Load(), CounterValues: fe.Counters.values(now),
			ProxyErrors: fe.ProxyErrors.Load(), SSL: fe.SSL.Values(), H2: h2Values(&fe.H2), State: fe.State(),
			H1: h1Values(&fe.H1, fe, 0)}
		fs.Slim = int64(fs.MaxConn)
		snap.Frontends = append(snap.Frontends, fs)
		snap.Listeners += len(fe.Addrs())
		bout += fs.Bout
	}
	snap.BytesOutRate = p.obs.bytesOut.perSecond(now, bout)
	snap.ConnRateMax = p.obs.connRateMax.Load()
	for _, s := range p.obs.senders {
		snap.DroppedLogs += s.Dropped() + s.Errors()
	}
	for _, b := range p.Backends {
		bs := BackendSnapshot{Name: b.Name, ID: b.ID, Mode: string(b.Conf.Mode), Balance: b.Conf.Balance,
			CounterValues: b.Counters.values(now), H2: h2Values(&b.H2), SSL: b.SSL.Values(),
			H1: h1Values(&b.H1, nil, b.idleH1())}
		bs.FullConn = b.FullConn()
		bs.Qcur, bs.Qmax = b.queue.Len(-1), b.queue.Max(-1)
		bs.QtimeMax = b.Counters.qtimeMax.Load()
		bs.TimeoutQueue = b.TimeoutQueue()
		bs.Obs.backend(b, now) // last change, downtime (snapshot_obs.go)
		b.mu.Lock()            // what rebuildLocked decided is written under it
		bs.Act, bs.Bck = b.view.act, b.view.bck
		bs.Weight, bs.UserWeight = shownWeight(b.view.eweight), b.view.uweight
		list := b.Servers() // one state of the servers for both loops
		for _, s := range list {
			ss := ServerSnapshot{
				Name: s.Name, ID: s.ID, Addr: s.Addr(), Admin: s.Admin(), Op: s.Op(),
				InitialWeight: s.InitialWeight, UserWeight: int(s.UserWeight.Load()),
				Weight: shownWeight(s.bal.eweight), Throttle: s.bal.throttle, Usable: s.bal.usable,
				Backup: s.Conf.Backup, LastChange: s.LastChange(), CounterValues: s.Counters.values(now),
				Dynamic: s.dynamic, ForcedID: s.forcedID, Server: s, SSL: s.SSL.Values(),
			}
			if ss.Usable {
				ss.EffectiveWeight = ss.Weight
			}
			ss.Slim = int64(s.EffectiveMaxConn())
			ss.MaxConn, ss.MaxQueue = s.EffectiveMaxConn(), s.Conf.MaxQueue
			ss.ConfMaxConn = s.MaxConn()
			ss.Qcur, ss.Qmax = s.lb.Queued.Load(), b.queue.Max(s.lb.Index)
			ss.QtimeMax = s.Counters.qtimeMax.Load()
			ss.Obs.server(s) // idle connections (snapshot_obs.go)
			ss.OperatorAdmin, ss.Resolution = s.OperatorAdmin(), s.resolutionSnapshot()
			if ss.Resolution != nil && ss.Resolution.NoAddr {
				ss.Addr = "" // shown without one; it keeps the last to dial
			}
			if s.Op() == OpUp && s.Admin() != AdminMaint {
				if ss.Backup {
					bs.BackupUp++
				} else {
					bs.ActiveUp++
				}
			}
			bs.Servers = append(bs.Servers, ss)
		}
		b.mu.Unlock()
		// Check state is read outside the backend lock: proxy/check holds
		// its own lock while it changes a server's state in the backend.
		for i, s := range list {
			ss := &bs.Servers[i]
			ss.HealthState.CheckStatus = 1 // INI, HAProxy's value for servers without checks
			ss.HealthState.CheckHealth = 2 // rise's default
			if r := s.CheckReporter(); r != nil {
				r.ReportChecks(now, ss)
			}
		}
		snap.Backends = append(snap.Backends, bs)
	}
	return snap
}

// shownWeight is an effective weight in lb units as stats print it, in
// configured units rounded up (HAProxy's (eweight x wmult + wdiv - 1) /
// wdiv).
func shownWeight(eweight int) int {
	return (eweight + lb.WeightScale - 1) / lb.WeightScale
}
