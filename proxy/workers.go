package proxy

import (
	"time"

	"github.com/fulcrum-proxy/fulcrum/proxy/http1"
)

// Connection goroutines are reused: a goroutine that has served a client
// connection waits a while for the next one instead of exiting. A new
// goroutine starts with a small stack that the request path then grows,
// copying it; a reused one keeps its grown stack. This is per connection,
// never per request: a connection stays on one goroutine from accept to
// close, or to its hibernation (httpconn.go) and from its resumption; an
// HTTP/1 request that parks while its response comes (http1/inline.go)
// leaves its goroutine, which serves other work, and goes on on
// whichever worker its continuation is handed to.

// workerIdle is how long an idle connection goroutine waits for work.
const workerIdle = 10 * time.Second

// work is one accepted connection for a worker goroutine, one that
// comes out of hibernation (resume: fe is nil), or a parked HTTP/1
// session of one to go on with (k: fe is nil).
type work struct {
	fe     *Frontend
	cc     *clientConn
	resume bool
	k      http1.Continuation
}

// dispatch hands cc to an idle worker goroutine, or starts a new one.
func (p *Proxy) dispatch(fe *Frontend, cc *clientConn) {
	p.run(work{fe: fe, cc: cc})
}

// run hands w to an idle worker goroutine, or starts a new one; it never
// blocks (the epoll layer's reaper resumes hibernating connections
// through it).
func (p *Proxy) run(w work) {
	select {
	case p.work <- w:
	default:
		go p.worker(w)
	}
}

// worker serves w, then further connections handed over by dispatch, until
// it has been idle for workerIdle or the proxy stops, or its connection
// hibernated (httpconn.go): the goroutine then ends at once, its stack
// being most of what hibernation saves (a connection resumes on an idle
// worker when there is one, else on a new goroutine).
func (p *Proxy) worker(w work) {
	var idle *time.Timer // made when the first connection ends: a long one does not hold it
	defer func() {
		if idle != nil {
			idle.Stop()
		}
	}()
	for {
		var end http1.End
		switch {
		case w.k != nil:
			end = w.cc.ended(w.k.Continue())
		case w.resume:
			end = w.cc.resume()
		default:
			end = w.fe.serve(w.cc)
		}
		if end == http1.EndHibernated {
			return
		}
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
