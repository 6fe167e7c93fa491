package resolve

// One resolution's queries: every name server is asked at once, the first
// valid answer wins, errors count only once every name server gave one;
// an A query falls back to AAAA (and AAAA to A) at once when every name
// server answered with an error, and a query with no valid answer is sent
// again after timeout_retry, resolve_retries times in all (HAProxy's
// resolv_process_responses and process_resolvers).

import (
	"context"
	"math/rand/v2"
	"time"

	"github.com/fulcrum-proxy/fulcrum/proxy"
	"github.com/miekg/dns"
)

// exchange is one query in flight: its id, registered in the section
// while it waits, and where the name servers' readers hand the answers.
type exchange struct {
	id      uint16
	replies chan reply
}

// outcome is a resolution's result: the status, and for a valid answer
// its records and the name server that gave it.
type outcome struct {
	status status
	answer answer
	ns     int // the name server of a valid answer
}

// resolve runs one resolution of name with the preferred type qtype and
// returns its outcome: valid, or the status of the last error (timeout
// when no name server answered at all). It blocks for at most
// resolve_retries times two timeout_retry, less when ctx ends.
func (sec *section) resolve(ctx context.Context, name string, qtype uint16) outcome {
	tries := sec.conf.ResolveRetries
	qt := qtype
	for {
		start := time.Now()
		o, answers, all := sec.ask(ctx, name, qt)
		if o.status == statusValid || ctx.Err() != nil {
			return o
		}
		if answers > 0 && qt == qtype && qtype != dns.TypeSRV {
			// Name servers answered with errors (and the others not at
			// all): the other family at once, without counting a try.
			qt = otherFamily(qtype)
			continue
		}
		if tries--; tries <= 0 {
			return o
		}
		qt = qtype
		if all {
			// Errors came back before the retry timer: wait for it.
			t := time.NewTimer(time.Until(start.Add(sec.conf.TimeoutRetry)))
			select {
			case <-ctx.Done():
				t.Stop()
				return o
			case <-t.C:
			}
		}
	}
}

// otherFamily returns AAAA for A and A for AAAA.
func otherFamily(qt uint16) uint16 {
	if qt == dns.TypeA {
		return dns.TypeAAAA
	}
	return dns.TypeA
}

// ask sends one query of name and qt to every name server and waits up to
// timeout_retry for the answers: it returns at the first valid one, or
// once every name server that was sent the query answered (all is then
// true), or at the deadline (each name server that did not answer counts
// a timeout). answers counts the answers; the status is the last one's,
// statusTimeout when none came back.
func (sec *section) ask(ctx context.Context, name string, qt uint16) (o outcome, answers int, all bool) {
	ex := &exchange{replies: make(chan reply, 2*len(sec.ns)+2)}
	sec.register(ex)
	defer sec.unregister(ex)
	q, err := query(ex.id, name, qt, sec.conf.AcceptedPayloadSize)
	if err != nil {
		return outcome{status: statusOther}, 0, false
	}
	waiting := make([]bool, len(sec.ns))
	sent := 0
	for i, ns := range sec.ns {
		if ns.send(sec, q) {
			waiting[i] = true
			sent++
		}
	}
	timer := time.NewTimer(sec.conf.TimeoutRetry)
	defer timer.Stop()
	o = outcome{status: statusTimeout}
	responses := 0
	for {
		if sent > 0 && responses == sent {
			return o, responses, true
		}
		select {
		case <-ctx.Done():
			return o, responses, false
		case <-timer.C:
			for i, w := range waiting {
				if w {
					sec.ns[i].c.Timeout.Add(1)
				}
			}
			return o, responses, false
		case r := <-ex.replies:
			if r.ns < 0 || r.ns >= len(sec.ns) || !waiting[r.ns] {
				continue
			}
			ns := sec.ns[r.ns]
			a, k := readAnswer(r.data, name, qt)
			if k == kTruncated && !r.tcp {
				// fulcrum goes beyond HAProxy 2.6 here, which counts a
				// truncated answer as an error: ask the same name server
				// over TCP, a new query with its own timeout_retry.
				ns.c.Truncated.Add(1)
				sec.m.wg.Add(1)
				go ns.exchangeTCP(sec, q, time.Now().Add(sec.conf.TimeoutRetry))
				timer.Reset(sec.conf.TimeoutRetry)
				continue
			}
			waiting[r.ns] = false
			responses++
			if k == kValid {
				ns.c.Valid.Add(1)
				if a.cname {
					ns.c.CNAME.Add(1)
				}
				return outcome{status: statusValid, answer: a, ns: r.ns}, responses, true
			}
			countError(ns.c, k)
			o.status = k.status()
		}
	}
}

// register gives ex a random id that no query of the section uses, and
// registers it for the readers.
func (sec *section) register(ex *exchange) {
	sec.idMu.Lock()
	defer sec.idMu.Unlock()
	for {
		id := uint16(rand.Uint32())
		if _, used := sec.ids[id]; !used {
			ex.id = id
			sec.ids[id] = ex
			return
		}
	}
}

// unregister forgets ex: answers for its id are outdated from now on.
func (sec *section) unregister(ex *exchange) {
	sec.idMu.Lock()
	defer sec.idMu.Unlock()
	delete(sec.ids, ex.id)
}

// countError counts an answer that is not valid in its name server's
// counter of that kind (resolvers.c resolv_process_responses).
func countError(c *proxy.NameserverCounters, k kind) {
	switch k {
	case kInvalid:
		c.Invalid.Add(1)
	case kNX:
		c.NX.Add(1)
	case kRefused:
		c.Refused.Add(1)
	case kAnyErr:
		c.AnyErr.Add(1)
	case kCNAMEError:
		c.CNAMEError.Add(1)
	case kTruncated:
		c.Truncated.Add(1)
	default:
		c.Other.Add(1)
	}
}
