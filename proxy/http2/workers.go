package http2

import (
	"slices"
	"time"
)

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
	ch chan *estream
}

// takeWorker returns a waiting worker, or nil (mu held).
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

// work runs es, then the streams handed to it while it waits.
func (c *econn) work(es *estream) {
	defer c.wg.Done()
	var w *streamWorker
	var t *time.Timer
	for es != nil {
		c.run(es)
		c.mu.Lock()
		if c.closed || len(c.idleW) >= maxIdleWorkers {
			c.mu.Unlock()
			return
		}
		if w == nil {
			w = &streamWorker{ch: make(chan *estream, 1)}
		}
		c.idleW = append(c.idleW, w)
		c.mu.Unlock()
		if t == nil {
			t = time.NewTimer(c.workerIdle)
		} else {
			t.Reset(c.workerIdle)
		}
		select {
		case es = <-w.ch:
			t.Stop()
		case <-t.C:
			c.mu.Lock()
			if i := slices.Index(c.idleW, w); i >= 0 {
				c.idleW = slices.Delete(c.idleW, i, i+1)
				c.mu.Unlock()
				return
			}
			c.mu.Unlock()
			// Taken meanwhile: a stream, or nil (the end) is on its way.
			es = <-w.ch
		}
	}
}

// stopWorkers ends the waiting workers (mu held, the connection closed).
func (c *econn) stopWorkers() {
	for _, w := range c.idleW {
		w.ch <- nil
	}
	clear(c.idleW)
	c.idleW = c.idleW[:0]
}
