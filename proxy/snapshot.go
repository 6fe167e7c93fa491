package proxy

import "time"

// CounterValues is a plain copy of Counters at one instant. Times are in
// milliseconds; LastSess is zero when no session was ever assigned.
type CounterValues struct {
	Scur, Smax, Slim, Stot      int64
	Bin, Bout                   int64
	Dreq, Ereq, Econ, Eresp     int64
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
}

// values copies c at now.
func (c *Counters) values(now time.Time) CounterValues {
	v := CounterValues{
		Scur: c.Scur.Load(), Smax: c.Smax.Load(), Stot: c.Stot.Load(),
		Bin: c.Bin.Load(), Bout: c.Bout.Load(),
		Dreq: c.Dreq.Load(), Ereq: c.Ereq.Load(), Econ: c.Econ.Load(), Eresp: c.Eresp.Load(),
		Wretr: c.Wretr.Load(), Wredis: c.Wredis.Load(), ReqTot: c.ReqTot.Load(),
		HrspOther: c.Hrsp[0].Load(), Hrsp1xx: c.Hrsp[1].Load(), Hrsp2xx: c.Hrsp[2].Load(),
		Hrsp3xx: c.Hrsp[3].Load(), Hrsp4xx: c.Hrsp[4].Load(), Hrsp5xx: c.Hrsp[5].Load(),
		Lbtot: c.Lbtot.Load(), CliAbrt: c.CliAbrt.Load(), SrvAbrt: c.SrvAbrt.Load(),
		Rate: c.SessRate.Rate(now), RateMax: c.rateMax.Load(),
		ReqRate: c.ReqRate.Rate(now), ReqRateMax: c.reqRateMax.Load(),
		Qtime: c.Qtime.Avg(), Ctime: c.Ctime.Avg(), Rtime: c.Rtime.Avg(), Ttime: c.Ttime.Avg(),
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
}

// FrontendSnapshot is one frontend's state.
type FrontendSnapshot struct {
	Name    string
	ID      int
	Mode    string
	MaxConn int
	CounterValues
}

// BackendSnapshot is one backend's state and its servers'.
type BackendSnapshot struct {
	Name     string
	ID       int
	Mode     string
	Balance  string
	ActiveUp int // active servers UP and not in MAINT (act)
	BackupUp int // backup servers likewise (bck)
	Weight   int // sum of the effective weights of usable servers
	Servers  []ServerSnapshot
	CounterValues

	// FullConn is HAProxy's fullconn (the backend's slim): the configured
	// value, else 10% of the maxconn of the frontends whose default_backend
	// it is, at least 1.
	FullConn int
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
	EffectiveWeight int
	Backup          bool
	LastChange      time.Time
	CounterValues

	MaxConn  int // 0 = unlimited
	MaxQueue int // 0 = unlimited

	// Check is the health-check state, nil while the server has no check
	// (every server until health checks exist).
	Check *CheckSnapshot
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
}

// Status returns the server's status as `show stat` prints it: MAINT,
// DRAIN, UP or DOWN (see the truth table on Server).
func (s *ServerSnapshot) Status() string {
	switch {
	case s.Admin == AdminMaint:
		return "MAINT"
	case s.Op == OpDown:
		return "DOWN"
	case s.Admin == AdminDrain:
		return "DRAIN"
	}
	return "UP"
}

// Snapshot takes a snapshot of every counter and state.
func (p *Proxy) Snapshot() *Snapshot {
	now := time.Now()
	snap := &Snapshot{Taken: now, Started: p.started, MaxConn: p.Conf.Global.MaxConn, Stopping: p.stopping.Load()}
	// fullconn's default: 10% of the maxconn of the frontends that reach
	// the backend (HAProxy counts default_backend and static use_backend).
	reach := map[string]int{}
	for _, fe := range p.Frontends {
		mc := fe.Conf.MaxConn
		if mc == 0 {
			mc = p.Conf.Global.MaxConn
		}
		if fe.Conf.DefaultBackend != "" {
			reach[fe.Conf.DefaultBackend] += mc
		}
	}
	for _, fe := range p.Frontends {
		fs := FrontendSnapshot{Name: fe.Name, ID: fe.ID, Mode: string(fe.Conf.Mode), MaxConn: fe.Conf.MaxConn,
			CounterValues: fe.Counters.values(now)}
		fs.Slim = int64(fe.Conf.MaxConn)
		snap.Frontends = append(snap.Frontends, fs)
	}
	for _, b := range p.Backends {
		bs := BackendSnapshot{Name: b.Name, ID: b.ID, Mode: string(b.Conf.Mode), Balance: b.Conf.Balance,
			CounterValues: b.Counters.values(now)}
		bs.FullConn = b.Conf.FullConn
		if bs.FullConn == 0 {
			bs.FullConn = max(1, reach[b.Name]/10)
		}
		b.mu.Lock() // effective weights are written under it
		for _, s := range b.Servers {
			ss := ServerSnapshot{
				Name: s.Name, ID: s.ID, Addr: s.Addr(), Admin: s.Admin(), Op: s.Op(),
				InitialWeight: s.InitialWeight, UserWeight: int(s.UserWeight.Load()),
				EffectiveWeight: s.lb.EffectiveWeight, Backup: s.Conf.Backup,
				LastChange: s.LastChange(), CounterValues: s.Counters.values(now),
			}
			ss.Slim = int64(s.Conf.MaxConn)
			ss.MaxConn, ss.MaxQueue = s.Conf.MaxConn, s.Conf.MaxQueue
			if s.Op() == OpUp && s.Admin() != AdminMaint {
				if ss.Backup {
					bs.BackupUp++
				} else {
					bs.ActiveUp++
				}
			}
			bs.Weight += ss.EffectiveWeight
			bs.Servers = append(bs.Servers, ss)
		}
		b.mu.Unlock()
		snap.Backends = append(snap.Backends, bs)
	}
	return snap
}
