package runtime

import (
	"io"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/fulcrum-proxy/fulcrum/proxy"
)

// addServerConfig is fulcrum's version of add-server.cfg, the layout
// testdata/runtime/haproxy/add-server.txt was captured on: the frontend
// first, so that web is proxy #2 as there.
const addServerConfig = `
[defaults]
mode = "http"
timeout_connect = "2s"
timeout_client = "30s"
timeout_server = "30s"

[[frontend]]
name = "ft"
mode = "tcp"
bind = ["127.0.0.1:0"]
default_backend = "tb"

[[backend]]
name = "web"
balance = "roundrobin"
[[backend.server]]
name = "s1"
address = "127.0.0.1:18081"
weight = 100
[[backend.server]]
name = "s2"
address = "127.0.0.1:18082"
weight = 50

[[backend]]
name = "st"
balance = "static-rr"
[[backend.server]]
name = "a1"
address = "127.0.0.1:18081"

[[backend]]
name = "hs"
balance = "source"
[[backend.server]]
name = "h1"
address = "127.0.0.1:18081"

[[backend]]
name = "ch"
balance = "source"
hash_type = "consistent"
[[backend.server]]
name = "c1"
address = "127.0.0.1:18081"

[[backend]]
name = "tb"
mode = "tcp"
balance = "roundrobin"
`

// addServerDiffs are the commands of add-server.txt whose reply differs
// from HAProxy 2.6's on purpose, with the reason (dynserver.go's header
// lists the departures).
var addServerDiffs = map[string]string{
	"add server st/x 127.0.0.1:1":                  "fulcrum adds servers to static-rr backends too (the map is recomputed)",
	"add server hs/x 127.0.0.1:1":                  "fulcrum adds servers to map-based hashing backends too",
	"add server web/n7 127.0.0.1:1 id 1":           "the file and line differ: test.toml here, add-server.cfg:16 there",
	"add server web/n13 127.0.0.1:1 downinter abc": "HAProxy names 'agent-inter' for any of inter, fastinter, downinter; fulcrum names the keyword given",
	"add server ch/n26 127.0.0.1:1 cookie abc":     "fulcrum takes cookie on an added server",
	"add server ch/n27 127.0.0.1:1 weight abc":     "HAProxy reads atol(\"abc\") as weight 0; fulcrum refuses the value",
	"add server web/d3 127.0.0.1:18085 id 100":     "HAProxy says (null):0 for a server without a file position, fulcrum (runtime):0",
}

// TestHAProxyAddServer replays HAProxy 2.6's add and del server transcript
// (add-server.txt, errors first) against fulcrum on the same layout and
// compares every reply byte for byte, except addServerDiffs. The del
// server of a server with a session holds a TCP connection through the
// frontend ft to tb/t1, as the capture did.
func TestHAProxyAddServer(t *testing.T) {
	e := startEnv(t, addServerConfig)
	data, err := os.ReadFile("../testdata/runtime/haproxy/add-server.txt")
	if err != nil {
		t.Fatal(err)
	}
	// tb/t1's server: accepts and holds connections.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	tr := parseTranscript(t, "\n"+goldenSep+string(data))
	compared := 0
	for _, s := range tr.steps {
		cmd := strings.ReplaceAll(s.cmd, "127.0.0.1:18191", l.Addr().String())
		if cmd == "disable server tb/t1" {
			// A client holds a session on t1 through the frontend.
			c, err := net.Dial("tcp", e.p.Frontends[0].Addrs()[0].String())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			t1 := e.p.Backend("tb").Server("t1")
			waitFor(t, 5*time.Second, "a session on tb/t1", func() bool { return t1.Counters.Scur.Load() == 1 })
		}
		got := mask(e.run(t, s.level, cmd))
		if _, ok := addServerDiffs[s.cmd]; ok {
			continue
		}
		compared++
		if want := mask(s.reply); got != want {
			t.Errorf("echo %q | socat ./run/admin.sock\ngot:\n%q\nHAProxy 2.6:\n%q", s.cmd, got, want)
		}
	}
	if compared < 45 {
		t.Errorf("only %d replies compared", compared)
	}
	for cmd := range addServerDiffs {
		if !strings.Contains(string(data), `"`+cmd+`"`) {
			t.Errorf("addServerDiffs lists %q, which the transcript does not have", cmd)
		}
	}
}

// TestAddServerDepartures: what fulcrum does where HAProxy 2.6 refuses or
// reads otherwise (addServerDiffs), each with its exact reply.
func TestAddServerDepartures(t *testing.T) {
	e := startEnv(t, addServerConfig)
	for _, c := range []struct{ cmd, want string }{
		{"add server st/x 127.0.0.1:1", "New server registered.\n\n"},
		{"add server web/n7 127.0.0.1:1 id 1", "'id' : custom id 1 already used at test.toml:17 ('server s1').\n\n"},
		{"add server web/n13 127.0.0.1:1 downinter abc", "unexpected character 'a' in 'downinter' argument of server n13..\n\n"},
		{"add server ch/n26 127.0.0.1:1 cookie abc", "New server registered.\n\n"},
		{"add server ch/n27 127.0.0.1:1 weight abc", "'weight' expects an integer argument, got 'abc'.\n\n"},
		{"add server web/d2 127.0.0.1:18084 id 100", "New server registered.\n\n"},
		{"add server web/d3 127.0.0.1:18085 id 100", "'id' : custom id 100 already used at (runtime):0 ('server d2').\n\n"},
		{"add server web/d4 127.0.0.1", "Missing port in server address '127.0.0.1' (fulcrum needs one).\n\n"},
		// TLS and PROXY keywords, as the file's keys (HAProxy 2.6 refuses
		// ssl without ca-file, and takes an sni that a tcp backend cannot
		// evaluate).
		{"add server tb/d5 127.0.0.1:1 ssl sni req.hdr(host)", "error detected while parsing sni expression : 'req.hdr(host)' needs mode http (a tcp backend sees no HTTP request)\n\n"},
		{"add server web/d6 127.0.0.1:1 send-proxy proxy-v2-options ssl", "'proxy-v2-options' needs 'send-proxy-v2'.\n\n"},
		{"add server tb/d9 127.0.0.1:1 ssl", "New server registered.\n\n"},
		{"add server web/d7 127.0.0.1:1 enabled", "New server registered.\n\n"},
		{"disable server web/s1", "\n"},
		{"del server web/s1", "Server deleted.\n"},
		{"get weight web/d7", "1 (initial 1)\n\n"},
	} {
		if got := e.run(t, LevelAdmin, c.cmd); got != c.want {
			t.Errorf("%s: got %q, want %q", c.cmd, got, c.want)
		}
	}
	if s := e.p.Backend("ch").Server("n26"); s == nil || s.Conf.Cookie != "abc" {
		t.Error("ch/n26 was not added with its cookie")
	}
	if s := e.p.Backend("web").Server("d7"); s == nil || s.Admin() != proxy.AdminReady {
		t.Error("web/d7 added enabled is not READY")
	}
	// Ids: s1 and s2 are 1 and 2, d2 took 100; d7 got 3. s1's id is never
	// given again.
	e.run(t, LevelAdmin, "add server web/d8 127.0.0.1:1")
	if got := e.p.Backend("web").Server("d8").ID; got != 4 {
		t.Errorf("d8's id %d, want 4", got)
	}
	// Operators and users may not add or delete.
	for _, l := range []Level{LevelUser, LevelOperator} {
		for _, cmd := range []string{"add server web/zz 127.0.0.1:1", "del server web/d8", "wait 1 srv-removable web/d8"} {
			if got := e.run(t, l, cmd); got != "Permission denied\n\n" {
				t.Errorf("%s at %s: %q", cmd, l, got)
			}
		}
	}
}

// TestWait: HAProxy 3.0's wait, with and without srv-removable, and its
// errors.
func TestWait(t *testing.T) {
	e := startEnv(t, addServerConfig)
	e.run(t, LevelAdmin, "add server web/d1 127.0.0.1:1")
	e.run(t, LevelAdmin, "add server web/d2 127.0.0.1:1 enabled")
	for _, c := range []struct{ cmd, want string }{
		{"wait", "Expects a duration in milliseconds.\n\n"},
		{"wait abc", "Invalid duration.\n\n"},
		{"wait 0", "Invalid duration.\n\n"},
		{"wait 10 bogus", waitUsage + "\n"},
		{"wait -h", waitUsage + "\n"},
		{"wait 10 -h", waitUsage + "\n"},
		{"wait 10 srv-removable", "Missing server name (<backend>/<server>).\n\n"},
		{"wait 10 srv-removable web", "Require 'backend/server'.\n\n"},
		{"wait 10", "Done.\n\n"},
		{"wait 10ms srv-removable web/d1", "Done.\n\n"},
		{"wait 10 srv-removable nobe/d1", "Failed. No such backend.\n\n"},
		{"wait 10 srv-removable web/nosuch", "Failed. No such server.\n\n"},
		{"wait 10 srv-removable web/d2", "Failed. Only servers in maintenance mode can be deleted.\n\n"},
	} {
		if got := e.run(t, LevelAdmin, c.cmd); got != c.want {
			t.Errorf("%s: got %q, want %q", c.cmd, got, c.want)
		}
	}
	// A server with a session: the wait expires, then succeeds once the
	// session ends, and del server deletes it.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() { // hold it until the client goes
				defer c.Close()
				c.Read(make([]byte, 1))
			}()
		}
	}()
	e.run(t, LevelAdmin, "add server tb/t1 "+l.Addr().String()+" enabled")
	client, err := net.Dial("tcp", e.p.Frontends[0].Addrs()[0].String())
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	t1 := e.p.Backend("tb").Server("t1")
	waitFor(t, 5*time.Second, "a session on tb/t1", func() bool { return t1.Counters.Scur.Load() == 1 })
	e.run(t, LevelAdmin, "disable server tb/t1")
	start := time.Now()
	if got := e.run(t, LevelAdmin, "wait 60ms srv-removable tb/t1"); got != "Wait delay expired. Server still has connections attached to it, cannot remove it.\n\n" {
		t.Fatalf("wait with a session: %q", got)
	}
	if d := time.Since(start); d < 60*time.Millisecond {
		t.Errorf("the wait ended after %v, before its delay", d)
	}
	done := make(chan string, 1)
	go func() {
		c, err := net.Dial("unix", e.socks[LevelAdmin])
		if err != nil {
			done <- err.Error()
			return
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(20 * time.Second))
		c.Write([]byte("wait 20s srv-removable tb/t1; del server tb/t1\n"))
		b, _ := io.ReadAll(c)
		done <- string(b)
	}()
	client.Close() // the session ends
	select {
	case got := <-done:
		if got != "Done.\n\nServer deleted.\n" {
			t.Fatalf("wait then del: %q", got)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the wait did not see the session end")
	}
	if e.p.Backend("tb").Server("t1") != nil {
		t.Fatal("t1 still there")
	}
}

// TestWaitEndsWhenClientCloses: a wait whose client closed the connection
// ends (its session with it) long before its delay; one whose client only
// shut its sending side, as socat does at the end of its input, runs to
// its end and answers.
func TestWaitEndsWhenClientCloses(t *testing.T) {
	e := startEnv(t, addServerConfig)
	sessions := func() int {
		e.api.mu.Lock()
		defer e.api.mu.Unlock()
		return len(e.api.sessions)
	}
	c, err := net.Dial("unix", e.socks[LevelAdmin])
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Write([]byte("wait 60s\n")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "the waiting session", func() bool { return sessions() == 1 })
	// Still waiting a little later: the poll does not end it by itself.
	time.Sleep(3 * waitHupPoll / 2)
	if n := sessions(); n != 1 {
		t.Fatalf("sessions while waiting: %d", n)
	}
	c.Close()
	waitFor(t, 5*time.Second, "the wait to end after its client closed", func() bool { return sessions() == 0 })

	// Half-closed: the reply still comes.
	hc, err := net.Dial("unix", e.socks[LevelAdmin])
	if err != nil {
		t.Fatal(err)
	}
	defer hc.Close()
	hc.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := hc.Write([]byte("wait 300ms\n")); err != nil {
		t.Fatal(err)
	}
	hc.(*net.UnixConn).CloseWrite()
	start := time.Now()
	b, err := io.ReadAll(hc)
	if err != nil || string(b) != "Done.\n\n" {
		t.Fatalf("half-closed wait: %q, %v", b, err)
	}
	if d := time.Since(start); d < 250*time.Millisecond {
		t.Errorf("half-closed wait ended after %v, before its delay", d)
	}
}
