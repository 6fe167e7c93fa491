package runtime

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestClearCounters: "clear counters" (operator) zeroes the peak values
// and keeps the totals; "clear counters all" (admin only) zeroes the
// totals too, as HAProxy 2.6's (a fresh-user trial found the command
// missing: scripts that reset counters silently reset nothing). The
// current sessions are not counters: they stay.
func TestClearCounters(t *testing.T) {
	s1 := startUpstream(t, "127.0.0.1:0", "s1")
	s2 := startUpstream(t, "127.0.0.1:0", "s2")
	e := startEnv(t, twoServers(s1.addr, s2.addr))
	url := "http://" + e.p.Frontends[0].Addrs()[0].String() + "/"
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	for range 4 {
		resp, err := client.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	// Closed connections only: scur is 0 everywhere, and stays.
	waitFor(t, 5*time.Second, "the frontend's connections closed", func() bool {
		return statRow(t, e, "fe_web", "FRONTEND", "scur") == "0"
	})
	type cell struct{ px, sv, col string }
	read := func() map[cell]string {
		got := map[cell]string{}
		for _, row := range [][2]string{{"fe_web", "FRONTEND"}, {"web", "BACKEND"}, {"web", "s1"}} {
			for _, col := range []string{"smax", "stot", "rate_max", "bin", "hrsp_2xx", "req_tot", "ttime", "scur"} {
				got[cell{row[0], row[1], col}] = statRow(t, e, row[0], row[1], col)
			}
		}
		return got
	}
	before := read()
	maxConnRate := func() string {
		for _, l := range strings.Split(e.run(t, LevelUser, "show info"), "\n") {
			if v, ok := strings.CutPrefix(l, "MaxConnRate: "); ok {
				return v
			}
		}
		return "missing"
	}
	if v := maxConnRate(); v == "0" || v == "missing" {
		t.Fatalf("MaxConnRate before: %s, want > 0 (four connections)", v)
	}
	for _, c := range []cell{{"web", "BACKEND", "stot"}, {"web", "BACKEND", "hrsp_2xx"}} {
		if before[c] != "4" {
			t.Fatalf("%v before: %q, want 4", c, before[c])
		}
	}
	for _, c := range []cell{{"web", "BACKEND", "smax"}, {"web", "s1", "smax"}, {"web", "BACKEND", "rate_max"}} {
		if before[c] == "0" || before[c] == "" {
			t.Fatalf("%v before: %q, want > 0", c, before[c])
		}
	}

	if got := e.run(t, LevelUser, "clear counters"); got != "Permission denied\n\n" {
		t.Errorf("clear counters as user: %q", got)
	}
	if got := e.run(t, LevelOperator, "clear counters all"); got != "Permission denied\n\n" {
		t.Errorf("clear counters all as operator: %q", got)
	}
	if got := e.run(t, LevelOperator, "clear counters"); got != "\n" {
		t.Errorf("clear counters: %q, want an empty reply", got)
	}
	after := read()
	if v := maxConnRate(); v != "0" {
		t.Errorf("MaxConnRate after clear counters: %s, want 0", v)
	}
	for c, v := range before {
		want := v
		if c.col == "smax" || c.col == "rate_max" {
			want = "0"
		}
		if after[c] != want {
			t.Errorf("after clear counters: %s/%s %s = %q, want %q", c.px, c.sv, c.col, after[c], want)
		}
	}

	if got := e.run(t, LevelAdmin, "clear counters all"); got != "\n" {
		t.Errorf("clear counters all: %q, want an empty reply", got)
	}
	all := read()
	for c, v := range before {
		want := "0"
		if v == "" {
			want = "" // a column the row does not have
		}
		if all[c] != want {
			t.Errorf("after clear counters all: %s/%s %s = %q, want %q", c.px, c.sv, c.col, all[c], want)
		}
	}
}

// TestInfoCumulativeCounts: show info's CumConns and CumReq count as
// HAProxy 2.6's (measured side by side): a Runtime API session moves both
// by one (HAProxy's stats socket connection is a connection and a
// stream), a keep-alive connection of three requests CumConns by one and
// CumReq by three.
func TestInfoCumulativeCounts(t *testing.T) {
	s1 := startUpstream(t, "127.0.0.1:0", "s1")
	s2 := startUpstream(t, "127.0.0.1:0", "s2")
	e := startEnv(t, twoServers(s1.addr, s2.addr))
	cum := func() (conns, reqs string) {
		for _, l := range strings.Split(e.run(t, LevelUser, "show info"), "\n") {
			if v, ok := strings.CutPrefix(l, "CumConns: "); ok {
				conns = v
			}
			if v, ok := strings.CutPrefix(l, "CumReq: "); ok {
				reqs = v
			}
		}
		return conns, reqs
	}
	if c, r := cum(); c != "1" || r != "1" {
		t.Fatalf("at start: CumConns %s, CumReq %s, want 1 and 1 (this session)", c, r)
	}
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	url := "http://" + e.p.Frontends[0].Addrs()[0].String() + "/"
	for range 3 {
		resp, err := client.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	if c, r := cum(); c != "3" || r != "5" {
		t.Errorf("after three requests on one connection: CumConns %s, CumReq %s, want 3 and 5", c, r)
	}
}
