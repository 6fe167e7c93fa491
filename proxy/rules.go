package proxy

import (
	"fmt"
	"net"

	"github.com/fulcrum-proxy/fulcrum/proxy/acl"
)

// Routing before balancing: the glue between the core and the rules
// compiled by proxy/acl. Stream.Route fills an acl.Request (a view of the
// parsed head, aliasing the engine's buffer) once per request; the
// frontend's http_request rules run on it, then use_backend picks the
// backend, then the backend's http_request rules run. Header and path
// edits are kept in the stream's acl.Edits and applied by the engine.

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

// localAddr returns the address a client connected to (dst): the
// socket's, or the one a PROXY header gave (edge.go).
func localAddr(cc *clientConn) (ap acl.Request) {
	if cc.dst != nil && cc.dst.IsValid() {
		ap.Dst = *cc.dst
		return ap
	}
	if a, ok := cc.c.LocalAddr().(*net.TCPAddr); ok {
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
	r := localAddr(cc)
	r.Src = cc.src
	cc.st = &tracker{p: fe.p, connStage: true}
	r.Tracker = cc.st
	if rs.AcceptConnection(&r) {
		cc.st.accepted()
		return true
	}
	cc.st.release()
	fe.DeniedConn.Add(1)
	resetOnClose(cc.c)
	return false
}
