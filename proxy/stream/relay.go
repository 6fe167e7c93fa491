package stream

import "github.com/fulcrum-proxy/fulcrum/proxy/netio"

// RelayOutcome is how a relay that ended as in and out say (netio.Relay's
// directions: in from the client, out from the server) reads in the log
// and the counters: who ended it, as netio.EndedBy tells, as a mode tcp
// session's rows, or an HTTP/1 tunnel's after its 101 (tunnel), whose
// clean end is Served.
func RelayOutcome(in, out netio.CopyEnd, tunnel bool) Outcome {
	pick := func(tcp, tun Outcome) Outcome {
		if tunnel {
			return tun
		}
		return tcp
	}
	switch netio.EndedBy(in, out) {
	case netio.EndClean:
		return pick(TCPDone, Served)
	case netio.EndClientTimeout:
		return pick(TCPClientTimeout, TunnelClientTimeout)
	case netio.EndServerTimeout:
		return pick(TCPServerTimeout, TunnelServerTimeout)
	case netio.EndClient:
		return pick(TCPClientAbort, TunnelClientAbort)
	default:
		return pick(TCPServerAbort, TunnelServerAbort)
	}
}
