package resolve

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/fulcrum-proxy/fulcrum/proxy"
	"github.com/miekg/dns"
	"github.com/rs/zerolog"
)

// counters renders a name server's non-zero counters: "sent=2 nx=2".
func counters(c *proxy.NameserverCounters) string {
	var out []string
	for _, nc := range c.List() {
		if v := nc.V.Load(); v != 0 {
			out = append(out, fmt.Sprintf("%s=%d", nc.Name, v))
		}
	}
	return strings.Join(out, " ")
}

// srvZone is an SRV name with n records (ports 20001..), each target with
// an A record, plus a host name web.test.
func srvZone(n int) map[string][]string {
	z := map[string][]string{"web.test": {"A 127.0.0.1"}}
	for i := range n {
		target := fmt.Sprintf("t%d.test", i+1)
		z["_http._tcp.svc.test"] = append(z["_http._tcp.svc.test"], fmt.Sprintf("SRV 0 %d %d %s.", 256*(i%3+1), 20001+i, target))
		z[target] = []string{fmt.Sprintf("A 127.0.%d.%d", (i+1)/256, (i+1)%256)}
	}
	return z
}

// TestQueryEdgeCases runs one resolution against in-process name servers
// that truncate, refuse, do not answer, answer too big or too late, and
// checks the outcome and the counters of `show resolvers`.
func TestQueryEdgeCases(t *testing.T) {
	late := func(d time.Duration, h func(w dns.ResponseWriter, r *dns.Msg, tcp bool)) func(w dns.ResponseWriter, r *dns.Msg, tcp bool) {
		return func(w dns.ResponseWriter, r *dns.Msg, tcp bool) {
			time.Sleep(d)
			h(w, r, tcp)
		}
	}
	tooBig := func(w dns.ResponseWriter, r *dns.Msg, tcp bool) {
		m := new(dns.Msg)
		m.SetReply(r)
		for i := range 60 {
			rr, _ := dns.NewRR(fmt.Sprintf("web.test. 1 IN A 127.0.0.%d", i+1))
			m.Answer = append(m.Answer, rr)
		}
		w.WriteMsg(m) // ignores the EDNS0 size: 1000+ bytes
	}
	tests := []struct {
		name     string
		handlers []func(w dns.ResponseWriter, r *dns.Msg, tcp bool)
		payload  int
		qname    string
		qtype    uint16
		status   status
		records  int
		counters []string // per name server
		udp, tcp int      // queries the first server saw
		retry    string   // timeout_retry, 100ms when empty
	}{
		{"truncated over UDP, asked again over TCP", []func(dns.ResponseWriter, *dns.Msg, bool){records(srvZone(120), 1)}, 512,
			"_http._tcp.svc.test", dns.TypeSRV, statusValid, 120, []string{"sent=1 valid=1 truncated=1"}, 1, 1, "5s"},
		{"a large accepted payload size needs no TCP", []func(dns.ResponseWriter, *dns.Msg, bool){records(srvZone(120), 1)}, 16384,
			"_http._tcp.svc.test", dns.TypeSRV, statusValid, 120, []string{"sent=1 valid=1"}, 1, 0, "5s"},
		{"NXDOMAIN: both families, twice", []func(dns.ResponseWriter, *dns.Msg, bool){rcode(dns.RcodeNameError)}, 512,
			"nope.test", dns.TypeA, statusNX, 0, []string{"sent=4 nx=4"}, 4, 0, "500ms"},
		{"NXDOMAIN for SRV: no family fallback", []func(dns.ResponseWriter, *dns.Msg, bool){rcode(dns.RcodeNameError)}, 512,
			"_x._tcp.test", dns.TypeSRV, statusNX, 0, []string{"sent=2 nx=2"}, 2, 0, "500ms"},
		{"REFUSED", []func(dns.ResponseWriter, *dns.Msg, bool){rcode(dns.RcodeRefused)}, 512,
			"web.test", dns.TypeA, statusRefused, 0, []string{"sent=4 refused=4"}, 4, 0, "500ms"},
		{"SERVFAIL", []func(dns.ResponseWriter, *dns.Msg, bool){rcode(dns.RcodeServerFailure)}, 512,
			"web.test", dns.TypeA, statusOther, 0, []string{"sent=4 other=4"}, 4, 0, "500ms"},
		{"AAAA empty, A answers", []func(dns.ResponseWriter, *dns.Msg, bool){records(srvZone(0), 1)}, 512,
			"web.test", dns.TypeAAAA, statusValid, 1, []string{"sent=2 valid=1 any_err=1"}, 2, 0, "5s"}, // no retry before an answer on a loaded machine
		{"no answer at all", []func(dns.ResponseWriter, *dns.Msg, bool){silent}, 512,
			"web.test", dns.TypeA, statusTimeout, 0, []string{"sent=2 timeout=2"}, 2, 0, ""},
		{"one name server silent, the other valid", []func(dns.ResponseWriter, *dns.Msg, bool){silent, records(srvZone(0), 1)}, 512,
			"web.test", dns.TypeA, statusValid, 1, []string{"sent=1", "sent=1 valid=1"}, 1, 0, "500ms"},
		{"NXDOMAIN from one, valid from the slower other", []func(dns.ResponseWriter, *dns.Msg, bool){rcode(dns.RcodeNameError), late(20*time.Millisecond, records(srvZone(0), 1))}, 512,
			"web.test", dns.TypeA, statusValid, 1, []string{"sent=1 nx=1", "sent=1 valid=1"}, 1, 0, "500ms"}, // no retry before the late answer on a loaded machine
		{"too big for the accepted payload size", []func(dns.ResponseWriter, *dns.Msg, bool){tooBig}, 512,
			"web.test", dns.TypeA, statusTimeout, 0, []string{"sent=2 timeout=2 too_big=2"}, 2, 0, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var servers []*dnsServer
			var addrs []string
			for _, h := range tt.handlers {
				d := newDNSServer(t, h)
				servers = append(servers, d)
				addrs = append(addrs, d.addr)
			}
			cfg := resolversConf(addrs...) + fmt.Sprintf("accepted_payload_size = %d\n", tt.payload)
			if tt.retry != "" {
				cfg = strings.Replace(cfg, `timeout_retry = "100ms"`, fmt.Sprintf("timeout_retry = %q", tt.retry), 1)
			}
			p := loadProxy(t, cfg)
			m := New(p, zerolog.Nop())
			defer m.Stop()
			o := m.sections[0].resolve(context.Background(), tt.qname, tt.qtype)
			if o.status != tt.status {
				t.Fatalf("status: got %d, want %d", o.status, tt.status)
			}
			if n := len(o.answer.addrs) + len(o.answer.srvs); n != tt.records {
				t.Errorf("records: got %d, want %d", n, tt.records)
			}
			for i, want := range tt.counters {
				if got := counters(&p.Resolvers[0].Nameservers[i].Counters); got != want {
					t.Errorf("name server %d counters: got %q, want %q", i+1, got, want)
				}
			}
			// A query the resolver sent may still be on its way to a
			// server it did not wait for (a silent one beside a valid one).
			waitFor(t, 5*time.Second, "the first name server's queries", func() bool {
				udp, tcp := servers[0].counts()
				return udp >= tt.udp && tcp >= tt.tcp
			})
			if udp, tcp := servers[0].counts(); udp != tt.udp || tcp != tt.tcp {
				t.Errorf("first name server saw %d UDP and %d TCP queries, want %d and %d", udp, tcp, tt.udp, tt.tcp)
			}
		})
	}
}

// TestOutdated: an answer arriving after its query gave up counts as
// outdated, and the resolution goes on with the next query.
func TestOutdated(t *testing.T) {
	d := newDNSServer(t, func(w dns.ResponseWriter, r *dns.Msg, tcp bool) {
		time.Sleep(150 * time.Millisecond) // timeout_retry is 100ms
		records(srvZone(0), 1)(w, r, tcp)
	})
	p := loadProxy(t, strings.Replace(resolversConf(d.addr), "resolve_retries = 2", "resolve_retries = 1", 1))
	m := New(p, zerolog.Nop())
	defer m.Stop()
	if o := m.sections[0].resolve(context.Background(), "web.test", dns.TypeA); o.status != statusTimeout {
		t.Fatalf("status %d, want timeout", o.status)
	}
	c := &p.Resolvers[0].Nameservers[0].Counters
	waitFor(t, 2*time.Second, "the late answer", func() bool { return c.Outdated.Load() == 1 })
	if got, want := counters(c), "sent=1 timeout=1 outdated=1"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}
