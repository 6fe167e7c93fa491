package cli

import (
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
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
