package lb

// Least connections ("balance leastconn"), HAProxy src/lb_fwlc.c.
//
// Algorithm: the usable servers sit in a binary heap ordered by load
// relative to weight, Cur/Weight (compared by cross-multiplication, so
// exactly), then by the order in which their load last changed: the server
// whose load changed least recently comes first, which is round-robin among
// servers of equal load ("so that all servers are used"). A full server
// sorts after every server with a free slot, so the root is the answer
// unless it is full (then they all are) or avoided (then the answer is one
// of its two children).
//
// Cost per pick: O(log n) under the mutex: the root is the answer, and the
// pick counts the new session at once (so that concurrent picks spread
// instead of all taking the same idle server); ConnTaken and ConnReleased
// reposition one server each, O(log n). Dynamic: Rebuild applies a weight
// change to the next pick.
//
// The load is Cur plus Queued: the sessions on the server and the requests
// waiting in its own queue (HAProxy adds srv->queue.length), so that a
// server with pinned requests waiting looks as busy as it is. The backend
// calls QueueChanged when Queued changes.

import "sync"

// lcEntry is one server in the heap, with the load it had when it was last
// positioned.
type lcEntry struct {
	load uint64 // Cur+Queued at the last reposition
	w    uint64 // Weight
	seq  uint64 // when the load last changed: lower first among equals
	full bool
	s    *Server
}

// lcState is what leastConn remembers of the server of the same Index.
type lcState struct {
	srv *Server // whose state this is (a slot is reused after a deletion)
	gen uint64  // == leastConn.gen while in the usable set
	pos int     // index in the heap
	seq uint64  // kept across Rebuilds
}

// leastConn is the state of one backend's leastconn. Lock: mu guards
// everything.
type leastConn struct {
	mu   sync.Mutex
	heap []lcEntry
	st   []lcState // by Server.Index
	gen  uint64
	seq  uint64
}

// parseLeastConn checks "leastconn".
func parseLeastConn(a Args) (Balance, error) {
	return Balance{build: func(Config) Algorithm { return &leastConn{} }}, noArgs("leastconn", a)
}

// less orders by fullness, load/weight, then least recently changed.
func (lc *leastConn) less(i, j int) bool {
	a, b := &lc.heap[i], &lc.heap[j]
	if a.full != b.full {
		return b.full
	}
	if x, y := a.load*b.w, b.load*a.w; x != y {
		return x < y
	}
	return a.seq < b.seq
}

func (lc *leastConn) swap(i, j int) {
	lc.heap[i], lc.heap[j] = lc.heap[j], lc.heap[i]
	lc.st[lc.heap[i].s.Index].pos = i
	lc.st[lc.heap[j].s.Index].pos = j
}

func (lc *leastConn) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !lc.less(i, p) {
			return
		}
		lc.swap(i, p)
		i = p
	}
}

func (lc *leastConn) down(i int) {
	n := len(lc.heap)
	for {
		l := 2*i + 1
		if l >= n {
			return
		}
		c := l
		if r := l + 1; r < n && lc.less(r, l) {
			c = r
		}
		if !lc.less(c, i) {
			return
		}
		lc.swap(i, c)
		i = c
	}
}

// Rebuild implements Algorithm.
func (lc *leastConn) Rebuild(servers []*Server) {
	lc.mu.Lock()
	defer lc.mu.Unlock()
	for _, e := range lc.heap {
		lc.st[e.s.Index].seq = e.seq
	}
	lc.gen++
	if n := maxIndex(servers) + 1; n > len(lc.st) {
		lc.st = append(lc.st, make([]lcState, n-len(lc.st))...)
	}
	lc.heap = make([]lcEntry, len(servers))
	for i, s := range servers {
		st := &lc.st[s.Index]
		if st.srv != s || st.gen != lc.gen-1 { // new in the set: after the servers already there
			lc.seq++
			st.seq = lc.seq
		}
		st.srv, st.gen, st.pos = s, lc.gen, i
		lc.heap[i] = lcEntry{load: uint64(max(s.Cur.Load()+s.Queued.Load(), 0)), w: uint64(s.Weight), seq: st.seq, full: s.Full(), s: s}
	}
	for i := len(lc.heap)/2 - 1; i >= 0; i-- {
		lc.down(i)
	}
}

// Pick implements Algorithm.
func (lc *leastConn) Pick(_ *Request, avoid *Server) *Server {
	lc.mu.Lock()
	defer lc.mu.Unlock()
	// Each round fixes one stale entry; the bound only guards against
	// servers whose load flips on every look.
	for round := 0; len(lc.heap) > 0 && round <= len(lc.heap); round++ {
		i := 0
		if lc.heap[0].s == avoid && len(lc.heap) > 1 {
			i = 1
			if len(lc.heap) > 2 && lc.less(2, 1) {
				i = 2
			}
		}
		e := &lc.heap[i]
		if e.full != e.s.Full() { // a session started or ended since its hook
			lc.reposition(i)
			continue
		}
		if e.full {
			break // every server but the root is full too
		}
		// Count the session now, before ConnTaken confirms it, so that
		// concurrent picks do not all choose the same idle server.
		// ConnTaken (or the next hook) resets the load to Cur.
		srv := e.s
		lc.seq++
		e.load++
		e.seq = lc.seq
		lc.down(i)
		return srv
	}
	if len(lc.heap) > 0 && lc.heap[0].s == avoid && !avoid.Full() {
		return avoid
	}
	return nil
}

// reposition refreshes heap entry i from its server's load and moves it to
// its place. lc.mu must be held.
func (lc *leastConn) reposition(i int) {
	e := &lc.heap[i]
	lc.seq++
	e.load, e.full, e.seq = uint64(max(e.s.Cur.Load()+e.s.Queued.Load(), 0)), e.s.Full(), lc.seq
	lc.down(i)
	lc.up(i)
}

// ConnTaken implements ConnObserver.
func (lc *leastConn) ConnTaken(s *Server) { lc.update(s) }

// ConnReleased implements ConnObserver.
func (lc *leastConn) ConnReleased(s *Server) { lc.update(s) }

// QueueChanged implements QueueObserver.
func (lc *leastConn) QueueChanged(s *Server) { lc.update(s) }

// update repositions s after its load changed, if it is in the usable set.
// A late call for a server deleted meanwhile (its slot another server's)
// changes nothing.
func (lc *leastConn) update(s *Server) {
	lc.mu.Lock()
	defer lc.mu.Unlock()
	if s.Index >= len(lc.st) {
		return
	}
	if st := &lc.st[s.Index]; st.gen == lc.gen && lc.heap[st.pos].s == s {
		lc.reposition(st.pos)
	}
}

var (
	_ Algorithm     = (*leastConn)(nil)
	_ ConnObserver  = (*leastConn)(nil)
	_ QueueObserver = (*leastConn)(nil)
)
