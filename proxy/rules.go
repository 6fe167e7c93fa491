package proxy

import (
	"fmt"
	"net"
	"time"

	"github.com/fulcrum-proxy/fulcrum/proxy/acl"
)

// Routing before balancing: the glue between the HTTP engine and the rules
// compiled by proxy/acl. The engine fills an acl.Request (a view of the
// parsed head, aliasing its buffer) once per request; the frontend's
// http_request rules run on it, then use_backend picks the backend, then
// the backend's http_request rules run. Header and path edits are kept in
// the session's acl.Edits and applied by writeRequestHead.

// NumHeaders and HeaderAt make a head the acl.Headers of its request.
func (h *head) NumHeaders() int { return len(h.headers) }

// HeaderAt returns header line i of h.
func (h *head) HeaderAt(i int) (name, value []byte) {
	f := &h.headers[i]
	return f.name, f.value
}

var _ acl.Headers = (*head)(nil)

// ACL returns the pattern sets of the configuration's ACLs, numbered as
// `show acl`, for the Runtime API; nil when the configuration was not
// loaded by conf (tests).
func (p *Proxy) ACL() *acl.Registry { return p.Conf.ACL }

// buildRules resolves the use_backend rules of fe to backends. Called by
// New; conf has checked that the names exist, so a miss is a programming
// error reported as such.
func (fe *Frontend) buildRules(byName map[string]*Backend) error {
	rs := fe.Conf.Rules
	if rs == nil {
		return nil
	}
	for _, u := range rs.UseBackend {
		be := byName[u.Backend]
		if be == nil {
			return fmt.Errorf("frontend %q: use_backend %q: no such backend", fe.Name, u.Backend)
		}
		fe.useBackend = append(fe.useBackend, be)
	}
	return nil
}

// localAddr returns the address a client connected to (dst).
func localAddr(c net.Conn) (ap acl.Request) {
	if a, ok := c.LocalAddr().(*net.TCPAddr); ok {
		ap.Dst = a.AddrPort()
	}
	return ap
}

// acceptConn runs the tcp_request connection rules on a new connection and
// reports whether it may proceed; a rejected one counts in DeniedConn and
// is closed by the caller without a word, as HAProxy's `tcp-request
// connection reject`. track-sc rules track their keys in cc.st, which
// holds the entries until the connection closes: a rejected connection
// releases them here, an accepted one counts as a session on them and
// serveHTTP or serveTCP releases them when it ends.
func (fe *Frontend) acceptConn(cc *clientConn) bool {
	rs := fe.Conf.Rules
	if rs == nil || len(rs.TCPConnection) == 0 {
		return true
	}
	r := localAddr(cc.c)
	r.Src = cc.src
	cc.st.p, cc.st.connStage = fe.p, true
	r.Tracker = &cc.st
	if rs.AcceptConnection(&r) {
		cc.st.accepted()
		return true
	}
	cc.st.release()
	fe.DeniedConn.Add(1)
	return false
}

// fillRuleView points s.areq at the current request head and resets the
// edits. The slices alias s.req.buf (see fillView).
func (s *httpSession) fillRuleView() {
	r := &s.areq
	if !r.Dst.IsValid() {
		*r = localAddr(s.cc.c)
	}
	r.Src = s.cc.src
	r.HTTP = true
	r.Method = s.req.line[0]
	r.URI = s.req.line[1]
	r.Version = s.req.line[2]
	if len(r.Version) > 5 {
		r.Version = r.Version[5:] // "HTTP/1.1" -> "1.1"
	}
	r.Headers = &s.req
	r.Tracker = &s.st
	s.edits.Reset(len(s.req.headers))
	r.Edits = &s.edits
}

// requestURI returns the URI to send to the server: set-path's if a rule
// changed it.
func (s *httpSession) requestURI() []byte {
	if s.edits.URIChanged() {
		return s.areq.URI
	}
	return s.req.line[1]
}

// frontendRules fills the rule view and runs the frontend's http_request
// rules. done is true when a rule answered the request (deny, return,
// redirect); keep then says whether the connection may carry another one.
func (s *httpSession) frontendRules(idleStart, t0 time.Time) (done, keep bool) {
	s.fillRuleView()
	if rule := s.fe.Conf.Rules.EvalHTTP(&s.areq); rule != nil {
		return true, s.answer(rule, nil, idleStart, t0)
	}
	return false, false
}

// selectBackend returns the backend of the first use_backend rule whose
// condition holds, else default_backend (nil if none).
func (s *httpSession) selectBackend() *Backend {
	if i := s.fe.Conf.Rules.SelectBackend(&s.areq); i >= 0 {
		return s.fe.useBackend[i]
	}
	return s.fe.backend
}

// backendRules runs be's http_request rules, as frontendRules.
func (s *httpSession) backendRules(be *Backend, idleStart, t0 time.Time) (done, keep bool) {
	if be.Conf == nil {
		return false, false
	}
	if rule := be.Conf.Rules.EvalHTTP(&s.areq); rule != nil {
		return true, s.answer(rule, be, idleStart, t0)
	}
	return false, false
}

// answer sends the response of a deny, return or redirect rule of the
// frontend (be nil) or of be, counts and logs it. A deny counts in dreq
// and is logged with HAProxy's "PR" flags; return and redirect with "LR".
// The connection stays open, as HAProxy 2.6 keeps it, unless the client
// asked to close, the request has a body (it is not read), the page closes
// (400, 408) or the proxy is stopping.
func (s *httpSession) answer(rule *acl.Rule, be *Backend, idleStart, t0 time.Time) bool {
	fe := s.fe
	var resp []byte
	flags := "LR"
	switch rule.Action {
	case acl.ActDeny:
		resp = denyResponses[rule.Status]
		flags = "PR"
		fe.Counters.Dreq.Add(1)
		if be != nil {
			be.Counters.Dreq.Add(1)
		}
	case acl.ActReturn:
		resp = rule.Response
	case acl.ActRedirect:
		resp = rule.AppendRedirect(s.bw.AvailableBuffer(), &s.areq)
	}
	n := int64(len(resp))
	fe.Counters.Bout.Add(n)
	fe.Counters.response(rule.Status)
	if be != nil {
		be.Counters.Bout.Add(n)
		be.Counters.response(rule.Status)
	}
	s.bw.Write(resp)
	err := s.flushClient()
	tq := time.Since(t0).Milliseconds()
	s.logLine(idleStart, t0, be, nil, rule.Status, n, tq, -1, -1, flags)
	closes := rule.Action == acl.ActDeny && (rule.Status == 400 || rule.Status == 408)
	hasBody := s.req.chunked || s.req.contentLength > 0
	return err == nil && !closes && !hasBody && !s.req.connClose && !s.stoppingForGood()
}
