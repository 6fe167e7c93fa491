package stats

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/fulcrum-proxy/fulcrum/proxy"
	"github.com/fulcrum-proxy/fulcrum/proxy/peers"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// testPeers is a fixed state of one section: the local peer "lb1", "lb2"
// connected, "hap<x>" (a name to escape) never reached.
func testPeers() []peers.Status {
	now := time.Unix(1_700_000_000, 0)
	return []peers.Status{{Now: now, Name: "mesh", Flags: 0x3, Peers: []peers.PeerStatus{
		{Name: "hap<x>", Addr: "10.0.0.3:10000", Status: "CONN", NewConn: 4},
		{Name: "lb2", Addr: "10.0.0.2:10000", Status: "ESTA", Active: true, Connected: true,
			LastHdshk: now.Add(-90 * time.Second), LastMessage: now.Add(-1500 * time.Millisecond),
			UpdatesSent: 1200, UpdatesReceived: 800, BytesSent: 14000, BytesReceived: 9000,
			Lag: 12 * time.Millisecond, NewConn: 1, ProtoErr: 1},
		{Name: "lb1", Addr: "10.0.0.1:10000", Local: true, Status: "NONE"},
	}}}
}

func TestPeersMetrics(t *testing.T) {
	c := NewPeersCollector(testPeers)
	for _, tc := range []struct{ metric, want string }{
		{"fulcrum_peer_connected", `
# HELP fulcrum_peer_connected 1 when the session with the peer is established, else 0.
# TYPE fulcrum_peer_connected gauge
fulcrum_peer_connected{peer="hap<x>",section="mesh"} 0
fulcrum_peer_connected{peer="lb2",section="mesh"} 1
`},
		{"fulcrum_peer_last_heartbeat_seconds", `
# HELP fulcrum_peer_last_heartbeat_seconds Seconds since the peer's last message (any message is a sign of life, as in HAProxy); absent before the first.
# TYPE fulcrum_peer_last_heartbeat_seconds gauge
fulcrum_peer_last_heartbeat_seconds{peer="lb2",section="mesh"} 1.5
`},
		{"fulcrum_peer_updates_sent_total", `
# HELP fulcrum_peer_updates_sent_total Stick-table updates sent to the peer, resync lessons included.
# TYPE fulcrum_peer_updates_sent_total counter
fulcrum_peer_updates_sent_total{peer="hap<x>",section="mesh"} 0
fulcrum_peer_updates_sent_total{peer="lb2",section="mesh"} 1200
`},
		{"fulcrum_peer_updates_received_total", `
# HELP fulcrum_peer_updates_received_total Stick-table updates received from the peer.
# TYPE fulcrum_peer_updates_received_total counter
fulcrum_peer_updates_received_total{peer="hap<x>",section="mesh"} 0
fulcrum_peer_updates_received_total{peer="lb2",section="mesh"} 800
`},
		{"fulcrum_peer_replication_lag_seconds", `
# HELP fulcrum_peer_replication_lag_seconds Age of the oldest local change the peer has not acknowledged, 0 when none.
# TYPE fulcrum_peer_replication_lag_seconds gauge
fulcrum_peer_replication_lag_seconds{peer="hap<x>",section="mesh"} 0
fulcrum_peer_replication_lag_seconds{peer="lb2",section="mesh"} 0.012
`},
	} {
		t.Run(tc.metric, func(t *testing.T) {
			if err := testutil.CollectAndCompare(c, strings.NewReader(tc.want), tc.metric); err != nil {
				t.Error(err)
			}
		})
	}
	if n := testutil.CollectAndCount(NewPeersCollector(nil)); n != 0 {
		t.Errorf("no sections: %d series", n)
	}
}

// TestPagePeers checks the page's peers table: one row per member, in
// configuration order, names escaped.
func TestPagePeers(t *testing.T) {
	snap := testSnapshot()
	pg := newPage(func() *proxy.Snapshot { return snap }, nil, PageConfig{URI: "/stats", Peers: testPeers})
	var buf bytes.Buffer
	if err := pg.renderHTML(&buf, snap, AllRows(), pageOptions{}, false); err != nil {
		t.Fatal(err)
	}
	html := buf.String()
	for _, want := range []string{
		`<caption>peers mesh (resync done)</caption>`,
		`<tr class="nocheck"><td class="name">lb1</td><td>10.0.0.1:10000</td><td>local</td>`,
		`<tr class="up"><td class="name">lb2</td><td>10.0.0.2:10000</td><td>ESTA</td><td>1m30s</td><td>1.5s</td><td>1200</td><td>800</td><td>12ms</td><td>1</td><td>1</td></tr>`,
		`<tr class="down"><td class="name">hap&lt;x&gt;</td><td>10.0.0.3:10000</td><td>CONN</td><td>-</td><td>-</td><td>0</td><td>0</td><td>0s</td><td>0</td><td>4</td></tr>`,
	} {
		if !strings.Contains(html, want) {
			t.Errorf("page lacks %s", want)
		}
	}
	if strings.Index(html, ">lb1<") > strings.Index(html, ">lb2<") {
		t.Error("members not in configuration order")
	}
}
