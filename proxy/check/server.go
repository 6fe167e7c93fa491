package check

import (
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fulcrum-proxy/fulcrum/proxy"
	"github.com/fulcrum-proxy/fulcrum/proxy/syslog"
	"github.com/rs/zerolog"
)

// Backend is all the checker changes in a server's backend; *proxy.Backend
// implements it. Each method takes the backend's lock and re-runs its
// usable-set computation (and the algorithm's hooks, slowstart included,
// for SetOp(s, OpUp)).
type Backend interface {
	SetOp(s *proxy.Server, o proxy.OpState) proxy.OpState
	SetAdmin(s *proxy.Server, a proxy.AdminState) proxy.AdminState
	SetWeight(s *proxy.Server, w int) (int, error)
	SetMaxConn(s *proxy.Server, n int) int
	ServersUp() (active, backup int)
}

var _ Backend = (*proxy.Backend)(nil)

// kind tells the two active checks of a server apart.
type kind int

const (
	kindHealth kind = iota
	kindAgent
)

func (k kind) String() string {
	if k == kindAgent {
		return "agent"
	}
	return "health"
}

// checkState is one active check of a server: HAProxy's struct check,
// reduced to what fulcrum uses. Guarded by Server.mu.
type checkState struct {
	badReplies int64 // agent replies not understood (agent only)
	// badLogged is the reply not understood last logged ("" after one
	// understood): an agent that keeps answering the same is logged once.
	badLogged  string
	configured bool // set in the configuration
	enabled    bool // not disabled from the Runtime API
	rise, fall int
	health     int // in [0, rise+fall-1]; up when >= rise

	status   Status
	code     int           // L7 status; agent: 0 after an up/down verdict, -1 = none
	info     string        // last_chk / last_agt
	duration time.Duration // of the last probe, -1 = unknown
	running  bool          // a probe is in flight
}

// max is the top of the health counter.
func (st *checkState) max() int { return st.rise + st.fall - 1 }

// setStatus records a probe's outcome (HAProxy set_server_check_status,
// without the counter part).
func (st *checkState) setStatus(s Status, code int, info string, d time.Duration) {
	st.status, st.code, st.info, st.duration = s, code, info, d
}

// Server is the check state of one proxy.Server: its health check, its
// agent check and passive observation, the counters stats print, and the
// transitions between UP, DOWN and NOLB they cause. It is created once per
// server (Of) and lives as long as the server.
//
// Lock: mu guards every field below it; it is held while the backend is
// changed (Backend methods take the backend lock inside it), never the
// other way round.
type Server struct {
	srv  *proxy.Server
	be   Backend
	name string // "backend/server"

	obsErrs atomic.Int64 // consecutive errors seen by observe

	mu  sync.Mutex
	log zerolog.Logger
	// event sends a state change to the syslog targets as HAProxy's
	// send_log does (Proxy.LogEvent): severity, message.
	event      func(level int, msg string)
	health     checkState
	agent      checkState
	checkAddr  string // health-check host override, "" = the server's
	checkPort  int    // health-check port override, 0 = the server's
	agentAddr  string // "" = the server's host
	agentPort  int
	agentSend  []byte
	failed     int64 // chkfail
	downs      int64 // chkdown
	hanafail   int64
	downtime   time.Duration // accumulated, op DOWN periods that ended
	downSince  time.Time     // start of the current DOWN period, zero if not DOWN
	inMaint    bool          // MAINT as last seen: checks are paused
	inDrain    bool          // DRAIN (admin) as last seen: its lines are logged once
	observe    string        // "", "layer4", "layer7"
	errorLimit int
	onError    string
	fastinter  time.Duration
	wake       [2]chan time.Duration // checker loops' reschedule requests, nil if not running

	// awaitChecks is set for a server added at runtime with `check` that
	// never passed its checks: leaving MAINT, it stays DOWN until `rise`
	// passing checks bring it UP, instead of coming back UP at once as a
	// configured server does (fulcrum's; HAProxy 2.6 leaves the check of
	// an added server disabled until `enable health`).
	awaitChecks bool
}

// Of returns the check state of s, creating an idle one (nothing probes
// it until a Checker starts) on first use. The Runtime API and the stats
// page use it to force states and to enable or disable checks.
func Of(s *proxy.Server) *Server {
	if r, ok := s.CheckReporter().(*Server); ok {
		return r
	}
	cs := newServer(s)
	if !s.SetCheckReporter(cs) {
		return s.CheckReporter().(*Server)
	}
	return cs
}

// newServer builds the state of s from its configuration: a checked server
// starts UP with health = rise ("UP 1/<fall>" until its first check), as
// HAProxy.
func newServer(s *proxy.Server) *Server {
	cs := &Server{srv: s, be: s.Backend, name: s.Backend.Name + "/" + s.Name, log: zerolog.Nop(),
		event: s.Backend.LogEvent}
	var rise, fall int
	_, cs.fastinter, _, rise, fall = s.Conf.CheckTimes(s.Backend.Conf.Check)
	cs.health = checkState{configured: s.Conf.Check, enabled: s.Conf.Check, rise: rise, fall: fall, health: rise,
		status: StatusINI, code: 0, duration: -1}
	cs.agent = checkState{rise: 1, fall: 1, health: 1, status: StatusINI, code: -1, duration: -1}
	if a := s.Conf.Agent; a != nil {
		cs.agent.configured, cs.agent.enabled = true, true
		cs.agentAddr, cs.agentPort, cs.agentSend = a.Addr, a.Port, []byte(a.Send)
	}
	cs.observe, cs.errorLimit, cs.onError = s.Conf.Observe, s.Conf.ErrorLimit, s.Conf.OnError
	if cs.errorLimit <= 0 {
		cs.errorLimit = 10
	}
	cs.inMaint = s.Admin() == proxy.AdminMaint
	cs.inDrain = s.Admin() == proxy.AdminDrain
	if cs.inMaint {
		cs.health.health = 0
	}
	cs.awaitChecks = s.Dynamic() && cs.health.configured && s.Op() == proxy.OpDown
	if cs.awaitChecks {
		cs.health.health = 0
	}
	return cs
}

// Proxy returns the server this state belongs to.
func (cs *Server) Proxy() *proxy.Server { return cs.srv }

// healthTarget returns the address health checks connect to.
// cs.mu must be held.
func (cs *Server) healthTarget() string {
	host, port, err := net.SplitHostPort(cs.srv.Addr())
	if err != nil {
		return cs.srv.Addr()
	}
	if cs.checkAddr != "" {
		host = cs.checkAddr
	}
	if cs.checkPort != 0 {
		port = strconv.Itoa(cs.checkPort)
	}
	return net.JoinHostPort(host, port)
}

// agentTarget returns the address agent checks connect to.
// cs.mu must be held.
func (cs *Server) agentTarget() string {
	host := cs.agentAddr
	if host == "" {
		host, _, _ = net.SplitHostPort(cs.srv.Addr())
	}
	return net.JoinHostPort(host, strconv.Itoa(cs.agentPort))
}

// ---- the counter and the transitions (HAProxy src/check.c) ----

// applyHealth applies one health-check result: the counter moves, then the
// server goes DOWN, UP or NOLB if the counter says so. Called by the
// checker loop, without cs.mu.
func (cs *Server) applyHealth(r Result, d time.Duration) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	st := &cs.health
	st.running = false
	cs.syncLocked()
	if cs.inMaint || !st.enabled {
		return // a probe that was in flight when checks were paused
	}
	st.setStatus(r.Status, r.Code, r.Info, d)
	cs.countLocked(kindHealth)
}

// countLocked moves the counter of check k by its last status and notifies
// the server (HAProxy set_server_check_status then check_notify_*).
// cs.mu must be held.
func (cs *Server) countLocked(k kind) {
	st := cs.state(k)
	switch st.status.Verdict() {
	case VerdictFailed:
		// An agent that cannot be reached (no L7 data) leaves the server as
		// it is; only a down/stopped/fail reply moves the agent's counter.
		if (k == kindHealth || st.status.hasL7Data()) && st.health > 0 {
			if k == kindHealth {
				cs.failed++
			}
			st.health--
			if st.health < st.rise {
				st.health = 0
			}
		}
		cs.notifyFailureLocked(k)
	case VerdictPassed, VerdictCondPass:
		if st.health < st.max() {
			st.health++
			if st.health >= st.rise {
				st.health = st.max()
			}
		}
		cs.obsErrs.Store(0)
		if st.status.Verdict() == VerdictCondPass {
			cs.setStoppingLocked("", st)
		} else {
			cs.notifySuccessLocked(k)
		}
	}
}

func (cs *Server) state(k kind) *checkState {
	if k == kindAgent {
		return &cs.agent
	}
	return &cs.health
}

// notifyFailureLocked marks the server DOWN once check k's counter is at 0.
// For the agent only a down verdict (L7STS) counts (HAProxy
// check_notify_failure). cs.mu must be held.
func (cs *Server) notifyFailureLocked(k kind) {
	st := cs.state(k)
	if k == kindAgent && st.status != StatusL7STS {
		return
	}
	if st.health > 0 {
		return
	}
	cs.setStoppedLocked("", st)
}

// notifySuccessLocked marks the server UP when every enabled check agrees:
// the health check at rise or above and the agent not down (HAProxy
// check_notify_success). cs.mu must be held.
func (cs *Server) notifySuccessLocked(k kind) {
	st := cs.state(k)
	switch {
	case cs.srv.Admin() == proxy.AdminMaint, st.health < st.rise,
		cs.health.enabled && cs.health.health < cs.health.rise,
		cs.agent.enabled && cs.agent.health < cs.agent.rise,
		k == kindAgent && cs.srv.Op() == proxy.OpStopping:
		return
	}
	cs.setRunningLocked("", st)
}

// setStoppedLocked takes the server DOWN unless it is in maintenance or
// already DOWN: chkdown +1, the downtime clock starts, one warn line
// (HAProxy srv_set_stopped). reason, if set, replaces the check's
// description ("changed from CLI"). cs.mu must be held.
func (cs *Server) setStoppedLocked(reason string, st *checkState) {
	if cs.srv.Admin() == proxy.AdminMaint || cs.srv.Op() == proxy.OpDown {
		return
	}
	level := cs.downLevel()
	cs.be.SetOp(cs.srv, proxy.OpDown)
	cs.downs++
	cs.downSince = time.Now()
	act, bck := cs.be.ServersUp()
	msg := cs.transition("DOWN", reason, st) + fmt.Sprintf(". %d active and %d backup servers left.%s %d sessions active, 0 requeued, 0 remaining in queue.",
		act, bck, onBackup(act, bck), cs.srv.Counters.Scur.Load())
	cs.logEvent(cs.log.Warn(), reason, st).Msg(msg)
	cs.event(level, msg)
	if act == 0 && bck == 0 {
		cs.noServerLocked()
	}
}

// downLevel is the syslog severity of a server going DOWN (or into
// maintenance): alert, or notice when it was stopping or draining
// already (HAProxy srv_update_status: "we don't send an alert if the
// server was previously paused"). Read before the change.
func (cs *Server) downLevel() int {
	if cs.srv.Op() == proxy.OpStopping || cs.srv.Admin() == proxy.AdminDrain {
		return syslog.LevelNotice
	}
	return syslog.LevelAlert
}

// noServerLocked tells that the backend has no usable server left, at
// emerg as HAProxy's set_backend_down. cs.mu must be held.
func (cs *Server) noServerLocked() {
	msg := fmt.Sprintf("backend %s has no server available!", cs.srv.Backend.Name)
	cs.log.Error().Str("backend", cs.srv.Backend.Name).Msg(msg)
	cs.event(syslog.LevelEmerg, msg)
}

// setRunningLocked brings the server UP (from DOWN or NOLB) unless it is in
// maintenance: the backend applies slowstart on OpUp; one info line
// (HAProxy srv_set_running). cs.mu must be held.
func (cs *Server) setRunningLocked(reason string, st *checkState) {
	if cs.srv.Admin() == proxy.AdminMaint || cs.srv.Op() == proxy.OpUp {
		return
	}
	cs.be.SetOp(cs.srv, proxy.OpUp)
	cs.awaitChecks = false
	cs.endDowntimeLocked()
	act, bck := cs.be.ServersUp()
	msg := cs.transition("UP", reason, st) + fmt.Sprintf(". %d active and %d backup servers online.%s 0 sessions requeued, 0 total in queue.", act, bck, onBackup(act, bck))
	cs.logEvent(cs.log.Info(), reason, st).Msg(msg)
	cs.event(syslog.LevelNotice, msg)
}

// setStoppingLocked soft-stops the server (NOLB) unless it is in
// maintenance or already stopping (HAProxy srv_set_stopping).
// cs.mu must be held.
func (cs *Server) setStoppingLocked(reason string, st *checkState) {
	if cs.srv.Admin() == proxy.AdminMaint || cs.srv.Op() == proxy.OpStopping {
		return
	}
	cs.be.SetOp(cs.srv, proxy.OpStopping)
	cs.endDowntimeLocked()
	act, bck := cs.be.ServersUp()
	msg := cs.transition("stopping", reason, st) + fmt.Sprintf(". %d active and %d backup servers online.%s 0 sessions requeued, 0 total in queue.", act, bck, onBackup(act, bck))
	cs.logEvent(cs.log.Warn(), reason, st).Msg(msg)
	cs.event(syslog.LevelNotice, msg)
}

// endDowntimeLocked closes the current DOWN period. cs.mu must be held.
func (cs *Server) endDowntimeLocked() {
	if !cs.downSince.IsZero() {
		cs.downtime += time.Since(cs.downSince)
		cs.downSince = time.Time{}
	}
}

// transition formats the start of HAProxy's transition line:
// `Server web/s1 is DOWN, reason: Layer4 connection problem, info:
// "Connection refused", check duration: 0ms` (srv_append_status), or
// with a forced reason `Server web/s1 is DOWN, changed from CLI`.
func (cs *Server) transition(what, reason string, st *checkState) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s is %s", cs.serverName(), what)
	if reason != "" || st == nil {
		if reason != "" {
			fmt.Fprintf(&b, ", %s", reason)
		}
		return b.String()
	}
	if st == &cs.agent && st.status.Verdict() != VerdictFailed && st.status.Verdict() != VerdictPassed {
		return b.String()
	}
	fmt.Fprintf(&b, ", reason: %s", st.status.Desc())
	if st.status.hasL7Data() {
		fmt.Fprintf(&b, ", code: %d", max(st.code, 0))
	}
	if st.info != "" {
		fmt.Fprintf(&b, ", info: %q", st.info)
	}
	if st.duration >= 0 {
		fmt.Fprintf(&b, ", check duration: %dms", st.duration.Milliseconds())
	}
	return b.String()
}

// serverName is "Server be/s" or, for a backup server, "Backup Server
// be/s", as HAProxy's state change lines begin.
func (cs *Server) serverName() string {
	if cs.srv.Conf.Backup {
		return "Backup Server " + cs.name
	}
	return "Server " + cs.name
}

// onBackup is the " Running on backup." of HAProxy's state change lines
// when only backup servers are left (srv_append_status).
func onBackup(act, bck int) string {
	if act == 0 && bck > 0 {
		return " Running on backup."
	}
	return ""
}

// logEvent adds the structured fields of a transition line.
func (cs *Server) logEvent(e *zerolog.Event, reason string, st *checkState) *zerolog.Event {
	e = e.Str("backend", cs.srv.Backend.Name).Str("server", cs.srv.Name)
	if reason != "" {
		return e.Str("reason", reason)
	}
	if st != nil {
		e = e.Str("check", map[bool]string{true: "agent", false: "health"}[st == &cs.agent]).
			Str("check_status", st.status.String())
		if st.duration >= 0 {
			e = e.Int64("check_duration_ms", st.duration.Milliseconds())
		}
		if st == &cs.health {
			e = e.Str("health", fmt.Sprintf("%d/%d", st.health, st.max()))
		}
	}
	return e
}

// syncLocked keeps the checks in step with an admin state changed
// elsewhere (Runtime API, stats page, agent): entering MAINT pauses the
// checks and counts a down transition; leaving it restarts the health
// counter at rise ("UP 1/<fall>" until the next check) and brings the
// server UP if the checks allow (HAProxy srv_update_status).
// cs.mu must be held.
func (cs *Server) syncLocked() {
	maint := cs.srv.Admin() == proxy.AdminMaint
	if maint == cs.inMaint {
		if !maint {
			cs.syncDrainLocked()
		}
		return
	}
	cs.inMaint = maint
	if maint {
		// (the backend lost its last server only if this one served)
		wasUsable := cs.srv.Op() != proxy.OpDown
		level := syslog.LevelAlert
		if cs.srv.Op() == proxy.OpStopping {
			level = syslog.LevelNotice
		}
		if cs.srv.Op() != proxy.OpDown {
			cs.downs++
		}
		cs.health.health = 0
		cs.inDrain = false
		act, bck := cs.be.ServersUp()
		msg := fmt.Sprintf("%s is going DOWN for maintenance. %d active and %d backup servers left.%s %d sessions active, 0 requeued, 0 remaining in queue.",
			cs.serverName(), act, bck, onBackup(act, bck), cs.srv.Counters.Scur.Load())
		if !wasUsable {
			// HAProxy 2.6's line for a server that was DOWN already: not
			// a new outage (srv_update_status), so no alert.
			msg = fmt.Sprintf("%s was DOWN and now enters maintenance.", cs.serverName())
			level = syslog.LevelNotice
		}
		if !cs.srv.ResolutionMaint() || cs.srv.OperatorAdmin() == proxy.AdminMaint {
			// (a maintenance by DNS resolution is logged by the backend,
			// with its cause: proxy.Backend.ApplyDNS)
			cs.log.Warn().Str("backend", cs.srv.Backend.Name).Str("server", cs.srv.Name).Msg(msg)
			cs.event(level, msg)
		}
		if act == 0 && bck == 0 && wasUsable {
			cs.noServerLocked()
		}
		return
	}
	if cs.awaitChecks && cs.health.enabled {
		// Added at runtime, never checked: UP once its checks pass.
		cs.wakeLocked(kindHealth, 0)
		cs.log.Info().Str("backend", cs.srv.Backend.Name).Str("server", cs.srv.Name).
			Msgf("%s is leaving forced maintenance, DOWN until its checks pass.", cs.serverName())
		return
	}
	if cs.health.configured && cs.health.enabled {
		// Checks start from rise; a server without checks keeps the 0
		// maintenance gave it, as HAProxy 2.6 (srv_check_health 0 after
		// MAINT then READY, measured by a trial).
		cs.health.health = cs.health.rise
	}
	if cs.srv.Op() != proxy.OpUp && (!cs.agent.enabled || cs.agent.health >= cs.agent.rise) {
		cs.be.SetOp(cs.srv, proxy.OpUp)
		cs.endDowntimeLocked()
	}
	// HAProxy 2.6's line (srv_update_status): the state the server is
	// left in, operational and administrative.
	op, admin := "UP", "READY"
	if cs.srv.Op() != proxy.OpUp {
		op = "DOWN"
	}
	if cs.srv.Admin() == proxy.AdminDrain {
		admin = "DRAIN"
	}
	cs.inDrain = admin == "DRAIN"
	msg := fmt.Sprintf("%s is %s/%s (leaving forced maintenance).", cs.serverName(), op, admin)
	cs.log.Info().Str("backend", cs.srv.Backend.Name).Str("server", cs.srv.Name).Msg(msg)
	cs.event(syslog.LevelNotice, msg)
}

// syncDrainLocked logs a server entering or leaving the drain state
// (set server state drain, the stats page), as HAProxy 2.6's
// srv_update_status: "Server be/s1 enters drain state. 2 active and 1
// backup servers online. 0 sessions requeued, 0 total in queue." and
// "Server be/s1 is UP (leaving forced drain)." Maintenance's own lines
// cover the moves in and out of MAINT. cs.mu must be held.
func (cs *Server) syncDrainLocked() {
	drain := cs.srv.Admin() == proxy.AdminDrain
	if drain == cs.inDrain {
		return
	}
	cs.inDrain = drain
	var msg string
	if drain {
		act, bck := cs.be.ServersUp()
		msg = fmt.Sprintf("%s enters drain state. %d active and %d backup servers online.%s 0 sessions requeued, 0 total in queue.",
			cs.serverName(), act, bck, onBackup(act, bck))
		cs.log.Warn().Str("backend", cs.srv.Backend.Name).Str("server", cs.srv.Name).Msg(msg)
	} else {
		op := "UP"
		if cs.srv.Op() == proxy.OpDown {
			op = "DOWN"
		}
		msg = fmt.Sprintf("%s is %s (leaving forced drain).", cs.serverName(), op)
		cs.log.Info().Str("backend", cs.srv.Backend.Name).Str("server", cs.srv.Name).Msg(msg)
	}
	cs.event(syslog.LevelNotice, msg)
}

// interval returns the delay before check k's next probe (HAProxy
// srv_getinter): inter while the counter is at its maximum, downinter
// while the server is DOWN with the counter at 0, fastinter in between.
// The agent always uses its own inter.
func (cs *Server) interval(k kind, inter, fastinter, downinter time.Duration) time.Duration {
	if k == kindAgent {
		return inter
	}
	cs.mu.Lock()
	defer cs.mu.Unlock()
	st := &cs.health
	switch {
	case st.health == st.max():
		return inter
	case cs.srv.Op() == proxy.OpDown && st.health == 0:
		return downinter
	}
	return fastinter
}

// wakeLocked asks check k's loop to probe after d instead of its current
// schedule. cs.mu must be held.
func (cs *Server) wakeLocked(k kind, d time.Duration) {
	ch := cs.wake[k]
	if ch == nil {
		return
	}
	select {
	case ch <- d:
	default:
	}
}
