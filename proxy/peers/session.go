package peers

// A session with a peer: the handshake, then two goroutines. The reader
// decodes the peer's messages, stores its updates in the tables and
// handles its control messages; the writer, woken by the sync loop (local
// changes, heartbeats) or the reader (acknowledgements and lessons due),
// sends what the cursors say is due: a resync request, acknowledgements,
// local updates (or a whole lesson), resync messages, heartbeats.
//
// Bytes from a peer are untrusted: a message that does not decode ends
// the session with a protocol error message and a log line, before any
// of it is stored (an update is decoded whole, then stored).

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fulcrum-proxy/fulcrum/proxy/stick"
)

// session is one connection with a member.
type session struct {
	m   *Mesh
	p   *peer // nil until an incoming handshake names it
	c   net.Conn
	out bool // we connected
	// Set once the handshake succeeded, before run.
	fulcrum bool
	minor   int
	// established is set under Mesh.mu when the session becomes its
	// peer's.
	established bool

	calls    atomic.Uint64 // messages read and writer rounds (show peers' task_calls)
	counting atomic.Bool   // count the bytes read: the session runs

	wake chan struct{} // wakes the writer
	done chan struct{} // closed by close
	once sync.Once

	wmu sync.Mutex // serialises writes to c (the writer's flushes, an error message)
	// last is set, under wmu, once the error message that ends the
	// session is written: nothing may follow it on the wire.
	last bool
	br   *bufio.Reader
	bw   *bufio.Writer

	// The writer's.
	buf, scratch []byte
	tx           dictTx
	defined      map[*peerTable]bool
	lastLocal    *peerTable
	slots        []slot
	data         stick.Data
	kb           []byte
	jobs         []job

	// The reader's.
	rd     frameReader
	rx     dictRx
	remote map[uint64]*remoteTable // by the peer's table id
	cur    *remoteTable            // the table of the next updates
	rdata  stick.Data
	ackDue bool
}

// remoteTable is a table the peer defined on this session.
type remoteTable struct {
	def tableDef
	pt  *peerTable // nil: no table of ours pairs with it, its updates are ignored
}

// connWriter writes to the session's connection under wmu.
type connWriter struct{ s *session }

func (w connWriter) Write(b []byte) (int, error) {
	w.s.wmu.Lock()
	defer w.s.wmu.Unlock()
	if w.s.last {
		return 0, errSessionEnded
	}
	return w.s.writeLocked(b)
}

// writeLocked writes b to the connection, counting it; wmu is held.
func (s *session) writeLocked(b []byte) (int, error) {
	s.c.SetWriteDeadline(time.Now().Add(10 * time.Second))
	n, err := s.c.Write(b)
	if p := s.p; p != nil {
		p.bytesSent.Add(uint64(n))
		p.writes.Add(1)
	}
	return n, err
}

// connReader reads from the session's connection, counting the bytes once
// the session has its peer.
type connReader struct{ s *session }

func (r connReader) Read(b []byte) (int, error) {
	n, err := r.s.c.Read(b)
	if p := r.s.p; p != nil && r.s.counting.Load() {
		p.bytesReceived.Add(uint64(n))
	}
	return n, err
}

func newSession(m *Mesh, p *peer, c net.Conn, out bool) *session {
	s := &session{m: m, p: p, c: c, out: out, wake: make(chan struct{}, 1), done: make(chan struct{}),
		defined: map[*peerTable]bool{}, remote: map[uint64]*remoteTable{}}
	s.br = bufio.NewReaderSize(connReader{s}, 32<<10)
	s.bw = bufio.NewWriterSize(connWriter{s}, 32<<10)
	s.rd.r = s.br
	return s
}

// connectHandshake sends the hello to s.p and reads its status.
func (s *session) connectHandshake(minor int) (code int, fulcrum bool, err error) {
	s.c.SetDeadline(time.Now().Add(handshakeTimeout))
	hello := appendHello(nil, s.p.name, s.m.localName, pid(), minor)
	if _, err := s.c.Write(hello); err != nil {
		return 0, false, err
	}
	line, err := readLine(s.br)
	if err != nil {
		return 0, false, err
	}
	code, fulcrum = parseStatus(line)
	return code, fulcrum, nil
}

// acceptHandshake reads the hello of a connecting peer.
func (s *session) acceptHandshake(known func(string) bool) (hello, int, error) {
	s.c.SetDeadline(time.Now().Add(handshakeTimeout))
	return readHello(s.br, s.m.localName, known)
}

// poke wakes the writer.
func (s *session) poke() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// close ends the session (once): the connection closes, which stops both
// goroutines. err says why, for the log (nil: the mesh stops).
func (s *session) close(err error) {
	s.once.Do(func() {
		close(s.done)
		s.c.Close()
		if err == nil || s.p == nil {
			return
		}
		ev := s.m.log.Info()
		if errors.Is(err, errMalformed) || errors.Is(err, errTooLarge) || errors.Is(err, errPeerError) {
			ev = s.m.log.Warn()
		}
		ev.Err(err).Str("peer", s.p.name).Msg("peers: session closed")
	})
}

// writeLast writes b, the error message that ends the session, and
// stops every later write (the writer's next flush fails instead of
// putting a message after it).
func (s *session) writeLast(b []byte) {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if !s.last {
		s.writeLocked(b)
		s.last = true
	}
}

// errSessionEnded is a write after the session's error message.
var errSessionEnded = errors.New("peers: the session's error message was sent")

// errPeerError is a peer's error message: it closes the session.
var errPeerError = errors.New("the peer reported an error")

// run runs an established session until it ends.
func (s *session) run() {
	s.c.SetDeadline(time.Time{})
	s.counting.Store(true)
	start := time.Now()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		s.writeLoop()
	}()
	err := s.readLoop()
	switch {
	case errors.Is(err, errTooLarge), errors.Is(err, errMalformed):
		s.m.mu.Lock()
		s.p.protoErr++
		s.m.mu.Unlock()
		code := byte(errProtocol)
		if errors.Is(err, errTooLarge) {
			code = errSizeLimit
		}
		s.writeLast([]byte{classError, code})
	case errors.Is(err, io.EOF):
		err = errors.New("closed by the peer")
	}
	s.close(err)
	wg.Wait()
	s.m.sessionEnded(s, time.Since(start))
}

// readLoop reads and handles messages until the connection fails or a
// message ends the session.
func (s *session) readLoop() error {
	for {
		class, typ, data, err := s.rd.next()
		if err != nil {
			return err
		}
		now := time.Now()
		s.calls.Add(1)
		s.p.lastRecv.Store(now.UnixNano())
		if err := s.handle(class, typ, data, now); err != nil {
			return err
		}
		if s.ackDue && s.br.Buffered() == 0 {
			// The end of what arrived: acknowledge it.
			s.ackDue = false
			s.poke()
		}
	}
}

// handle handles one message.
func (s *session) handle(class, typ byte, data []byte, now time.Time) error {
	switch class {
	case classControl:
		if !hasData(typ) {
			s.control(typ, now)
		}
	case classError:
		return fmt.Errorf("%w (%d)", errPeerError, typ)
	case classStickTable:
		switch typ {
		case stktDefine:
			return s.define(data)
		case stktSwitch:
			id, err := decodeSwitch(data)
			if err != nil {
				return fmt.Errorf("%w: table switch", err)
			}
			s.cur = s.remote[id]
			s.showRemote()
		case stktUpdate, stktIncUpdate, stktUpdateTimed, stktIncUpdateTimed:
			return s.update(typ, data)
		case stktAck:
			return s.ack(data)
		}
	case classReserved:
		return fmt.Errorf("%w: reserved message class", errMalformed)
	}
	return nil // unknown messages are ignored, as HAProxy does
}

// control handles a control message (HAProxy's peer_treat_awaited_msg).
func (s *session) control(typ byte, now time.Time) {
	m, p := s.m, s.p
	m.mu.Lock()
	defer m.mu.Unlock()
	if p.sess != s {
		return // a replaced session's: the cursors are the new one's
	}
	switch typ {
	case ctrlResyncRequest:
		// Teach the peer everything, from the start of each table.
		for _, pt := range p.tables {
			pt.teachingOrigin = pt.update
			pt.lastPushed = pt.update
			pt.flags = 0
			pt.epoch++
		}
		p.flags &^= peerTeachReset
		p.flags |= peerTeachProcess
		m.flags |= meshResyncRequested
	case ctrlResyncFinished, ctrlResyncPartial:
		if p.flags&peerLearnAssign != 0 {
			p.flags &^= peerLearnAssign
			m.flags &^= meshResyncAssign | meshResyncProcess
			if typ == ctrlResyncFinished {
				m.flags |= meshResyncLocal | meshResyncRemote | meshResyncRemoteFinished
				m.log.Info().Str("peer", p.name).Msg("peers: resync finished")
			} else {
				m.flags |= meshResyncRemotePartial
				p.flags |= peerLearnNotUp
				m.resyncTimeout = now.Add(resyncTimeout)
				m.log.Info().Str("peer", p.name).Msg("peers: resync partial (the peer was not up to date)")
				m.poke()
			}
		}
		p.confirm++
	case ctrlResyncConfirm:
		// The lesson was received: back to pushing changes, from where
		// the lesson started.
		for _, pt := range p.tables {
			pt.update = pt.teachingOrigin
			pt.lastPushed = pt.teachingOrigin
			pt.flags = 0
			pt.epoch++
		}
		p.flags &^= peerTeachReset
	case ctrlHeartbeat:
		p.reconnect = now.Add(reconnectTimeout)
		p.rxHbt++
		p.lastHbt.Store(now.UnixNano())
		return
	default:
		return
	}
	s.poke()
}

// define handles a table definition: it pairs the peer's table with ours
// of the same name, key type and key size (and, with a fulcrum peer, the
// same aggregate setting), or ignores its updates.
func (s *session) define(data []byte) error {
	def, err := decodeDefine(data, s.fulcrum)
	if err != nil {
		return fmt.Errorf("%w: table definition", err)
	}
	m, p := s.m, s.p
	m.mu.Lock()
	var match *peerTable
	why := ""
	for _, pt := range p.tables {
		if pt.remoteID == def.id {
			pt.remoteID = 0
		}
		if match != nil || pt.tab.def.name != string(def.name) {
			continue
		}
		switch {
		case !def.usable:
			why = "data types fulcrum cannot decode"
		case def.keyType != pt.tab.def.keyType || def.keySize != pt.tab.def.keySize:
			why = fmt.Sprintf("key type %d size %d, ours %d size %d", def.keyType, def.keySize, pt.tab.def.keyType, pt.tab.def.keySize)
		case s.fulcrum && def.aggregate != pt.tab.def.aggregate:
			why = "peers_aggregate differs"
		default:
			match = pt
		}
	}
	if match != nil {
		match.remoteID = def.id
		match.remoteData = def.types
	}
	m.mu.Unlock()
	if why != "" {
		m.log.Warn().Str("peer", p.name).Str("table", string(def.name)).Str("reason", why).Msg("peers: the peer's table differs from ours: its updates are ignored")
	}
	rt := &remoteTable{def: def, pt: match}
	s.remote[def.id] = rt
	s.cur = rt
	s.showRemote()
	return nil
}

// showRemote publishes the current remote table for show peers.
func (s *session) showRemote() {
	var pt *peerTable
	if s.cur != nil {
		pt = s.cur.pt
	}
	s.m.mu.Lock()
	s.p.remoteTable = pt
	s.m.mu.Unlock()
}

// update handles an update message: decoded whole, then stored.
func (s *session) update(typ byte, data []byte) error {
	rt := s.cur
	if rt == nil || rt.pt == nil {
		return nil // a table we do not share: ignored, as HAProxy does
	}
	r := received{withID: typ == stktUpdate || typ == stktUpdateTimed, timed: typ == stktUpdateTimed || typ == stktIncUpdateTimed}
	if err := decodeUpdate(data, &rt.def, &r, &s.rdata, &s.rx); err != nil {
		return fmt.Errorf("%w: update of table %s", err, rt.def.name)
	}
	pt := rt.pt
	tb := pt.tab
	k, ok := tb.t.KeyFromBytes(r.key)
	if !ok {
		return fmt.Errorf("%w: update of table %s: key of %d bytes", errMalformed, rt.def.name, len(r.key))
	}
	p := s.p
	p.learnMu.Lock()
	defer p.learnMu.Unlock()
	if p.live.Load() != s {
		// Replaced: the peer sends its changes again on the new session
		// (from what we acknowledged), which may have stored newer data
		// already: storing this one now would undo it.
		return nil
	}
	if r.withID {
		pt.lastGet.Store(r.id)
	} else {
		pt.lastGet.Add(1)
	}
	expire := int64(-1)
	if r.timed {
		expire = int64(r.expire)
	}
	origin := 0
	if tb.def.aggregate && s.fulcrum && rt.def.aggregate {
		origin = p.origin
	}
	if e := tb.t.Learn(k, &s.rdata, expire, origin); e != nil {
		tb.learnedAdd()
		if origin > 0 {
			tb.sumChanged(e) // for the peers that get the sums
		}
		if s.m.learned != nil {
			s.m.learned(tb.t, k)
		}
	}
	s.p.updatesReceived.Add(1)
	s.ackDue = true
	return nil
}

// ack handles an acknowledgement of our updates.
func (s *session) ack(data []byte) error {
	id, upd, err := decodeAck(data)
	if err != nil {
		return fmt.Errorf("%w: acknowledgement", err)
	}
	m, p := s.m, s.p
	m.mu.Lock()
	defer m.mu.Unlock()
	if p.sess != s {
		return nil // a replaced session's: the cursors are the new one's
	}
	if p.flags&peerTeachProcess != 0 {
		return nil // ignored during a lesson, as HAProxy does
	}
	for _, pt := range p.tables {
		if pt.tab.def.id == id {
			pt.update = widen(upd, pt.tab.current())
		}
	}
	return nil
}

// job is a table the writer pushes from, or teaches.
type job struct {
	pt    *peerTable
	from  uint64 // last id pushed
	epoch uint64
}

// writeLoop sends what is due each time the session is woken, until it
// ends.
func (s *session) writeLoop() {
	for {
		select {
		case <-s.done:
			return
		case <-s.wake:
		}
		s.calls.Add(1)
		if err := s.send(); err != nil {
			if !errors.Is(err, errSessionEnded) {
				s.close(fmt.Errorf("write: %w", err))
			}
			// else the reader sent the error message that ends the
			// session, and closes it with its reason (run): closing here
			// first would log this write's error instead.
			return
		}
	}
}

// pushBatch is how many updates of a table the writer takes at once.
const pushBatch = 256

// send sends everything due, in rounds, then flushes.
func (s *session) send() error {
	m, p := s.m, s.p
	for {
		s.buf = s.buf[:0]
		s.jobs = s.jobs[:0]
		teach := false
		m.mu.Lock()
		if !s.established || p.sess != s {
			m.mu.Unlock()
			return nil
		}
		if p.flags&peerLearnAssign != 0 && m.flags&meshResyncAssign != 0 && m.flags&meshResyncProcess == 0 {
			s.buf = append(s.buf, classControl, ctrlResyncRequest)
			m.flags |= meshResyncProcess
		}
		for _, pt := range p.tables {
			if g := pt.lastGet.Load(); g != pt.lastAcked && pt.remoteID != 0 {
				s.buf = appendAck(s.buf, pt.remoteID, g)
				pt.lastAcked = g
			}
		}
		switch {
		case p.flags&peerTeachProcess == 0:
			if p.flags&peerLearnAssign == 0 { // not while it teaches us
				for _, pt := range p.tables {
					if pt.lastPushed < pt.tab.current() {
						s.jobs = append(s.jobs, job{pt, pt.lastPushed, pt.epoch})
					}
				}
			}
		case p.flags&peerTeachFinished == 0:
			teach = true
			for _, pt := range p.tables {
				if pt.flags&tableTaught != tableTaught {
					s.jobs = append(s.jobs, job{pt, pt.teachingOrigin, pt.epoch})
				}
			}
		}
		confirms := p.confirm
		p.confirm = 0
		if p.flags&peerHeartbeat != 0 {
			p.flags &^= peerHeartbeat
			p.txHbt++
			s.buf = append(s.buf, classControl, ctrlHeartbeat)
		}
		m.mu.Unlock()

		more := false
		for _, j := range s.jobs {
			var err error
			if teach {
				err = s.teach(j)
			} else {
				var again bool
				again, err = s.push(j)
				more = more || again
			}
			if err != nil {
				return err
			}
		}
		if teach {
			m.mu.Lock()
			done := p.sess == s && p.flags&peerTeachProcess != 0 && p.flags&peerTeachFinished == 0
			for _, pt := range p.tables {
				done = done && pt.flags&tableTaught == tableTaught
			}
			if done {
				typ := byte(ctrlResyncPartial)
				if m.flags&meshResyncState == meshResyncState {
					typ = ctrlResyncFinished
				}
				s.buf = append(s.buf, classControl, typ)
				p.flags |= peerTeachFinished
			}
			m.mu.Unlock()
		}
		for range confirms {
			s.buf = append(s.buf, classControl, ctrlResyncConfirm)
		}
		if len(s.buf) == 0 && !more {
			return s.bw.Flush()
		}
		if _, err := s.bw.Write(s.buf); err != nil {
			return err
		}
		if !more && !teach {
			return s.bw.Flush()
		}
	}
}

// spill moves the messages built so far to the connection's buffer when
// they grow large.
func (s *session) spill() error {
	if len(s.buf) < 16<<10 {
		return nil
	}
	_, err := s.bw.Write(s.buf)
	s.buf = s.buf[:0]
	return err
}

// useTable makes pt the table of the next updates: its definition the
// first time on this session, a switch when another table came between.
func (s *session) useTable(pt *peerTable) {
	if !s.defined[pt] {
		s.buf, s.scratch = appendDefine(s.buf, s.scratch, &pt.tab.def, s.fulcrum)
		s.defined[pt] = true
	} else if s.lastLocal != pt {
		s.buf = appendSwitch(s.buf, pt.tab.def.id)
	}
	s.lastLocal = pt
}

// own reports whether pt's aggregated fields go as this instance's own
// counts (to a fulcrum peer), rather than summed.
func (s *session) own(pt *peerTable) bool { return pt.tab.def.aggregate && s.fulcrum }

// push sends the next batch of local changes of j's table, and reports
// whether there may be more.
func (s *session) push(j job) (bool, error) {
	pt := j.pt
	tb := pt.tab
	var next uint64
	s.slots, next = tb.since(s.slots[:0], j.from, pushBatch, tb.def.aggregate && !s.fulcrum)
	if next == j.from {
		return false, nil
	}
	own := s.own(pt)
	prev := uint64(0)
	sent := 0
	for _, sl := range s.slots {
		// Changes go untimed, as HAProxy sends them: the peer's expire
		// applies.
		if _, ok := tb.t.Export(sl.e, &s.data, own); !ok {
			continue // gone from the table
		}
		if sent == 0 {
			s.useTable(pt)
		}
		s.kb = tb.t.AppendKeyBytes(s.kb[:0], sl.e.Key())
		u := update{id: uint32(sl.id), withID: prev == 0 || sl.id != prev+1, key: s.kb, data: &s.data}
		s.buf, s.scratch = appendUpdate(s.buf, s.scratch, &tb.def, &u, &s.tx)
		prev = sl.id
		sent++
		if err := s.spill(); err != nil {
			return false, err
		}
	}
	s.p.updatesSent.Add(uint64(sent))
	m := s.m
	m.mu.Lock()
	if pt.epoch == j.epoch && s.p.sess == s {
		pt.lastPushed = next
		tb.committed(next)
		s.p.lastLocalTable = s.lastLocal
	}
	m.mu.Unlock()
	return len(s.slots) == pushBatch || next < tb.current(), nil
}

// teach sends every entry of j's table (a lesson), timed, each with the
// id the lesson started at, so that the peer's acknowledgements never
// name an id this side has not given.
func (s *session) teach(j job) error {
	pt := j.pt
	tb := pt.tab
	own := s.own(pt)
	timed := s.minor > 0
	s.useTable(pt)
	var err error
	sent := 0
	tb.t.Range(func(e *stick.Entry) bool {
		exp, ok := tb.t.Export(e, &s.data, own)
		if !ok {
			return true
		}
		s.kb = tb.t.AppendKeyBytes(s.kb[:0], e.Key())
		u := update{id: uint32(j.from), withID: true, timed: timed, expire: uint32(min(exp, 1<<31)), key: s.kb, data: &s.data}
		s.buf, s.scratch = appendUpdate(s.buf, s.scratch, &tb.def, &u, &s.tx)
		sent++
		err = s.spill()
		return err == nil
	})
	if err != nil {
		return err
	}
	s.p.updatesSent.Add(uint64(sent))
	m := s.m
	m.mu.Lock()
	if pt.epoch == j.epoch && s.p.sess == s {
		pt.flags |= tableTaught
		s.p.lastLocalTable = s.lastLocal
	}
	m.mu.Unlock()
	return nil
}
