package proxy

import (
	"net/netip"
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
