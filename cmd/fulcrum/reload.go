package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	goruntime "runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fulcrum-proxy/fulcrum/conf"
	"github.com/fulcrum-proxy/fulcrum/proxy"
	"github.com/fulcrum-proxy/fulcrum/proxy/check"
	"github.com/fulcrum-proxy/fulcrum/runtime"
	"github.com/rs/zerolog"
)

// reloader is the daemon's current proxy and the one way to replace it
// (issue 11): SIGHUP, the Runtime API's `reload` and `run --watch` all call
// reload. The Runtime API, the stats page and the checker follow: the API
// is given the new proxy (SetProxy), the stats page is rebuilt on the new
// proxy's frontends (setupStats) and the checker is restarted on it.
type reloader struct {
	path string // the configuration file
	// load reads and validates the configuration a reload switches to:
	// loadConfig(path), or the demo's built-in one.
	load func() (*conf.Config, error)
	logw io.Writer // where each configuration's logger writes
	log  zerolog.Logger
	fds  fdLimit // sizes each configuration (limits.go)

	cur atomic.Pointer[proxy.Proxy]
	// swapMu is held while a reload copies the running state into the new
	// proxy and swaps it in, and for reading while a stats page admin
	// action runs (change), so that no such action is applied to a proxy
	// whose state was already copied (it would be lost).
	swapMu sync.RWMutex

	mu         sync.Mutex   // serialises reloads and the final stop
	cfg        *conf.Config // the current configuration
	stopChecks func()       // stops the current proxy's checker
	api        *runtime.API // nil when no stats socket is configured
	closed     bool         // stopping: no more reloads
	// peers runs the [[peers]] sections; a reload reconfigures them on
	// the new proxy's tables once it serves.
	peers *peersRunner
	// stopResolvers stops the current proxy's DNS resolutions.
	stopResolvers func()

	retiring sync.WaitGroup // old proxies finishing their in-flight work
	// abortCtx ends when the final stop's hard_stop_after expires: the old
	// proxies still draining then close their connections too.
	abortCtx    context.Context
	abortRetire context.CancelFunc

	// threads keeps the process's thread count: nbthread, or what a
	// reload that removes it returns to, and the io_uring relays' own.
	threads *threadCount
}

// errStopping is returned by a reload that arrives while the daemon stops.
var errStopping = errors.New("stopping: reload refused")

// newReloader returns the reloader of p, which serves cfg and has started.
func newReloader(cfg *conf.Config, p *proxy.Proxy, logw io.Writer, log zerolog.Logger) *reloader {
	r := &reloader{path: cfg.File, logw: logw, log: log, cfg: cfg, stopChecks: func() {}, stopResolvers: func() {}, peers: &peersRunner{log: log},
		threads: &threadCount{base: goruntime.GOMAXPROCS(0), nbthread: cfg.Global.NbThread}}
	r.load = func() (*conf.Config, error) { return loadConfig(r.path, r.peers.local) }
	r.abortCtx, r.abortRetire = context.WithCancel(context.Background())
	r.cur.Store(p)
	return r
}

// current returns the proxy that serves new connections.
func (r *reloader) current() *proxy.Proxy { return r.cur.Load() }

// change runs f on the proxy that serves now, never during a reload's
// copy of the state: the stats page's admin actions go through it, as the
// Runtime API's commands wait for a reload (API.Hold).
func (r *reloader) change(f func(*proxy.Proxy)) {
	r.swapMu.RLock()
	defer r.swapMu.RUnlock()
	f(r.cur.Load())
}

// reload reads the configuration file again and, when it is valid,
// replaces the current proxy with one built from it (proxy.NewFrom,
// StartFrom, then Retire in the background). When the file is invalid, or
// a new bind cannot be opened, nothing changes: the error is logged and
// returned, and the current proxy keeps serving.
func (r *reloader) reload() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return errStopping
	}
	t0 := time.Now()
	cfg, err := r.load() // load.go: conf.Load and the daemon's own checks
	if err != nil {
		logConfigErrors(r.log, r.path, err, "reload refused: invalid configuration, the running one keeps serving")
		return err
	}
	old := r.cur.Load()
	before := bindAddrs(old) // p takes over the listeners it keeps
	log := newLogger(cfg.Global, r.logw)
	budget := r.fds.size(cfg, log, r.cfg.Global.MaxConn)
	logWarnings(cfg, log)
	var p *proxy.Proxy
	swap := func() {
		r.swapMu.Lock()
		defer r.swapMu.Unlock()
		// No probe may change the state being copied: the old checker
		// stops first, and starts again if the reload fails.
		r.stopChecks()
		r.stopResolvers() // DNS changes no server of old once its state is copied
		var stopResolvers func()
		p, err = proxy.NewFrom(old, cfg, log)
		if err == nil {
			p.OnRingThread(func(delta int) { r.threads.ring(delta, log) })
			setupStats(p, r.change, r.peers.status)
			check.Inherit(p, old)
			stopResolvers, err = startResolvers(p, log, nil, old)
			if err == nil {
				if err = p.StartFrom(old); err != nil {
					stopResolvers()
				}
			}
			if err != nil {
				p.Shutdown(context.Background()) // nothing listens; frees it
			}
		}
		if err != nil {
			r.stopChecks = startChecks(old, r.log)
			r.stopResolvers, _ = startResolvers(old, r.log, nil, old) // old keeps what it had
			if r.stopResolvers == nil {
				r.stopResolvers = func() {}
			}
			return
		}
		p.LimitDescriptors(budget) // the process's bound, shared with old
		r.stopResolvers = stopResolvers
		r.cur.Store(p)
		if r.api != nil {
			r.api.SetProxy(p)
		}
	}
	if r.api != nil {
		// No Runtime API command changes the old proxy between the copy
		// of its state and the swap (it would be lost): they wait.
		r.api.Hold(swap)
	} else {
		swap()
	}
	if err != nil {
		r.log.Error().Err(err).Str("file", r.path).Msg("reload failed, the configuration keeps serving")
		return err
	}
	logListening(log, p, before)
	r.stopChecks = startChecks(p, log)
	r.peers.reload(cfg, p)
	r.applyThreads(cfg, log)
	hardStop := r.cfg.Global.HardStopAfter
	r.cfg, r.log = cfg, log
	r.retiring.Add(1)
	go func() {
		defer r.retiring.Done()
		ctx := r.abortCtx
		if hardStop > 0 {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, hardStop)
			defer cancel()
		}
		if err := p.Retire(ctx, old); err != nil {
			log.Warn().Msg("reload: hard_stop_after reached, the old configuration's remaining connections closed")
		}
	}()
	log.Info().Str("file", r.path).Stringer("took", logDuration(time.Since(t0))).Msg("configuration reloaded")
	return nil
}

// applyThreads makes the process run cfg's nbthread (or, without one,
// the count it started with) after a reload, as a restart would:
// HAProxy's reload starts a new process, which reads nbthread again. Go
// changes the count of a running process (runtime.GOMAXPROCS).
func (r *reloader) applyThreads(cfg *conf.Config, log zerolog.Logger) {
	r.threads.setNbthread(cfg.Global.NbThread, log)
}

// close refuses further reloads, stops the checker and returns the
// current proxy, for the final stop.
func (r *reloader) close() *proxy.Proxy {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.closed = true
	return r.cur.Load()
}

// watch reloads whenever the configuration file's content differs from
// last (the content being served), looking every interval, until ctx
// ends. An invalid file is logged by reload and looked at again only when
// it changes.
func (r *reloader) watch(ctx context.Context, interval time.Duration, last []byte) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		data, err := os.ReadFile(r.path)
		if err != nil || bytes.Equal(data, last) {
			continue
		}
		last = data
		r.reload()
	}
}
