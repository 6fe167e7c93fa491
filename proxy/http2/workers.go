package http2

import "time"

// Stream workers: a stream's phases run on a goroutine of its connection
// that served an earlier stream and kept its grown stack, rather than on a
// new goroutine whose stack grows again (a new goroutine starts with 8 KiB
// and the request path needs more: each growth copies the stack). A
// worker that ends its stream waits for the next one of its connection;
// it exits when the connection ends, when it waited workerIdle for
// nothing, or when maxIdleWorkers others already wait.

const (
	// maxIdleWorkers is how many workers a connection keeps waiting.
	maxIdleWorkers = 16
	// workerIdle is how long a worker waits for a stream before it exits
	// (Server.workerIdle).
	workerIdle = 2 * time.Second
)

// streamWorker is a waiting worker: the reader hands it its next stream
// through ch (buffered: the hand-over never blocks), nil to end it.
type streamWorker struct {
	ch    chan *estream
	since time.Time // when it began to wait (under mu)
}

// takeWorker returns a waiting worker, or nil (mu held). It takes the
// one that waited least (its stack is the likeliest in the caches); the
// others keep their order, the longest waiting first.
func (c *econn) takeWorker() *streamWorker {
	n := len(c.idleW)
	if n == 0 {
		return nil
	}
	w := c.idleW[n-1]
	c.idleW[n-1] = nil
	c.idleW = c.idleW[:n-1]
	return w
}

// startStream runs es on w (a worker taken from those waiting), or on a
// new worker when w is nil.
func (c *econn) startStream(w *streamWorker, es *estream) {
	if w != nil {
		w.ch <- es
		return
	}
	c.wg.Add(1)
	go c.work(es)
}

// work runs es, then the streams handed to it while it waits. A waiting
// worker receives from its channel alone: the wait for nothing is timed
// by the connection's idle timer (expireWorkers), not by a timer of each
// worker armed and stopped at each stream.
func (c *econn) work(es *estream) {
	defer c.wg.Done()
	var w *streamWorker
	for es != nil {
		batched := es.batched
		c.run(es)
		if batched {
			if es = c.nextBatched(); es != nil {
				continue
			}
		}
		c.mu.Lock()
		if c.closed || len(c.idleW) >= maxIdleWorkers {
			c.mu.Unlock()
			return
		}
		if w == nil {
			w = &streamWorker{ch: make(chan *estream, 1)}
		}
		w.since = time.Now()
		c.idleW = append(c.idleW, w)
		c.armIdle(w.since)
		c.mu.Unlock()
		es = <-w.ch
	}
}

// armIdle starts the connection's idle timer for a worker that began to
// wait at since, unless it runs already (mu held): it then fires for an
// older worker, and fires again for the rest.
func (c *econn) armIdle(since time.Time) {
	if c.idleArmed {
		return
	}
	c.idleArmed = true
	d := c.workerIdle - time.Since(since)
	if c.idleTimer == nil {
		c.idleTimer = time.AfterFunc(d, c.expireWorkers)
	} else {
		c.idleTimer.Reset(d)
	}
}

// expireWorkers ends the workers that waited workerIdle or longer for a
// stream (the connection's idle timer), then re-arms the timer for the
// longest waiting of the others, if any.
func (c *econn) expireWorkers() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.idleArmed = false
	if c.closed {
		return // stopWorkers ended them
	}
	now := time.Now()
	n := 0
	for _, w := range c.idleW {
		if now.Sub(w.since) < c.workerIdle {
			break // idleW is in waiting order: the rest waited less
		}
		w.ch <- nil
		n++
	}
	if n > 0 {
		rest := copy(c.idleW, c.idleW[n:])
		clear(c.idleW[rest:])
		c.idleW = c.idleW[:rest]
	}
	if len(c.idleW) > 0 {
		c.armIdle(c.idleW[0].since)
	}
}

// stopWorkers ends the waiting workers and their timer (mu held, the
// connection closed).
func (c *econn) stopWorkers() {
	for _, w := range c.idleW {
		w.ch <- nil
	}
	clear(c.idleW)
	c.idleW = c.idleW[:0]
	if c.idleTimer != nil {
		c.idleTimer.Stop()
	}
}

// nextBatched returns the next woken stream of the batching worker's
// queue; when it is empty the worker stops batching and flushes the
// frames its streams left (deferFlush), and nextBatched returns nil.
func (c *econn) nextBatched() *estream {
	c.mu.Lock()
	if n := len(c.batchQ); n > 0 {
		// Shifted in place (a batch is a few streams): the queue keeps
		// its array, and appends allocate only to grow it.
		es := c.batchQ[0]
		copy(c.batchQ, c.batchQ[1:])
		c.batchQ[n-1] = nil
		c.batchQ = c.batchQ[:n-1]
		c.mu.Unlock()
		return es
	}
	c.batching = false
	c.mu.Unlock()
	c.lockW()
	c.unlockW(flushNow)
	return nil
}
