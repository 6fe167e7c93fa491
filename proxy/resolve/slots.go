package resolve

// From records to servers: what a resolution's answers make of the
// servers that resolve its name. The rules are HAProxy 2.6's
// (resolvers.c resolv_check_response, resolv_get_ip_from_response;
// server.c snr_resolution_cb, snr_update_srv_status,
// srvrq_resolution_error_cb):
//
//   - A/AAAA: each record is an item, seen at the last answer that had
//     it; an item unseen for more than hold_obsolete is dropped. A server
//     keeps the item it holds while it lasts; otherwise it takes the best
//     item: its preferred family (8), not held by another server of its
//     backend resolving the same name (2, unless allow-dup-ip; a held one
//     is not taken at all without it), its current address (1). No item:
//     no address, MAINT (resolution).
//   - SRV: each record (target, port) is an item, dropped likewise; a slot
//     keeps the item it holds, new items fill the first free slot (a slot
//     restored from the state file or a reload waits for its own record
//     first). A filled slot takes the record's port, its weight mapped as
//     HAProxy's (weight+255)/256, and the address of the additional record
//     for its target, else resolves the target itself (A/AAAA above). An
//     item dropped empties its slot: no address, no name, port 0, MAINT
//     (resolution).
//   - An error (NXDOMAIN, timeout, REFUSED, other) changes nothing while
//     the last valid answer is younger than its hold period; past it,
//     every server of the name loses its address (and every slot its
//     record) and goes to MAINT (resolution).
//
// Everything here runs with the section's mu held.

import (
	"net/netip"
	"time"

	"github.com/fulcrum-proxy/fulcrum/proxy"
	"github.com/miekg/dns"
)

// addrItem is an address record of a resolution.
type addrItem struct {
	ip       netip.Addr
	lastSeen time.Time
}

// srvItem is an SRV record of a resolution.
type srvItem struct {
	srvRecord
	lastSeen time.Time
	arSeen   time.Time // when the additional address was last given
}

// template is the slots of one server_template that resolves an SRV name.
type template struct {
	res    *resolution
	b      *proxy.Backend
	slots  []*server
	byItem map[*srvItem]*server // the slot holding each item
}

// restoredSlot is the record a slot held before a restart (state file) or
// a reload: it waits for that record before taking another.
type restoredSlot struct {
	ok     bool
	target string
	port   int
	at     time.Time
}

// server is the resolution state of one proxy server: what it was last
// given (and what ApplyDNS was told) and the records it holds.
type server struct {
	sec          *section
	s            *proxy.Server
	b            *proxy.Backend
	prefer       uint16 // dns.TypeA or dns.TypeAAAA
	allowDup     bool
	ignoreWeight bool
	srvName      string // the template's SRV name, "" for a host name

	addr    netip.Addr // none: the zero value
	port    int
	fqdn    string
	fqdnSet bool
	weight  int // from the SRV record, -1 = none

	host     *resolution // the A/AAAA resolution it requests, nil = none
	ipItem   *addrItem   // the address item it holds in host
	tmpl     *template   // its template, for a slot of an SRV template
	srvItem  *srvItem    // the SRV record filling the slot, nil = free
	restored restoredSlot

	dirty  bool   // changed since the last flush
	reason string // why, for the log
}

// mark records that sv changed, for the next flush.
func (sv *server) mark(reason string) {
	if !sv.dirty {
		sv.dirty = true
		sv.sec.dirty = append(sv.sec.dirty, sv)
	}
	if reason != "" {
		sv.reason = reason
	}
}

// setAddr gives sv the address ip (the zero value: none).
func (sv *server) setAddr(ip netip.Addr, reason string) {
	if sv.addr != ip {
		sv.addr = ip
		sv.mark(reason)
	}
}

// update is sv's state for proxy.Backend.ApplyDNS: a server without an
// address (or a slot without a port) is in MAINT (resolution).
func (sv *server) update() proxy.DNSUpdate {
	u := proxy.DNSUpdate{Server: sv.s, Weight: sv.weight, Reason: sv.reason,
		Info: proxy.DNSInfo{FQDN: sv.fqdn, Port: sv.port, SRV: sv.srvName, FQDNSet: sv.fqdnSet}}
	if sv.addr.IsValid() && sv.port > 0 && sv.port <= 65535 {
		u.Addr = netip.AddrPortFrom(sv.addr, uint16(sv.port))
	}
	u.Maint = !u.Addr.IsValid()
	return u
}

// flush applies the servers changed since the last flush, one ApplyDNS
// per backend, in the order they changed.
func (sec *section) flush() {
	if len(sec.dirty) == 0 {
		return
	}
	var order []*proxy.Backend
	byBackend := map[*proxy.Backend][]proxy.DNSUpdate{}
	for _, sv := range sec.dirty {
		if _, ok := byBackend[sv.b]; !ok {
			order = append(order, sv.b)
		}
		byBackend[sv.b] = append(byBackend[sv.b], sv.update())
		sv.dirty, sv.reason = false, ""
	}
	clear(sec.dirty)
	sec.dirty = sec.dirty[:0]
	for _, b := range order {
		b.ApplyDNS(byBackend[b])
	}
}

// handle applies outcome o of resolution r at now to its servers, then
// to the proxy.
func (r *resolution) handle(o outcome, now time.Time) {
	r.prune()
	if r.qtype == dns.TypeSRV {
		r.handleSRV(o, now)
	} else {
		r.handleHost(o, now)
	}
	r.sec.flush()
}

// prune forgets r's servers deleted at runtime (`del server`, any server
// may be deleted, template slots included): a deleted host is no longer
// resolved, a deleted slot lets go of its record, which goes to a free
// slot of the same template at this answer. Servers are never added to a
// resolution at runtime (`add server` takes no resolvers, as HAProxy
// 2.6's), so the set only shrinks.
func (r *resolution) prune() {
	kept := r.hosts[:0]
	for _, sv := range r.hosts {
		if sv.s.Gone() {
			sv.host, sv.ipItem = nil, nil
			continue
		}
		kept = append(kept, sv)
	}
	clear(r.hosts[len(kept):])
	r.hosts = kept
	for _, t := range r.tmpls {
		slots := t.slots[:0]
		for _, sv := range t.slots {
			if !sv.s.Gone() {
				slots = append(slots, sv)
				continue
			}
			if sv.srvItem != nil {
				delete(t.byItem, sv.srvItem)
				sv.srvItem = nil
			}
			sv.sec.unlinkHost(sv)
		}
		clear(t.slots[len(slots):])
		t.slots = slots
	}
}

// hold returns the hold period of an error status.
func (sec *section) hold(st status) time.Duration {
	switch st {
	case statusNX:
		return sec.conf.HoldNX
	case statusTimeout:
		return sec.conf.HoldTimeout
	case statusRefused:
		return sec.conf.HoldRefused
	}
	return sec.conf.HoldOther
}

// maintReason is why a server enters maintenance on an error, in
// HAProxy's words (snr_update_srv_status).
func maintReason(st status) string {
	switch st {
	case statusNX:
		return "DNS NX status"
	case statusTimeout:
		return "DNS timeout status"
	case statusRefused:
		return "DNS refused status"
	}
	return "unspecified DNS error"
}

// fresh reports whether r's last answer was valid and is younger than
// hold_valid: a server that starts resolving r's name takes it at once
// (HAProxy's resolution cache) instead of waiting for the next query.
func (r *resolution) fresh(now time.Time) bool {
	return r.status == statusValid && now.Sub(r.lastValid) < r.sec.conf.HoldValid
}

// holding reports whether an error of status st at now is still covered
// by r's last valid answer: nothing changes then.
func (r *resolution) holding(st status, now time.Time) bool {
	r.status = st
	return now.Sub(r.lastValid) < r.sec.hold(st)
}

// handleHost applies an outcome of an A/AAAA resolution.
func (r *resolution) handleHost(o outcome, now time.Time) {
	if o.status != statusValid {
		if r.holding(o.status, now) {
			return
		}
		r.addrs = nil
		for _, sv := range r.hosts {
			sv.ipItem = nil
			sv.setAddr(netip.Addr{}, maintReason(o.status))
		}
		return
	}
	r.status, r.lastValid = statusValid, now
	idx := make(map[netip.Addr]*addrItem, len(r.addrs)+len(o.answer.addrs))
	for _, it := range r.addrs {
		idx[it.ip] = it
	}
	for _, ip := range o.answer.addrs {
		if it := idx[ip]; it != nil {
			it.lastSeen = now
		} else if len(r.addrs) < maxRecords {
			it := &addrItem{ip: ip, lastSeen: now}
			idx[ip] = it
			r.addrs = append(r.addrs, it)
		}
	}
	obsolete := r.sec.conf.HoldObsolete
	kept := r.addrs[:0]
	for _, it := range r.addrs {
		if now.After(it.lastSeen.Add(obsolete)) {
			for _, sv := range r.hosts {
				if sv.ipItem == it {
					sv.ipItem = nil
				}
			}
			continue
		}
		kept = append(kept, it)
	}
	clear(r.addrs[len(kept):])
	r.addrs = kept
	held := map[heldKey]int{}
	for _, sv := range r.hosts {
		if sv.ipItem != nil {
			held[heldKey{sv.ipItem, sv.b}]++
		}
	}
	for _, sv := range r.hosts {
		r.pickIP(sv, held, o.ns)
	}
}

// heldKey counts the servers of one backend holding an address item.
type heldKey struct {
	it *addrItem
	b  *proxy.Backend
}

// pickIP gives sv the best address of r (see the file comment); held
// counts the items held per backend, and is kept up to date. ns is the
// name server of the answer (-1 when none: r's cached answer), which
// counts the update.
func (r *resolution) pickIP(sv *server, held map[heldKey]int, ns int) {
	if sv.ipItem != nil {
		sv.setAddr(sv.ipItem.ip, "")
		return
	}
	var best *addrItem
	bestScore := -1
	for _, it := range r.addrs {
		score := 0
		if family(it.ip) == sv.prefer {
			score += 8
		}
		if held[heldKey{it, sv.b}] > 0 {
			if !sv.allowDup {
				continue
			}
		} else {
			score += 2
		}
		if it.ip == sv.addr {
			score++
		}
		if score > bestScore {
			best, bestScore = it, score
		}
	}
	if best == nil {
		sv.setAddr(netip.Addr{}, "No IP for server ") // HAProxy's words, its space too
		return
	}
	sv.ipItem = best
	held[heldKey{best, sv.b}]++
	if best.ip == sv.addr {
		return
	}
	reason := "DNS cache"
	if ns >= 0 && ns < len(r.sec.ns) {
		n := r.sec.ns[ns]
		n.c.Update.Add(1)
		reason = r.sec.name + "/" + n.name
	}
	sv.setAddr(best.ip, reason)
}

// family returns the query type of ip's family.
func family(ip netip.Addr) uint16 {
	if ip.Is4() {
		return dns.TypeA
	}
	return dns.TypeAAAA
}

// handleSRV applies an outcome of an SRV resolution to its templates.
func (r *resolution) handleSRV(o outcome, now time.Time) {
	if o.status != statusValid {
		if r.holding(o.status, now) {
			return
		}
		r.srvs = nil
		for _, t := range r.tmpls {
			for _, sv := range t.slots {
				if sv.srvItem != nil || sv.restored.ok || sv.addr.IsValid() || sv.fqdn != "" {
					t.empty(sv, maintReason(o.status))
				}
			}
		}
		return
	}
	r.status, r.lastValid = statusValid, now
	type key struct {
		target string
		port   uint16
	}
	idx := make(map[key]*srvItem, len(r.srvs)+len(o.answer.srvs))
	for _, it := range r.srvs {
		idx[key{it.target, it.port}] = it
	}
	for _, rec := range o.answer.srvs {
		it := idx[key{rec.target, rec.port}]
		if it == nil {
			if len(r.srvs) >= maxRecords {
				continue
			}
			it = &srvItem{srvRecord: srvRecord{target: rec.target, port: rec.port}}
			idx[key{rec.target, rec.port}] = it
			r.srvs = append(r.srvs, it)
		}
		it.weight, it.priority, it.lastSeen = rec.weight, rec.priority, now
		if rec.ar.IsValid() {
			it.ar, it.arSeen = rec.ar, now
		}
	}
	obsolete := r.sec.conf.HoldObsolete
	kept := r.srvs[:0]
	for _, it := range r.srvs {
		if now.After(it.lastSeen.Add(obsolete)) {
			for _, t := range r.tmpls {
				if sv := t.byItem[it]; sv != nil {
					t.empty(sv, "entry removed from SRV record")
				}
			}
			continue
		}
		if it.ar.IsValid() && now.After(it.arSeen.Add(obsolete)) {
			it.ar = netip.Addr{} // the target is resolved on its own now
		}
		kept = append(kept, it)
	}
	clear(r.srvs[len(kept):])
	r.srvs = kept
	for _, t := range r.tmpls {
		t.fill(now)
	}
}

// fill gives each SRV item of t's resolution a slot: the one holding it,
// else the slot restored with that record, else the first free slot
// (none left: the record is not used). A restored slot no record claimed
// within hold_obsolete of its restoring is emptied.
func (t *template) fill(now time.Time) {
	type key struct {
		target string
		port   int
	}
	restored := map[key]*server{}
	var free []*server
	for _, sv := range t.slots {
		switch {
		case sv.srvItem != nil:
		case sv.restored.ok:
			restored[key{sv.restored.target, sv.restored.port}] = sv
		default:
			free = append(free, sv)
		}
	}
	for _, it := range t.res.srvs {
		sv := t.byItem[it]
		if sv == nil {
			sv = restored[key{it.target, int(it.port)}]
			delete(restored, key{it.target, int(it.port)})
		}
		if sv == nil && len(free) > 0 {
			sv, free = free[0], free[1:]
		}
		if sv != nil {
			t.take(sv, it)
		}
	}
	obsolete := t.res.sec.conf.HoldObsolete
	for _, sv := range restored {
		if now.After(sv.restored.at.Add(obsolete)) {
			t.empty(sv, "entry removed from SRV record")
		}
	}
}

// take fills slot sv with SRV item it (or updates it from it): name,
// port, weight, and the address of the additional record, else of the
// target's own resolution.
func (t *template) take(sv *server, it *srvItem) {
	if sv.srvItem != it {
		if sv.srvItem != nil {
			delete(t.byItem, sv.srvItem)
		}
		sv.srvItem = it
		t.byItem[it] = sv
	}
	sv.restored.ok = false
	if sv.fqdn != it.target {
		sv.sec.unlinkHost(sv)
		sv.fqdn = it.target
		sv.setAddr(netip.Addr{}, "")
		sv.mark("")
	}
	if !sv.fqdnSet {
		sv.fqdnSet = true
		sv.mark("")
	}
	if sv.port != int(it.port) {
		sv.port = int(it.port)
		sv.mark("")
	}
	if !sv.ignoreWeight {
		if w := (int(it.weight) + 255) / 256; sv.weight != w {
			sv.weight = w
			sv.mark("")
		}
	}
	if it.ar.IsValid() {
		sv.sec.unlinkHost(sv)
		sv.setAddr(it.ar, "DNS additional record")
		return
	}
	hr := sv.sec.linkHost(sv, it.target)
	if hr.fresh(time.Now()) {
		hr.pickIP(sv, map[heldKey]int{}, -1)
	}
}

// empty frees slot sv: no record, no name, no port, no address: MAINT
// (resolution) for reason. Its weight stays, as HAProxy's.
func (t *template) empty(sv *server, reason string) {
	if sv.srvItem != nil {
		delete(t.byItem, sv.srvItem)
		sv.srvItem = nil
	}
	sv.sec.unlinkHost(sv)
	sv.restored.ok = false
	if sv.fqdn != "" || sv.port != 0 {
		sv.fqdn, sv.port = "", 0
		sv.mark(reason)
	}
	sv.setAddr(netip.Addr{}, reason)
}

// linkHost makes sv a requester of the A/AAAA resolution of name with its
// preferred family (creating and starting it if needed) and returns it.
func (sec *section) linkHost(sv *server, name string) *resolution {
	if sv.host != nil && sv.host.name == name {
		return sv.host
	}
	sec.unlinkHost(sv)
	r := sec.resolution(name, sv.prefer)
	r.hosts = append(r.hosts, sv)
	sv.host, sv.ipItem = r, nil
	return r
}

// unlinkHost ends sv's A/AAAA resolution; a resolution left without
// requesters ends at its next turn.
func (sec *section) unlinkHost(sv *server) {
	r := sv.host
	if r == nil {
		return
	}
	for i, h := range r.hosts {
		if h == sv {
			r.hosts = append(r.hosts[:i], r.hosts[i+1:]...)
			break
		}
	}
	sv.host, sv.ipItem = nil, nil
}
