package queue

import "time"

// WaitEnd is how a wait for a slot (WaitFunc) ended.
type WaitEnd int

// The ways a wait ends.
const (
	WaitServed  WaitEnd = iota // the Pending was handed a slot
	WaitTimeout                // the deadline passed
	WaitGone                   // the client went away
)

// WaitFunc blocks until p is served (p.Ready receives, p.Wake is woken),
// deadline passes (zero: no deadline) or the client goes away. Each engine
// watches its client its own way (the HTTP/1 engine with a read, a TCP or
// body-carrying client with a poll for its close); ChanWait only waits.
type WaitFunc func(p *Pending, deadline time.Time) WaitEnd

// ChanWait waits for p's Ready channel or the deadline; it cannot see a
// client go away.
func ChanWait(p *Pending, deadline time.Time) WaitEnd {
	if deadline.IsZero() {
		<-p.Ready()
		return WaitServed
	}
	t := time.NewTimer(time.Until(deadline))
	defer t.Stop()
	select {
	case <-p.Ready():
		return WaitServed
	case <-t.C:
		return WaitTimeout
	}
}
