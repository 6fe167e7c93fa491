package stick

// The Runtime API's view of a table: the header and entry lines of `show
// table`, data filters, clear and set (HAProxy's table_process_entry and
// stats_dump_table_*).

import (
	"fmt"
	"slices"
	"strconv"
)

// Op is a filter's comparison.
type Op uint8

// The comparisons of `data.<type> <op> <value>`.
const (
	OpEq Op = iota
	OpNe
	OpLe
	OpGe
	OpLt
	OpGt
)

var opNames = [...]string{"eq", "ne", "le", "ge", "lt", "gt"}

// ParseOp parses eq, ne, le, ge, lt or gt.
func ParseOp(s string) (Op, bool) {
	for i, n := range opNames {
		if n == s {
			return Op(i), true
		}
	}
	return 0, false
}

// Filter keeps the entries whose data Type compares to Value by Op.
type Filter struct {
	Type  DataType
	Op    Op
	Value int64
}

func (f Filter) match(v int64) bool {
	switch f.Op {
	case OpEq:
		return v == f.Value
	case OpNe:
		return v != f.Value
	case OpLe:
		return v <= f.Value
	case OpGe:
		return v >= f.Value
	case OpLt:
		return v < f.Value
	}
	return v > f.Value
}

// AppendHeader appends the table's `show table` line:
// "# table: NAME, type: TYPE, size:SIZE, used:USED".
func (t *Table) AppendHeader(dst []byte) []byte {
	return fmt.Appendf(dst, "# table: %s, type: %s, size:%d, used:%d\n", t.name, t.typ, t.size, t.used.Load())
}

// Entries returns the entries that pass every filter, in key order. When
// key is non-nil only that key's entry is considered. Entries are not
// referenced: they may leave the table meanwhile, but stay readable.
func (t *Table) Entries(filters []Filter, key *Key) []*Entry {
	var out []*Entry
	now := t.nowMS()
	keep := func(e *Entry) bool {
		if t.expire > 0 && e.exp <= now && e.ref == 0 {
			return false // expired, not yet swept
		}
		e.mu.Lock()
		defer e.mu.Unlock()
		for _, f := range filters {
			if !f.match(t.valueLocked(e, f.Type, t.off[f.Type], now)) {
				return false
			}
		}
		return true
	}
	if key != nil {
		sh := t.shardOf(*key)
		sh.mu.Lock()
		if e := sh.m[*key]; e != nil && keep(e) {
			out = append(out, e)
		}
		sh.mu.Unlock()
		return out
	}
	for i := range t.shards {
		sh := &t.shards[i]
		sh.mu.Lock()
		for e := sh.head; e != nil; e = e.next {
			if keep(e) {
				out = append(out, e)
			}
		}
		sh.mu.Unlock()
	}
	slices.SortFunc(out, func(a, b *Entry) int {
		switch {
		case t.less(a.key, b.key):
			return -1
		case t.less(b.key, a.key):
			return 1
		}
		return 0
	})
	return out
}

// AppendEntry appends e's `show table` line:
// "0xPTR: key=K use=N exp=MS name=V name(period)=V...", the data in
// HAProxy's type order.
func (t *Table) AppendEntry(dst []byte, e *Entry) []byte {
	sh := t.shardOf(e.key)
	sh.mu.Lock()
	ref, exp := e.ref, e.exp
	sh.mu.Unlock()
	now := t.nowMS()
	remain := int64(0)
	if t.expire > 0 {
		remain = max(exp-now, 0)
	}
	dst = fmt.Appendf(dst, "%p: key=", e)
	dst = t.appendKey(dst, e.key)
	dst = fmt.Appendf(dst, " use=%d exp=%d", ref, remain)
	e.mu.Lock()
	for d := range NumDataTypes {
		o := t.off[d]
		if o < 0 {
			continue
		}
		dst = append(dst, ' ')
		dst = append(dst, dataTypes[d].name...)
		if d.IsRate() {
			dst = fmt.Appendf(dst, "(%d)", t.per[d])
		}
		dst = append(dst, '=')
		if dataTypes[d].kind == kindDict {
			name := t.dictValue(e.data[o]) // lock order: e.mu, then dictMu
			if name == "" {
				name = "-"
			}
			dst = append(dst, name...)
			continue
		}
		dst = strconv.AppendInt(dst, t.valueLocked(e, d, o, now), 10)
	}
	e.mu.Unlock()
	return append(dst, '\n')
}

// Clear removes the entries that pass every filter (all with none), or
// only key's when key is non-nil; referenced entries stay, as HAProxy's
// clear table. It returns how many it removed.
func (t *Table) Clear(filters []Filter, key *Key) int {
	now := t.nowMS()
	match := func(e *Entry) bool {
		if e.ref > 0 {
			return false
		}
		e.mu.Lock()
		defer e.mu.Unlock()
		for _, f := range filters {
			if !f.match(t.valueLocked(e, f.Type, t.off[f.Type], now)) {
				return false
			}
		}
		return true
	}
	done := 0
	if key != nil {
		sh := t.shardOf(*key)
		sh.mu.Lock()
		if e := sh.m[*key]; e != nil && match(e) {
			t.removeLocked(sh, e)
			done++
		}
		sh.mu.Unlock()
		return done
	}
	for i := range t.shards {
		sh := &t.shards[i]
		sh.mu.Lock()
		for e := sh.head; e != nil; {
			next := e.next
			if match(e) {
				t.removeLocked(sh, e)
				done++
			}
			e = next
		}
		sh.mu.Unlock()
	}
	return done
}

// Assign is one `data.<type> <value>` of set table.
type Assign struct {
	Type  DataType
	Value int64
}

// Set creates key's entry if needed and assigns each value, as `set
// table`. It returns false when the table is full and nothing could be
// purged.
func (t *Table) Set(key Key, values []Assign) bool {
	e := t.Get(key)
	if e == nil {
		return false
	}
	now := t.nowMS()
	e.mu.Lock()
	for _, a := range values {
		if t.off[a.Type] >= 0 && dataTypes[a.Type].kind != kindDict {
			t.setLocked(e, a.Type, a.Value, now)
		}
	}
	e.mu.Unlock()
	t.Release(e) // queues e for the peers, if shared
	return true
}
