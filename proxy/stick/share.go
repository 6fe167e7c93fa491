package stick

// Sharing a table with peers: the hooks a replication layer (proxy/peers)
// uses, kept off the request path's locks.
//
// Local changes. When a table is shared (SetShared), every local change to
// an entry (a count, a server stored, a touch that re-arms its expiry, a
// `set table`) queues the entry on the table's pending stack, once: the
// entry's queued flag is set by the first change and cleared when the
// replication layer takes it (DrainUpdates), so that an entry changed a
// thousand times between two drains is queued once and read once, with its
// latest data. Queueing is two atomic operations on the first change and
// one atomic load on the next ones; it takes no lock, and an unshared table
// pays one atomic load per change.
//
// Learned changes. Learn stores what a peer sent as a remote touch: it is
// not a local change, so it is never queued back (no echo between peers).
//
// Aggregate tables (Config.Origins > 0, fulcrum's own). Each aggregated
// field (counters and rates) keeps this instance's own count in its usual
// place and one slot per other instance after the table's other words; a
// read (Value, show table, filters) gives the sum. Export with own = true
// gives this instance's own counts, which the other instances store in
// their slot for it (Learn with its origin), so that each instance's
// contribution is written by that instance only: resending it is harmless
// and nothing is counted twice.

import (
	"encoding/binary"
	"math"
)

// changed queues e as changed locally when the table is shared and e is
// not queued yet. It takes no lock: the caller may hold e.mu or none.
//
// The pending stack is pushed with compare-and-swap and emptied whole by
// DrainUpdates (a swap), so it has no ABA problem: a push only needs the
// head it read to still be the head.
func (t *Table) changed(e *Entry) {
	if !t.shared.Load() || e.queued.Load() || !e.queued.CompareAndSwap(false, true) {
		return
	}
	for {
		head := t.pending.Load()
		e.qnext = head
		if t.pending.CompareAndSwap(head, e) {
			return
		}
	}
}

// SetShared turns the queueing of local changes on or off. Turning it on
// does not queue the entries already there (a replication layer teaches
// those with Range).
func (t *Table) SetShared(on bool) { t.shared.Store(on) }

// Shared reports whether local changes are queued.
func (t *Table) Shared() bool { return t.shared.Load() }

// DrainUpdates takes every entry changed locally since the last call and
// calls fn for each, most recently queued first, and returns how many it
// took. An entry is unqueued before fn sees it, so a change made while fn
// runs queues it again. An entry may have left the table meanwhile (Export
// then says so). Only one goroutine may drain a table.
func (t *Table) DrainUpdates(fn func(e *Entry)) int {
	n := 0
	for e := t.pending.Swap(nil); e != nil; n++ {
		next := e.qnext
		e.qnext = nil
		e.queued.Store(false)
		fn(e)
		e = next
	}
	return n
}

// Pending reports whether changes are queued, not yet drained.
func (t *Table) Pending() bool { return t.pending.Load() != nil }

// Origins returns the number of other instances an aggregate table adds
// up (0 for an ordinary table).
func (t *Table) Origins() int { return t.origins }

// Key returns e's key.
func (e *Entry) Key() Key { return e.key }

// SyncID returns the update id the replication layer last gave e (0:
// none). It is the replication layer's: the table never reads it.
func (e *Entry) SyncID() uint64 { return e.syncID.Load() }

// SetSyncID records e's update id for the replication layer.
func (e *Entry) SetSyncID(id uint64) { e.syncID.Store(id) }

// Freq is a rate as peers exchange it (HAProxy's freq_ctr on the wire): the
// age of its current period in milliseconds, and the events counted in the
// current and the previous period.
type Freq struct {
	Age        uint32
	Curr, Prev uint32
}

// Data is an entry's data as peers exchange it. Bit d of Types says that
// field d is present. Integers are in Val (server_id as the bits of its
// int32), rates in Freq, the server name in ServerKey ("" = none).
type Data struct {
	Types     uint32
	Val       [NumDataTypes]uint64
	Freq      [NumDataTypes]Freq
	ServerKey string
}

// Has reports whether field d is present.
func (d *Data) Has(dt DataType) bool { return dt < NumDataTypes && d.Types&(1<<dt) != 0 }

// Export fills d with every field e stores and returns the time left
// before e expires, in ms (0 when the table has no expire); ok is false
// when e has left the table. In an aggregate table, own chooses what an
// aggregated field gives: this instance's own count (for fulcrum peers,
// which add the instances up), or the sum (for peers that do not: a rate
// then reads as a counter whose previous period holds the summed rate, so
// that it reads the same now and decays over one period).
func (t *Table) Export(e *Entry, d *Data, own bool) (expire int64, ok bool) {
	sh := t.shardOf(e.key)
	sh.mu.Lock()
	dead, exp := e.dead, e.exp
	sh.mu.Unlock()
	if dead {
		return 0, false
	}
	now := t.nowMS()
	if t.expire > 0 {
		if exp <= now {
			// Expired, not yet removed: peers are not taught it (a
			// fresh-user trial saw HAProxy learn a dead entry back).
			return 0, false
		}
		expire = exp - now
	}
	d.Types = 0
	d.ServerKey = ""
	var key uint64
	e.mu.Lock()
	for dt := range NumDataTypes {
		o := t.off[dt]
		if o < 0 {
			continue
		}
		d.Types |= 1 << dt
		w := e.data[o:]
		summed := !own && t.aoff[dt] >= 0
		switch dataTypes[dt].kind {
		case kindFreq:
			if summed {
				v := t.sumLocked(e, dt, o, now)
				d.Freq[dt] = Freq{Prev: uint32(min(v, math.MaxUint32))}
				continue
			}
			d.Freq[dt] = freqExport(w, now)
		case kindDict:
			key = w[0]
		default:
			if summed {
				d.Val[dt] = uint64(t.sumLocked(e, dt, o, now))
				continue
			}
			d.Val[dt] = w[0]
		}
	}
	e.mu.Unlock()
	if key != 0 {
		d.ServerKey = t.dictValue(key)
	}
	return expire, true
}

// freqExport returns the rate at w as peers send it at now.
func freqExport(w []uint64, now int64) Freq {
	tick := int64(w[0])
	if tick == 0 {
		return Freq{} // never counted
	}
	age := min(max(now-tick, 0), math.MaxUint32)
	return Freq{Age: uint32(age), Curr: uint32(w[1]), Prev: uint32(w[2])}
}

// learnWalk bounds how far Learn looks back from a shard's tail for the
// place of an entry whose expiry is sooner than the last touched ones'.
const learnWalk = 16

// Learn stores d, received from a peer, in the entry of k, created if
// needed (a full table purges as Get does), and returns the entry, or nil
// when the table had no room. It is a remote touch: the entry is not queued as changed.
// Fields the table does not store are ignored, and so is conn_cur (see
// DataType.Local); a field absent from d stays as it was, and so does the
// server name when d has none.
//
// expire is the time left before the entry expires, in ms, as the peer
// sent it, at most the table's expire; below 0 means the table's expire.
// An entry whose expiry is sooner than the last touched ones' is placed
// up to learnWalk entries back from its shard's tail: beyond, it may leave
// late, by at most the table's expire.
//
// In an aggregate table, origin (1..Origins) is the instance d comes from:
// its aggregated fields go to that instance's slot. With origin 0 (a peer
// that does not add up, such as HAProxy) aggregated fields are ignored.
func (t *Table) Learn(k Key, d *Data, expire int64, origin int) *Entry {
	return t.learn(k, d, expire, origin, false)
}

// learn is Learn; own stores aggregated fields in this instance's own
// slot (Import).
func (t *Table) learn(k Key, d *Data, expire int64, origin int, own bool) *Entry {
	var skey uint64
	if d.Has(ServerKey) && d.ServerKey != "" && t.off[ServerKey] >= 0 {
		skey = uint64(t.dictID(d.ServerKey))
	}
	now := t.nowMS()
	e := t.get(k, now, false) // placed below, at the peer's expiry
	if e == nil {
		return nil
	}
	e.mu.Lock()
	for dt := range NumDataTypes {
		if !d.Has(dt) || t.off[dt] < 0 || dt.Local() {
			continue
		}
		w := e.data[t.off[dt]:]
		if a := t.aoff[dt]; a >= 0 && !own {
			if origin < 1 || origin > t.origins {
				continue
			}
			w = e.data[int(a)+(origin-1)*dataTypes[dt].kind.words():]
		}
		switch dataTypes[dt].kind {
		case kindFreq:
			f := d.Freq[dt]
			w[0], w[1], w[2] = uint64(now-int64(f.Age)), uint64(f.Curr), uint64(f.Prev)
		case kindDict:
			if skey != 0 {
				w[0] = skey
			}
		case kindULL:
			w[0] = d.Val[dt]
		default:
			w[0] = uint64(uint32(d.Val[dt]))
		}
	}
	e.mu.Unlock()

	// Release without queueing, at the expiry the peer gave.
	sh := t.shardOf(k)
	sh.mu.Lock()
	e.ref--
	var placed int64
	if !e.dead {
		exp := now + t.expire
		if t.expire > 0 && expire >= 0 && expire < t.expire {
			exp = now + expire
		}
		t.unlinkLocked(sh, e)
		t.insertLocked(sh, e, exp)
		placed = exp
	}
	sh.mu.Unlock()
	if a := t.armed.Load(); placed != 0 && a != 0 && placed < a {
		select {
		case t.wake <- struct{}{}:
		default:
		}
	}
	return e
}

// insertLocked links e into sh in expiry order, looking back at most
// learnWalk entries from the tail, with expiry exp.
func (t *Table) insertLocked(sh *shard, e *Entry, exp int64) {
	e.exp = exp
	after := sh.tail
	for i := 0; i < learnWalk && after != nil && after.exp > exp; i++ {
		after = after.prev
	}
	e.prev = after
	if after == nil {
		e.next = sh.head
		sh.head = e
	} else {
		e.next = after.next
		after.next = e
	}
	if e.next != nil {
		e.next.prev = e
	} else {
		sh.tail = e
	}
}

// sumLocked returns aggregated field d of e summed over the instances:
// this one's (at o) and the other instances' slots.
func (t *Table) sumLocked(e *Entry, d DataType, o int8, now int64) int64 {
	if now == 0 {
		now = t.nowMS()
	}
	a, n := int(t.aoff[d]), dataTypes[d].kind.words()
	if dataTypes[d].kind == kindFreq {
		// The events of each instance, then one division: the sum of the
		// instances' rates, not of their rounded rates.
		p := t.per[d]
		ev := freqEvents(e.data[o:], p, now)
		for i := range t.origins {
			ev += freqEvents(e.data[a+i*n:], p, now)
		}
		return int64(ev / uint64(p))
	}
	v := t.ownLocked(e, d, o, now)
	for i := range t.origins {
		w := e.data[a+i*n:]
		switch dataTypes[d].kind {
		case kindULL:
			v += int64(w[0])
		default:
			v += int64(uint32(w[0]))
		}
	}
	return v
}

// Range calls fn with each entry of the table, shard after shard, least
// recently touched first, until fn returns false. It holds no lock while
// fn runs: entries may change or leave meanwhile (Export says so), and
// entries added meanwhile may be missed.
func (t *Table) Range(fn func(e *Entry) bool) {
	var batch []*Entry
	for i := range t.shards {
		sh := &t.shards[i]
		sh.mu.Lock()
		batch = batch[:0]
		for e := sh.head; e != nil; e = e.next {
			batch = append(batch, e)
		}
		sh.mu.Unlock()
		for _, e := range batch {
			if !fn(e) {
				return
			}
		}
	}
}

// AppendKeyBytes appends k as peers send it: 4 bytes in network order for
// an ip or integer key, 16 for ipv6, the bytes of a string or binary key.
func (t *Table) AppendKeyBytes(dst []byte, k Key) []byte {
	switch t.typ {
	case KeyIP, KeyInteger:
		return binary.BigEndian.AppendUint32(dst, uint32(k.lo))
	case KeyIPv6:
		dst = binary.BigEndian.AppendUint64(dst, k.hi)
		return binary.BigEndian.AppendUint64(dst, k.lo)
	}
	return append(dst, k.s...)
}

// KeyFromBytes returns the key b holds, as AppendKeyBytes gives it: ok is
// false when an ip or integer key is not 4 bytes or an ipv6 one not 16.
// A string or binary key is cut to the key length; a binary key loses its
// trailing zero bytes (HAProxy pads binary keys with zeros to their length,
// fulcrum keeps them as sampled).
func (t *Table) KeyFromBytes(b []byte) (Key, bool) {
	switch t.typ {
	case KeyIP, KeyInteger:
		if len(b) != 4 {
			return Key{}, false
		}
		return Key{lo: uint64(binary.BigEndian.Uint32(b))}, true
	case KeyIPv6:
		if len(b) != 16 {
			return Key{}, false
		}
		return Key{hi: binary.BigEndian.Uint64(b), lo: binary.BigEndian.Uint64(b[8:])}, true
	case KeyBinary:
		for len(b) > 0 && b[len(b)-1] == 0 {
			b = b[:len(b)-1]
		}
	}
	return StringKey(b, t.keyLen), true
}

// Live reports whether e is still in the table.
func (t *Table) Live(e *Entry) bool {
	sh := t.shardOf(e.key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	return !e.dead
}

// Import copies the entries of from, a table of the same key type that a
// reload replaces with t, with their expiry: the data types both store,
// but conn_cur (the connections still open hold from's entries and will
// end there), and in an aggregate table this instance's own counts only
// (the other instances send theirs again). Entries are not queued as
// changed: the peers have them. It returns how many it copied.
func (t *Table) Import(from *Table) int {
	if from.typ != t.typ {
		return 0
	}
	var d Data
	var kb []byte
	n := 0
	from.Range(func(e *Entry) bool {
		exp, ok := from.Export(e, &d, true)
		if !ok {
			return true
		}
		if from.expire == 0 {
			exp = -1
		}
		kb = from.AppendKeyBytes(kb[:0], e.key)
		if k, ok := t.KeyFromBytes(kb); ok && t.learn(k, &d, exp, 0, true) != nil {
			n++
		}
		return true
	})
	return n
}
