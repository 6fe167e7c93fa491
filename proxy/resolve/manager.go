package resolve

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fulcrum-proxy/fulcrum/conf"
	"github.com/fulcrum-proxy/fulcrum/proxy"
	"github.com/miekg/dns"
	"github.com/rs/zerolog"
)

// Manager runs the DNS resolution of one proxy's servers. New builds it,
// Init gives the servers their first address, Start runs the resolutions
// and Stop ends them; a Manager is not started twice.
type Manager struct {
	p        *proxy.Proxy
	log      zerolog.Logger
	ctx      context.Context
	cancel   context.CancelFunc
	wg       sync.WaitGroup // resolutions, name server readers, TCP exchanges
	sections []*section
	servers  []*server // in proxy order
	byServer map[*proxy.Server]*server
	started  atomic.Bool

	// lookup is init_addr's "libc" method: the system's resolver. Tests
	// replace it.
	lookup func(ctx context.Context, host string) ([]netip.Addr, error)
}

// section is one [[resolvers]] section at runtime.
type section struct {
	m    *Manager
	name string
	conf *conf.Resolvers
	ns   []*nameserver

	idMu sync.Mutex // guards ids
	ids  map[uint16]*exchange

	// mu guards everything below, and every resolution, server and
	// template of the section; it is held while an outcome is applied.
	mu    sync.Mutex
	res   map[resKey]*resolution
	dirty []*server // changed since the last flush
}

// resKey names a resolution: a name and the query type asked first.
type resKey struct {
	name  string
	qtype uint16
}

// resolution is one name resolved by a section, for every server that
// resolves it: A/AAAA resolutions have host requesters, SRV ones
// templates. Its goroutine (run) queries the name every timeout_resolve
// while it has requesters.
type resolution struct {
	sec       *section
	name      string
	qtype     uint16 // the type asked first: A, AAAA or SRV
	status    status
	lastValid time.Time // the last valid answer (the start, before any)
	addrs     []*addrItem
	srvs      []*srvItem
	hosts     []*server
	tmpls     []*template
	running   bool
}

// New builds the resolution of p's servers whose address comes from DNS
// (proxy.Server.DNS), grouped by [[resolvers]] section and name. Nothing
// is queried before Start.
func New(p *proxy.Proxy, log zerolog.Logger) *Manager {
	ctx, cancel := context.WithCancel(context.Background())
	m := &Manager{p: p, log: log, ctx: ctx, cancel: cancel, lookup: libcLookup, byServer: map[*proxy.Server]*server{}}
	byName := map[string]*section{}
	for _, r := range p.Resolvers {
		sec := &section{m: m, name: r.Name, conf: r.Conf, ids: map[uint16]*exchange{}, res: map[resKey]*resolution{}}
		for i, ns := range r.Nameservers {
			sec.ns = append(sec.ns, &nameserver{i: i, name: ns.Name, addr: ns.Addr, c: &ns.Counters})
		}
		m.sections = append(m.sections, sec)
		byName[r.Name] = sec
	}
	type tmplKey struct {
		b      *proxy.Backend
		prefix string
		fqdn   string
	}
	tmpls := map[tmplKey]*template{}
	for _, b := range p.Backends {
		for _, s := range b.Servers() {
			sc := s.Conf
			sec := byName[sc.Resolvers]
			if s.DNS() == nil || sec == nil {
				continue
			}
			sv := &server{sec: sec, s: s, b: b, prefer: dns.TypeAAAA, allowDup: sc.AllowDupIP,
				ignoreWeight: sc.IgnoreWeight, weight: -1, port: sc.Port, fqdn: sc.FQDN}
			if sc.ResolvePrefer == "ipv4" {
				sv.prefer = dns.TypeA
			}
			m.servers = append(m.servers, sv)
			m.byServer[s] = sv
			if !sc.IsSRV() {
				sec.linkHost(sv, sc.FQDN)
				continue
			}
			// A template slot: it resolves its target once a record fills
			// it, whatever the family (the ports differ).
			sv.srvName, sv.fqdn, sv.port, sv.allowDup = sc.FQDN, "", 0, true
			k := tmplKey{b, sc.Template, sc.FQDN}
			t := tmpls[k]
			if t == nil {
				t = &template{b: b, byItem: map[*srvItem]*server{}, res: sec.resolution(sc.FQDN, dns.TypeSRV)}
				t.res.tmpls = append(t.res.tmpls, t)
				tmpls[k] = t
			}
			sv.tmpl = t
			t.slots = append(t.slots, sv)
		}
	}
	return m
}

// resolution returns the section's resolution of name and qtype, created
// (and started, when the manager runs) if needed. sec.mu is held, or the
// manager has not started.
func (sec *section) resolution(name string, qtype uint16) *resolution {
	k := resKey{name, qtype}
	if r := sec.res[k]; r != nil {
		return r
	}
	r := &resolution{sec: sec, name: name, qtype: qtype, lastValid: time.Now()}
	sec.res[k] = r
	if sec.m.started.Load() {
		sec.start(r)
	}
	return r
}

// start runs r's goroutine. sec.mu is held, or the manager is starting.
func (sec *section) start(r *resolution) {
	if r.running || sec.m.ctx.Err() != nil {
		return
	}
	r.running = true
	sec.m.wg.Add(1)
	go r.run()
}

// run queries r's name every timeout_resolve and applies each outcome,
// until the manager stops or r has no requester left.
func (r *resolution) run() {
	sec := r.sec
	m := sec.m
	defer m.wg.Done()
	for {
		sec.mu.Lock()
		if len(r.hosts) == 0 && len(r.tmpls) == 0 {
			if sec.res[resKey{r.name, r.qtype}] == r {
				delete(sec.res, resKey{r.name, r.qtype})
			}
			r.running = false
			sec.mu.Unlock()
			return
		}
		sec.mu.Unlock()
		o := sec.resolve(m.ctx, r.name, r.qtype)
		if m.ctx.Err() != nil {
			return
		}
		sec.mu.Lock()
		r.handle(o, time.Now())
		sec.mu.Unlock()
		t := time.NewTimer(sec.conf.TimeoutResolve)
		select {
		case <-m.ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// libcLookup is init_addr's "libc": the system's resolver, bounded.
func libcLookup(ctx context.Context, host string) ([]netip.Addr, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
}

// Init gives each server its address before the proxy starts, as HAProxy
// at start (server.c srv_iterate_initaddr):
//   - a server the replaced proxy prev (a reload; nil at start) had, with
//     the same name to resolve, keeps its address, name, port and record;
//   - the others try their init_addr methods in order: "last" (saved, the
//     state file's srv_addr, srv_fqdn and srv_port), "libc" (the system's
//     resolver; not for template slots), "none" (no address: MAINT
//     (resolution)), an IP address.
//
// When every method fails, Init returns an error naming the server: the
// proxy must not start (with resolvers, the default methods end with
// "none", which never fails). A method failing before "none" or an
// address is logged as HAProxy warns.
func (m *Manager) Init(saved []proxy.SavedDNS, prev *proxy.Proxy) error {
	bySrv := map[*proxy.Server]proxy.SavedDNS{}
	for _, sd := range saved {
		bySrv[sd.Server] = sd
	}
	libc := m.prefetch(bySrv, prev)
	now := time.Now()
	var errs []string
	for _, sv := range m.servers {
		sv.sec.mu.Lock()
		err := sv.init(bySrv, prev, libc, now)
		sv.sec.mu.Unlock()
		if err != nil {
			errs = append(errs, err.Error())
		}
	}
	if prev != nil {
		m.inheritCounters(prev)
	}
	for _, sec := range m.sections {
		sec.mu.Lock()
		sec.flush()
		sec.mu.Unlock()
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return nil
}

// prefetch runs init_addr's "libc" lookups Init will need, at once for
// every name (a slow or dead system resolver costs one timeout, not one
// per name): those of servers not inherited from prev whose methods reach
// "libc" before one that cannot fail.
func (m *Manager) prefetch(saved map[*proxy.Server]proxy.SavedDNS, prev *proxy.Proxy) map[string][]netip.Addr {
	names := map[string]bool{}
	for _, sv := range m.servers {
		if sv.tmpl != nil || sv.inherits(prev) {
			continue
		}
	methods:
		for _, method := range sv.s.Conf.InitAddr {
			switch method {
			case "last":
				if sd, ok := saved[sv.s]; ok && sd.Addr.IsValid() {
					break methods
				}
			case "libc":
				names[sv.s.Conf.FQDN] = true
				break methods
			default: // none, an address
				break methods
			}
		}
	}
	out := make(map[string][]netip.Addr, len(names))
	var mu sync.Mutex
	var wg sync.WaitGroup
	for name := range names {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ips, _ := m.lookup(m.ctx, name)
			mu.Lock()
			out[name] = ips
			mu.Unlock()
		}()
	}
	wg.Wait()
	return out
}

// init is Init for one server. sv.sec.mu is held.
func (sv *server) init(saved map[*proxy.Server]proxy.SavedDNS, prev *proxy.Proxy, libc map[string][]netip.Addr, now time.Time) error {
	sc := sv.s.Conf
	sv.mark("")
	if sv.inherit(prev, now) {
		return nil
	}
	failed := false
	for _, method := range sc.InitAddr {
		switch method {
		case "last":
			sd, ok := saved[sv.s]
			if !ok || !sd.Addr.IsValid() {
				continue
			}
			if sv.tmpl != nil {
				if sd.FQDN == "" || sd.Port <= 0 {
					continue
				}
				sv.fqdn, sv.port, sv.fqdnSet = strings.ToLower(sd.FQDN), sd.Port, true
				sv.restored = restoredSlot{ok: true, target: sv.fqdn, port: sd.Port, at: now}
			}
			sv.setAddr(sd.Addr.Unmap(), "")
			return nil
		case "libc":
			if sv.tmpl != nil {
				continue // no host name before a record gives one
			}
			ips, ok := libc[sc.FQDN]
			if !ok {
				ips, _ = sv.sec.m.lookup(sv.sec.m.ctx, sc.FQDN)
				libc[sc.FQDN] = ips
			}
			if ip, ok := preferred(ips, sv.prefer); ok {
				sv.setAddr(ip, "")
				return nil
			}
			failed = true
		case "none":
			sv.setAddr(netip.Addr{}, "")
			if failed {
				sv.sec.m.log.Warn().Str("backend", sv.b.Name).Str("server", sv.s.Name).
					Msgf("could not resolve address '%s', disabling server.", sc.FQDN)
			}
			return nil
		default:
			ip, err := netip.ParseAddr(method)
			if err != nil {
				continue // conf validated it
			}
			sv.setAddr(ip.Unmap(), "")
			if failed {
				sv.sec.m.log.Warn().Str("backend", sv.b.Name).Str("server", sv.s.Name).
					Msgf("could not resolve address '%s', falling back to configured address.", sc.FQDN)
			}
			return nil
		}
	}
	return fmt.Errorf("backend %q: server %q: could not resolve address '%s' (init_addr %s)",
		sv.b.Name, sv.s.Name, sc.FQDN, strings.Join(sc.InitAddr, ","))
}

// previous returns prev's server of the same backend and name as sv,
// resolving the same name with the same resolvers, or nil.
func (sv *server) previous(prev *proxy.Proxy) *proxy.Server {
	if prev == nil {
		return nil
	}
	ob := prev.Backend(sv.b.Name)
	if ob == nil {
		return nil
	}
	os := ob.Server(sv.s.Name)
	if os == nil || os.DNS() == nil || os.Conf.FQDN != sv.s.Conf.FQDN || os.Conf.Resolvers != sv.s.Conf.Resolvers {
		return nil
	}
	return os
}

// inherits reports whether sv takes its state from prev (inherit).
func (sv *server) inherits(prev *proxy.Proxy) bool { return sv.previous(prev) != nil }

// inherit copies, at a reload, what prev's server of the same backend and
// name, resolving the same name, was given: its address and, for a
// template slot, its record (which the slot waits for first). It reports
// whether there was such a server.
func (sv *server) inherit(prev *proxy.Proxy, now time.Time) bool {
	os := sv.previous(prev)
	if os == nil {
		return false
	}
	info := os.DNS()
	var ip netip.Addr
	if ap, err := netip.ParseAddrPort(os.Addr()); err == nil {
		ip = ap.Addr().Unmap()
	}
	sv.fqdnSet = info.FQDNSet
	if sv.tmpl != nil {
		sv.fqdn, sv.port = info.FQDN, info.Port
		if info.FQDN != "" {
			sv.restored = restoredSlot{ok: true, target: info.FQDN, port: info.Port, at: now}
		}
	}
	sv.setAddr(ip, "")
	return true
}

// inheritCounters carries the name server counters of prev, by section
// and name server name, into m's proxy (which starts at zero).
func (m *Manager) inheritCounters(prev *proxy.Proxy) {
	for _, r := range m.p.Resolvers {
		or := prev.ResolversByName(r.Name)
		if or == nil {
			continue
		}
		for _, ns := range r.Nameservers {
			for _, ons := range or.Nameservers {
				if ons.Name != ns.Name {
					continue
				}
				from, to := ons.Counters.List(), ns.Counters.List()
				for i := range from {
					to[i].V.Add(from[i].V.Load())
				}
			}
		}
	}
}

// preferred returns the first address of ips in family prefer, else the
// first address.
func preferred(ips []netip.Addr, prefer uint16) (netip.Addr, bool) {
	for _, ip := range ips {
		if family(ip.Unmap()) == prefer {
			return ip.Unmap(), true
		}
	}
	if len(ips) > 0 {
		return ips[0].Unmap(), true
	}
	return netip.Addr{}, false
}

// Start runs every resolution: each queries at once, then every
// timeout_resolve. The manager answers `set server ... fqdn` from now on.
func (m *Manager) Start() {
	m.started.Store(true)
	m.p.SetFQDNChanger(m)
	for _, sec := range m.sections {
		sec.mu.Lock()
		for _, r := range sec.res {
			sec.start(r)
		}
		sec.mu.Unlock()
	}
}

// Stop ends every resolution, closes the name server sockets and waits
// for the goroutines. Servers keep what they were given.
func (m *Manager) Stop() {
	if m.started.Load() {
		m.p.SetFQDNChanger(nil)
	}
	m.cancel()
	for _, sec := range m.sections {
		for _, ns := range sec.ns {
			ns.close()
		}
	}
	m.wg.Wait()
}

// SetFQDN makes server s resolve fqdn from now on (`set server <b>/<s>
// fqdn`, proxy.FQDNChanger): it keeps its address until the new name
// resolves (at once when another server resolves it already), as
// HAProxy's srv_update_fqdn. The 0x40 admin bit stays clear: HAProxy
// 2.6.12 shows srv_admin_state 0 after it, resolved or not (measured
// with dnsmasq; a fresh-user trial saw fulcrum keep 64).
func (m *Manager) SetFQDN(s *proxy.Server, fqdn string) (string, error) {
	sv := m.byServer[s]
	switch {
	case sv == nil:
		return "", proxy.ErrNoResolution
	case sv.tmpl != nil:
		return "", proxy.ErrSRVResolution
	}
	sec := sv.sec
	sec.mu.Lock()
	defer sec.mu.Unlock()
	old := sv.fqdn
	if fqdn == old {
		return old, nil
	}
	name := lowerName(fqdn)
	if !validHost(name) {
		return old, proxy.ErrInvalidFQDN
	}
	r := sec.linkHost(sv, name)
	sv.fqdn = name
	sv.mark("")
	if r.fresh(time.Now()) {
		held := map[heldKey]int{}
		for _, h := range r.hosts {
			if h.ipItem != nil {
				held[heldKey{h.ipItem, h.b}]++
			}
		}
		r.pickIP(sv, held, -1)
	}
	sec.flush()
	return old, nil
}
