package netio

import (
	"net"
	"time"
)

// Deadlines remembers the read and write deadlines armed on one connection.
// Re-arming a deadline updates a runtime timer; on the request path that
// would happen several times per request, so an inactivity timeout is only
// pushed forward once an eighth of it has gone by: the connection is then
// cut between 7/8 and 8/8 of the timeout after the last activity, never
// earlier. A deadline that comes sooner than the armed one (a shorter
// timeout taking over, as timeout_http_request after a body read under
// timeout_client) is always armed. The zero value has none armed; it is
// owned by the goroutine that uses the connection. The deadlines are
// kept as Unix ns (0: none), 16 bytes: every idle connection has one.
type Deadlines struct {
	read, write int64
}

// ArmRead makes c's reads fail d after now (d <= 0: no timeout).
func (dl *Deadlines) ArmRead(c net.Conn, now time.Time, d time.Duration) {
	if d <= 0 {
		return
	}
	if want := now.Add(d); dl.read == 0 || rearm(want.UnixNano(), dl.read, d) {
		dl.read = want.UnixNano()
		c.SetReadDeadline(want)
	}
}

// ArmWrite makes c's writes fail d after now (d <= 0: no timeout).
func (dl *Deadlines) ArmWrite(c net.Conn, now time.Time, d time.Duration) {
	if d <= 0 {
		return
	}
	if want := now.Add(d); dl.write == 0 || rearm(want.UnixNano(), dl.write, d) {
		dl.write = want.UnixNano()
		c.SetWriteDeadline(want)
	}
}

// rearm reports whether the deadline want (Unix ns) is to replace the one
// armed for a timeout d: it comes sooner, or an eighth of d later or more.
func rearm(want, armed int64, d time.Duration) bool {
	return want < armed || time.Duration(want-armed) >= d/8
}

// SetRead makes c's reads fail at t exactly (zero: never), whatever was
// armed: a deadline computed from activity elsewhere (an upload's last
// write) that ArmRead's eighth would leave where it was.
func (dl *Deadlines) SetRead(c net.Conn, t time.Time) {
	if t.IsZero() {
		dl.read = 0
	} else {
		dl.read = t.UnixNano()
	}
	c.SetReadDeadline(t)
}

// ForgetWrite forgets the write deadline armed, for a connection whose
// layer dropped it (epoll.Conn.Hibernate): the next ArmWrite arms one.
func (dl *Deadlines) ForgetWrite() { dl.write = 0 }

// ExpireRead makes c's pending and future reads fail now.
func (dl *Deadlines) ExpireRead(c net.Conn) {
	dl.read = int64(time.Second)
	c.SetReadDeadline(time.Unix(1, 0))
}

// Read returns the read deadline last armed (zero: none).
func (dl *Deadlines) Read() time.Time {
	if dl.read == 0 {
		return time.Time{}
	}
	return time.Unix(0, dl.read)
}
