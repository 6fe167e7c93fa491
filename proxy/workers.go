package proxy

import (
	"context"
	"os"
	"sync"
	"sync/atomic"
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
// it has been idle for workerIdle (workerTrim: between workerIdle/2 and
// workerIdle) or the proxy stops, or its connection hibernated
// (httpconn.go): the goroutine then ends at once, its stack being most of
// what hibernation saves (a connection resumes on an idle worker when
// there is one, else on a new goroutine).
func (p *Proxy) worker(w work) {
	var idle idleWait
	defer idle.stop()
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
		var ok bool
		if w, ok = p.next(&idle); !ok {
			return
		}
	}
}

// workerTrim ends idle workers by the proxy's trim ticks instead of a
// timer per worker (FULCRUM_WORKER_TRIM=0: the timer, for comparison).
// The timer was reset at the end of every connection and added to and
// taken out of the runtime's timer heap by every wait for the next one:
// with a connection per request, about 1% of the proxy's CPU
// (bench/README.md).
var workerTrim = os.Getenv("FULCRUM_WORKER_TRIM") != "0"

// idleWait is a worker's state between connections: its idle timer when
// workerTrim is off (made when its first connection ends, so that a long
// one does not hold it).
type idleWait struct {
	timer *time.Timer
}

func (iw *idleWait) stop() {
	if iw.timer != nil {
		iw.timer.Stop()
	}
}

// next waits for the worker's next work: false when the worker is to end
// (idle long enough, or the proxy stopped).
func (p *Proxy) next(iw *idleWait) (work, bool) {
	if !workerTrim {
		if iw.timer == nil {
			iw.timer = time.NewTimer(workerIdle)
		} else {
			iw.timer.Reset(workerIdle)
		}
		select {
		case w := <-p.work:
			return w, true
		case <-iw.timer.C:
			return work{}, false
		case <-p.ctx.Done():
			return work{}, false
		}
	}
	// The first tick ends the period in which the worker went idle, the
	// second a whole period of idleness.
	for ticks := 0; ticks < 2; ticks++ {
		select {
		case w := <-p.work:
			return w, true
		case <-p.trim.tick():
		case <-p.ctx.Done():
			return work{}, false
		}
	}
	return work{}, false
}

// trimmer closes a channel every workerIdle/2 (and makes the next), which
// idle workers wait on beside their work: one runtime timer for the
// proxy, running from the first idle worker until the proxy stops.
type trimmer struct {
	once sync.Once
	ch   atomic.Pointer[chan struct{}]
	ctx  context.Context
}

// tick returns the channel closed at the end of the current period.
func (t *trimmer) tick() <-chan struct{} {
	if ch := t.ch.Load(); ch != nil {
		return *ch
	}
	t.once.Do(func() {
		ch := make(chan struct{})
		t.ch.Store(&ch)
		time.AfterFunc(workerIdle/2, t.next)
	})
	return *t.ch.Load()
}

// next ends the current period, and arms the next unless the proxy has
// stopped (its idle workers end by ctx then).
func (t *trimmer) next() {
	ch := make(chan struct{})
	close(*t.ch.Swap(&ch))
	if t.ctx.Err() == nil {
		time.AfterFunc(workerIdle/2, t.next)
	}
}
