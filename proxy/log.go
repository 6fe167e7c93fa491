package proxy

import (
	"net/netip"
	"time"

	"github.com/fulcrum-proxy/fulcrum/proxy/tlsx"
	"github.com/rs/zerolog"
)

// logEntry is one access-log line. Times are in milliseconds, -1 when the
// phase was not reached, as HAProxy's Tq/Tw/Tc/Tr/Ta/Tt.
type logEntry struct {
	client   netip.AddrPort
	frontend string
	backend  string
	server   string
	status   int
	bytes    int64 // bytes sent to the client
	tq, tw   int64
	tc, tr   int64
	ta, tt   int64
	flags    string
	request  string // request line; empty in tcp mode
	tcp      bool
	// The client connection's TLS, nil on a plain one: HAProxy's %sslv
	// (ssl_version), %sslc (ssl_cipher) and the SNI (ssl_sni).
	tls *tlsx.ConnInfo
}

// emit writes the entry at info level. It costs nothing when info is off.
func (e *logEntry) emit(l *zerolog.Logger) {
	ev := l.Info()
	if ev == nil {
		return
	}
	ev.Str("client_ip", e.client.Addr().String()).
		Uint16("client_port", e.client.Port()).
		Str("frontend", e.frontend).
		Str("backend", e.backend).
		Str("server", e.server)
	if !e.tcp {
		ev.Int("status", e.status)
	}
	ev.Int64("bytes_read", e.bytes)
	if !e.tcp {
		ev.Int64("Tq", e.tq)
	}
	ev.Int64("Tw", e.tw).Int64("Tc", e.tc)
	if !e.tcp {
		ev.Int64("Tr", e.tr).Int64("Ta", e.ta)
	}
	ev.Int64("Tt", e.tt).Str("termination_state", e.flags)
	if !e.tcp {
		ev.Str("request", e.request)
	}
	if e.tls != nil {
		ev.Str("ssl_version", e.tls.Protocol).Str("ssl_cipher", e.tls.Cipher).Str("ssl_sni", e.tls.SNI)
	}
	ev.Msg("")
}

// msSince returns whole milliseconds from t0 to t1, -1 when t0 is zero.
func msBetween(t0, t1 time.Time) int64 {
	if t0.IsZero() || t1.IsZero() {
		return -1
	}
	return t1.Sub(t0).Milliseconds()
}
