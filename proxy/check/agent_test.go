package check

import (
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fulcrum-proxy/fulcrum/conf"
	"github.com/fulcrum-proxy/fulcrum/proxy"
)

// agentServer is a small agent: each connection gets the current reply,
// then is closed.
type agentServer struct {
	l     net.Listener
	reply atomic.Value // string
	wg    sync.WaitGroup
}

func newAgent(t *testing.T, reply string) *agentServer {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	a := &agentServer{l: l}
	a.reply.Store(reply)
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Write([]byte(a.reply.Load().(string)))
			c.Close()
		}
	}()
	t.Cleanup(func() { l.Close(); a.wg.Wait() })
	return a
}

func (a *agentServer) port() int { return a.l.Addr().(*net.TCPAddr).Port }

// agentRow is what the snapshot must show after one agent reply.
type agentRow struct {
	status      string
	admin       proxy.AdminState
	op          proxy.OpState
	uweight     int
	eweight     int
	maxconn     int
	agentStatus string
	agentInfo   string
	agentHealth int
}

// TestAgentSequence: an agent replying in turn 75%, drain, ready, maint,
// up 50% maxconn:10, garbage, ready, stopped, up; after each reply the
// weights, admin state, maxconn and agent columns are those of
// agent-check-timeline.txt, and traffic follows (a drained server gets no
// new requests).
func TestAgentSequence(t *testing.T) {
	s1, s2 := newUpstream(t, "s1"), newUpstream(t, "s2")
	agent := newAgent(t, "up\n")
	cfg := testConfig(s1.addr(), s2.addr())
	be := cfg.Backends[0]
	be.Check.Inter = time.Hour // only the agent probes during the test
	be.Servers[0].Weight, be.Servers[1].Weight = 100, 100
	be.Servers[0].Agent = &conf.Agent{Port: agent.port(), Inter: 500 * time.Millisecond}
	be.Servers[1].Check = false
	h := newHarness(t, cfg)
	h.next()
	h.next()
	if s := h.server("s1"); s.Agent == nil || s.Agent.Status != "L7OK" || s.Agent.Info != "via agent : up" || s.Agent.Code != 0 {
		t.Fatalf("first reply up: got %+v", s.Agent)
	}

	steps := []struct {
		reply string
		want  agentRow
	}{
		{"75%\n", agentRow{"UP", proxy.AdminReady, proxy.OpUp, 75, 75, 0, "CHECKED", "", 1}},
		{"drain\n", agentRow{"DRAIN (agent)", proxy.AdminDrain, proxy.OpUp, 75, 0, 0, "CHECKED", "", 1}},
		{"ready\n", agentRow{"UP", proxy.AdminReady, proxy.OpUp, 75, 75, 0, "CHECKED", "", 1}},
		{"maint\n", agentRow{"MAINT", proxy.AdminMaint, proxy.OpUp, 75, 0, 0, "CHECKED", "", 1}},
		// "up" is a verdict, not an admin word: the server stays in MAINT.
		{"up 50% maxconn:10\n", agentRow{"MAINT", proxy.AdminMaint, proxy.OpUp, 50, 0, 10, "L7OK", "via agent : up", 1}},
		{"garbage\n", agentRow{"MAINT", proxy.AdminMaint, proxy.OpUp, 50, 0, 10, "CHECKED", "agent reports an error : garbage", 1}},
		// Leaving MAINT restarts the health counter at rise: UP 1/3.
		{"ready\n", agentRow{"UP 1/3", proxy.AdminReady, proxy.OpUp, 50, 50, 10, "CHECKED", "", 1}},
		{"fail # bad disk\n", agentRow{"DOWN (agent)", proxy.AdminReady, proxy.OpDown, 50, 0, 10, "L7STS", "via agent : fail (bad disk)", 0}},
		{"up 100%,maxconn:0\n", agentRow{"UP 1/3", proxy.AdminReady, proxy.OpUp, 100, 100, 0, "L7OK", "via agent : up", 1}},
		// A reply without a line end is ignored entirely.
		{"down", agentRow{"UP 1/3", proxy.AdminReady, proxy.OpUp, 100, 100, 0, "L7OK", "Ignoring incomplete line from agent", 1}},
	}
	for i, st := range steps {
		agent.reply.Store(st.reply)
		if ev := h.step(2, 500*time.Millisecond); ev.kind != kindAgent {
			t.Fatalf("step %d: got a %v probe, want the agent", i, ev.kind)
		}
		s := h.server("s1")
		got := agentRow{s.Status(), s.Admin, s.Op, s.UserWeight, s.EffectiveWeight, s.MaxConn,
			s.Agent.Status, s.Agent.Info, s.Agent.Health}
		if got != st.want {
			t.Fatalf("after %q: got %+v, want %+v", st.reply, got, st.want)
		}
		switch st.reply {
		case "drain\n", "maint\n", "fail # bad disk\n":
			before := s1.requests.Load()
			for j := 0; j < 4; j++ {
				if _, body := get(t, h.addr); body != "s2" {
					t.Fatalf("after %q, request %d: got %q, want s2", st.reply, j, body)
				}
			}
			if n := s1.requests.Load() - before; n != 0 {
				t.Fatalf("after %q: s1 got %d requests, want 0", st.reply, n)
			}
		case "ready\n":
			seen := map[string]int{}
			for j := 0; j < 20; j++ {
				_, body := get(t, h.addr)
				seen[body]++
			}
			if seen["s1"] == 0 || seen["s2"] == 0 {
				t.Fatalf("after %q: got %v, want both servers", st.reply, seen)
			}
		}
	}
	// "garbage" and the reply without a line end were not understood:
	// counted, nothing else.
	if s := h.server("s1"); s.Agent.BadReplies != 2 {
		t.Errorf("bad agent replies: got %d, want 2", s.Agent.BadReplies)
	}
	// The agent's own maxconn shows in slim.
	if s := h.server("s1"); s.Slim != 0 {
		t.Errorf("maxconn:0: got slim %d, want 0 (unlimited)", s.Slim)
	}
}

// TestAgentUnreachable: an agent that refuses connections never changes
// the server (timeline t=28.6s); set server agent down|up forces the
// verdict and disable agent empties the columns.
func TestAgentUnreachable(t *testing.T) {
	u := newUpstream(t, "s1")
	cfg := testConfig(u.addr())
	_, port, _ := net.SplitHostPort(closedAddr(t))
	p, _ := strconv.Atoi(port)
	cfg.Backends[0].Servers[0].Agent = &conf.Agent{Port: p, Inter: 500 * time.Millisecond}
	cfg.Backends[0].Check.Inter = time.Hour
	h := newHarness(t, cfg)
	h.next()
	h.next()
	s := h.server("s1")
	if s.Status() != "UP" || s.Agent.Status != "L4CON" || s.Agent.Info != "Connection refused" || s.Agent.Health != 1 || s.Agent.Code != -1 {
		t.Fatalf("unreachable agent: got %q %+v", s.Status(), s.Agent)
	}
	cs := Of(h.p.Backends[0].Servers()[0])
	if err := cs.SetAgent(false); err != nil {
		t.Fatal(err)
	}
	if s := h.server("s1"); s.Status() != "DOWN (agent)" {
		t.Fatalf("agent down: got %q", s.Status())
	}
	cs.SetAgent(true)
	if s := h.server("s1"); s.Status() != "UP" {
		t.Fatalf("agent up: got %q", s.Status())
	}
	cs.DisableAgent()
	if s := h.server("s1"); s.Agent != nil || s.HealthState.AgentState != 0x12 {
		t.Fatalf("disable agent: got %+v state %#x, want nil 0x12", s.Agent, s.HealthState.AgentState)
	}
}

// An agent that keeps answering the same reply not understood is logged
// once (it was logged at every probe; HAProxy logs none), again after an
// understood reply; every such reply is counted.
func TestAgentBadReplyLoggedOnce(t *testing.T) {
	s1, s2 := newUpstream(t, "s1"), newUpstream(t, "s2")
	agent := newAgent(t, "hello\n")
	cfg := testConfig(s1.addr(), s2.addr())
	be := cfg.Backends[0]
	be.Check.Inter = time.Hour
	be.Servers[0].Agent = &conf.Agent{Port: agent.port(), Inter: 500 * time.Millisecond}
	be.Servers[1].Check = false
	h := newHarness(t, cfg)
	h.next()
	h.next()
	for _, reply := range []string{"hello\n", "hello\n", "up\n", "hello\n"} {
		agent.reply.Store(reply)
		if ev := h.step(2, 500*time.Millisecond); ev.kind != kindAgent {
			t.Fatalf("got a %v probe, want the agent", ev.kind)
		}
	}
	if n := strings.Count(h.logs.String(), "agent reply not understood"); n != 2 {
		t.Errorf("%d warnings, want 2:\n%s", n, h.logs.String())
	}
	if s := h.server("s1"); s.Agent.BadReplies != 4 {
		t.Errorf("bad replies %d, want 4", s.Agent.BadReplies)
	}
}
