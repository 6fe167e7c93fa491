package peers

// The mesh: one peers section running. It listens at the local peer's
// address, keeps one session with every other member (whichever side
// connected), drains the shared tables' local changes into their logs and
// wakes the sessions to push them, and runs the resync of a process that
// starts (HAProxy's process_peer_sync, without the local-process part: a
// fulcrum reload keeps its tables in the process).
//
// Locking: Mesh.mu guards the protocol state of the mesh, of its peers and
// of their shared tables (flags, cursors, counters, the session in use).
// It is never held while a session reads, writes or encodes, nor while a
// stick table is read or written; the request path never takes it.

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/fulcrum-proxy/fulcrum/proxy/stick"
	"github.com/rs/zerolog"
)

// Config is a peers section as a mesh runs it.
type Config struct {
	// Name is the section's name ([[peers]] name).
	Name string
	// Local is the local peer's name; a member of Peers must have it.
	Local string
	// Peers are the members, the local one included, in configuration
	// order: the local one's address is where the mesh listens.
	Peers []PeerConfig
	// Tables are the stick tables shared through the section.
	Tables []TableConfig
}

// PeerConfig is one member of a peers section.
type PeerConfig struct {
	Name string
	Addr string // host:port
}

// TableConfig is a table shared through a section.
type TableConfig struct {
	Table *stick.Table
	// KeyLen is the configured key length of a string or binary table (0:
	// none), which the key size on the wire is computed from.
	KeyLen int
	// Aggregate adds up the table's counters and rates with the other
	// fulcrum members (stick.Config.Origins must be Config.Remotes()).
	Aggregate bool
	// Name is the name the peers know the table by (HAProxy's nid: a
	// table declared in a peers section, "<peers>/<table>" locally, is
	// "/<table>" on the wire); empty: the table's own.
	Name string
}

// wireName returns the name the table is defined with to the peers.
func (tc TableConfig) wireName() string {
	if tc.Name != "" {
		return tc.Name
	}
	return tc.Table.Name()
}

// Remotes returns the number of members other than the local one.
func (c *Config) Remotes() int {
	n := 0
	for _, p := range c.Peers {
		if p.Name != c.Local {
			n++
		}
	}
	return n
}

// Origin returns the aggregate slot of member name: its rank among the
// members other than the local one, from 1, in configuration order; 0 for
// the local peer or a name that is not a member.
func (c *Config) Origin(name string) int {
	n := 0
	for _, p := range c.Peers {
		if p.Name == c.Local {
			continue
		}
		n++
		if p.Name == name {
			return n
		}
	}
	return 0
}

// ErrRestart is returned by Reconfigure when the new configuration changes
// the section's name, the local peer's name or its address: the caller
// stops the mesh and starts a new one.
var ErrRestart = errors.New("peers: the local peer changed: restart the mesh")

// Timings of the protocol (src/peers.c).
const (
	resyncTimeout    = 5 * time.Second // waiting for a lesson
	reconnectTimeout = 5 * time.Second // a silent session is dead after this
	heartbeatTimeout = 3 * time.Second // idle time before a heartbeat
	handshakeTimeout = 5 * time.Second // the peers frontend's timeout client
	minBackoff       = 100 * time.Millisecond
	maxBackoff       = 5 * time.Second
	// drainWindow and drainMax bound the sync loop's period: drainWindow
	// while tables change, doubling up to drainMax while they do not.
	// drainWindow is the batch window of replication: the changes of one
	// window go to each peer in one write, an entry changed many times in
	// it once, with its latest data; each round costs a few system calls
	// and goroutine wake-ups (the sync loop's timer, the writer's write,
	// the peer's acknowledgement read), which a window of 1 ms paid a
	// thousand times a second under load (bench/README.md, peers). It adds
	// up to the window to the lag. 50 ms: with 64 hot entries, 0.10
	// updates pushed per request against 0.51 at 10 ms (bench/syscalls.sh
	// peers mode), for a lag far under the second the issue allows.
	drainWindow = 50 * time.Millisecond
	drainMax    = 80 * time.Millisecond
)

// Mesh flags (HAProxy's PEERS_F_*), as `show peers` prints them.
const (
	meshResyncLocal          = 0x00000001 // no lesson to wait for from a local process
	meshResyncRemote         = 0x00000002 // lesson from a remote peer done or given up
	meshResyncAssign         = 0x00000004 // a peer is assigned to teach us
	meshResyncProcess        = 0x00000008 // it was asked
	meshResyncLocalTimeout   = 0x00000010
	meshResyncRemoteTimeout  = 0x00000020
	meshResyncRemoteAbort    = 0x00000080
	meshResyncRemoteFinished = 0x00000200
	meshResyncRemotePartial  = 0x00000800
	meshResyncRemoteAssign   = 0x00002000
	meshResyncRequested      = 0x00004000 // a peer asked us for a lesson
	meshResyncState          = meshResyncLocal | meshResyncRemote
)

// Peer flags (HAProxy's PEER_F_*).
const (
	peerTeachProcess  = 0x00000001 // teaching the peer everything
	peerTeachFinished = 0x00000008 // taught, waiting for its confirm
	peerLearnAssign   = 0x00000100 // the peer is assigned to teach us
	peerLearnNotUp    = 0x00000200 // it taught us but was not up to date
	peerAlive         = 0x20000000 // a message came during this period
	peerHeartbeat     = 0x40000000 // a heartbeat is due
	peerDowngrade     = 0x80000000 // it speaks 2.0 only
	peerTeachReset    = peerTeachProcess | peerTeachFinished
	peerLearnReset    = peerLearnAssign | peerLearnNotUp
)

// Shared table flags (HAProxy's SHTABLE_F_*).
const (
	tableTaught = 0x3 // both teaching stages done
)

// Mesh runs one peers section. Its methods are safe for concurrent use.
type Mesh struct {
	name      string
	localName string
	localAddr string
	log       zerolog.Logger
	started   time.Time // when the section started (show peers)

	ln     net.Listener
	ctx    context.Context // ends at Stop
	cancel context.CancelFunc
	wg     sync.WaitGroup
	kick   chan struct{} // wakes the sync loop

	mu            sync.Mutex // guards what follows and the peers' state
	peers         []*peer    // members in configuration order, the local one included
	tables        []*table   // shared tables in registration order
	nextID        uint64     // local id of the next table registered
	flags         uint32
	resyncTimeout time.Time
	taskCalls     uint64
	sessions      map[*session]struct{} // every session running, handshaking or not
	closed        bool

	// learned, if set (tests, benchmarks), is called with every entry
	// learned from a peer, from the session's goroutine.
	learned func(*stick.Table, stick.Key)
}

// New returns the mesh of cfg, not started. It fails when cfg has no
// member named as the local peer.
func New(cfg Config, log zerolog.Logger) (*Mesh, error) {
	m := &Mesh{name: cfg.Name, localName: cfg.Local, log: log.With().Str("peers", cfg.Name).Logger(),
		started: time.Now(), kick: make(chan struct{}, 1), sessions: map[*session]struct{}{}, nextID: 1}
	for _, pc := range cfg.Peers {
		if pc.Name == cfg.Local {
			m.localAddr = pc.Addr
		}
	}
	if m.localAddr == "" {
		return nil, fmt.Errorf("peers %q: no peer named %q (the local peer's name: localpeer, --localpeer, or the host name)", cfg.Name, cfg.Local)
	}
	m.mu.Lock()
	m.apply(cfg)
	m.mu.Unlock()
	return m, nil
}

// LocalPeer returns the default local peer name: the host name, as
// HAProxy's.
func LocalPeer() string {
	h, err := os.Hostname()
	if err != nil {
		return "localhost"
	}
	return h
}

// Name returns the section's name.
func (m *Mesh) Name() string { return m.name }

// Addr returns the address the mesh listens at (the bound one, once
// started).
func (m *Mesh) Addr() string {
	if m.ln != nil {
		return m.ln.Addr().String()
	}
	return m.localAddr
}

// Start listens at the local peer's address and starts the sync loop,
// which connects to the other members. The tables' local changes are
// queued from now on.
func (m *Mesh) Start() error {
	ln, err := net.Listen("tcp", m.localAddr)
	if err != nil {
		return fmt.Errorf("peers %q: %w", m.name, err)
	}
	m.StartListener(ln)
	return nil
}

// StartListener is Start on a listener the caller opened.
func (m *Mesh) StartListener(ln net.Listener) {
	m.ln = ln
	m.ctx, m.cancel = context.WithCancel(context.Background())
	m.mu.Lock()
	now := time.Now()
	m.started = now
	// A fulcrum process has no older local process to learn from
	// (HAProxy: no old pid): straight to the remote resync.
	m.flags = meshResyncLocal | meshResyncLocalTimeout
	m.resyncTimeout = now.Add(resyncTimeout)
	if len(m.peers) == 1 {
		m.flags |= meshResyncRemote // alone: nothing to learn
	}
	for _, tb := range m.tables {
		tb.t.SetShared(true)
	}
	m.mu.Unlock()
	m.wg.Add(2)
	go m.accept()
	go m.run()
}

// Stop closes the listener and every session and waits for the mesh's
// goroutines. The tables stop queueing local changes.
func (m *Mesh) Stop() {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return
	}
	m.closed = true
	for _, tb := range m.tables {
		tb.t.SetShared(false)
	}
	sessions := make([]*session, 0, len(m.sessions))
	for s := range m.sessions {
		sessions = append(sessions, s)
	}
	m.mu.Unlock()
	if m.cancel != nil {
		m.cancel()
		m.ln.Close()
	}
	for _, s := range sessions {
		s.close(nil)
	}
	m.wg.Wait()
}

// Reconfigure applies a reload's configuration of the same section: the
// tables to share (a table kept by the reload keeps its log and the
// peers' positions in it) and the members. A member whose address changed
// or that left has its session closed; when the set of tables or their
// definitions changed, every session is closed, and the members reconnect
// and define the tables again (no resync is asked: the reload kept or
// imported the entries). It returns ErrRestart when the section's name,
// the local peer or its address changed.
func (m *Mesh) Reconfigure(cfg Config) error {
	addr := ""
	for _, pc := range cfg.Peers {
		if pc.Name == cfg.Local {
			addr = pc.Addr
		}
	}
	if cfg.Name != m.name || cfg.Local != m.localName || addr != m.localAddr {
		return ErrRestart
	}
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil
	}
	closing := m.apply(cfg)
	m.mu.Unlock()
	for _, s := range closing {
		s.close(errors.New("configuration reloaded"))
	}
	m.poke()
	return nil
}

// apply makes cfg's tables and members the mesh's, reusing the state of
// those that stay, and returns the sessions to close. m.mu is held.
func (m *Mesh) apply(cfg Config) []*session {
	var closing []*session
	// Tables, paired by name.
	old := map[string]*table{}
	for _, tb := range m.tables {
		old[tb.def.name] = tb
	}
	redefine := len(cfg.Tables) != len(m.tables)
	tables := make([]*table, 0, len(cfg.Tables))
	for _, tc := range cfg.Tables {
		fresh := newTable(0, tc)
		tb := old[fresh.def.name]
		switch {
		case tb == nil:
			fresh.def.id = m.nextID
			m.nextID++
			tb = fresh
			redefine = true
		case tb.t != tc.Table || tb.def != fresh.def.withID(tb.def.id):
			// Redefined (a table the reload rebuilt): ids go on, so that
			// the peers' acknowledgements stay meaningful.
			fresh.def.id = tb.def.id
			fresh.update = tb.current()
			tb = fresh
			redefine = true
		}
		delete(old, fresh.def.name)
		tables = append(tables, tb)
		if m.ln != nil && !m.closed {
			tb.t.SetShared(true)
		}
	}
	for _, tb := range old {
		if !slices.ContainsFunc(tables, func(x *table) bool { return x.t == tb.t }) {
			tb.t.SetShared(false)
		}
	}
	m.tables = tables

	// Members, paired by name.
	byName := map[string]*peer{}
	for _, p := range m.peers {
		byName[p.name] = p
	}
	peers := make([]*peer, 0, len(cfg.Peers))
	for _, pc := range cfg.Peers {
		p := byName[pc.Name]
		delete(byName, pc.Name)
		if p == nil {
			p = &peer{name: pc.Name}
		} else if p.addr != pc.Addr && p.sess != nil {
			closing = append(closing, p.sess)
		}
		p.addr = pc.Addr
		p.local = pc.Name == cfg.Local
		origin := cfg.Origin(pc.Name)
		if origin != p.origin && p.sess != nil {
			redefine = true // aggregate slots moved
		}
		p.origin = origin
		p.tables = p.tablesFor(tables)
		peers = append(peers, p)
	}
	for _, p := range byName {
		if p.sess != nil {
			closing = append(closing, p.sess)
		}
	}
	m.peers = peers
	if redefine {
		for _, p := range peers {
			if p.sess != nil && !slices.Contains(closing, p.sess) {
				closing = append(closing, p.sess)
			}
		}
	}
	return closing
}

// withID returns d with id id, to compare definitions.
func (d localDef) withID(id uint64) localDef {
	d.id = id
	return d
}

// peer returns the member named name, or nil. m.mu is held.
func (m *Mesh) peer(name string) *peer {
	for _, p := range m.peers {
		if p.name == name {
			return p
		}
	}
	return nil
}

// poke wakes the sync loop.
func (m *Mesh) poke() {
	select {
	case m.kick <- struct{}{}:
	default:
	}
}

// accept serves the listener until Stop.
func (m *Mesh) accept() {
	defer m.wg.Done()
	for {
		c, err := m.ln.Accept()
		if err != nil {
			if m.ctx.Err() != nil {
				return
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() || errors.Is(err, os.ErrDeadlineExceeded) {
				continue
			}
			m.log.Warn().Err(err).Msg("peers: accept failed")
			select {
			case <-m.ctx.Done():
				return
			case <-time.After(50 * time.Millisecond):
			}
			continue
		}
		m.wg.Add(1)
		go m.serveIncoming(c)
	}
}

// run is the sync loop: it drains the tables' local changes into their
// logs and wakes the sessions, runs the resync and starts the connections
// to the members that have no session.
func (m *Mesh) run() {
	defer m.wg.Done()
	period := drainWindow
	timer := time.NewTimer(period)
	defer timer.Stop()
	var tables []*table
	for {
		select {
		case <-m.ctx.Done():
			return
		case <-timer.C:
		case <-m.kick:
		}
		now := time.Now()
		m.mu.Lock()
		tables = append(tables[:0], m.tables...)
		m.mu.Unlock()
		n := 0
		for _, tb := range tables {
			n += tb.drain(now)
		}
		if n > 0 {
			period = drainWindow
		} else {
			period = min(period*2, drainMax)
		}
		m.tick(now, n > 0)
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
		timer.Reset(period)
	}
}

// tick is one round of the sync loop's protocol work (HAProxy's
// process_peer_sync): resync timeouts and assignment, heartbeats, dead
// sessions, connections to start, sessions to wake when changed.
func (m *Mesh) tick(now time.Time, changed bool) {
	var wake, dead []*session
	m.mu.Lock()
	defer func() {
		m.mu.Unlock()
		for _, s := range wake {
			s.poke()
		}
		for _, s := range dead {
			s.close(errors.New("no message for 5s"))
		}
	}()
	if m.closed {
		return
	}
	m.taskCalls++
	for _, p := range m.peers {
		if p.local {
			continue
		}
		s := p.sess
		if s == nil {
			if !p.dialing && !now.Before(p.reconnect) {
				m.dialLocked(p, now)
			}
			continue
		}
		if !s.established {
			continue
		}
		if t := p.lastRecv.Load(); t > p.aliveSeen {
			p.aliveSeen = t
			p.flags |= peerAlive
		}
		if m.flags&meshResyncState == meshResyncLocal && m.flags&meshResyncAssign == 0 && p.flags&peerLearnNotUp == 0 {
			p.flags |= peerLearnAssign
			m.flags |= meshResyncAssign | meshResyncRemoteAssign
			wake = append(wake, s)
			continue
		}
		if changed {
			// Updates to push: they are also the peer's sign of life.
			p.heartbeat = now.Add(heartbeatTimeout)
			wake = append(wake, s)
		}
		if !now.Before(p.reconnect) {
			if p.flags&peerAlive != 0 {
				p.flags &^= peerAlive
				p.reconnect = now.Add(reconnectTimeout)
			} else {
				p.noHbt++
				dead = append(dead, s)
				continue
			}
		}
		if !now.Before(p.heartbeat) {
			p.heartbeat = now.Add(heartbeatTimeout)
			p.flags |= peerHeartbeat
			wake = append(wake, s)
		}
	}
	if m.flags&meshResyncState == meshResyncLocal && m.flags&meshResyncAssign == 0 && !now.Before(m.resyncTimeout) {
		// Nobody taught us in time: consider ourselves up to date.
		m.flags |= meshResyncRemote | meshResyncRemoteTimeout
	}
}

// dialLocked starts a connection to p. m.mu is held.
func (m *Mesh) dialLocked(p *peer, now time.Time) {
	p.dialing = true
	p.newConn++
	p.status = statusConnect
	p.lastHdshk = now
	p.reconnect = now.Add(reconnectTimeout)
	p.heartbeat = time.Time{}
	m.wg.Add(1)
	go m.dial(p, p.addr)
}

// retryLocked schedules p's next connection after a failed one, with an
// exponential backoff from minBackoff to maxBackoff, jittered by ±50%
// so that members that failed together do not retry together. m.mu is
// held.
func (p *peer) retryLocked(now time.Time) {
	p.backoff = min(max(p.backoff*2, minBackoff), maxBackoff)
	p.reconnect = now.Add(p.backoff/2 + rand.N(p.backoff))
}

// collisionDelay is HAProxy's delay before reconnecting after a session
// was replaced by a connection from the same peer: 50 ms to 2 s, random,
// so that two members do not keep replacing each other's sessions.
func collisionDelay() time.Duration {
	return 50*time.Millisecond + rand.N(2000*time.Millisecond)
}

// dial connects to p at addr and runs the session when the handshake
// succeeds.
func (m *Mesh) dial(p *peer, addr string) {
	defer m.wg.Done()
	d := net.Dialer{Timeout: handshakeTimeout}
	c, err := d.DialContext(m.ctx, "tcp", addr)
	if err != nil {
		m.mu.Lock()
		p.dialing = false
		p.retryLocked(time.Now())
		m.mu.Unlock()
		m.log.Debug().Err(err).Str("peer", p.name).Msg("peers: connect failed")
		return
	}
	s := newSession(m, p, c, true)
	m.mu.Lock()
	if m.closed {
		p.dialing = false
		m.mu.Unlock()
		c.Close()
		return
	}
	p.status = statusConnected
	minor := versionMinor
	if p.flags&peerDowngrade != 0 {
		minor = 0
	}
	m.sessions[s] = struct{}{}
	m.mu.Unlock()
	code, fulcrum, err := s.connectHandshake(minor)
	now := time.Now()
	m.mu.Lock()
	p.dialing = false
	if err == nil {
		p.status = code
		p.lastHdshk = now
	}
	switch {
	case m.closed:
		err = errors.New("stopping")
	case err != nil:
	case code != statusSuccess:
		if code == statusVersion {
			p.flags |= peerDowngrade
		}
		err = fmt.Errorf("refused with status %d (%s)", code, statusName(code))
	case p.sess != nil:
		// A connection from p won meanwhile.
		err = errors.New("a session from the peer is in use")
	}
	if err != nil {
		delete(m.sessions, s)
		if p.sess == nil {
			p.retryLocked(now)
		}
		m.mu.Unlock()
		c.Close()
		m.log.Debug().Err(err).Str("peer", p.name).Msg("peers: handshake failed")
		return
	}
	s.fulcrum = fulcrum
	s.minor = minor
	m.establishLocked(s, now)
	m.mu.Unlock()
	m.log.Info().Str("peer", p.name).Str("addr", addr).Bool("fulcrum", fulcrum).Msg("peers: session established (outgoing)")
	s.run()
}

// serveIncoming runs the handshake of a connection accepted from a
// member, then its session.
func (m *Mesh) serveIncoming(c net.Conn) {
	defer m.wg.Done()
	s := newSession(m, nil, c, false)
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		c.Close()
		return
	}
	m.sessions[s] = struct{}{}
	m.mu.Unlock()
	h, code, err := s.acceptHandshake(func(name string) bool {
		m.mu.Lock()
		defer m.mu.Unlock()
		p := m.peer(name)
		return p != nil && !p.local
	})
	if err == nil && code != statusSuccess {
		s.c.Write(appendStatus(nil, code, false))
		err = fmt.Errorf("refused with status %d (%s)", code, statusName(code))
	}
	now := time.Now()
	m.mu.Lock()
	var p *peer
	if err == nil {
		p = m.peer(h.peer)
		if m.closed || p == nil || p.local {
			err = errors.New("peer gone")
		}
	}
	if err != nil {
		delete(m.sessions, s)
		m.mu.Unlock()
		c.Close()
		m.log.Debug().Err(err).Stringer("src", c.RemoteAddr()).Msg("peers: incoming handshake failed")
		return
	}
	var replaced *session
	if p.sess != nil {
		// Both sides connected, or the peer reconnected before we noticed
		// the old session died: the new one wins, and we wait a random
		// time before connecting again (HAProxy's collision).
		replaced = p.sess
		p.coll++
		p.reconnect = now.Add(collisionDelay())
		p.heartbeat = time.Time{}
		m.endLocked(replaced, now)
	}
	s.p = p
	s.fulcrum = h.fulcrum
	s.minor = h.minor
	if h.minor == 0 {
		p.flags |= peerDowngrade
	} else {
		p.flags &^= peerDowngrade
	}
	p.setSession(s)
	m.mu.Unlock()
	if replaced != nil {
		replaced.close(errors.New("replaced by a new session from the peer"))
	}
	if _, err := s.c.Write(appendStatus(nil, statusSuccess, h.fulcrum)); err != nil {
		m.mu.Lock()
		m.endLocked(s, time.Now())
		delete(m.sessions, s)
		m.mu.Unlock()
		c.Close()
		return
	}
	m.mu.Lock()
	p.status = statusSuccess
	p.lastHdshk = now
	m.establishLocked(s, now)
	m.mu.Unlock()
	m.log.Info().Str("peer", p.name).Stringer("src", c.RemoteAddr()).Bool("fulcrum", h.fulcrum).Msg("peers: session established (incoming)")
	s.run()
}

// establishLocked makes s, whose handshake succeeded, p's session and sets
// the cursors of its tables (HAProxy's init_accepted_peer and
// init_connected_peer). m.mu is held.
func (m *Mesh) establishLocked(s *session, now time.Time) {
	p := s.p
	p.setSession(s)
	s.established = true
	p.backoff = 0
	p.heartbeat = now.Add(heartbeatTimeout)
	p.reconnect = now.Add(reconnectTimeout)
	p.confirm = 0
	p.flags |= peerAlive
	for _, pt := range p.tables {
		pt.lastGet.Store(0)
		pt.lastAcked = 0
		cur := pt.tab.current()
		if pt.update > cur {
			pt.update = 0 // acknowledged ids from another life: push all
		}
		if pt.tab.def.aggregate && s.fulcrum {
			// The peer may have lost our counts (a restart): send them all.
			pt.update = 0
		}
		pt.teachingOrigin, pt.lastPushed = pt.update, pt.update
		pt.flags = 0
		pt.epoch++
		pt.remoteID, pt.remoteData = 0, 0
	}
	p.flags &^= peerTeachReset | peerLearnReset
	if m.flags&meshResyncState == meshResyncLocal && m.flags&meshResyncAssign == 0 {
		p.flags |= peerLearnAssign
		m.flags |= meshResyncAssign | meshResyncRemoteAssign
	}
	s.poke()
}

// endLocked detaches s from its peer when it was the peer's session
// (HAProxy's __peer_session_deinit): a lesson it was giving us is
// aborted and will be asked of another peer. m.mu is held.
func (m *Mesh) endLocked(s *session, now time.Time) {
	p := s.p
	if p == nil || p.sess != s {
		return
	}
	p.setSession(nil)
	if p.flags&peerLearnAssign != 0 {
		m.flags &^= meshResyncAssign | meshResyncProcess
		m.flags |= meshResyncRemoteAbort
		m.resyncTimeout = now.Add(resyncTimeout)
	}
	p.flags &^= peerTeachReset | peerLearnReset | peerAlive
	for _, pt := range p.tables {
		pt.epoch++
	}
}

// sessionEnded is called once by a session that stops. lived is how long
// it was established (0: it never was).
func (m *Mesh) sessionEnded(s *session, lived time.Duration) {
	now := time.Now()
	m.mu.Lock()
	delete(m.sessions, s)
	p := s.p
	if p != nil && p.sess == s {
		m.endLocked(s, now)
		// Reconnect soon after a long session, backing off after sessions
		// that keep failing.
		if lived > 10*time.Second {
			p.backoff = 0
		}
		p.retryLocked(now)
	}
	m.mu.Unlock()
	m.poke()
}
