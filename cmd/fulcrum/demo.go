package main

import (
	"context"
	_ "embed"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/fulcrum-proxy/fulcrum/conf"
	"github.com/fulcrum-proxy/fulcrum/proxy"
	"github.com/urfave/cli/v2"
)

// demoConfig is the embedded configuration of `fulcrum demo`.
//
//go:embed demo.toml
var demoConfig []byte

// demoLatencies are the response delays of the three built-in upstreams, so
// that the timers in the access log differ visibly.
var demoLatencies = []time.Duration{0, 20 * time.Millisecond, 80 * time.Millisecond}

func demoCommand(stdout, stderr io.Writer) *cli.Command {
	return &cli.Command{
		Name:  "demo",
		Usage: "run a self-contained demo: three upstreams behind the proxy",
		Description: "Starts three built-in upstream HTTP servers (with 0, 20 and 80 ms of latency)\n" +
			"and the proxy from an embedded configuration, prints what to try, and runs\n" +
			"until Ctrl-C. Nothing is read from or written to disk.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "listen", Value: "127.0.0.1:8080", Usage: "address of the demo's HTTP frontend"},
			&cli.StringFlag{Name: "stats", Value: "127.0.0.1:8404", Usage: "address of the stats page (/stats) and /metrics"},
			&cli.StringFlag{Name: "socket", Value: "fulcrum.sock", Usage: "path of the admin socket (Runtime API)"},
		},
		Action: func(c *cli.Context) error {
			return runDemo(c.Context, demoAddrs{c.String("listen"), c.String("stats"), c.String("socket")}, stdout, stderr, nil)
		},
	}
}

// runDemo starts the upstreams and the proxy and serves until a signal or
// ctx ends. started, if non-nil, is called once the proxy listens.
// demoAddrs are where the demo listens.
type demoAddrs struct {
	listen, stats, socket string
}

func runDemo(ctx context.Context, at demoAddrs, stdout, stderr io.Writer, started func(*proxy.Proxy)) error {
	var upstreams []string
	// build gives the demo's configuration, at start and at each reload
	// (SIGHUP, the socket's reload): the built-in file, on the upstreams
	// started here and the addresses asked for, the binds those the first
	// build got (a port 0 is kept).
	build := func(binds ...[]string) (*conf.Config, error) {
		cfg, err := conf.Parse("demo.toml", demoConfig)
		if err != nil {
			return nil, err
		}
		for i, s := range cfg.Backends[0].Servers {
			s.Address = upstreams[i]
		}
		cfg.Frontends[0].Binds = binds[0]
		cfg.Frontends[1].Binds = binds[1]
		cfg.Global.StatsSockets[0].Path = at.socket
		return cfg, nil
	}
	base, err := conf.Parse("demo.toml", demoConfig)
	if err != nil {
		return cli.Exit("fulcrum: embedded demo config: "+err.Error(), 1)
	}
	for i, s := range base.Backends[0].Servers {
		addr, stop, err := startDemoUpstream(s.Name, demoLatencies[i])
		if err != nil {
			return cli.Exit("fulcrum: demo upstream: "+err.Error(), 1)
		}
		defer stop()
		upstreams = append(upstreams, addr)
	}
	cfg, err := build([]string{at.listen}, []string{at.stats})
	if err != nil {
		return cli.Exit("fulcrum: embedded demo config: "+err.Error(), 1)
	}
	// The addresses the frontends got, for reloads (set once listening; a
	// reload through the socket may come before).
	var bound atomic.Pointer[[2][]string]
	bound.Store(&[2][]string{{at.listen}, {at.stats}})
	opts := serveOptions{load: func() (*conf.Config, error) {
		b := bound.Load()
		return build(b[0], b[1])
	}, serversInProcess: true}
	opts.started = func(r *reloader) {
		p := r.current()
		addr := p.Frontends[0].Addrs()[0].String()
		statsAddr := p.Frontends[1].Addrs()[0].String()
		bound.Store(&[2][]string{{addr}, {statsAddr}})
		fmt.Fprintf(stdout, `
fulcrum demo is running: frontend "www" on http://%[1]s, balancing
roundrobin over three built-in upstreams s1 (weight 2, 0 ms), s2 (weight 1,
20 ms) and s3 (weight 1, 80 ms). The access log goes to stderr.

Try:
  curl -s http://%[1]s/                       # one request, see which server answered
  for i in $(seq 8); do curl -s http://%[1]s/; done   # 4 x s1, 2 x s2, 2 x s3
  curl -si http://%[1]s/ | grep -i x-served-by
  curl -s -H 'Connection: close' http://%[1]s/hello

The stats page (servers, states, counters; drain a server from it):
  http://%[2]s/stats     also ;csv and ;json, and /metrics for Prometheus

The admin socket speaks HAProxy's Runtime API:
  %[4]s -s %[3]s show stat
  echo "show servers state" | socat stdio unix-connect:%[3]s
  echo "set server web/s3 state drain" | socat stdio unix-connect:%[3]s

Press Ctrl-C to stop.
`, addr, statsAddr, at.socket, ctlPath())
		if started != nil {
			started(p)
		}
	}
	logw, done := logWriter(stderr, cfg.Global.LogFormat)
	defer done()
	return serveWith(ctx, cfg, logw, opts)
}

// ctlPath is how the demo's hint names fulcrumctl: beside the running
// binary when it is there (make build puts both in bin/), as the
// current directory sees it; else "fulcrumctl", from $PATH.
func ctlPath() string {
	exe, err := os.Executable()
	if err != nil {
		return "fulcrumctl"
	}
	ctl := filepath.Join(filepath.Dir(exe), "fulcrumctl")
	if _, err := os.Stat(ctl); err != nil {
		return "fulcrumctl"
	}
	if wd, err := os.Getwd(); err == nil {
		if rel, err := filepath.Rel(wd, ctl); err == nil && !strings.HasPrefix(rel, "..") {
			return "./" + rel
		}
	}
	return ctl
}

// startDemoUpstream starts one built-in upstream on a free loopback port.
// It answers every request with its name after its latency.
func startDemoUpstream(name string, latency time.Duration) (string, func(), error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	srv := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if latency > 0 {
				t := time.NewTimer(latency)
				select {
				case <-t.C:
				case <-r.Context().Done():
					t.Stop()
					return
				}
			}
			w.Header().Set("X-Served-By", name)
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			fmt.Fprintf(w, "hello from %s (%s latency), you asked for %s, X-Forwarded-For: %s\n",
				name, latency, r.URL.Path, r.Header.Get("X-Forwarded-For"))
		}),
		ReadHeaderTimeout: 10 * time.Second,
	}
	go srv.Serve(l)
	return l.Addr().String(), func() { srv.Close() }, nil
}
