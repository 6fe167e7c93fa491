package stats

import (
	"fmt"

	"github.com/fulcrum-proxy/fulcrum/proxy"
)

// stateClass is the HTML page's CSS class for a server row, after the
// colours of HAProxy's page: up green, going down yellow, going up orange,
// down red, maintenance brown, drain blue, soft-stopped (NOLB) and no check
// their own shades. It follows proxy.(*ServerSnapshot).Status.
func stateClass(s *proxy.ServerSnapshot) string {
	if s.Admin == proxy.AdminMaint {
		return "maint"
	}
	ck := s.Check
	if s.Op == proxy.OpStopping {
		return "nolb"
	}
	if s.Op == proxy.OpUp {
		switch {
		case s.Admin == proxy.AdminDrain:
			return "drain"
		case ck == nil:
			return "nocheck"
		case ck.Health < ck.Rise+ck.Fall-1:
			return "going-down"
		}
		return "up"
	}
	if (s.Agent == nil || s.Agent.Health > 0) && ck != nil && ck.Health > 0 {
		return "going-up"
	}
	return "down"
}

// backendStatus is the BACKEND row's status: UP when the servers in use
// have a total weight above 0 or there is no server at all, else DOWN; with
// the up/no-maint options, followed by " (up/total)".
func backendStatus(r *row) string {
	st := "DOWN"
	if r.agg.weight > 0 || len(r.be.Servers) == 0 {
		st = "UP"
	}
	if r.f.Up || r.f.NoMaint {
		st += fmt.Sprintf(" (%d/%d)", r.agg.up, r.agg.total)
	}
	return st
}

// frontendStatus is OPEN, PAUSED (disable frontend), or STOP once the
// frontend was shut down or the proxy is stopping.
func frontendStatus(r *row) string {
	if r.snap.Stopping {
		return "STOP"
	}
	if r.fe.State != "" {
		return r.fe.State
	}
	return "OPEN"
}
