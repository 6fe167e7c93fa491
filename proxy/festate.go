package proxy

import (
	"errors"
	"fmt"
	"time"
)

// Frontend states an operator sets from the Runtime API (HAProxy 2.6's
// "disable frontend", "enable frontend" and "shutdown frontend"): a
// paused frontend keeps its ports but accepts nothing (connections are
// refused) until it is enabled again; a stopped one has closed its
// listeners for good (a reload opens them again). Connections already
// accepted go on while paused; once stopped, HTTP ones close after their
// next response (Shutdown).
const (
	feOpen int = iota
	fePaused
	feStopped
)

// Errors of Pause, Resume and Shutdown, worded as HAProxy's replies
// (src/proxy.c, cli_parse_{disable,enable,shutdown}_frontend).
var (
	ErrFrontendShutDown      = errors.New("Frontend was previously shut down")
	ErrFrontendAlreadyPaused = errors.New("All sockets are already disabled.")
	ErrFrontendAlreadyOpen   = errors.New("All sockets are already enabled.")
	ErrFrontendAlreadyDown   = errors.New("Frontend was already shut down.")
)

// State returns "OPEN", "PAUSED" or "STOP" (the FRONTEND row's status;
// a stopping proxy's frontends are STOP too).
func (fe *Frontend) State() string {
	fe.mu.Lock()
	defer fe.mu.Unlock()
	switch fe.state {
	case fePaused:
		return "PAUSED"
	case feStopped:
		return "STOP"
	}
	return "OPEN"
}

// Pause stops fe accepting: each listener's socket stops listening (new
// connections are refused, as HAProxy's pause) and its accept loop waits
// for Resume. Errors: ErrFrontendShutDown, ErrFrontendAlreadyPaused, or
// the first listener's that could not be suspended (those suspended
// before it are resumed).
func (fe *Frontend) Pause() error {
	fe.mu.Lock()
	defer fe.mu.Unlock()
	switch fe.state {
	case feStopped:
		return ErrFrontendShutDown
	case fePaused:
		return ErrFrontendAlreadyPaused
	}
	for i, a := range fe.listeners {
		if err := suspendListener(a.l); err != nil {
			for _, b := range fe.listeners[:i] {
				resumeListener(b.l)
			}
			return err
		}
	}
	fe.state = fePaused
	fe.resumed = make(chan struct{})
	fe.pauses.Add(1)
	for _, a := range fe.listeners {
		wakeAccept(a, time.Unix(1, 0)) // a blocked Accept returns, and waits
	}
	fe.p.LogEvent(logWarning, "Paused frontend "+fe.Name+".")
	return nil
}

// logWarning is syslog's warning severity, HAProxy's for its frontends'
// pause, resume and stop events.
const logWarning = 4

// Resume makes a paused fe accept again. Errors: ErrFrontendShutDown,
// ErrFrontendAlreadyOpen, or the first listener's that could not listen
// again (HAProxy: "port conflict?"); fe then stays paused.
func (fe *Frontend) Resume() error {
	fe.mu.Lock()
	defer fe.mu.Unlock()
	switch fe.state {
	case feStopped:
		return ErrFrontendShutDown
	case feOpen:
		return ErrFrontendAlreadyOpen
	}
	for _, a := range fe.listeners {
		if err := resumeListener(a.l); err != nil {
			return err
		}
	}
	for _, a := range fe.listeners {
		wakeAccept(a, time.Time{})
	}
	fe.state = feOpen
	close(fe.resumed)
	fe.resumed = nil
	fe.p.LogEvent(logWarning, "Resumed frontend "+fe.Name+".")
	return nil
}

// Shutdown closes fe's listeners for good (their ports are released)
// and ends its HTTP connections as HAProxy's stop_proxy does (measured):
// each closes after its next response, which says Connection: close (an
// idle keep-alive client's next request is still answered: closing it
// at once made wrk read errors where HAProxy's had none), HTTP/2 ones
// with a GOAWAY once their streams are done. TCP sessions go on.
// ErrFrontendAlreadyDown when it was.
func (fe *Frontend) Shutdown() error {
	fe.mu.Lock()
	if fe.state == feStopped {
		fe.mu.Unlock()
		return ErrFrontendAlreadyDown
	}
	if fe.resumed != nil {
		close(fe.resumed) // the waiting accept loops find their listener closed
		fe.resumed = nil
	}
	fe.state = feStopped
	ls := fe.listeners
	fe.listeners = nil // not handed over to a reload
	fe.mu.Unlock()
	for _, a := range ls {
		a.l.Close()
	}
	fe.down.Store(true)
	if fe.h2 != nil {
		fe.h2.Shutdown()
	}
	var beConns int64 // a listen section's own backend, as HAProxy's one proxy
	if b := fe.p.Backend(fe.Name); b != nil {
		beConns = b.Counters.Stot.Load()
	}
	fe.p.LogEvent(logWarning, fmt.Sprintf("Proxy %s stopped (cumulated conns: FE: %d, BE: %d).", fe.Name, fe.Counters.Stot.Load(), beConns))
	return nil
}

// pausedWait returns the channel closed when fe resumes, or nil when fe
// is not paused.
func (fe *Frontend) pausedWait() <-chan struct{} {
	fe.mu.Lock()
	defer fe.mu.Unlock()
	return fe.resumed
}

// wakeAccept sets a's Accept deadline (a past one wakes a blocked Accept).
func wakeAccept(a *acceptor, t time.Time) {
	if d, ok := a.l.(interface{ SetDeadline(time.Time) error }); ok {
		d.SetDeadline(t)
	}
}
