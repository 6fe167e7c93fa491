package main

import (
	"fmt"
	"io"
	"os"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog/diode"
)

// asyncLog is the process log's writer when the log goes to stderr:
// zerolog's diode, a ring of asyncLogLines lines that one goroutine writes
// out. A reader that stalls (a pipe to a stuck log collector, a paused
// `| less`) then costs log lines, never requests: a line written on a
// poller or a worker does not wait for the pipe. Lines that find the ring
// full are dropped; the goroutine says how many in a line of its own
// (JSON, as the log's default format) once the pipe takes lines again.
// HAProxy does not wait for its log targets either (UDP, or a ring that
// drops).
type asyncLog struct {
	f       *os.File // the log's file (stderr)
	d       diode.Writer
	dropped atomic.Int64
}

const (
	// asyncLogLines is how many lines the ring holds.
	asyncLogLines = 4096
	// asyncLogPoll is how often the writing goroutine looks for lines
	// when the ring was empty: the longest a line waits.
	asyncLogPoll = 10 * time.Millisecond
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
	l := &asyncLog{f: f}
	out := noClose{f}
	l.d = diode.NewWriter(out, asyncLogLines, asyncLogPoll, func(missed int) {
		// On the writing goroutine, between two lines.
		l.dropped.Add(int64(missed))
		now := time.Now().Format(time.RFC3339)
		if console {
			fmt.Fprintf(out, "%s WRN %s dropped=%d\n", now, droppedMsg, missed)
			return
		}
		fmt.Fprintf(out, `{"level":"warn","time":%q,"dropped":%d,"message":%q}`+"\n", now, missed, droppedMsg)
	})
	return l
}

// Write queues one log line (zerolog writes each event whole). It never
// blocks and does not keep p.
func (l *asyncLog) Write(p []byte) (int, error) { return l.d.Write(p) }

// Close writes out the lines still queued and stops the goroutine,
// waiting at most asyncLogClose for a reader that does not take them
// (the goroutine is then left blocked in its write).
func (l *asyncLog) Close() {
	done := make(chan struct{})
	go func() {
		l.d.Close()
		close(done)
	}()
	t := time.NewTimer(asyncLogClose)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
	}
}

// Dropped returns how many lines were dropped so far.
func (l *asyncLog) Dropped() int64 { return l.dropped.Load() }

// noClose hides w's Close from the diode, which closes what it wraps.
type noClose struct{ w io.Writer }

func (n noClose) Write(p []byte) (int, error) { return n.w.Write(p) }
