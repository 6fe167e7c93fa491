//go:build !windows

package main

import "github.com/urfave/cli/v2"

// runService never applies outside Windows: systemd (dist/fulcrum-agent.service)
// runs `fulcrum-agent run` in the foreground.
func runService([]string) (handled bool, code int) { return false, 0 }

// serviceCommands has nothing to add outside Windows.
func serviceCommands() []*cli.Command { return nil }
