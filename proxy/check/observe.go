package check

import (
	"fmt"

	"github.com/fulcrum-proxy/fulcrum/proxy"
)

// Passive health checks (HAProxy's observe, error-limit, on-error; src/
// check.c check_health_analyze). The request path reports every connect
// attempt and every HTTP response to the server's proxy.TrafficObserver;
// error_limit errors in a row run on_error:
//
//	fastinter     probe again at fastinter, nothing else
//	fail-check    count one failed health check (UP -> UP 2/3)
//	sudden-death  leave one failure before DOWN (health = rise+1 at most, then fail)
//	mark-down     DOWN at once (health = rise, then fail: chkfail +1, chkdown +1)
//
// Every action also counts hanafail, shows HANA with "Detected N
// consecutive errors, last one was: <reason>", and reschedules the health
// check at fastinter. Any good result resets the count.

// observer is the TrafficObserver of one server with `observe`.
type observer struct {
	cs     *Server
	layer7 bool
}

// ObserveConnect counts a failed connect as an error (layer4 and layer7).
// A successful connect resets the count in layer4 only: in layer7 the
// response decides (HAProxy analyze_statuses, HANA_STATUS_L4_OK). Called
// on the request path.
func (o *observer) ObserveConnect(ok bool) {
	if ok {
		if !o.layer7 {
			o.good()
		}
		return
	}
	o.cs.observeError("L4 unsuccessful connection")
}

// ObserveResponse judges an HTTP response in layer7 mode: statuses outside
// 100..499, except 501 and 505, are errors (a response that could not be
// read arrives as 502, a timeout as 504). Called on the request path.
func (o *observer) ObserveResponse(status int) {
	if !o.layer7 {
		return
	}
	if status >= 100 && status <= 499 || status == 501 || status == 505 {
		o.good()
		return
	}
	o.cs.observeError("Wrong http response")
}

// good resets the consecutive-error count; a load and no store on the
// common path.
func (o *observer) good() {
	if o.cs.obsErrs.Load() != 0 {
		o.cs.obsErrs.Store(0)
	}
}

// observeError counts one error and runs on_error when the count reaches
// error_limit.
func (cs *Server) observeError(reason string) {
	n := cs.obsErrs.Add(1)
	if n < int64(cs.errorLimit) || !cs.obsErrs.CompareAndSwap(n, 0) {
		return
	}
	cs.mu.Lock()
	defer cs.mu.Unlock()
	st := &cs.health
	if cs.inMaint || !st.enabled {
		return
	}
	msg := fmt.Sprintf("Detected %d consecutive errors, last one was: %s", n, reason)
	switch cs.onError {
	case "sudden-death":
		if st.health > st.rise {
			st.health = st.rise + 1
		}
		fallthrough
	case "fail-check":
		st.setStatus(StatusHANA, 0, msg, -1)
		cs.countLocked(kindHealth)
	case "mark-down":
		st.health = st.rise
		st.setStatus(StatusHANA, 0, msg, -1)
		cs.countLocked(kindHealth)
	}
	cs.hanafail++
	cs.wakeLocked(kindHealth, cs.fastinter)
}

var _ proxy.TrafficObserver = (*observer)(nil)
