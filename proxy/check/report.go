package check

import (
	"time"

	"github.com/fulcrum-proxy/fulcrum/proxy"
)

// ReportChecks fills the check parts of a server's snapshot (proxy calls it
// from Snapshot, without the backend lock). It first catches up with an
// admin state changed elsewhere, so that the snapshot right after `enable
// server` already shows "UP 1/<fall>".
func (cs *Server) ReportChecks(now time.Time, ss *proxy.ServerSnapshot) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	cs.syncLocked()
	// The snapshot's admin and op states were read before the sync.
	ss.Admin, ss.Op = cs.srv.Admin(), cs.srv.Op()

	h, a := &cs.health, &cs.agent
	hs := &ss.HealthState
	hs.CheckStatus, hs.CheckResult, hs.CheckHealth = int(h.status), int(h.status.Verdict()), h.health
	hs.CheckState, hs.AgentState = stateBits(h, cs.inMaint), stateBits(a, cs.inMaint)
	if a.configured {
		hs.AgentState |= 0x10
		hs.AgentAddr, hs.AgentPort = cs.agentAddr, cs.agentPort
	}
	hs.CheckPort = cs.checkPort

	if h.configured && h.enabled {
		downtime := cs.downtime
		if ss.Op == proxy.OpDown {
			since := cs.downSince
			if since.IsZero() {
				since = ss.LastChange // DOWN set outside the checks
			}
			downtime += now.Sub(since)
		}
		c := &proxy.CheckSnapshot{
			Status: h.status.String(), Desc: h.status.Desc(), Info: h.info,
			Code: h.code, Duration: ms(h.duration), Running: h.running,
			Rise: h.rise, Fall: h.fall, Health: h.health,
			Failed: cs.failed, Downs: cs.downs, Downtime: int64(downtime / time.Second),
			Paused: cs.inMaint, Observe: cs.observe != "", HanaFail: cs.hanafail,
		}
		if !h.status.hasL7Data() && h.status != StatusHANA {
			c.Code = 0
		}
		if cs.inMaint {
			c.Status, c.Desc, c.Code, c.Duration, c.Running = "", "", 0, -1, false
		}
		ss.Check = c
	}
	if a.configured && a.enabled {
		ss.Agent = &proxy.AgentSnapshot{
			Status: a.status.String(), Desc: a.status.Desc(), Info: a.info,
			Code: a.code, Duration: ms(a.duration), Running: a.running,
			Rise: a.rise, Fall: a.fall, Health: a.health, BadReplies: a.badReplies,
		}
	}
}

// stateBits is HAProxy's srv_check_state / srv_agent_state mask.
func stateBits(st *checkState, paused bool) int {
	if !st.configured {
		return 0
	}
	b := 0x02
	if st.running {
		b |= 0x01
	}
	if st.enabled {
		b |= 0x04
	}
	if paused {
		b |= 0x08
	}
	return b
}

// ms is d in whole milliseconds, -1 for unknown.
func ms(d time.Duration) int64 {
	if d < 0 {
		return -1
	}
	return d.Milliseconds()
}

var _ proxy.CheckReporter = (*Server)(nil)
