package runtime

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fulcrum-proxy/fulcrum/internal/testutil"
	"github.com/rs/zerolog"
)

// newAPI returns a Runtime API on a fresh proxy, closed at the end of the
// test, and a short temporary directory for its sockets.
func newAPI(t *testing.T) (*API, string) {
	t.Helper()
	e := startEnv(t, fuzzConfig)
	a := New(e.p, zerolog.Nop(), Options{})
	t.Cleanup(func() { a.Close() })
	return a, e.dir
}

func TestSocketMode(t *testing.T) {
	a, dir := newAPI(t)
	tests := []struct {
		name string
		mode os.FileMode
		want os.FileMode
	}{
		{"default 0600", 0, 0o600},
		{"0660", 0o660, 0o660},
		{"0666", 0o666, 0o666},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(dir, "m"+strconv.Itoa(i)+".sock")
			if err := a.Listen(Socket{Path: path, Level: LevelUser, Mode: tt.mode}); err != nil {
				t.Fatal(err)
			}
			fi, err := os.Lstat(path)
			if err != nil {
				t.Fatal(err)
			}
			if fi.Mode().Type() != os.ModeSocket || fi.Mode().Perm() != tt.want {
				t.Errorf("got %v, want socket %v", fi.Mode(), tt.want)
			}
		})
	}
}

// TestSocketOwner: owner and group, by name or id, are applied (here the
// process's own, which needs no privilege); an unknown one is an error.
func TestSocketOwner(t *testing.T) {
	a, dir := newAPI(t)
	uid, gid := os.Getuid(), os.Getgid()
	path := filepath.Join(dir, "o.sock")
	if err := a.Listen(Socket{Path: path, Owner: strconv.Itoa(uid), Group: strconv.Itoa(gid)}); err != nil {
		t.Fatal(err)
	}
	fi, _ := os.Lstat(path)
	st := fi.Sys().(*syscall.Stat_t)
	if int(st.Uid) != uid || int(st.Gid) != gid {
		t.Errorf("owner %d:%d, want %d:%d", st.Uid, st.Gid, uid, gid)
	}
	err := a.Listen(Socket{Path: filepath.Join(dir, "o2.sock"), Owner: "no-such-user-fulcrum"})
	if err == nil || !strings.Contains(err.Error(), "no-such-user-fulcrum") {
		t.Errorf("unknown owner: got %v", err)
	}
	if _, err := os.Lstat(filepath.Join(dir, "o2.sock")); !os.IsNotExist(err) {
		t.Errorf("a failed Listen left a file: %v", err)
	}
}

// TestStaleSocket: a socket file nobody listens on (a crashed run) is
// replaced; a live one, or a file that is not a socket, is refused and
// left alone.
func TestStaleSocket(t *testing.T) {
	a, dir := newAPI(t)
	stale := filepath.Join(dir, "stale.sock")
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: stale, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	l.SetUnlinkOnClose(false)
	l.Close() // the file stays, as after a crash
	if err := a.Listen(Socket{Path: stale, Level: LevelAdmin}); err != nil {
		t.Fatalf("stale socket: %v", err)
	}
	if got := dialRun(t, "unix", stale, "show cli level\n"); got != "admin\n\n" {
		t.Errorf("replaced socket answers %q", got)
	}

	live := filepath.Join(dir, "live.sock")
	ll, err := net.Listen("unix", live)
	if err != nil {
		t.Fatal(err)
	}
	defer ll.Close()
	if err := a.Listen(Socket{Path: live}); err == nil || !strings.Contains(err.Error(), "another process") {
		t.Errorf("live socket: got %v", err)
	}

	file := filepath.Join(dir, "file")
	os.WriteFile(file, []byte("keep me"), 0o644)
	if err := a.Listen(Socket{Path: file}); err == nil || !strings.Contains(err.Error(), "not a socket") {
		t.Errorf("regular file: got %v", err)
	}
	if b, _ := os.ReadFile(file); string(b) != "keep me" {
		t.Errorf("the regular file was changed: %q", b)
	}
}

// TestCloseRemovesSockets: Close removes the files it created and ends the
// sessions, but not a file that another process put in its place.
func TestCloseRemovesSockets(t *testing.T) {
	a, dir := newAPI(t)
	mine := filepath.Join(dir, "mine.sock")
	theirs := filepath.Join(dir, "theirs.sock")
	for _, p := range []string{mine, theirs} {
		if err := a.Listen(Socket{Path: p, Level: LevelUser}); err != nil {
			t.Fatal(err)
		}
	}
	c, err := net.Dial("unix", mine)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, "prompt\n")
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	io.ReadFull(c, make([]byte, 3))
	// Another process replaces theirs.sock (as a newer fulcrum would).
	os.Remove(theirs)
	other, err := net.ListenUnix("unix", &net.UnixAddr{Name: theirs, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()

	a.Close()
	if _, err := os.Lstat(mine); !os.IsNotExist(err) {
		t.Errorf("%s still exists after Close: %v", mine, err)
	}
	if _, err := os.Lstat(theirs); err != nil {
		t.Errorf("Close removed another process's socket: %v", err)
	}
	if b, err := io.ReadAll(c); err != nil || len(b) > 0 {
		t.Errorf("open session after Close: got %q, %v; want a close", b, err)
	}
}

// TestTCPSocket: the API on TCP answers like the Unix socket; a
// non-loopback address is refused unless AllowRemote.
func TestTCPSocket(t *testing.T) {
	a, _ := newAPI(t)
	if err := a.Listen(Socket{TCP: "127.0.0.1:0", Level: LevelOperator}); err != nil {
		t.Fatal(err)
	}
	addr := a.Addrs()[0].String()
	if got := dialRun(t, "tcp", addr, "show cli level\n"); got != "operator\n\n" {
		t.Errorf("got %q", got)
	}
	if got := dialRun(t, "tcp", addr, "show cli sockets\n"); got != "# socket lvl processes\nipv4@"+addr+" operator all\n\n" {
		t.Errorf("show cli sockets: got %q", got)
	}
	if err := a.Listen(Socket{TCP: "0.0.0.0:0"}); err == nil || !strings.Contains(err.Error(), "not a loopback address") {
		t.Errorf("0.0.0.0 without allow_remote: got %v", err)
	}
	if err := a.Listen(Socket{TCP: "0.0.0.0:0", AllowRemote: true}); err != nil {
		t.Errorf("0.0.0.0 with allow_remote: %v", err)
	}
}

// TestChangeLog: a change is logged at info with the command, the socket,
// the new value and the previous one; reads are not logged.
func TestChangeLog(t *testing.T) {
	e := startEnv(t, parityConfig(t))
	e.run(t, LevelAdmin, "get weight web/s1")
	e.run(t, LevelAdmin, "set weight web/s1 40")
	e.run(t, LevelAdmin, "set server web/s2 state drain")
	e.run(t, LevelAdmin, "set server web/s5 addr 127.0.0.2 port 18090")
	e.run(t, LevelAdmin, "set maxconn frontend fe_web 100")
	var lines []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(e.log.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("log line %q: %v", l, err)
		}
		if m["command"] != nil {
			lines = append(lines, m)
		}
	}
	sock := "unix@" + e.socks[LevelAdmin]
	want := []map[string]any{
		{"level": "info", "socket": sock, "command": "set weight web/s1 40", "server": "web/s1", "weight": 40.0, "previous_weight": 100.0},
		{"level": "info", "socket": sock, "command": "set server web/s2 state drain", "server": "web/s2", "state": "DRAIN", "previous_state": "READY"},
		{"level": "info", "socket": sock, "command": "set server web/s5 addr 127.0.0.2 port 18090", "server": "web/s5", "addr": "127.0.0.2:18090", "previous_addr": "127.0.0.1:18082"},
		{"level": "info", "socket": sock, "command": "set maxconn frontend fe_web 100", "frontend": "fe_web", "maxconn": 100.0, "previous_maxconn": 500.0},
	}
	if len(lines) != len(want) {
		t.Fatalf("got %d change lines, want %d:\n%s", len(lines), len(want), e.log.String())
	}
	for i, w := range want {
		for k, v := range w {
			if lines[i][k] != v {
				t.Errorf("line %d: %s = %v, want %v (%v)", i, k, lines[i][k], v, lines[i])
			}
		}
	}
}

// TestSocketMaxConn: a socket serves at most MaxConn sessions at once; a
// client past it is not refused but waits, unaccepted, until a session
// ends, then is served. Another socket is not affected.
func TestSocketMaxConn(t *testing.T) {
	a, dir := newAPI(t)
	busy, other := filepath.Join(dir, "busy.sock"), filepath.Join(dir, "other.sock")
	if err := a.Listen(Socket{Path: busy, Level: LevelUser, MaxConn: 2}); err != nil {
		t.Fatal(err)
	}
	if err := a.Listen(Socket{Path: other, Level: LevelUser, MaxConn: 2}); err != nil {
		t.Fatal(err)
	}
	// Two interactive sessions hold the two slots.
	var held []net.Conn
	for range 2 {
		c, err := net.Dial("unix", busy)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		io.WriteString(c, "prompt\n")
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		if _, err := io.ReadFull(c, make([]byte, 3)); err != nil {
			t.Fatalf("prompt: %v", err)
		}
		held = append(held, c)
	}
	third, err := net.Dial("unix", busy)
	if err != nil {
		t.Fatalf("a client past maxconn is refused: %v", err)
	}
	defer third.Close()
	io.WriteString(third, "show cli level\n")
	third.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
	if n, _ := third.Read(make([]byte, 1)); n > 0 {
		t.Fatal("a third session was served while two held maxconn 2")
	}
	if got := dialRun(t, "unix", other, "show cli level\n"); got != "user\n\n" {
		t.Errorf("the other socket: %q", got)
	}
	io.WriteString(held[0], "quit\n") // frees a slot
	third.SetReadDeadline(time.Now().Add(10 * time.Second))
	if b, err := io.ReadAll(third); err != nil || string(b) != "user\n\n" {
		t.Errorf("the waiting client, once a slot is free: %q, %v", b, err)
	}
}

// Issue 16: a socket whose accepts failed logged a warning at every
// retry. Over 25 s of failures alternating with successes (as near the
// descriptor limit), the log gets one warning per 10 s, each followed by
// one "accepting again", and the lines count every failure but the last
// interval's silent ones.
func TestIssue16AcceptLogRateLimited(t *testing.T) {
	var buf testutil.SyncBuffer
	al := acceptLog{log: zerolog.New(&buf), socket: "unix@/x.sock"}
	start := time.Unix(1_700_000_000, 0)
	for i := range 2500 { // one failure and one success every 10 ms
		al.failed(start.Add(time.Duration(i)*10*time.Millisecond), syscall.EMFILE)
		al.accepted()
	}
	var warnings, agains []int
	for _, l := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		var m struct {
			Message  string
			Failures int
		}
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("log line %q: %v", l, err)
		}
		switch m.Message {
		case "runtime API accept failed":
			warnings = append(warnings, m.Failures)
		case "runtime API accepting again":
			agains = append(agains, m.Failures)
		}
	}
	if fmt.Sprint(warnings) != "[1 1000 1000]" || fmt.Sprint(agains) != "[1 1000 1000]" {
		t.Errorf("warnings %v, accepting again %v; want [1 1000 1000] each (at 0, 10 and 20 s)", warnings, agains)
	}
}
