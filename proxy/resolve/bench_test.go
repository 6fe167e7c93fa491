package resolve

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/rs/zerolog"
)

// hundredSRV is an answer of 100 SRV records with their additional
// addresses; base shifts the ports, so that two bases share no record.
func hundredSRV(base int) outcome {
	var items []string
	for i := range 100 {
		items = append(items, fmt.Sprintf("t%d.test:%d:%d:127.0.%d.%d", i, base+i, 256*(1+i%3), i/250, 1+i%250))
	}
	return srvAnswer(items...)
}

// templateConf is a backend with an SRV template of n slots balanced by
// balance.
func templateConf(n int, balance string) string {
	return resolversConf("127.0.0.1:1") + fmt.Sprintf(`
[[backend]]
name = "web"
balance = %q
[[backend.server_template]]
prefix = "srv"
count = %d
fqdn = "_http._tcp.svc.test"
resolvers = "dns"
init_addr = "none"
`, balance, n)
}

// TestHundredSRV: an answer of 100 SRV records fills 100 slots with their
// ports and weights, and the next answer, 100 other records, replaces
// every one (hold_obsolete 0s): the update BenchmarkSRVUpdate measures.
func TestHundredSRV(t *testing.T) {
	p := loadProxy(t, templateConf(100, "roundrobin"))
	m := New(p, zerolog.Nop())
	if err := m.Init(nil, nil); err != nil {
		t.Fatal(err)
	}
	defer m.Stop()
	r := res(t, m, "_http._tcp.svc.test", dns.TypeSRV)
	t0 := time.Now()
	for step, base := range []int{10000, 20000} {
		apply(r, hundredSRV(base), t0.Add(time.Duration(step)*time.Second))
		ports := map[int]bool{}
		for i, s := range p.Backend("web").Servers() {
			info := s.DNS()
			if s.ResolutionMaint() || info.Port < base || info.Port >= base+100 || ports[info.Port] {
				t.Fatalf("step %d: slot %d: %s port %d", step, i, state(s), info.Port)
			}
			ports[info.Port] = true
			if w, want := s.UserWeight.Load(), int32(1+(info.Port-base)%3); w != want {
				t.Fatalf("step %d: slot %d: weight %d, want %d", step, i, w, want)
			}
		}
	}
	if got := p.Snapshot().Backends[0].Weight; got != 34+33*2+33*3 {
		t.Errorf("backend weight %d, want 199 (34 of weight 1, 33 of 2, 33 of 3)", got)
	}
}

// BenchmarkSRVUpdate measures one DNS update of 100 SRV records applied to
// a template of 100 slots, every record new (each slot emptied and filled
// again, in one ApplyDNS), from the parsed answer to the rebuilt usable
// set; the issue asks under 50 ms. parse adds readAnswer of the packed
// message.
func BenchmarkSRVUpdate(b *testing.B) {
	for _, balance := range []string{"roundrobin", "leastconn", "uri"} {
		b.Run(strings.ReplaceAll(balance, " ", "_"), func(b *testing.B) {
			cfg := templateConf(100, balance)
			if balance == "uri" {
				cfg = strings.Replace(cfg, `balance = "uri"`, "balance = \"uri\"\nhash_type = \"consistent\"", 1)
			}
			p := loadProxy(b, cfg)
			m := New(p, zerolog.Nop())
			if err := m.Init(nil, nil); err != nil {
				b.Fatal(err)
			}
			defer m.Stop()
			r := res(b, m, "_http._tcp.svc.test", dns.TypeSRV)
			answers := []outcome{hundredSRV(10000), hundredSRV(20000)}
			t0 := time.Now()
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				apply(r, answers[i&1], t0.Add(time.Duration(i)*time.Second))
			}
		})
	}
	b.Run("parse", func(b *testing.B) {
		var rrs, extra []string
		for i := range 100 {
			rrs = append(rrs, fmt.Sprintf("_http._tcp.svc.test. 1 IN SRV 0 %d %d t%d.test.", 256*(1+i%3), 10000+i, i))
			extra = append(extra, fmt.Sprintf("t%d.test. 1 IN A 127.0.%d.%d", i, i/250, 1+i%250))
		}
		data := msg(b, "_http._tcp.svc.test", dns.TypeSRV, rrs, extra, nil)
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			if _, k := readAnswer(data, "_http._tcp.svc.test", dns.TypeSRV); k != kValid {
				b.Fatal(k)
			}
		}
	})
}
