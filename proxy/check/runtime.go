package check

import (
	"errors"
	"time"

	"github.com/fulcrum-proxy/fulcrum/proxy"
)

// The operations of the Runtime API and the stats page on checks
// (runtime-api.md 4.14, 4.16, 4.17). They work whether or not a Checker
// runs: the state is the server's (Of). The caller prints HAProxy's replies;
// the errors below name the situations.

// Sentinel errors of the runtime operations.
var (
	// ErrHealthNotConfigured: the server has no `check` in the
	// configuration (HAProxy: "Health check was not configured on this
	// server, cannot enable." / "health checks are not enabled on this
	// server").
	ErrHealthNotConfigured = errors.New("health check not configured")
	// ErrAgentNotConfigured: the server has no agent (HAProxy: "Agent was
	// not configured on this server, cannot enable.").
	ErrAgentNotConfigured = errors.New("agent check not configured")
	// ErrAgentNotEnabled: the agent is not configured or is disabled
	// (HAProxy: "agent checks are not enabled on this server.").
	ErrAgentNotEnabled = errors.New("agent checks not enabled")
)

// Health is a verdict forced by `set server <b>/<s> health`.
type Health int

// Forced health verdicts.
const (
	HealthUp       Health = iota // counter to its maximum, server UP
	HealthStopping               // server NOLB, counter unchanged
	HealthDown                   // counter to 0, server DOWN
)

// SetHealth forces the health-check verdict, as `set server <b>/<s> health
// up|stopping|down`: it works even on a server without checks, and the next
// check result moves the counter from there (set-server-state.txt).
func (cs *Server) SetHealth(h Health) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	cs.syncLocked()
	st := &cs.health
	switch h {
	case HealthUp:
		st.health = st.max()
		cs.setRunningLocked("changed from CLI", st)
	case HealthStopping:
		cs.setStoppingLocked("changed from CLI", st)
	case HealthDown:
		st.health = 0
		cs.setStoppedLocked("changed from CLI", st)
	}
}

// SetAgent forces the agent verdict, as `set server <b>/<s> agent up|down`;
// the next agent reply overrides it. ErrAgentNotEnabled without an enabled
// agent.
func (cs *Server) SetAgent(up bool) error {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if !cs.agent.enabled {
		return ErrAgentNotEnabled
	}
	cs.syncLocked()
	if up {
		cs.agent.health = cs.agent.max()
		cs.setRunningLocked("changed from CLI", &cs.agent)
	} else {
		cs.agent.health = 0
		cs.setStoppedLocked("changed from CLI", &cs.agent)
	}
	return nil
}

// EnableHealth resumes health checks (`enable health`): the counter keeps
// its value. ErrHealthNotConfigured on a server without check.
func (cs *Server) EnableHealth() error {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if !cs.health.configured {
		return ErrHealthNotConfigured
	}
	if !cs.health.enabled {
		cs.health.enabled = true
		cs.wakeLocked(kindHealth, 0)
	}
	return nil
}

// DisableHealth stops health checks (`disable health`): the server shows
// "no check" and keeps its operational state. Nothing happens on a server
// without check.
func (cs *Server) DisableHealth() {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	cs.health.enabled = false
	cs.health.running = false
}

// EnableAgent resumes agent checks (`enable agent`); the next reply applies.
// ErrAgentNotConfigured on a server without agent.
func (cs *Server) EnableAgent() error {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if !cs.agent.configured {
		return ErrAgentNotConfigured
	}
	if !cs.agent.enabled {
		cs.agent.enabled = true
		cs.agent.status, cs.agent.code, cs.agent.info, cs.agent.duration = StatusINI, -1, "", -1
		cs.wakeLocked(kindAgent, 0)
	}
	return nil
}

// DisableAgent stops agent checks (`disable agent`): the agent columns go
// empty and the weight the agent set stays. A server the agent had taken
// DOWN comes back with its next passing health check, or at once when it
// has no health check.
func (cs *Server) DisableAgent() {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if !cs.agent.enabled {
		return
	}
	cs.agent.enabled = false
	cs.agent.running = false
	wasDown := cs.agent.health == 0
	cs.agent.health = cs.agent.max()
	if wasDown && !cs.health.enabled {
		cs.setRunningLocked("agent disabled", nil)
	}
}

// SetAdmin changes the server's admin state as `set server <b>/<s> state`
// and `enable|disable server` do, keeping the checks in step: MAINT pauses
// them (and counts a down transition), leaving MAINT restarts the health
// counter at rise. Returns the previous state. Backend.SetAdmin alone also
// works; the checks then catch up at their next probe or snapshot.
func (cs *Server) SetAdmin(a proxy.AdminState) proxy.AdminState {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	old := cs.be.SetAdmin(cs.srv, a)
	cs.syncLocked()
	return old
}

// SetAgentPort, SetAgentAddr and SetAgentSend change the agent's target and
// probe string from the next probe on (`set server <b>/<s> agent-port|
// agent-addr|agent-send`). ErrAgentNotEnabled without an enabled agent.
func (cs *Server) SetAgentPort(port int) error {
	return cs.agentSetting(func() { cs.agentPort = port })
}

// SetAgentAddr: see SetAgentPort. host "" means the server's host.
func (cs *Server) SetAgentAddr(host string) error {
	return cs.agentSetting(func() { cs.agentAddr = host })
}

// SetAgentSend: see SetAgentPort.
func (cs *Server) SetAgentSend(send string) error {
	return cs.agentSetting(func() { cs.agentSend = []byte(send) })
}

func (cs *Server) agentSetting(set func()) error {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if !cs.agent.enabled {
		return ErrAgentNotEnabled
	}
	set()
	return nil
}

// SetCheckTarget changes where health checks connect (`set server <b>/<s>
// check-addr|check-port`): host "" and port 0 mean the server's own.
// ErrHealthNotConfigured on a server without check.
func (cs *Server) SetCheckTarget(host string, port int) error {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if !cs.health.configured {
		return ErrHealthNotConfigured
	}
	cs.checkAddr, cs.checkPort = host, port
	return nil
}

// Info is a read-only copy of the settings the Runtime API prints or
// validates against.
type Info struct {
	HealthConfigured, HealthEnabled bool
	AgentConfigured, AgentEnabled   bool
	CheckAddr                       string // "" = the server's
	CheckPort                       int    // 0 = the server's
	AgentAddr                       string // "" = the server's host
	AgentPort                       int
	AgentSend                       string
	LastHealthCheck                 time.Duration // duration of the last health probe, -1 = none
}

// Info returns the server's check settings.
func (cs *Server) Info() Info {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	return Info{
		HealthConfigured: cs.health.configured, HealthEnabled: cs.health.enabled,
		AgentConfigured: cs.agent.configured, AgentEnabled: cs.agent.enabled,
		CheckAddr: cs.checkAddr, CheckPort: cs.checkPort,
		AgentAddr: cs.agentAddr, AgentPort: cs.agentPort, AgentSend: string(cs.agentSend),
		LastHealthCheck: cs.health.duration,
	}
}
