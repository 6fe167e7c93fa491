package peers

import (
	"net/netip"
	"testing"
	"time"

	"github.com/fulcrum-proxy/fulcrum/proxy/stick"
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
	waitFor(t, 5*time.Second, "the entry on b", func() bool { return value(tb, k, stick.HTTPReqCnt) == 1 })
	if v := value(tb, k, stick.ServerID); v != 2 {
		t.Errorf("server_id on b: %d, want 2", v)
	}
	if v := value(tb, k, stick.ConnCur); v != 0 {
		t.Errorf("conn_cur on b: %d, want 0 (never learned)", v)
	}
	// And back.
	e = tb.Get(k)
	tb.Update(e, stick.HTTPReqCnt)
	tb.Release(e)
	defer func() {
		if t.Failed() {
			dumpStatus(t, c)
		}
	}()
	waitFor(t, 5*time.Second, "the change on a", func() bool { return value(ta, k, stick.HTTPReqCnt) == 2 })
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
