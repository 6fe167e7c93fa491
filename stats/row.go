package stats

import (
	"errors"
	"time"

	"github.com/fulcrum-proxy/fulcrum/proxy"
)

// Kind is the kind of a `show stat` row. The values are the bits of the
// <type> argument of `show stat {proxy|-1} {type|-1} {sid|-1}`.
type Kind uint8

// Row kinds (HAProxy has a fourth, the listener, that fulcrum does not print).
const (
	KindFrontend Kind = 1
	KindBackend  Kind = 2
	KindServer   Kind = 4
)

// Short forms for the column table.
const (
	kF   = KindFrontend
	kB   = KindBackend
	kS   = KindServer
	kFB  = kF | kB
	kBS  = kB | kS
	kFBS = kF | kB | kS
)

// typeCode is the `type` column: 0 frontend, 1 backend, 2 server.
func (k Kind) typeCode() int64 {
	switch k {
	case KindBackend:
		return 1
	case KindServer:
		return 2
	}
	return 0
}

// objType is the JSON objType.
func (k Kind) objType() string {
	switch k {
	case KindBackend:
		return "Backend"
	case KindServer:
		return "Server"
	}
	return "Frontend"
}

// letter starts a typed line: F, B or S.
func (k Kind) letter() byte { return "FBS"[k.typeCode()] }

// Filter selects the rows of `show stat {proxy|-1} {type|-1} {sid|-1}
// [up|no-maint]` and how some columns print. AllRows is the filter that
// selects everything. Build it with keyed fields: more may be added.
type Filter struct {
	// Proxy selects the frontends and backends of that name; "" = all.
	Proxy string
	// ProxyID selects the proxy with that numeric id (iid); -1 = all.
	ProxyID int
	// Types is a bitmask: 1 frontend, 2 backend, 4 server; -1 = all.
	Types int
	// ServerID selects the server with that id (sid) in server rows; -1 = all.
	ServerID int

	// Up hides servers that are not up (DOWN or MAINT) and NoMaint those in
	// maintenance; either adds "(up/total)" to the BACKEND status, as
	// HAProxy's `up` and `no-maint` options.
	Up, NoMaint bool
	// HideLegends leaves addr and algo empty, as HAProxy does on the HTTP
	// page and at user level on the CLI.
	HideLegends bool
}

// AllRows returns the filter of a bare `show stat`: every row, every column.
func AllRows() Filter { return Filter{ProxyID: -1, Types: -1, ServerID: -1} }

// ErrNoSuchProxy is returned, before anything is written, when Filter.Proxy
// names no frontend or backend. The Runtime API prints it as HAProxy's
// "No such proxy.".
var ErrNoSuchProxy = errors.New("no such proxy")

// row is one line of `show stat`: a frontend, a backend or a server, with
// what its columns' getters need.
type row struct {
	kind   Kind
	snap   *proxy.Snapshot
	fe     *proxy.FrontendSnapshot
	be     *proxy.BackendSnapshot
	sv     *proxy.ServerSnapshot // server rows only
	c      *proxy.CounterValues
	iid    int
	sid    int
	pxname string
	svname string
	mode   string
	agg    backendAgg // backend rows only
	f      *Filter

	// timings are the row's latency percentiles, read once per row by
	// the columns that print them (timing).
	timings     [proxy.NumTimings]proxy.HistSummary
	timingsRead bool
}

// timing returns the summary of the row's histogram of kind k (zero when
// it has no values).
func (r *row) timing(k int) *proxy.HistSummary {
	if !r.timingsRead {
		r.timingsRead = true
		if t := r.c.Obs.Timings; t != nil {
			for i := range t {
				r.timings[i] = t[i].Summary()
			}
		}
	}
	return &r.timings[k]
}

// backendAgg is what a BACKEND row shows of its servers.
type backendAgg struct {
	act, bck        int // usable active / backup servers
	weight, uweight int // effective / user weights of the servers in use
	up, total       int // servers not DOWN and not in MAINT / all, for `up`
}

// aggregate fills the BACKEND row's figures: usable servers and weights as
// the backend decided them (proxy.BackendSnapshot: HAProxy's srv_act,
// srv_bck and tot_weight, a single backup in use without allbackups), and
// the up/total count of the up and no-maint options.
func aggregate(b *proxy.BackendSnapshot) backendAgg {
	a := backendAgg{act: b.Act, bck: b.Bck, weight: b.Weight, uweight: b.UserWeight}
	for i := range b.Servers {
		s := &b.Servers[i]
		a.total++
		if s.Op != proxy.OpDown && s.Admin != proxy.AdminMaint {
			a.up++
		}
	}
	return a
}

// hidden reports whether the up/no-maint options hide s.
func (f *Filter) hidden(s *proxy.ServerSnapshot) bool {
	if f.NoMaint && s.Admin == proxy.AdminMaint {
		return true
	}
	return f.Up && (s.Admin == proxy.AdminMaint || s.Op == proxy.OpDown)
}

// wants reports whether rows of kind k are selected.
func (f *Filter) wants(k Kind) bool { return f.Types < 0 || f.Types&int(k) != 0 }

// proxyMatch reports whether the proxy name/iid is selected.
func (f *Filter) proxyMatch(name string, iid int) bool {
	if f.Proxy != "" && f.Proxy != name {
		return false
	}
	return f.ProxyID < 0 || f.ProxyID == iid
}

// eachRow calls fn for every row that f selects, in HAProxy's order:
// proxies in declaration order (their ids), a frontend as its FRONTEND
// row, a backend as its servers followed by its BACKEND row.
// It returns ErrNoSuchProxy when f.Proxy names nothing, before any call.
func eachRow(snap *proxy.Snapshot, f *Filter, fn func(r *row) error) error {
	if f.Proxy != "" && !hasProxy(snap, f.Proxy) {
		return ErrNoSuchProxy
	}
	r := row{snap: snap, f: f}
	fi, bi := 0, 0
	for fi < len(snap.Frontends) || bi < len(snap.Backends) {
		// Merge the two lists by proxy id (each is already in id order).
		if fi < len(snap.Frontends) && (bi == len(snap.Backends) || snap.Frontends[fi].ID < snap.Backends[bi].ID) {
			fe := &snap.Frontends[fi]
			fi++
			if !f.wants(kF) || !f.proxyMatch(fe.Name, fe.ID) {
				continue
			}
			r = row{kind: kF, snap: snap, f: f, fe: fe, c: &fe.CounterValues,
				iid: fe.ID, pxname: fe.Name, svname: "FRONTEND", mode: fe.Mode}
			if err := fn(&r); err != nil {
				return err
			}
			continue
		}
		be := &snap.Backends[bi]
		bi++
		if !f.proxyMatch(be.Name, be.ID) {
			continue
		}
		if f.wants(kS) {
			for j := range be.Servers {
				sv := &be.Servers[j]
				if (f.ServerID >= 0 && sv.ID != f.ServerID) || f.hidden(sv) {
					continue
				}
				r = row{kind: kS, snap: snap, f: f, be: be, sv: sv, c: &sv.CounterValues,
					iid: be.ID, sid: sv.ID, pxname: be.Name, svname: sv.Name, mode: be.Mode}
				if err := fn(&r); err != nil {
					return err
				}
			}
		}
		if f.wants(kB) {
			r = row{kind: kB, snap: snap, f: f, be: be, c: &be.CounterValues,
				iid: be.ID, pxname: be.Name, svname: "BACKEND", mode: be.Mode, agg: aggregate(be)}
			if err := fn(&r); err != nil {
				return err
			}
		}
	}
	return nil
}

// hasProxy reports whether a frontend or backend is named name.
func hasProxy(snap *proxy.Snapshot, name string) bool {
	for i := range snap.Frontends {
		if snap.Frontends[i].Name == name {
			return true
		}
	}
	for i := range snap.Backends {
		if snap.Backends[i].Name == name {
			return true
		}
	}
	return false
}

// secondsSince is an age column (lastchg, lastsess) at the snapshot's time.
func (r *row) secondsSince(t time.Time) int64 {
	d := r.snap.Taken.Sub(t)
	if d < 0 {
		return 0
	}
	return int64(d / time.Second)
}
