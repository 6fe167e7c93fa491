package acl

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/fulcrum-proxy/fulcrum/proxy/stick"
)

// TestTCPRuleParse covers tcp_request connection rules, track-sc above
// all: what compiles (slot, key, table) and the message of what does not.
func TestTCPRuleParse(t *testing.T) {
	const l4only = "which tcp_request connection rules cannot see (only src, src_port, dst, dst_port)"
	tests := []struct {
		text string
		// for a rule that compiles
		act   Action
		slot  int
		key   string
		table string
		// else the whole error message
		err string
	}{
		{text: "connection accept", act: ActAccept},
		{text: "connection reject if { src 10.0.0.0/8 }", act: ActReject},
		{text: "connection track-sc0 src", act: ActTrackSC, slot: 0, key: "src"},
		{text: "connection track-sc1 dst table conns", act: ActTrackSC, slot: 1, key: "dst", table: "conns"},
		{text: "connection track-sc2 src_port if { src 10.0.0.0/8 }", act: ActTrackSC, slot: 2, key: "src_port"},
		{text: "connection track-sc0 dst_port table t unless { sc0_conn_cur gt 3 }", act: ActTrackSC, key: "dst_port", table: "t"},
		{text: "connection reject if { sc0_conn_cur gt 10 } || { sc_conn_rate(0) ge 5 }", act: ActReject},

		{text: "connection track-sc0", err: "'track-sc0' expects a sample expression"},
		{text: "connection track-sc0 if { src 10.0.0.1 }", err: "'track-sc0' expects a sample expression"},
		{text: "connection track-sc0 hdr(host)", err: "'connection track-sc0': fetch 'hdr(host)' needs an HTTP request, " + l4only},
		{text: "connection track-sc1 path table t", err: "'connection track-sc1': fetch 'path' needs an HTTP request, " + l4only},
		{text: "connection track-sc2 req.cook(SID)", err: "'connection track-sc2': fetch 'req.cook(SID)' needs an HTTP request, " + l4only},
		{text: "connection track-sc0 nosuch", err: "unknown fetch method 'nosuch' in sample expression 'nosuch'"},
		{text: "connection track-sc0 src table", err: "'track-sc0': unexpected 'table' (expected 'table <name>', 'if' or 'unless')"},
		{text: "connection track-sc0 src foo bar", err: "'track-sc0': unexpected 'foo bar' (expected 'table <name>', 'if' or 'unless')"},
		{text: "connection track-sc0 src if { path_beg /x }", err: "condition uses HTTP fetches, " + l4only},
		{text: "connection track-sc3 src", err: "unknown tcp_request connection action 'track-sc3' (supported: accept, reject, sc-inc-gpc0(N), sc-inc-gpc1(N), sc-set-gpt0(N), track-sc0, track-sc1, track-sc2)"},
		{text: "connection accept src", err: "'connection accept' takes no argument, got 'src'"},
		{text: "connection reject table t", err: "'connection reject' takes no argument, got 'table'"},
		{text: "connection", err: "'connection' expects an action: accept, reject or track-sc0/1/2"},
		{text: "content track-sc0 src", err: "unsupported tcp_request stage 'content' (supported: connection)"},
	}
	for _, tt := range tests {
		t.Run(tt.text, func(t *testing.T) {
			r, err := NewRegistry("t").NewScope().TCPRule(tt.text, 1)
			if tt.err != "" {
				if err == nil || err.Error() != tt.err {
					t.Fatalf("error %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			if r.Action != tt.act {
				t.Fatalf("action %d, want %d", r.Action, tt.act)
			}
			if tt.act != ActTrackSC {
				return
			}
			if r.TrackSlot() != tt.slot || r.TrackKey().String() != tt.key || r.TrackTable() != tt.table {
				t.Errorf("slot %d key %q table %q, want %d %q %q", r.TrackSlot(), r.TrackKey(), r.TrackTable(), tt.slot, tt.key, tt.table)
			}
		})
	}
}

// connTracker is a Tracker counting conn_cur per tracked key, as the
// engine's connection tracker does.
type connTracker struct {
	cur   map[netip.Addr]int64
	slots [3]*netip.Addr
}

func (c *connTracker) Track(rule *Rule, key Value) {
	if c.slots[rule.TrackSlot()] != nil {
		return
	}
	a := key.IP
	c.cur[a]++
	c.slots[rule.TrackSlot()] = &a
}

func (c *connTracker) Tracked(slot int, d stick.DataType) (int64, bool) {
	if c.slots[slot] == nil || d != stick.ConnCur {
		return 0, false
	}
	return c.cur[*c.slots[slot]], true
}

func (c *connTracker) Inc(int, ...stick.DataType) (int64, bool)      { return 0, false }
func (c *connTracker) Swap(int, stick.DataType, int64) (int64, bool) { return 0, false }
func (c *connTracker) Src(string, netip.Addr, SrcOp, stick.DataType, stick.DataType) (int64, bool) {
	return 0, false
}

// TestAcceptConnectionTrack checks the order of evaluation: track-sc goes
// on to the next rule, whose condition sees the tracked counters; accept
// and reject stop.
func TestAcceptConnectionTrack(t *testing.T) {
	sc := NewRegistry("t").NewScope()
	rs := &Rules{}
	for _, text := range []string{
		"connection accept if { src 10.0.0.9 }", // before tracking: never counted
		"connection track-sc0 src",
		"connection reject if { sc0_conn_cur gt 2 }",
		"connection accept if { src 10.0.0.1 }",
		"connection track-sc1 dst", // after an accept that matched: not reached for 10.0.0.1
	} {
		r, err := sc.TCPRule(text, 1)
		if err != nil {
			t.Fatalf("%q: %v", text, err)
		}
		rs.TCPConnection = append(rs.TCPConnection, r)
	}
	tr := &connTracker{cur: map[netip.Addr]int64{}}
	conn := func(src string) (bool, *connTracker) {
		c := &connTracker{cur: tr.cur}
		r := &Request{Src: netip.MustParseAddrPort(src + ":1000"), Dst: netip.MustParseAddrPort("127.0.0.1:80"), Tracker: c}
		return rs.AcceptConnection(r), c
	}
	a, b := netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("10.0.0.2")
	for i, want := range []bool{true, true, false, false} {
		ok, c := conn("10.0.0.1")
		if ok != want {
			t.Fatalf("connection %d from 10.0.0.1: accept %v, want %v", i+1, ok, want)
		}
		if c.slots[1] != nil {
			t.Fatalf("connection %d: track-sc1 after a matching accept ran", i+1)
		}
	}
	if tr.cur[a] != 4 {
		t.Fatalf("conn_cur of 10.0.0.1: %d, want 4 (the tracker counts every tracked connection)", tr.cur[a])
	}
	ok, c := conn("10.0.0.2")
	if !ok || c.slots[1] == nil || *c.slots[1] != netip.MustParseAddr("127.0.0.1") || tr.cur[b] != 1 {
		t.Fatalf("10.0.0.2: accept %v, sc1 %v, conn_cur %d; want true, 127.0.0.1, 1", ok, c.slots[1], tr.cur[b])
	}
	for range 3 {
		if ok, c := conn("10.0.0.9"); !ok || c.slots[0] != nil {
			t.Fatalf("10.0.0.9: accept %v, tracked %v; want accepted before any tracking", ok, c.slots[0])
		}
	}
	// No Tracker (no stick tables): track-sc does nothing, sc0_* find nothing.
	r := &Request{Src: netip.MustParseAddrPort("10.0.0.1:1"), Dst: netip.MustParseAddrPort("127.0.0.1:80")}
	if !rs.AcceptConnection(r) {
		t.Fatal("without a tracker: rejected")
	}
}

// TestGPCActionParse: the general purpose counters' actions as HAProxy
// 2.6 writes them, and their errors.
func TestGPCActionParse(t *testing.T) {
	sc := NewRegistry("t").NewScope()
	for _, tc := range []struct {
		kind, text, err string
		act             Action
		slot            int
	}{
		{"http", "sc-inc-gpc0(0)", "", ActIncGPC, 0},
		{"http", "sc-inc-gpc1(2) if { path /x }", "", ActIncGPC, 2},
		{"http", "sc-set-gpt0(1) 42", "", ActSetGPT, 1},
		{"res", "sc-inc-gpc0(1) if { status 404 }", "", ActIncGPC, 1},
		{"tcp", "connection sc-inc-gpc0(0) if { src 10.0.0.0/8 }", "", ActIncGPC, 0},
		{"http", "sc-inc-gpc0(3)", "'sc-inc-gpc0': the counter number must be 0, 1 or 2, got '3'", 0, 0},
		{"http", "sc-inc-gpc0(0) 1", "'sc-inc-gpc0(0)' takes no argument, got '1'", 0, 0},
		{"http", "sc-set-gpt0(0)", "'sc-set-gpt0(0)' expects an integer", 0, 0},
		{"http", "sc-set-gpt0(0) -1", "'sc-set-gpt0(0)' expects an integer from 0 to 4294967295, got '-1' (an expression is not supported)", 0, 0},
		{"tcp", "connection sc-inc-gpc0(0) if { path /x }", "condition uses HTTP fetches", 0, 0},
	} {
		var r *Rule
		var err error
		switch tc.kind {
		case "http":
			r, err = sc.HTTPRule(tc.text, 1)
		case "res":
			r, err = sc.HTTPResponseRule(tc.text, 1)
		default:
			r, err = sc.TCPRule(tc.text, 1)
		}
		switch {
		case tc.err != "":
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: error %v, want %q", tc.text, err, tc.err)
			}
		case err != nil:
			t.Errorf("%q: %v", tc.text, err)
		case r.Action != tc.act || r.slot != tc.slot:
			t.Errorf("%q: action %d slot %d, want %d %d", tc.text, r.Action, r.slot, tc.act, tc.slot)
		}
	}
}
