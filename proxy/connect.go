package proxy

import (
	"net"
	"time"

	"github.com/fulcrum-proxy/fulcrum/proxy/lb"
)

// connectServer connects to srv with the backend's timeout_connect,
// retrying a failed connect up to `retries` times (each counted in wretr).
// With `redispatch`, the last retry goes to another server chosen by the
// algorithm, as HAProxy's option redispatch: the session moves there
// (unassigned from srv, assigned to the new one, counted in wredis) and that
// server is returned. On final failure econ is counted on the last server
// tried, which is returned with the error. Every attempt is reported to the
// server's traffic observer (passive health checks). The connect time of
// the successful attempt is returned in ms.
func connectServer(be *Backend, srv *Server, view *lb.Request) (*Server, net.Conn, int64, error) {
	d := net.Dialer{Timeout: be.Conf.TimeoutConnect}
	retries := be.Conf.Retries
	for attempt := 0; ; attempt++ {
		start := time.Now()
		c, err := d.Dial("tcp", srv.Addr())
		srv.observeConnect(err == nil)
		if err == nil { // Go sets TCP_NODELAY on TCP connections by default
			return srv, c, time.Since(start).Milliseconds(), nil
		}
		if attempt >= retries {
			srv.Counters.Econ.Add(1)
			be.Counters.Econ.Add(1)
			return srv, nil, -1, err
		}
		if attempt == retries-1 && be.Conf.Redispatch {
			if other := be.assign(view, srv, start); other != nil {
				be.unassign(srv)
				if other != srv {
					other.Counters.Wredis.Add(1)
					be.Counters.Wredis.Add(1)
					srv = other
					continue
				}
			}
		}
		srv.Counters.Wretr.Add(1)
		be.Counters.Wretr.Add(1)
	}
}
