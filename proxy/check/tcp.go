package check

import (
	"context"
	"time"
)

// tcpProbe is the default health check (HAProxy's check without option
// httpchk): the server passes when a TCP connection to it succeeds, L4OK;
// a refused connection is L4CON, no answer within the connect timeout
// L4TOUT. The connection is closed at once.
type tcpProbe struct{}

// Run connects to addr and closes the connection.
func (tcpProbe) Run(ctx context.Context, addr string, connect, _ time.Duration) Result {
	c, fail := dial(ctx, addr, connect)
	if fail != nil {
		return *fail
	}
	c.Close()
	return Result{Status: StatusL4OK}
}

var _ Probe = tcpProbe{}
