package peers

// A snapshot of a mesh: what `show peers` prints (HAProxy 2.6's fields,
// src/peers.c peers_dump_head and peers_dump_peer) and the per-peer
// figures of the stats.

import (
	"net"
	"time"
	"unsafe"
)

// Status is a mesh's state at Now.
type Status struct {
	Now           time.Time
	Ptr           uintptr // an address that identifies the section
	Name          string
	LastChange    time.Time // when the section started
	Flags         uint32    // HAProxy's PEERS_F_* bits
	ResyncTimeout time.Time
	TaskCalls     uint64
	// Peers are in HAProxy's order: the last configured first.
	Peers []PeerStatus
}

// PeerStatus is a member's state.
type PeerStatus struct {
	Ptr       uintptr
	Name      string
	Local     bool
	Active    bool // a session runs or a connection is being made
	Addr      string
	Status    string    // last handshake status: ESTA, CONN, NONE...
	LastHdshk time.Time // zero: never
	Reconnect time.Time // zero: never
	Heartbeat time.Time // zero: never
	Confirm   uint32
	TxHbt     uint32
	RxHbt     uint32
	NoHbt     uint32
	NewConn   uint32
	ProtoErr  uint32
	Coll      uint32
	Flags     uint32
	// Session is the session in use or being made, nil when none.
	Session *SessionStatus
	// RemoteTable is the table of the peer's next updates,
	// LastLocalTable ours; nil when none.
	RemoteTable    *TableRef
	LastLocalTable *TableRef
	Tables         []PeerTableStatus // the last registered first

	// fulcrum's figures.
	Connected       bool      // the session is established
	Fulcrum         bool      // the peer is fulcrum
	UpdatesSent     uint64    // updates sent to it, lessons included
	UpdatesReceived uint64    // updates received from it
	BytesSent       uint64    // bytes sent to it, after the handshakes
	BytesReceived   uint64    // bytes received from it, after the handshakes
	LastMessage     time.Time // its last message of any kind (zero: none)
	LastHeartbeat   time.Time // its last heartbeat message (zero: none)
	Lag             time.Duration
	// DictTX and DictRX are the session's server_key caches by index
	// ("" = none), for `show peers dict`.
	DictTX, DictRX [dictSize]string
}

// SessionStatus is a session's state.
type SessionStatus struct {
	Ptr       uintptr
	St0       int // HAProxy's applet state: 7 once established
	TaskCalls uint64
	State     string // of the connection: EST, CON
	Incoming  bool   // the peer connected: Src and Dst are set
	Src, Dst  string
}

// TableRef names a peer's shared table.
type TableRef struct {
	Ptr      uintptr
	Name     string
	LocalID  uint64
	RemoteID uint64
}

// PeerTableStatus is a peer's cursors in a shared table, and the table's
// counters.
type PeerTableStatus struct {
	TableRef
	Flags          uint32
	RemoteData     uint64
	LastAcked      uint32
	LastPushed     uint32
	LastGet        uint32
	TeachingOrigin uint32
	Update         uint32
	TablePtr       uintptr
	TableUpdate    uint32 // local and learned changes
	LocalUpdate    uint32 // local changes
	CommitUpdate   uint32 // last pushed to a peer
	// Lag is how long ago the oldest local change this peer has not
	// acknowledged was made (0: none).
	Lag time.Duration
}

func ptrOf[T any](p *T) uintptr { return uintptr(unsafe.Pointer(p)) }

// Status returns the mesh's state now.
func (m *Mesh) Status() Status {
	now := time.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	st := Status{Now: now, Ptr: ptrOf(m), Name: m.name, LastChange: m.started, Flags: m.flags,
		ResyncTimeout: m.resyncTimeout, TaskCalls: m.taskCalls}
	for i := len(m.peers) - 1; i >= 0; i-- {
		st.Peers = append(st.Peers, m.peerStatus(m.peers[i], now))
	}
	return st
}

// peerStatus returns p's state. m.mu is held.
func (m *Mesh) peerStatus(p *peer, now time.Time) PeerStatus {
	ps := PeerStatus{Ptr: ptrOf(p), Name: p.name, Local: p.local, Addr: p.addr, Status: statusName(p.status),
		LastHdshk: p.lastHdshk, Reconnect: p.reconnect, Heartbeat: p.heartbeat, Confirm: p.confirm,
		TxHbt: p.txHbt, RxHbt: p.rxHbt, NoHbt: p.noHbt, NewConn: p.newConn, ProtoErr: p.protoErr, Coll: p.coll,
		Flags: p.flags, UpdatesSent: p.updatesSent.Load(), UpdatesReceived: p.updatesReceived.Load(),
		BytesSent: p.bytesSent.Load(), BytesReceived: p.bytesReceived.Load()}
	if t := p.lastRecv.Load(); t != 0 {
		ps.LastMessage = time.Unix(0, t)
	}
	if t := p.lastHbt.Load(); t != 0 {
		ps.LastHeartbeat = time.Unix(0, t)
	}
	if s := p.sess; s != nil {
		ps.Active = true
		ps.Connected = s.established
		ps.Fulcrum = s.fulcrum
		ss := &SessionStatus{Ptr: ptrOf(s), St0: 7, State: "EST", Incoming: !s.out, TaskCalls: s.calls.Load()}
		if !s.established {
			ss.St0, ss.State = 6, "CON"
		}
		if !s.out {
			ss.Src, ss.Dst = addrString(s.c.RemoteAddr()), addrString(s.c.LocalAddr())
		}
		ps.DictTX, ps.DictRX = dictSnapshot(&s.tx, &s.rx)
		ps.Session = ss
	} else if p.dialing {
		ps.Active = true
		ps.Session = &SessionStatus{Ptr: ptrOf(p) + 1, St0: 5, State: "CON"}
	}
	ref := func(pt *peerTable) *TableRef {
		if pt == nil {
			return nil
		}
		// (its local name, as HAProxy's table->id: "<peers>/<table>" for
		// a table declared in a peers section, not the name on the wire)
		return &TableRef{Ptr: ptrOf(pt), Name: pt.tab.t.Name(), LocalID: pt.tab.def.id, RemoteID: pt.remoteID}
	}
	if ps.Session != nil {
		ps.RemoteTable = ref(p.remoteTable)
		ps.LastLocalTable = ref(p.lastLocalTable)
	}
	for i := len(p.tables) - 1; i >= 0; i-- {
		pt := p.tables[i]
		tb := pt.tab
		cur := tb.current()
		ts := PeerTableStatus{TableRef: *ref(pt), Flags: pt.flags, RemoteData: pt.remoteData,
			LastAcked: pt.lastAcked, LastPushed: uint32(pt.lastPushed), LastGet: pt.lastGet.Load(),
			TeachingOrigin: uint32(pt.teachingOrigin), Update: uint32(pt.update), TablePtr: ptrOf(tb),
			TableUpdate: uint32(cur + tb.learned.Load()), LocalUpdate: uint32(cur), CommitUpdate: uint32(tb.commit.Load())}
		sums := tb.def.aggregate && p.sess != nil && !p.sess.fulcrum
		if at := tb.oldestAfter(pt.update, sums); at != 0 && !p.local {
			ts.Lag = max(now.Sub(time.UnixMilli(at)), 0)
		}
		ps.Lag = max(ps.Lag, ts.Lag)
		ps.Tables = append(ps.Tables, ts)
	}
	return ps
}

// addrString prints an address as host:port.
func addrString(a net.Addr) string {
	if a == nil {
		return ""
	}
	return a.String()
}
