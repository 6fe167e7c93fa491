package proxy

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fulcrum-proxy/fulcrum/conf"
	"github.com/rs/zerolog"
)

// Proxy is a running configuration: its frontends, backends and servers.
type Proxy struct {
	Conf      *conf.Config
	Frontends []*Frontend
	Backends  []*Backend

	log     zerolog.Logger
	ctx     context.Context
	cancel  context.CancelFunc
	started time.Time

	tables      tables    // stick tables (stick.go)
	globalSlots limiter   // global maxconn (set maxconn global changes it)
	work        chan work // accepted connections for idle worker goroutines
	stopping    atomic.Bool
	wg          sync.WaitGroup // accept loops and connections
}

// New builds a proxy from a validated configuration. Nothing listens until
// Start. log receives the access log (info) and events.
func New(cfg *conf.Config, log zerolog.Logger) (*Proxy, error) {
	ctx, cancel := context.WithCancel(context.Background())
	p := &Proxy{Conf: cfg, log: log, ctx: ctx, cancel: cancel, work: make(chan work)}
	byName := map[string]*Backend{}
	for i, bc := range cfg.Backends {
		b, err := newBackend(i+1, bc)
		if err != nil {
			cancel()
			return nil, err
		}
		b.log = log // panic_threshold warnings
		p.Backends = append(p.Backends, b)
		byName[b.Name] = b
	}
	p.globalSlots.setMax(cfg.Global.MaxConn)
	for i, fc := range cfg.Frontends {
		fe := &Frontend{
			Name: fc.Name, ID: i + 1, Conf: fc, p: p,
			timeoutClient:      fc.TimeoutClient,
			timeoutHTTPRequest: fc.TimeoutHTTPRequest,
			forwardFor:         fc.ForwardFor,
			conns:              map[*clientConn]struct{}{},
		}
		if fc.DefaultBackend != "" {
			fe.backend = byName[fc.DefaultBackend]
			if fe.backend == nil {
				cancel()
				return nil, fmt.Errorf("frontend %q: default_backend %q: no such backend", fc.Name, fc.DefaultBackend)
			}
			// forwardfor may be set on the backend too (HAProxy allows it in
			// both sections); either turns it on.
			fe.forwardFor = fe.forwardFor || fe.backend.Conf.ForwardFor
		}
		if err := fe.buildRules(byName); err != nil {
			cancel()
			return nil, err
		}
		fe.slots.setMax(fc.MaxConn)
		p.Frontends = append(p.Frontends, fe)
	}
	p.numberProxies()
	if err := p.buildTables(); err != nil {
		cancel()
		return nil, err
	}
	p.deriveFullConn()
	return p, nil
}

// deriveFullConn sets the fullconn of each backend that has none, as
// HAProxy does: 10% of the sum of the maxconn of the frontends that route
// to it by default_backend or use_backend (a frontend without maxconn
// counts the global one), at least 1.
func (p *Proxy) deriveFullConn() {
	reach := map[*Backend]int{}
	for _, fe := range p.Frontends {
		mc := fe.Conf.MaxConn
		if mc == 0 {
			mc = p.Conf.Global.MaxConn
		}
		seen := map[*Backend]bool{}
		for _, be := range append([]*Backend{fe.backend}, fe.useBackend...) {
			if be != nil && !seen[be] {
				seen[be] = true
				reach[be] += mc
			}
		}
	}
	for _, b := range p.Backends {
		if b.Conf.FullConn == 0 {
			b.fullConn.Store(int64(max(1, reach[b]/10)))
		}
	}
}

// numberProxies gives frontends and backends one numbering, in declaration
// order (by configuration line; frontends first among equal lines), as
// HAProxy numbers its proxies (the iid column of show stat).
func (p *Proxy) numberProxies() {
	type proxyRef struct {
		line int
		fe   *Frontend
		be   *Backend
	}
	all := make([]proxyRef, 0, len(p.Frontends)+len(p.Backends))
	for _, fe := range p.Frontends {
		all = append(all, proxyRef{line: fe.Conf.Line, fe: fe})
	}
	for _, be := range p.Backends {
		all = append(all, proxyRef{line: be.Conf.Line, be: be})
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].line < all[j].line })
	for i, r := range all {
		if r.fe != nil {
			r.fe.ID = i + 1
		} else {
			r.be.ID = i + 1
		}
	}
}

// Start opens every bind and starts accepting. If a bind fails, nothing is
// left listening and the error names the frontend and address.
func (p *Proxy) Start() error {
	p.started = time.Now()
	for i, fe := range p.Frontends {
		if err := fe.listen(); err != nil {
			for _, prev := range p.Frontends[:i] {
				for _, l := range prev.listeners {
					l.Close()
				}
			}
			return fmt.Errorf("frontend %q: %w", fe.Name, err)
		}
	}
	for _, fe := range p.Frontends {
		for _, l := range fe.listeners {
			p.wg.Add(1)
			go fe.acceptLoop(l)
		}
	}
	p.expireTables()
	return nil
}

// Frontend returns the frontend named name, or nil.
func (p *Proxy) Frontend(name string) *Frontend {
	for _, fe := range p.Frontends {
		if fe.Name == name {
			return fe
		}
	}
	return nil
}

// Backend returns the backend named name, or nil.
func (p *Proxy) Backend(name string) *Backend {
	for _, b := range p.Backends {
		if b.Name == name {
			return b
		}
	}
	return nil
}

// Shutdown stops accepting, closes idle client connections and waits for
// in-flight requests and TCP sessions to finish. When ctx ends first (the
// hard_stop_after deadline), remaining connections are closed and ctx's
// error is returned.
func (p *Proxy) Shutdown(ctx context.Context) error {
	p.stopping.Store(true)
	for _, fe := range p.Frontends {
		for _, l := range fe.listeners {
			l.Close()
		}
	}
	p.cancel()
	done := make(chan struct{})
	go func() {
		p.wg.Wait()
		close(done)
	}()
	// Idle keep-alive connections are closed at once; a connection that
	// becomes idle later sees the stop flag and closes itself.
	for _, fe := range p.Frontends {
		fe.closeIdle()
	}
	var err error
	select {
	case <-done:
	case <-ctx.Done():
		err = ctx.Err()
		for _, fe := range p.Frontends {
			fe.closeAll()
		}
		<-done
	}
	for _, b := range p.Backends {
		for _, s := range b.Servers {
			s.pool.closeAll()
		}
	}
	return err
}

// acquire takes a frontend slot then a global slot, waiting while either
// limit is reached. It returns false when the proxy is stopping.
func (p *Proxy) acquire(fe *Frontend) bool {
	if !fe.slots.tryAcquire() {
		fe.MaxconnHits.Add(1)
		if !fe.slots.acquire(p.ctx.Done()) {
			return false
		}
	}
	if !p.globalSlots.acquire(p.ctx.Done()) {
		fe.slots.release()
		return false
	}
	return true
}

// releaseSlots returns the slots taken by acquire.
func (p *Proxy) releaseSlots(fe *Frontend) {
	p.globalSlots.release()
	fe.slots.release()
}
