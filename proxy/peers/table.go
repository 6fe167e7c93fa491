package peers

// A shared table: a stick table of the section, and the log of its local
// changes that every session pushes from.
//
// The log plays the part of HAProxy's update tree (stktable.updates): each
// entry changed locally gets the next update id when the sync loop drains
// the table (stick.Table.DrainUpdates), and a slot {id, entry} is
// appended. A session pushes the slots after the last id it pushed; its
// peer acknowledges ids. An entry changed again gets a newer id and a new
// slot; its older slots are stale (the entry's SyncID is no longer theirs)
// and skipped, so every live entry is in the log once, at its latest
// change, and "every change after id X" is always the slots after X:
// resuming a session from the id its peer acknowledged sends exactly what
// the peer missed. Stale slots and entries gone from the table are
// compacted away once they are half the log.
//
// Ids are 64 bits here and their low 32 bits on the wire, where HAProxy
// compares them modulo 2^32.
//
// An aggregate table has a second log, of the entries whose sum changed
// because a fulcrum peer sent its counts (a remote touch, so not in the
// first log): peers that do not add up (HAProxy) get the sums, and must
// hear of those changes too. Its ids come from the same counter, so that
// one acknowledged id says where a session stands in both; sessions with
// such peers push from the two logs merged in id order, sessions with
// fulcrum peers from the first only.

import (
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fulcrum-proxy/fulcrum/proxy/stick"
)

// slot is one local change in a table's log.
type slot struct {
	id uint64
	e  *stick.Entry
	at int64 // unix ms when it was drained, for the lag
}

// table is a shared stick table and its log.
type table struct {
	t   *stick.Table
	def localDef

	mu     sync.Mutex // guards what follows
	log    []slot     // in id order
	update uint64     // last id given
	stale  int        // slots known stale

	// The sum log of an aggregate table: the entries learned from fulcrum
	// peers since the last drain (sumPending), then their slots and each
	// entry's latest id there.
	sumPending map[*stick.Entry]struct{}
	sumLog     []slot
	sumIDs     map[*stick.Entry]uint64
	// learned counts the entries learned from peers (remote touches),
	// HAProxy's share of stktable.update that is not local.
	learned atomic.Uint64
	// commit is the largest id pushed to a peer, HAProxy's commitupdate.
	commit atomic.Uint64
}

// committed records that id was pushed to a peer.
func (tb *table) committed(id uint64) {
	for {
		c := tb.commit.Load()
		if id <= c || tb.commit.CompareAndSwap(c, id) {
			return
		}
	}
}

// learnedAdd counts an entry learned from a peer.
func (tb *table) learnedAdd() { tb.learned.Add(1) }

// newTable returns the shared state of t, with local id id.
func newTable(id uint64, tc TableConfig) *table {
	t := tc.Table
	tb := &table{t: t}
	tb.def = localDef{
		id:        id,
		name:      tc.wireName(),
		keyType:   wireKeyType(t.Type()),
		keySize:   wireKeySize(t.Type(), tc.KeyLen),
		store:     t.Store(),
		expire:    uint64(t.ExpireAfter().Milliseconds()),
		aggregate: tc.Aggregate && t.Origins() > 0,
	}
	return tb
}

// drain gives an update id to each entry changed locally since the last
// drain and logs it. It is called by the sync loop only, and returns how
// many entries it took.
func (tb *table) drain(now time.Time) int {
	at := now.UnixMilli()
	tb.mu.Lock()
	defer tb.mu.Unlock()
	n := tb.t.DrainUpdates(func(e *stick.Entry) {
		if old := e.SyncID(); old != 0 {
			tb.stale++
		}
		tb.update++
		e.SetSyncID(tb.update)
		tb.log = append(tb.log, slot{id: tb.update, e: e, at: at})
	})
	for e := range tb.sumPending {
		tb.update++
		tb.sumIDs[e] = tb.update
		tb.sumLog = append(tb.sumLog, slot{id: tb.update, e: e, at: at})
		delete(tb.sumPending, e)
		n++
	}
	if len(tb.sumLog) > 2*len(tb.sumIDs)+4096 {
		kept := tb.sumLog[:0]
		for _, s := range tb.sumLog {
			switch {
			case tb.sumIDs[s.e] != s.id:
			case !tb.t.Live(s.e):
				delete(tb.sumIDs, s.e)
			default:
				kept = append(kept, s)
			}
		}
		clear(tb.sumLog[len(kept):])
		tb.sumLog = kept
	}
	// Compact when stale slots are half the log, or when the log holds
	// twice as many slots as the table has entries (entries that left).
	if tb.stale > 1024 && tb.stale > len(tb.log)/2 || len(tb.log) > 2*tb.t.Used()+4096 {
		tb.compactLocked()
	}
	return n
}

// compactLocked drops the stale slots and those of entries gone from the
// table. tb.mu is held.
func (tb *table) compactLocked() {
	kept := tb.log[:0]
	for _, s := range tb.log {
		if s.e.SyncID() == s.id && tb.t.Live(s.e) {
			kept = append(kept, s)
		}
	}
	clear(tb.log[len(kept):])
	tb.log = kept
	tb.stale = 0
}

// sumChanged records that e's sums changed by what a fulcrum peer sent
// (an aggregate table; the reader of that peer's session calls it).
func (tb *table) sumChanged(e *stick.Entry) {
	tb.mu.Lock()
	if tb.sumPending == nil {
		tb.sumPending = map[*stick.Entry]struct{}{}
		tb.sumIDs = map[*stick.Entry]uint64{}
	}
	tb.sumPending[e] = struct{}{}
	tb.mu.Unlock()
}

// since appends to dst up to n slots with ids above after, skipping the
// stale ones, and returns them with the id to resume from: the last one
// looked at (so that stale slots are not looked at again). sums merges in
// the sum log (sessions with peers that do not add up).
func (tb *table) since(dst []slot, after uint64, n int, sums bool) ([]slot, uint64) {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	first := func(log []slot) int { return sort.Search(len(log), func(i int) bool { return log[i].id > after }) }
	i, j := first(tb.log), len(tb.sumLog)
	if sums {
		j = first(tb.sumLog)
	}
	next := after
	for n > 0 && (i < len(tb.log) || j < len(tb.sumLog)) {
		var s slot
		var live bool
		if j == len(tb.sumLog) || i < len(tb.log) && tb.log[i].id < tb.sumLog[j].id {
			s = tb.log[i]
			i++
			live = s.e.SyncID() == s.id
		} else {
			s = tb.sumLog[j]
			j++
			live = tb.sumIDs[s.e] == s.id
		}
		next = s.id
		if live {
			dst = append(dst, s)
			n--
		}
	}
	return dst, next
}

// current returns the last update id given.
func (tb *table) current() uint64 {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	return tb.update
}

// oldestAfter returns when the oldest change after id was drained (unix
// ms), 0 when there is none: how far behind a peer that acknowledged id
// is.
func (tb *table) oldestAfter(id uint64, sums bool) int64 {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	oldest := int64(0)
	logs := [][]slot{tb.log}
	if sums {
		logs = append(logs, tb.sumLog)
	}
	for _, log := range logs {
		i := sort.Search(len(log), func(i int) bool { return log[i].id > id })
		if i < len(log) && (oldest == 0 || log[i].at < oldest) {
			oldest = log[i].at
		}
	}
	return oldest
}

// widen returns the 64-bit id whose low 32 bits are id32 and which is the
// closest at or below cur: a peer's acknowledgement, which can only be of
// an id this side gave.
func widen(id32 uint32, cur uint64) uint64 {
	back := uint32(cur) - id32
	if uint64(back) > cur {
		return 0
	}
	return cur - uint64(back)
}
