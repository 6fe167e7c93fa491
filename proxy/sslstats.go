package proxy

import "sync/atomic"

// SSLCounters are the TLS handshakes of a frontend's clients, or of a
// backend's or server's connections to its servers: HAProxy 2.6's ssl
// statistics module (show stat columns ssl_sess, ssl_reused_sess,
// ssl_failed_handshake).
type SSLCounters struct {
	Sess            atomic.Int64 // handshakes that succeeded
	ReusedSess      atomic.Int64 // of those, the ones that resumed a session
	FailedHandshake atomic.Int64 // handshakes that failed
}

// SSLValues are SSLCounters read at one instant.
type SSLValues struct {
	Sess, ReusedSess, FailedHandshake int64
}

// Values reads c.
func (c *SSLCounters) Values() SSLValues {
	return SSLValues{Sess: c.Sess.Load(), ReusedSess: c.ReusedSess.Load(), FailedHandshake: c.FailedHandshake.Load()}
}

// handshake counts one handshake's outcome.
func (c *SSLCounters) handshake(ok, resumed bool) {
	switch {
	case !ok:
		c.FailedHandshake.Add(1)
	case resumed:
		c.Sess.Add(1)
		c.ReusedSess.Add(1)
	default:
		c.Sess.Add(1)
	}
}

// cumulative lists the counters a reload carries over.
func (c *SSLCounters) cumulative() []*atomic.Int64 {
	return []*atomic.Int64{&c.Sess, &c.ReusedSess, &c.FailedHandshake}
}
