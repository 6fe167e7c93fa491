package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fulcrum-proxy/fulcrum/conf"
	"github.com/fulcrum-proxy/fulcrum/internal/testutil"
	"github.com/fulcrum-proxy/fulcrum/proxy"
)

// historyConfig is a frontend with the stats page in front of web's two
// servers, with a history interval of 500 ms (90 points: 45 s, time
// enough for Chromium to load the page before the fast points leave the
// window, even on a busy machine).
const historyConfig = `
[global]
stats_history_interval = "500ms"

[[frontend]]
name = "www"
bind = ["127.0.0.1:0"]
default_backend = "web"

[frontend.stats]
enable = true
uri = "/stats"

[[backend]]
name = "web"

[[backend.server]]
name = "s1"
address = %q

[[backend.server]]
name = "s2"
address = %q
`

// startHistory serves historyConfig in-process; s2 answers after *slow.
func startHistory(t *testing.T, slow *atomic.Int64) (*proxy.Proxy, string) {
	t.Helper()
	fast := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "s1\n") }))
	t.Cleanup(fast.Close)
	s2 := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(time.Duration(slow.Load())) // the server's answer time, what the page must show
		io.WriteString(w, "s2\n")
	}))
	t.Cleanup(s2.Close)
	cfg, err := conf.Parse("history.toml", []byte(fmt.Sprintf(historyConfig, fast.Listener.Addr(), s2.Listener.Addr())))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	started := make(chan *proxy.Proxy, 1)
	done := make(chan error, 1)
	go func() { done <- serve(ctx, cfg, io.Discard, func(p *proxy.Proxy) { started <- p }) }()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	select {
	case p := <-started:
		return p, p.Frontends[0].Addrs()[0].String()
	case err := <-done:
		t.Fatalf("serve: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("fulcrum did not start")
	}
	return nil, ""
}

// TestStatsPageHistoryChromium makes a server slow under traffic and
// checks, in headless Chromium, that its p99 sparkline rises: a known
// traffic pattern, a screenshot at a phone's width, and the DOM's values.
func TestStatsPageHistoryChromium(t *testing.T) {
	bin := needTool(t, "chromium", "chromium", "chromium-browser")
	var slow atomic.Int64
	p, addr := startHistory(t, &slow)
	s2 := p.Backend("web").Server("s2")
	// traffic sends requests back to back until stop is closed.
	stop := make(chan struct{})
	sent := make(chan struct{})
	go func() {
		defer close(sent)
		c := &http.Client{Timeout: 5 * time.Second}
		end := time.Now().Add(90 * time.Second) // bounded whatever happens
		for time.Now().Before(end) {
			select {
			case <-stop:
				return
			default:
			}
			if resp, err := c.Get("http://" + addr + "/x"); err == nil {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		}
	}()
	defer func() {
		close(stop)
		<-sent
	}()
	// Fast first: points with traffic and a p99 under 20 ms.
	fastPoints := func() int {
		n := 0
		for _, pt := range s2.Counters.History().Points() {
			if pt.Requests > 0 && pt.P99 < 20000 {
				n++
			}
		}
		return n
	}
	waitFor(t, 20*time.Second, "3 fast points of s2", func() bool { return s2.Counters.History() != nil && fastPoints() >= 3 })
	slow.Store(int64(80 * time.Millisecond))
	waitFor(t, 20*time.Second, "3 slow points of s2 (p99 over 70 ms)", func() bool {
		n := 0
		for _, pt := range s2.Counters.History().Points() {
			if pt.P99 >= 70000 {
				n++
			}
		}
		return n >= 3
	})

	dir := os.Getenv("FULCRUM_ARTIFACTS")
	if dir == "" {
		dir = t.TempDir()
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	u := "http://" + addr + "/stats;norefresh"
	flags := []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir=" + t.TempDir(), "--window-size=412,915"}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// The DOM first: the points it shows are the freshest.
	dom, err := exec.CommandContext(ctx, bin, append(flags, "--dump-dom", u)...).Output()
	if err != nil {
		t.Fatalf("chromium --dump-dom: %v", err)
	}
	shot := filepath.Join(dir, "stats-page-history-phone.png")
	if out, err := exec.CommandContext(ctx, bin, append(flags, "--screenshot="+shot, u)...).CombinedOutput(); err != nil {
		t.Fatalf("chromium --screenshot: %v\n%s", err, out)
	}
	if fi, err := os.Stat(shot); err != nil || fi.Size() < 1000 {
		t.Fatalf("no screenshot at %s: %v", shot, err)
	}
	t.Logf("screenshot: %s", shot)
	wide := filepath.Join(dir, "stats-page-history-desktop.png")
	wideFlags := append(append([]string(nil), flags[:len(flags)-1]...), "--window-size=1800,900")
	if out, err := exec.CommandContext(ctx, bin, append(wideFlags, "--screenshot="+wide, u)...).CombinedOutput(); err != nil {
		t.Fatalf("chromium --screenshot (desktop): %v\n%s", err, out)
	}
	t.Logf("screenshot: %s", wide)
	row := regexp.MustCompile(`<tr class="[^"]*" data-server="web/s2"[^\n]*`).FindString(string(dom))
	m := regexp.MustCompile(`<polyline class="p99" data-values="([^"]*)" points="([^"]*)"`).FindStringSubmatch(row)
	if m == nil {
		t.Fatalf("no p99 sparkline for web/s2 in the DOM:\n%.2000s", row)
	}
	var vals []float64
	for _, f := range strings.Fields(m[1]) {
		if v, err := strconv.ParseFloat(f, 64); err == nil {
			vals = append(vals, v)
		}
	}
	// The line rises: an early point under 20 ms, a later one over 70 ms,
	// drawn higher (a smaller y) than the early one.
	first, last := -1, -1
	for i, v := range vals {
		if v > 0 && v < 20 && first < 0 {
			first = i
		}
		if v >= 70 {
			last = i
		}
	}
	if first < 0 || last < first {
		t.Fatalf("s2's p99 does not rise: %v", vals)
	}
	pts := strings.Fields(m[2])
	y := func(p string) float64 { _, ys, _ := strings.Cut(p, ","); v, _ := strconv.ParseFloat(ys, 64); return v }
	if y(pts[len(pts)-1]) >= y(pts[0]) && len(pts) == len(vals) {
		t.Errorf("the p99 line is not drawn rising: first y %v, last y %v", y(pts[0]), y(pts[len(pts)-1]))
	}
	// s1 stays fast: its own line, below s2's where s2 is slow (at most
	// points: on a loaded machine a fast server's p99 may spike too, so
	// its values are compared with s2's, not with a fixed bound).
	s1row := regexp.MustCompile(`<tr class="[^"]*" data-server="web/s1"[^\n]*`).FindString(string(dom))
	m1 := regexp.MustCompile(`<polyline class="p99" data-values="([^"]*)"`).FindStringSubmatch(s1row)
	if m1 == nil {
		t.Fatalf("no p99 sparkline for web/s1 in the DOM:\n%.2000s", s1row)
	}
	v1, v2 := strings.Fields(m1[1]), strings.Fields(m[1])
	if len(v1) != len(v2) {
		t.Fatalf("s1 has %d points, s2 %d: the rows do not cover the same intervals", len(v1), len(v2))
	}
	slowPts, below := 0, 0
	for i := range v2 {
		b, err2 := strconv.ParseFloat(v2[i], 64)
		a, err1 := strconv.ParseFloat(v1[i], 64)
		if err1 != nil || err2 != nil || b < 70 {
			continue
		}
		slowPts++
		if a < b {
			below++
		}
	}
	if slowPts == 0 || 2*below < slowPts {
		t.Errorf("s1's p99 is below s2's at %d of s2's %d slow points: the slow server's times leaked into s1's row\ns1: %s\ns2: %s",
			below, slowPts, m1[1], m[1])
	}
	// web's chart is there, closed until clicked.
	if !regexp.MustCompile(`<details class="chart" id="chart-web"><summary>`).Match(dom) {
		t.Errorf("no chart for backend web")
	}
	if strings.Contains(string(dom), "<script") {
		t.Errorf("the page runs JavaScript")
	}
}

// TestConsoleAccessLogOrder runs fulcrum with log_format = "console" and
// checks that an access log line on stderr names its fields in
// proxy.AccessLogFields' order (HAProxy's: client, dates, proxies,
// status, bytes, timers, state, counts, queues, captures, request), not
// sorted by name as zerolog's console writer does by default.
func TestConsoleAccessLogOrder(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok\n") }))
	t.Cleanup(up.Close)
	cfg, err := conf.Parse("console.toml", []byte(fmt.Sprintf(`
[global]
log_format = "console"

[[frontend]]
name = "www"
bind = ["127.0.0.1:0"]
default_backend = "web"
capture_request_header = [{ name = "Host", len = 16 }]
capture_response_header = [{ name = "Content-Type", len = 16 }]

[[backend]]
name = "web"
[[backend.server]]
name = "s1"
address = %q
`, up.Listener.Addr())))
	if err != nil {
		t.Fatal(err)
	}
	logw := &testutil.SyncBuffer{}
	ctx, cancel := context.WithCancel(context.Background())
	started := make(chan *proxy.Proxy, 1)
	done := make(chan error, 1)
	go func() { done <- serve(ctx, cfg, logw, func(p *proxy.Proxy) { started <- p }) }()
	defer func() {
		cancel()
		<-done
	}()
	var addr string
	select {
	case p := <-started:
		addr = p.Frontends[0].Addrs()[0].String()
	case err := <-done:
		t.Fatalf("serve: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("fulcrum did not start")
	}
	resp, err := http.Get("http://" + addr + "/x?y=1")
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	var line string
	testutil.WaitFor(t, 5*time.Second, "the access log line", func() bool {
		for _, l := range strings.Split(logw.String(), "\n") {
			if strings.Contains(l, "request=") {
				line = l
				return true
			}
		}
		return false
	})
	if strings.Contains(line, "{") {
		t.Fatalf("not a console line: %s", line)
	}
	pos := -1
	for _, k := range proxy.AccessLogFields {
		if strings.HasPrefix(k, "ssl_") {
			continue // on TLS connections only
		}
		i := strings.Index(line, " "+k+"=")
		if i < 0 {
			t.Errorf("no %s= in %s", k, line)
			continue
		}
		if i < pos {
			t.Errorf("%s out of order in %s", k, line)
		}
		pos = i
	}
	for _, want := range []string{" frontend=www backend=web server=s1 status=200 ", " termination_state=-- cookie_status=-- ",
		` request="GET /x?y=1 HTTP/1.1"`} {
		if !strings.Contains(line, want) {
			t.Errorf("console line lacks %q: %s", want, line)
		}
	}
}
