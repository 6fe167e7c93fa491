package main

import (
	"bufio"
	"context"
	"encoding/csv"
	"fmt"
	"github.com/fulcrum-proxy/fulcrum/internal/testutil"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fulcrum-proxy/fulcrum/cmd/fulcrum-agent/internal/agent"
	"github.com/rs/zerolog"
)

// haproxyConfig is the balancer side: one server with a TCP health check
// and an agent check every 100ms against the agent under test.
const haproxyConfig = `global
    stats socket %[1]s level admin

defaults
    mode tcp
    timeout connect 1s
    timeout client 5s
    timeout server 5s
    timeout check 1s

backend be
    server s1 %[2]s check inter 100ms agent-check agent-port %[3]d agent-inter 100ms weight 100
`

// TestHAProxyAgentCheck drives a real HAProxy 2.6 agent-check with the
// agent: its replies must show in HAProxy's `show stat` as UP with the
// computed weight, DRAIN (agent), DOWN (agent) and MAINT, and back to UP,
// including after a down (which needs report_up).
func TestHAProxyAgentCheck(t *testing.T) {
	haproxy := lookHAProxy(t)
	dir := t.TempDir()

	env := startAgentEnv(t, dir)
	backendLn, agentAddr, src, cfg := env.backend, env.agent, env.src, env.cfg

	sock := filepath.Join(dir, "admin.sock")
	cfgPath := filepath.Join(dir, "haproxy.cfg")
	hcfg := fmt.Sprintf(haproxyConfig, sock, backendLn.Addr(), agentAddr.(*net.TCPAddr).Port)
	if err := os.WriteFile(cfgPath, []byte(hcfg), 0o644); err != nil {
		t.Fatal(err)
	}
	var hlog testutil.SyncBuffer
	cmd := exec.Command(haproxy, "-db", "-f", cfgPath)
	cmd.Stdout, cmd.Stderr = &hlog, &hlog
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		if t.Failed() {
			t.Logf("haproxy output:\n%s", hlog.String())
		}
	})

	driveAgent(t, sock, src, agent.Control{Path: cfg.StateFile})
}

// driveAgent changes the agent's load and overrides step by step and waits,
// for each, until the balancer's `show stat` and `show servers state` on
// sock show server be/s1 as HAProxy 2.6 does.
func driveAgent(t *testing.T, sock string, src *agent.ManualSource, ctl agent.Control) {
	t.Helper()
	steps := []struct {
		name   string
		change func()
		status string // show stat "status"
		weight string // show stat "weight"
		admin  string // show servers state "srv_admin_state"
		lastAg string // show stat "last_agt", checked when not empty
	}{
		{"ready 80%", func() {}, "UP", "80", "0", ""},
		{"cpu over threshold drains", func() { src.Set(agent.Reading{CPU: 97, ProcessRunning: true}) }, "DRAIN (agent)", "80", "8", ""},
		{"load back to ready 70%", func() { src.Set(agent.Reading{CPU: 30, ProcessRunning: true}) }, "UP", "70", "0", ""},
		{"set drain", func() { ctl.Set(agent.OverrideDrain) }, "DRAIN (agent)", "70", "8", ""},
		{"set auto", func() { ctl.Set(agent.OverrideAuto) }, "UP", "70", "0", ""},
		{"process missing", func() { src.Set(agent.Reading{CPU: 30}) }, "DOWN (agent)", "70", "0", "via agent : down (process app not running)"},
		{"process back", func() { src.Set(agent.Reading{CPU: 40, ProcessRunning: true}) }, "UP", "60", "0", "via agent : up"},
		{"set maint", func() { ctl.Set(agent.OverrideMaint) }, "MAINT", "60", "1", ""},
		{"set ready", func() { ctl.Set(agent.OverrideReady) }, "UP", "60", "0", ""},
	}
	for _, s := range steps {
		s.change()
		var last string
		// Two agent intervals are 200ms; a loaded CI machine gets more.
		waitFor(t, 10*time.Second, func() bool {
			row, err := showStat(sock, "be", "s1")
			if err != nil {
				last = err.Error()
				return false
			}
			admin, err := adminState(sock, "be", "s1")
			if err != nil {
				last = err.Error()
				return false
			}
			last = fmt.Sprintf("status=%q weight=%q admin_state=%q last_agt=%q", row["status"], row["weight"], admin, row["last_agt"])
			// "UP 1/3" right after leaving MAINT is UP for this purpose.
			status := row["status"]
			if s.status == "UP" {
				status, _, _ = strings.Cut(status, " ")
			}
			return status == s.status && row["weight"] == s.weight && admin == s.admin &&
				(s.lastAg == "" || row["last_agt"] == s.lastAg)
		}, func() string {
			return fmt.Sprintf("step %q: want status=%q weight=%q admin_state=%q; last seen %s", s.name, s.status, s.weight, s.admin, last)
		})
	}
}

// lookHAProxy returns the haproxy binary, or skips the test (fails it when
// CI=true: CI installs haproxy through .ci/run's PKGS).
func lookHAProxy(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("haproxy")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("haproxy not found (CI=true): add haproxy to PKGS in .ci/run")
		}
		t.Skip("haproxy not found: apt-get install haproxy to run this test")
	}
	return p
}

// runtimeCmd sends one Runtime API command to the stats socket and returns
// the reply.
func runtimeCmd(sock, cmd string) (string, error) {
	c, err := net.DialTimeout("unix", sock, time.Second)
	if err != nil {
		return "", err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := io.WriteString(c, cmd+"\n"); err != nil {
		return "", err
	}
	b, err := io.ReadAll(c)
	return string(b), err
}

// showStat returns the `show stat` row of backend/server as column → value.
func showStat(sock, backend, server string) (map[string]string, error) {
	out, err := runtimeCmd(sock, "show stat")
	if err != nil {
		return nil, err
	}
	r := csv.NewReader(strings.NewReader(strings.TrimPrefix(out, "# ")))
	r.FieldsPerRecord = -1
	recs, err := r.ReadAll()
	if err != nil || len(recs) < 2 {
		return nil, fmt.Errorf("show stat: %v: %q", err, out)
	}
	for _, rec := range recs[1:] {
		if len(rec) > 1 && rec[0] == backend && rec[1] == server {
			row := map[string]string{}
			for i, col := range recs[0] {
				if i < len(rec) {
					row[col] = rec[i]
				}
			}
			return row, nil
		}
	}
	return nil, fmt.Errorf("show stat: no row %s/%s", backend, server)
}

// adminState returns srv_admin_state from `show servers state BACKEND`.
func adminState(sock, backend, server string) (string, error) {
	out, err := runtimeCmd(sock, "show servers state "+backend)
	if err != nil {
		return "", err
	}
	var header []string
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		switch {
		case len(f) > 1 && f[0] == "#":
			header = f[1:]
		case header != nil && len(f) == len(header):
			row := map[string]string{}
			for i, h := range header {
				row[h] = f[i]
			}
			if row["srv_name"] == server {
				return row["srv_admin_state"], nil
			}
		}
	}
	return "", fmt.Errorf("show servers state: no server %s in %q", server, out)
}

// waitFor polls cond until it holds or d passes, then fails with msg().
func waitFor(t *testing.T, d time.Duration, cond func() bool, msg func() string) {
	t.Helper()
	deadline := time.NewTimer(d)
	defer deadline.Stop()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-deadline.C:
			t.Fatal(msg())
		case <-tick.C:
		}
	}
}

// agentEnv is what both balancers' agent tests start: a server port that
// accepts and closes (for the health check) and the agent under test, on
// 127.0.0.1:0, through the same serve() as `run`, driven by a manual
// source.
type agentEnv struct {
	backend net.Listener
	agent   net.Addr
	src     *agent.ManualSource
	cfg     agent.Config
}

func startAgentEnv(t *testing.T, dir string) agentEnv {
	t.Helper()
	backendLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { backendLn.Close() })
	go func() {
		for {
			c, err := backendLn.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	cfg := agent.Default()
	cfg.Listen = "127.0.0.1:0"
	cfg.StateFile = filepath.Join(dir, "state")
	cfg.Allow = []string{"127.0.0.1"}
	cfg.Memory.Enabled = false
	cfg.Process = agent.Process{Enabled: true, Name: "app", Action: "down"}
	src := agent.NewManualSource(agent.Reading{CPU: 20, ProcessRunning: true})
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan net.Addr, 1)
	served := make(chan error, 1)
	go func() {
		served <- serve(ctx, &cfg, zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.InfoLevel), fixed(src), ready)
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-served; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	select {
	case a := <-ready:
		return agentEnv{backend: backendLn, agent: a, src: src, cfg: cfg}
	case err := <-served:
		t.Fatalf("serve: %v", err)
	}
	return agentEnv{}
}
