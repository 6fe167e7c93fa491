package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/fulcrum-proxy/fulcrum/cli"
	"github.com/fulcrum-proxy/fulcrum/conf"
	"github.com/fulcrum-proxy/fulcrum/proxy"
	"go.uber.org/goleak"
)

// TestMain lets the test binary act as the fulcrum command when
// FULCRUM_TEST_MAIN is set, so signal tests run the real main in a child.
// Otherwise it runs the tests and fails the package when one leaves a
// goroutine behind.
func TestMain(m *testing.M) {
	if os.Getenv("FULCRUM_TEST_MAIN") == "1" {
		applyDefaultThreads() // as main
		fallback := defaultConfig
		if f := os.Getenv("FULCRUM_TEST_DEFAULT_CONFIG"); f != "" {
			fallback = f
		}
		os.Exit(runWith(append([]string{"fulcrum"}, os.Args[1:]...), os.Stdout, os.Stderr, fallback))
	}
	goleak.VerifyTestMain(m)
}

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestCheckCommand(t *testing.T) {
	good := writeFile(t, "good.toml", `
[[frontend]]
name = "www"
bind = ["127.0.0.1:0"]
default_backend = "web"
[[backend]]
name = "web"
[[backend.server]]
name = "s1"
address = "127.0.0.1:9001"
`)
	bad := writeFile(t, "bad.toml", `
[[frontend]]
name = "www"
bind = ["127.0.0.1:0"]
default_backend = "nope"
`)
	var out, errb bytes.Buffer
	if code := run([]string{"fulcrum", "check", "-c", good}, &out, &errb); code != 0 || out.String() != "configuration is valid\n" {
		t.Errorf("good config: exit %d, stdout %q, stderr %q", code, out.String(), errb.String())
	}
	out.Reset()
	errb.Reset()
	code := run([]string{"fulcrum", "check", "-c", bad}, &out, &errb)
	want := bad + `:5: frontend "www": default_backend: unknown backend "nope"`
	if code != 1 || !strings.Contains(errb.String(), want) {
		t.Errorf("bad config: exit %d, stderr %q, want exit 1 and %q", code, errb.String(), want)
	}
	// The file as the argument, as `haproxy -c -f FILE` operators type it.
	out.Reset()
	errb.Reset()
	if code := run([]string{"fulcrum", "check", good}, &out, &errb); code != 0 || out.String() != "configuration is valid\n" {
		t.Errorf("check FILE: exit %d, stdout %q, stderr %q", code, out.String(), errb.String())
	}
	errb.Reset()
	if code := run([]string{"fulcrum", "check", "-c", good, bad}, &bytes.Buffer{}, &errb); code != 2 ||
		!strings.Contains(errb.String(), "one configuration file, with -c FILE or as the argument") {
		t.Errorf("-c and an argument: exit %d, stderr %q, want 2", code, errb.String())
	}
}

func TestVersion(t *testing.T) {
	var out bytes.Buffer
	if code := run([]string{"fulcrum", "version"}, &out, io.Discard); code != 0 || !strings.HasPrefix(out.String(), "fulcrum ") {
		t.Errorf("exit %d, output %q", code, out.String())
	}
}

func TestDemoServes(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	addrc := make(chan string, 1)
	done := make(chan error, 1)
	var out bytes.Buffer
	var statsAddr string
	sock := filepath.Join(t.TempDir(), "demo.sock")
	go func() {
		at := demoAddrs{"127.0.0.1:0", "127.0.0.1:0", sock}
		done <- runDemo(ctx, at, &out, io.Discard, func(p *proxy.Proxy) {
			statsAddr = p.Frontends[1].Addrs()[0].String()
			addrc <- p.Frontends[0].Addrs()[0].String()
		})
	}()
	var addr string
	select {
	case addr = <-addrc:
	case err := <-done:
		t.Fatalf("demo ended early: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("demo did not start")
	}
	// Weights 2:1:1: eight requests give s1 four times, s2 and s3 twice.
	got := map[string]int{}
	for i := 0; i < 8; i++ {
		resp, err := http.Get("http://" + addr + "/")
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		got[resp.Header.Get("X-Served-By")]++
	}
	if fmt.Sprint(got) != "map[s1:4 s2:2 s3:2]" {
		t.Errorf("distribution: got %v, want map[s1:4 s2:2 s3:2]", got)
	}
	// The stats page and the admin socket answer.
	resp, err := http.Get("http://" + statsAddr + "/stats;csv")
	if err != nil {
		t.Fatal(err)
	}
	csv, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(csv), "\nweb,s1,") {
		t.Errorf("stats page: %d %q", resp.StatusCode, csv)
	}
	reply, err := cli.Run(cli.Addr(sock), "show stat", 5*time.Second)
	if err != nil || !strings.Contains(reply, "\nweb,s3,") {
		t.Errorf("admin socket show stat: %q %v", reply, err)
	}
	// A reload rebuilds the built-in configuration (there is no file to
	// read) on the same upstreams and addresses; a drain set before stays.
	if reply, err := cli.Run(cli.Addr(sock), "set server web/s3 state drain", 5*time.Second); err != nil || strings.TrimSpace(reply) != "" {
		t.Fatalf("set server state drain: %q %v", reply, err)
	}
	if reply, err := cli.Run(cli.Addr(sock), "reload", 10*time.Second); err != nil || !strings.HasPrefix(reply, "Success=1\n") {
		t.Errorf("reload: %q %v, want Success=1", reply, err)
	}
	got = map[string]int{}
	for i := 0; i < 6; i++ {
		resp, err := http.Get("http://" + addr + "/")
		if err != nil {
			t.Fatalf("after the reload: %v", err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		got[resp.Header.Get("X-Served-By")]++
	}
	if fmt.Sprint(got) != "map[s1:4 s2:2]" {
		t.Errorf("after the reload, s3 drained: got %v, want map[s1:4 s2:2]", got)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("demo exit: %v", err)
	}
	if !strings.Contains(out.String(), "curl -s http://"+addr+"/") {
		t.Errorf("demo did not print what to try:\n%s", out.String())
	}
}

// TestGracefulStop runs fulcrum as a child process: a slow request in
// flight when SIGTERM arrives completes, new connections are refused after
// the signal, and the process exits 0.
func TestGracefulStop(t *testing.T) {
	release := make(chan struct{})
	var arrived atomic.Int64
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived.Add(1)
		<-release
		io.WriteString(w, "slow done")
	}))
	defer up.Close()
	defer func() {
		select {
		case <-release:
		default:
			close(release)
		}
	}()
	cfg := writeFile(t, "f.toml", fmt.Sprintf(`
[global]
hard_stop_after = "20s"
[[frontend]]
name = "www"
bind = ["127.0.0.1:0"]
default_backend = "web"
[[backend]]
name = "web"
[[backend.server]]
name = "s1"
address = %q
`, up.Listener.Addr().String()))
	cmd := exec.Command(os.Args[0], "run", "-c", cfg)
	cmd.Env = append(os.Environ(), "FULCRUM_TEST_MAIN=1")
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	// The bound address is in the "listening" log line, with the
	// connection layer that accepts on it.
	addrc := make(chan map[string]any, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			var m map[string]any
			if json.Unmarshal(sc.Bytes(), &m) == nil && m["message"] == "listening" {
				addrc <- m
			}
		}
	}()
	var addr string
	select {
	case m := <-addrc:
		addr, _ = m["bind"].(string)
		want := conf.DefaultNetIO
		if v := os.Getenv(proxy.NetIOEnv); v != "" {
			want = v
		}
		if want == "uring" {
			want = "epoll" // the listener's layer; io_uring relays mode tcp only
		}
		if m["netio"] != want {
			t.Errorf("listening line: netio %v, want %s", m["netio"], want)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("fulcrum did not report listening")
	}
	type result struct {
		body string
		err  error
	}
	slow := make(chan result, 1)
	go func() {
		resp, err := http.Get("http://" + addr + "/slow")
		if err != nil {
			slow <- result{err: err}
			return
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		slow <- result{body: string(b)}
	}()
	deadline := time.Now().Add(10 * time.Second)
	for arrived.Load() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("slow request never reached the upstream")
		}
		time.Sleep(5 * time.Millisecond)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	// New connections are refused once the listener is closed.
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			break
		}
		c.Close()
		if time.Now().After(deadline) {
			t.Fatal("still accepting after SIGTERM")
		}
		time.Sleep(5 * time.Millisecond)
	}
	close(release)
	r := <-slow
	if r.err != nil || r.body != "slow done" {
		t.Errorf("in-flight request: got %q %v, want %q", r.body, r.err, "slow done")
	}
	if err := cmd.Wait(); err != nil {
		t.Errorf("exit: %v, want 0", err)
	}
}

// An empty configuration used to pass `fulcrum check` and start a process
// listening on nothing.
func TestCheckRefusesNoFrontend(t *testing.T) {
	path := writeFile(t, "empty.toml", "[global]\nlog_level = \"info\"\n")
	var out, errb bytes.Buffer
	code := run([]string{"fulcrum", "check", "-c", path}, &out, &errb)
	if want := path + ": no [[frontend]]: nothing would listen"; code != 1 || !strings.Contains(errb.String(), want) {
		t.Errorf("exit %d, stderr %q; want 1 and %q", code, errb.String(), want)
	}
}
