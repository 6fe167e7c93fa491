package cli

import (
	"errors"
	"fmt"
	"io"
	"net"
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
// OnReconnect is then told. Not safe for concurrent use.
type Session struct {
	Addr    Addr
	Timeout time.Duration // bound on one exchange, 0 = none
	// OnReconnect, if set, is called after the session had to redial.
	OnReconnect func()
	// Init are commands sent after each dial, replies ignored (the shell
	// raises its idle timeout with `set timeout cli`).
	Init []string

	conn net.Conn
	buf  []byte
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
	for _, cmd := range s.Init {
		if _, err := s.exchange(cmd); err != nil {
			c.Close()
			s.conn = nil
			return fmt.Errorf("%w %s: %v", ErrUnreachable, s.Addr, err)
		}
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
		if err := s.dial(); err != nil {
			return "", err
		}
		if s.OnReconnect != nil {
			s.OnReconnect()
		}
	}
	out, err := s.exchange(cmd)
	if err != nil && len(out) == 0 && errors.Is(err, errClosed) {
		// Closed before it read the line: nothing ran, so redial and resend.
		s.conn.Close()
		s.conn = nil
		if err := s.dial(); err != nil {
			return "", err
		}
		if s.OnReconnect != nil {
			s.OnReconnect()
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
	return out, nil
}

var errClosed = errors.New("connection closed by the server")

// exchange writes line and reads up to the next prompt.
func (s *Session) exchange(line string) (string, error) {
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
