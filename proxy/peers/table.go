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
		name:      t.Name(),
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

// since appends to dst up to n slots with ids above after, skipping the
// stale ones, and returns them with the id to resume from: the last one
// looked at (so that stale slots are not looked at again).
func (tb *table) since(dst []slot, after uint64, n int) ([]slot, uint64) {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	i := sort.Search(len(tb.log), func(i int) bool { return tb.log[i].id > after })
	next := after
	for ; i < len(tb.log) && n > 0; i++ {
		s := tb.log[i]
		next = s.id
		if s.e.SyncID() != s.id {
			continue
		}
		dst = append(dst, s)
		n--
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
func (tb *table) oldestAfter(id uint64) int64 {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	i := sort.Search(len(tb.log), func(i int) bool { return tb.log[i].id > id })
	if i == len(tb.log) {
		return 0
	}
	return tb.log[i].at
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
