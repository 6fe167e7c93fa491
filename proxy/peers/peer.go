package peers

// A member of the section and its cursors in each shared table (HAProxy's
// struct peer and struct shared_table).

import (
	"sync"
	"sync/atomic"
	"time"
)

// peer is a member of the section. Its fields are guarded by Mesh.mu, but
// the figures that sessions count (atomics).
type peer struct {
	name   string
	addr   string
	local  bool
	origin int // its slot in aggregate tables (Config.Origin)

	sess *session // the session in use, nil when none
	// live mirrors sess for the sessions' readers, which check it under
	// learnMu before storing an update: a session replaced by a newer one
	// may still be reading what the peer sent before, and must not store
	// it after the newer session stored later data (TestReplacedSession).
	live      atomic.Pointer[session]
	learnMu   sync.Mutex
	dialing   bool // a connection to it is being made
	status    int  // last handshake status (statusName)
	lastHdshk time.Time
	// reconnect is when the next connection may be tried, or, during a
	// session, when it is declared dead unless a message came.
	reconnect time.Time
	heartbeat time.Time // when the next heartbeat is due
	backoff   time.Duration
	confirm   uint32 // resync confirmations to send
	flags     uint32
	txHbt     uint32
	rxHbt     uint32
	noHbt     uint32 // sessions closed for silence
	newConn   uint32 // connections tried
	protoErr  uint32 // sessions closed for a protocol error
	coll      uint32 // sessions replaced by a new one from the peer
	tables    []*peerTable
	// remoteTable is the table of the peer's next updates, lastLocalTable
	// the one of ours (show peers).
	remoteTable    *peerTable
	lastLocalTable *peerTable

	updatesSent     atomic.Uint64
	updatesReceived atomic.Uint64
	bytesSent       atomic.Uint64 // after the handshake
	bytesReceived   atomic.Uint64
	writes          atomic.Uint64 // writes to the connection (benchmarks)
	lastRecv        atomic.Int64  // unix ns of the last message received
	lastHbt         atomic.Int64  // unix ns of the last heartbeat received
	aliveSeen       int64         // lastRecv when the sync loop last looked
}

// peerTable is a peer's cursors in one shared table.
type peerTable struct {
	tab        *table
	remoteID   uint64 // the peer's id of the table, 0 until it defines it
	remoteData uint64 // the data types the peer sends
	// lastGet is the peer's last update id received; lastAcked the last
	// one acknowledged to it.
	lastGet   atomic.Uint32
	lastAcked uint32
	// lastPushed is our last update id sent; update the last one the
	// peer acknowledged; teachingOrigin where a lesson started.
	lastPushed     uint64
	update         uint64
	teachingOrigin uint64
	flags          uint32 // tableTaught bits
	// epoch changes whenever the cursors are reset (a new session, a
	// resync request): a writer commits what it pushed only if the epoch
	// it started with is still the table's.
	epoch uint64
}

// setSession makes s (nil: none) p's session. Mesh.mu is held; learnMu is
// taken so that a replaced session's reader, once it sees it is replaced,
// stores nothing more.
func (p *peer) setSession(s *session) {
	p.learnMu.Lock()
	p.sess = s
	p.live.Store(s)
	p.learnMu.Unlock()
}

// tablesFor returns p's cursors for tables, keeping those of the tables
// it already had.
func (p *peer) tablesFor(tables []*table) []*peerTable {
	out := make([]*peerTable, len(tables))
	for i, tb := range tables {
		for _, pt := range p.tables {
			if pt.tab == tb {
				out[i] = pt
			}
		}
		if out[i] == nil {
			out[i] = &peerTable{tab: tb}
		}
	}
	return out
}
