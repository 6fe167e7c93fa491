package agent

import (
	"context"
	"io"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

// startServer runs a Server for cfg on 127.0.0.1:0 and returns its address.
// The server stops, and Serve's return is checked, when the test ends.
func startServer(t *testing.T, cfg *Config, src Source) string {
	t.Helper()
	if cfg.StateFile == "" || cfg.StateFile == Default().StateFile {
		cfg.StateFile = filepath.Join(t.TempDir(), "state")
	}
	srv, err := NewServer(cfg, src, zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.InfoLevel))
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return ln.Addr().String()
}

// ask connects to addr, sends send (if any) as the balancer's agent-send,
// and returns everything the agent wrote before closing.
func ask(t *testing.T, addr, send string) string {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	if send != "" {
		if _, err := io.WriteString(c, send); err != nil {
			t.Fatal(err)
		}
	}
	b, err := io.ReadAll(c)
	if err != nil {
		t.Fatalf("reading the reply: %v", err)
	}
	// The agent waits for our close before closing; let it go.
	c.(*net.TCPConn).CloseWrite()
	return string(b)
}

// TestServerFollowsLoad drives the agent ready → drain → ready with a fake
// load source and reads each reply over TCP.
func TestServerFollowsLoad(t *testing.T) {
	cfg := Default()
	src := NewManualSource(Reading{CPU: 20, Memory: 10})
	addr := startServer(t, &cfg, src)
	steps := []struct {
		r    Reading
		want string
	}{
		{Reading{CPU: 20, Memory: 10}, "up ready 75%\n"},
		{Reading{CPU: 97, Memory: 10}, "up drain #cpu 97% over threshold 90%\n"},
		{Reading{CPU: 93, Memory: 97}, "up drain #cpu 93% over threshold 90%, memory 97% over threshold 95%\n"},
		{Reading{CPU: 30, Memory: 20}, "up ready 60%\n"},
	}
	for _, s := range steps {
		src.Set(s.r)
		if got := ask(t, addr, ""); got != s.want {
			t.Errorf("reading %+v: got %q, want %q", s.r, got, s.want)
		}
	}
}

// TestServerOverrides checks `set` through the state file: the next
// connection after each change sees it.
func TestServerOverrides(t *testing.T) {
	cfg := Default()
	cfg.StateFile = filepath.Join(t.TempDir(), "state")
	addr := startServer(t, &cfg, NewManualSource(Reading{CPU: 40}))
	ctl := Control{Path: cfg.StateFile}
	for _, s := range []struct {
		ov   Override
		want string
	}{
		{OverrideAuto, "up ready 60%\n"},
		{OverrideDrain, "up drain #manual\n"},
		{OverrideMaint, "up maint #manual\n"},
		{OverrideReady, "up ready 60%\n"},
		{OverrideAuto, "up ready 60%\n"},
	} {
		if err := ctl.Set(s.ov); err != nil {
			t.Fatal(err)
		}
		if got := ask(t, addr, ""); got != s.want {
			t.Errorf("set %s: got %q, want %q", s.ov, got, s.want)
		}
	}
}

// TestServerIgnoresRequest: whatever the balancer sends (agent-send, a
// command, a flood) is never interpreted; the reply is the same one line.
func TestServerIgnoresRequest(t *testing.T) {
	cfg := Default()
	addr := startServer(t, &cfg, NewManualSource(Reading{CPU: 50}))
	for name, send := range map[string]string{
		"nothing":      "",
		"agent-send":   "web/s6\n",
		"set command":  "set drain\n",
		"shell":        "$(touch /tmp/pwned); rm -rf /\n",
		"no line feed": "ping",
		"flood":        strings.Repeat("x", 256<<10),
	} {
		t.Run(name, func(t *testing.T) {
			if got, want := ask(t, addr, send), "up ready 50%\n"; got != want {
				t.Errorf("got %q, want %q", got, want)
			}
		})
	}
}

// TestServerAllowList: sources outside the allow list get the connection
// closed without a byte.
func TestServerAllowList(t *testing.T) {
	tests := []struct {
		allow []string
		want  string
	}{
		{nil, "up ready 100%\n"},
		{[]string{"127.0.0.0/8"}, "up ready 100%\n"},
		{[]string{"10.0.0.0/8", "127.0.0.1"}, "up ready 100%\n"},
		{[]string{"192.0.2.0/24"}, ""},
		{[]string{"127.0.0.2"}, ""},
		{[]string{"::1"}, ""},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.allow, ","), func(t *testing.T) {
			cfg := Default()
			cfg.Allow = tt.allow
			addr := startServer(t, &cfg, NewManualSource(Reading{}))
			if tt.want != "" {
				if got := ask(t, addr, "hello\n"); got != tt.want {
					t.Errorf("got %q, want %q", got, tt.want)
				}
				return
			}
			// Refused: closed without a byte (a reset, since our bytes are
			// left unread, or a plain close).
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			c.SetDeadline(time.Now().Add(5 * time.Second))
			io.WriteString(c, "hello\n")
			b, err := io.ReadAll(c)
			if len(b) != 0 {
				t.Errorf("got %q, want no reply", b)
			}
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				t.Errorf("connection left open: %v", err)
			}
		})
	}
}

func TestAllowedMappedAddress(t *testing.T) {
	cfg := Default()
	cfg.Allow = []string{"10.1.0.0/16"}
	s, err := NewServer(&cfg, NewManualSource(Reading{}), zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	for addr, want := range map[string]bool{
		"10.1.2.3:1":          true,
		"[::ffff:10.1.2.3]:1": true,
		"10.2.0.1:1":          false,
		"[2001:db8::1]:1":     false,
	} {
		ta, err := net.ResolveTCPAddr("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		if got := s.allowed(ta); got != want {
			t.Errorf("allowed(%s): got %v, want %v", addr, got, want)
		}
	}
}

// TestServerConcurrent asks from several goroutines while the load changes,
// for the race detector: every reply must be one of the two possible lines.
func TestServerConcurrent(t *testing.T) {
	cfg := Default()
	src := NewManualSource(Reading{CPU: 10})
	addr := startServer(t, &cfg, src)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range 20 {
				if i == 0 {
					src.Set(Reading{CPU: float64(10 + 85*(j%2))})
				}
				c, err := net.Dial("tcp", addr)
				if err != nil {
					t.Error(err)
					return
				}
				b, err := io.ReadAll(c)
				c.Close()
				if got := string(b); err != nil || (got != "up ready 90%\n" && got != "up drain #cpu 95% over threshold 90%\n") {
					t.Errorf("got %q, %v", got, err)
				}
			}
		}()
	}
	wg.Wait()
}
