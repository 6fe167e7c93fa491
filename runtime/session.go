package runtime

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net"
	goruntime "runtime"
	"strings"
	"sync"
	"time"
)

// The dispatcher: one session per client connection, reading lines, running
// their commands and framing the replies (runtime-api.md 1.3 to 1.6).
//
//   - Non-interactive (the default): each command's reply is followed by a
//     line feed, which makes the empty line that ends it. Lines run in
//     order, however many arrive at once (issue 16: a pipeline of 600 `set
//     weight` lines through socat ran the 191 that fitted in the first
//     read buffer, then closed): once a line has run, the session goes on
//     while input is waiting (more); when the client has shut its side
//     (socat at the end of its input), or sent one line and nothing more
//     (a monitoring tool waiting for the close), it closes. That close is
//     what socat one-liners and the Prometheus exporter wait for.
//   - Interactive (after `prompt`): each reply is followed by "\n> " and
//     the session stays open. A second `prompt` leaves the mode: the rest
//     of its line runs, then the session ends as a non-interactive one.
//   - `quit` closes at once, without a byte.
//   - A line ending in " <<" opens a payload: the following lines, up to an
//     empty one, are given to its last command (Context.Payload). In
//     interactive mode each of them is answered by "+ ".
//   - A line is only run once its line feed arrives; a CR before the line
//     feed is dropped. A session that completes no line within its idle
//     timeout is closed silently.
//   - A line longer than maxLine gets an error reply as soon as it passes
//     the limit, the rest of it is dropped, and the session goes on with
//     the next line (HAProxy 2.6 resets the connection without a word). A
//     line holding control bytes (binary garbage: not a CLI client) gets an
//     error reply and the session closes, as does a payload line too long.

// maxLine bounds one line, line feed included: HAProxy's CLI buffer
// (tune.bufsize, 16 KiB).
const maxLine = 16 << 10

// maxSkip bounds what is dropped of a line too long before its line feed:
// past it, the client is flooding rather than typing, and the session
// closes.
const maxSkip = 1 << 20

// pipelineGrace is how long a session that received several lines waits
// for the next one when none is waiting and the client has not shut its
// side: a pipeline's next lines may be a moment behind (socat forwards its
// input as it reads it).
const pipelineGrace = 100 * time.Millisecond

// minWriteTimeout bounds how long a reply may wait on a client that does
// not read, whatever the idle timeout (set timeout cli may make it 1 s).
const minWriteTimeout = 10 * time.Second

// Replies to input that cannot be a command; the session closes after them.
const (
	msgLineTooLong = "Command line too long (limit 16384 bytes)."
	msgBinary      = "Binary data in command line."
)

// lineTooLongError is readLine's error for a line past maxLine bytes;
// ended says whether its line feed was read too.
type lineTooLongError struct{ ended bool }

func (e *lineTooLongError) Error() string { return "line too long" }

// inputState is what pendingInput tells of a client's input.
type inputState int

const (
	inputUnknown inputState = iota // cannot tell
	inputNone                      // nothing waiting
	inputReady                     // bytes waiting
	inputEOF                       // the client shut its side down
)

// session is one client connection.
type session struct {
	api     *API
	sock    *listener
	conn    net.Conn
	bw      *bufio.Writer // to conn, through connWriter
	started time.Time
	blocked time.Duration // spent in the connection's Write, for the budget

	// Owned by the session's goroutine.
	level   Level
	prompt  bool
	quit    bool
	timeout time.Duration // idle timeout; set timeout cli changes it
}

// Session buffers are reused: a monitoring tool or a flood of clients
// opens a session per command, and 20 KiB of fresh buffers each time
// would be garbage that the data path pays for in GC work.
var (
	readerPool = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, 4096) }}
	writerPool = sync.Pool{New: func() any { return bufio.NewWriterSize(nil, 16<<10) }}
)

// serve runs the session until the client leaves, quits, times out, or the
// non-interactive exchange is over. The caller closes the connection.
func (s *session) serve() {
	br := readerPool.Get().(*bufio.Reader)
	br.Reset(s.conn)
	s.bw = writerPool.Get().(*bufio.Writer)
	s.bw.Reset(connWriter{s})
	defer func() {
		br.Reset(nil)
		readerPool.Put(br)
		s.bw.Reset(nil)
		writerPool.Put(s.bw)
		s.bw = nil
	}()
	var buf []byte
	lines := 0 // lines received, too long ones included
	for {
		s.conn.SetReadDeadline(time.Now().Add(s.timeout))
		raw, err := readLine(br, buf[:0])
		buf = raw
		var tooLong *lineTooLongError
		switch {
		case errors.As(err, &tooLong):
			lines++
			if !s.skipLine(br, tooLong.ended) {
				return
			}
		case err != nil:
			return // EOF, timeout, reset: nothing to say (bytes without LF never run)
		default:
			lines++
			line := trimEOL(raw)
			if isBinary(line) {
				s.fail(msgBinary)
				return
			}
			text := string(line)
			var payload string
			if strings.HasSuffix(text, " <<") {
				text = strings.TrimSuffix(text, " <<")
				if payload, err = s.readPayload(br); err != nil {
					return
				}
			}
			s.runLine(text, payload)
			if err := s.flush(); err != nil || s.quit {
				return
			}
		}
		if !s.prompt && !s.more(br, lines) {
			return
		}
	}
}

// more reports whether a non-interactive session has input to run after
// the lines it ran: bytes already read (a whole line, or the start of one
// whose end readLine then waits for), or bytes waiting in the kernel. With
// nothing waiting, it ends the session when the client has shut its side,
// or has sent a single line (a one-shot client waits for the close: it
// must not wait longer); a client that sent several lines gets
// pipelineGrace for its next one.
func (s *session) more(br *bufio.Reader, lines int) bool {
	if br.Buffered() > 0 {
		return true
	}
	s.conn.SetReadDeadline(time.Now().Add(s.timeout))
	switch pendingInput(s.conn) {
	case inputReady:
		return true
	case inputEOF:
		return false
	}
	if lines < 2 {
		return false
	}
	s.conn.SetReadDeadline(time.Now().Add(min(s.api.pipelineGrace, s.timeout)))
	_, err := br.Peek(1)
	return err == nil
}

// skipLine answers a line too long to run, drops the rest of it up to its
// line feed (ended: already read) and reports whether the session goes on:
// false when the client leaves, its reply cannot be sent, or it sends more
// than maxSkip bytes without a line feed.
func (s *session) skipLine(br *bufio.Reader, ended bool) bool {
	s.conn.SetWriteDeadline(time.Now().Add(max(s.timeout, minWriteTimeout)))
	s.bw.WriteString(msgLineTooLong)
	s.bw.WriteString("\n")
	s.terminate()
	if s.flush() != nil {
		return false
	}
	for skipped := 0; !ended; {
		if skipped > maxSkip {
			s.drain()
			return false
		}
		s.conn.SetReadDeadline(time.Now().Add(s.timeout))
		frag, err := br.ReadSlice('\n')
		skipped += len(frag)
		switch {
		case err == nil:
			ended = true
		case err != bufio.ErrBufferFull:
			return false
		}
	}
	return true
}

// readPayload reads payload lines up to an empty one, answering "+ " to
// each in interactive mode.
func (s *session) readPayload(br *bufio.Reader) (string, error) {
	var b strings.Builder
	for {
		if s.prompt {
			s.bw.WriteString("+ ")
			if err := s.flush(); err != nil {
				return "", err
			}
		}
		s.conn.SetReadDeadline(time.Now().Add(s.timeout))
		raw, err := readLine(br, nil)
		var tooLong *lineTooLongError
		if errors.As(err, &tooLong) {
			s.fail(msgLineTooLong)
			return "", err
		}
		if err != nil {
			return "", err
		}
		line := trimEOL(raw)
		if isBinary(line) {
			s.fail(msgBinary)
			return "", errors.New("binary")
		}
		if len(line) == 0 {
			return b.String(), nil
		}
		b.Write(line)
		b.WriteByte('\n')
	}
}

// runLine runs every command of one line, each reply followed by its
// terminator. It stops at quit.
func (s *session) runLine(line, payload string) {
	cmds := splitLine(line)
	for i, words := range cmds {
		p := ""
		if i == len(cmds)-1 {
			p = payload
		}
		s.exec(words, p)
		if s.quit {
			return
		}
		s.terminate()
	}
}

// terminate ends a reply: the empty line, and the prompt in interactive
// mode.
func (s *session) terminate() {
	if s.prompt {
		s.bw.WriteString("\n> ")
	} else {
		s.bw.WriteString("\n")
	}
}

// connWriter is the session's connection as its reply buffer writes to
// it: it counts the time the writes take, which the budget does not charge.
type connWriter struct{ s *session }

func (w connWriter) Write(p []byte) (int, error) {
	start := time.Now()
	n, err := w.s.conn.Write(p)
	w.s.blocked += time.Since(start)
	return n, err
}

// charge starts measuring what a command costs and returns the func that
// charges it to the API's budget: the CPU time of the goroutine, locked to
// its thread meanwhile so that the thread's clock is the command's; where
// there is no such clock, the time it took less the time its writes were
// blocked on the client.
func (s *session) charge() func() {
	goruntime.LockOSThread()
	cpu, cpuOK := threadCPU()
	start, blocked := time.Now(), s.blocked
	return func() {
		now := time.Now()
		d := now.Sub(start) - (s.blocked - blocked)
		if end, ok := threadCPU(); ok && cpuOK {
			d = end - cpu
		}
		goruntime.UnlockOSThread()
		s.api.budget.spend(now, d)
	}
}

// exec runs one command: the unknown-command reply when no row matches,
// "Permission denied" below the level the row needs for these arguments,
// else its handler. It waits first while the API's budget is overdrawn
// (budget.go), and charges the budget what the command took, except for
// reload (an operator's rare and deliberate command, whose cost grows
// with the configuration file, must not make the next commands wait) and
// the unpaced commands (add and del server, see Command.unpaced).
func (s *session) exec(words []string, payload string) {
	if !s.api.budget.admit(s.api.done) {
		return // the API is closing
	}
	t := s.api.table
	cmd, n := t.find(words)
	if cmd == nil || !cmd.unheld && !cmd.unpaced {
		defer s.charge()()
	}
	s.conn.SetWriteDeadline(time.Now().Add(max(s.timeout, minWriteTimeout)))
	if cmd == nil {
		s.bw.WriteString(t.usage(s.level, words, false))
		return
	}
	if s.level < cmd.levelFor(words[n:]) {
		writeError(s.bw, errPermission)
		return
	}
	if !cmd.unheld { // see API.Hold
		s.api.hold.RLock()
		defer s.api.hold.RUnlock()
	}
	c := &Context{Proxy: s.api.Proxy(), Payload: payload, api: s.api, sess: s, w: s.bw, words: words}
	if err := cmd.Run(c, words[n:]); err != nil {
		writeError(s.bw, err)
	}
}

// fail sends msg as the last reply before the session closes. The client
// may still be sending (a flood without line feeds): what it sends is read
// and dropped for a moment after our half-close, so that the kernel does
// not answer it with a reset that would destroy the reply in flight.
func (s *session) fail(msg string) {
	s.conn.SetWriteDeadline(time.Now().Add(minWriteTimeout))
	s.bw.WriteString(msg)
	s.bw.WriteString("\n\n")
	if s.bw.Flush() != nil {
		return
	}
	s.drain()
}

// drain half-closes the connection, then reads and drops what the client
// still sends for a moment, so that the kernel does not answer it with a
// reset that would destroy the reply in flight. The session then closes.
func (s *session) drain() {
	if cw, ok := s.conn.(interface{ CloseWrite() error }); ok {
		cw.CloseWrite()
		s.conn.SetReadDeadline(time.Now().Add(time.Second))
		io.CopyN(io.Discard, s.conn, 1<<20)
	}
}

// flush sends what the replies wrote.
func (s *session) flush() error {
	s.conn.SetWriteDeadline(time.Now().Add(max(s.timeout, minWriteTimeout)))
	return s.bw.Flush()
}

// readLine reads one line, line feed included, into buf. It fails with a
// *lineTooLongError past maxLine bytes, and with the read error (io.EOF at
// a close) before a line feed: a partial line is never returned as a line.
func readLine(br *bufio.Reader, buf []byte) ([]byte, error) {
	for {
		frag, err := br.ReadSlice('\n')
		if len(buf)+len(frag) > maxLine {
			return nil, &lineTooLongError{ended: err == nil}
		}
		buf = append(buf, frag...)
		if err == nil {
			return buf, nil
		}
		if err != bufio.ErrBufferFull {
			return nil, err
		}
	}
}

// trimEOL drops the line feed and a CR before it.
func trimEOL(line []byte) []byte {
	line = bytes.TrimSuffix(line, []byte("\n"))
	return bytes.TrimSuffix(line, []byte("\r"))
}

// isBinary reports whether line holds control bytes other than tab: no
// command contains them, and HAProxy would cut the line at a NUL.
func isBinary(line []byte) bool {
	for _, c := range line {
		if (c < 0x20 && c != '\t') || c == 0x7f {
			return true
		}
	}
	return false
}
