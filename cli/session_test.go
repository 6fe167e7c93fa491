package cli

import (
	"bufio"
	"net"
	"path/filepath"
	"testing"
)

// promptServer answers in prompt mode as HAProxy does
// (prompt-session.txt), and closes each connection after one command
// when closeAfterOne, as a restarting proxy would.
func promptServer(t *testing.T, closeAfterOne bool) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "p.sock")
	l, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				r := bufio.NewReader(c)
				n := 0
				for {
					line, err := r.ReadString('\n')
					if err != nil {
						return
					}
					switch line {
					case "prompt\n":
						c.Write([]byte("\n> "))
						continue
					case "show cli level\n":
						c.Write([]byte("admin\n\n> "))
					case "set weight web/s1 abc\n":
						c.Write([]byte("Empty weight string empty or preceded by garbage\n> "))
					default:
						c.Write([]byte("\n> "))
					}
					// "show cli level" is what a session asks after a
					// reconnection: not the command that closes.
					if line != "show cli level\n" {
						n++
					}
					if closeAfterOne && n == 1 {
						return
					}
				}
			}()
		}
	}()
	return path
}

func TestSessionFramingAndReconnect(t *testing.T) {
	s, err := Dial(Addr(promptServer(t, true)), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	reconnected, level := 0, ""
	s.OnReconnect = func(l string) { reconnected, level = reconnected+1, l }
	if got, err := s.Exec("show version"); err != nil || got != "" {
		t.Fatalf("Exec: %q %v", got, err)
	}
	// The server closed the connection: the next command redials.
	if got, err := s.Exec("set weight web/s1 abc"); err != nil || got != "Empty weight string empty or preceded by garbage" || reconnected != 1 || level != "admin" {
		t.Fatalf("after the close: %q %v, %d reconnections at level %q", got, err, reconnected, level)
	}
	if got, err := s.Exec("set server web/s1 state drain"); err != nil || got != "" {
		t.Fatalf("empty reply: %q %v", got, err)
	}
}
