package resolve

import (
	"context"
	"net/netip"
	"testing"
	"time"

	"github.com/fulcrum-proxy/fulcrum/proxy"
	"github.com/miekg/dns"
	"github.com/rs/zerolog"
)

// slotsConf is the layout of testdata/haproxy/timeline.txt's capture:
// an SRV template of 4 slots, an A template of 3 and two host names, with
// hold obsolete 2s and the error holds 3s.
const slotsConf = `
[[resolvers]]
name = "dns"
nameserver = ["127.0.0.1:15353"]
hold_obsolete = "2s"
hold_nx = "3s"
hold_timeout = "3s"
hold_refused = "3s"
hold_other = "3s"

[[backend]]
name = "be_srv"
[[backend.server_template]]
prefix = "srv"
count = 4
fqdn = "_http._tcp.svc.test"
resolvers = "dns"
init_addr = "none"

[[backend]]
name = "be_a"
[[backend.server_template]]
prefix = "web"
count = 3
fqdn = "web.test"
port = 18081
resolvers = "dns"
init_addr = "none"
resolve_prefer = "ipv4"

[[backend]]
name = "be_host"
[[backend.server]]
name = "h1"
address = "a1.svc.test:18081"
resolvers = "dns"
init_addr = "none"
[[backend.server]]
name = "plain"
address = "127.0.0.1:18081"
`

// newSlots builds the slotsConf proxy and its manager, initialised, not
// started: the tests apply outcomes by hand.
func newSlots(t *testing.T, extra string) (*proxy.Proxy, *Manager) {
	t.Helper()
	p := loadProxy(t, slotsConf+extra)
	m := New(p, zerolog.Nop())
	if err := m.Init(nil, nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Stop)
	return p, m
}

// TestSRVSlots follows the SRV part of HAProxy's timeline capture
// (testdata/haproxy/timeline.txt): 3 records fill 3 of 4 slots with
// HAProxy's weight mapping; a removed record keeps its slot for hold
// obsolete, then the slot is emptied (MAINT (resolution), no address,
// no name, weight kept); new records fill the free slots.
func TestSRVSlots(t *testing.T) {
	p, m := newSlots(t, "")
	r := res(t, m, "_http._tcp.svc.test", dns.TypeSRV)
	t0 := time.Now()
	steps := []struct {
		name string
		at   time.Duration
		o    outcome
		want string
	}{
		{"start: every slot waits", 0, outcome{status: statusNone}, `
srv1 - MAINT w1 -
srv2 - MAINT w1 -
srv3 - MAINT w1 -
srv4 - MAINT w1 -`},
		{"three records fill three slots", 0, srvAnswer("a3.svc.test:18083:60000:127.0.0.3", "a2.svc.test:18082:300:127.0.0.2", "a1.svc.test:18081:10:127.0.0.1"), `
srv1 127.0.0.3:18083 UP w235 a3.svc.test
srv2 127.0.0.2:18082 UP w2 a2.svc.test
srv3 127.0.0.1:18081 UP w1 a1.svc.test
srv4 - MAINT w1 -`},
		{"a3 removed: kept during hold obsolete", time.Second, srvAnswer("a2.svc.test:18082:300:127.0.0.2", "a1.svc.test:18081:10:127.0.0.1"), `
srv1 127.0.0.3:18083 UP w235 a3.svc.test
srv2 127.0.0.2:18082 UP w2 a2.svc.test
srv3 127.0.0.1:18081 UP w1 a1.svc.test
srv4 - MAINT w1 -`},
		{"after hold obsolete: slot emptied, weight kept", 2500 * time.Millisecond, srvAnswer("a2.svc.test:18082:300:127.0.0.2", "a1.svc.test:18081:10:127.0.0.1"), `
srv1 - MAINT w235 -
srv2 127.0.0.2:18082 UP w2 a2.svc.test
srv3 127.0.0.1:18081 UP w1 a1.svc.test
srv4 - MAINT w1 -`},
		{"a4 and a5 fill the free slots", 3 * time.Second, srvAnswer("a2.svc.test:18082:300:127.0.0.2", "a1.svc.test:18081:10:127.0.0.1", "a4.svc.test:18084:1:127.0.0.4", "a5.svc.test:18085:256:127.0.0.5"), `
srv1 127.0.0.4:18084 UP w1 a4.svc.test
srv2 127.0.0.2:18082 UP w2 a2.svc.test
srv3 127.0.0.1:18081 UP w1 a1.svc.test
srv4 127.0.0.5:18085 UP w1 a5.svc.test`},
		{"the additional record moves a1", 4 * time.Second, srvAnswer("a2.svc.test:18082:300:127.0.0.2", "a1.svc.test:18081:10:127.0.0.9", "a4.svc.test:18084:1:127.0.0.4", "a5.svc.test:18085:256:127.0.0.5"), `
srv1 127.0.0.4:18084 UP w1 a4.svc.test
srv2 127.0.0.2:18082 UP w2 a2.svc.test
srv3 127.0.0.9:18081 UP w1 a1.svc.test
srv4 127.0.0.5:18085 UP w1 a5.svc.test`},
		{"timeouts within hold timeout change nothing", 6 * time.Second, outcome{status: statusTimeout}, `
srv1 127.0.0.4:18084 UP w1 a4.svc.test
srv2 127.0.0.2:18082 UP w2 a2.svc.test
srv3 127.0.0.9:18081 UP w1 a1.svc.test
srv4 127.0.0.5:18085 UP w1 a5.svc.test`},
		{"past hold timeout every slot is emptied", 7100 * time.Millisecond, outcome{status: statusTimeout}, `
srv1 - MAINT w1 -
srv2 - MAINT w2 -
srv3 - MAINT w1 -
srv4 - MAINT w1 -`},
		{"records come back", 8 * time.Second, srvAnswer("a1.svc.test:18081:10:127.0.0.1"), `
srv1 127.0.0.1:18081 UP w1 a1.svc.test
srv2 - MAINT w2 -
srv3 - MAINT w1 -
srv4 - MAINT w1 -`},
	}
	for _, st := range steps {
		if st.o.status != statusNone {
			apply(r, st.o, t0.Add(st.at))
		}
		if got := "\n" + states(p, "be_srv"); got != st.want {
			t.Fatalf("%s: got%s\nwant%s", st.name, got, st.want)
		}
	}
	// The name flag (0x40) stays on every slot once named, as HAProxy's.
	for _, s := range p.Backend("be_srv").Servers() {
		if info := s.DNS(); !info.FQDNSet || info.SRV != "_http._tcp.svc.test" {
			t.Errorf("%s: got %+v, want FQDNSet and SRV set", s.Name, *info)
		}
	}
}

// TestSRVTargetResolved: a record without an additional address makes its
// slot resolve the target itself, and an answer for that target fills it;
// the target's resolution ends when the record goes.
func TestSRVTargetResolved(t *testing.T) {
	p, m := newSlots(t, "")
	r := res(t, m, "_http._tcp.svc.test", dns.TypeSRV)
	t0 := time.Now()
	apply(r, srvAnswer("a1.svc.test:18081:512"), t0)
	if got, want := state(proxyServer(t, p, "be_srv/srv1")), "- MAINT w2 a1.svc.test"; got != want {
		t.Fatalf("before the target resolves: got %q, want %q", got, want)
	}
	tr := res(t, m, "a1.svc.test", dns.TypeAAAA)
	apply(tr, addrAnswer("127.0.0.7"), t0)
	if got, want := state(proxyServer(t, p, "be_srv/srv1")), "127.0.0.7:18081 UP w2 a1.svc.test"; got != want {
		t.Fatalf("target resolved: got %q, want %q", got, want)
	}
	apply(r, srvAnswer("a2.svc.test:18082:1:127.0.0.2"), t0.Add(time.Hour))
	if got, want := state(proxyServer(t, p, "be_srv/srv1")), "127.0.0.2:18082 UP w1 a2.svc.test"; got != want {
		t.Fatalf("record replaced: got %q, want %q", got, want)
	}
	// be_host/h1 resolves a1.svc.test too (one resolution per name): it
	// is the only requester left.
	if len(tr.hosts) != 1 || tr.hosts[0].s != proxyServer(t, p, "be_host/h1") {
		t.Errorf("the target's resolution has %d requesters, want be_host/h1 alone", len(tr.hosts))
	}
}

// TestHostSlots follows the A part of the capture: two addresses for three
// slots of one name fill two (no duplicate), the third waits; a host name
// server keeps its address while its record is not obsolete, then moves.
func TestHostSlots(t *testing.T) {
	p, m := newSlots(t, "")
	web := res(t, m, "web.test", dns.TypeA)
	h1 := res(t, m, "a1.svc.test", dns.TypeAAAA)
	t0 := time.Now()
	apply(web, addrAnswer("127.0.0.1", "127.0.0.2"), t0)
	if got, want := "\n"+states(p, "be_a"), `
web1 127.0.0.1:18081 UP w1 web.test
web2 127.0.0.2:18081 UP w1 web.test
web3 - MAINT w1 web.test`; got != want {
		t.Fatalf("got%s\nwant%s", got, want)
	}
	apply(h1, addrAnswer("127.0.0.1"), t0)
	apply(h1, addrAnswer("127.0.0.9"), t0.Add(time.Second))
	if got, want := state(proxyServer(t, p, "be_host/h1")), "127.0.0.1:18081 UP w1 a1.svc.test"; got != want {
		t.Fatalf("within hold obsolete: got %q, want %q", got, want)
	}
	apply(h1, addrAnswer("127.0.0.9"), t0.Add(2500*time.Millisecond))
	if got, want := state(proxyServer(t, p, "be_host/h1")), "127.0.0.9:18081 UP w1 a1.svc.test"; got != want {
		t.Fatalf("after hold obsolete: got %q, want %q", got, want)
	}
	// NXDOMAIN within hold nx keeps it; past it, no address.
	apply(h1, outcome{status: statusNX}, t0.Add(5*time.Second))
	if got, want := state(proxyServer(t, p, "be_host/h1")), "127.0.0.9:18081 UP w1 a1.svc.test"; got != want {
		t.Fatalf("within hold nx: got %q, want %q", got, want)
	}
	apply(h1, outcome{status: statusNX}, t0.Add(5600*time.Millisecond))
	if got, want := state(proxyServer(t, p, "be_host/h1")), "- MAINT w1 a1.svc.test"; got != want {
		t.Fatalf("past hold nx: got %q, want %q", got, want)
	}
	if got := proxyServer(t, p, "be_host/plain"); got.DNS() != nil || got.Addr() != "127.0.0.1:18081" {
		t.Errorf("plain server touched: %q %+v", got.Addr(), got.DNS())
	}
}

// TestPickIP checks the address choice of HAProxy's
// resolv_get_ip_from_response: preferred family first, no address held by
// another server of the backend unless allow-dup-ip, the current address
// kept.
func TestPickIP(t *testing.T) {
	tests := []struct {
		name   string
		extra  string // server_template keys
		before []string
		answer []string
		want   []string // per slot
	}{
		{"family preferred", `resolve_prefer = "ipv6"`, nil, []string{"127.0.0.1", "::1", "127.0.0.2"},
			[]string{"[::1]:80", "127.0.0.1:80", "127.0.0.2:80"}},
		{"ipv4 preferred", `resolve_prefer = "ipv4"`, nil, []string{"::1", "127.0.0.1"},
			[]string{"127.0.0.1:80", "[::1]:80", "-"}},
		{"no duplicates", ``, nil, []string{"127.0.0.1"},
			[]string{"127.0.0.1:80", "-", "-"}},
		{"allow-dup-ip", `resolve_opts = "allow-dup-ip"`, nil, []string{"127.0.0.1"},
			[]string{"127.0.0.1:80", "127.0.0.1:80", "127.0.0.1:80"}},
		{"current kept when records rotate", `resolve_prefer = "ipv4"`, []string{"127.0.0.1", "127.0.0.2", "127.0.0.3"},
			[]string{"127.0.0.3", "127.0.0.1", "127.0.0.2"}, []string{"127.0.0.1:80", "127.0.0.2:80", "127.0.0.3:80"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := loadProxy(t, resolversConf("127.0.0.1:1")+`
[[backend]]
name = "b"
[[backend.server_template]]
prefix = "s"
count = 3
fqdn = "x.test"
port = 80
resolvers = "dns"
init_addr = "none"
`+tt.extra)
			m := New(p, zerolog.Nop())
			if err := m.Init(nil, nil); err != nil {
				t.Fatal(err)
			}
			defer m.Stop()
			sec := m.sections[0]
			var r *resolution
			for _, x := range sec.res {
				r = x
			}
			t0 := time.Now()
			if tt.before != nil {
				apply(r, addrAnswer(tt.before...), t0)
			}
			apply(r, addrAnswer(tt.answer...), t0.Add(time.Hour))
			for i, s := range p.Backend("b").Servers() {
				want := tt.want[i]
				got := s.Addr()
				if s.DNS().NoAddr {
					got = "-"
				}
				if got != want {
					t.Errorf("%s: got %s, want %s", s.Name, got, want)
				}
			}
		})
	}
}

// TestOperatorWins: an operator's MAINT stays when DNS fills the slot, and
// an operator's READY does not bring back a slot DNS has no address for.
func TestOperatorWins(t *testing.T) {
	p, m := newSlots(t, "")
	r := res(t, m, "_http._tcp.svc.test", dns.TypeSRV)
	b := p.Backend("be_srv")
	s1, s2 := proxyServer(t, p, "be_srv/srv1"), proxyServer(t, p, "be_srv/srv2")
	b.SetAdmin(s1, proxy.AdminMaint)
	b.SetAdmin(s2, proxy.AdminReady)
	apply(r, srvAnswer("a1.svc.test:18081:10:127.0.0.1"), time.Now())
	if s1.Admin() != proxy.AdminMaint || s1.ResolutionMaint() || s1.Addr() != "127.0.0.1:18081" {
		t.Errorf("srv1: admin %v, resolution maint %v, addr %q; want MAINT by the operator, filled", s1.Admin(), s1.ResolutionMaint(), s1.Addr())
	}
	if s2.Admin() != proxy.AdminMaint || !s2.ResolutionMaint() {
		t.Errorf("srv2: admin %v, resolution maint %v; want MAINT (resolution) despite READY", s2.Admin(), s2.ResolutionMaint())
	}
	if got := b.Servers()[2].Admin(); got != proxy.AdminMaint {
		t.Errorf("srv3: admin %v, want MAINT (resolution)", got)
	}
	snap := p.Snapshot()
	if got, want := snap.Backends[0].Servers[0].Status(), "MAINT"; got != want {
		t.Errorf("srv1 status: got %q, want %q", got, want)
	}
	if got, want := snap.Backends[0].Servers[1].Status(), "MAINT (resolution)"; got != want {
		t.Errorf("srv2 status: got %q, want %q", got, want)
	}
	if got := snap.Backends[0].ActiveUp; got != 0 {
		t.Errorf("active up while every slot was in maintenance: %d", got)
	}
	b.SetAdmin(s1, proxy.AdminReady)
	if s1.Admin() != proxy.AdminReady {
		t.Errorf("srv1 after READY: %v", s1.Admin())
	}
}

// TestInitAddr checks init_addr's methods in order at start: last (the
// state file), libc, none, an address; and the failure of a list without
// a method that works.
func TestInitAddr(t *testing.T) {
	tests := []struct {
		name     string
		initAddr string
		saved    string // srv_addr of the state file, "" = none
		libc     []string
		want     string
		err      bool
	}{
		{"last", "last,libc,none", "10.0.0.5", []string{"10.0.0.6"}, "10.0.0.5:80 UP", false},
		{"libc", "last,libc,none", "", []string{"10.0.0.6", "::6"}, "10.0.0.6:80 UP", false},
		{"none", "libc,none", "", nil, "- MAINT", false},
		{"an address", "libc,10.9.9.9", "", nil, "10.9.9.9:80 UP", false},
		{"default with resolvers", "", "", nil, "- MAINT", false},
		{"nothing works", "last,libc", "", nil, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := loadProxy(t, resolversConf("127.0.0.1:1")+`
[[backend]]
name = "b"
[[backend.server]]
name = "s1"
address = "x.test:80"
resolvers = "dns"
resolve_prefer = "ipv4"
init_addr = "`+tt.initAddr+`"
`)
			m := New(p, zerolog.Nop())
			defer m.Stop()
			m.lookup = func(_ context.Context, host string) ([]netip.Addr, error) {
				var out []netip.Addr
				for _, a := range tt.libc {
					out = append(out, netip.MustParseAddr(a))
				}
				return out, nil
			}
			var saved []proxy.SavedDNS
			if tt.saved != "" {
				saved = []proxy.SavedDNS{{Server: proxyServer(t, p, "b/s1"), Addr: netip.MustParseAddr(tt.saved), FQDN: "x.test", Port: 80}}
			}
			err := m.Init(saved, nil)
			if (err != nil) != tt.err {
				t.Fatalf("Init: %v, want error %v", err, tt.err)
			}
			if tt.err {
				return
			}
			s := proxyServer(t, p, "b/s1")
			got := s.Addr() + " UP"
			if s.DNS().NoAddr {
				got = "- MAINT"
			}
			if got != tt.want || s.ResolutionMaint() != s.DNS().NoAddr {
				t.Errorf("got %q (resolution maint %v), want %q", got, s.ResolutionMaint(), tt.want)
			}
		})
	}
}

// TestDeletedSlot: a template slot deleted at runtime (`del server`,
// MAINT first) lets go of its record, which fills a free slot of the
// template at the next answer; the deleted server is never changed again
// and the other slots keep theirs. Discovery and add/del server share one
// server list: resolution only fills the slots that are still there.
func TestDeletedSlot(t *testing.T) {
	p, m := newSlots(t, "")
	r := res(t, m, "_http._tcp.svc.test", dns.TypeSRV)
	t0 := time.Now()
	two := srvAnswer("a1.svc.test:18081:256:127.0.0.1", "a2.svc.test:18082:256:127.0.0.2")
	apply(r, two, t0)
	if got, want := states(p, "be_srv"), `srv1 127.0.0.1:18081 UP w1 a1.svc.test
srv2 127.0.0.2:18082 UP w1 a2.svc.test
srv3 - MAINT w1 -
srv4 - MAINT w1 -`; got != want {
		t.Fatalf("before: got\n%s\nwant\n%s", got, want)
	}
	b := p.Backend("be_srv")
	srv1 := b.Server("srv1")
	if err := p.DeleteServer(srv1); err != proxy.ErrServerNotMaint {
		t.Fatalf("del server of a filled slot in READY: %v, want ErrServerNotMaint", err)
	}
	b.SetAdmin(srv1, proxy.AdminMaint)
	if err := p.DeleteServer(srv1); err != nil {
		t.Fatal(err)
	}
	apply(r, two, t0.Add(time.Second))
	if got, want := states(p, "be_srv"), `srv2 127.0.0.2:18082 UP w1 a2.svc.test
srv3 127.0.0.1:18081 UP w1 a1.svc.test
srv4 - MAINT w1 -`; got != want {
		t.Fatalf("after del server srv1: got\n%s\nwant\n%s", got, want)
	}
	if got, want := state(srv1), "127.0.0.1:18081 UP w1 a1.svc.test"; got != want {
		t.Errorf("the deleted slot changed: %q, want %q", got, want)
	}
	// A record removed past hold obsolete empties only live slots.
	apply(r, srvAnswer("a2.svc.test:18082:256:127.0.0.2"), t0.Add(4*time.Second))
	if got, want := states(p, "be_srv"), `srv2 127.0.0.2:18082 UP w1 a2.svc.test
srv3 - MAINT w1 -
srv4 - MAINT w1 -`; got != want {
		t.Fatalf("a1 gone: got\n%s\nwant\n%s", got, want)
	}
	if got, want := state(srv1), "127.0.0.1:18081 UP w1 a1.svc.test"; got != want {
		t.Errorf("the deleted slot changed: %q, want %q", got, want)
	}
}
