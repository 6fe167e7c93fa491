package resolve

// Reading a name server's answer: untrusted bytes, parsed by miekg/dns,
// then checked against the question and reduced to what the servers use
// (addresses, or SRV records with their additional addresses), each list
// bounded by maxRecords. The outcome kinds are HAProxy's RSLV_RESP_* as
// resolvers.c counts them.

import (
	"net/netip"
	"strings"

	"github.com/miekg/dns"
)

// maxRecords bounds the addresses or SRV records kept from one answer: a
// name server (or whoever answers in its place) cannot make a resolution
// hold more. A template has at most 10000 slots; more records than slots
// are ignored anyway.
const maxRecords = 10000

// maxCNAME bounds a CNAME chain followed inside one answer.
const maxCNAME = 8

// kind is what an answer is, as HAProxy classifies it (RSLV_RESP_*): the
// counter it increments and the resolution status it gives.
type kind int

const (
	kValid      kind = iota // records of the type asked (valid)
	kInvalid                // unparsable, not a response, wrong question (invalid)
	kNX                     // NXDOMAIN (nx)
	kRefused                // REFUSED (refused)
	kAnyErr                 // NOERROR without any answer record (any_err)
	kCNAMEError             // a CNAME chain that leads nowhere (cname_error)
	kTruncated              // TC set: asked again over TCP (truncated)
	kOther                  // another rcode, or no record of the type asked (other)
)

// status is a resolution's last outcome (HAProxy's RSLV_STATUS_*); each
// error status has its hold period.
type status int

const (
	statusNone    status = iota // no answer yet
	statusValid                 // the last answer was valid
	statusNX                    // hold_nx
	statusTimeout               // hold_timeout
	statusRefused               // hold_refused
	statusOther                 // hold_other (also invalid answers)
)

// status returns the resolution status an answer of kind k gives.
func (k kind) status() status {
	switch k {
	case kValid:
		return statusValid
	case kNX:
		return statusNX
	case kRefused:
		return statusRefused
	}
	return statusOther
}

// srvRecord is one SRV record of an answer, with the address its
// additional section gives the target (the zero value when none).
type srvRecord struct {
	target   string // lower-case, no final dot
	port     uint16
	weight   uint16
	priority uint16
	ar       netip.Addr
}

// answer is what a valid answer gives: the addresses of the name (A/AAAA
// query) or its SRV records, in the order of the answer, without
// duplicates.
type answer struct {
	addrs []netip.Addr
	srvs  []srvRecord
	cname bool // reached through a CNAME
}

// readAnswer parses msg, the answer to a query of name (lower-case, no
// final dot) and qtype (A, AAAA or SRV), and returns its kind and, when
// valid, its records. An A or AAAA query takes addresses of both families
// from the answer.
func readAnswer(msg []byte, name string, qtype uint16) (answer, kind) {
	var m dns.Msg
	if err := m.Unpack(msg); err != nil {
		return answer{}, kInvalid
	}
	if !m.Response || len(m.Question) != 1 || m.Question[0].Qtype != qtype ||
		!sameName(m.Question[0].Name, name) {
		return answer{}, kInvalid
	}
	if m.Truncated {
		return answer{}, kTruncated
	}
	switch m.Rcode {
	case dns.RcodeSuccess:
	case dns.RcodeNameError:
		return answer{}, kNX
	case dns.RcodeRefused:
		return answer{}, kRefused
	default:
		return answer{}, kOther
	}
	if len(m.Answer) == 0 {
		return answer{}, kAnyErr
	}
	// Follow the CNAME chain from the name asked to the owner of the
	// records (RFC 1034 section 3.6.2).
	owner, a := name, answer{}
	for range maxCNAME + 1 {
		if qtype == dns.TypeSRV {
			a.srvs = srvRecords(&m, owner)
		} else {
			a.addrs = addrRecords(m.Answer, owner)
		}
		if len(a.srvs) > 0 || len(a.addrs) > 0 {
			return a, kValid
		}
		next := ""
		for _, rr := range m.Answer {
			if c, ok := rr.(*dns.CNAME); ok && sameName(c.Hdr.Name, owner) {
				next = lowerName(c.Target)
				break
			}
		}
		if next == "" {
			break
		}
		owner, a.cname = next, true
	}
	if a.cname {
		return answer{}, kCNAMEError
	}
	return answer{}, kOther
}

// addrRecords returns the A and AAAA addresses of owner in rrs, without
// duplicates, at most maxRecords.
func addrRecords(rrs []dns.RR, owner string) []netip.Addr {
	var out []netip.Addr
	seen := map[netip.Addr]bool{}
	for _, rr := range rrs {
		if len(out) >= maxRecords {
			break
		}
		ip, ok := rrAddr(rr, owner)
		if ok && !seen[ip] {
			seen[ip] = true
			out = append(out, ip)
		}
	}
	return out
}

// rrAddr returns the address of an A or AAAA record of owner.
func rrAddr(rr dns.RR, owner string) (netip.Addr, bool) {
	var raw []byte
	switch r := rr.(type) {
	case *dns.A:
		if !sameName(r.Hdr.Name, owner) {
			return netip.Addr{}, false
		}
		raw = r.A.To4()
	case *dns.AAAA:
		if !sameName(r.Hdr.Name, owner) {
			return netip.Addr{}, false
		}
		raw = r.AAAA.To16()
	default:
		return netip.Addr{}, false
	}
	ip, ok := netip.AddrFromSlice(raw)
	if !ok || !ip.IsValid() || ip.IsUnspecified() {
		return netip.Addr{}, false
	}
	return ip.Unmap(), true
}

// srvRecords returns the SRV records of owner in m's answer, one per
// target and port, each with the first address the additional section
// gives its target. Records that cannot name a server are skipped: target
// "." (RFC 2782: no service), a name that is not a host name, port 0.
func srvRecords(m *dns.Msg, owner string) []srvRecord {
	var out []srvRecord
	type key struct {
		target string
		port   uint16
	}
	seen := map[key]bool{}
	for _, rr := range m.Answer {
		if len(out) >= maxRecords {
			break
		}
		r, ok := rr.(*dns.SRV)
		if !ok || !sameName(r.Hdr.Name, owner) || r.Port == 0 {
			continue
		}
		t := lowerName(r.Target)
		k := key{t, r.Port}
		if !validHost(t) || seen[k] {
			continue
		}
		seen[k] = true
		out = append(out, srvRecord{target: t, port: r.Port, weight: r.Weight, priority: r.Priority})
	}
	if len(out) == 0 || len(m.Extra) == 0 {
		return out
	}
	ar := map[string]netip.Addr{}
	for _, rr := range m.Extra {
		h := rr.Header()
		n := lowerName(h.Name)
		if _, done := ar[n]; done {
			continue
		}
		if ip, ok := rrAddr(rr, n); ok {
			ar[n] = ip
		}
	}
	for i := range out {
		out[i].ar = ar[out[i].target]
	}
	return out
}

// lowerName returns a DNS name lower-case without its final dot.
func lowerName(n string) string { return strings.ToLower(strings.TrimSuffix(n, ".")) }

// sameName reports whether the DNS name n is name (lower-case, no dot).
func sameName(n, name string) bool {
	n = strings.TrimSuffix(n, ".")
	return len(n) == len(name) && strings.EqualFold(n, name)
}

// validHost reports whether t is a host name a server may resolve: 1..253
// characters of dot-separated labels of 1..63 letters, digits, "-" and
// "_".
func validHost(t string) bool {
	if t == "" || len(t) > 253 {
		return false
	}
	label := 0
	for i := 0; i < len(t); i++ {
		c := t[i]
		switch {
		case c == '.':
			if label == 0 {
				return false
			}
			label = 0
			continue
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '-', c == '_':
		default:
			return false
		}
		label++
		if label > 63 {
			return false
		}
	}
	return label > 0
}

// query returns the packed query of name and qtype with id, recursion
// desired and an EDNS0 OPT record announcing payload (RFC 6891), as
// HAProxy's resolv_build_query.
func query(id uint16, name string, qtype uint16, payload int) ([]byte, error) {
	m := new(dns.Msg)
	m.Id = id
	m.RecursionDesired = true
	m.Question = []dns.Question{{Name: dns.Fqdn(name), Qtype: qtype, Qclass: dns.ClassINET}}
	m.SetEdns0(uint16(payload), false)
	return m.Pack()
}
