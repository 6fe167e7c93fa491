package runtime

import (
	"encoding/csv"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"
)

// The tools operators drive HAProxy with, run against fulcrum: socat
// one-liners, hatop and the Prometheus haproxy exporter. Each test fails
// under CI=true when its tool is missing (.ci/run installs them) and is
// skipped otherwise.

// TestSocatShowStat: `echo "show stat" | socat stdio unix-connect:SOCK`,
// read by a CSV reader: one header, every row as wide as it.
func TestSocatShowStat(t *testing.T) {
	socat := needTool(t, "socat", "socat")
	s1 := startUpstream(t, "127.0.0.1:0", "s1")
	e := startEnv(t, twoServers(s1.addr, "127.0.0.1:1"))
	resp, err := http.Get("http://" + e.p.Frontends[0].Addrs()[0].String() + "/")
	if err == nil {
		resp.Body.Close()
	}
	cmd := exec.Command("sh", "-c", fmt.Sprintf(`echo "show stat" | %s stdio unix-connect:%s`, socat, e.socks[LevelUser]))
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("socat: %v", err)
	}
	if !strings.HasPrefix(string(out), "# pxname,svname,") || !strings.HasSuffix(string(out), ",\n\n") {
		t.Fatalf("not HAProxy's show stat framing: %q", out)
	}
	recs, err := csv.NewReader(strings.NewReader(strings.TrimPrefix(string(out), "# "))).ReadAll()
	if err != nil {
		t.Fatalf("CSV: %v", err)
	}
	var rows []string
	for _, r := range recs[1:] {
		rows = append(rows, r[0]+"/"+r[1])
	}
	want := []string{"fe_web/FRONTEND", "web/s1", "web/s2", "web/BACKEND"}
	if strings.Join(rows, " ") != strings.Join(want, " ") {
		t.Errorf("rows: got %v, want %v", rows, want)
	}
	// A change through socat, read back.
	exec.Command("sh", "-c", fmt.Sprintf(`echo "set weight web/s1 7" | %s stdio unix-connect:%s`, socat, e.socks[LevelAdmin])).Run()
	out, _ = exec.Command("sh", "-c", fmt.Sprintf(`echo "get weight web/s1" | %s stdio unix-connect:%s`, socat, e.socks[LevelUser])).Output()
	if string(out) != "7 (initial 1)\n\n" {
		t.Errorf("get weight after set weight: %q", out)
	}
}

// TestHatop runs hatop in a detached tmux pane against fulcrum's socket
// and reads its screen: the proxies and servers appear, without error.
func TestHatop(t *testing.T) {
	hatop := needTool(t, "hatop", "hatop")
	tmux := needTool(t, "tmux", "tmux")
	s1 := startUpstream(t, "127.0.0.1:0", "s1")
	e := startEnv(t, twoServers(s1.addr, "127.0.0.1:1"))
	// A tmux server of our own, stopped at the end.
	sock := fmt.Sprintf("fulcrum-hatop-%d", os.Getpid())
	run := func(args ...string) (string, error) {
		out, err := exec.Command(tmux, append([]string{"-L", sock}, args...)...).CombinedOutput()
		return string(out), err
	}
	if out, err := run("new-session", "-d", "-s", "hatop", "-x", "160", "-y", "40",
		hatop+" -s "+e.socks[LevelAdmin]+" -i 1; sleep 30"); err != nil {
		t.Fatalf("tmux: %v %s", err, out)
	}
	t.Cleanup(func() { run("kill-server") })
	var screen string
	deadline := time.Now().Add(15 * time.Second)
	for {
		screen, _ = run("capture-pane", "-p", "-t", "hatop")
		if strings.Contains(screen, "fulcrum") && strings.Contains(screen, "s1") &&
			strings.Contains(screen, "s2") && strings.Contains(screen, "BACKEND") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("hatop does not show the servers after 15s; screen:\n%s", screen)
		}
		time.Sleep(50 * time.Millisecond)
	}
	for _, bad := range []string{"error", "Traceback", "garbage field"} {
		if strings.Contains(screen, bad) {
			t.Errorf("hatop screen shows %q:\n%s", bad, screen)
		}
	}
	t.Logf("hatop screen:\n%s", screen)
}

// TestPrometheusExporter: prometheus-haproxy-exporter scraping
// unix:SOCK exports haproxy_up 1 and one haproxy_server_up per server.
func TestPrometheusExporter(t *testing.T) {
	exporter := needTool(t, "prometheus-haproxy-exporter", "prometheus-haproxy-exporter")
	s1 := startUpstream(t, "127.0.0.1:0", "s1")
	e := startEnv(t, twoServers(s1.addr, "127.0.0.1:1"))
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	cmd := exec.Command(exporter, "--haproxy.scrape-uri=unix:"+e.socks[LevelUser], "--web.listen-address="+addr)
	cmd.Stderr = io.Discard
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	var metrics string
	waitFor(t, 15*time.Second, "the exporter's metrics", func() bool {
		resp, err := http.Get("http://" + addr + "/metrics")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		metrics = string(b)
		return strings.Contains(metrics, "haproxy_up ")
	})
	if !regexp.MustCompile(`(?m)^haproxy_up 1$`).MatchString(metrics) {
		t.Errorf("haproxy_up is not 1:\n%s", grepLines(metrics, "haproxy_up"))
	}
	for _, s := range []string{"s1", "s2"} {
		re := regexp.MustCompile(`(?m)^haproxy_server_up\{backend="web",server="` + s + `"\} [01]$`)
		if !re.MatchString(metrics) {
			t.Errorf("no haproxy_server_up for web/%s:\n%s", s, grepLines(metrics, "haproxy_server_up"))
		}
	}
	if n := strings.Count(metrics, "\nhaproxy_server_up{"); n != 2 {
		t.Errorf("%d haproxy_server_up series, want 2", n)
	}
}

// grepLines returns the lines of s that contain sub.
func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
