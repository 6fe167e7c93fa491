package check

import (
	"net"
	"regexp"
	"testing"
	"time"

	"github.com/fulcrum-proxy/fulcrum/conf"
	"github.com/fulcrum-proxy/fulcrum/proxy"
	"github.com/fulcrum-proxy/fulcrum/proxy/syslog"
)

// TestStateChangesToSyslog: a server's transitions and its backend's
// loss of every server reach the [[global.log]] targets as HAProxy's
// send_log sends them: DOWN at alert, the backend at emerg, UP at
// notice (facility local0: <129>, <128>, <133>), the same text as the
// process log's lines.
func TestStateChangesToSyslog(t *testing.T) {
	s1 := newSwitchable(t, "s1")
	cfg := testConfig(s1.addr)
	pc := logToUDP(t, cfg)
	h := newHarness(t, cfg)
	h.next()
	s1.stop()
	h.step(1, time.Second)
	h.step(1, 250*time.Millisecond)
	h.step(1, 250*time.Millisecond)
	h.expect("s1", checkRow{"DOWN", "L4CON", 0, 3, 1, proxy.OpDown})
	s1.start("s1")
	h.step(1, 2*time.Second)
	h.step(1, 250*time.Millisecond)

	want := []*regexp.Regexp{
		regexp.MustCompile(`^<129>\w{3} [ \d]\d \d\d:\d\d:\d\d fulcrum\[\d+\]: Server web/s1 is DOWN, reason: Layer4 connection problem, info: "Connection refused", check duration: \d+ms\. 0 active and 0 backup servers left\. 0 sessions active, 0 requeued, 0 remaining in queue\.\n$`),
		regexp.MustCompile(`^<128>\w{3} [ \d]\d \d\d:\d\d:\d\d fulcrum\[\d+\]: backend web has no server available!\n$`),
		regexp.MustCompile(`^<133>\w{3} [ \d]\d \d\d:\d\d:\d\d fulcrum\[\d+\]: Server web/s1 is UP, reason: Layer4 check passed, check duration: \d+ms\. 1 active and 0 backup servers online\. 0 sessions requeued, 0 total in queue\.\n$`),
	}
	expectDatagrams(t, pc, want)
}

// TestMaintToSyslog: a server without checks put into maintenance and
// back by the Runtime API (check.Of(s).SetAdmin) reaches the syslog
// targets too: going DOWN at alert, UP at notice.
func TestMaintToSyslog(t *testing.T) {
	cfg := testConfig("127.0.0.1:1", "127.0.0.1:2")
	for _, s := range cfg.Backends[0].Servers {
		s.Check = false
	}
	pc := logToUDP(t, cfg)
	h := newHarness(t, cfg)
	s2 := h.p.Backends[0].Servers()[1]
	Of(s2).SetAdmin(proxy.AdminMaint)
	Of(s2).SetAdmin(proxy.AdminReady)
	want := []*regexp.Regexp{
		regexp.MustCompile(`^<129>.* fulcrum\[\d+\]: Server web/s2 is going DOWN for maintenance\. 1 active and 0 backup servers left\. 0 sessions active, 0 requeued, 0 remaining in queue\.\n$`),
		regexp.MustCompile(`^<133>.* fulcrum\[\d+\]: Server web/s2 is UP/READY \(leaving forced maintenance\)\.\n$`),
	}
	expectDatagrams(t, pc, want)
}

// logToUDP adds a [[global.log]] target to cfg (rfc3164, local0, every
// level) on a UDP socket of its own, which it returns; it closes at the
// end of the test.
func logToUDP(t *testing.T, cfg *conf.Config) net.PacketConn {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close() })
	cfg.Global.Log = []conf.LogTarget{{Target: syslog.Target{Network: "udp", Address: pc.LocalAddr().String(),
		Format: "rfc3164", Facility: 16, MaxLevel: 7, MinLevel: 0, Len: 1024}}}
	return pc
}

// expectDatagrams reads one datagram per pattern of want from pc, each
// within 10 s, and checks it matches.
func expectDatagrams(t *testing.T, pc net.PacketConn, want []*regexp.Regexp) {
	t.Helper()
	buf := make([]byte, 2048)
	for i, re := range want {
		pc.SetReadDeadline(time.Now().Add(10 * time.Second))
		n, _, err := pc.ReadFrom(buf)
		if err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
		if !re.Match(buf[:n]) {
			t.Errorf("message %d: %q, want %s", i, buf[:n], re)
		}
	}
}

// TestDrainBackupCLILines: HAProxy 2.6's wording for the lines a
// fresh-user trial found missing or different (its transcripts beside
// fulcrum's): a server entering and leaving DRAIN is logged; a backup
// server's lines begin "Backup Server" and say "Running on backup." when
// only backups are left, UP lines included; a state forced from the
// Runtime API reads ", changed from CLI" (no "reason:"); a server that
// was DOWN and enters maintenance "was DOWN and now enters maintenance"
// (no outage counts).
func TestDrainBackupCLILines(t *testing.T) {
	cfg := testConfig("127.0.0.1:1", "127.0.0.1:2")
	for _, s := range cfg.Backends[0].Servers {
		s.Check = false
	}
	cfg.Backends[0].Servers[1].Backup = true
	pc := logToUDP(t, cfg)
	h := newHarness(t, cfg)
	s1, s2 := h.p.Backends[0].Servers()[0], h.p.Backends[0].Servers()[1]
	Of(s1).SetAdmin(proxy.AdminDrain)
	Of(s1).SetAdmin(proxy.AdminReady)
	Of(s2).SetHealth(HealthDown)
	Of(s2).SetHealth(HealthUp)
	Of(s1).SetHealth(HealthStopping)
	Of(s1).SetHealth(HealthDown)
	Of(s1).SetAdmin(proxy.AdminMaint)
	want := []*regexp.Regexp{
		regexp.MustCompile(`^<133>.* fulcrum\[\d+\]: Server web/s1 enters drain state\. 0 active and 1 backup servers online\. Running on backup\. 0 sessions requeued, 0 total in queue\.\n$`),
		regexp.MustCompile(`^<133>.* fulcrum\[\d+\]: Server web/s1 is UP \(leaving forced drain\)\.\n$`),
		regexp.MustCompile(`^<129>.* fulcrum\[\d+\]: Backup Server web/s2 is DOWN, changed from CLI\. 1 active and 0 backup servers left\. 0 sessions active, 0 requeued, 0 remaining in queue\.\n$`),
		regexp.MustCompile(`^<133>.* fulcrum\[\d+\]: Backup Server web/s2 is UP, changed from CLI\. 1 active and 1 backup servers online\. 0 sessions requeued, 0 total in queue\.\n$`),
		regexp.MustCompile(`^<133>.* fulcrum\[\d+\]: Server web/s1 is stopping, changed from CLI\. 0 active and 1 backup servers online\. Running on backup\. 0 sessions requeued, 0 total in queue\.\n$`),
		// (notice: it was stopping, "paused" for HAProxy: no alert)
		regexp.MustCompile(`^<133>.* fulcrum\[\d+\]: Server web/s1 is DOWN, changed from CLI\. 0 active and 1 backup servers left\. Running on backup\. 0 sessions active, 0 requeued, 0 remaining in queue\.\n$`),
		regexp.MustCompile(`^<133>.* fulcrum\[\d+\]: Server web/s1 was DOWN and now enters maintenance\.\n$`),
	}
	expectDatagrams(t, pc, want)
}

// TestMaintKeepsDownLastChange: a DOWN server entering maintenance keeps
// its last change (HAProxy 2.6's lastchg keeps counting: it stays DOWN);
// an UP one entering it changes state, and its last change moves.
func TestMaintKeepsDownLastChange(t *testing.T) {
	cfg := testConfig("127.0.0.1:1", "127.0.0.1:2")
	for _, s := range cfg.Backends[0].Servers {
		s.Check = false
	}
	h := newHarness(t, cfg)
	s1, s2 := h.p.Backends[0].Servers()[0], h.p.Backends[0].Servers()[1]
	Of(s1).SetHealth(HealthDown)
	down, up := s1.LastChange(), s2.LastChange()
	Of(s1).SetAdmin(proxy.AdminMaint)
	Of(s2).SetAdmin(proxy.AdminMaint)
	if got := s1.LastChange(); !got.Equal(down) {
		t.Errorf("DOWN server into MAINT: last change %v, want %v (unchanged)", got, down)
	}
	if got := s2.LastChange(); !got.After(up) {
		t.Errorf("UP server into MAINT: last change %v, want after %v", got, up)
	}
}

// TestDNSMaintOneLine: a checked server that DNS resolution puts into
// maintenance is logged once, by the backend, with its cause (HAProxy
// 2.6's one line); the checker, catching up with the state, adds none.
func TestDNSMaintOneLine(t *testing.T) {
	up := newSwitchable(t, "s2") // its checks pass: no line of their own
	cfg := testConfig("127.0.0.1:1", up.addr)
	cfg.Backends[0].Servers[0].Check = false // its line closes the test
	pc := logToUDP(t, cfg)
	h := newHarness(t, cfg)
	b := h.p.Backends[0]
	s1, s2 := b.Servers()[0], b.Servers()[1]
	h.next() // s2's first check, passed
	b.ApplyDNS([]proxy.DNSUpdate{{Server: s2, Maint: true, Weight: -1, Reason: "No IP for server "}})
	h.p.Snapshot() // the checker syncs with the new state
	Of(s1).SetAdmin(proxy.AdminMaint)
	want := []*regexp.Regexp{
		regexp.MustCompile(`^<129>.* fulcrum\[\d+\]: Server web/s2 is going DOWN for maintenance \(No IP for server \)\. 1 active and 0 backup servers left\. 0 sessions active, 0 requeued, 0 remaining in queue\.\n$`),
		regexp.MustCompile(`^<129>.* fulcrum\[\d+\]: Server web/s1 is going DOWN for maintenance\. 0 active and 0 backup servers left\. 0 sessions active, 0 requeued, 0 remaining in queue\.\n$`),
	}
	expectDatagrams(t, pc, want)
}
