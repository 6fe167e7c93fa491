package runtime

import (
	"fmt"
	"os"
	goruntime "runtime"
	"strings"
	"time"
)

// Process commands: the environment, captured errors and activity figures.
var processCommands = []Command{
	{Words: []string{"show", "env"}, Level: LevelOperator, Usage: "show env [var]", Help: "dump environment variables known to the process", Run: showEnv},
	{Words: []string{"show", "errors"}, Level: LevelOperator, Usage: "show errors [<px>] [request|response]", Help: "report last request and/or response errors for each proxy", Run: showErrors},
	{Words: []string{"show", "activity"}, Level: LevelUser, Usage: "show activity", Help: "show per-thread activity stats (for support/developers)", Run: showActivity},
}

// showEnv prints the process environment, or one variable of it.
func showEnv(c *Context, args []string) error {
	if name := arg(args, 0); name != "" {
		v, ok := os.LookupEnv(name)
		if !ok {
			return reply("Variable not found")
		}
		c.Printf("%s=%s\n", name, v)
		return nil
	}
	for _, kv := range os.Environ() {
		c.Printf("%s\n", kv)
	}
	return nil
}

// haproxyDate formats t as HAProxy's dates in dumps: [29/Nov/2026:19:31:12.702].
func haproxyDate(t time.Time) string { return t.Format("02/Jan/2006:15:04:05.000") }

// showErrors is `show errors [<px>] [request|response]`: the number of
// invalid messages since the start, then the last invalid request of each
// frontend and response of each backend (errors.go), optionally only those
// of one proxy (by name or id; -1 means all) and one direction.
func showErrors(c *Context, args []string) error {
	px, dir := arg(args, 0), arg(args, 1)
	if px == "request" || px == "response" {
		px, dir = "", px
	}
	id := -1
	if px != "" && px != "-1" {
		v, _, _ := strtol(px)
		switch {
		case c.Proxy.Backend(px) != nil || c.Proxy.Frontend(px) != nil:
		case v != 0:
			id = int(v)
			px = ""
		default:
			return reply("No such proxy.")
		}
	} else {
		px = ""
	}
	total, events := c.Proxy.Errors()
	var b []byte
	b = fmt.Appendf(b, "Total events captured on [%s] : %d\n", haproxyDate(time.Now()), total)
	for i := range events {
		ev := &events[i]
		if px != "" && ev.Proxy != px && ev.Other != px {
			continue
		}
		if id >= 0 && ev.ProxyID != id && ev.OtherID != id {
			continue
		}
		if (dir == "request" && ev.Response) || (dir == "response" && !ev.Response) {
			continue
		}
		b = appendErrorEvent(b, ev)
	}
	c.Write(b)
	return nil
}

// showActivity prints support figures as `name: value` lines, the shape of
// HAProxy's show activity (whose per-thread columns do not apply to Go's
// scheduler).
func showActivity(c *Context, _ []string) error {
	var ms goruntime.MemStats
	goruntime.ReadMemStats(&ms)
	now := time.Now()
	var conns, accepted int64
	for _, fe := range c.Proxy.Frontends {
		conns += fe.Counters.Scur.Load()
		accepted += fe.Counters.Stot.Load()
	}
	c.api.mu.Lock()
	cli := len(c.api.sessions)
	c.api.mu.Unlock()
	runs, created, threads := schedFigures()
	lines := [][2]any{
		{"thread_id", fmt.Sprintf("0 (1..%d)", goruntime.GOMAXPROCS(0))},
		{"date_now", fmt.Sprintf("%d.%06d", now.Unix(), now.Nanosecond()/1000)},
		{"uptime_sec", int64(now.Sub(c.api.started) / time.Second)},
		{"goroutines", goruntime.NumGoroutine()},
		{"gc_cycles", ms.NumGC},
		{"gc_pause_ms_tot", ms.PauseTotalNs / 1e6},
		{"heap_alloc_kb", ms.HeapAlloc >> 10},
		{"sys_kb", ms.Sys >> 10},
		{"heap_inuse_kb", ms.HeapInuse >> 10},
		{"heap_released_kb", ms.HeapReleased >> 10},
		{"stack_inuse_kb", ms.StackInuse >> 10},
		{"gc_sys_kb", ms.GCSys >> 10},
		{"other_sys_kb", (ms.OtherSys + ms.MSpanSys + ms.MCacheSys + ms.BuckHashSys) >> 10},
		{"curr_conns", conns},
		{"accepted", accepted},
		{"cli_sessions", cli},
		{"sched_runs", runs},
		{"goroutines_created", created},
		{"os_threads", threads},
	}
	var b strings.Builder
	for _, l := range lines {
		fmt.Fprintf(&b, "%s: %v\n", l[0], l[1])
	}
	c.Printf("%s", b.String())
	return nil
}
