package runtime

import (
	"fmt"
	"net"
	"regexp"
	goruntime "runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// activityLines are the names show activity prints, in order, each with
// the shape of its value.
var activityLines = []struct{ name, value string }{
	{"thread_id", `0 \(1\.\.[0-9]+\)`},
	{"date_now", `[0-9]+\.[0-9]{6}`},
	{"uptime_sec", `[0-9]+`},
	{"goroutines", `[0-9]+`},
	{"gc_cycles", `[0-9]+`},
	{"gc_pause_ms_tot", `[0-9]+`},
	{"heap_alloc_kb", `[0-9]+`},
	{"sys_kb", `[0-9]+`},
	{"heap_inuse_kb", `[0-9]+`},
	{"heap_released_kb", `[0-9]+`},
	{"stack_inuse_kb", `[0-9]+`},
	{"gc_sys_kb", `[0-9]+`},
	{"other_sys_kb", `[0-9]+`},
	{"curr_conns", `[0-9]+`},
	{"accepted", `[0-9]+`},
	{"cli_sessions", `[0-9]+`},
	{"sched_runs", `[0-9]+`},
	{"goroutines_created", `[0-9]+`},
	{"os_threads", `[0-9]+`},
}

// showActivityValues runs show activity and returns its values by name, after
// checking the reply's exact shape: one `name: value` line per figure in
// activityLines' order, then the empty line that ends a reply.
func showActivityValues(t *testing.T, e *testEnv) map[string]string {
	t.Helper()
	var re strings.Builder
	re.WriteString(`\A`)
	for _, l := range activityLines {
		fmt.Fprintf(&re, `%s: (%s)\n`, l.name, l.value)
	}
	re.WriteString(`\n\z`)
	got := e.run(t, LevelUser, "show activity")
	m := regexp.MustCompile(re.String()).FindStringSubmatch(got)
	if m == nil {
		t.Fatalf("show activity: reply %q does not match %q", got, re.String())
	}
	v := map[string]string{}
	for i, l := range activityLines {
		v[l.name] = m[i+1]
	}
	return v
}

func activityInt(t *testing.T, v map[string]string, name string) int64 {
	t.Helper()
	n, err := strconv.ParseInt(v[name], 10, 64)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return n
}

// TestShowActivity: the reply's shape is exact, the figures that are known
// are right (GOMAXPROCS, the connections a frontend accepted, the CLI
// session asking), and the scheduler's cumulative figures move forward:
// goroutines_created by at least the goroutine the test starts and the
// accepted connection's, sched_runs (an estimate in steps of 8: the runtime
// records one run of a goroutine in 8) by at least the 64 runs of the
// test's goroutine, which yields 64 times.
func TestShowActivity(t *testing.T) {
	srv, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	e := startEnv(t, `
[[frontend]]
name = "fe"
bind = ["127.0.0.1:0"]
mode = "tcp"
default_backend = "be"

[[backend]]
name = "be"
mode = "tcp"
[[backend.server]]
name = "s1"
address = "`+srv.Addr().String()+`"
`)
	before := showActivityValues(t, e)
	if got, want := before["thread_id"], fmt.Sprintf("0 (1..%d)", goruntime.GOMAXPROCS(0)); got != want {
		t.Errorf("thread_id: got %q, want %q", got, want)
	}
	if got := before["cli_sessions"]; got != "1" {
		t.Errorf("cli_sessions: got %s, want 1 (the session asking)", got)
	}
	if got := before["accepted"]; got != "0" {
		t.Errorf("accepted before any connection: got %s, want 0", got)
	}
	if n := activityInt(t, before, "os_threads"); n < 1 {
		t.Errorf("os_threads: got %d, want at least 1", n)
	}

	// One client connection, relayed to srv and closed by both ends, and
	// one goroutine of the test's own.
	c, err := net.Dial("tcp", e.p.Frontends[0].Addrs()[0].String())
	if err != nil {
		t.Fatal(err)
	}
	sc, err := srv.Accept()
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	sc.Close()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 64 {
			goruntime.Gosched()
		}
	}()
	<-done
	waitFor(t, 10*time.Second, "the frontend's accepted counter", func() bool {
		return e.p.Frontends[0].Counters.Stot.Load() == 1
	})

	after := showActivityValues(t, e)
	if got := after["accepted"]; got != "1" {
		t.Errorf("accepted after one connection: got %s, want 1", got)
	}
	if b, a := activityInt(t, before, "goroutines_created"), activityInt(t, after, "goroutines_created"); a < b+2 {
		t.Errorf("goroutines_created: %d then %d, want it to grow by at least 2", b, a)
	}
	b, a := activityInt(t, before, "sched_runs"), activityInt(t, after, "sched_runs")
	if a < b+64 || a%schedTrackingPeriod != 0 {
		t.Errorf("sched_runs: %d then %d, want a multiple of %d grown by at least 64", b, a, schedTrackingPeriod)
	}
}
