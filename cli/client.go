package cli

import (
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// ErrUnreachable wraps every failure to reach the socket (missing file,
// connection refused), so that callers can tell it from an error reply.
var ErrUnreachable = errors.New("cannot reach the socket")

// Addr names a Runtime API endpoint: a Unix socket path, or "tcp:HOST:PORT"
// / "HOST:PORT" for a TCP one.
type Addr string

// network returns the net.Dial network and address for a.
func (a Addr) network() (string, string) {
	s := string(a)
	if strings.HasPrefix(s, "tcp:") {
		return "tcp", strings.TrimPrefix(s, "tcp:")
	}
	if strings.HasPrefix(s, "unix:") {
		return "unix", strings.TrimPrefix(s, "unix:")
	}
	if !strings.Contains(s, "/") && strings.Contains(s, ":") {
		return "tcp", s
	}
	return "unix", s
}

// Run sends one command line (several commands may be separated by ';') in
// non-interactive mode, as `echo CMD | socat stdio unix-connect:SOCK` does,
// and returns the whole reply. The server closes the connection after
// replying. timeout bounds the whole exchange (0 = none).
func Run(a Addr, line string, timeout time.Duration) (string, error) {
	network, address := a.network()
	c, err := net.DialTimeout(network, address, 5*time.Second)
	if err != nil {
		return "", fmt.Errorf("%w %s: %v", ErrUnreachable, a, err)
	}
	defer c.Close()
	if timeout > 0 {
		c.SetDeadline(time.Now().Add(timeout))
	}
	if _, err := io.WriteString(c, strings.TrimRight(line, "\n")+"\n"); err != nil {
		return "", err
	}
	b, err := io.ReadAll(c)
	return string(b), err
}

// Session is one persistent connection in interactive (`prompt`) mode, the
// way hatop and an operator at socat drive the socket: each command is one
// line, and its reply ends at the "\n> " prompt (or "+ " while a payload is
// being typed). A Session redials once when the server has closed the
// connection (idle timeout, restarted proxy) before the command was read;
// the level the session was lowered to (`user`, `operator`) is restored
// first, and OnReconnect is told the level the new connection has. Not
// safe for concurrent use.
type Session struct {
	Addr    Addr
	Timeout time.Duration // bound on one exchange, 0 = none
	// OnReconnect, if set, is called after the session had to redial, with
	// the level of the new connection as `show cli level` reports it (""
	// when the server cannot say).
	OnReconnect func(level string)
	// Init are commands sent after each dial, replies ignored (the shell
	// raises its idle timeout with `set timeout cli`).
	Init []string

	conn  net.Conn
	buf   []byte
	level string        // "user" or "operator" once lowered; "" = the socket's
	idle  time.Duration // the server's idle timeout, once set with `set timeout cli`
	last  time.Time     // the end of the last exchange
}

// Dial opens a prompt-mode session on a.
func Dial(a Addr, timeout time.Duration) (*Session, error) {
	s := &Session{Addr: a, Timeout: timeout}
	if err := s.dial(); err != nil {
		return nil, err
	}
	return s, nil
}

func (s *Session) dial() error {
	network, address := s.Addr.network()
	c, err := net.DialTimeout(network, address, 5*time.Second)
	if err != nil {
		return fmt.Errorf("%w %s: %v", ErrUnreachable, s.Addr, err)
	}
	s.conn = c
	if _, err := s.exchange("prompt"); err != nil {
		c.Close()
		s.conn = nil
		return fmt.Errorf("%w %s: no prompt: %v", ErrUnreachable, s.Addr, err)
	}
	init := s.Init
	if s.level != "" {
		init = append(slices.Clone(init), s.level)
	}
	for _, cmd := range init {
		out, err := s.exchange(cmd)
		if err != nil {
			c.Close()
			s.conn = nil
			return fmt.Errorf("%w %s: %v", ErrUnreachable, s.Addr, err)
		}
		s.track(cmd, out)
	}
	return nil
}

// track remembers what a command that succeeded changed in the session:
// the level it was lowered to, and its idle timeout.
func (s *Session) track(cmd, reply string) {
	if reply != "" {
		return // an error reply: nothing changed
	}
	words := strings.Fields(cmd)
	switch {
	case len(words) == 1 && (words[0] == "user" || words[0] == "operator"):
		if s.level != "user" { // a session never goes back up
			s.level = words[0]
		}
	case len(words) == 4 && words[0] == "set" && words[1] == "timeout" && words[2] == "cli":
		if n, err := strconv.Atoi(words[3]); err == nil && n > 0 {
			s.idle = time.Duration(n) * time.Second
		}
	}
}

// Level returns the level the session was lowered to ("user",
// "operator"), or "" when it has the socket's.
func (s *Session) Level() string { return s.level }

// KeepAliveEvery returns how often an idle session must say something so
// that the server does not close it: a third of the idle timeout it set
// (`set timeout cli`), else of HAProxy's default stats timeout, 10s.
func (s *Session) KeepAliveEvery() time.Duration {
	idle := s.idle
	if idle <= 0 {
		idle = 10 * time.Second
	}
	return max(idle/3, 100*time.Millisecond)
}

// Ping keeps an idle session open: it sends `show cli level`, which every
// level may run and which changes nothing. It never redials: when the
// connection is gone, the next command reconnects (and says so).
func (s *Session) Ping() error {
	if s.conn == nil {
		return errClosed
	}
	if _, err := s.exchange("show cli level"); err != nil {
		s.conn.Close()
		s.conn = nil
		return err
	}
	return nil
}

// Close ends the session with `quit`.
func (s *Session) Close() error {
	if s.conn == nil {
		return nil
	}
	io.WriteString(s.conn, "quit\n")
	err := s.conn.Close()
	s.conn = nil
	return err
}

// Exec sends one command (no ';' splitting: see SplitCommands) and returns
// its output without the framing: "" for an empty reply, "text\n" for
// one line ("text" for the few messages the server sends without their
// own newline), or "+ " when the server waits for the lines of a payload.
func (s *Session) Exec(cmd string) (string, error) {
	if s.conn == nil {
		if err := s.redial(); err != nil {
			return "", err
		}
	}
	out, err := s.exchange(cmd)
	if err != nil && len(out) == 0 && errors.Is(err, errClosed) {
		// Closed before it read the line: nothing ran, so redial and resend.
		s.conn.Close()
		s.conn = nil
		if err := s.redial(); err != nil {
			return "", err
		}
		out, err = s.exchange(cmd)
	}
	if err != nil {
		if s.conn != nil {
			s.conn.Close()
			s.conn = nil
		}
		return out, err
	}
	s.track(cmd, out)
	return out, nil
}

// ExecWait is Exec for a command that takes up to d on the server (`wait
// <d> ...`): the exchange is bounded by d and the session's Timeout
// together.
func (s *Session) ExecWait(cmd string, d time.Duration) (string, error) {
	saved := s.Timeout
	if saved > 0 {
		s.Timeout = saved + d
	}
	defer func() { s.Timeout = saved }()
	return s.Exec(cmd)
}

// redial opens a new connection after the last one was lost, at the
// level the session had, and tells OnReconnect the level it has now.
func (s *Session) redial() error {
	if err := s.dial(); err != nil {
		return err
	}
	if s.OnReconnect != nil {
		level := ""
		if out, err := s.exchange("show cli level"); err == nil && !IsError(out) {
			level = strings.TrimSpace(out)
		}
		s.OnReconnect(level)
	}
	return nil
}

var errClosed = errors.New("connection closed by the server")

// IdleFor returns how long the session has said nothing.
func (s *Session) IdleFor() time.Duration { return time.Since(s.last) }

// exchange writes line and reads up to the next prompt.
func (s *Session) exchange(line string) (string, error) {
	defer func() { s.last = time.Now() }()
	if s.Timeout > 0 {
		s.conn.SetDeadline(time.Now().Add(s.Timeout))
	}
	if _, err := io.WriteString(s.conn, strings.TrimRight(line, "\n")+"\n"); err != nil {
		return "", errClosed
	}
	s.buf = s.buf[:0]
	chunk := make([]byte, 32<<10)
	for {
		n, err := s.conn.Read(chunk)
		s.buf = append(s.buf, chunk[:n]...)
		if b := s.buf; len(b) >= 2 && string(b[len(b)-2:]) == "> " && (len(b) == 2 || b[len(b)-3] == '\n') {
			return strings.TrimSuffix(string(b[:len(b)-2]), "\n"), nil
		}
		if len(s.buf) == 2 && string(s.buf) == "+ " {
			return "+ ", nil
		}
		if err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) {
				return string(s.buf), errClosed
			}
			return string(s.buf), err
		}
	}
}

// SplitCommands splits a line on the ';' that separate commands, as the
// server does: a backslash keeps the next character (so `\;` stays inside
// a word), and blanks around each command are dropped. Empty commands are
// kept, since the server answers them too.
func SplitCommands(line string) []string {
	var cmds []string
	var cur strings.Builder
	for i := 0; i < len(line); i++ {
		switch c := line[i]; {
		case c == '\\' && i+1 < len(line):
			cur.WriteByte(c)
			cur.WriteByte(line[i+1])
			i++
		case c == ';':
			cmds = append(cmds, strings.TrimSpace(cur.String()))
			cur.Reset()
		default:
			cur.WriteByte(c)
		}
	}
	return append(cmds, strings.TrimSpace(cur.String()))
}
