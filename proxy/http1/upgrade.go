package http1

// The implicit HTTP/2 upgrade (HAProxy's, configuration manual "option
// disable-h2-upgrade"): a plaintext HTTP/1 connection whose first bytes
// are the HTTP/2 connection preface is served as HTTP/2, so that one bind
// takes HTTP/1.x clients and HTTP/2 clients with prior knowledge (h2c).

import (
	"bufio"
	"bytes"
	"time"

	"github.com/fulcrum-proxy/fulcrum/proxy/netio"
)

// h2Preface is the HTTP/2 client connection preface (RFC 9113, 3.4).
const h2Preface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"

// Upgrader is a Client whose connection may switch to HTTP/2 when its
// first request is the HTTP/2 preface.
type Upgrader interface {
	// CanUpgradeH2 reports whether the connection may switch: a plaintext
	// HTTP bind without proto h1 or h2, in a frontend without
	// disable_h2_upgrade.
	CanUpgradeH2() bool
	// UpgradeH2 serves the connection as HTTP/2, buffered being the
	// bytes read from it so far (the preface first), and returns how
	// the connection ended. It is the engine's last call on the Client:
	// the session and its buffers were given back, the connection's
	// Stream is the Client's to release.
	UpgradeH2(buffered []byte) End
}

// endUpgradeH2 is serve's answer when the connection is to switch to
// HTTP/2 (run then hands it over); never returned by the package.
const endUpgradeH2 End = 255

// mayBeH2 reports whether p, the first bytes of a connection, begin the
// HTTP/2 preface (all of p when it is shorter).
func mayBeH2(p []byte) bool {
	n := min(len(p), len(h2Preface))
	return n > 0 && string(p[:n]) == h2Preface[:n]
}

// wantsH2 reports whether the connection's first request is the HTTP/2
// preface and its client may switch: it reads the rest of the preface
// when a part of it is buffered (under the request's read deadline).
func (s *session) wantsH2() bool {
	if s.nreq != 0 {
		return false
	}
	p, _ := s.br.Peek(s.br.Buffered())
	if !mayBeH2(p) { // the common case: one byte compared
		return false
	}
	u, ok := s.cl.(Upgrader)
	if !ok || !u.CanUpgradeH2() {
		return false
	}
	if len(p) < len(h2Preface) {
		var err error
		if p, err = s.br.Peek(len(h2Preface)); err != nil && err != bufio.ErrBufferFull {
			return false
		}
	}
	return bytes.HasPrefix(p, []byte(h2Preface))
}

// run is serve, then the hand-over of a connection that switches to
// HTTP/2: the bytes buffered go to the Upgrader, the session and its
// buffers back to their pools.
func (s *session) run(e entry, idleStart time.Time) End {
	end := s.serve(e, idleStart)
	if end != endUpgradeH2 {
		return end
	}
	p, _ := s.br.Peek(s.br.Buffered())
	buffered := bytes.Clone(p)
	u := s.cl.(Upgrader)
	netio.PutReader(s.br)
	netio.PutWriter(s.bw)
	s.recycle()
	return u.UpgradeH2(buffered)
}
