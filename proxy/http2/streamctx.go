package http2

import (
	"context"
	"net"
	"slices"
	"time"
)

// A stream's request context, without context.WithCancel's allocations:
// the estream is the context (streamCtx), cancelled by a reset, the end of
// the connection or the end of the stream. Its Done channel is made only
// when asked for (a request waiting in a queue), and the server
// connection's cut on a reset (exchangeH1) is a field of the stream,
// not a context.AfterFunc. It has an AfterFunc method, so that contexts
// derived from it with the context package cost no goroutine.

// streamCtx is an estream as its request's context.Context.
type streamCtx estream

// ctxState is a stream context's state, under cmu (a leaf lock: taken
// under mu, never the other way).
type ctxState struct {
	done     chan struct{} // made on demand; closed once cancelled
	canceled bool
	cut      *cutter // cut on cancellation (a goroutine of its own)
	after    []*afterFunc
}

type afterFunc struct{ f func() }

// ctx returns es as a context.
func (es *estream) ctx() *streamCtx { return (*streamCtx)(es) }

// cancel cancels the stream's context; the later calls do nothing.
func (es *estream) cancel() {
	es.cmu.Lock()
	s := &es.cs
	if s.canceled {
		es.cmu.Unlock()
		return
	}
	s.canceled = true
	if s.done != nil {
		close(s.done)
	}
	cut, after := s.cut, s.after
	s.cut, s.after = nil, nil
	es.cmu.Unlock()
	if cut != nil {
		go cut.cut()
	}
	for _, a := range after {
		go a.f()
	}
}

func (x *streamCtx) Deadline() (time.Time, bool) { return time.Time{}, false }

func (x *streamCtx) Done() <-chan struct{} {
	es := (*estream)(x)
	es.cmu.Lock()
	defer es.cmu.Unlock()
	if es.cs.done == nil {
		es.cs.done = make(chan struct{})
		if es.cs.canceled {
			close(es.cs.done)
		}
	}
	return es.cs.done
}

func (x *streamCtx) Err() error {
	es := (*estream)(x)
	es.cmu.Lock()
	defer es.cmu.Unlock()
	if es.cs.canceled {
		return context.Canceled
	}
	return nil
}

func (x *streamCtx) Value(any) any { return nil }

func (x *streamCtx) String() string { return "http2.streamCtx" }

// AfterFunc calls f in a goroutine of its own once the context is
// cancelled (at once if it is); stop unregisters f, reporting whether it
// stopped it from being called (the contract of context.AfterFunc, which
// uses this method for the contexts derived from this one).
func (x *streamCtx) AfterFunc(f func()) (stop func() bool) {
	es := (*estream)(x)
	a := &afterFunc{f: f}
	es.cmu.Lock()
	if es.cs.canceled {
		es.cmu.Unlock()
		go f()
		return func() bool { return false }
	}
	es.cs.after = append(es.cs.after, a)
	es.cmu.Unlock()
	return func() bool {
		es.cmu.Lock()
		defer es.cmu.Unlock()
		i := slices.Index(es.cs.after, a)
		if i < 0 {
			return false
		}
		es.cs.after = slices.Delete(es.cs.after, i, i+1)
		return true
	}
}

// watchCut makes cut be cut once the context is cancelled (at once if it
// is), until watchCut(nil).
func (x *streamCtx) watchCut(cut *cutter) {
	es := (*estream)(x)
	es.cmu.Lock()
	if es.cs.canceled {
		es.cmu.Unlock()
		if cut != nil {
			go cut.cut()
		}
		return
	}
	es.cs.cut = cut
	es.cmu.Unlock()
}

// streamCut returns the stream's cutter made ready to cut c: a field of
// the estream, which is not pooled, so that a cut still on its way when
// the exchange ended (cancel's goroutine) can only reach this stream's
// connections. A stream's exchanges follow one another (a retry), each
// with its connection.
func (x *streamCtx) streamCut(c net.Conn) *cutter {
	cut := &(*estream)(x).cut
	cut.mu.Lock()
	cut.c, cut.done, cut.wasCut = c, false, false
	cut.mu.Unlock()
	return cut
}

// cutWatcher is a request context that cuts a server connection on
// cancellation without context.AfterFunc (streamCtx), with a cutter of
// its own.
type cutWatcher interface {
	watchCut(*cutter)
	streamCut(net.Conn) *cutter
}
