//go:build windows

// Windows service support: `fulcrum-agent service install|uninstall`
// registers the agent with the service control manager, and main runs it
// under svc.Run when Windows starts it as a service.

package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/fulcrum-proxy/fulcrum/cmd/fulcrum-agent/internal/agent"
	"github.com/urfave/cli/v2"
	"golang.org/x/sys/windows/svc"
	"golang.org/x/sys/windows/svc/mgr"
)

// serviceName is the name the service is registered under.
const serviceName = "fulcrum-agent"

// runService runs the agent as a Windows service when the service control
// manager started this process; handled is false otherwise (console use).
func runService(args []string) (handled bool, code int) {
	isSvc, err := svc.IsWindowsService()
	if err != nil || !isSvc {
		return false, 0
	}
	h := &handler{args: args}
	if err := svc.Run(serviceName, h); err != nil {
		return true, 1
	}
	return true, h.code
}

// handler adapts the command line to svc.Handler: Stop and Shutdown cancel
// the context the agent serves under, as SIGTERM does on Unix.
type handler struct {
	args []string
	code int
}

// Execute is called by svc.Run on its own goroutine for the service's life.
func (h *handler) Execute(_ []string, req <-chan svc.ChangeRequest, status chan<- svc.Status) (bool, uint32) {
	status <- svc.Status{State: svc.StartPending}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	go func() {
		// A service has no console: logs go to log_file if the configuration
		// sets one, and are discarded otherwise.
		done <- runApp(ctx, newApp(io.Discard, io.Discard, systemSource), h.args, io.Discard)
	}()
	status <- svc.Status{State: svc.Running, Accepts: svc.AcceptStop | svc.AcceptShutdown}
	for {
		select {
		case h.code = <-done:
			cancel()
			return false, uint32(h.code)
		case c := <-req:
			switch c.Cmd {
			case svc.Interrogate:
				status <- c.CurrentStatus
			case svc.Stop, svc.Shutdown:
				status <- svc.Status{State: svc.StopPending}
				cancel()
				h.code = <-done
				return false, uint32(h.code)
			}
		}
	}
}

// serviceCommands adds `service install` and `service uninstall`.
func serviceCommands() []*cli.Command {
	return []*cli.Command{{
		Name:  "service",
		Usage: "install or uninstall the Windows service",
		Subcommands: []*cli.Command{
			{
				Name:  "install",
				Usage: "register fulcrum-agent as an automatic-start service running `run -c FILE`",
				Flags: []cli.Flag{&cli.StringFlag{Name: "config", Aliases: []string{"c"}, Value: agent.DefaultConfigPath(), Usage: "configuration `FILE`"}},
				Action: func(c *cli.Context) error {
					exe, err := os.Executable()
					if err != nil {
						return err
					}
					cfgPath, err := filepath.Abs(c.String("config"))
					if err != nil {
						return err
					}
					m, err := mgr.Connect()
					if err != nil {
						return fmt.Errorf("service manager: %w", err)
					}
					defer m.Disconnect()
					s, err := m.CreateService(serviceName, exe, mgr.Config{
						DisplayName: "fulcrum-agent",
						Description: "Answers load-balancer agent checks with this machine's load.",
						StartType:   mgr.StartAutomatic,
					}, "run", "-c", cfgPath)
					if err != nil {
						return fmt.Errorf("create service: %w", err)
					}
					defer s.Close()
					fmt.Fprintf(c.App.Writer, "service %s installed (run -c %s); start it with: sc.exe start %s\n", serviceName, cfgPath, serviceName)
					return nil
				},
			},
			{
				Name:  "uninstall",
				Usage: "remove the service",
				Action: func(c *cli.Context) error {
					m, err := mgr.Connect()
					if err != nil {
						return fmt.Errorf("service manager: %w", err)
					}
					defer m.Disconnect()
					s, err := m.OpenService(serviceName)
					if err != nil {
						return fmt.Errorf("open service: %w", err)
					}
					defer s.Close()
					if err := s.Delete(); err != nil {
						return fmt.Errorf("delete service: %w", err)
					}
					fmt.Fprintf(c.App.Writer, "service %s removed\n", serviceName)
					return nil
				},
			},
		},
	}}
}
