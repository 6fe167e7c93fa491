package check

import (
	"context"
	"time"
)

// tcpProbe is the default health check (HAProxy's check without option
// httpchk): the server passes when a TCP connection to it succeeds, L4OK;
// a refused connection is L4CON, no answer within the connect timeout
// L4TOUT. The connection is closed at once. With check_ssl the TLS
// handshake must pass too: L6OK, else L6RSP or L6TOUT.
type tcpProbe struct {
	prep ConnPrep // the server's PROXY header and TLS, nil for none
}

// Run connects to addr and closes the connection.
func (p tcpProbe) Run(ctx context.Context, addr string, connect, _ time.Duration) Result {
	c, tls, fail := dialPrep(ctx, addr, connect, p.prep)
	if fail != nil {
		return *fail
	}
	c.Close()
	if tls {
		return Result{Status: StatusL6OK}
	}
	return Result{Status: StatusL4OK}
}

var _ Probe = tcpProbe{}
