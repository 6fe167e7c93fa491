package resolve

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fulcrum-proxy/fulcrum/conf"
	"github.com/fulcrum-proxy/fulcrum/proxy"
	"github.com/miekg/dns"
	"github.com/rs/zerolog"
)

// loadProxy builds (without starting) a proxy from a TOML configuration.
func loadProxy(t testing.TB, toml string) *proxy.Proxy {
	t.Helper()
	cfg, err := conf.Parse("test.toml", []byte(toml))
	if err != nil {
		t.Fatalf("config: %v\n%s", err, toml)
	}
	p, err := proxy.New(cfg, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// proxyServer returns the proxy server backend/name.
func proxyServer(t testing.TB, p *proxy.Proxy, spec string) *proxy.Server {
	t.Helper()
	bname, sname, _ := strings.Cut(spec, "/")
	b := p.Backend(bname)
	if b == nil || b.Server(sname) == nil {
		t.Fatalf("no server %s", spec)
	}
	return b.Server(sname)
}

// res returns the manager's resolution of name and qtype in its first
// section.
func res(t testing.TB, m *Manager, name string, qtype uint16) *resolution {
	t.Helper()
	r := m.sections[0].res[resKey{name, qtype}]
	if r == nil {
		t.Fatalf("no resolution %s %s", name, dns.TypeToString[qtype])
	}
	return r
}

// apply applies outcome o of r at time at, as its goroutine does.
func apply(r *resolution, o outcome, at time.Time) {
	r.sec.mu.Lock()
	defer r.sec.mu.Unlock()
	r.handle(o, at)
}

// srvAnswer is a valid SRV outcome from "target:port:weight[:ar]" items
// (ar: the additional record's address).
func srvAnswer(items ...string) outcome {
	o := outcome{status: statusValid}
	for _, it := range items {
		f := strings.Split(it, ":")
		var port, weight int
		fmt.Sscan(f[1], &port)
		fmt.Sscan(f[2], &weight)
		rec := srvRecord{target: f[0], port: uint16(port), weight: uint16(weight)}
		if len(f) > 3 {
			rec.ar = netip.MustParseAddr(f[3])
		}
		o.answer.srvs = append(o.answer.srvs, rec)
	}
	return o
}

// addrAnswer is a valid A/AAAA outcome with the given addresses.
func addrAnswer(ips ...string) outcome {
	o := outcome{status: statusValid}
	for _, ip := range ips {
		o.answer.addrs = append(o.answer.addrs, netip.MustParseAddr(ip))
	}
	return o
}

// state describes a server as the tests compare it: address (or "-"),
// "MAINT" when in maintenance by resolution, user weight and DNS name.
func state(s *proxy.Server) string {
	addr := s.Addr()
	if info := s.DNS(); addr == "" || info != nil && info.NoAddr {
		addr = "-"
	}
	m := "UP"
	if s.ResolutionMaint() {
		m = "MAINT"
	}
	fqdn := "-"
	if info := s.DNS(); info != nil && info.FQDN != "" {
		fqdn = info.FQDN
	}
	return fmt.Sprintf("%s %s w%d %s", addr, m, s.UserWeight.Load(), fqdn)
}

// states returns state() of each server of backend b, one per line.
func states(p *proxy.Proxy, b string) string {
	var out []string
	for _, s := range p.Backend(b).Servers() {
		out = append(out, s.Name+" "+state(s))
	}
	return strings.Join(out, "\n")
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// dnsServer is an in-process name server (miekg/dns) on 127.0.0.1 over UDP
// and TCP on the same port, answering with a handler the test changes.
type dnsServer struct {
	addr string
	mu   sync.Mutex
	h    func(w dns.ResponseWriter, r *dns.Msg, tcp bool)
	udp  *dns.Server
	tcp  *dns.Server
	nUDP int // queries seen over UDP
	nTCP int // and over TCP
}

// newDNSServer starts a name server answering with h, stopped at cleanup.
func newDNSServer(t testing.TB, h func(w dns.ResponseWriter, r *dns.Msg, tcp bool)) *dnsServer {
	t.Helper()
	// The same port for UDP and TCP: a free UDP port may be taken for TCP.
	var pc net.PacketConn
	var l net.Listener
	var err error
	for range 50 {
		if pc, err = net.ListenPacket("udp", "127.0.0.1:0"); err != nil {
			t.Fatal(err)
		}
		if l, err = net.Listen("tcp", pc.LocalAddr().String()); err == nil {
			break
		}
		pc.Close()
	}
	if err != nil {
		t.Fatal(err)
	}
	d := &dnsServer{addr: pc.LocalAddr().String(), h: h}
	started := make(chan struct{}, 2)
	handler := func(tcp bool) dns.HandlerFunc {
		return func(w dns.ResponseWriter, r *dns.Msg) {
			d.mu.Lock()
			if tcp {
				d.nTCP++
			} else {
				d.nUDP++
			}
			h := d.h
			d.mu.Unlock()
			h(w, r, tcp)
		}
	}
	d.udp = &dns.Server{PacketConn: pc, Handler: handler(false), NotifyStartedFunc: func() { started <- struct{}{} }}
	d.tcp = &dns.Server{Listener: l, Handler: handler(true), NotifyStartedFunc: func() { started <- struct{}{} }}
	go d.udp.ActivateAndServe()
	go d.tcp.ActivateAndServe()
	<-started
	<-started
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		d.udp.ShutdownContext(ctx)
		d.tcp.ShutdownContext(ctx)
	})
	return d
}

// set replaces the handler.
func (d *dnsServer) set(h func(w dns.ResponseWriter, r *dns.Msg, tcp bool)) {
	d.mu.Lock()
	d.h = h
	d.mu.Unlock()
}

// counts returns the queries seen over UDP and TCP.
func (d *dnsServer) counts() (udp, tcp int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.nUDP, d.nTCP
}

// records answers from a zone: name -> records in zone-file syntax ("A
// 127.0.0.1", "SRV 0 10 8080 a1.test."); a name absent from the zone
// gets NXDOMAIN, a name without records of the type asked an empty
// NOERROR. ttl is the records' TTL.
func records(zone map[string][]string, ttl int) func(w dns.ResponseWriter, r *dns.Msg, tcp bool) {
	return func(w dns.ResponseWriter, r *dns.Msg, tcp bool) {
		m := new(dns.Msg)
		m.SetReply(r)
		q := r.Question[0]
		rrs, ok := zone[strings.ToLower(strings.TrimSuffix(q.Name, "."))]
		if !ok {
			m.Rcode = dns.RcodeNameError
			w.WriteMsg(m)
			return
		}
		for _, s := range rrs {
			rr, err := dns.NewRR(fmt.Sprintf("%s %d IN %s", q.Name, ttl, s))
			if err != nil {
				panic(err)
			}
			if rr.Header().Rrtype == q.Qtype {
				m.Answer = append(m.Answer, rr)
			}
			if srv, ok := rr.(*dns.SRV); ok && q.Qtype == dns.TypeSRV {
				for _, a := range zone[strings.TrimSuffix(srv.Target, ".")] {
					if ar, err := dns.NewRR(fmt.Sprintf("%s %d IN %s", srv.Target, ttl, a)); err == nil && ar.Header().Rrtype == dns.TypeA {
						m.Extra = append(m.Extra, ar)
					}
				}
			}
		}
		if opt := r.IsEdns0(); opt != nil && !tcp {
			m.SetEdns0(opt.UDPSize(), false)
			m.Truncate(int(opt.UDPSize()))
		} else if !tcp {
			m.Truncate(dns.MinMsgSize)
		}
		w.WriteMsg(m)
	}
}

// rcode answers every query with rcode and no record.
func rcode(code int) func(w dns.ResponseWriter, r *dns.Msg, tcp bool) {
	return func(w dns.ResponseWriter, r *dns.Msg, tcp bool) {
		m := new(dns.Msg)
		m.SetRcode(r, code)
		w.WriteMsg(m)
	}
}

// silent never answers.
func silent(w dns.ResponseWriter, r *dns.Msg, tcp bool) {}

// resolversConf is a [[resolvers]] section named dns on the given name
// servers, with short timings for tests.
func resolversConf(ns ...string) string {
	q := make([]string, len(ns))
	for i, n := range ns {
		q[i] = fmt.Sprintf("%q", n)
	}
	return fmt.Sprintf(`
[[resolvers]]
name = "dns"
nameserver = [%s]
resolve_retries = 2
timeout_resolve = "50ms"
timeout_retry = "100ms"
hold_obsolete = "0s"
hold_timeout = "300ms"
hold_nx = "300ms"
hold_refused = "300ms"
hold_other = "300ms"
`, strings.Join(q, ", "))
}
