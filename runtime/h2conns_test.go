package runtime

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/h2c"
)

// TestShowServersConnH2: for a `proto = "h2"` server, show servers conn
// counts connections, not the streams they carry: 20 requests in flight
// multiplexed on one server connection are used_cur 1, and once they end
// the connection is idle_cur 1 (a fresh-user trial saw used_max 200 for
// 2 connections and idle_cur 0 beside 20 idle connections).
func TestShowServersConnH2(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	var arrived sync.WaitGroup
	arrived.Add(20)
	srv := &http.Server{Handler: h2c.NewHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived.Done()
		<-release
		io.WriteString(w, "ok")
	}), &http2.Server{})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	e := startEnv(t, fmt.Sprintf(`
[defaults]
mode = "http"
timeout_connect = "2s"
timeout_server = "10s"

[[frontend]]
name = "fe"
bind = ["127.0.0.1:0"]
default_backend = "be"

[[backend]]
name = "be"
http_reuse = "always"

[[backend.server]]
name = "s1"
address = %q
proto = "h2"
`, ln.Addr().String()))
	url := "http://" + e.p.Frontends[0].Addrs()[0].String() + "/"
	var done sync.WaitGroup
	for range 20 {
		done.Add(1)
		go func() {
			defer done.Done()
			resp, err := http.Get(url)
			if err != nil {
				t.Error(err)
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}()
	}
	arrived.Wait()
	fields := func() []string {
		out := e.run(t, LevelUser, "show servers conn be")
		for _, l := range strings.Split(out, "\n") {
			if strings.HasPrefix(l, "be/s1 ") {
				return strings.Fields(l)
			}
		}
		t.Fatalf("no be/s1 line in %q", out)
		return nil
	}
	// bkname/svname bkid/svid addr port - purge_delay used_cur used_max need_est unsafe_nb safe_nb idle_lim idle_cur idle_per_thr[1]
	f := fields()
	if f[6] != "1" || f[7] != "1" || f[12] != "0" {
		t.Errorf("20 streams in flight on one connection: used_cur %s used_max %s idle_cur %s, want 1 1 0 (%q)", f[6], f[7], f[12], f)
	}
	close(release)
	done.Wait()
	waitFor(t, 5e9, "the connection idle", func() bool {
		f = fields()
		return f[6] == "0"
	})
	if f[7] != "1" || f[10] != "1" || f[12] != "1" {
		t.Errorf("after: used_max %s safe_nb %s idle_cur %s, want 1 1 1 (%q)", f[7], f[10], f[12], f)
	}
}
