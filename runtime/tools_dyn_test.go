package runtime

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestToolsFollowAddedServers: a server added with `add server` appears
// in show stat, show servers state, the Prometheus haproxy exporter's
// metrics and hatop's screen; deleted with `del server`, it leaves all
// four. The tools are the operators' own, run against fulcrum's socket.
func TestToolsFollowAddedServers(t *testing.T) {
	exporter := needTool(t, "prometheus-haproxy-exporter", "prometheus-haproxy-exporter")
	hatop := needTool(t, "hatop", "hatop")
	tmux := needTool(t, "tmux", "tmux")
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
	metrics := func() string {
		resp, err := http.Get("http://" + addr + "/metrics")
		if err != nil {
			return ""
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	sock := fmt.Sprintf("fulcrum-hatop-dyn-%d", os.Getpid())
	tm := func(args ...string) (string, error) {
		out, err := exec.Command(tmux, append([]string{"-L", sock}, args...)...).CombinedOutput()
		return string(out), err
	}
	if out, err := tm("new-session", "-d", "-s", "hatop", "-x", "160", "-y", "40",
		hatop+" -s "+e.socks[LevelAdmin]+" -i 1; sleep 30"); err != nil {
		t.Fatalf("tmux: %v %s", err, out)
	}
	t.Cleanup(func() { tm("kill-server") })
	screen := func() string { s, _ := tm("capture-pane", "-p", "-t", "hatop"); return s }
	waitFor(t, 15*time.Second, "hatop shows s1 and s2", func() bool {
		s := screen()
		return strings.Contains(s, "s1") && strings.Contains(s, "s2")
	})

	if got := e.run(t, LevelAdmin, "add server web/added3 "+s1.addr+" weight 2 enabled"); got != "New server registered.\n\n" {
		t.Fatalf("add server: %q", got)
	}
	seen := func() (stat, state, prom, top bool) {
		stat = strings.Contains(e.run(t, LevelUser, "show stat"), "\nweb,added3,")
		state = strings.Contains(e.run(t, LevelUser, "show servers state web"), "\n2 web 3 added3 ")
		prom = strings.Contains(metrics(), `haproxy_server_up{backend="web",server="added3"}`)
		top = strings.Contains(screen(), "added3")
		return
	}
	var stat, state, prom, top bool
	waitFor(t, 15*time.Second, "every tool shows added3", func() bool {
		stat, state, prom, top = seen()
		return stat && state && prom && top
	})
	if got := e.run(t, LevelAdmin, "set server web/added3 state maint"); got != "\n" {
		t.Fatalf("set server state maint: %q", got)
	}
	if got := e.run(t, LevelAdmin, "del server web/added3"); got != "Server deleted.\n" {
		t.Fatalf("del server: %q", got)
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		stat, state, prom, top = seen()
		if !stat && !state && !prom && !top {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after del server: show stat %v, show servers state %v, exporter %v, hatop %v; want none\n%s",
				stat, state, prom, top, screen())
		}
		time.Sleep(100 * time.Millisecond)
	}
	if n := strings.Count(metrics(), "\nhaproxy_server_up{"); n != 2 {
		t.Errorf("%d haproxy_server_up series after del server, want 2", n)
	}
}
