package check

import (
	"strings"
	"testing"
	"time"

	"github.com/fulcrum-proxy/fulcrum/proxy"
)

// TestObserveMarkDown: observe layer7, error_limit 3, on_error mark-down:
// three 5xx responses in a row mark the server DOWN at once (HANA, chkfail
// and chkdown +1, hanafail 1), the next check comes at fastinter, and the
// regular checks bring it back (observe.txt).
func TestObserveMarkDown(t *testing.T) {
	s1, s2 := newUpstream(t, "s1"), newUpstream(t, "s2")
	s1.status.Store(503)
	cfg := testConfig(s1.addr(), s2.addr())
	be := cfg.Backends[0]
	be.Servers[0].Observe, be.Servers[0].ErrorLimit, be.Servers[0].OnError = "layer7", 3, "mark-down"
	be.Servers[1].Check = false
	h := newHarness(t, cfg)
	h.next()

	errors := 0
	for i := 0; i < 6 && errors < 3; i++ {
		if code, _ := get(t, h.addr); code == 503 {
			errors++
			if s := h.server("s1"); errors < 3 && s.Op != proxy.OpUp {
				t.Fatalf("DOWN after %d errors, want 3", errors)
			}
		}
	}
	s := h.server("s1")
	want := "Detected 3 consecutive errors, last one was: Wrong http response"
	if s.Status() != "DOWN" || s.Check.Status != "HANA" || s.Check.Info != want ||
		s.Check.Failed != 1 || s.Check.Downs != 1 || s.Check.HanaFail != 1 || s.Check.Duration != -1 {
		t.Fatalf("after 3 errors: got %q %s %q chkfail %d chkdown %d hanafail %d duration %d",
			s.Status(), s.Check.Status, s.Check.Info, s.Check.Failed, s.Check.Downs, s.Check.HanaFail, s.Check.Duration)
	}
	for i := 0; i < 4; i++ {
		if _, body := get(t, h.addr); body != "s2" {
			t.Fatalf("request %d after mark-down: got %q, want s2", i, body)
		}
	}
	if !strings.Contains(h.logs.String(), "Server web/s1 is DOWN, reason: Health analyze, info: \\\"Detected 3 consecutive errors") {
		t.Errorf("log: no DOWN line for HANA in\n%s", h.logs.String())
	}
	waitFor(t, 5*time.Second, "the next check rescheduled at fastinter", func() bool {
		p := h.clock.pending()
		return len(p) == 1 && p[0] == 250*time.Millisecond
	})
	h.step(1, 250*time.Millisecond)
	if got := h.server("s1").Status(); got != "DOWN 1/2" {
		t.Fatalf("first check after: got %q, want DOWN 1/2", got)
	}
	h.step(1, 250*time.Millisecond)
	if got := h.server("s1").Status(); got != "UP" {
		t.Fatalf("second check after: got %q, want UP", got)
	}
}

// TestObserveActions: each on_error from UP (health 4, rise 2, fall 3),
// driven through the observer as the request path does.
func TestObserveActions(t *testing.T) {
	tests := []struct {
		onError string
		status  string
		failed  int64
	}{
		{"fastinter", "UP", 0},
		{"fail-check", "UP 2/3", 1},
		{"sudden-death", "UP 1/3", 1},
		{"mark-down", "DOWN", 1},
	}
	for _, tt := range tests {
		t.Run(tt.onError, func(t *testing.T) {
			u := newUpstream(t, "s1")
			cfg := testConfig(u.addr())
			sc := cfg.Backends[0].Servers[0]
			sc.Observe, sc.ErrorLimit, sc.OnError = "layer4", 2, tt.onError
			h := newHarness(t, cfg)
			h.next()
			o := &observer{cs: Of(h.p.Backends[0].Servers()[0])}
			o.ObserveConnect(false)
			o.ObserveConnect(true) // a success resets the count
			o.ObserveConnect(false)
			if s := h.server("s1"); s.Status() != "UP" {
				t.Fatalf("after non-consecutive errors: got %q, want UP", s.Status())
			}
			o.ObserveConnect(false)
			o.ObserveResponse(500) // layer4 ignores responses
			s := h.server("s1")
			if s.Status() != tt.status || s.Check.Failed != tt.failed || s.Check.HanaFail != 1 {
				t.Errorf("got %q chkfail %d hanafail %d, want %q %d 1", s.Status(), s.Check.Failed, s.Check.HanaFail, tt.status, tt.failed)
			}
			waitFor(t, 5*time.Second, "the next check rescheduled at fastinter 250ms", func() bool {
				p := h.clock.pending()
				return len(p) == 1 && p[0] == 250*time.Millisecond
			})
		})
	}
}
