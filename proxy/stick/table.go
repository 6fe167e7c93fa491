package stick

// The table: shards of entries, lookups, references, expiry and purge.

import (
	"hash/maphash"
	"math/bits"
	"sync"
	"sync/atomic"
	"time"
)

// Config is what a table is built from.
type Config struct {
	Name   string
	Type   KeyType
	KeyLen int           // string and binary keys; 0 = 32, as HAProxy
	Size   int           // most entries, above 0
	Expire time.Duration // idle time before an entry leaves; 0 = never
	Store  Store
	// Now is the clock; nil = time.Now. Tests inject one.
	Now func() time.Time
	// Shards is the number of shards, rounded up to a power of two;
	// 0 = 64. Small tables use fewer.
	Shards int
	// Origins, above 0, makes the table aggregate (share.go): each
	// aggregated field (counters and rates, see DataType.Aggregates) keeps
	// this instance's own count plus one slot per other instance, and reads
	// as their sum. 0 = an ordinary table.
	Origins int
}

// Table is one stick table. It is safe for concurrent use.
type Table struct {
	name   string
	typ    KeyType
	keyLen int
	size   int64
	expire int64 // ms, 0 = never
	store  Store
	now    func() time.Time

	off   [NumDataTypes]int8  // word offset of each stored type, -1 if absent
	per   [NumDataTypes]int64 // period in ms of each stored rate
	words int                 // data words per entry

	// Aggregate tables (Origins > 0): aoff is the word offset of the
	// first other instance's slot of each aggregated type (-1 if none),
	// the slots of instance i (1..origins) following one another.
	origins int
	aoff    [NumDataTypes]int16

	shards []shard
	shift  uint // hash >> shift picks the shard
	seed   maphash.Seed

	used    atomic.Int64  // entries in the table
	noEntry atomic.Uint64 // new keys refused by a full table

	// armed is when the expiry timer next fires (Unix ms, NextExpiry);
	// wake tells it an entry learned from a peer expires sooner.
	armed atomic.Int64
	wake  chan struct{}

	dictMu sync.RWMutex
	dict   []string       // server_key values, by id-1
	dictIx map[string]int // value to id

	// Replication (share.go): when shared, every local change queues its
	// entry on pending, a lock-free stack the replication layer drains.
	_       [64]byte // keep pending off the fields above's cache line
	shared  atomic.Bool
	pending atomic.Pointer[Entry]
	_       [48]byte
}

// shard is a part of a table: the entries whose key hashes to it.
type shard struct {
	mu   sync.Mutex
	m    map[Key]*Entry
	head *Entry // least recently touched (first to expire)
	tail *Entry
	_    [32]byte // keep shards' locks off each other's cache line
}

// Entry is one key's record. Its data is read and changed through the
// table's methods (Add, Value, Set...), under the entry's lock.
type Entry struct {
	key        Key
	exp        int64       // ms at which it expires; shard lock
	ref        int32       // references held; shard lock
	dead       bool        // removed from its shard; shard lock
	queued     atomic.Bool // on the table's pending stack (share.go)
	prev, next *Entry      // expiry order in the shard; shard lock
	mu         sync.Mutex
	data       []uint64
	qnext      *Entry        // next on the pending stack; see queue
	syncID     atomic.Uint64 // the replication layer's update id (share.go)
}

// New builds an empty table.
func New(c Config) *Table {
	t := &Table{name: c.Name, typ: c.Type, keyLen: c.KeyLen, size: int64(c.Size),
		expire: c.Expire.Milliseconds(), store: c.Store, now: c.Now, seed: maphash.MakeSeed(),
		wake: make(chan struct{}, 1)}
	if t.keyLen <= 0 {
		t.keyLen = 32
	}
	if t.now == nil {
		t.now = time.Now
	}
	if t.size <= 0 {
		t.size = 1
	}
	for d := range NumDataTypes {
		t.off[d] = -1
		t.aoff[d] = -1
		if c.Store.Has(d) {
			t.off[d] = int8(t.words)
			t.words += dataTypes[d].kind.words()
			t.per[d] = max(1, c.Store.Period(d).Milliseconds())
		}
	}
	if c.Origins > 0 {
		t.origins = c.Origins
		for d := range NumDataTypes {
			if c.Store.Has(d) && d.Aggregates() {
				t.aoff[d] = int16(t.words)
				t.words += c.Origins * dataTypes[d].kind.words()
			}
		}
	}
	n := c.Shards
	if n <= 0 {
		n = 64
	}
	// A shard per 64 entries at least, so that a small table's purge sees
	// its oldest entries in one or a few shards.
	n = min(n, max(1, int(t.size/64)))
	n = 1 << bits.Len(uint(n-1))
	t.shards = make([]shard, n)
	for i := range t.shards {
		t.shards[i].m = map[Key]*Entry{}
	}
	t.shift = uint(64 - bits.Len(uint(n-1)))
	return t
}

// Name returns the table's name.
func (t *Table) Name() string { return t.name }

// Type returns the key type.
func (t *Table) Type() KeyType { return t.typ }

// KeyLen returns the key length of string and binary tables.
func (t *Table) KeyLen() int { return t.keyLen }

// Size returns the most entries the table holds.
func (t *Table) Size() int { return int(t.size) }

// Used returns the number of entries.
func (t *Table) Used() int { return int(t.used.Load()) }

// Expire returns the idle time after which an entry leaves (0 = never).
func (t *Table) ExpireAfter() time.Duration { return time.Duration(t.expire) * time.Millisecond }

// Store returns the stored data types.
func (t *Table) Store() *Store { return &t.store }

// Stores reports whether d is stored.
func (t *Table) Stores(d DataType) bool { return d < NumDataTypes && t.off[d] >= 0 }

// NoEntry returns how many new keys got no entry because the table was
// full and nothing could be purged.
func (t *Table) NoEntry() uint64 { return t.noEntry.Load() }

func (t *Table) nowMS() int64 { return t.now().UnixMilli() }

// shardOf returns the shard of k.
func (t *Table) shardOf(k Key) *shard {
	if len(t.shards) == 1 {
		return &t.shards[0]
	}
	var h uint64
	if k.s != "" {
		h = maphash.String(t.seed, k.s)
	} else {
		h = (k.hi ^ bits.RotateLeft64(k.lo, 29)) * 0x9E3779B97F4A7C15
		h ^= h >> 31
		h *= 0xBF58476D1CE4E5B9
	}
	return &t.shards[h>>t.shift]
}

// Get returns the entry of k, created if needed, with a reference held:
// the caller calls Release when done (a tracked session ends, a request is
// stored). Its expiry is re-armed. It returns nil when k is new and the
// table is full of referenced entries (NoEntry counts it).
func (t *Table) Get(k Key) *Entry { return t.get(k, t.nowMS(), true) }

// get is Get at now (unix ms). An entry already there is moved to its
// shard's tail with a new expiry only when touch is set (Learn places it
// itself); a new one always is.
func (t *Table) get(k Key, now int64, touch bool) *Entry {
	sh := t.shardOf(k)
	sh.mu.Lock()
	if e := sh.m[k]; e != nil {
		if t.expire > 0 && e.exp <= now && e.ref == 0 {
			// Expired, not yet swept: the key starts afresh.
			e.mu.Lock()
			clear(e.data)
			e.mu.Unlock()
		}
		if touch {
			t.touchLocked(sh, e, now)
		}
		e.ref++
		sh.mu.Unlock()
		return e
	}
	if t.used.Add(1) > t.size {
		t.used.Add(-1)
		// Purge a batch of the oldest unreferenced entries: in this shard
		// first, then in the others, one shard lock at a time.
		batch := int(t.size>>8) + 1
		n := t.purgeLocked(sh, batch)
		if n == 0 {
			sh.mu.Unlock()
			for i := range t.shards {
				o := &t.shards[i]
				if o == sh {
					continue
				}
				o.mu.Lock()
				n += t.purgeLocked(o, batch)
				o.mu.Unlock()
				if n > 0 {
					break
				}
			}
			sh.mu.Lock()
			if e := sh.m[k]; e != nil { // created meanwhile
				t.touchLocked(sh, e, now)
				e.ref++
				sh.mu.Unlock()
				return e
			}
		}
		if n == 0 || t.used.Add(1) > t.size {
			if n > 0 {
				t.used.Add(-1)
			}
			sh.mu.Unlock()
			t.noEntry.Add(1)
			return nil
		}
	}
	e := &Entry{key: k, ref: 1, data: make([]uint64, t.words)}
	sh.m[k] = e
	t.pushLocked(sh, e, now)
	sh.mu.Unlock()
	return e
}

// Lookup returns the entry of k with a reference held (the caller calls
// Release), or nil when there is none. Its expiry is re-armed.
func (t *Table) Lookup(k Key) *Entry {
	now := t.nowMS()
	sh := t.shardOf(k)
	sh.mu.Lock()
	e := sh.m[k]
	if e != nil {
		if t.expire > 0 && e.exp <= now && e.ref == 0 {
			// Expired, not yet swept: gone for the caller.
			t.removeLocked(sh, e)
			e = nil
		} else {
			t.touchLocked(sh, e, now)
			e.ref++
		}
	}
	sh.mu.Unlock()
	return e
}

// Peek returns data d of k's entry, 0 when there is none, without
// re-arming its expiry or offering it to the peers (HAProxy's src_*
// fetches reading a table); ok is false when d is not stored.
func (t *Table) Peek(k Key, d DataType) (v int64, ok bool) {
	o := t.off[d]
	if o < 0 || dataTypes[d].kind == kindDict {
		return 0, false
	}
	now := t.nowMS()
	sh := t.shardOf(k)
	sh.mu.Lock()
	e := sh.m[k]
	if e == nil || t.expire > 0 && e.exp <= now && e.ref == 0 {
		sh.mu.Unlock()
		return 0, true
	}
	e.ref++ // (held while its data is read outside the shard's lock)
	sh.mu.Unlock()
	e.mu.Lock()
	v = t.valueLocked(e, d, o, now)
	e.mu.Unlock()
	sh.mu.Lock()
	e.ref--
	sh.mu.Unlock()
	return v, true
}

// Release drops a reference taken by Get or Lookup and re-arms the
// entry's expiry, as HAProxy's stktable_touch_local with decrefcnt.
func (t *Table) Release(e *Entry) {
	sh := t.shardOf(e.key)
	sh.mu.Lock()
	e.ref--
	live := !e.dead
	if live {
		t.touchLocked(sh, e, t.nowMS())
	}
	sh.mu.Unlock()
	if live {
		t.changed(e)
	}
}

// Touch re-arms e's expiry without changing its references.
func (t *Table) Touch(e *Entry) {
	sh := t.shardOf(e.key)
	sh.mu.Lock()
	live := !e.dead
	if live {
		t.touchLocked(sh, e, t.nowMS())
	}
	sh.mu.Unlock()
	if live {
		t.changed(e)
	}
}

// touchLocked moves e to the tail of its shard with a new expiry.
func (t *Table) touchLocked(sh *shard, e *Entry, now int64) {
	if sh.tail != e {
		t.unlinkLocked(sh, e)
		t.pushLocked(sh, e, now)
		return
	}
	e.exp = now + t.expire
}

func (t *Table) pushLocked(sh *shard, e *Entry, now int64) {
	e.exp = now + t.expire
	e.prev, e.next = sh.tail, nil
	if sh.tail != nil {
		sh.tail.next = e
	} else {
		sh.head = e
	}
	sh.tail = e
}

func (t *Table) unlinkLocked(sh *shard, e *Entry) {
	if e.prev != nil {
		e.prev.next = e.next
	} else {
		sh.head = e.next
	}
	if e.next != nil {
		e.next.prev = e.prev
	} else {
		sh.tail = e.prev
	}
	e.prev, e.next = nil, nil
}

// removeLocked deletes e from its shard; e.ref must be 0.
func (t *Table) removeLocked(sh *shard, e *Entry) {
	t.unlinkLocked(sh, e)
	delete(sh.m, e.key)
	e.dead = true
	t.used.Add(-1)
}

// purgeLocked removes up to n of the least recently touched unreferenced
// entries of sh and returns how many it removed.
func (t *Table) purgeLocked(sh *shard, n int) int {
	done := 0
	for e := sh.head; e != nil && done < n; {
		next := e.next
		if e.ref == 0 {
			t.removeLocked(sh, e)
			done++
		}
		e = next
	}
	return done
}

// Expire removes the entries whose expiry has passed and returns how many
// it removed. It costs O(expired + referenced expired + shards): each shard
// pops from its head, where the oldest entries are. A referenced expired
// entry moves to the tail; its release will re-arm it.
func (t *Table) Expire() int {
	if t.expire == 0 {
		return 0
	}
	now := t.nowMS()
	done := 0
	for i := range t.shards {
		sh := &t.shards[i]
		sh.mu.Lock()
		var firstHeld *Entry
		for e := sh.head; e != nil && e.exp <= now && e != firstHeld; e = sh.head {
			if e.ref > 0 {
				if firstHeld == nil {
					firstHeld = e
				}
				exp := e.exp
				t.unlinkLocked(sh, e)
				t.pushLocked(sh, e, now)
				e.exp = exp
				if sh.head == e { // the only entry
					break
				}
				continue
			}
			t.removeLocked(sh, e)
			done++
		}
		sh.mu.Unlock()
	}
	return done
}

// ExpiryChanged is signalled when an entry learned from a peer (or a
// reload's import) expires before the time NextExpiry last returned:
// local entries always expire after it (a whole expire from now), learned
// ones keep the expiry the peer gave (a full resync's, seconds away).
func (t *Table) ExpiryChanged() <-chan struct{} { return t.wake }

// NextExpiry returns how long until the next entry may expire, for a
// timer: the expire time when the table is empty, 0 with no expire. An
// entry learned later that expires sooner signals ExpiryChanged.
func (t *Table) NextExpiry() time.Duration {
	if t.expire == 0 {
		return 0
	}
	now := t.nowMS()
	next := now + t.expire
	defer func() { t.armed.Store(next) }()
	for i := range t.shards {
		sh := &t.shards[i]
		sh.mu.Lock()
		if sh.head != nil && sh.head.exp < next {
			next = sh.head.exp
		}
		sh.mu.Unlock()
	}
	return time.Duration(max(next-now, 1)) * time.Millisecond
}
