package check

import (
	"strings"
	"time"

	"github.com/fulcrum-proxy/fulcrum/proxy"
)

// applyAgent applies one agent-check result (HAProxy src/tcpcheck.c
// tcpcheck_agent_expect_reply, agent-check.md section 4): first the admin
// word, then the weight and maxconn, last the up/down verdict, so that a
// "ready" can never undo the verdict of the same reply. Words a reply does
// not mention keep their value. Called by the checker loop, without cs.mu.
func (cs *Server) applyAgent(r Result, d time.Duration) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	st := &cs.agent
	st.running = false
	cs.syncLocked()
	if !st.enabled {
		return
	}
	if r.Agent == nil {
		// Unreachable agent: status and detail only; the counter and the
		// server stay as they are.
		st.setStatus(r.Status, -1, r.Info, d)
		return
	}
	reply := r.Agent
	if reply.Incomplete || reply.Unknown != "" {
		// A reply that cannot be parsed (whole or in part) is counted
		// (agent_bad_replies in the snapshot) and logged when it differs
		// from the last one logged (an agent polled every inter that
		// keeps answering it logged a warning each time; HAProxy logs
		// none); its unknown words change nothing.
		st.badReplies++
		bad := reply.Unknown
		if reply.Incomplete {
			bad += "\x00incomplete" // apart from any word
		}
		if bad != st.badLogged {
			st.badLogged = bad
			cs.log.Warn().Str("backend", cs.srv.Backend.Name).Str("server", cs.srv.Name).
				Str("unknown", reply.Unknown).Bool("incomplete", reply.Incomplete).
				Int64("bad_replies", st.badReplies).Msg("agent reply not understood")
		}
	} else {
		st.badLogged = ""
	}
	if reply.Incomplete {
		st.info = "Ignoring incomplete line from agent"
		return
	}
	switch reply.Admin {
	case "drain":
		if cs.srv.Admin() != proxy.AdminMaint {
			cs.be.SetAdmin(cs.srv, proxy.AdminDrain)
		}
	case "maint":
		cs.be.SetAdmin(cs.srv, proxy.AdminMaint)
	case "ready":
		cs.be.SetAdmin(cs.srv, proxy.AdminReady)
	}
	cs.syncLocked()
	var warning string
	if reply.Weight != "" {
		if w, msg := agentWeight(reply.Weight, cs.srv.InitialWeight); msg != "" {
			warning = msg
		} else {
			cs.be.SetWeight(cs.srv, w)
		}
	}
	if reply.MaxConn != "" {
		if n, msg := agentMaxConn(reply.MaxConn); msg != "" {
			if warning == "" {
				warning = msg
			}
		} else {
			cs.be.SetMaxConn(cs.srv, n)
		}
	}
	switch {
	case reply.State != "":
		info := "via agent : " + reply.State
		if reply.Comment != "" {
			info += " (" + reply.Comment + ")"
		}
		status := StatusL7STS
		if strings.EqualFold(reply.State, "up") {
			status = StatusL7OK
		}
		st.setStatus(status, 0, info, d)
	case reply.Unknown != "":
		st.setStatus(StatusCHECKED, -1, "agent reports an error : "+reply.Unknown, d)
	case warning != "":
		st.setStatus(StatusCHECKED, -1, "agent warns : "+warning, d)
	default:
		st.setStatus(StatusCHECKED, -1, "", d)
	}
	cs.countLocked(kindAgent)
}
