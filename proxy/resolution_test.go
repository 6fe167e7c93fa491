package proxy

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"

	"github.com/fulcrum-proxy/fulcrum/conf"
	"github.com/rs/zerolog"
)

// dnsConfig is testConfig with its servers resolved at runtime (as a
// [[resolvers]] user's): they start without an address, in MAINT
// (resolution).
func dnsConfig(n int) *conf.Config {
	cfg := testConfig(conf.ModeHTTP, make([]string, n), nil)
	cfg.Resolvers = []*conf.Resolvers{{Name: "dns"}}
	for _, s := range cfg.Backends[0].Servers {
		s.Address, s.Resolvers, s.FQDN, s.Port = "app.test:80", "dns", "app.test", 80
	}
	return cfg
}

// TestApplyDNS: a server resolved at runtime starts in MAINT (resolution)
// without an address; ApplyDNS gives it one and brings it in, sets SRV
// weights, and takes it out again; an operator's MAINT stays through it.
func TestApplyDNS(t *testing.T) {
	p, err := New(dnsConfig(2), zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	b := p.Backends[0]
	s1, s2 := b.Servers()[0], b.Servers()[1]
	status := func(i int) string { return p.Snapshot().Backends[0].Servers[i].Status() }
	if s1.Addr() != "" || status(0) != "MAINT (resolution)" || b.usable.Load() != 0 {
		t.Fatalf("at start: addr %q, status %q, usable %d", s1.Addr(), status(0), b.usable.Load())
	}
	ap := netip.MustParseAddrPort("127.0.0.1:8080")
	info := DNSInfo{FQDN: "app.test", Port: 8080}
	moved := b.ApplyDNS([]DNSUpdate{{Server: s1, Addr: ap, Info: info, Weight: 7}, {Server: s2, Addr: ap, Info: info, Weight: -1}})
	if moved != 2 || s1.Addr() != "127.0.0.1:8080" || status(0) != "no check" || s1.UserWeight.Load() != 7 || s2.UserWeight.Load() != 1 {
		t.Fatalf("filled: moved %d, addr %q, status %q, weights %d %d", moved, s1.Addr(), status(0), s1.UserWeight.Load(), s2.UserWeight.Load())
	}
	if b.usable.Load() != 2 {
		t.Fatalf("usable %d, want 2", b.usable.Load())
	}
	b.SetAdmin(s2, AdminMaint)
	b.ApplyDNS([]DNSUpdate{{Server: s1, Info: info, Maint: true, Weight: -1, Reason: "DNS NX status"}, {Server: s2, Addr: ap, Info: info, Weight: -1}})
	if status(0) != "MAINT (resolution)" || status(1) != "MAINT" || b.usable.Load() != 0 {
		t.Fatalf("emptied: statuses %q %q, usable %d", status(0), status(1), b.usable.Load())
	}
	// Shown without an address, it keeps the last to dial: a request
	// picked just before connects there.
	if ss := p.Snapshot().Backends[0].Servers[0]; ss.Addr != "" || s1.Addr() != "127.0.0.1:8080" {
		t.Fatalf("emptied: shown %q, dials %q", ss.Addr, s1.Addr())
	}
	if ss := p.Snapshot().Backends[0].Servers[0]; ss.OperatorAdmin != AdminReady || ss.Admin != AdminMaint || !ss.Resolution.Stopped {
		t.Errorf("snapshot: operator %v, admin %v, %+v", ss.OperatorAdmin, ss.Admin, ss.Resolution)
	}
}

// TestApplyDNSEvents: what DNS changes send to the [[global.log]] targets,
// HAProxy 2.6's lines and levels: an address given, a server that
// resolves again, one going DOWN for maintenance with its cause (alert),
// one that was DOWN already (notice; its last change kept), and nothing
// for a server an operator put in maintenance.
func TestApplyDNSEvents(t *testing.T) {
	p, err := New(dnsConfig(4), zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	b := p.Backends[0]
	var got []string
	b.event = func(level int, msg string) { got = append(got, fmt.Sprintf("%d %s", level, msg)) }
	sv := b.Servers()
	ap := netip.MustParseAddrPort("127.0.0.1:8080")
	info := DNSInfo{FQDN: "app.test", Port: 8080}
	var fill []DNSUpdate
	for _, s := range sv {
		fill = append(fill, DNSUpdate{Server: s, Addr: ap, Info: info, Weight: -1, Reason: "DNS cache"})
	}
	b.ApplyDNS(fill)
	want := []string{
		"5 web/s1 changed its IP from (none) to 127.0.0.1 by DNS cache.",
		"5 web/s2 changed its IP from (none) to 127.0.0.1 by DNS cache.",
		"5 web/s3 changed its IP from (none) to 127.0.0.1 by DNS cache.",
		"5 web/s4 changed its IP from (none) to 127.0.0.1 by DNS cache.",
		"5 Server web/s1 ('app.test') is UP/READY (resolves again).",
		"5 Server web/s2 ('app.test') is UP/READY (resolves again).",
		"5 Server web/s3 ('app.test') is UP/READY (resolves again).",
		"5 Server web/s4 ('app.test') is UP/READY (resolves again).",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("filled:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	got = nil
	b.SetOp(sv[1], OpDown)
	b.SetAdmin(sv[2], AdminMaint)
	changed := sv[1].lastChange.Load()
	gone := func(s *Server) DNSUpdate {
		return DNSUpdate{Server: s, Info: info, Maint: true, Weight: -1, Reason: "No IP for server "}
	}
	b.ApplyDNS([]DNSUpdate{gone(sv[0]), gone(sv[1]), gone(sv[2])})
	want = []string{
		"1 Server web/s1 is going DOWN for maintenance (No IP for server ). 1 active and 0 backup servers left. 0 sessions active, 0 requeued, 0 remaining in queue.",
		"5 Server web/s2 was DOWN and now enters maintenance (No IP for server ).",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("emptied:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if sv[1].lastChange.Load() != changed {
		t.Errorf("s2, DOWN already: its last change moved")
	}
}
