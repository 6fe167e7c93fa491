package check

import "github.com/fulcrum-proxy/fulcrum/proxy"

// Inherit copies the check state of old's servers into the servers of p
// that keep their backend and name, for a reload (proxy.NewFrom copies the
// rest of their state). It must run before New(p) and after old's Checker
// stopped, so that no probe changes old's state meanwhile.
//
// What stays, when the new configuration still has the check: the health
// and agent counters (clamped to the new rise/fall), last statuses, a check
// disabled from the Runtime API, the counters stats print (chkfail,
// chkdown, hanafail, downtime) and whether the server was seen in MAINT.
func Inherit(p, old *proxy.Proxy) {
	for _, b := range p.Backends {
		ob := old.Backend(b.Name)
		if ob == nil {
			continue
		}
		for _, s := range b.Servers() {
			os := ob.Server(s.Name)
			if os == nil {
				continue
			}
			ocs, ok := os.CheckReporter().(*Server)
			if !ok {
				continue
			}
			cs := Of(s)
			ocs.mu.Lock()
			cs.mu.Lock()
			inheritCheck(&cs.health, &ocs.health)
			inheritCheck(&cs.agent, &ocs.agent)
			cs.failed, cs.downs, cs.hanafail = ocs.failed, ocs.downs, ocs.hanafail
			cs.downtime, cs.downSince = ocs.downtime, ocs.downSince
			cs.inMaint = s.Admin() == proxy.AdminMaint
			cs.inDrain = s.Admin() == proxy.AdminDrain
			cs.awaitChecks = ocs.awaitChecks && s.Op() == proxy.OpDown
			cs.obsErrs.Store(ocs.obsErrs.Load())
			cs.mu.Unlock()
			ocs.mu.Unlock()
		}
	}
}

// inheritCheck copies the state of one check when it is configured in both
// configurations. The counter keeps its meaning under a new rise/fall: a
// server that was up stays up, one that was down stays down.
func inheritCheck(st, old *checkState) {
	if !st.configured || !old.configured {
		return
	}
	st.enabled = old.enabled
	st.status, st.code, st.info, st.duration = old.status, old.code, old.info, old.duration
	switch {
	case old.health >= old.rise: // up: keep the distance from the top
		st.health = max(st.rise, st.max()-(old.max()-old.health))
	default: // down or going up: keep the distance from 0
		st.health = min(old.health, st.rise-1)
	}
}

// RestoreState applies the check part of server-state lines read by
// proxy.LoadServerState at start (global state_file): the health counter,
// kept on the side of rise the server's restored state is on, and a health
// or agent check disabled at runtime. It must run before New(p).
func RestoreState(saved []proxy.SavedChecks) {
	const configured, enabled = 0x02, 0x04 // CHK_ST_CONFIGURED, CHK_ST_ENABLED
	for _, sc := range saved {
		cs := Of(sc.Server)
		cs.mu.Lock()
		st := &cs.health
		if st.configured {
			st.health = min(max(sc.CheckHealth, 0), st.max())
			if sc.Server.Op() == proxy.OpUp {
				st.health = max(st.health, st.rise)
			} else {
				st.health = min(st.health, st.rise-1)
			}
			if sc.CheckState&configured != 0 && sc.CheckState&enabled == 0 {
				st.enabled = false
			}
		}
		if cs.agent.configured && sc.AgentState&configured != 0 && sc.AgentState&enabled == 0 {
			cs.agent.enabled = false
		}
		cs.mu.Unlock()
	}
}
