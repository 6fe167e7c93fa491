package runtime

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/fulcrum-proxy/fulcrum/conf"
	"github.com/fulcrum-proxy/fulcrum/internal/testutil"
	"github.com/fulcrum-proxy/fulcrum/proxy"
	"github.com/rs/zerolog"
)

// testEnv is a running proxy with its Runtime API on three Unix sockets,
// one per level, in a temporary directory.
type testEnv struct {
	p     *proxy.Proxy
	api   *API
	dir   string
	socks map[Level]string
	log   *testutil.SyncBuffer
}

// startEnv parses cfg (TOML), starts the proxy and the Runtime API with an
// admin, an operator and a user socket. Both stop at the end of the test.
func startEnv(t testing.TB, cfg string) *testEnv {
	t.Helper()
	return startEnvOpts(t, cfg, Options{Version: "0.0.0-test"})
}

// startEnvOpts is startEnv with the Runtime API's options.
func startEnvOpts(t testing.TB, cfg string, opts Options) *testEnv {
	t.Helper()
	c, err := conf.Parse("test.toml", []byte(cfg))
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	p, err := proxy.New(c, zerolog.Nop())
	if err != nil {
		t.Fatalf("proxy.New: %v", err)
	}
	if err := p.Start(); err != nil {
		t.Fatalf("proxy.Start: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		p.Shutdown(ctx)
	})
	// A short directory: Unix socket paths are limited to 107 bytes.
	dir, err := os.MkdirTemp("", "rt")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	e := &testEnv{p: p, dir: dir, socks: map[Level]string{}, log: &testutil.SyncBuffer{}}
	e.api = New(p, zerolog.New(e.log), opts)
	t.Cleanup(func() { e.api.Close() })
	for _, l := range []Level{LevelAdmin, LevelOperator, LevelUser} {
		path := filepath.Join(dir, l.String()+".sock")
		if err := e.api.Listen(Socket{Path: path, Level: l}); err != nil {
			t.Fatalf("Listen: %v", err)
		}
		e.socks[l] = path
	}
	return e
}

// run sends line on the socket of level as `echo line | socat stdio
// unix-connect:SOCK` does, and returns everything read until the close.
func (e *testEnv) run(t testing.TB, l Level, line string) string {
	t.Helper()
	return dialRun(t, "unix", e.socks[l], line+"\n")
}

// dialRun writes raw to a fresh connection and reads until the server
// closes it.
func dialRun(t testing.TB, network, addr, raw string) string {
	t.Helper()
	c, err := net.Dial(network, addr)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(20 * time.Second))
	if _, err := io.WriteString(c, raw); err != nil {
		t.Fatalf("write: %v", err)
	}
	b, err := io.ReadAll(c)
	if err != nil {
		t.Fatalf("read: %v (got %q)", err, b)
	}
	return string(b)
}

// needTool returns the path of an external program the test drives. When
// it is missing the test fails under CI=true (the CI installs it) and is
// skipped otherwise, saying what to install.
func needTool(t *testing.T, name, pkg string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err == nil {
		return path
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s not found: the CI must install the Debian package %s (.ci/run PKGS)", name, pkg)
	}
	t.Skipf("%s not found: apt-get install %s to run this test", name, pkg)
	return ""
}

// waitFor polls cond until it holds or d passes.
func waitFor(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// getOK GETs url with c and reads the body; a status other than 200 is an
// error.
func getOK(c *http.Client, url string) error {
	resp, err := c.Get(url)
	if err != nil {
		return err
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		return fmt.Errorf("status %d", resp.StatusCode)
	}
	return nil
}
