package resolve

import (
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/fulcrum-proxy/fulcrum/conf"
	"github.com/fulcrum-proxy/fulcrum/proxy"
	"github.com/miekg/dns"
	"github.com/rs/zerolog"
)

// fuzzConf is an SRV template, an A template and a host name server that
// the fuzzed answers fill.
const fuzzConf = `
[[resolvers]]
name = "dns"
nameserver = ["127.0.0.1:1"]
hold_obsolete = "1s"

[[backend]]
name = "srv"
[[backend.server_template]]
prefix = "s"
count = 8
fqdn = "_http._tcp.svc.test"
resolvers = "dns"
init_addr = "none"

[[backend]]
name = "a"
[[backend.server_template]]
prefix = "w"
count = 4
fqdn = "web.test"
port = 80
resolvers = "dns"
init_addr = "none"
[[backend.server]]
name = "h"
address = "web.test:81"
resolvers = "dns"
init_addr = "none"
`

// FuzzAnswer feeds untrusted bytes, as a name server's answer, to the
// parser and the record to server mapping, for the SRV name and the host
// name in turn, between two fixed answers, and checks the invariants the
// servers rely on: no panic; a server has an address exactly when it is
// not in maintenance by resolution, with a port; weights stay 0..256; no
// two slots hold the same SRV record; no two servers of the A template
// share an address (prevent-dup-ip).
func FuzzAnswer(f *testing.F) {
	for _, seed := range fuzzSeeds(f) {
		f.Add(seed)
	}
	cfg, err := conf.Parse("fuzz.toml", []byte(fuzzConf))
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := proxy.New(cfg, zerolog.Nop()) // a proxy does not change its configuration
		if err != nil {
			t.Fatal(err)
		}
		m := New(p, zerolog.Nop())
		if err := m.Init(nil, nil); err != nil {
			t.Fatal(err)
		}
		defer m.Stop()
		srv := res(t, m, "_http._tcp.svc.test", dns.TypeSRV)
		web := res(t, m, "web.test", dns.TypeAAAA)
		t0 := time.Now()
		fixedSRV := srvAnswer("a.test:80:10:127.0.0.1", "b.test:81:300")
		fixedA := addrAnswer("127.0.0.1", "::1")
		for i, step := range []struct {
			r     *resolution
			fixed outcome
			qtype uint16
			name  string
		}{{srv, fixedSRV, dns.TypeSRV, "_http._tcp.svc.test"}, {web, fixedA, dns.TypeAAAA, "web.test"}, {web, fixedA, dns.TypeA, "web.test"}} {
			at := t0.Add(time.Duration(i) * 10 * time.Second)
			apply(step.r, step.fixed, at)
			a, k := readAnswer(data, step.name, step.qtype)
			o := outcome{status: k.status(), answer: a}
			apply(step.r, o, at.Add(2*time.Second))
			checkInvariants(t, p)
			apply(step.r, step.fixed, at.Add(4*time.Second))
			checkInvariants(t, p)
		}
	})
}

// checkInvariants checks FuzzAnswer's invariants on every server of p.
func checkInvariants(t *testing.T, p *proxy.Proxy) {
	t.Helper()
	for _, b := range p.Backends {
		records := map[string]string{}
		addrs := map[string]string{}
		for _, s := range b.Servers() {
			addr, info := s.Addr(), s.DNS()
			if info.NoAddr != s.ResolutionMaint() {
				t.Fatalf("%s/%s: no address %v with resolution maint %v", b.Name, s.Name, info.NoAddr, s.ResolutionMaint())
			}
			if info.NoAddr {
				addr = ""
			}
			if w := s.UserWeight.Load(); w < 0 || w > 256 {
				t.Fatalf("%s/%s: weight %d", b.Name, s.Name, w)
			}
			if addr == "" {
				continue
			}
			ap, err := netip.ParseAddrPort(addr)
			if err != nil || ap.Port() == 0 || !ap.Addr().IsValid() {
				t.Fatalf("%s/%s: bad address %q", b.Name, s.Name, addr)
			}
			if info.SRV != "" {
				k := fmt.Sprintf("%s:%d", info.FQDN, info.Port)
				if other, dup := records[k]; dup {
					t.Fatalf("%s: %s and %s both hold %s", b.Name, other, s.Name, k)
				}
				records[k] = s.Name
			}
			if s.Conf.Template == "w" {
				if other, dup := addrs[addr]; dup {
					t.Fatalf("%s: %s and %s share %s", b.Name, other, s.Name, addr)
				}
				addrs[addr] = s.Name
			}
		}
	}
}

// fuzzSeeds are well-formed answers of each kind.
func fuzzSeeds(t testing.TB) [][]byte {
	var srvs []string
	for i := range 12 {
		srvs = append(srvs, fmt.Sprintf("_http._tcp.svc.test. 1 IN SRV 0 %d %d t%d.test.", i*5000, 8000+i%5, i%7))
	}
	return [][]byte{
		msg(t, "_http._tcp.svc.test", dns.TypeSRV, srvs, []string{"t1.test. 1 IN A 10.0.0.1", "t2.test. 1 IN AAAA ::2"}, nil),
		msg(t, "web.test", dns.TypeA, []string{"web.test. 1 IN A 127.0.0.1", "web.test. 1 IN A 127.0.0.2", "web.test. 1 IN AAAA ::1"}, nil, nil),
		msg(t, "web.test", dns.TypeAAAA, []string{"web.test. 1 IN CNAME x.test.", "x.test. 1 IN AAAA ::5"}, nil, nil),
		msg(t, "web.test", dns.TypeA, nil, nil, func(m *dns.Msg) { m.Rcode = dns.RcodeNameError }),
		msg(t, "web.test", dns.TypeA, nil, nil, func(m *dns.Msg) { m.Truncated = true }),
		{0x12, 0x34},
	}
}
