package runtime

import (
	"encoding/csv"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// upstream is a real HTTP server that counts the requests it answers.
type upstream struct {
	srv      *http.Server
	addr     string
	requests atomic.Int64
}

// startUpstream serves on addr ("127.0.0.1:0" for any port) until the test
// ends or stop is called.
func startUpstream(t testing.TB, addr, name string) *upstream {
	t.Helper()
	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("upstream %s: %v", name, err)
	}
	u := &upstream{addr: l.Addr().String()}
	u.srv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u.requests.Add(1)
		io.WriteString(w, name+"\n")
	})}
	go u.srv.Serve(l)
	t.Cleanup(u.stop)
	return u
}

func (u *upstream) stop() { u.srv.Close() }

// twoServers is a frontend balancing over web/s1 and web/s2.
func twoServers(s1, s2 string) string {
	return fmt.Sprintf(`
[defaults]
mode = "http"
timeout_connect = "2s"
timeout_server = "10s"
retries = 2

[[frontend]]
name = "fe_web"
bind = ["127.0.0.1:0"]
default_backend = "web"

[[backend]]
name = "web"
balance = "roundrobin"
http_reuse = "safe"

[[backend.server]]
name = "s1"
address = %q

[[backend.server]]
name = "s2"
address = %q
`, s1, s2)
}

// statRow reads `show stat` as a CSV reader would and returns the named
// column of the row pxname/svname.
func statRow(t *testing.T, e *testEnv, pxname, svname, column string) string {
	t.Helper()
	out := e.run(t, LevelUser, "show stat")
	recs, err := csv.NewReader(strings.NewReader(strings.TrimPrefix(out, "# "))).ReadAll()
	if err != nil {
		t.Fatalf("show stat is not CSV: %v\n%s", err, out)
	}
	col := -1
	for i, name := range recs[0] {
		if name == column {
			col = i
		}
	}
	for _, r := range recs[1:] {
		if r[0] == pxname && r[1] == svname {
			return r[col]
		}
	}
	t.Fatalf("no row %s/%s in show stat", pxname, svname)
	return ""
}

// TestDrainScenario runs what a deploy script does through the Runtime API
// while clients keep sending requests: drain s1, wait until it has no
// session left, put it in maintenance, redeploy it (a new process on the
// same address), make it ready again. No request may fail, and s1 must
// take traffic again at the end.
func TestDrainScenario(t *testing.T) {
	s1 := startUpstream(t, "127.0.0.1:0", "s1")
	s2 := startUpstream(t, "127.0.0.1:0", "s2")
	e := startEnv(t, twoServers(s1.addr, s2.addr))
	url := "http://" + e.p.Frontends[0].Addrs()[0].String() + "/"

	var ok, failed atomic.Int64
	var firstErr atomic.Value
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 1}}
			defer c.CloseIdleConnections()
			for {
				select {
				case <-stop:
					return
				default:
				}
				err := getOK(c, url)
				if err != nil {
					failed.Add(1)
					firstErr.CompareAndSwap(nil, err.Error())
					continue
				}
				ok.Add(1)
			}
		}()
	}
	defer func() {
		close(stop)
		wg.Wait()
		if n := failed.Load(); n > 0 {
			t.Errorf("%d of %d requests failed, first: %v", n, n+ok.Load(), firstErr.Load())
		}
		t.Logf("%d requests, none failed", ok.Load())
	}()
	waitFor(t, 10*time.Second, "steady traffic on both servers", func() bool {
		return s1.requests.Load() > 20 && s2.requests.Load() > 20
	})

	if got := e.run(t, LevelAdmin, "set server web/s1 state drain"); got != "\n" {
		t.Fatalf("drain: %q", got)
	}
	waitFor(t, 10*time.Second, "s1's scur at 0 in show stat", func() bool {
		return statRow(t, e, "web", "s1", "scur") == "0"
	})
	if st := statRow(t, e, "web", "s1", "status"); st != "DRAIN" {
		t.Errorf("s1 status while draining: %q", st)
	}
	conn := e.run(t, LevelUser, "show servers conn web")
	if !strings.Contains(conn, "web/s1 2/1 ") || !strings.Contains(strings.Split(conn, "web/s1 ")[1], " - 5000 0 ") {
		t.Errorf("show servers conn after the drain: %q", conn)
	}
	lbtot, _ := strconv.Atoi(statRow(t, e, "web", "s1", "lbtot"))
	if got := e.run(t, LevelAdmin, "set server web/s1 state maint"); got != "\n" {
		t.Fatalf("maint: %q", got)
	}
	if st := statRow(t, e, "web", "s1", "status"); st != "MAINT" {
		t.Errorf("s1 status in maintenance: %q", st)
	}

	// Deploy: the old s1 goes away, a new one starts on the same address.
	s1.stop()
	s1v2 := startUpstream(t, s1.addr, "s1-v2")
	waitFor(t, 10*time.Second, "more traffic on s2 alone", func() bool { return s2.requests.Load() > 200 })
	if now, _ := strconv.Atoi(statRow(t, e, "web", "s1", "lbtot")); now != lbtot {
		t.Errorf("s1 was picked %d times while drained or in maintenance", now-lbtot)
	}

	if got := e.run(t, LevelAdmin, "set server web/s1 state ready"); got != "\n" {
		t.Fatalf("ready: %q", got)
	}
	waitFor(t, 10*time.Second, "the redeployed s1 taking traffic", func() bool { return s1v2.requests.Load() > 20 })
	if st := statRow(t, e, "web", "s1", "status"); st != "no check" && st != "UP" {
		t.Errorf("s1 status when ready: %q", st)
	}
}

// TestShutdownSessionsServer: `shutdown sessions server` aborts the
// streams on that server (a slow request here), not those on others, and
// `show sess` lists them before.
func TestShutdownSessionsServer(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	slow := func(name string) string {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-release:
			case <-r.Context().Done():
			}
			io.WriteString(w, name)
		})}
		go srv.Serve(l)
		t.Cleanup(func() { srv.Close() })
		return l.Addr().String()
	}
	e := startEnv(t, twoServers(slow("s1"), slow("s2")))
	url := "http://" + e.p.Frontends[0].Addrs()[0].String() + "/"
	errs := make(chan error, 2)
	for range 2 { // roundrobin: one request on each server
		go func() {
			c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
			resp, err := c.Get(url)
			if err == nil {
				_, err = io.ReadAll(resp.Body)
				resp.Body.Close()
				if err == nil && resp.StatusCode != 200 {
					err = fmt.Errorf("status %d", resp.StatusCode)
				}
			}
			errs <- err
		}()
	}
	waitFor(t, 10*time.Second, "a session on each server in show sess", func() bool {
		out := e.run(t, LevelOperator, "show sess")
		return strings.Contains(out, "be=web srv=s1 ") && strings.Contains(out, "be=web srv=s2 ")
	})
	if got := e.run(t, LevelAdmin, "shutdown sessions server web/s1"); got != "\n" {
		t.Fatalf("shutdown sessions server: %q", got)
	}
	select {
	case err := <-errs:
		if err == nil {
			t.Fatal("a request succeeded; want the one on s1 aborted")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the session on s1 was not aborted")
	}
	// The client may see the abort before the proxy has ended the stream:
	// wait for show sess to drop it.
	var out string
	waitFor(t, 10*time.Second, "the session on s1 gone from show sess", func() bool {
		out = e.run(t, LevelOperator, "show sess")
		return !strings.Contains(out, "srv=s1 ")
	})
	if !strings.Contains(out, "srv=s2 ") {
		t.Errorf("show sess after the shutdown: %q", out)
	}
}
