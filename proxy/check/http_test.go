package check

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/fulcrum-proxy/fulcrum/proxy"
)

// TestHTTPCheck: an http check judges the status (500 gives L7STS, the code
// and the reason phrase, and with fall 1 DOWN at once); a server that
// accepts and never answers gives L7TOUT after timeout_check.
func TestHTTPCheck(t *testing.T) {
	u := newUpstream(t, "s1")
	u.status.Store(500)
	hang, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer hang.Close()
	go func() { // accept and say nothing
		var held []net.Conn
		for {
			c, err := hang.Accept()
			if err != nil {
				for _, c := range held {
					c.Close()
				}
				return
			}
			held = append(held, c)
		}
	}()
	cfg := testConfig(u.addr(), hang.Addr().String())
	be := cfg.Backends[0]
	be.Check.Type, be.Check.Path, be.Check.Fall = "http", "/healthz", 1
	be.TimeoutCheck = 100 * time.Millisecond
	h := newHarness(t, cfg)
	h.next()
	h.next()

	s1, s2 := h.server("s1"), h.server("s2")
	if s1.Status() != "DOWN" || s1.Check.Status != "L7STS" || s1.Check.Code != 500 || s1.Check.Info != "Internal Server Error" {
		t.Errorf("500: got %q %s %d %q, want DOWN L7STS 500 \"Internal Server Error\"",
			s1.Status(), s1.Check.Status, s1.Check.Code, s1.Check.Info)
	}
	if s2.Status() != "DOWN" || s2.Check.Status != "L7TOUT" || s2.Check.Duration < 100 {
		t.Errorf("hang: got %q %s after %dms, want DOWN L7TOUT after >= 100ms", s2.Status(), s2.Check.Status, s2.Check.Duration)
	}

	u.status.Store(0)
	ev := h.step(2, 2*time.Second)
	if ev.server != "s1" || ev.r.Status != StatusL7OK || ev.r.Code != 200 {
		t.Errorf("after the fix: got %s %v %d, want s1 L7OK 200", ev.server, ev.r.Status, ev.r.Code)
	}
	if got := h.server("s1").Op; got != proxy.OpDown {
		t.Errorf("one success with rise 2: got op %v, want still DOWN", got)
	}
}

// TestProbes covers each probe's mapping of failures to statuses.
func TestProbes(t *testing.T) {
	u := newUpstream(t, "s1")
	ctx := context.Background()
	ok, _ := newHTTPProbe("GET", "/", "", "200-399")
	list, _ := newHTTPProbe("GET", "/", "example.com", "201,300-302")
	tests := []struct {
		name string
		p    Probe
		addr string
		want Status
	}{
		{"tcp connect", tcpProbe{}, u.addr(), StatusL4OK},
		{"tcp refused", tcpProbe{}, closedAddr(t), StatusL4CON},
		{"http 200", ok, u.addr(), StatusL7OK},
		{"http 200 not in the list", list, u.addr(), StatusL7STS},
		{"http refused", ok, closedAddr(t), StatusL4CON},
		{"agent refused", agentProbe{}, closedAddr(t), StatusL4CON},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.p.Run(ctx, tt.addr, time.Second, time.Second); got.Status != tt.want {
				t.Errorf("got %v (%q), want %v", got.Status, got.Info, tt.want)
			}
		})
	}
}

// TestHTTPCheckClosedUnanswered: a server that reads the check's request
// and closes without a word is L7RSP with no info, as HAProxy 2.6 words
// it ("reason: Layer7 invalid response, check duration: 3ms").
func TestHTTPCheckClosedUnanswered(t *testing.T) {
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
			c.Read(make([]byte, 512))
			c.Close()
		}
	}()
	p, _ := newHTTPProbe("GET", "/", "", "200-399")
	got := p.Run(context.Background(), l.Addr().String(), time.Second, time.Second)
	if got.Status != StatusL7RSP || got.Info != "" {
		t.Errorf("got %v %q, want L7RSP with no info", got.Status, got.Info)
	}
}

// TestStatusLine checks the parse of HTTP status lines.
func TestStatusLine(t *testing.T) {
	tests := []struct {
		line   string
		code   int
		reason string
		ok     bool
	}{
		{"HTTP/1.1 200 OK\r\n", 200, "OK", true},
		{"HTTP/1.0 503 Service Unavailable\r\n", 503, "Service Unavailable", true},
		{"HTTP/1.1 204\r\n", 204, "", true},
		{"SSH-2.0-OpenSSH\r\n", 0, "", false},
		{"HTTP/1.1 20x OK\r\n", 0, "", false},
	}
	for _, tt := range tests {
		code, reason, ok := parseStatusLine(tt.line)
		if code != tt.code || reason != tt.reason || ok != tt.ok {
			t.Errorf("%q: got %d %q %v, want %d %q %v", tt.line, code, reason, ok, tt.code, tt.reason, tt.ok)
		}
	}
}
