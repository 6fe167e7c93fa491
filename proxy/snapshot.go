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
	snap := &Snapshot{Taken: now, Started: p.started}
	for _, fe := range p.Frontends {
		fs := FrontendSnapshot{Name: fe.Name, ID: fe.ID, Mode: string(fe.Conf.Mode), MaxConn: fe.Conf.MaxConn,
			CounterValues: fe.Counters.values(now)}
		fs.Slim = int64(fe.Conf.MaxConn)
		snap.Frontends = append(snap.Frontends, fs)
	}
	for _, b := range p.Backends {
		bs := BackendSnapshot{Name: b.Name, ID: b.ID, Mode: string(b.Conf.Mode), Balance: b.Conf.Balance,
			CounterValues: b.Counters.values(now)}
		b.mu.Lock() // effective weights are written under it
		for _, s := range b.Servers {
			ss := ServerSnapshot{
				Name: s.Name, ID: s.ID, Addr: s.Addr(), Admin: s.Admin(), Op: s.Op(),
				InitialWeight: s.InitialWeight, UserWeight: int(s.UserWeight.Load()),
				EffectiveWeight: s.lb.EffectiveWeight, Backup: s.Conf.Backup,
				LastChange: s.LastChange(), CounterValues: s.Counters.values(now),
			}
			ss.Slim = int64(s.Conf.MaxConn)
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
