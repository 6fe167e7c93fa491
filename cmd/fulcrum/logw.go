package main

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/fulcrum-proxy/fulcrum/internal/linequeue"
)

// asyncLog is the process log's writer when the log goes to stderr: a
// queue of asyncLogLines lines that one goroutine writes out. A reader
// that stalls (a pipe to a stuck log collector, a paused `| less`) then
// costs log lines, never requests: a line written on a poller or a worker
// does not wait for the pipe. Lines that find the queue full are dropped;
// the goroutine says how many in a line of its own once the pipe takes
// lines again. HAProxy does not wait for its log targets either (UDP, or
// a ring that drops). zerolog's diode does the same but polls its ring
// (every 10 ms: 0.6% of a CPU on an idle proxy); a channel costs nothing
// while nothing is logged.
type asyncLog struct {
	f       *os.File // the log's file (stderr)
	console bool     // the drop line in the console format, not JSON
	q       *linequeue.Queue
	done    chan struct{} // closed when the goroutine has returned
}

const (
	// asyncLogLines is how many lines the queue holds.
	asyncLogLines = 4096
	// asyncLogClose is how long Close waits for the queued lines to be
	// taken.
	asyncLogClose = time.Second
)

// logWriter returns the writer of the process log that goes to w: an
// asyncLog when w is a file (stderr), w itself otherwise (a test's
// buffer). format is the log_format the process starts with ("json" or
// "console"), which the line saying lines were dropped keeps. done
// flushes it, at most asyncLogClose long.
func logWriter(w io.Writer, format string) (lw io.Writer, done func()) {
	f, ok := w.(*os.File)
	if !ok {
		return w, func() {}
	}
	l := newAsyncLog(f, format == "console")
	return l, l.Close
}

// droppedMsg is the message of the line saying lines were dropped.
const droppedMsg = "log lines dropped: the log's reader did not keep up"

// newAsyncLog returns a writer of f that never blocks; the line saying
// lines were dropped is in the console format when console is set, JSON
// otherwise. Close flushes it; f is never closed.
func newAsyncLog(f *os.File, console bool) *asyncLog {
	l := &asyncLog{f: f, console: console, q: linequeue.New(asyncLogLines), done: make(chan struct{})}
	go l.run()
	return l
}

// Write queues one log line (zerolog writes each event whole), or drops
// it when the queue is full or the log closed. It never blocks and does
// not keep p.
func (l *asyncLog) Write(p []byte) (int, error) {
	bp := l.q.Buffer()
	*bp = append(*bp, p...)
	l.q.Push(bp)
	return len(p), nil
}

// run writes the queued lines out until the queue is closed and empty,
// and after each (and at the end) says how many lines were dropped since
// the last time, if any.
func (l *asyncLog) run() {
	defer close(l.done)
	var told int64
	for {
		bp, ok := l.q.Take()
		if ok {
			l.f.Write(*bp)
			l.q.Release(bp)
		}
		if d := l.q.Dropped(); d > told {
			l.writeDropped(d - told)
			told = d
		}
		if !ok {
			return
		}
	}
}

// writeDropped writes the line saying n lines were dropped.
func (l *asyncLog) writeDropped(n int64) {
	now := time.Now().Format(time.RFC3339)
	if l.console {
		fmt.Fprintf(l.f, "%s WRN %s dropped=%d\n", now, droppedMsg, n)
		return
	}
	fmt.Fprintf(l.f, `{"level":"warn","time":%q,"dropped":%d,"message":%q}`+"\n", now, n, droppedMsg)
}

// Close writes out the lines queued before it and stops the goroutine,
// waiting at most asyncLogClose for a reader that does not take them
// (the goroutine is then left blocked in its write). Lines written after
// Close are dropped.
func (l *asyncLog) Close() {
	if l.q.Closed() {
		return
	}
	l.q.Close()
	t := time.NewTimer(asyncLogClose)
	defer t.Stop()
	select {
	case <-l.done:
	case <-t.C:
	}
}

// Dropped returns how many lines were dropped so far.
func (l *asyncLog) Dropped() int64 { return l.q.Dropped() }
