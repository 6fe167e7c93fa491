package epoll

import (
	"sync"
	"time"
)

// parking holds the read deadlines of a poller's hibernating and awaiting
// connections (Conn.Hibernate, Conn.Await) in place of their runtime
// timers: a min-heap of (deadline, connection) entries, 16 bytes each,
// and one runtime timer for the whole poller, armed at the earliest
// deadline, as HAProxy's one timer tree per thread. An idle connection
// thus costs no timer of its own (a runtime timer with its callback is
// about 150 bytes), its deadline is still met at the same precision as a
// timer's, and deadlines that pass together (a burst of connections'
// IdleKeep) are met by one run of that timer, on one goroutine, where
// timers of their own would each start a goroutine (time.AfterFunc). The
// zero value is empty, its timer made on first use.
type parking struct {
	mu    sync.Mutex
	heap  []parked    // ordered on when; a connection's place is its pidx - 1
	timer *time.Timer // runs expire at armed
	armed int64       // the Unix ns the timer is set for; 0: stopped
}

// parked is one hibernating connection's read deadline (Unix ns).
type parked struct {
	when int64
	c    *Conn
}

// expireBatch is how many expired connections expire takes out of the
// heap at once, before it lets go of the lock to wake them.
const expireBatch = 64

// add parks c's read deadline when (Unix ns, > 0); c must not be parked.
func (pk *parking) add(c *Conn, when int64) {
	pk.mu.Lock()
	pk.heap = append(pk.heap, parked{when: when, c: c})
	i := len(pk.heap) - 1
	c.pidx = int32(i + 1)
	pk.up(i)
	if pk.armed == 0 || when < pk.armed {
		pk.arm(when)
	}
	pk.mu.Unlock()
}

// remove takes c out of the heap if it is parked there.
func (pk *parking) remove(c *Conn) {
	pk.mu.Lock()
	if i := int(c.pidx) - 1; i >= 0 {
		pk.del(i)
	}
	pk.mu.Unlock()
}

// len returns how many connections are parked.
func (pk *parking) len() int {
	pk.mu.Lock()
	defer pk.mu.Unlock()
	return len(pk.heap)
}

// arm sets the timer for when (Unix ns); under mu.
func (pk *parking) arm(when int64) {
	pk.armed = when
	d := time.Duration(when - time.Now().UnixNano())
	if pk.timer == nil {
		pk.timer = time.AfterFunc(d, pk.expire)
	} else {
		pk.timer.Reset(d)
	}
}

// expire is the timer's: it takes the connections whose deadline has
// passed out of the heap, marks their read deadline past and wakes them
// (side.expireParked), and arms the timer for the next one. A run that
// finds nothing due (the wall clock went back, or the timer was reset
// meanwhile) only re-arms it.
func (pk *parking) expire() {
	var due [expireBatch]*Conn
	for {
		now := time.Now().UnixNano()
		n := 0
		pk.mu.Lock()
		for n < len(due) && len(pk.heap) > 0 && pk.heap[0].when <= now {
			due[n] = pk.heap[0].c
			pk.del(0)
			n++
		}
		if n < len(due) {
			pk.armed = 0
			if len(pk.heap) > 0 {
				pk.arm(pk.heap[0].when)
			}
		}
		pk.mu.Unlock()
		for i := range due[:n] {
			due[i].r.expireParked(now)
			due[i] = nil
		}
		if n < len(due) {
			return
		}
	}
}

// del removes the entry at i; under mu. The heap's array shrinks when a
// quarter of it or less is used, so that a burst's idle connections gone
// leave no large array behind.
func (pk *parking) del(i int) {
	h := pk.heap
	h[i].c.pidx = 0
	last := len(h) - 1
	if i != last {
		h[i] = h[last]
		h[i].c.pidx = int32(i + 1)
	}
	h[last] = parked{}
	pk.heap = h[:last]
	if i != last {
		if !pk.up(i) {
			pk.down(i)
		}
	}
	if c := cap(pk.heap); c > 64 && len(pk.heap) <= c/4 {
		pk.heap = append(make([]parked, 0, c/2), pk.heap...)
	}
}

// up moves the entry at i toward the root while it is earlier than its
// parent; it reports whether it moved.
func (pk *parking) up(i int) bool {
	h := pk.heap
	moved := false
	for i > 0 {
		parent := (i - 1) / 2
		if h[parent].when <= h[i].when {
			break
		}
		pk.swap(parent, i)
		i = parent
		moved = true
	}
	return moved
}

// down moves the entry at i toward the leaves while a child is earlier.
func (pk *parking) down(i int) {
	h := pk.heap
	for {
		least := i
		if l := 2*i + 1; l < len(h) && h[l].when < h[least].when {
			least = l
		}
		if r := 2*i + 2; r < len(h) && h[r].when < h[least].when {
			least = r
		}
		if least == i {
			return
		}
		pk.swap(i, least)
		i = least
	}
}

func (pk *parking) swap(i, j int) {
	h := pk.heap
	h[i], h[j] = h[j], h[i]
	h[i].c.pidx = int32(i + 1)
	h[j].c.pidx = int32(j + 1)
}

// Parked returns how many of g's hibernating or awaiting connections
// (Hibernate, Await) have a read deadline waiting in their poller's
// parking (and no runtime timer).
func (g *Group) Parked() int64 {
	var n int64
	for _, p := range g.polls {
		n += int64(p.park.len())
	}
	return n
}
