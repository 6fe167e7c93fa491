package proxy

// DNS resolution hooks: what proxy/resolve changes on servers whose address
// comes from DNS (a server with resolvers, a server_template slot), and the
// name server counters it keeps. Three operations, as HAProxy's resolvers
// use them on a server (server.c srv_update_addr, srv_set_admin_flag with
// SRV_ADMF_RMAINT, server_parse_weight_change_request):
//
//   - the address: new connections use it at once; connections in flight
//     finish where they are, and are not pooled again afterwards. A server
//     that loses its address (MAINT (resolution)) keeps the last one to
//     dial: a request picked just before connects there rather than
//     failing; show servers state and show stat show no address;
//   - maintenance by resolution, "MAINT (resolution)" in show stat, kept
//     apart from the admin state operators set: an operator's MAINT or
//     DRAIN stays when DNS brings a server back, and a READY set by an
//     operator does not bring back a server DNS has no address for;
//   - the user weight, from an SRV record's weight.
//
// None of them touches the pick: Backend.ApplyDNS changes state under the
// backend lock and rebuilds the usable set once, as any state change does.

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"sync/atomic"

	"github.com/fulcrum-proxy/fulcrum/conf"
	"github.com/fulcrum-proxy/fulcrum/proxy/syslog"
)

// DNSInfo is what DNS resolution says of a server, in the terms of `show
// servers state` (srv_fqdn, srv_port, srvrecord, and the 0x40 admin bit).
// A server's DNSInfo is replaced whole, never changed in place.
type DNSInfo struct {
	// FQDN is the host name the server resolves now: its configured name,
	// or the target of the SRV record filling a template slot; "" for an
	// empty slot.
	FQDN string
	// Port is the server's port; for a template slot the record's, 0 while
	// the slot is empty.
	Port int
	// SRV is the SRV name the server's template resolves, "" for a host
	// name.
	SRV string
	// FQDNSet is HAProxy's SRV_ADMF_HMAINT: set once an SRV record gave
	// the server its name and, as in HAProxy 2.6, never cleared.
	FQDNSet bool
	// NoAddr is set while DNS gives the server no address: it is shown
	// without one ("-"), though it keeps the last one to dial.
	NoAddr bool
	// Stopped is set once the server entered MAINT (resolution), never
	// cleared: HAProxy resets the check counter of a server entering
	// maintenance, and without checks nothing raises it again
	// (srv_check_health 0 in show servers state). ApplyDNS keeps it.
	Stopped bool
}

// DNSUpdate is one server's new state from a DNS answer (Backend.ApplyDNS).
type DNSUpdate struct {
	Server *Server
	// Addr is the server's new address; the zero value means none (an
	// empty slot, or a name that no longer resolves).
	Addr netip.AddrPort
	Info DNSInfo
	// Maint is maintenance by resolution (SRV_ADMF_RMAINT).
	Maint bool
	// Weight is a user weight from an SRV record, -1 = unchanged. A static
	// algorithm takes only 0 and the initial weight (as SetWeight).
	Weight int
	// Reason says why the server enters maintenance or changes address,
	// for the log: "entry removed from SRV record", "DNS NX status",
	// "ns1/dns" (the name server that answered)...
	Reason string
}

// ResolutionSnapshot is a server's DNS resolution in a snapshot.
type ResolutionSnapshot struct {
	DNSInfo
	// Maint is "MAINT (resolution)": the server waits for DNS to give it
	// an address (SRV_ADMF_RMAINT).
	Maint bool
}

// initDNS marks a server whose address comes from DNS: it has no address
// and stays in maintenance by resolution until proxy/resolve gives it one
// (init_addr at start, then the answers). newBackend calls it.
func (s *Server) initDNS() {
	sc := s.Conf
	if sc.Resolvers == "" || sc.FQDN == "" {
		return
	}
	info := &DNSInfo{FQDN: sc.FQDN, Port: sc.Port, NoAddr: true}
	if sc.IsSRV() {
		info = &DNSInfo{SRV: sc.FQDN, NoAddr: true}
	}
	s.dns.Store(info)
	none := ""
	s.addr.Store(&none)
	s.rmaint.Store(true)
}

// DNS returns what DNS resolution says of s, nil for a server whose
// address does not come from DNS at runtime.
func (s *Server) DNS() *DNSInfo { return s.dns.Load() }

// ResolutionMaint reports whether s is in maintenance because DNS gave it
// no address ("MAINT (resolution)").
func (s *Server) ResolutionMaint() bool { return s.rmaint.Load() }

// resolutionSnapshot returns s's resolution for a snapshot, nil when its
// address does not come from DNS.
func (s *Server) resolutionSnapshot() *ResolutionSnapshot {
	info := s.dns.Load()
	if info == nil {
		return nil
	}
	return &ResolutionSnapshot{DNSInfo: *info, Maint: s.rmaint.Load()}
}

// setAddrLocked changes the address new connections to s use and returns
// the previous one. Idle pooled connections are closed, and connections
// in flight are not pooled again when they finish (http1.Upstream.Moved):
// the next request connects to the new address. The backend's mu is held.
func (s *Server) setAddrLocked(addr string) (old string) {
	a := addr
	old = *s.addr.Swap(&a)
	if old == addr {
		return old
	}
	ap, _ := netip.ParseAddrPort(addr) // the zero value for none: every connection is stale
	s.up.Moved.Store(&ap)
	s.up.Pool.CloseAll()
	if s.up.H2 != nil {
		s.up.H2.CloseAll()
	}
	return old
}

// ApplyDNS applies the new state of some of b's servers from one DNS
// answer, in one step: addresses, maintenance by resolution and SRV
// weights change under b's lock, and the usable set is rebuilt once. A
// server leaving maintenance starts its slowstart, as one leaving MAINT,
// and one entering it hands its queue to the others (redispatch), as
// SetAdmin; one losing its address keeps the last to dial (see the file
// comment).
// It logs each address change and each maintenance change, in HAProxy's
// words, and returns how many servers got an address.
//
// Called by proxy/resolve, never on the request path. Lock order: the
// caller's own locks, then b.mu.
func (b *Backend) ApplyDNS(updates []DNSUpdate) (moved int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.clock.Now()
	rebuild := false
	var entering, leaving []*Server
	for i := range updates {
		u := &updates[i]
		s := u.Server
		if s.Gone() {
			continue // deleted meanwhile (`del server`): nothing to change
		}
		cur := s.dns.Load()
		if u.Addr.IsValid() {
			addr := u.Addr.String()
			if old := s.setAddrLocked(addr); old != addr || cur == nil || cur.NoAddr {
				moved++
				msg := fmt.Sprintf("%s/%s changed its IP from %s to %s by %s.", b.Name, s.Name, hostOrNone(old, cur), u.Addr.Addr(), u.Reason)
				b.log.Warn().Str("backend", b.Name).Str("server", s.Name).Str("addr", addr).Str("previous_addr", old).Msg(msg)
				b.LogEvent(syslog.LevelNotice, msg)
			}
		}
		info := u.Info
		info.NoAddr = !u.Addr.IsValid()
		info.Stopped = u.Maint || cur != nil && cur.Stopped
		if cur == nil || *cur != info {
			s.dns.Store(&info)
		}
		if u.Weight >= 0 && u.Weight <= 256 && int(s.UserWeight.Load()) != u.Weight &&
			(b.dynamic || u.Weight == 0 || u.Weight == s.InitialWeight) {
			s.UserWeight.Store(int32(u.Weight))
			s.bal.frozen = false // recomputed from the new weight, as SetWeight
			rebuild = true
		}
		if s.rmaint.Load() == u.Maint {
			continue
		}
		s.rmaint.Store(u.Maint)
		if !u.Maint || s.Op() != OpDown {
			// A server DOWN already keeps its last change (HAProxy's
			// srv_set_admin_flag).
			s.lastChange.Store(now.UnixNano())
		}
		rebuild = true
		if u.Maint {
			entering = append(entering, s)
			continue
		}
		if s.OperatorAdmin() != AdminMaint {
			s.bal.frozen = false // as SetAdmin leaving MAINT
			if s.Conf.Slowstart > 0 {
				s.bal.rampStart = now
			}
		}
		leaving = append(leaving, s)
	}
	if rebuild {
		b.rebuildLocked()
	}
	for _, s := range entering {
		b.redistribute(s) // its queue goes to the others, as SetAdmin's
		s.up.Pool.CloseAll()
		if s.OperatorAdmin() == AdminMaint {
			continue // in maintenance already: nothing to say (HAProxy's)
		}
		act, bck := b.ServersUp()
		reason := ""
		for i := range updates {
			if updates[i].Server == s && updates[i].Reason != "" {
				reason = " (" + updates[i].Reason + ")"
			}
		}
		kind := "Server"
		if s.Conf.Backup {
			kind = "Backup Server" // as HAProxy's lines begin for a backup
		}
		running := ""
		if act == 0 && bck > 0 {
			running = " Running on backup."
		}
		// HAProxy 2.6's one line (srv_set_admin_flag), to stderr and the
		// [[global.log]] targets; the checker, if any, says nothing more
		// (check.Server.syncLocked).
		msg := fmt.Sprintf("%s %s/%s is going DOWN for maintenance%s. %d active and %d backup servers left.%s %d sessions active, 0 requeued, 0 remaining in queue.",
			kind, b.Name, s.Name, reason, act, bck, running, s.Counters.Scur.Load())
		level := syslog.LevelAlert
		if s.Op() == OpDown {
			msg = fmt.Sprintf("%s %s/%s was DOWN and now enters maintenance%s.", kind, b.Name, s.Name, reason)
			level = syslog.LevelNotice
		}
		b.log.Warn().Str("backend", b.Name).Str("server", s.Name).Msg(msg)
		b.LogEvent(level, msg)
	}
	for _, s := range leaving {
		state, admin := "UP", "READY"
		if s.Op() == OpDown {
			state = "DOWN"
		}
		if s.OperatorAdmin() == AdminDrain {
			admin = "DRAIN"
		}
		host := ""
		if info := s.dns.Load(); info != nil {
			host = info.FQDN
		}
		msg := fmt.Sprintf("Server %s/%s ('%s') is %s/%s (resolves again).", b.Name, s.Name, host, state, admin)
		b.log.Warn().Str("backend", b.Name).Str("server", s.Name).Msg(msg)
		b.LogEvent(syslog.LevelNotice, msg)
	}
	return moved
}

// hostOrNone is the host of addr as HAProxy logs a previous address,
// "(none)" when there was none (or DNS had taken it away: info).
func hostOrNone(addr string, info *DNSInfo) string {
	if host, _, err := net.SplitHostPort(addr); err == nil && (info == nil || !info.NoAddr) {
		return host
	}
	return "(none)"
}

// Resolvers is a [[resolvers]] section as the proxy keeps it: its
// configuration and its name servers' counters, which proxy/resolve
// updates and `show resolvers` prints.
type Resolvers struct {
	Name        string
	Conf        *conf.Resolvers
	Nameservers []*Nameserver
}

// Nameserver is one name server of a Resolvers.
type Nameserver struct {
	Name     string // as configured
	Addr     string // "ip:port"
	Counters NameserverCounters
}

// NameserverCounters are a name server's counters, as HAProxy's `show
// resolvers` prints them, in that order. Each counts DNS messages:
// queries sent and send errors, then answers by outcome.
type NameserverCounters struct {
	Sent       atomic.Int64 // queries sent
	SndError   atomic.Int64 // queries that could not be sent
	Valid      atomic.Int64 // valid answers
	Update     atomic.Int64 // valid answers that changed a server's address
	CNAME      atomic.Int64 // valid answers reached through a CNAME
	CNAMEError atomic.Int64 // answers whose CNAME chain led nowhere
	AnyErr     atomic.Int64 // answers without records (NOERROR, no answer)
	NX         atomic.Int64 // NXDOMAIN answers
	Timeout    atomic.Int64 // queries left without an answer
	Refused    atomic.Int64 // REFUSED answers
	Other      atomic.Int64 // other errors (SERVFAIL, no record of the type asked)
	Invalid    atomic.Int64 // answers that could not be parsed
	TooBig     atomic.Int64 // answers larger than accepted_payload_size
	Truncated  atomic.Int64 // answers truncated over UDP (then asked over TCP)
	Outdated   atomic.Int64 // answers to a query no longer waiting
}

// List returns the counters in `show resolvers` order, with their names.
func (c *NameserverCounters) List() []NamedCounter {
	return []NamedCounter{
		{"sent", &c.Sent}, {"snd_error", &c.SndError}, {"valid", &c.Valid}, {"update", &c.Update},
		{"cname", &c.CNAME}, {"cname_error", &c.CNAMEError}, {"any_err", &c.AnyErr}, {"nx", &c.NX},
		{"timeout", &c.Timeout}, {"refused", &c.Refused}, {"other", &c.Other}, {"invalid", &c.Invalid},
		{"too_big", &c.TooBig}, {"truncated", &c.Truncated}, {"outdated", &c.Outdated},
	}
}

// NamedCounter is one name server counter and its `show resolvers` name.
type NamedCounter struct {
	Name string
	V    *atomic.Int64
}

// newResolvers builds the proxy's Resolvers from the configuration, every
// counter at zero.
func newResolvers(rc []*conf.Resolvers) []*Resolvers {
	var out []*Resolvers
	for _, c := range rc {
		r := &Resolvers{Name: c.Name, Conf: c}
		for _, ns := range c.Nameservers {
			r.Nameservers = append(r.Nameservers, &Nameserver{Name: ns.Name, Addr: ns.Addr})
		}
		out = append(out, r)
	}
	return out
}

// FQDNChanger changes the name a server resolves at runtime (`set server
// <b>/<s> fqdn`). proxy/resolve installs one while it runs.
type FQDNChanger interface {
	// SetFQDN makes s resolve fqdn from now on and returns the previous
	// name (fqdn itself: nothing changed). ErrSRVResolution for a
	// template slot, ErrNoResolution for a server whose address does not
	// come from DNS, ErrInvalidFQDN for a name that is not a host name.
	SetFQDN(s *Server, fqdn string) (old string, err error)
}

// Errors of FQDNChanger.SetFQDN, as HAProxy's `set server ... fqdn`
// replies name them.
var (
	// ErrNoResolution: the server's address does not come from DNS.
	ErrNoResolution = errors.New("no resolution is configured")
	// ErrSRVResolution: the server is a slot filled by SRV records.
	ErrSRVResolution = errors.New("SRV resolution is configured")
	// ErrInvalidFQDN: the name is not a host name.
	ErrInvalidFQDN = errors.New("invalid fqdn")
)

// SetFQDNChanger installs c (nil removes it).
func (p *Proxy) SetFQDNChanger(c FQDNChanger) {
	if c == nil {
		p.fqdn.Store(nil)
		return
	}
	p.fqdn.Store(&c)
}

// SetFQDN makes s resolve fqdn through the installed FQDNChanger, or
// returns ErrNoResolution when there is none.
func (p *Proxy) SetFQDN(s *Server, fqdn string) (old string, err error) {
	info := s.DNS()
	switch {
	case info != nil && info.SRV != "":
		return "", ErrSRVResolution
	case info == nil:
		return "", ErrNoResolution
	}
	c := p.fqdn.Load()
	if c == nil {
		return "", ErrNoResolution // resolution does not run
	}
	return (*c).SetFQDN(s, fqdn)
}

// ResolversByName returns the [[resolvers]] named name, or nil.
func (p *Proxy) ResolversByName(name string) *Resolvers {
	for _, r := range p.Resolvers {
		if r.Name == name {
			return r
		}
	}
	return nil
}

// HostPort returns the host and port `show servers state` prints for a
// server snapshot: "-" and the resolution's port for a server without an
// address.
func (ss *ServerSnapshot) HostPort() (host string, port string) {
	if h, p, err := net.SplitHostPort(ss.Addr); err == nil {
		return h, p
	}
	if ss.Resolution != nil {
		return "-", strconv.Itoa(ss.Resolution.Port)
	}
	return ss.Addr, "0"
}
