package runtime

import (
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestShowHistogram sends requests to one server and reads its
// histograms, its backend's and its frontend's, and the errors.
func TestShowHistogram(t *testing.T) {
	s1 := startUpstream(t, "127.0.0.1:0", "s1")
	e := startEnv(t, twoServers(s1.addr, "127.0.0.1:1"))
	addr := e.p.Frontends[0].Addrs()[0].String()
	e.run(t, LevelAdmin, "disable server web/s2")
	for range 5 {
		resp, err := http.Get("http://" + addr + "/")
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	// The times are recorded once each response has gone out: wait for
	// the last one.
	var out string
	waitFor(t, 5*time.Second, "5 values in web/s1's histograms", func() bool {
		out = e.run(t, LevelUser, "show histogram web/s1")
		return strings.Contains(out, "\ntotal,5,") && strings.Contains(out, "\nqueue,5,")
	})
	lines := strings.Split(strings.TrimSuffix(out, "\n\n"), "\n")
	if lines[0] != "# histogram web/s1: latency since start, us" ||
		lines[1] != "# timing,count,sum_us,p50_us,p90_us,p99_us,p999_us" {
		t.Fatalf("header: got %q", lines[:2])
	}
	for _, k := range []string{"queue", "connect", "response", "total"} {
		if !regexp.MustCompile(`(?m)^` + k + `,5,\d+,\d+,\d+,\d+,\d+$`).MatchString(out) {
			t.Errorf("no %s line with 5 values:\n%s", k, out)
		}
	}
	// Queue times are 0: one bucket [0, 1) holds the five.
	if !strings.Contains(out, "\n# timing,lo_us,hi_us,count\nqueue,0,1,5\n") {
		t.Errorf("queue buckets:\n%s", out)
	}
	if got := e.run(t, LevelUser, "show histogram web response"); !regexp.MustCompile(`^# histogram web: .*\n# timing,.*\nresponse,5,`).MatchString(got) {
		t.Errorf("backend response: got\n%s", got)
	}
	if got := e.run(t, LevelUser, "show histogram fe_web total"); !strings.Contains(got, "\ntotal,5,") {
		t.Errorf("frontend total: got\n%s", got)
	}
	for cmd, want := range map[string]string{
		"show histogram":               "Require 'backend/server' or a frontend or backend name.\n\n",
		"show histogram nosuch":        "No such backend.\n\n",
		"show histogram web/nosuch":    "No such server.\n\n",
		"show histogram web/s1 uptime": "Invalid timing 'uptime': queue, connect, response or total.\n\n",
	} {
		if got := e.run(t, LevelUser, cmd); got != want {
			t.Errorf("%s: got %q, want %q", cmd, got, want)
		}
	}
}
