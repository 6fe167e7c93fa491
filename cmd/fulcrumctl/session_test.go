package main

import (
	"strings"
	"testing"
	"time"

	"github.com/fulcrum-proxy/fulcrum/cli"
)

// TestReconnectKeepsLevel: issue 23 — after `user` or `operator`, a
// session whose connection was lost (the proxy restarted) came back as
// admin without a word. It comes back at the level chosen, and says which.
func TestReconnectKeepsLevel(t *testing.T) {
	e := startProxy(t, nil)
	top := t // the restarted API lives as long as the proxy
	for _, level := range []string{"user", "operator"} {
		t.Run(level, func(t *testing.T) {
			s, err := cli.Dial(cli.Addr(e.sock), 5*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			var told []string
			s.OnReconnect = func(l string) { told = append(told, l) }
			if out, err := s.Exec(level); err != nil || out != "" {
				t.Fatalf("%s: %q %v", level, out, err)
			}
			e.restart(top)
			if out, err := s.Exec("show cli level"); err != nil || out != level+"\n" {
				t.Errorf("level after the reconnection: %q %v, want %q", out, err, level)
			}
			if len(told) != 1 || told[0] != level {
				t.Errorf("OnReconnect told %q, want [%s]", told, level)
			}
			if out, _ := s.Exec("set server web/s1 addr 127.0.0.9"); !strings.HasPrefix(out, "Permission denied") {
				t.Errorf("an admin command after the reconnection: %q, want Permission denied", out)
			}
		})
	}
}

// TestPingKeepsSession: a session that pings outlives its idle timeout;
// one that does not is closed by the server (and reconnects). The pings
// come far more often than the timeout needs, so that a loaded machine's
// scheduling delays cannot make a gap of a whole timeout.
func TestPingKeepsSession(t *testing.T) {
	e := startProxy(t, nil)
	s, err := cli.Dial(cli.Addr(e.sock), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	reconnected := 0
	s.OnReconnect = func(string) { reconnected++ }
	if out, err := s.Exec("set timeout cli 2"); err != nil || out != "" {
		t.Fatalf("set timeout cli: %q %v", out, err)
	}
	if got, want := s.KeepAliveEvery(), 2*time.Second/3; got != want {
		t.Fatalf("KeepAliveEvery = %v, want %v", got, want)
	}
	// Idle time is what this test is about: 3 s of pings, no command.
	end := time.Now().Add(3 * time.Second)
	for time.Now().Before(end) {
		time.Sleep(100 * time.Millisecond)
		if err := s.Ping(); err != nil {
			t.Fatalf("ping: %v", err)
		}
	}
	if out, err := s.Exec("show cli level"); err != nil || out != "admin\n" || reconnected != 0 {
		t.Fatalf("after 3s of pings: %q %v, %d reconnections", out, err, reconnected)
	}
	time.Sleep(2500 * time.Millisecond) // no ping: the server's 2s idle timeout closes the session
	if out, err := s.Exec("show cli level"); err != nil || out != "admin\n" || reconnected != 1 {
		t.Fatalf("after 2.5s without a ping: %q %v, %d reconnections, want 1", out, err, reconnected)
	}
}
