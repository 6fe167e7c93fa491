package peers

import (
	"io"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/fulcrum-proxy/fulcrum/proxy/stick"
	"github.com/rs/zerolog"
)

// waitFor polls cond until it holds or d passes.
func waitFor(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// listen opens a listener on a free loopback port.
func listen(t testing.TB) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return ln
}

// testLog is a logger that writes nothing unless -v.
func testLog(t testing.TB) zerolog.Logger {
	if testing.Verbose() {
		return zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.DebugLevel)
	}
	return zerolog.New(io.Discard)
}

// ipTable returns an ip table named name storing store.
func ipTable(t testing.TB, name string, origins int, store ...string) *stick.Table {
	t.Helper()
	s, err := stick.ParseStore(store)
	if err != nil {
		t.Fatal(err)
	}
	return stick.New(stick.Config{Name: name, Type: stick.KeyIP, Size: 100000, Expire: time.Minute, Store: s, Origins: origins})
}

// cluster is several meshes of one section on loopback, members "a",
// "b", "c"... with one listener each.
type cluster struct {
	lns    []net.Listener
	peers  []PeerConfig
	meshes []*Mesh
}

// newCluster opens n listeners and names the members.
func newCluster(t testing.TB, n int) *cluster {
	c := &cluster{}
	for i := range n {
		ln := listen(t)
		c.lns = append(c.lns, ln)
		c.peers = append(c.peers, PeerConfig{Name: string(rune('a' + i)), Addr: ln.Addr().String()})
	}
	return c
}

// start starts member i with tables, and stops it at the test's end.
func (c *cluster) start(t testing.TB, i int, tables ...TableConfig) *Mesh {
	t.Helper()
	m, err := New(Config{Name: "mesh", Local: c.peers[i].Name, Peers: c.peers, Tables: tables}, testLog(t))
	if err != nil {
		t.Fatal(err)
	}
	ln := c.lns[i]
	if ln == nil { // restarted
		ln, err = net.Listen("tcp", c.peers[i].Addr)
		if err != nil {
			t.Fatal(err)
		}
	}
	c.lns[i] = nil
	m.StartListener(ln)
	t.Cleanup(m.Stop)
	for len(c.meshes) <= i {
		c.meshes = append(c.meshes, nil)
	}
	c.meshes[i] = m
	return m
}

// value returns data d of key k in tb, or -1 when there is no entry.
func value(tb *stick.Table, k stick.Key, d stick.DataType) int64 {
	es := tb.Entries(nil, &k)
	if len(es) == 0 {
		return -1
	}
	v, _ := tb.Value(es[0], d)
	return v
}

// settled reports whether every other member of m has an established
// session with no lesson under way either way.
func settled(m *Mesh) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, p := range m.peers {
		if p.local {
			continue
		}
		if p.sess == nil || !p.sess.established || p.flags&(peerTeachProcess|peerLearnAssign) != 0 || p.confirm != 0 {
			return false
		}
	}
	return true
}

// waitSettled waits until every mesh of c is settled.
func (c *cluster) waitSettled(t testing.TB) {
	t.Helper()
	waitFor(t, 10*time.Second, "the sessions to settle", func() bool {
		for _, m := range c.meshes {
			if m != nil && !settled(m) {
				return false
			}
		}
		return true
	})
}

// waitCaughtUp waits until every change of m's tables has been pushed to
// every peer (or to those named in only) and acknowledged by it, with m's sync loop having drained
// twice since without anything new: a change made elsewhere after it
// cannot be overwritten by one of m's still on its way (last writer
// wins, as in HAProxy).
func waitCaughtUp(t testing.TB, m *Mesh, only ...string) {
	t.Helper()
	state := func() (calls uint64, cur []uint64, ok bool) {
		m.mu.Lock()
		defer m.mu.Unlock()
		ok = true
		for _, p := range m.peers {
			if p.local || len(only) > 0 && !slices.Contains(only, p.name) {
				continue
			}
			for _, pt := range p.tables {
				c := pt.tab.current()
				cur = append(cur, c)
				if pt.lastPushed != c || pt.update != c {
					ok = false
				}
			}
		}
		return m.taskCalls, cur, ok
	}
	var since uint64
	var seen []uint64
	waitFor(t, 10*time.Second, m.localName+"'s changes acknowledged", func() bool {
		calls, cur, ok := state()
		switch {
		case !ok:
			seen = nil
		case seen == nil || !slices.Equal(seen, cur):
			since, seen = calls, cur
		case calls >= since+2:
			return true
		}
		return false
	})
}
