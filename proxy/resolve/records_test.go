package resolve

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/miekg/dns"
)

// msg packs an answer to name/qtype with the given records (zone syntax)
// in the answer and additional sections; edit changes it before packing.
func msg(t testing.TB, name string, qtype uint16, answer, extra []string, edit func(*dns.Msg)) []byte {
	t.Helper()
	q := new(dns.Msg)
	q.SetQuestion(dns.Fqdn(name), qtype)
	m := new(dns.Msg)
	m.SetReply(q)
	for _, s := range answer {
		rr, err := dns.NewRR(s)
		if err != nil {
			t.Fatal(err)
		}
		m.Answer = append(m.Answer, rr)
	}
	for _, s := range extra {
		rr, err := dns.NewRR(s)
		if err != nil {
			t.Fatal(err)
		}
		m.Extra = append(m.Extra, rr)
	}
	if edit != nil {
		edit(m)
	}
	b, err := m.Pack()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestReadAnswer checks each kind of answer HAProxy tells apart, and the
// records kept from valid ones.
func TestReadAnswer(t *testing.T) {
	tests := []struct {
		name   string
		qname  string
		qtype  uint16
		data   func(t *testing.T) []byte
		kind   kind
		addrs  string // valid A/AAAA: the addresses
		srvs   string // valid SRV: target:port:weight[:ar] ...
		viaCNM bool
	}{
		{"A records", "web.test", dns.TypeA, func(t *testing.T) []byte {
			return msg(t, "web.test", dns.TypeA, []string{"web.test. 1 IN A 127.0.0.1", "web.test. 1 IN A 127.0.0.2", "web.test. 1 IN A 127.0.0.1"}, nil, nil)
		}, kValid, "127.0.0.1 127.0.0.2", "", false},
		{"case and final dot do not matter", "web.test", dns.TypeAAAA, func(t *testing.T) []byte {
			return msg(t, "WEB.Test", dns.TypeAAAA, []string{"Web.TEST. 1 IN AAAA ::1"}, nil, nil)
		}, kValid, "::1", "", false},
		{"through a CNAME", "www.test", dns.TypeA, func(t *testing.T) []byte {
			return msg(t, "www.test", dns.TypeA, []string{"www.test. 1 IN CNAME web.test.", "web.test. 1 IN A 10.0.0.1"}, nil, nil)
		}, kValid, "10.0.0.1", "", true},
		{"a CNAME to nowhere", "www.test", dns.TypeA, func(t *testing.T) []byte {
			return msg(t, "www.test", dns.TypeA, []string{"www.test. 1 IN CNAME web.test."}, nil, nil)
		}, kCNAMEError, "", "", false},
		{"a CNAME loop", "a.test", dns.TypeA, func(t *testing.T) []byte {
			return msg(t, "a.test", dns.TypeA, []string{"a.test. 1 IN CNAME b.test.", "b.test. 1 IN CNAME a.test."}, nil, nil)
		}, kCNAMEError, "", "", false},
		{"records of another name only", "web.test", dns.TypeA, func(t *testing.T) []byte {
			return msg(t, "web.test", dns.TypeA, []string{"other.test. 1 IN A 10.0.0.1"}, nil, nil)
		}, kOther, "", "", false},
		{"0.0.0.0 is no address", "web.test", dns.TypeA, func(t *testing.T) []byte {
			return msg(t, "web.test", dns.TypeA, []string{"web.test. 1 IN A 0.0.0.0"}, nil, nil)
		}, kOther, "", "", false},
		{"NOERROR without records", "web.test", dns.TypeAAAA, func(t *testing.T) []byte {
			return msg(t, "web.test", dns.TypeAAAA, nil, nil, nil)
		}, kAnyErr, "", "", false},
		{"NXDOMAIN", "nope.test", dns.TypeA, func(t *testing.T) []byte {
			return msg(t, "nope.test", dns.TypeA, nil, nil, func(m *dns.Msg) { m.Rcode = dns.RcodeNameError })
		}, kNX, "", "", false},
		{"REFUSED", "web.test", dns.TypeA, func(t *testing.T) []byte {
			return msg(t, "web.test", dns.TypeA, nil, nil, func(m *dns.Msg) { m.Rcode = dns.RcodeRefused })
		}, kRefused, "", "", false},
		{"SERVFAIL", "web.test", dns.TypeA, func(t *testing.T) []byte {
			return msg(t, "web.test", dns.TypeA, nil, nil, func(m *dns.Msg) { m.Rcode = dns.RcodeServerFailure })
		}, kOther, "", "", false},
		{"truncated", "web.test", dns.TypeA, func(t *testing.T) []byte {
			return msg(t, "web.test", dns.TypeA, nil, nil, func(m *dns.Msg) { m.Truncated = true })
		}, kTruncated, "", "", false},
		{"not a response", "web.test", dns.TypeA, func(t *testing.T) []byte {
			return msg(t, "web.test", dns.TypeA, []string{"web.test. 1 IN A 10.0.0.1"}, nil, func(m *dns.Msg) { m.Response = false })
		}, kInvalid, "", "", false},
		{"another question", "web.test", dns.TypeA, func(t *testing.T) []byte {
			return msg(t, "evil.test", dns.TypeA, []string{"web.test. 1 IN A 10.0.0.1"}, nil, nil)
		}, kInvalid, "", "", false},
		{"another type", "web.test", dns.TypeA, func(t *testing.T) []byte {
			return msg(t, "web.test", dns.TypeAAAA, []string{"web.test. 1 IN A 10.0.0.1"}, nil, nil)
		}, kInvalid, "", "", false},
		{"two questions", "web.test", dns.TypeA, func(t *testing.T) []byte {
			return msg(t, "web.test", dns.TypeA, []string{"web.test. 1 IN A 10.0.0.1"}, nil, func(m *dns.Msg) {
				m.Question = append(m.Question, m.Question[0])
			})
		}, kInvalid, "", "", false},
		{"garbage", "web.test", dns.TypeA, func(t *testing.T) []byte { return []byte("\x12\x34garbage") }, kInvalid, "", "", false},
		{"SRV with additional records", "_http._tcp.svc.test", dns.TypeSRV, func(t *testing.T) []byte {
			return msg(t, "_http._tcp.svc.test", dns.TypeSRV, []string{
				"_http._tcp.svc.test. 1 IN SRV 0 10 8081 A1.svc.test.",
				"_http._tcp.svc.test. 1 IN SRV 0 65535 8082 a2.svc.test.",
				"_http._tcp.svc.test. 1 IN SRV 0 20 8081 a1.svc.test.", // duplicate target and port
				"_http._tcp.svc.test. 1 IN SRV 0 20 0 a3.svc.test.",    // port 0
				"_http._tcp.svc.test. 1 IN SRV 0 20 8083 .",            // no service
			}, []string{"a1.svc.test. 1 IN A 10.0.0.1", "a1.svc.test. 1 IN A 10.0.0.9", "a2.svc.test. 1 IN AAAA ::2", "zz.test. 1 IN A 10.0.0.3"}, nil)
		}, kValid, "", "a1.svc.test:8081:10:10.0.0.1 a2.svc.test:8082:65535:::2", false},
		{"SRV without additional records", "_x._tcp.test", dns.TypeSRV, func(t *testing.T) []byte {
			return msg(t, "_x._tcp.test", dns.TypeSRV, []string{"_x._tcp.test. 1 IN SRV 1 1 80 h.test."}, nil, nil)
		}, kValid, "", "h.test:80:1", false},
		{"SRV records only with no service", "_x._tcp.test", dns.TypeSRV, func(t *testing.T) []byte {
			return msg(t, "_x._tcp.test", dns.TypeSRV, []string{"_x._tcp.test. 1 IN SRV 1 1 80 ."}, nil, nil)
		}, kOther, "", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, k := readAnswer(tt.data(t), tt.qname, tt.qtype)
			if k != tt.kind {
				t.Fatalf("kind: got %d, want %d", k, tt.kind)
			}
			var addrs, srvs []string
			for _, ip := range a.addrs {
				addrs = append(addrs, ip.String())
			}
			for _, r := range a.srvs {
				s := fmt.Sprintf("%s:%d:%d", r.target, r.port, r.weight)
				if r.ar.IsValid() {
					s += ":" + r.ar.String()
				}
				srvs = append(srvs, s)
			}
			if got := strings.Join(addrs, " "); got != tt.addrs {
				t.Errorf("addresses: got %q, want %q", got, tt.addrs)
			}
			if got := strings.Join(srvs, " "); got != tt.srvs {
				t.Errorf("SRV records: got %q, want %q", got, tt.srvs)
			}
			if a.cname != tt.viaCNM {
				t.Errorf("cname: got %v, want %v", a.cname, tt.viaCNM)
			}
		})
	}
}

// TestReadAnswerBounds: an answer with more records than maxRecords keeps
// maxRecords.
func TestReadAnswerBounds(t *testing.T) {
	var rrs []string
	for i := range maxRecords + 50 {
		rrs = append(rrs, fmt.Sprintf("_x._tcp.test. 1 IN SRV 0 1 %d t.test.", i+1))
	}
	a, k := readAnswer(msg(t, "_x._tcp.test", dns.TypeSRV, rrs, nil, nil), "_x._tcp.test", dns.TypeSRV)
	if k != kValid || len(a.srvs) != maxRecords {
		t.Fatalf("got kind %d and %d records, want valid and %d", k, len(a.srvs), maxRecords)
	}
}

// TestQuery checks the query sent: id, recursion desired, the question and
// EDNS0 with the accepted payload size (HAProxy's resolv_build_query).
func TestQuery(t *testing.T) {
	b, err := query(0x1234, "web.test", dns.TypeSRV, 8192)
	if err != nil {
		t.Fatal(err)
	}
	var m dns.Msg
	if err := m.Unpack(b); err != nil {
		t.Fatal(err)
	}
	got := []any{m.Id, m.RecursionDesired, m.Question[0].Name, m.Question[0].Qtype, m.IsEdns0().UDPSize()}
	want := []any{uint16(0x1234), true, "web.test.", dns.TypeSRV, uint16(8192)}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}
