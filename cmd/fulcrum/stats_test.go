package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fulcrum-proxy/fulcrum/conf"
	"github.com/fulcrum-proxy/fulcrum/proxy"
)

// statsConfig is a frontend with the stats page in front of backend web of
// two servers (s1, s2) on upstream; a third server (s3) is disabled.
const statsConfig = `
[[frontend]]
name = "www"
bind = ["127.0.0.1:0"]
default_backend = "web"

[frontend.stats]
enable = true
uri = "/stats"
refresh = "5s"
auth = ["admin:pw"]
admin = "LOCALHOST"

[[backend]]
name = "web"

[[backend.server]]
name = "s1"
address = "%[1]s"

[[backend.server]]
name = "s2"
address = "%[1]s"

[[backend.server]]
name = "s3"
address = "%[1]s"
disabled = true
`

// startStats runs serve in-process with statsConfig and returns the proxy
// and the frontend's address; the proxy stops at the end of the test.
func startStats(t *testing.T) (*proxy.Proxy, string) {
	t.Helper()
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "hello from upstream\n")
	}))
	t.Cleanup(up.Close)
	cfg, err := conf.Parse("stats.toml", []byte(fmt.Sprintf(statsConfig, up.Listener.Addr())))
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

// fetch does one request and returns the status and body.
func fetch(t *testing.T, method, u, form string, auth bool) (int, http.Header, string) {
	t.Helper()
	var body io.Reader
	if form != "" {
		body = strings.NewReader(form)
	}
	req, err := http.NewRequest(method, u, body)
	if err != nil {
		t.Fatal(err)
	}
	if form != "" {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	if auth {
		req.SetBasicAuth("admin", "pw")
	}
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

// TestStatsPageEndToEnd serves the page on a running frontend: traffic
// shows in the CSV and the metrics, admin actions change the core's state.
func TestStatsPageEndToEnd(t *testing.T) {
	p, addr := startStats(t)
	base := "http://" + addr
	for range 6 {
		if code, _, _ := fetch(t, "GET", base+"/hello", "", false); code != 200 {
			t.Fatalf("proxied request: got %d, want 200", code)
		}
	}
	if code, _, _ := fetch(t, "GET", base+"/stats", "", false); code != 401 {
		t.Errorf("page without auth: got %d, want 401", code)
	}
	code, h, body := fetch(t, "GET", base+"/stats;csv", "", true)
	if code != 200 || h.Get("Content-Type") != "text/plain" || h.Get("Refresh") != "5" {
		t.Fatalf("csv: got %d %v", code, h)
	}
	if !regexp.MustCompile(`(?m)^web,BACKEND,.*,UP,2,2,0,`).MatchString(body) {
		t.Errorf("csv: no UP backend of weight 2 and 2 active servers:\n%s", body)
	}
	if !regexp.MustCompile(`(?m)^web,s3,.*,MAINT,`).MatchString(body) {
		t.Errorf("csv: s3 is not MAINT:\n%s", body)
	}
	_, _, metrics := fetch(t, "GET", base+"/metrics", "", true)
	if !strings.Contains(metrics, `haproxy_backend_http_responses_total{code="2xx",proxy="web"} 6`) {
		t.Errorf("metrics: no 6 2xx responses on web:\n%.2000s", metrics)
	}
	code, h, _ = fetch(t, "POST", base+"/stats", url.Values{"b": {"web"}, "s": {"s2"}, "action": {"drain"}}.Encode(), true)
	if code != 303 || h.Get("Location") != "/stats;st=DONE" {
		t.Fatalf("drain: got %d %q, want 303 to /stats;st=DONE", code, h.Get("Location"))
	}
	if a := p.Backend("web").Server("s2").Admin(); a != proxy.AdminDrain {
		t.Errorf("s2 admin state: got %v, want DRAIN", a)
	}
	_, _, page := fetch(t, "GET", base+"/stats;st=DONE", "", true)
	for _, want := range []string{`data-server="web/s2" data-state="drain"`, "Action processed successfully.", `name="action"`} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
}

// needTool returns the path of the first of names found, or skips the
// test (fails it under CI=true, where .ci/run installs the tools).
func needTool(t *testing.T, pkg string, names ...string) string {
	t.Helper()
	for _, n := range names {
		if p, err := exec.LookPath(n); err == nil {
			return p
		}
	}
	msg := fmt.Sprintf("%s not found (install the Debian package %s)", strings.Join(names, " or "), pkg)
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// freePort returns a loopback address nothing listens on, for tools that
// cannot report the port they bound.
//
// The port is taken below the kernel's ephemeral range (32768 and up on
// Linux by default): a port the kernel handed out as ephemeral could be
// handed out again, to any outgoing connection of the tests (a peer
// dialling, a health check), between this return and the process that
// binds it (a CI run failed so: "bind: address already in use").
func freePort(t *testing.T) string {
	t.Helper()
	for range 200 {
		port := 20000 + rand.IntN(12000)
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			continue // taken: another
		}
		l.Close()
		return l.Addr().String()
	}
	t.Fatal("no free port found between 20000 and 32000")
	return ""
}

// TestHAProxyExporterScrapesCSV runs Prometheus' haproxy_exporter against
// the page's ;csv URL after a known traffic pattern and checks what it
// exports.
func TestHAProxyExporterScrapesCSV(t *testing.T) {
	bin := needTool(t, "prometheus-haproxy-exporter", "prometheus-haproxy-exporter", "haproxy_exporter")
	_, addr := startStats(t)
	const n = 7
	for range n {
		if code, _, _ := fetch(t, "GET", "http://"+addr+"/x", "", false); code != 200 {
			t.Fatalf("proxied request: got %d", code)
		}
	}
	_, _, csv := fetch(t, "GET", "http://"+addr+"/stats;csv", "", true)
	listen := freePort(t)
	cmd := exec.Command(bin, "--web.listen-address="+listen,
		"--haproxy.scrape-uri=http://admin:pw@"+addr+"/stats;csv")
	out, _ := cmd.StdoutPipe()
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	logs := make(chan string, 1)
	go func() { b, _ := io.ReadAll(out); logs <- string(b) }()
	defer func() {
		cmd.Process.Kill()
		cmd.Wait()
		if t.Failed() {
			t.Logf("exporter output:\n%s", <-logs)
		}
	}()
	var metrics string
	deadline := time.Now().Add(15 * time.Second)
	for {
		resp, err := http.Get("http://" + listen + "/metrics")
		if err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			metrics = string(b)
			if strings.Contains(metrics, "\nhaproxy_up 1\n") {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the exporter never reported haproxy_up 1:\n%.3000s", metrics)
		}
		time.Sleep(50 * time.Millisecond) // polling a separate process
	}
	// s1's bytes out as the CSV says (column 9), to compare with the exporter.
	var s1Bout string
	for _, l := range strings.Split(csv, "\n") {
		if f := strings.Split(l, ","); len(f) > 9 && f[0] == "web" && f[1] == "s1" {
			s1Bout = f[9]
		}
	}
	// The frontend also counts the page's own requests (the exporter's
	// scrapes among them): at least the n proxied ones and one scrape.
	m := regexp.MustCompile(`\nhaproxy_frontend_http_requests_total\{frontend="www"\} (\d+)\n`).FindStringSubmatch(metrics)
	if m == nil {
		t.Errorf("exporter metrics lack haproxy_frontend_http_requests_total for www")
	} else if got, _ := strconv.Atoi(m[1]); got < n+1 {
		t.Errorf("haproxy_frontend_http_requests_total: got %d, want at least %d", got, n+1)
	}
	for _, want := range []string{
		`haproxy_backend_current_queue{backend="web"} 0`,
		`haproxy_backend_http_responses_total{backend="web",code="2xx"} ` + strconv.Itoa(n),
		`haproxy_backend_up{backend="web"} 1`,
		`haproxy_server_up{backend="web",server="s1"} 1`,
		`haproxy_server_up{backend="web",server="s3"} 0`,
		`haproxy_server_bytes_out_total{backend="web",server="s1"} ` + s1Bout,
		`haproxy_frontend_connections_total{frontend="www"} `,
		"haproxy_exporter_csv_parse_failures_total 0",
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("exporter metrics lack %q", want)
		}
	}
}

// TestStatsPageChromium loads the page in headless Chromium at a phone's
// width, saves a screenshot as a test artifact and checks the DOM: every
// server is there with its state class.
func TestStatsPageChromium(t *testing.T) {
	bin := needTool(t, "chromium", "chromium", "chromium-browser")
	p, addr := startStats(t)
	b := p.Backend("web")
	b.SetAdmin(b.Server("s2"), proxy.AdminDrain)
	dir := os.Getenv("FULCRUM_ARTIFACTS")
	if dir == "" {
		dir = t.TempDir()
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	shot := filepath.Join(dir, "stats-page-phone.png")
	u := "http://admin:pw@" + addr + "/stats;norefresh"
	flags := []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir=" + t.TempDir(), "--window-size=412,915"}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if out, err := exec.CommandContext(ctx, bin, append(flags, "--screenshot="+shot, u)...).CombinedOutput(); err != nil {
		t.Fatalf("chromium --screenshot: %v\n%s", err, out)
	}
	if fi, err := os.Stat(shot); err != nil || fi.Size() < 1000 {
		t.Fatalf("no screenshot at %s: %v", shot, err)
	}
	t.Logf("screenshot: %s", shot)
	dom, err := exec.CommandContext(ctx, bin, append(flags, "--dump-dom", u)...).Output()
	if err != nil {
		t.Fatalf("chromium --dump-dom: %v", err)
	}
	rows := map[string]string{}
	for _, m := range regexp.MustCompile(`<tr class="([^"]*)" data-server="([^"]*)"`).FindAllStringSubmatch(string(dom), -1) {
		rows[m[2]] = m[1]
	}
	for server, class := range map[string]string{"web/s1": "nocheck", "web/s2": "drain", "web/s3": "maint"} {
		if rows[server] != class {
			t.Errorf("%s: got class %q in the DOM, want %q", server, rows[server], class)
		}
	}
	sc := bufio.NewScanner(strings.NewReader(string(dom)))
	for sc.Scan() {
		if strings.Contains(sc.Text(), "<script") {
			t.Errorf("the page runs JavaScript: %s", sc.Text())
		}
	}
}

// Issue 16: a client could guess the stats password as fast as it was
// answered, on /stats or /metrics. Through the running frontend, failures
// count per source across both (one authentication per frontend): past 10,
// 429 with Retry-After; the proxied traffic is unaffected.
func TestIssue16StatsGuessesLimited(t *testing.T) {
	_, addr := startStats(t)
	base := "http://" + addr
	guess := func(path string) (int, http.Header) {
		req, _ := http.NewRequest("GET", base+path, nil)
		req.SetBasicAuth("admin", "guess")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode, resp.Header
	}
	for i := range 10 {
		path := "/stats;csv"
		if i%2 == 1 {
			path = "/metrics"
		}
		if code, _ := guess(path); code != 401 {
			t.Fatalf("guess %d on %s: %d, want 401", i, path, code)
		}
	}
	for _, path := range []string{"/stats", "/metrics"} {
		code, h := guess(path)
		if code != 429 || h.Get("Retry-After") == "" || h.Get("Content-Type") != "text/html" {
			t.Errorf("11th guess on %s: %d %v, want 429 with Retry-After", path, code, h)
		}
	}
	if code, _, _ := fetch(t, "GET", base+"/hello", "", false); code != 200 {
		t.Errorf("proxied request from the blocked source: %d, want 200", code)
	}
}
