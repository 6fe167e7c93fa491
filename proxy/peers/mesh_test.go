package peers

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/fulcrum-proxy/fulcrum/internal/testutil"
	"github.com/fulcrum-proxy/fulcrum/proxy/stick"
	"github.com/rs/zerolog"
)

func ip(t testing.TB, s string) stick.Key {
	k, ok := stick.IPKey(stick.KeyIP, netip.MustParseAddr(s))
	if !ok {
		t.Fatal(s)
	}
	return k
}

// TestTwoMembers: an entry changed on one member shows on the other with
// its data, both ways.
func TestTwoMembers(t *testing.T) {
	c := newCluster(t, 2)
	ta := ipTable(t, "st", 0, "server_id", "http_req_cnt", "http_req_rate(10s)", "conn_cur")
	tb := ipTable(t, "st", 0, "server_id", "http_req_cnt", "http_req_rate(10s)", "conn_cur")
	c.start(t, 0, TableConfig{Table: ta})
	c.start(t, 1, TableConfig{Table: tb})
	c.waitSettled(t)
	k := ip(t, "10.0.0.1")
	e := ta.Get(k)
	ta.SetServer(e, 2, "s2")
	ta.Update(e, stick.HTTPReqCnt, stick.HTTPReqRate, stick.ConnCur)
	ta.Release(e)
	waitFor(t, 15*time.Second, "the entry on b", func() bool { return value(tb, k, stick.HTTPReqCnt) == 1 })
	if v := value(tb, k, stick.ServerID); v != 2 {
		t.Errorf("server_id on b: %d, want 2", v)
	}
	if v := value(tb, k, stick.ConnCur); v != 0 {
		t.Errorf("conn_cur on b: %d, want 0 (never learned)", v)
	}
	// And back, once a's last changes (a Release touches the entry
	// again) have reached b: one arriving after b's change would replace
	// it, last writer wins.
	waitCaughtUp(t, c.meshes[0])
	e = tb.Get(k)
	tb.Update(e, stick.HTTPReqCnt)
	tb.Release(e)
	defer func() {
		if t.Failed() {
			t.Logf("http_req_cnt on a %d, on b %d", value(ta, k, stick.HTTPReqCnt), value(tb, k, stick.HTTPReqCnt))
			dumpStatus(t, c)
		}
	}()
	waitFor(t, 15*time.Second, "the change on a", func() bool { return value(ta, k, stick.HTTPReqCnt) == 2 })
}

func dumpStatus(t testing.TB, c *cluster) {
	for _, m := range c.meshes {
		st := m.Status()
		t.Logf("%s flags=%#x", m.localName, st.Flags)
		for _, p := range st.Peers {
			t.Logf("  %s active=%v conn=%v flags=%#x sent=%d recv=%d", p.Name, p.Active, p.Connected, p.Flags, p.UpdatesSent, p.UpdatesReceived)
			for _, pt := range p.Tables {
				t.Logf("    %+v", pt)
			}
		}
	}
}

// TestHostilePeer: a peer that sends a malformed update gets the protocol
// error message, its session is closed with a log line, and the table is
// as it was; one that announces a message too large gets the size error.
func TestHostilePeer(t *testing.T) {
	for _, tc := range []struct {
		name    string
		stream  func(def *localDef) []byte
		errCode byte
		reqCnt  int64 // after the session
	}{
		{"malformed update", func(def *localDef) []byte {
			b, _ := appendDefine(nil, nil, def, false)
			// An update whose data stops inside the key.
			return appendMessage(b, classStickTable, stktUpdate, []byte{0, 0, 0, 1, 10, 0})
		}, errProtocol, 1},
		{"bad server_key id", func(def *localDef) []byte {
			b, _ := appendDefine(nil, nil, def, false)
			var d stick.Data
			d.Types = 1 << stick.HTTPReqCnt
			d.Val[stick.HTTPReqCnt] = 5
			u := update{id: 1, withID: true, key: []byte{10, 0, 0, 1}, data: &d}
			b, _ = appendUpdate(b, nil, def, &u, &dictTx{})
			// The same entry, then a dictionary id above 128.
			return appendMessage(b, classStickTable, stktUpdate, []byte{0, 0, 0, 2, 10, 0, 0, 1, 0, 2, 0xf0, 0x10})
		}, errProtocol, 5}, // the valid update stored, not the other
		{"too large", func(*localDef) []byte {
			return appendVarint([]byte{classStickTable, stktUpdate}, maxMessage+1)
		}, errSizeLimit, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ln := listen(t)
			tb := ipTable(t, "st", 0, "http_req_cnt", "server_key")
			k := ip(t, "10.0.0.1")
			e := tb.Get(k)
			tb.Update(e, stick.HTTPReqCnt)
			tb.Release(e)
			logs := &testutil.SyncBuffer{}
			m, err := New(Config{Name: "mesh", Local: "a", Tables: []TableConfig{{Table: tb}},
				Peers: []PeerConfig{{Name: "a", Addr: ln.Addr().String()}, {Name: "evil", Addr: freePort(t)}}}, zerolog.New(logs))
			if err != nil {
				t.Fatal(err)
			}
			m.StartListener(ln)
			t.Cleanup(m.Stop)
			c, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			c.SetDeadline(time.Now().Add(5 * time.Second))
			br := bufio.NewReader(c)
			fmt.Fprintf(c, "HAProxyS 2.1\na\nevil 1 1\n")
			if line, err := readLine(br); err != nil || line != "200" {
				t.Fatalf("status %q %v", line, err)
			}
			def := newTable(1, TableConfig{Table: tb}).def
			c.Write(tc.stream(&def))
			// Read what the mesh sends until it closes: the last message
			// is the error.
			all, _ := io.ReadAll(br)
			if n := len(all); n < 2 || all[n-2] != classError || all[n-1] != tc.errCode {
				t.Fatalf("the mesh's last bytes: % x, want the error message 01 %02x", all[max(0, len(all)-8):], tc.errCode)
			}
			waitFor(t, 15*time.Second, "the log line", func() bool { return strings.Contains(logs.String(), "peers: session closed") })
			if !strings.Contains(logs.String(), `"peer":"evil"`) || !strings.Contains(logs.String(), `"level":"warn"`) {
				t.Errorf("log: %s", logs.String())
			}
			if v := value(tb, k, stick.HTTPReqCnt); v != tc.reqCnt {
				t.Errorf("http_req_cnt after the hostile session: %d, want %d", v, tc.reqCnt)
			}
			if tb.Used() != 1 {
				t.Errorf("%d entries, want 1", tb.Used())
			}
			if st := peerStatus(m, "evil"); st.ProtoErr != 1 {
				t.Errorf("proto_err %d, want 1", st.ProtoErr)
			}
		})
	}
}

// TestResumeAfterDrop: when a session drops and comes back, each side
// pushes only what the other has not acknowledged (no lesson, nothing sent
// twice), changes made meanwhile included.
func TestResumeAfterDrop(t *testing.T) {
	c := newCluster(t, 2)
	ta := ipTable(t, "st", 0, "http_req_cnt")
	tb := ipTable(t, "st", 0, "http_req_cnt")
	ma := c.start(t, 0, TableConfig{Table: ta})
	mb := c.start(t, 1, TableConfig{Table: tb})
	c.waitSettled(t)
	for _, m := range []*Mesh{ma, mb} { // the start's resync is over
		m.mu.Lock()
		m.flags |= meshResyncState
		m.mu.Unlock()
	}
	bump := func(tbl *stick.Table, k stick.Key) {
		e := tbl.Get(k)
		tbl.Update(e, stick.HTTPReqCnt)
		tbl.Release(e)
	}
	k1, k2 := ip(t, "10.0.0.1"), ip(t, "10.0.0.2")
	bump(ta, k1)
	waitFor(t, 15*time.Second, "k1 on b", func() bool { return value(tb, k1, stick.HTTPReqCnt) == 1 })
	waitFor(t, 15*time.Second, "a's update acknowledged", func() bool { return peerStatus(ma, "b").Tables[0].Update == 1 })
	// Both ends must hold the same connection, with no dial in flight (a
	// late dial of the start's collision would replace the session the
	// test drops, and carry k2 without a new connection).
	var s *session
	waitFor(t, 15*time.Second, "one connection between a and b", func() bool {
		ma.mu.Lock()
		pa := ma.peer("b")
		sa, da := pa.sess, pa.dialing
		ma.mu.Unlock()
		mb.mu.Lock()
		pb := mb.peer("a")
		sb, db := pb.sess, pb.dialing
		mb.mu.Unlock()
		if sa == nil || sb == nil || da || db {
			return false
		}
		s = sa
		return sa.c.LocalAddr().String() == sb.c.RemoteAddr().String()
	})
	recv := peerStatus(mb, "a").UpdatesReceived
	conns := peerStatus(ma, "b").NewConn + peerStatus(mb, "a").NewConn
	s.close(fmt.Errorf("test: connection dropped"))
	bump(ta, k2)
	waitFor(t, 15*time.Second, "k2 on b", func() bool { return value(tb, k2, stick.HTTPReqCnt) == 1 })
	c.waitSettled(t)
	if got := peerStatus(mb, "a").UpdatesReceived - recv; got != 1 {
		t.Errorf("b received %d updates after the reconnection, want 1 (k2 only)", got)
	}
	if n := peerStatus(ma, "b").NewConn + peerStatus(mb, "a").NewConn; n <= conns {
		t.Errorf("no new connection after the drop (%d, then %d)", conns, n)
	}
	if v := value(tb, k1, stick.HTTPReqCnt); v != 1 {
		t.Errorf("k1 on b: %d, want 1", v)
	}
}

// TestAggregateRestart: three members add up a counter; one restarts with
// an empty table: it gets the others' counts back, and they drop its old
// ones once it sends its own again.
func TestAggregateRestart(t *testing.T) {
	c := newCluster(t, 3)
	var tabs []*stick.Table
	for i := range 3 {
		tb := ipTable(t, "st", 2, "http_req_cnt", "http_req_rate(10s)")
		c.start(t, i, TableConfig{Table: tb, Aggregate: true})
		tabs = append(tabs, tb)
	}
	c.waitSettled(t)
	k := ip(t, "10.9.9.9")
	count := func(tb *stick.Table, n int) {
		e := tb.Get(k)
		for range n {
			tb.Update(e, stick.HTTPReqCnt, stick.HTTPReqRate)
		}
		tb.Release(e)
	}
	for i, tb := range tabs {
		count(tb, i+1) // 1 + 2 + 3
	}
	for i, tb := range tabs {
		waitFor(t, 15*time.Second, fmt.Sprintf("the sum on member %d", i), func() bool {
			return value(tb, k, stick.HTTPReqCnt) == 6 && value(tb, k, stick.HTTPReqRate) == 6
		})
	}
	// c restarts: a new process, an empty table.
	c.meshes[2].Stop()
	fresh := ipTable(t, "st", 2, "http_req_cnt", "http_req_rate(10s)")
	c.start(t, 2, TableConfig{Table: fresh, Aggregate: true})
	c.waitSettled(t)
	waitFor(t, 15*time.Second, "the others' counts on the restarted member", func() bool { return value(fresh, k, stick.HTTPReqCnt) == 3 })
	count(fresh, 4)
	for i, tb := range []*stick.Table{tabs[0], tabs[1], fresh} {
		waitFor(t, 15*time.Second, fmt.Sprintf("the new sum on member %d", i), func() bool { return value(tb, k, stick.HTTPReqCnt) == 7 })
	}
}

// After the error message that ends a session, the writer's next flush
// writes nothing (a resync request once followed the size error on the
// wire, written by the writer goroutine while the reader sent the error).
func TestNothingAfterErrorMessage(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	s := newSession(&Mesh{}, nil, a, false)
	got := make(chan []byte)
	go func() {
		all, _ := io.ReadAll(b)
		got <- all
	}()
	s.writeLast([]byte{classError, errSizeLimit})
	s.bw.Write([]byte{classControl, ctrlResyncRequest})
	if err := s.bw.Flush(); !errors.Is(err, errSessionEnded) {
		t.Errorf("flush after the error message: %v, want errSessionEnded", err)
	}
	s.writeLast([]byte{classError, errProtocol})
	a.Close()
	if all := <-got; !bytes.Equal(all, []byte{classError, errSizeLimit}) {
		t.Fatalf("on the wire: % x, want 01 01 alone", all)
	}
}

// TestReplacedSession: a session replaced by a newer one from the same
// peer stores nothing it reads afterwards. Its reader may still hold
// updates the peer wrote before the replacement while the new session
// already stored later data for the same entries (the peer resends from
// what we acknowledged); storing the old ones then would undo the new
// ones (seen as a counter stuck at 0 on a loaded machine after a reload).
// Nor do its acknowledgements or resync messages move the new session's
// cursors.
func TestReplacedSession(t *testing.T) {
	ln := listen(t)
	tb := ipTable(t, "st", 0, "http_req_cnt")
	m, err := New(Config{Name: "mesh", Local: "a", Tables: []TableConfig{{Table: tb}},
		Peers: []PeerConfig{{Name: "a", Addr: ln.Addr().String()}, {Name: "b", Addr: freePort(t)}}}, testLog(t))
	if err != nil {
		t.Fatal(err)
	}
	m.StartListener(ln)
	t.Cleanup(m.Stop)
	// Local changes, so that an acknowledgement can name an id of ours.
	for i := range 8 {
		e := tb.Get(ip(t, fmt.Sprintf("10.0.1.%d", i)))
		tb.Update(e, stick.HTTPReqCnt)
		tb.Release(e)
	}
	waitFor(t, 10*time.Second, "the local changes drained", func() bool {
		m.mu.Lock()
		defer m.mu.Unlock()
		return m.tables[0].current() == 8
	})
	def := newTable(1, TableConfig{Table: tb}).def
	k := ip(t, "10.0.0.1")
	updateMsg := func(id uint32, count uint64) []byte {
		var d stick.Data
		d.Types = 1 << stick.HTTPReqCnt
		d.Val[stick.HTTPReqCnt] = count
		u := update{id: id, withID: true, key: []byte{10, 0, 0, 1}, data: &d}
		b, _ := appendUpdate(nil, nil, &def, &u, &dictTx{})
		return b
	}
	connect := func() net.Conn {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		c.SetDeadline(time.Now().Add(10 * time.Second))
		fmt.Fprintf(c, "HAProxyS 2.1\na\nb 1 1\n")
		if line, err := readLine(bufio.NewReader(c)); err != nil || line != "200" {
			t.Fatalf("status %q %v", line, err)
		}
		return c
	}
	session := func() *session {
		m.mu.Lock()
		defer m.mu.Unlock()
		return m.peer("b").sess
	}

	c1 := connect()
	b, _ := appendDefine(nil, nil, &def, false)
	c1.Write(append(b, updateMsg(1, 1)...))
	waitFor(t, 10*time.Second, "the first session's update", func() bool { return value(tb, k, stick.HTTPReqCnt) == 1 })
	old := session()

	c2 := connect()
	b, _ = appendDefine(nil, nil, &def, false)
	c2.Write(append(b, updateMsg(3, 3)...))
	waitFor(t, 10*time.Second, "the new session's update", func() bool { return value(tb, k, stick.HTTPReqCnt) == 3 })
	if session() == old {
		t.Fatal("the second connection did not replace the first session")
	}
	waitFor(t, 10*time.Second, "the replaced session's end", func() bool {
		m.mu.Lock()
		defer m.mu.Unlock()
		_, ok := m.sessions[old]
		return !ok
	})
	before := peerStatus(m, "b")

	// What the replaced session's reader would handle next: an older
	// update of the same entry, an acknowledgement, a resync request.
	msg := updateMsg(2, 2)
	if err := old.handle(msg[0], msg[1], msg[3:], time.Now()); err != nil {
		t.Fatal(err)
	}
	if err := old.handle(classStickTable, stktAck, appendAck(nil, 1, 7)[3:], time.Now()); err != nil {
		t.Fatal(err)
	}
	if err := old.handle(classControl, ctrlResyncRequest, nil, time.Now()); err != nil {
		t.Fatal(err)
	}
	if v := value(tb, k, stick.HTTPReqCnt); v != 3 {
		t.Errorf("http_req_cnt %d after the replaced session's update, want 3 (the new session's)", v)
	}
	after := peerStatus(m, "b")
	if after.UpdatesReceived != before.UpdatesReceived {
		t.Errorf("updates received went from %d to %d", before.UpdatesReceived, after.UpdatesReceived)
	}
	m.mu.Lock()
	p := m.peer("b")
	pt := p.tables[0]
	update, flags, lastGet := pt.update, p.flags, pt.lastGet.Load()
	m.mu.Unlock()
	if update != 0 || flags&peerTeachProcess != 0 || lastGet != 3 {
		t.Errorf("the new session's cursors: update %d, teaching %v, last get %d; want 0, false, 3", update, flags&peerTeachProcess != 0, lastGet)
	}
}
