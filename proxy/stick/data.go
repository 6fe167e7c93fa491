package stick

// Reading and changing an entry's data, under the entry's lock.

// Add adds n to counter d of e: a count, or an event to a rate. It does
// nothing when d is not stored. server_id and server_key are set with
// SetServer.
func (t *Table) Add(e *Entry, d DataType, n uint64) {
	o := t.off[d]
	if o < 0 {
		return
	}
	e.mu.Lock()
	t.addLocked(e, d, o, n, 0)
	e.mu.Unlock()
	t.changed(e)
}

func (t *Table) addLocked(e *Entry, d DataType, o int8, n uint64, now int64) {
	w := e.data[o:]
	switch dataTypes[d].kind {
	case kindFreq:
		if now == 0 {
			now = t.nowMS()
		}
		freqUpdate(w, t.per[d], now, n)
	case kindULL:
		w[0] += n
	default:
		w[0] = uint64(uint32(w[0] + n))
	}
}

// Update applies one request's worth of counting to e in one lock: for
// each d in ds, Add(e, d, 1). Types not stored are skipped.
func (t *Table) Update(e *Entry, ds ...DataType) {
	now := int64(0)
	e.mu.Lock()
	for _, d := range ds {
		if o := t.off[d]; o >= 0 {
			if now == 0 && dataTypes[d].kind == kindFreq {
				now = t.nowMS()
			}
			t.addLocked(e, d, o, 1, now)
		}
	}
	e.mu.Unlock()
	t.changed(e)
}

// Swap sets data d of e to v, as `set table` does, and returns the value
// it had; ok is false when d is not stored (or is server_key). HAProxy's
// sc-set-gpt0 and sc_clr_gpc0.
func (t *Table) Swap(e *Entry, d DataType, v int64) (old int64, ok bool) {
	o := t.off[d]
	if o < 0 || dataTypes[d].kind == kindDict {
		return 0, false
	}
	now := t.nowMS()
	e.mu.Lock()
	old = t.valueLocked(e, d, o, now)
	t.setLocked(e, d, v, now)
	e.mu.Unlock()
	t.changed(e)
	return old, true
}

// Dec decrements counter d of e, not below 0 (conn_cur at a session end).
func (t *Table) Dec(e *Entry, d DataType) {
	o := t.off[d]
	if o < 0 || dataTypes[d].kind == kindFreq {
		return
	}
	e.mu.Lock()
	if e.data[o] > 0 {
		e.data[o]--
	}
	e.mu.Unlock()
	t.changed(e)
}

// Value returns data d of e as an integer: a rate read now, a counter, the
// server id; ok is false when d is not stored (or is server_key). In an
// aggregate table an aggregated field reads as the sum over the instances.
func (t *Table) Value(e *Entry, d DataType) (v int64, ok bool) {
	o := t.off[d]
	if o < 0 || dataTypes[d].kind == kindDict {
		return 0, false
	}
	e.mu.Lock()
	v = t.valueLocked(e, d, o, 0)
	e.mu.Unlock()
	return v, true
}

func (t *Table) valueLocked(e *Entry, d DataType, o int8, now int64) int64 {
	if t.aoff[d] >= 0 {
		return t.sumLocked(e, d, o, now)
	}
	return t.ownLocked(e, d, o, now)
}

// ownLocked is valueLocked of this instance's own slot.
func (t *Table) ownLocked(e *Entry, d DataType, o int8, now int64) int64 {
	w := e.data[o:]
	switch dataTypes[d].kind {
	case kindFreq:
		if now == 0 {
			now = t.nowMS()
		}
		return int64(freqRead(w, t.per[d], now))
	case kindSint:
		return int64(int32(uint32(w[0])))
	case kindUint:
		return int64(uint32(w[0]))
	}
	return int64(w[0])
}

// setLocked sets data d of e to v, as `set table`: a rate restarts its
// period now with v events.
func (t *Table) setLocked(e *Entry, d DataType, v int64, now int64) {
	o := t.off[d]
	w := e.data[o:]
	switch dataTypes[d].kind {
	case kindFreq:
		freqSet(w, now, uint64(v))
	case kindSint, kindUint:
		w[0] = uint64(uint32(v))
	default:
		w[0] = uint64(v)
	}
}

// SetServer stores a server's id and name in e (server_id, server_key),
// as a stick store does once the request has its server.
func (t *Table) SetServer(e *Entry, id int, name string) {
	var key uint64
	if t.off[ServerKey] >= 0 {
		key = uint64(t.dictID(name))
	}
	e.mu.Lock()
	if o := t.off[ServerID]; o >= 0 {
		e.data[o] = uint64(uint32(int32(id)))
	}
	if o := t.off[ServerKey]; o >= 0 {
		e.data[o] = key
	}
	e.mu.Unlock()
	t.changed(e)
}

// Server returns the server id and name stored in e; id is 0 and name ""
// when none is.
func (t *Table) Server(e *Entry) (id int, name string) {
	var key uint64
	e.mu.Lock()
	if o := t.off[ServerID]; o >= 0 {
		id = int(int32(uint32(e.data[o])))
	}
	if o := t.off[ServerKey]; o >= 0 {
		key = e.data[o]
	}
	e.mu.Unlock()
	return id, t.dictValue(key)
}

// dictID returns the id (1-based) of a server_key value, added if new.
func (t *Table) dictID(s string) int {
	t.dictMu.RLock()
	id, ok := t.dictIx[s]
	t.dictMu.RUnlock()
	if ok {
		return id
	}
	t.dictMu.Lock()
	defer t.dictMu.Unlock()
	if id, ok := t.dictIx[s]; ok {
		return id
	}
	if t.dictIx == nil {
		t.dictIx = map[string]int{}
	}
	t.dict = append(t.dict, s)
	t.dictIx[s] = len(t.dict)
	return len(t.dict)
}

// dictValue returns the server_key value of id, "" for 0.
func (t *Table) dictValue(id uint64) string {
	if id == 0 {
		return ""
	}
	t.dictMu.RLock()
	defer t.dictMu.RUnlock()
	if int(id) > len(t.dict) {
		return ""
	}
	return t.dict[id-1]
}
