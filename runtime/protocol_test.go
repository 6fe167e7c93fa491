package runtime

import (
	"errors"
	"io"
	"net"
	"os"
	"strings"
	"testing"
	"time"
)

// exchange is one step of a byte-exact dialogue: bytes sent, then the
// exact bytes expected back, and whether the server closes after them.
type exchange struct {
	send   string
	want   string
	closed bool
}

// dialogue runs steps on one connection to sock.
func dialogue(t *testing.T, sock string, steps []exchange) {
	t.Helper()
	c, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, s := range steps {
		sent := s.send
		if len(sent) > 80 {
			sent = sent[:40] + "..." + sent[len(sent)-20:]
		}
		if _, err := io.WriteString(c, s.send); err != nil {
			t.Fatalf("send %q: %v", sent, err)
		}
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		got := make([]byte, len(s.want))
		if _, err := io.ReadFull(c, got); err != nil {
			t.Fatalf("send %q: got %q then %v, want %q", sent, got, err, s.want)
		}
		if string(got) != s.want {
			t.Fatalf("send %q: got %q, want %q", sent, got, s.want)
		}
		if s.closed {
			extra, err := io.ReadAll(c)
			if err != nil || len(extra) > 0 {
				t.Fatalf("send %q: want a close after the reply, got %q, %v", sent, extra, err)
			}
			return
		}
	}
	// Nothing more may come: the reply of the last step ended the output.
	c.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
	if n, _ := c.Read(make([]byte, 1)); n > 0 {
		t.Fatal("bytes after the last expected reply")
	}
}

// TestProtocol replays the byte-exact dialogues of HAProxy 2.6
// (prompt-session.txt, protocol-extra.txt) for the commands fulcrum has.
func TestProtocol(t *testing.T) {
	e := startEnv(t, parityConfig(t))
	admin := e.socks[LevelAdmin]
	tests := []struct {
		name  string
		steps []exchange
	}{
		{"interactive session", []exchange{
			{"prompt\n", "\n> ", false},
			{"show cli level\n", "admin\n\n> ", false},
			{"get weight web/s1\n", "100 (initial 100)\n\n> ", false},
			{"get weight web/nosrv\n", "No such server.\n\n> ", false},
			{"set weight web/s1 abc\n", "Empty weight string empty or preceded by garbage\n> ", false},
			{"show cli level;get weight web/s2\n", "admin\n\n> 50 (initial 50)\n\n> ", false},
			{"set timeout cli 60\n", "\n> ", false},
			{"operator\n", "\n> ", false},
			{"show cli level\n", "operator\n\n> ", false},
			// HAProxy 2.6 refuses set weight to an operator; fulcrum runs
			// it (levelDeviations) and refuses what stays admin's.
			{"set weight web/s1 100\n", "\n> ", false},
			{"set maxconn global 2000\n", "Permission denied\n\n> ", false},
			{"quit\n", "", true},
		}},
		{"empty line in interactive mode lists every command", []exchange{
			{"prompt\n", "\n> ", false},
			{"\n", commandTable.usage(LevelAdmin, nil, false) + "\n> ", false},
		}},
		{"prompt again leaves interactive mode, the line ends, then the close", []exchange{
			{"prompt\n", "\n> ", false},
			{"prompt;show cli level\n", "\nadmin\n\n", true},
		}},
		{"lines sent at once all run before the close", []exchange{
			{"show cli level\nget weight web/s2\n", "admin\n\n50 (initial 50)\n\n", true},
		}},
		{"semicolons", []exchange{
			{"show cli level;get weight web/s2;get weight web/nosrv\n", "admin\n\n50 (initial 50)\n\nNo such server.\n\n", true},
		}},
		{"quit closes without a byte", []exchange{{"quit\n", "", true}}},
		{"CRLF", []exchange{{"show cli level\r\n", "admin\n\n", true}}},
		{"tabs", []exchange{{"show\tcli\tlevel\n", "admin\n\n", true}}},
		{"blanks around semicolons", []exchange{{"show cli level ; show cli level\n", "admin\n\nadmin\n\n", true}}},
		{"an escaped blank stays in the word", []exchange{
			{"show\\ cli level\n", commandTable.usage(LevelAdmin, []string{"show cli", "level"}, false) + "\n", true},
		}},
		{"payload in interactive mode", []exchange{
			{"prompt\n", "\n> ", false},
			{"show cli level <<\n", "+ ", false},
			{"k9.example.com web\n", "+ ", false},
			{"\n", "admin\n\n> ", false},
		}},
		{"dropping privileges in one line", []exchange{
			// HAProxy's dialogue has set weight where set maxconn is:
			// fulcrum lets an operator change weights (levelDeviations).
			{"operator;show cli level;set maxconn global 2000;user;show cli level;show env LANG;set weight web/s1 100;operator\n",
				"\noperator\n\nPermission denied\n\n\nuser\n\nPermission denied\n\nPermission denied\n\nPermission denied\n\n", true},
		}},
		{"a line of 16384 bytes runs", []exchange{
			{strings.Repeat("x", maxLine-1) + "\n", commandTable.usage(LevelAdmin, []string{strings.Repeat("x", maxLine-1)}, false) + "\n", true},
		}},
		{"a longer line is refused", []exchange{
			{strings.Repeat("x", maxLine) + "\n", msgLineTooLong + "\n\n", true},
		}},
		// Issue 16: the session goes on after a line too long (HAProxy
		// 2.6 resets the connection without a word).
		{"a long line without LF is refused as soon as it passes the limit, then the session goes on", []exchange{
			{strings.Repeat("x", 3*maxLine), msgLineTooLong + "\n\n", false},
			{strings.Repeat("x", maxLine) + "\nshow cli level\n", "admin\n\n", true},
		}},
		{"the lines around a line too long run, in order", []exchange{
			{"show cli level\n" + strings.Repeat("x", 2*maxLine) + "\nget weight web/s2\n",
				"admin\n\n" + msgLineTooLong + "\n\n50 (initial 50)\n\n", true},
		}},
		{"a line too long in interactive mode", []exchange{
			{"prompt\n", "\n> ", false},
			{strings.Repeat("x", maxLine+1) + "\n", msgLineTooLong + "\n\n> ", false},
			{"show cli level\n", "admin\n\n> ", false},
		}},
		{"a payload line too long is refused and closes", []exchange{
			{"prompt\n", "\n> ", false},
			{"show cli level <<\n", "+ ", false},
			{strings.Repeat("x", maxLine) + "\n", msgLineTooLong + "\n\n", true},
		}},
		{"binary garbage is refused and closes", []exchange{{"show info\x00\x01\x02\n", msgBinary + "\n\n", true}}},
		{"binary garbage after a good line", []exchange{{"show cli level\n\xff\x00\n", "admin\n\n" + msgBinary + "\n\n", true}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { dialogue(t, admin, tt.steps) })
	}
}

// TestPartialLine: bytes without a line feed never run; a half-close then
// ends the session without a byte.
func TestPartialLine(t *testing.T) {
	e := startEnv(t, fuzzConfig)
	c, err := net.Dial("unix", e.socks[LevelAdmin])
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, "show cli level")
	c.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
	if n, err := c.Read(make([]byte, 1)); n > 0 || !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("a line without LF got an answer or a close: %d, %v", n, err)
	}
	c.(*net.UnixConn).CloseWrite()
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if b, err := io.ReadAll(c); err != nil || len(b) > 0 {
		t.Fatalf("after the half-close: got %q, %v; want a silent close", b, err)
	}
}

// TestIdleTimeout: a session that completes no line within the timeout is
// closed silently; `set timeout cli` changes it for that session only.
func TestIdleTimeout(t *testing.T) {
	e := startEnvOpts(t, fuzzConfig, Options{Timeout: 300 * time.Millisecond})
	silent := func(c net.Conn, within time.Duration) {
		t.Helper()
		start := time.Now()
		c.SetReadDeadline(start.Add(within))
		b, err := io.ReadAll(c)
		if err != nil || len(b) > 0 {
			t.Fatalf("got %q, %v; want a silent close", b, err)
		}
	}
	c, err := net.Dial("unix", e.socks[LevelUser])
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	silent(c, 5*time.Second) // a client that sends nothing

	c2, err := net.Dial("unix", e.socks[LevelUser])
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	io.WriteString(c2, "prompt\nset timeout cli 1\n")
	c2.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.ReadFull(c2, make([]byte, len("\n> \n> "))); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	silent(c2, 5*time.Second)
	if d := time.Since(start); d < 700*time.Millisecond {
		t.Errorf("closed after %v; set timeout cli 1 asked for 1s", d)
	}
}
