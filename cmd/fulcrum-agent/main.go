// Command fulcrum-agent is a load-feedback agent for the agent checks of
// HAProxy and fulcrum. It runs on each server behind the balancer and
// answers every connection with one line, computed from the machine's load:
// "up ready 73%", "up drain #cpu 97% over threshold 90%", "down #process
// nginx not running". `fulcrum-agent set drain|maint|ready|auto` forces a
// state locally, `fulcrum-agent check` validates the configuration and
// `--once` prints the reply the agent would give now.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"
	"time"

	"github.com/fulcrum-proxy/fulcrum/cmd/fulcrum-agent/internal/agent"
	"github.com/mattn/go-isatty"
	"github.com/rs/zerolog"
	"github.com/urfave/cli/v2"
)

// version is set at link time (-ldflags "-X main.version=..."); the module
// build info is used when it is empty.
var version = ""

func main() {
	if handled, code := runService(os.Args); handled {
		os.Exit(code)
	}
	os.Exit(run(os.Args, os.Stdout, os.Stderr))
}

// sourceFunc builds and starts the load source for a configuration. Tests
// replace it with a ManualSource.
type sourceFunc func(ctx context.Context, cfg *agent.Config, log zerolog.Logger) (agent.Source, error)

// systemSource is the production sourceFunc: gopsutil, sampled in the
// background. It returns once the first CPU window is measured.
func systemSource(ctx context.Context, cfg *agent.Config, log zerolog.Logger) (agent.Source, error) {
	s := agent.NewSystemSource(cfg, log)
	if err := s.Start(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// run is main with its outputs injected, for tests. It returns the exit code.
func run(args []string, stdout, stderr io.Writer) int {
	return runApp(context.Background(), newApp(stdout, stderr, systemSource), args, stderr)
}

// runApp runs app and turns its error into an exit code.
func runApp(ctx context.Context, app *cli.App, args []string, stderr io.Writer) int {
	if err := app.RunContext(ctx, args); err != nil {
		var ec cli.ExitCoder
		if errors.As(err, &ec) {
			if msg := err.Error(); msg != "" {
				fmt.Fprintln(stderr, msg)
			}
			return ec.ExitCode()
		}
		fmt.Fprintln(stderr, "fulcrum-agent:", err)
		return 1
	}
	return 0
}

// newApp builds the command line. With no command it runs the agent, as
// `run` does.
func newApp(stdout, stderr io.Writer, newSource sourceFunc) *cli.App {
	configFlag := &cli.StringFlag{
		Name: "config", Aliases: []string{"c"}, Usage: "configuration `FILE` (TOML)",
		DefaultText: agent.DefaultConfigPath() + ", defaults if absent",
	}
	runFlags := []cli.Flag{
		configFlag,
		&cli.StringFlag{Name: "listen", Aliases: []string{"l"}, Usage: "listen on `ADDR`, overriding the file's listen"},
		&cli.BoolFlag{Name: "once", Usage: "print the reply the agent would give now, and exit"},
	}
	runAction := func(c *cli.Context) error {
		cfg, err := loadConfig(c.String("config"), false)
		if err != nil {
			return cli.Exit(err.Error(), 1)
		}
		if l := c.String("listen"); l != "" {
			cfg.Listen = l
		}
		if c.Bool("once") {
			return once(c.Context, cfg, stdout, stderr, newSource)
		}
		log, closeLog, err := newLogger(cfg, stderr)
		if err != nil {
			return cli.Exit(err.Error(), 1)
		}
		defer closeLog()
		ctx, stop := signal.NotifyContext(c.Context, os.Interrupt, syscall.SIGTERM)
		defer stop()
		return serve(ctx, cfg, log, newSource, nil)
	}
	return &cli.App{
		Name:        "fulcrum-agent",
		Usage:       "answer agent checks of HAProxy and fulcrum with this machine's load",
		Writer:      stdout,
		ErrWriter:   stderr,
		HideVersion: true,
		// Exit codes are returned by run, never by os.Exit inside the library.
		ExitErrHandler: func(*cli.Context, error) {},
		Flags:          runFlags,
		Action:         runAction,
		Commands: append([]*cli.Command{
			{
				Name:  "run",
				Usage: "answer agent checks in the foreground (the default)",
				Description: "Logs go to stderr (or log_file). SIGTERM or SIGINT stops accepting,\n" +
					"lets the connections in progress finish and exits 0.",
				Flags:  runFlags,
				Action: runAction,
			},
			{
				Name:        "check",
				Usage:       "validate a configuration file",
				Description: "Prints \"configuration is valid\" and exits 0, or prints every error as\nFILE:LINE: message and exits 1.",
				Flags:       []cli.Flag{configFlag},
				Action: func(c *cli.Context) error {
					if _, err := loadConfig(c.String("config"), true); err != nil {
						return cli.Exit(err.Error(), 1)
					}
					fmt.Fprintln(stdout, "configuration is valid")
					return nil
				},
			},
			{
				Name:      "set",
				Usage:     "force a state on this server: drain, maint, ready, or auto to follow the load again",
				ArgsUsage: "drain|maint|ready|auto",
				Description: "Writes the state file (state_file in the configuration); the agent\n" +
					"answers with it from its next connection on, so the balancer sees it at\n" +
					"its next agent check. Needs write access to the state file.",
				Flags: []cli.Flag{configFlag},
				Action: func(c *cli.Context) error {
					if c.NArg() != 1 {
						return cli.Exit("usage: fulcrum-agent set drain|maint|ready|auto", 2)
					}
					ov, err := agent.ParseOverride(c.Args().First())
					if err != nil {
						return cli.Exit(err.Error(), 2)
					}
					cfg, err := loadConfig(c.String("config"), false)
					if err != nil {
						return cli.Exit(err.Error(), 1)
					}
					if err := (agent.Control{Path: cfg.StateFile}).Set(ov); err != nil {
						return cli.Exit(fmt.Sprintf("fulcrum-agent: set %s: %v", ov, err), 1)
					}
					fmt.Fprintf(stdout, "state %s (%s)\n", ov, cfg.StateFile)
					return nil
				},
			},
			{
				Name:  "version",
				Usage: "print the version",
				Action: func(*cli.Context) error {
					fmt.Fprintln(stdout, "fulcrum-agent", buildVersion())
					return nil
				},
			},
		}, serviceCommands()...),
	}
}

// loadConfig loads path, or the default path when path is empty. A missing
// default file gives the defaults, unless mustExist (for `check`).
func loadConfig(path string, mustExist bool) (*agent.Config, error) {
	explicit := path != ""
	if !explicit {
		path = agent.DefaultConfigPath()
	}
	cfg, err := agent.LoadConfig(path)
	if errors.Is(err, fs.ErrNotExist) && !explicit && !mustExist {
		d := agent.Default()
		return &d, nil
	}
	if err != nil {
		var ce agent.ConfigErrors
		if errors.As(err, &ce) {
			return nil, err
		}
		return nil, fmt.Errorf("fulcrum-agent: %w", err)
	}
	return &cfg, nil
}

// once prints the reply the agent would give now. Logs (warnings only) go
// to stderr so stdout holds just the line.
func once(ctx context.Context, cfg *agent.Config, stdout, stderr io.Writer, newSource sourceFunc) error {
	log := zerolog.New(zerolog.ConsoleWriter{Out: stderr, NoColor: true}).Level(zerolog.WarnLevel)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	src, err := newSource(ctx, cfg, log)
	if err != nil {
		return cli.Exit("fulcrum-agent: "+err.Error(), 1)
	}
	srv, err := agent.NewServer(cfg, src, log)
	if err != nil {
		return cli.Exit("fulcrum-agent: "+err.Error(), 1)
	}
	fmt.Fprintln(stdout, srv.Reply().String())
	return nil
}

// serve runs the agent until ctx is done. ready, if not nil, receives the
// bound address once the listener is open (tests listen on :0).
func serve(ctx context.Context, cfg *agent.Config, log zerolog.Logger, newSource sourceFunc, ready chan<- net.Addr) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	src, err := newSource(ctx, cfg, log)
	if err != nil {
		return cli.Exit("fulcrum-agent: "+err.Error(), 1)
	}
	srv, err := agent.NewServer(cfg, src, log)
	if err != nil {
		return cli.Exit("fulcrum-agent: "+err.Error(), 1)
	}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return cli.Exit("fulcrum-agent: "+err.Error(), 1)
	}
	log.Info().Str("listen", ln.Addr().String()).Strs("allow", cfg.Allow).Str("state_file", cfg.StateFile).
		Str("version", buildVersion()).Msg("fulcrum-agent answering agent checks")
	if ready != nil {
		ready <- ln.Addr()
	}
	err = srv.Serve(ctx, ln)
	log.Info().Msg("stopped")
	return err
}

// newLogger builds the zerolog logger the configuration asks for. The
// returned func closes the log file, if any.
func newLogger(cfg *agent.Config, stderr io.Writer) (zerolog.Logger, func(), error) {
	level, err := zerolog.ParseLevel(cfg.LogLevel)
	if err != nil {
		level = zerolog.InfoLevel
	}
	w, closeFn := stderr, func() {}
	color := false
	if f, ok := stderr.(*os.File); ok {
		color = isatty.IsTerminal(f.Fd())
	}
	if cfg.LogFile != "" {
		f, err := os.OpenFile(cfg.LogFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o640)
		if err != nil {
			return zerolog.Logger{}, nil, fmt.Errorf("fulcrum-agent: log_file: %w", err)
		}
		w, closeFn, color = f, func() { f.Close() }, false
	}
	if cfg.LogFormat == "console" {
		w = zerolog.ConsoleWriter{Out: w, TimeFormat: time.RFC3339, NoColor: !color}
	}
	return zerolog.New(w).Level(level).With().Timestamp().Logger(), closeFn, nil
}

// buildVersion is the link-time version or the module's.
func buildVersion() string {
	if version != "" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "dev"
}
