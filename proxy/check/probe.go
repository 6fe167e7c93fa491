package check

import (
	"context"
	"errors"
	"net"
	"os"
	"syscall"
	"time"
)

// Probe is one check type: tcp, http or agent. A probe opens its own
// connection, does its exchange and closes it.
type Probe interface {
	// Run probes addr ("host:port") once and returns the outcome. connect
	// bounds the TCP connect, read the rest of the exchange. Run returns
	// early when ctx ends (the checker is stopping).
	Run(ctx context.Context, addr string, connect, read time.Duration) Result
}

// Result is the outcome of one probe.
type Result struct {
	Status Status
	Code   int    // L7 status (http), 0 = none
	Info   string // last_chk detail: "Connection refused", a reason phrase

	// Agent is the agent's parsed reply, for agent probes that got a line.
	Agent *AgentReply
}

// ConnPrep readies a check's new connection before its exchange, within
// deadline: the server's check_send_proxy and check_ssl
// (proxy.Server.CheckConn). It returns the connection to use, and whether
// a TLS handshake ran (its failure is then a layer 6 one).
type ConnPrep func(c net.Conn, deadline time.Time) (net.Conn, bool, error)

// dialPrep connects as dial does, then readies the connection with prep
// (nil: nothing to do) within timeout: a failed TLS handshake is L6TOUT
// or L6RSP, a failed PROXY header write SOCKERR. tls reports a completed
// TLS handshake (a tcp check then passes with L6OK).
func dialPrep(ctx context.Context, addr string, timeout time.Duration, prep ConnPrep) (c net.Conn, tls bool, fail *Result) {
	c, fail = dial(ctx, addr, timeout)
	if fail != nil || prep == nil {
		return c, false, fail
	}
	stop := context.AfterFunc(ctx, func() { c.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	pc, hs, err := prep(c, time.Now().Add(timeout))
	switch {
	case err == nil:
		return pc, hs, nil
	case hs && isTimeout(err):
		fail = &Result{Status: StatusL6TOUT}
	case hs:
		fail = &Result{Status: StatusL6RSP, Info: "SSL handshake failure"}
	default:
		fail = &Result{Status: StatusSOCKERR, Info: errText(err)}
	}
	c.Close()
	return nil, false, fail
}

// dial connects to addr within timeout and maps a failure to L4TOUT,
// L4CON or SOCKERR with HAProxy's detail text.
func dial(ctx context.Context, addr string, timeout time.Duration) (net.Conn, *Result) {
	d := net.Dialer{Timeout: timeout}
	c, err := d.DialContext(ctx, "tcp", addr)
	if err == nil {
		return c, nil
	}
	var ne net.Error
	switch {
	case errors.As(err, &ne) && ne.Timeout():
		return nil, &Result{Status: StatusL4TOUT}
	case errors.Is(err, syscall.ECONNREFUSED):
		return nil, &Result{Status: StatusL4CON, Info: "Connection refused"}
	case errors.Is(err, syscall.ENETUNREACH), errors.Is(err, syscall.EHOSTUNREACH):
		return nil, &Result{Status: StatusL4CON, Info: "No route to host"}
	case errors.Is(err, syscall.ECONNRESET):
		return nil, &Result{Status: StatusL4CON, Info: "Connection reset by peer"}
	case errors.Is(err, syscall.EMFILE), errors.Is(err, syscall.ENFILE), errors.Is(err, syscall.EADDRNOTAVAIL):
		return nil, &Result{Status: StatusSOCKERR, Info: errText(err)}
	}
	return nil, &Result{Status: StatusL4CON, Info: errText(err)}
}

// errText is an error's innermost message ("connection reset by peer"),
// without Go's "dial tcp 1.2.3.4:5:" prefix.
func errText(err error) string {
	var se *os.SyscallError
	if errors.As(err, &se) {
		return se.Err.Error()
	}
	var oe *net.OpError
	if errors.As(err, &oe) && oe.Err != nil {
		return oe.Err.Error()
	}
	return err.Error()
}

// isTimeout reports whether err is a deadline expiry.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
