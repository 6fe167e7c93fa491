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
	env := startAgentEnv(t, dir)
	backendLn, agentAddr, src, cfg := env.backend, env.agent, env.src, env.cfg
	log := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)

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
