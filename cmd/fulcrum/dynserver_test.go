package main

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fulcrum-proxy/fulcrum/conf"
	"github.com/fulcrum-proxy/fulcrum/proxy"
)

// reachedBody GETs url until a response body is want, or fails after d.
func reachedBody(t *testing.T, url, want string, d time.Duration) {
	t.Helper()
	c := &http.Client{Timeout: 5 * time.Second}
	defer c.CloseIdleConnections()
	waitFor(t, d, "a response from "+want, func() bool {
		resp, err := c.Get(url)
		if err != nil {
			return false
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return string(b) == want
	})
}

// TestAddedServersSurviveReloadAndRestart: servers added at runtime stay
// through a reload and, with state_file, through a restart: their id,
// their configuration (check and its own inter), their admin state and
// the weight set at runtime; the one that was enabled takes traffic again.
func TestAddedServersSurviveReloadAndRestart(t *testing.T) {
	noLeaks(t)
	up := upstreams(t, 4)
	dir := t.TempDir()
	state := filepath.Join(dir, "server-state")
	vars := reloadVars{Up: up, W1: 1, StateFile: state, Sock: filepath.Join(dir, "a.sock")}
	run := func(check func(e *reloadEnv)) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		path := filepath.Join(dir, "fulcrum.toml")
		v := vars
		v.Bind = "127.0.0.1:0"
		os.WriteFile(path, v.text(t), 0o644)
		cfg, err := conf.Load(path)
		if err != nil {
			t.Fatal(err)
		}
		started := make(chan *reloader, 1)
		done := make(chan error, 1)
		go func() {
			done <- serveWith(ctx, cfg, io.Discard, serveOptions{started: func(r *reloader) { started <- r }})
		}()
		e := &reloadEnv{t: t, path: path, vars: v}
		select {
		case e.r = <-started:
		case err := <-done:
			t.Fatalf("serve: %v", err)
		}
		e.addr = e.r.current().Frontends[0].Addrs()[0].String()
		check(e)
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	// expect checks d1 and d2 as they must be after each step.
	expect := func(e *reloadEnv, when string) {
		t.Helper()
		web := e.r.current().Backend("web")
		d1, d2 := web.Server("d1"), web.Server("d2")
		if d1 == nil || d2 == nil {
			t.Fatalf("%s: d1 %v, d2 %v", when, d1, d2)
		}
		if d1.ID != 3 || d1.UserWeight.Load() != 5 || d1.InitialWeight != 3 || d1.Admin() != proxy.AdminReady ||
			!d1.Conf.Check || d1.Conf.Inter != 100*time.Millisecond || !d1.Dynamic() {
			t.Errorf("%s: d1 id %d weight %d/%d admin %v check %v inter %v", when, d1.ID, d1.UserWeight.Load(),
				d1.InitialWeight, d1.Admin(), d1.Conf.Check, d1.Conf.Inter)
		}
		if d2.ID != 40 || !d2.ForcedID() || d2.Admin() != proxy.AdminMaint || d2.Addr() != up[3] {
			t.Errorf("%s: d2 id %d forced %v admin %v addr %s", when, d2.ID, d2.ForcedID(), d2.Admin(), d2.Addr())
		}
		// The file binds port 0: a reload listens on another port.
		addr := e.r.current().Frontends[0].Addrs()[0].String()
		reachedBody(t, "http://"+addr+"/", "up3", 10*time.Second)
	}
	run(func(e *reloadEnv) {
		for _, c := range []string{
			"add server web/d1 " + up[2] + " weight 3 check inter 100",
			"add server web/d2 " + up[3] + " id 40",
		} {
			if got := e.cmd(c); got != "New server registered.\n\n" {
				t.Fatalf("%s: %q", c, got)
			}
		}
		for _, c := range []string{"enable server web/d1", "set weight web/d1 5"} {
			if got := e.cmd(c); strings.TrimSpace(got) != "" {
				t.Fatalf("%s: %q", c, got)
			}
		}
		reachedBody(t, "http://"+e.addr+"/", "up3", 10*time.Second) // d1, once its checks passed
		if got := e.cmd("reload"); got != "Success=1\n--\n\n" {
			t.Fatalf("reload: %q", got)
		}
		expect(e, "after reload")
	})
	b, err := os.ReadFile(state)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"\n# add server web/d1 " + up[2] + " weight 3 check inter 100ms enabled\n",
		"\n# add server web/d2 " + up[3] + " id 40\n",
	} {
		if !strings.Contains(string(b), want) {
			t.Errorf("state file lacks %q:\n%s", want, b)
		}
	}
	run(func(e *reloadEnv) { expect(e, "after restart") })
}
