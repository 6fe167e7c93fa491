package main

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"testing"

	"github.com/fulcrum-proxy/fulcrum/cmd/fulcrum-agent/internal/agent"
	"github.com/fulcrum-proxy/fulcrum/conf"
	"github.com/fulcrum-proxy/fulcrum/proxy"
	"github.com/fulcrum-proxy/fulcrum/proxy/check"
	"github.com/fulcrum-proxy/fulcrum/runtime"
	"github.com/rs/zerolog"
)

// fulcrumConfig is the balancer side in fulcrum's own TOML: the same server,
// health check and agent check as haproxyConfig.
const fulcrumConfig = `
[defaults]
mode = "tcp"
timeout_connect = "1s"
timeout_client = "5s"
timeout_server = "5s"
timeout_check = "1s"

[[backend]]
name = "be"

[backend.check]
type = "tcp"
inter = "100ms"

[[backend.server]]
name = "s1"
address = %q
weight = 100
check = true
agent = { port = %d, inter = "100ms" }
`

// TestFulcrumAgentCheck drives fulcrum's own agent check with the agent:
// fulcrum's `show stat` and `show servers state` must go through exactly
// the states HAProxy 2.6 shows in TestHAProxyAgentCheck (DRAIN (agent)
// after a forced drain, within two agent intervals, among them).
func TestFulcrumAgentCheck(t *testing.T) {
	dir := t.TempDir()
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
	log := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)
	go func() { served <- serve(ctx, &cfg, log, fixed(src), ready) }()
	t.Cleanup(func() {
		cancel()
		if err := <-served; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	var agentAddr net.Addr
	select {
	case agentAddr = <-ready:
	case err := <-served:
		t.Fatalf("serve: %v", err)
	}

	fcfg, err := conf.Parse("agent.toml", []byte(fmt.Sprintf(fulcrumConfig, backendLn.Addr().String(), agentAddr.(*net.TCPAddr).Port)))
	if err != nil {
		t.Fatal(err)
	}
	p, err := proxy.New(fcfg, log)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Shutdown(context.Background()) })
	checker, err := check.New(p, log)
	if err != nil {
		t.Fatal(err)
	}
	checker.Start()
	t.Cleanup(checker.Stop)
	api := runtime.New(p, log, runtime.Options{})
	sock := filepath.Join(dir, "admin.sock")
	if err := api.Listen(runtime.Socket{Path: sock, Level: runtime.LevelAdmin}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { api.Close() })

	driveAgent(t, sock, src, agent.Control{Path: cfg.StateFile})
}
