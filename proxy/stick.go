package proxy

// Stick tables in the request path: the tables of a configuration, the
// tracking counters of a request (track-sc, sc_* fetches), stick rules
// (on, match, store-request) and the expiry timer. Cookie persistence is
// in cookie.go. The tables themselves are proxy/stick's.
//
// Per connection: tcp_request connection rules may track keys in the
// connection's tracker (clientConn.st), held until the connection closes;
// an HTTP session's requests start with those entries in their slots.
// Per request, in order: the frontend's then the backend's http_request
// rules may track keys in free slots (tracker.Track counts the request on
// each tracked entry); persist runs the cookie then the stick rules and
// pins the request to a server when one is found that persistence may use
// (up or DRAIN, not DOWN or MAINT, as HAProxy); the queue (Backend.take) then
// serves it on that server; at the end of the request (stickEnd, from
// Stream.End) the stores are written with the server that served it, and the
// tracked entries get their bytes and errors and are released.

import (
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"time"

	"github.com/fulcrum-proxy/fulcrum/conf"
	"github.com/fulcrum-proxy/fulcrum/proxy/acl"
	"github.com/fulcrum-proxy/fulcrum/proxy/stick"
)

// tables are the stick tables of a proxy.
type tables struct {
	list   []*stick.Table // in declaration order
	byName map[string]*stick.Table
	track  map[*acl.Rule]*stick.Table // the table of each track-sc rule
	sticks map[*Backend]*backendStick // persistence of each backend that has some
	// clock is the tables' clock; tests replace its now before Start. It
	// is apart from the proxy so that a table kept by a reload does not
	// keep the proxy that created it alive.
	clock *tableClock
}

// tableClock is the stick tables' time source; nil now means time.Now.
type tableClock struct{ now func() time.Time }

// backendStick is a backend's persistence: its stick rules and cookie.
type backendStick struct {
	rules  []stickRule
	cookie *cookiePersist
}

// stickRule is a compiled stick rule with its table resolved.
type stickRule struct {
	*acl.StickRule
	t *stick.Table
}

// stickStore is a key whose entry gets the request's server at its end.
type stickStore struct {
	t *stick.Table
	k stick.Key
}

// buildTables creates the tables of cfg and resolves the rules that use
// them. conf has checked the names; a miss here is reported as an error.
// prev, if non-nil, is the proxy a reload replaces: a table of the same
// name, key type, key length, size, expire and stored data is kept with its
// entries (HAProxy keeps them through a reload by peers; a table whose
// definition changed starts empty).
func (p *Proxy) buildTables(prev *Proxy) error {
	ts := &p.tables
	ts.clock = &tableClock{}
	ts.byName = map[string]*stick.Table{}
	ts.track = map[*acl.Rule]*stick.Table{}
	ts.sticks = map[*Backend]*backendStick{}
	type decl struct {
		c   *conf.StickTable
		own *Backend // the backend whose stick rules may use it
	}
	var decls []decl
	for _, fe := range p.Conf.Frontends {
		if fe.StickTable != nil {
			decls = append(decls, decl{c: fe.StickTable})
		}
	}
	for _, be := range p.Conf.Backends {
		if be.StickTable != nil {
			decls = append(decls, decl{c: be.StickTable})
		}
	}
	for _, t := range p.Conf.Tables {
		decls = append(decls, decl{c: t})
	}
	slices.SortStableFunc(decls, func(a, b decl) int { return a.c.Line - b.c.Line })
	// Tables that stick rules use store the server, as HAProxy adds
	// server_id and server_key to them.
	sticky := map[string]bool{}
	for _, be := range p.Backends {
		for _, r := range be.Conf.Stick {
			name := r.Table
			if name == "" {
				name = be.Name
			}
			sticky[name] = true
		}
	}
	tc := ts.clock
	clock := func() time.Time {
		if tc.now != nil {
			return tc.now()
		}
		return time.Now()
	}
	for _, d := range decls {
		typ, err := stick.ParseKeyType(d.c.Type)
		if err != nil {
			return err
		}
		store := d.c.Store
		if sticky[d.c.Name] {
			store.Add(stick.ServerID, 0)
			store.Add(stick.ServerKey, 0)
		}
		origins := 0
		if ps := p.Conf.PeersSection(d.c.Peers); ps != nil && d.c.PeersAggregate {
			origins = len(ps.Peers) - 1 // a slot per other member
		}
		var t *stick.Table
		if prev != nil {
			t = prev.keptTable(d.c.Name, typ, d.c.Len, d.c.Size, d.c.Expire, store, origins)
		}
		if t == nil {
			t = stick.New(stick.Config{Name: d.c.Name, Type: typ, KeyLen: d.c.Len, Size: d.c.Size,
				Expire: d.c.Expire, Store: store, Now: clock, Origins: origins})
			if old := prev.table(d.c.Name); old != nil && d.c.Peers != "" {
				// A shared table redefined by the reload starts from the
				// old one's entries, as HAProxy's new process learns them
				// from the old one through the local peer: no resync. Its
				// changes are queued at once (the mesh takes it over when the
				// reload is done).
				t.Import(old)
				t.SetShared(old.Shared())
			}
		}
		ts.list = append(ts.list, t)
		ts.byName[t.Name()] = t
	}
	own := func(section, name string) *stick.Table {
		if name == "" {
			name = section
		}
		return ts.byName[name]
	}
	// The table of each track-sc rule: tcp_request connection and
	// http_request rules of frontends, http_request rules of backends.
	track := func(section string, rules []*acl.Rule) {
		for _, r := range rules {
			if r.Action == acl.ActTrackSC {
				ts.track[r] = own(section, r.TrackTable())
			}
		}
	}
	for _, fe := range p.Frontends {
		track(fe.Name, fe.Conf.Rules.TCPRules())
		track(fe.Name, fe.Conf.Rules.HTTPRules())
	}
	for _, be := range p.Backends {
		track(be.Name, be.Conf.Rules.HTTPRules())
		var bs backendStick
		for _, r := range be.Conf.Stick {
			t := own(be.Name, r.Table)
			if t == nil {
				return fmt.Errorf("backend %q: stick %s: no such table", be.Name, r.Text)
			}
			bs.rules = append(bs.rules, stickRule{r, t})
		}
		if be.Conf.Cookie != nil {
			bs.cookie = newCookiePersist(be)
		}
		if len(bs.rules) > 0 || bs.cookie != nil {
			ts.sticks[be] = &bs
		}
	}
	return nil
}

// Tables returns the stick tables in the order `show table` lists them:
// the last declared first, as HAProxy's list.
func (p *Proxy) Tables() []*stick.Table {
	out := slices.Clone(p.tables.list)
	slices.Reverse(out)
	return out
}

// Table returns the stick table named name, or nil.
func (p *Proxy) Table(name string) *stick.Table { return p.tables.byName[name] }

// table is Table on a proxy that may be nil (no previous proxy).
func (p *Proxy) table(name string) *stick.Table {
	if p == nil {
		return nil
	}
	return p.tables.byName[name]
}

// expireTables removes expired entries until the proxy stops: each table
// with an expire has a timer set at its next expiry, at least 10 ms apart,
// re-armed when an entry learned from a peer expires sooner.
func (p *Proxy) expireTables() {
	for _, t := range p.tables.list {
		if t.ExpireAfter() == 0 {
			continue
		}
		go func() {
			for {
				timer := time.NewTimer(max(t.NextExpiry(), 10*time.Millisecond))
				select {
				case <-p.ctx.Done():
					timer.Stop()
					return
				case <-timer.C:
					t.Expire()
				case <-t.ExpiryChanged():
					// A learned entry expires sooner: re-armed for it.
					timer.Stop()
				}
			}
		}()
	}
}

// keyOf converts a fetched sample to a key of t; ok is false when it does
// not convert (an IPv6 address for an ip table, text for an integer one).
func keyOf(t *stick.Table, v acl.Value) (stick.Key, bool) {
	switch t.Type() {
	case stick.KeyIP, stick.KeyIPv6:
		a := v.IP
		if v.Kind == acl.ValueStr {
			var err error
			if a, err = netip.ParseAddr(string(v.Str)); err != nil {
				return stick.Key{}, false
			}
		} else if v.Kind != acl.ValueIP {
			return stick.Key{}, false
		}
		return stick.IPKey(t.Type(), a)
	case stick.KeyInteger:
		switch v.Kind {
		case acl.ValueInt:
			return stick.IntKey(v.Int), true
		case acl.ValueStr:
			n, err := strconv.ParseInt(string(v.Str), 10, 64)
			return stick.IntKey(n), err == nil
		}
		return stick.Key{}, false
	}
	switch v.Kind {
	case acl.ValueIP:
		return stick.StringKey(v.IP.AppendTo(nil), t.KeyLen()), true
	case acl.ValueInt:
		return stick.StringKey(strconv.AppendInt(nil, v.Int, 10), t.KeyLen()), true
	}
	return stick.StringKey(v.Str, t.KeyLen()), true
}

// tracker is a set of tracking counters (HAProxy's stkctr[0..2]): the
// acl.Tracker of a rule view. A client connection has one, which
// tcp_request connection rules fill and which holds its entries until the
// connection closes (HAProxy's session counters); an HTTP session has one
// for its current request (the stream's), which starts each request with
// the connection's entries in their slots, so that sc_* fetches see them
// and a track-sc rule on a busy slot does nothing, as in HAProxy.
type tracker struct {
	p  *Proxy
	sc [3]trackSlot
	// connStage: Track counts a connection (tcp_request connection rules),
	// not a request.
	connStage bool
	stores    []stickStore // stick store keys, written at the request's end
}

// trackSlot is one tracking counter: an entry held in a table.
type trackSlot struct {
	t *stick.Table
	e *stick.Entry
	// conn: tracked at the connection stage. The entry is held by the
	// connection's tracker until the connection closes; a request's
	// tracker counts its requests, errors and bytes on it but does not
	// release it.
	conn bool
}

// Track starts tracking key in rule's slot, unless the slot already
// tracks something. At the connection stage the connection counts on the
// entry (conn_cur until it closes, conn_cnt, conn_rate); otherwise the
// request counts as HAProxy counts a tracked HTTP request (conn_cur while
// it runs, conn_cnt, conn_rate, http_req_cnt, http_req_rate). A full table
// gives no entry: nothing is tracked.
func (tr *tracker) Track(rule *acl.Rule, key acl.Value) {
	slot := &tr.sc[rule.TrackSlot()]
	if slot.e != nil {
		return
	}
	t := tr.p.tables.track[rule]
	if t == nil {
		return
	}
	k, ok := keyOf(t, key)
	if !ok {
		return
	}
	e := t.Get(k)
	if e == nil {
		tr.p.log.Debug().Str("table", t.Name()).Msg("stick table full: key not tracked")
		return
	}
	if tr.connStage {
		t.Update(e, stick.ConnCur, stick.ConnCnt, stick.ConnRate)
	} else {
		t.Update(e, stick.ConnCur, stick.ConnCnt, stick.ConnRate, stick.HTTPReqCnt, stick.HTTPReqRate)
	}
	*slot = trackSlot{t: t, e: e, conn: tr.connStage}
}

// Tracked returns data d of the entry tracked in slot.
func (tr *tracker) Tracked(slot int, d stick.DataType) (int64, bool) {
	if slot < 0 || slot >= len(tr.sc) || tr.sc[slot].e == nil {
		return 0, false
	}
	return tr.sc[slot].t.Value(tr.sc[slot].e, d)
}

// Inc adds one to each of ds on the entry tracked in slot (sc-inc-gpc0,
// sc_inc_gpc0) and returns ds[0]'s new value.
func (tr *tracker) Inc(slot int, ds ...stick.DataType) (int64, bool) {
	if slot < 0 || slot >= len(tr.sc) || tr.sc[slot].e == nil {
		return 0, false
	}
	sc := &tr.sc[slot]
	return incStored(sc.t, sc.e, ds)
}

// incStored adds one to each of ds that t stores and returns ds[0]'s new
// value: 0 when t stores ds[0] not (a gpc0_rate without gpc0 still
// counts, as HAProxy's); ok is false when it stores none of ds.
func incStored(t *stick.Table, e *stick.Entry, ds []stick.DataType) (int64, bool) {
	if !slices.ContainsFunc(ds, t.Stores) {
		return 0, false
	}
	t.Update(e, ds...)
	v, _ := t.Value(e, ds[0])
	return v, true
}

// Swap sets d of the entry tracked in slot to v (sc-set-gpt0,
// sc_clr_gpc0) and returns the old value.
func (tr *tracker) Swap(slot int, d stick.DataType, v int64) (int64, bool) {
	if slot < 0 || slot >= len(tr.sc) || tr.sc[slot].e == nil {
		return 0, false
	}
	return tr.sc[slot].t.Swap(tr.sc[slot].e, d, v)
}

// Src reads, counts or clears data d of src's entry in the table named
// table, tracked or not (HAProxy's src_* fetches: acl.Tracker).
func (tr *tracker) Src(table string, src netip.Addr, op acl.SrcOp, d, rate stick.DataType) (int64, bool) {
	t := tr.p.Table(table)
	if t == nil {
		return 0, false
	}
	k, ok := keyOf(t, acl.Value{Kind: acl.ValueIP, IP: src})
	if !ok {
		return 0, false
	}
	if op == acl.SrcRead {
		return t.Peek(k, d)
	}
	if !t.Stores(d) && (rate == 0 || !t.Stores(rate)) {
		return 0, false // not stored: no entry made for nothing
	}
	e := t.Get(k)
	if e == nil {
		return 0, false // full
	}
	defer t.Release(e)
	if op == acl.SrcClr {
		return t.Swap(e, d, 0)
	}
	ds := []stick.DataType{d}
	if rate != 0 {
		ds = append(ds, rate)
	}
	return incStored(t, e, ds)
}

// accepted counts a connection that the tcp_request connection rules let
// through as a session on its tracked entries (sess_cnt, sess_rate), as
// HAProxy's session_count_new.
func (tr *tracker) accepted() {
	for i := range tr.sc {
		if sc := &tr.sc[i]; sc.e != nil {
			sc.t.Update(sc.e, stick.SessCnt, stick.SessRate)
		}
	}
}

// inherit puts the connection's tracked entries in the empty slots of a
// request's tracker (at the start of an HTTP session); conn nil: none.
func (tr *tracker) inherit(conn *tracker) {
	if conn == nil {
		return
	}
	for i := range conn.sc {
		if conn.sc[i].e != nil && tr.sc[i].e == nil {
			tr.sc[i] = conn.sc[i]
		}
	}
}

// request counts a new HTTP request on the entries kept from the
// connection stage (http_req_cnt, http_req_rate), as HAProxy counts each
// request of a session on its tracked counters; entries tracked by a
// request's own track-sc rule count it when they are tracked.
func (tr *tracker) request() {
	for i := range tr.sc {
		if sc := &tr.sc[i]; sc.conn {
			sc.t.Update(sc.e, stick.HTTPReqCnt, stick.HTTPReqRate)
		}
	}
}

// end closes a request's tracking: bytes and errors counted on every
// tracked entry, then the request's own entries get conn_cur decremented
// and are released; the connection's stay (see release). clientErr counts
// the request in http_err_*. A TCP connection ends its tracking with end
// then release. A nil tracker (a connection no rule tracked) has nothing
// to end.
func (tr *tracker) end(clientErr bool, in, out int64) {
	if tr == nil {
		return
	}
	for i := range tr.sc {
		sc := &tr.sc[i]
		if sc.e == nil {
			continue
		}
		t, e := sc.t, sc.e
		if clientErr {
			t.Update(e, stick.HTTPErrCnt, stick.HTTPErrRate)
		}
		if in > 0 {
			t.Add(e, stick.BytesInCnt, uint64(in))
			t.Add(e, stick.BytesInRate, uint64(in))
		}
		if out > 0 {
			t.Add(e, stick.BytesOutCnt, uint64(out))
			t.Add(e, stick.BytesOutRate, uint64(out))
		}
		if sc.conn {
			continue
		}
		t.Dec(e, stick.ConnCur)
		t.Release(e)
		*sc = trackSlot{}
	}
}

// release ends the connection's tracking when it closes (or is
// rejected): conn_cur decremented and the entries released. Only the
// connection's own tracker calls it; requests' trackers hold copies. A
// nil tracker (a connection no rule tracked) has nothing to release.
func (tr *tracker) release() {
	if tr == nil {
		return
	}
	for i := range tr.sc {
		sc := &tr.sc[i]
		if sc.e == nil {
			continue
		}
		sc.t.Dec(sc.e, stick.ConnCur)
		sc.t.Release(sc.e)
		*sc = trackSlot{}
	}
}

var _ acl.Tracker = (*tracker)(nil)

// persistent reports whether persistence may send a request to srv: not
// in MAINT and not DOWN, as HAProxy (a DRAIN server still takes its
// persistent clients).
func persistent(srv *Server) bool {
	return srv.Admin() != AdminMaint && srv.Op() != OpDown
}

// serverByID returns be's server with id, or nil (deleted, or an id the
// backend never gave).
func serverByID(be *Backend, id int) *Server { return be.ServerByID(id) }

// stickPersist runs be's stick rules against r: the first on/match rule
// whose key has an entry naming a server persistence may use pins the
// request to it (by server_key, else server_id, as HAProxy); on and
// store-request rules queue their key for the store at the request's end.
// A pinned server found DOWN or in MAINT is ignored: the algorithm picks,
// and the store rules then update the entry.
func (tr *tracker) stickPersist(bs *backendStick, be *Backend, r *acl.Request, pin *Server) *Server {
	tr.stores = tr.stores[:0]
	for i := range bs.rules {
		rule := &bs.rules[i]
		if !rule.Cond.Eval(r) {
			continue
		}
		v, ok := rule.Expr.Fetch(r)
		if !ok {
			continue
		}
		k, ok := keyOf(rule.t, v)
		if !ok {
			continue
		}
		if rule.Kind != acl.StickStore && pin == nil {
			if e := rule.t.Lookup(k); e != nil {
				id, name := rule.t.Server(e)
				rule.t.Release(e)
				srv := be.Server(name)
				if srv == nil {
					srv = serverByID(be, id)
				}
				if srv != nil && persistent(srv) {
					pin = srv
				}
			}
		}
		if rule.Kind != acl.StickMatch {
			tr.stores = append(tr.stores, stickStore{rule.t, k})
		}
	}
	return pin
}

// storeServer writes srv into the entries of the request's store rules.
func (tr *tracker) storeServer(srv *Server) {
	for _, st := range tr.stores {
		if e := st.t.Get(st.k); e != nil {
			st.t.SetServer(e, srv.ID, srv.Name)
			st.t.Release(e)
		}
	}
	tr.stores = tr.stores[:0]
}

// persist decides the server the current request is pinned to (nil:
// none, the algorithm picks): the cookie first, then the stick rules.
func (x *Stream) persist(be *Backend) *Server {
	bs := x.fe.p.tables.sticks[be]
	x.trk.stores = x.trk.stores[:0]
	x.ck = cookieState{}
	if bs == nil {
		return nil
	}
	var pin *Server
	if bs.cookie != nil {
		pin = x.cookieRequest(bs.cookie, be)
	}
	if len(bs.rules) > 0 {
		pin = x.trk.stickPersist(bs, be, &x.areq, pin)
	}
	return pin
}

// stickEnd ends the request for the stick tables: the store rules get the
// server that answered (tr >= 0: a response came from it), and the
// tracked entries are released.
func (x *Stream) stickEnd(srv *Server, clientErr bool, bytesOut, tr int64) {
	if srv != nil && tr >= 0 {
		x.stickStore(srv)
	}
	x.trk.stores = x.trk.stores[:0]
	if x.trk.sc[0].e != nil || x.trk.sc[1].e != nil || x.trk.sc[2].e != nil {
		x.trk.end(clientErr, x.bytesIn, bytesOut)
	}
}

// stickStore runs the pending store rules with srv, the server that
// answered, once per request (forward calls it as soon as the response
// head has arrived).
func (x *Stream) stickStore(srv *Server) {
	if len(x.trk.stores) > 0 {
		x.trk.storeServer(srv)
		x.trk.stores = x.trk.stores[:0]
	}
}

// tcpPersist runs be's stick rules for a TCP connection (layer-4 fetches
// only: src, dst, ports). It returns the server to pin the connection to
// (nil: none) and the tracker holding the keys to store once connected
// (the connection's; nil when be has no stick rules).
func (p *Proxy) tcpPersist(be *Backend, cc *clientConn) (*Server, *tracker) {
	bs := p.tables.sticks[be]
	if bs == nil || len(bs.rules) == 0 {
		return nil, nil
	}
	r := localAddr(cc)
	r.Src = cc.src
	if cc.st == nil {
		cc.st = new(tracker)
	}
	tr := cc.st
	tr.p = p
	return tr.stickPersist(bs, be, &r, nil), tr
}
