package proxy

import "time"

// Connection goroutines are reused: a goroutine that has served a client
// connection waits a while for the next one instead of exiting. A new
// goroutine starts with a small stack that the request path then grows,
// copying it; a reused one keeps its grown stack. This is per connection,
// never per request: a connection stays on one goroutine from accept to
// close.

// workerIdle is how long an idle connection goroutine waits for work.
const workerIdle = 10 * time.Second

// work is one accepted connection for a worker goroutine.
type work struct {
	fe *Frontend
	cc *clientConn
}

// dispatch hands cc to an idle worker goroutine, or starts a new one.
func (p *Proxy) dispatch(fe *Frontend, cc *clientConn) {
	select {
	case p.work <- work{fe, cc}:
	default:
		go p.worker(work{fe, cc})
	}
}

// worker serves w, then further connections handed over by dispatch, until
// it has been idle for workerIdle or the proxy stops.
func (p *Proxy) worker(w work) {
	var idle *time.Timer // made when the first connection ends: a long one does not hold it
	defer func() {
		if idle != nil {
			idle.Stop()
		}
	}()
	for {
		w.fe.serve(w.cc)
		if idle == nil {
			idle = time.NewTimer(workerIdle)
		} else {
			idle.Reset(workerIdle)
		}
		select {
		case w = <-p.work:
		case <-idle.C:
			return
		case <-p.ctx.Done():
			return
		}
	}
}
