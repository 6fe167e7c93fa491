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
// owned by the goroutine that uses the connection.
type Deadlines struct {
	read, write time.Time
}

// ArmRead makes c's reads fail d after now (d <= 0: no timeout).
func (dl *Deadlines) ArmRead(c net.Conn, now time.Time, d time.Duration) {
	if d <= 0 {
		return
	}
	if want := now.Add(d); dl.read.IsZero() || want.Before(dl.read) || want.Sub(dl.read) >= d/8 {
		dl.read = want
		c.SetReadDeadline(want)
	}
}

// ArmWrite makes c's writes fail d after now (d <= 0: no timeout).
func (dl *Deadlines) ArmWrite(c net.Conn, now time.Time, d time.Duration) {
	if d <= 0 {
		return
	}
	if want := now.Add(d); dl.write.IsZero() || want.Before(dl.write) || want.Sub(dl.write) >= d/8 {
		dl.write = want
		c.SetWriteDeadline(want)
	}
}

// ForgetWrite forgets the write deadline armed, for a connection whose
// layer dropped it (epoll.Conn.Hibernate): the next ArmWrite arms one.
func (dl *Deadlines) ForgetWrite() { dl.write = time.Time{} }

// ExpireRead makes c's pending and future reads fail now.
func (dl *Deadlines) ExpireRead(c net.Conn) {
	dl.read = time.Unix(1, 0)
	c.SetReadDeadline(dl.read)
}

// Read returns the read deadline last armed (zero: none).
func (dl *Deadlines) Read() time.Time { return dl.read }
