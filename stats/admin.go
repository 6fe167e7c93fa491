package stats

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/fulcrum-proxy/fulcrum/proxy"
	checks "github.com/fulcrum-proxy/fulcrum/proxy/check"
)

// maxAdminBody bounds an admin POST; beyond it the reply is EXCD, as
// HAProxy's when the request does not fit its buffer.
const maxAdminBody = 16 << 10

// serveAdmin applies an admin action posted by the page's form and
// redirects to the page with the result code (HAProxy's `stats admin`):
// b is the backend ("#<iid>" or its name), s the servers (repeated) and
// action one of HAProxy's. The reply is 303 to "<uri>;st=<CODE>": DONE,
// NONE (nothing given or nothing to do), PART (some servers unknown), ERRP
// (bad backend, servers or action), EXCD (request too large) or DENY
// (admin not allowed). Cross-site posts are refused with 403 before
// anything else: the request must come from a page of the same origin.
func (pg *page) serveAdmin(w http.ResponseWriter, r *http.Request) {
	if !sameOrigin(r) {
		http.Error(w, "403 Forbidden: cross-origin request", http.StatusForbidden)
		return
	}
	code := pg.adminAction(r)
	h := w.Header()
	h.Set("Cache-Control", "no-cache")
	h.Set("Content-Type", "text/plain")
	h.Set("Location", pg.cfg.URI+";st="+code)
	w.WriteHeader(http.StatusSeeOther)
}

// sameOrigin reports whether r comes from a page of the site itself: the
// browser's Sec-Fetch-Site says same-origin, or Origin (else Referer) names
// the request's own host. A request with none of them (curl, scripts) is
// not a browser's cross-site form and passes; basic authentication and the
// admin condition still apply.
func sameOrigin(r *http.Request) bool {
	if site := r.Header.Get("Sec-Fetch-Site"); site != "" {
		return site == "same-origin" || site == "none"
	}
	from := r.Header.Get("Origin")
	if from == "" || from == "null" {
		from = r.Header.Get("Referer")
	}
	if from == "" {
		return r.Header.Get("Origin") != "null"
	}
	u, err := url.Parse(from)
	return err == nil && u.Host != "" && strings.EqualFold(u.Host, r.Host)
}

// adminAction parses and applies one action and returns its result code.
func (pg *page) adminAction(r *http.Request) string {
	if !pg.adminAllowed(r) {
		return "DENY"
	}
	r.Body = http.MaxBytesReader(nil, r.Body, maxAdminBody)
	if err := r.ParseForm(); err != nil {
		if strings.Contains(err.Error(), "too large") {
			return "EXCD"
		}
		return "ERRP"
	}
	form := r.PostForm
	action, servers := form.Get("action"), form["s"]
	if len(servers) == 0 {
		return "NONE"
	}
	apply, ok := adminActions[action]
	if !ok {
		return "ERRP"
	}
	result := "ERRP"
	who := adminWho(r, action)
	run := func(core *proxy.Proxy) {
		result = applyAdmin(core, form.Get("b"), servers, func(p *proxy.Proxy, b *proxy.Backend, s *proxy.Server) bool {
			before := serverStateOf(s)
			done := apply(p, b, s)
			if done {
				pg.logAdmin(who, b, s, before)
			}
			return done
		})
	}
	if pg.cfg.Change != nil {
		pg.cfg.Change(run)
	} else {
		run(pg.core)
	}
	return result
}

// applyAdmin applies one action to the named servers of backend b ("#iid"
// or a name) in core and returns the result code.
func applyAdmin(core *proxy.Proxy, b string, servers []string, apply func(*proxy.Proxy, *proxy.Backend, *proxy.Server) bool) string {
	be := lookupBackend(core, b)
	if be == nil {
		return "ERRP"
	}
	altered, unknown := 0, 0
	for _, name := range servers {
		s := be.Server(name)
		if s == nil {
			unknown++
			continue
		}
		if apply(core, be, s) {
			altered++
		}
	}
	switch {
	case unknown == len(servers):
		return "ERRP"
	case unknown > 0:
		return "PART"
	case altered == 0:
		return "NONE"
	}
	return "DONE"
}

// lookupBackend finds a backend of core by "#<iid>" or by name.
func lookupBackend(core *proxy.Proxy, b string) *proxy.Backend {
	if id, ok := strings.CutPrefix(b, "#"); ok {
		n, err := strconv.Atoi(id)
		if err != nil {
			return nil
		}
		for _, be := range core.Backends {
			if be.ID == n {
				return be
			}
		}
		return nil
	}
	return core.Backend(b)
}

// adminActions are the page's actions, through the same calls as the
// Runtime API: admin states and check verdicts go through the server's
// check state (check.Of), so that the checks stay in step. Each returns
// whether it applied to the server: the health and agent actions of a
// server without such a check change nothing, as in HAProxy.
var adminActions = map[string]func(p *proxy.Proxy, b *proxy.Backend, s *proxy.Server) bool{
	"ready": setAdmin(proxy.AdminReady),
	"drain": setAdmin(proxy.AdminDrain),
	"maint": setAdmin(proxy.AdminMaint),
	"hrunn": setHealth(checks.HealthUp),
	"hnolb": setHealth(checks.HealthStopping),
	"hdown": setHealth(checks.HealthDown),
	"dhlth": func(_ *proxy.Proxy, _ *proxy.Backend, s *proxy.Server) bool {
		cs := checks.Of(s)
		if !cs.Info().HealthConfigured {
			return false
		}
		cs.DisableHealth()
		return true
	},
	"ehlth": func(_ *proxy.Proxy, _ *proxy.Backend, s *proxy.Server) bool {
		return checks.Of(s).EnableHealth() == nil
	},
	"dagent": func(_ *proxy.Proxy, _ *proxy.Backend, s *proxy.Server) bool {
		cs := checks.Of(s)
		if !cs.Info().AgentConfigured {
			return false
		}
		cs.DisableAgent()
		return true
	},
	"eagent": func(_ *proxy.Proxy, _ *proxy.Backend, s *proxy.Server) bool {
		return checks.Of(s).EnableAgent() == nil
	},
	"arunn": func(_ *proxy.Proxy, _ *proxy.Backend, s *proxy.Server) bool {
		return checks.Of(s).SetAgent(true) == nil
	},
	"adown": func(_ *proxy.Proxy, _ *proxy.Backend, s *proxy.Server) bool {
		return checks.Of(s).SetAgent(false) == nil
	},
	"shutdown": func(p *proxy.Proxy, _ *proxy.Backend, s *proxy.Server) bool {
		p.ShutdownSessions(s)
		return true
	},
}

// setAdmin is the ready, drain and maint actions.
func setAdmin(a proxy.AdminState) func(*proxy.Proxy, *proxy.Backend, *proxy.Server) bool {
	return func(_ *proxy.Proxy, _ *proxy.Backend, s *proxy.Server) bool {
		checks.Of(s).SetAdmin(a)
		return true
	}
}

// setHealth is the hrunn, hnolb and hdown actions: forced health verdicts,
// with or without checks, as `set server <b>/<s> health`.
func setHealth(h checks.Health) func(*proxy.Proxy, *proxy.Backend, *proxy.Server) bool {
	return func(_ *proxy.Proxy, _ *proxy.Backend, s *proxy.Server) bool {
		checks.Of(s).SetHealth(h)
		return true
	}
}

// adminActor is who asked for an admin action, for the change log.
type adminActor struct {
	action, user, src string
}

// adminWho returns the actor of r: the basic-auth user ("" without
// authentication) and the client's address.
func adminWho(r *http.Request, action string) adminActor {
	user, _, _ := r.BasicAuth()
	return adminActor{action: action, user: user, src: r.RemoteAddr}
}

// serverState is what an admin action may change on a server.
type serverState struct {
	admin  proxy.AdminState
	op     proxy.OpState
	weight int32
}

func serverStateOf(s *proxy.Server) serverState {
	return serverState{admin: s.Admin(), op: s.Op(), weight: s.UserWeight.Load()}
}

// opName names an operational state as the change logs do.
func opName(o proxy.OpState) string {
	switch o {
	case proxy.OpDown:
		return "DOWN"
	case proxy.OpStopping:
		return "NOLB"
	}
	return "UP"
}

// logAdmin logs one server changed by a stats page action, as the Runtime
// API logs a socket's changes: who (the page's user, from where), what
// (the action and the server), the state now and before (to undo it).
func (pg *page) logAdmin(who adminActor, b *proxy.Backend, s *proxy.Server, before serverState) {
	if pg.cfg.Log == nil {
		return
	}
	now := serverStateOf(s)
	pg.cfg.Log.Info().Str("stats_page", pg.cfg.URI).Str("user", who.user).Str("src", who.src).
		Str("action", who.action).Str("server", b.Name+"/"+s.Name).
		Stringer("state", now.admin).Stringer("previous_state", before.admin).
		Str("op_state", opName(now.op)).Str("previous_op_state", opName(before.op)).
		Int32("weight", now.weight).Int32("previous_weight", before.weight).
		Msg("stats page admin action")
}
