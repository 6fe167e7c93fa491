package lb

// First server with a free slot ("balance first"), HAProxy src/lb_fas.c.
//
// Algorithm: the usable servers are kept in id order (the order of the
// set the backend hands Rebuild) with a bitmap of those that have a free slot below maxconn. A
// pick returns the lowest set bit, skipping avoid. Weights are ignored; a
// server without maxconn is never full, so `first` without maxconn sends
// everything to the first usable server, as in HAProxy.
//
// Cost per pick: O(n/4096) under a mutex: a two-level bitmap (one summary
// bit per 64-server word) scanned a word at a time, which is 3 summary
// words at 10,000 servers. ConnTaken and ConnReleased flip a server's bit
// when it fills up or frees a slot, O(1), and only for servers with a
// maxconn. Dynamic (weights play no part).

import (
	"math/bits"
	"sync"
)

// first is the state of one backend's first. Lock: mu guards everything.
type first struct {
	mu      sync.Mutex
	servers []*Server // the usable set, by index
	pos     []int     // by Server.Index: position in servers, valid when gen matches
	gens    []uint64  // by Server.Index
	gen     uint64
	free    bitmap // bit i: servers[i] has a free slot
}

// parseFirst checks "first".
func parseFirst(a Args) (Balance, error) {
	return Balance{build: func(Config) Algorithm { return &first{} }}, noArgs("first", a)
}

// Rebuild implements Algorithm.
func (f *first) Rebuild(servers []*Server) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.gen++
	if n := maxIndex(servers) + 1; n > len(f.pos) {
		f.pos = append(f.pos, make([]int, n-len(f.pos))...)
		f.gens = append(f.gens, make([]uint64, n-len(f.gens))...)
	}
	f.servers = servers
	f.free.reset(len(servers))
	for i, s := range servers {
		f.pos[s.Index], f.gens[s.Index] = i, f.gen
		f.free.set(i, !s.Full())
	}
}

// Pick implements Algorithm.
func (f *first) Pick(_ *Request, avoid *Server) *Server {
	f.mu.Lock()
	defer f.mu.Unlock()
	avoided := false
	for i := f.free.next(0); i >= 0; i = f.free.next(i + 1) {
		s := f.servers[i]
		if s.Full() { // a session started since its hook
			f.free.set(i, false)
			continue
		}
		if s == avoid {
			avoided = true
			continue
		}
		return s
	}
	if avoided {
		return avoid
	}
	return nil
}

// ConnTaken implements ConnObserver.
func (f *first) ConnTaken(s *Server) { f.update(s) }

// ConnReleased implements ConnObserver.
func (f *first) ConnReleased(s *Server) { f.update(s) }

// update sets s's bit from its fullness now. Servers without maxconn are
// never full and cost no lock.
func (f *first) update(s *Server) {
	if s.MaxConn.Load() == 0 {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	// A late call for a server deleted meanwhile (its slot another
	// server's) changes nothing.
	if s.Index < len(f.gens) && f.gens[s.Index] == f.gen && f.servers[f.pos[s.Index]] == s {
		f.free.set(f.pos[s.Index], !s.Full())
	}
}

// bitmap is a set of small integers with a summary level: bit w of sum is
// set when words[w] is not zero, so that finding the next set bit skips 64
// empty words at a time.
type bitmap struct {
	words []uint64
	sum   []uint64
}

// reset empties the bitmap and sizes it for n bits.
func (b *bitmap) reset(n int) {
	nw := (n + 63) / 64
	b.words = make([]uint64, nw)
	b.sum = make([]uint64, (nw+63)/64)
}

// set sets or clears bit i.
func (b *bitmap) set(i int, on bool) {
	w := i / 64
	if on {
		b.words[w] |= 1 << (i % 64)
	} else {
		b.words[w] &^= 1 << (i % 64)
	}
	if b.words[w] != 0 {
		b.sum[w/64] |= 1 << (w % 64)
	} else {
		b.sum[w/64] &^= 1 << (w % 64)
	}
}

// next returns the lowest set bit at or after i, or -1.
func (b *bitmap) next(i int) int {
	w := i / 64
	if w >= len(b.words) {
		return -1
	}
	if m := b.words[w] >> (i % 64); m != 0 {
		return i + bits.TrailingZeros64(m)
	}
	// Then the first non-empty word after w, through the summary.
	w++
	for s := w / 64; s < len(b.sum); s++ {
		m := b.sum[s]
		if s == w/64 {
			m &= ^uint64(0) << (w % 64)
		}
		if m != 0 {
			wi := s*64 + bits.TrailingZeros64(m)
			return wi*64 + bits.TrailingZeros64(b.words[wi])
		}
	}
	return -1
}

var (
	_ Algorithm    = (*first)(nil)
	_ ConnObserver = (*first)(nil)
)
