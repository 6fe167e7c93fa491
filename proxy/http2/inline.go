package http2

import (
	"net/http"
	"sync/atomic"
	"time"

	"github.com/fulcrum-proxy/fulcrum/proxy/stream"
)

// Streams begun by the connection's reader (issues 17 and 21): a stream
// whose request has no body (END_STREAM on its HEADERS) does not take a
// worker goroutine to be routed and sent. The reader, which decoded its
// head, runs its request phase itself: the core's stream, route, a server
// with a free slot (Stream.TryTake, no queue), an idle pooled HTTP/1.1
// connection of the epoll layer, the head written without blocking
// (http1.Exchange.TrySend); then the stream parks on the server's
// readiness (http1.Exchange.Park) with no goroutine, and the epoll layer's
// reaper hands it to a worker of the connection when the response (or
// the server's end, timeout_server, or the client's reset, which cuts
// the server connection) is there. The worker goes on from exactly where
// the stream stands (h2stream.stage): reading the response head. At the
// first step that could block or is not simple (a local answer, a rule's
// answer, a queue, an HTTP/2 server, a dial, a TLS server connection, a
// send the socket did not take whole), the reader hands the stream to a
// worker there instead, as before. A client's batch of requests is thus
// sent in one run of the reader, and each request costs one goroutine
// run (its response) instead of two (its start and its response).
// FULCRUM_H2INLINE=0 turns it off (Server.SetInline).

// InlineCounters count the streams the reader began: Parked those that
// waited for their response with no goroutine, Handed those it began and
// a worker went on with before they could park.
type InlineCounters struct {
	Parked atomic.Int64
	Handed atomic.Int64
	// Answered counts the streams a rule answered that the reader ran
	// itself (answerFits).
	Answered atomic.Int64
	// Batched counts the parked streams whose responses were whole when
	// they woke, run by their connection's batching worker.
	Batched atomic.Int64
	// Queued counts the requests the readers queued to send together
	// (SetSendBatch), RingSends those of them sent by io_uring, in
	// RingEnters system calls (the others were written one by one).
	Queued, RingSends, RingEnters atomic.Int64
}

// SetInline lets the connections' readers begin bodiless streams (the
// server's clients are on the epoll layer); the counters are then those
// of Inline. Call it before the server serves.
func (s *Server) SetInline(on bool) {
	if on {
		s.inline = &InlineCounters{}
	} else {
		s.inline = nil
	}
}

// SetBatch lets the woken streams whose responses are whole run one
// after the other on one worker of their connection (parkWaker.Wake), with
// one write for their frames; inline streams only (SetInline). Call it
// before the server serves.
func (s *Server) SetBatch(on bool) { s.batch = on }

// SetSendBatch lets the connections' readers send the requests they
// begin (SetInline) together, once per read of the client: several
// servers' sends in one io_uring_enter (epoll.SendBatch), instead of a
// system call each. Call it before the server serves.
func (s *Server) SetSendBatch(on bool) { s.sendBatch = on }

// Inline returns the counters of the streams the readers began, nil when
// they begin none.
func (s *Server) Inline() *InlineCounters { return s.inline }

// stage is how far a stream's phases went before its worker runs it.
type stage uint8

const (
	stageNew    stage = iota // nothing done: the worker runs every phase
	stageRouted              // routed (h2stream.rt): the rest
	stageTaken               // a server assigned (and ex, a pooled exchange, or nil)
	stageSent                // the request sent on ex (or its rest pending), parked or not
)

// parkWaker is a parked stream's epoll.Waker.
type parkWaker struct{ es *estream }

// Wake hands the parked stream to a worker (the reaper calls it: it does
// not block).
func (w *parkWaker) Wake() {
	es := w.es
	ex := es.st.ex
	if !ex.Readable() {
		ex.Await(w) // a late event or timer: wait again
		return
	}
	c := es.c
	// A response read whole already (the server's bytes are in, the
	// reaper reads them without blocking) runs on the connection's
	// batching worker, after those it runs: none of them waits for its
	// server, and their frames leave in one write. One whose body the
	// client's windows do not take whole now gets its own worker: it may
	// wait for credit, and would hold the batch back.
	var n int64
	whole := false
	if c.srv.batch {
		n, whole = ex.TryWhole(es.req.Method == http.MethodHead)
	}
	// Running from now: a worker that ends its response before this one
	// runs lets it write first (respWriter.finish), so that the
	// responses the reaper found together leave in one write.
	c.running.Add(1)
	es.woken = true
	c.mu.Lock()
	if whole && (n == 0 || es.sendWin >= n && c.sendWin >= n) {
		es.batched = true
		c.srv.inline.Batched.Add(1)
		if c.batching {
			c.batchQ = append(c.batchQ, es)
			c.mu.Unlock()
			c.wg.Done() // the batching worker's count covers es
			return
		}
		c.batching = true
	}
	wk := c.takeWorker()
	c.mu.Unlock()
	// The park's count in c.wg passes to the worker that runs es.
	if wk != nil {
		wk.ch <- es
		c.wg.Done()
		return
	}
	go c.work(es)
}

// begin runs the request phase of es, a stream whose request has no
// body, on the reader, and reports whether it parked (a worker runs it
// once its response comes); false: a worker is to run it now, from where
// it stands.
// answerFits reports whether an answer of about n bytes (HTTP/1, head
// included) can be written by the reader without waiting: no writer
// holds or waits for the connection's writer, its buffer has room for it
// whole (no write to the socket), and the connection's and the stream's
// send windows take its body.
func (c *econn) answerFits(es *estream, n int) bool {
	if c.pending.Load() != 0 || !c.wmu.TryLock() {
		return false
	}
	room := c.bw.Available()
	c.wmu.Unlock()
	if room < 2*n+256 {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sendWin >= int64(n) && es.sendWin >= int64(n) && !c.closed
}

func (c *econn) begin(es *estream) bool {
	st := es.st
	c.open(es)
	st.start()
	x := st.x
	in := c.srv.inline
	if st.rt.Kind == stream.RouteAnswer && c.answerFits(es, len(st.rt.Answer)) {
		// A rule's answer (a deny under a flood): the reader writes it
		// without a worker, and the answers of one read leave in one
		// write (the reader flushes before it waits for the client).
		st.setClock(time.Time{})
		in.Answered.Add(1)
		es.byReader = true
		c.run(es)
		return true
	}
	if st.rt.Kind != stream.RouteBackend || !x.TryTake() {
		st.setClock(time.Time{})
		in.Handed.Add(1)
		return false
	}
	st.stage = stageTaken
	up := x.Upstream()
	if up.H2 != nil {
		st.setClock(time.Time{})
		in.Handed.Add(1)
		return false
	}
	ex := reuseConn(st)
	if ex == nil || !ex.Parkable() {
		st.ex = ex
		st.setClock(time.Time{})
		in.Handed.Add(1)
		return false
	}
	x.Connected(ex.Conn(), true)
	st.ex, st.stage = ex, stageSent
	st.watch(ex)
	ex.SetClock(st.clk)
	st.writeRequestHead(ex, 0)
	if c.srv.sendBatch {
		if _, ok := ex.QueueSend(&c.sends); ok {
			// Sent with the other requests of this read (flushSends).
			c.sendq = append(c.sendq, es)
			if len(c.sendq) >= maxSendQueue {
				c.flushSends()
			}
			return true
		}
	}
	st.pending, st.sendErr = ex.TrySend()
	return c.park(es)
}

// park parks es, a stream begun by the reader, once its request was
// written (TrySend or a batch's send: st.pending and st.sendErr say how
// it went), and reports whether it did; false: a worker is to run it now
// (what the socket did not take, or the failed send, is the worker's).
func (c *econn) park(es *estream) bool {
	st := es.st
	in := c.srv.inline
	if st.sendErr != nil || st.pending {
		st.setClock(time.Time{})
		in.Handed.Add(1)
		return false
	}
	st.x.Sent(0)
	st.parkAt = st.clk // Park arms the read deadline from it, and so will ReadHead
	st.setClock(time.Time{})
	in.Parked.Add(1)
	c.wg.Add(1) // until a worker runs es (parkWaker.Wake)
	es.pw.es = es
	st.ex.Park(&es.pw, c.srv.sendBatch)
	return true
}

// maxSendQueue is how many requests the reader queues for one batch of
// sends at most (a longer read sends them in several).
const maxSendQueue = 64

// flushSends sends the requests the reader queued (begin), all in one
// system call where the epoll layer can (epoll.SendBatch), then parks
// their streams, or hands them to workers as begin would have. The
// reader calls it before it waits for the client, and before it leaves.
func (c *econn) flushSends() {
	if len(c.sendq) == 0 {
		return
	}
	enters, sends := c.sends.Enters, c.sends.Sends
	c.sends.Flush()
	in := c.srv.inline
	in.Queued.Add(int64(len(c.sendq)))
	in.RingSends.Add(c.sends.Sends - sends)
	in.RingEnters.Add(c.sends.Enters - enters)
	for i, es := range c.sendq {
		st := es.st
		st.pending, st.sendErr = st.ex.SendDone(c.sends.Result(i))
		if !c.park(es) {
			c.mu.Lock()
			w := c.takeWorker()
			c.mu.Unlock()
			c.startStream(w, es)
		}
		c.sendq[i] = nil
	}
	c.sendq = c.sendq[:0]
	c.sends.Reset()
}
