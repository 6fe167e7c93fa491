package main

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestAddEnableRemoveUnderTraffic is the scenario: while clients
// keep sending requests, a server is added (in MAINT), enabled, takes its
// share, and is removed with remove --wait (drained, then deleted): not
// one request fails, exit 0, and stats forget the server.
func TestAddEnableRemoveUnderTraffic(t *testing.T) {
	e := startProxy(t, nil)
	d1 := upstream(t, "d1", nil)
	tr := startTraffic(e.url+"/", 4)
	defer tr.end(t)
	waitFor(t, 10*time.Second, "traffic", func() bool { return tr.ok.Load() > 50 })

	if code, out, errs := ctl(t, "", "-s", e.sock, "add", "server", "web/d1", d1, "weight", "2"); code != 0 || out != "New server registered.\n" {
		t.Fatalf("add server: exit %d %q %q", code, out, errs)
	}
	if st := statValue(t, e.sock, "web", "d1", "status"); st != "MAINT" {
		t.Fatalf("d1 after add: %s, want MAINT", st)
	}
	if code, _, errs := ctl(t, "", "-s", e.sock, "enable", "server", "web/d1"); code != 0 {
		t.Fatalf("enable server: %d %s", code, errs)
	}
	waitFor(t, 10*time.Second, "traffic on d1", func() bool {
		n, _ := strconv.Atoi(statValue(t, e.sock, "web", "d1", "stot"))
		return n > 50
	})
	code, out, errs := ctl(t, "", "-s", e.sock, "remove", "web/d1", "--wait", "--timeout", "20s", "--poll", "50ms")
	if code != 0 || !strings.HasPrefix(out, "web/d1: removed after draining for") {
		t.Fatalf("remove --wait: exit %d\n%s\n%s", code, out, errs)
	}
	for _, r := range statCSV(t, e.sock) {
		if r[0] == "web" && r[1] == "d1" {
			t.Fatal("show stat still lists web/d1")
		}
	}
	before := tr.ok.Load()
	waitFor(t, 10*time.Second, "more traffic", func() bool { return tr.ok.Load() > before+50 })
	// The id it had is not given again.
	ctl(t, "", "-s", e.sock, "add", "server", "web/d2", d1)
	if id := statValue(t, e.sock, "web", "d2", "sid"); id != "4" {
		t.Errorf("d2's id %s, want 4 (d1 had 3)", id)
	}
}

// TestRemoveTimeoutAndRefusal: without --wait, a server with a session is
// not deleted (exit 1, the server's reply); with --wait, a session that
// outlives --timeout exits 3 and leaves the server in DRAIN.
func TestRemoveTimeoutAndRefusal(t *testing.T) {
	hold := make(chan struct{})
	e := startProxy(t, hold)
	done := make(chan error, 2)
	for range 2 { // round robin: one of them lands on each server
		go func() {
			resp, err := http.Get(e.url + "/slow")
			if err == nil {
				resp.Body.Close()
			}
			done <- err
		}()
	}
	waitFor(t, 10*time.Second, "a session on web/s1", func() bool { return statValue(t, e.sock, "web", "s1", "scur") == "1" })
	code, _, errs := ctl(t, "", "-s", e.sock, "remove", "web/s1")
	if code != 1 || !strings.Contains(errs, "web/s1: Server still has connections attached to it, cannot remove it.") {
		t.Fatalf("remove without --wait: exit %d, stderr %q", code, errs)
	}
	ctl(t, "", "-s", e.sock, "set", "server", "web/s1", "state", "ready")
	code, _, errs = ctl(t, "", "-s", e.sock, "remove", "web/s1", "--wait", "--timeout", "300ms", "--poll", "50ms")
	if code != 3 || !strings.Contains(errs, "timeout after 300ms") || !strings.Contains(errs, "left in DRAIN") {
		t.Fatalf("remove --wait: exit %d, stderr:\n%s", code, errs)
	}
	if st := statValue(t, e.sock, "web", "s1", "status"); st != "DRAIN" {
		t.Errorf("status after the timeout: %q", st)
	}
	close(hold)
	for range 2 {
		if err := <-done; err != nil {
			t.Errorf("held request: %v", err)
		}
	}
	// Sessions gone: remove --wait deletes it.
	code, out, errs := ctl(t, "", "-s", e.sock, "remove", "web/s1", "--wait", "--timeout", "10s", "--poll", "50ms")
	if code != 0 || !strings.Contains(out, "web/s1: removed") {
		t.Fatalf("remove after the sessions ended: exit %d %q %q", code, out, errs)
	}
}
