// Command fulcrum is the load balancer daemon: `fulcrum run -c FILE` serves
// a configuration, `fulcrum check -c FILE` validates one, `fulcrum import
// haproxy.cfg` converts an HAProxy configuration, `fulcrum demo` runs a
// self-contained demonstration and `fulcrum version` prints the build.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	goruntime "runtime"
	"runtime/debug"
	"runtime/pprof"
	"sync"
	"syscall"
	"time"

	"github.com/fulcrum-proxy/fulcrum/conf"
	"github.com/fulcrum-proxy/fulcrum/internal/memtrim"
	"github.com/fulcrum-proxy/fulcrum/proxy"
	"github.com/mattn/go-isatty"
	"github.com/rs/zerolog"
	"github.com/urfave/cli/v2"
)

// version is set at link time (-ldflags "-X main.version=..."); the module
// build info is used when it is empty.
var version = ""

func main() {
	applyDefaultThreads()
	os.Exit(run(os.Args, os.Stdout, os.Stderr))
}

// applyDefaultThreads sets the process's threads to nbthread's default
// (defaultThreads), unless the GOMAXPROCS environment variable is set; a
// configuration's nbthread overrides it when served (serveWith). It is
// called once, by main (tests serving in their own process keep theirs).
func applyDefaultThreads() {
	if os.Getenv("GOMAXPROCS") == "" {
		goruntime.GOMAXPROCS(defaultThreads(goruntime.GOMAXPROCS(0)))
	}
}

// run is main with its outputs injected, for tests. It returns the exit code.
func run(args []string, stdout, stderr io.Writer) int {
	return runWith(args, stdout, stderr, defaultConfig)
}

// runWith is run with the configuration read without -c (tests give
// their own).
func runWith(args []string, stdout, stderr io.Writer, fallback string) int {
	app := newApp(stdout, stderr, fallback)
	if err := app.Run(hoistImportFlags(args)); err != nil {
		var ec cli.ExitCoder
		if errors.As(err, &ec) {
			if msg := err.Error(); msg != "" {
				fmt.Fprintln(stderr, msg)
			}
			return ec.ExitCode()
		}
		fmt.Fprintln(stderr, "fulcrum:", err)
		return 1
	}
	return 0
}

func newApp(stdout, stderr io.Writer, fallback string) *cli.App {
	configFlag := &cli.StringFlag{Name: "config", Aliases: []string{"c"},
		Usage: "configuration `FILE`: fulcrum's TOML, or an haproxy.cfg (converted as fulcrum import does; default " + fallback + ")"}
	localPeerFlag := &cli.StringFlag{Name: "localpeer", Aliases: []string{"L"},
		Usage: "this instance's `NAME` in the [[peers]] sections (HAProxy's -L; default: localpeer, else the host name)"}
	return &cli.App{
		Name:        "fulcrum",
		Usage:       "an HTTP and TCP load balancer in the tradition of HAProxy",
		Writer:      stdout,
		ErrWriter:   stderr,
		HideVersion: true,
		// Exit codes are returned by run, never by os.Exit inside the library.
		ExitErrHandler: func(*cli.Context, error) {},
		Commands: []*cli.Command{
			{
				Name:  "run",
				Usage: "serve a configuration in the foreground",
				Description: "Logs go to stderr. SIGTERM or SIGINT stops accepting, lets in-flight\n" +
					"requests finish within hard_stop_after and exits 0. SIGHUP (or SIGUSR2,\n" +
					"HAProxy's master-worker reload signal) reloads the configuration file\n" +
					"(so does --watch when it changes): an invalid file changes nothing;\n" +
					"a valid one serves new connections at once while in-flight work\n" +
					"finishes on the old one.",
				Flags: []cli.Flag{configFlag, &cli.BoolFlag{Name: "watch", Usage: "reload when the configuration file changes"}, localPeerFlag},
				Action: func(c *cli.Context) error {
					path, err := configPath(c.String("config"), c.Args().Slice(), fallback)
					if err != nil {
						return cli.Exit("fulcrum: "+err.Error(), 2)
					}
					cfg, err := loadConfig(path, c.String("localpeer"))
					if err == nil {
						err = checkLocalPeers(cfg, c.String("localpeer"))
					}
					if err != nil {
						return cli.Exit(err.Error(), 1)
					}
					opts := serveOptions{localPeer: c.String("localpeer")}
					if c.Bool("watch") {
						opts.watch = time.Second
					}
					// A stalled reader of the log costs lines, not requests.
					logw, done := logWriter(stderr, cfg.Global.LogFormat)
					defer done()
					return serveWith(c.Context, cfg, logw, opts)
				},
			},
			{
				Name:  "check",
				Usage: "validate a configuration file",
				Description: "Prints \"configuration is valid\" and exits 0, or prints every error as\n" +
					"FILE:LINE: message and exits 1. An haproxy.cfg (recognised by its content) is\n" +
					"checked as `fulcrum import` converts it: each line fulcrum would not run is an\n" +
					"error; the lines it runs differently or has built in are listed too.",
				Flags: []cli.Flag{configFlag, localPeerFlag},
				Action: func(c *cli.Context) error {
					path, err := configPath(c.String("config"), c.Args().Slice(), fallback)
					if err != nil {
						return cli.Exit("fulcrum: "+err.Error(), 2)
					}
					cfg, notes, err := loadConfigNotes(path, c.String("localpeer"))
					// The notes in line order, the errors among them too.
					var ne notesError
					refused := errors.As(err, &ne)
					for _, n := range notes {
						if refused || !n.Kind.Blocking() {
							fmt.Fprintf(stderr, "%s:%s\n", path, n)
						}
					}
					if refused {
						return cli.Exit("", 1)
					}
					if err == nil {
						err = checkLocalPeers(cfg, c.String("localpeer"))
					}
					if err != nil {
						return cli.Exit(err.Error(), 1)
					}
					if notes == nil { // an haproxy.cfg's are among its notes
						for _, w := range cfg.Warnings {
							fmt.Fprintln(stderr, w.Warning())
						}
					}
					fmt.Fprintln(stdout, "configuration is valid")
					return nil
				},
			},
			importCommand(stdout, stderr),
			demoCommand(stdout, stderr),
			{
				Name:  "version",
				Usage: "print the version",
				Action: func(c *cli.Context) error {
					fmt.Fprintln(stdout, "fulcrum", buildVersion())
					return nil
				},
			},
		},
	}
}

// buildVersion returns the link-time version or the module's.
func buildVersion() string {
	if version != "" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		v := bi.Main.Version
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" && len(s.Value) >= 12 {
				v += " (" + s.Value[:12] + ")"
			}
		}
		return v
	}
	return "(unknown)"
}

// newLogger builds the process logger from the global settings.
func newLogger(g conf.Global, w io.Writer) zerolog.Logger {
	level, err := zerolog.ParseLevel(g.LogLevel)
	if err != nil || g.LogLevel == "" {
		level = zerolog.InfoLevel
	}
	if g.LogFormat == "console" {
		color := false
		f, _ := w.(*os.File)
		if l, ok := w.(*asyncLog); ok {
			f = l.f
		}
		if f != nil {
			color = isatty.IsTerminal(f.Fd()) && os.Getenv("NO_COLOR") == ""
		}
		// Access log fields in HAProxy's order, not sorted by name.
		w = zerolog.ConsoleWriter{Out: w, TimeFormat: time.RFC3339, NoColor: !color, FieldsOrder: proxy.AccessLogFields}
	}
	return zerolog.New(w).Level(level).With().Timestamp().Logger()
}

// serve runs cfg until SIGTERM/SIGINT (or ctx ends), then stops gracefully
// within hard_stop_after. started, if non-nil, is called once listening.
func serve(ctx context.Context, cfg *conf.Config, logw io.Writer, started func(*proxy.Proxy)) error {
	var opts serveOptions
	if started != nil {
		opts.started = func(r *reloader) { started(r.current()) }
	}
	return serveWith(ctx, cfg, logw, opts)
}

// serveOptions are serve's optional behaviours.
type serveOptions struct {
	// watch reloads when the configuration file changes, looking every
	// watch (run --watch); 0 = never.
	watch time.Duration
	// started, if non-nil, is called once listening.
	started func(*reloader)
	// load, if non-nil, gives the configuration a reload switches to, in
	// place of reading the file again (the demo's is built in).
	load func() (*conf.Config, error)
	// serversInProcess says the servers run in this process (the demo's
	// upstreams): each proxied connection then costs a third descriptor,
	// which sizing maxconn from the descriptor limit counts (limits.go).
	serversInProcess bool
	// localPeer is run --localpeer: the local peer's name in every
	// [[peers]] section ("" = the section's localpeer, else the host name).
	localPeer string
}

// bindAddr is one address a frontend listens on.
type bindAddr struct{ frontend, addr string }

// bindAddrs returns the addresses p's frontends listen on. Read it before
// a reload: the new proxy takes over the listeners it keeps.
func bindAddrs(p *proxy.Proxy) []bindAddr {
	var out []bindAddr
	for _, fe := range p.Frontends {
		for _, a := range fe.Addrs() {
			out = append(out, bindAddr{fe.Name, a.String()})
		}
	}
	return out
}

// logListening logs a "listening" line for each bind address of p that
// was not in before (the addresses of the proxy p replaced at a reload;
// nil at start), and a "stopped listening" line for each of before that p
// does not listen on.
func logListening(log zerolog.Logger, p *proxy.Proxy, before []bindAddr) {
	had := map[string]bool{}
	for _, b := range before {
		had[b.addr] = true
	}
	has := map[string]bool{}
	for _, fe := range p.Frontends {
		layers := fe.NetIOs()
		for i, a := range fe.Addrs() {
			has[a.String()] = true
			if !had[a.String()] {
				log.Info().Str("frontend", fe.Name).Str("bind", a.String()).Str("mode", string(fe.Conf.Mode)).Str("netio", layers[i]).Msg("listening")
			}
		}
	}
	for _, b := range before {
		if !has[b.addr] {
			log.Info().Str("frontend", b.frontend).Str("bind", b.addr).Msg("stopped listening")
		}
	}
}

// defaultThreads is nbthread's default for a process that Go gives cpus
// threads (GOMAXPROCS's own default: the CPUs of the affinity mask, or the
// cgroup's CPU limit): one fewer, at least one. The CPU left over serves
// the kernel's network processing (softirqs) and whatever shares the host;
// on the 2-CPU machine of bench/README.md ("The default thread count"),
// one thread served more requests per CPU-second than two in every
// keep-alive mode, with a shorter tail. nbthread, or the GOMAXPROCS
// environment variable, overrides it.
func defaultThreads(cpus int) int { return max(1, cpus-1) }

// serveWith is serve with its options. SIGHUP, the Runtime API's reload
// and opts.watch reload the configuration (reload.go).
func serveWith(ctx context.Context, cfg *conf.Config, logw io.Writer, opts serveOptions) error {
	log := newLogger(cfg.Global, logw)
	if cfg.File != "" && opts.load == nil { // the demo's is built in, not read
		log.Info().Str("file", cfg.File).Msg("configuration read") // which file, when -c was left out
	}
	threads := &threadCount{base: goruntime.GOMAXPROCS(0), nbthread: cfg.Global.NbThread} // base: for reloads
	if n := cfg.Global.NbThread; n > 0 {
		goruntime.GOMAXPROCS(n)
	}
	// FULCRUM_CPUPROFILE=FILE records a CPU profile from start to stop, for
	// performance work (go tool pprof bin/fulcrum FILE).
	if path := os.Getenv("FULCRUM_CPUPROFILE"); path != "" {
		if f, err := os.Create(path); err == nil {
			pprof.StartCPUProfile(f)
			defer func() {
				pprof.StopCPUProfile()
				f.Close()
			}()
		}
	}
	// The descriptor limit, raised to the hard one, sizes maxconn when the
	// file sets none and bounds the connections' descriptors (limits.go).
	perConn := 2
	if opts.serversInProcess {
		perConn = 3
	}
	fds := startFDLimit(perConn)
	budget := fds.size(cfg, log, 0)
	startedAt := time.Now()
	logWarnings(cfg, log)
	p, err := proxy.New(cfg, log)
	if err != nil {
		return cli.Exit("fulcrum: "+err.Error(), 1)
	}
	p.LimitDescriptors(budget)
	p.OnRingThread(func(delta int) { threads.ring(delta, log) })
	saved := loadState(cfg, p, log)                          // state_file (statefile.go)
	stopResolvers, err := startResolvers(p, log, saved, nil) // init_addr, then DNS (resolvers.go)
	if err != nil {
		return cli.Exit("fulcrum: "+err.Error(), 1)
	}
	r := newReloader(cfg, p, logw, log)
	r.fds = fds
	r.threads = threads
	r.stopResolvers = stopResolvers
	defer func() { r.stopResolvers() }()
	if opts.load != nil {
		r.load = opts.load
	}
	// A reload is refused, as a start is, when a [[peers]] section has no
	// member named as the local peer.
	r.peers.local = opts.localPeer
	load := r.load
	r.load = func() (*conf.Config, error) {
		cfg, err := load()
		if err == nil {
			err = checkLocalPeers(cfg, opts.localPeer)
		}
		return cfg, err
	}
	setupStats(p, r.change, r.peers.status) // stats page and /metrics on [frontend.stats] (stats.go)
	sigs := make(chan os.Signal, 1)
	// SIGUSR2 is HAProxy's reload signal in master-worker mode; operators'
	// scripts send it, and unhandled it would end the process.
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGUSR2)
	defer signal.Stop(sigs)
	if err := p.Start(); err != nil {
		return cli.Exit("fulcrum: "+err.Error(), 1)
	}
	// [[peers]]: stick tables shared with the other members (peers.go).
	if err := r.peers.start(cfg, p); err != nil {
		p.Shutdown(context.Background())
		return cli.Exit("fulcrum: "+err.Error(), 1)
	}
	defer r.peers.stop() // after the graceful stop: the last changes still go out
	r.stopChecks = startChecks(p, log)
	defer func() { r.stopChecks() }()             // after the graceful stop, as HAProxy's checks
	stopRuntime, err := startRuntime(cfg, r, log) // Runtime API sockets (runtime.go)
	if err != nil {
		p.Shutdown(context.Background())
		return cli.Exit("fulcrum: "+err.Error(), 1)
	}
	defer stopRuntime() // after the proxy's graceful stop: the drain stays observable
	logListening(log, p, nil)
	watchCtx, stopWatch := context.WithCancel(ctx)
	var watching sync.WaitGroup
	// Memory a burst of connections left is given back once the process
	// goes quiet (internal/memtrim).
	watching.Add(1)
	go func() {
		defer watching.Done()
		memtrim.Run(watchCtx, &memtrim.Trimmer{Policy: memtrim.DefaultPolicy()}, time.Second, func(before, after uint64) {
			log.Debug().Uint64("heap_before_kb", before>>10).Uint64("heap_after_kb", after>>10).Msg("memory given back")
		})
	}()
	if opts.watch > 0 {
		// The content to compare with is read here, before `started`: read
		// in the goroutine, it could already be a later version.
		initial, _ := os.ReadFile(r.path)
		watching.Add(1)
		go func() {
			defer watching.Done()
			r.watch(watchCtx, opts.watch, initial)
		}()
	}
	if opts.started != nil {
		opts.started(r)
	}
	var sig os.Signal
wait:
	for {
		select {
		case sig = <-sigs:
			if sig == syscall.SIGHUP || sig == syscall.SIGUSR2 {
				r.reload() // logs its outcome
				continue
			}
			break wait
		case <-ctx.Done():
			break wait
		}
	}
	stopWatch()
	watching.Wait()
	p = r.close()
	cfg = r.cfg
	hardStop := "none" // 0: no limit
	if d := cfg.Global.HardStopAfter; d > 0 {
		hardStop = logDuration(d).String()
	}
	log.Info().Stringer("signal", sigString{sig}).Str("hard_stop_after", hardStop).Msg("stopping: no new connections, finishing in-flight work")
	stopCtx := context.Background()
	if d := cfg.Global.HardStopAfter; d > 0 {
		var cancel context.CancelFunc
		stopCtx, cancel = context.WithTimeout(stopCtx, d)
		defer cancel()
	}
	// Configurations replaced by a reload and still draining get the same
	// deadline.
	stopAbort := context.AfterFunc(stopCtx, r.abortRetire)
	defer stopAbort()
	if err := p.Shutdown(stopCtx); err != nil {
		log.Warn().Msg("hard_stop_after reached: remaining connections closed")
	}
	r.retiring.Wait()
	r.abortRetire()
	saveState(cfg, p, startedAt, log)
	log.Info().Msg("stopped")
	return nil
}

// logWarnings logs what the configuration loaded with a warning (an
// expired certificate), at start and at each reload.
func logWarnings(cfg *conf.Config, log zerolog.Logger) {
	for _, w := range cfg.Warnings {
		log.Warn().Str("file", w.File).Int("line", w.Line).Msg(w.Msg)
	}
}

type sigString struct{ s os.Signal }

func (s sigString) String() string {
	if s.s == nil {
		return "none"
	}
	return s.s.String()
}
