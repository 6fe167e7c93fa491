package runtime

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// bigConfig is one frontend and nb backends of ns servers each.
func bigConfig(nb, ns int) string {
	var b strings.Builder
	b.WriteString("[[frontend]]\nname = \"fe\"\nbind = [\"127.0.0.1:0\"]\ndefault_backend = \"be1\"\n")
	for i := 1; i <= nb; i++ {
		fmt.Fprintf(&b, "\n[[backend]]\nname = \"be%d\"\n", i)
		for j := 1; j <= ns; j++ {
			fmt.Fprintf(&b, "[[backend.server]]\nname = \"s%d\"\naddress = \"127.0.0.1:%d\"\n", j, 20000+j)
		}
	}
	return b.String()
}

// benchContext is a Context writing to w at admin level, without a socket.
func benchContext(e *testEnv, w io.Writer) *Context {
	s := &session{api: e.api, sock: &listener{name: "bench", level: LevelAdmin}, level: LevelAdmin}
	return &Context{Proxy: e.p, api: e.api, sess: s, w: w}
}

// BenchmarkShowStat100x100 renders `show stat` for 100 backends of 100
// servers (10,100 rows), the goal being under 20 ms.
func BenchmarkShowStat100x100(b *testing.B) {
	e := startEnv(b, bigConfig(100, 100))
	c := benchContext(e, io.Discard)
	b.ReportAllocs()
	for b.Loop() {
		if err := showStat(c, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkShowServersState100x100 is the same layout's `show servers state`.
func BenchmarkShowServersState100x100(b *testing.B) {
	e := startEnv(b, bigConfig(100, 100))
	c := benchContext(e, io.Discard)
	b.ReportAllocs()
	for b.Loop() {
		showServersState(c, nil)
	}
}

// TestShowStatLarge: the whole 100x100 reply through the socket, timed.
func TestShowStatLarge(t *testing.T) {
	if testing.Short() {
		t.Skip("large layout")
	}
	e := startEnv(t, bigConfig(100, 100))
	start := time.Now()
	out := e.run(t, LevelUser, "show stat")
	d := time.Since(start)
	if rows := strings.Count(out, "\n") - 2; rows != 100*101+1 {
		t.Errorf("got %d rows, want %d", rows, 100*101+1)
	}
	t.Logf("show stat, 100 backends x 100 servers: %d bytes in %v", len(out), d)
}

// TestConcurrentClients: 1,000 clients asking `show stat` at once while
// requests flow: every reply is whole, and no request fails (run under
// -race, this is also the data-race check of the read path).
func TestConcurrentClients(t *testing.T) {
	n := 1000
	if testing.Short() {
		n = 100
	}
	s1 := startUpstream(t, "127.0.0.1:0", "s1")
	s2 := startUpstream(t, "127.0.0.1:0", "s2")
	e := startEnv(t, twoServers(s1.addr, s2.addr))
	url := "http://" + e.p.Frontends[0].Addrs()[0].String() + "/"

	stop := make(chan struct{})
	var ok, failed atomic.Int64
	var traffic sync.WaitGroup
	for range 4 {
		traffic.Add(1)
		go func() {
			defer traffic.Done()
			c := &http.Client{Timeout: 10 * time.Second}
			defer c.CloseIdleConnections()
			for {
				select {
				case <-stop:
					return
				default:
				}
				resp, err := c.Get(url)
				if err != nil {
					failed.Add(1)
					continue
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 {
					failed.Add(1)
					continue
				}
				ok.Add(1)
			}
		}()
	}
	var clients sync.WaitGroup
	var bad atomic.Int64
	for i := range n {
		clients.Add(1)
		go func() {
			defer clients.Done()
			cmd := "show stat"
			if i%10 == 0 {
				cmd = "set weight web/s1 " + fmt.Sprint(1+i%5) // writers too
			}
			out := dialRun(t, "unix", e.socks[LevelAdmin], cmd+"\n")
			if cmd == "show stat" && (!strings.HasPrefix(out, "# pxname,") || !strings.HasSuffix(out, ",\n\n")) {
				bad.Add(1)
			}
		}()
	}
	clients.Wait()
	close(stop)
	traffic.Wait()
	if bad.Load() > 0 || failed.Load() > 0 {
		t.Errorf("%d bad show stat replies, %d failed requests of %d", bad.Load(), failed.Load(), ok.Load()+failed.Load())
	}
	t.Logf("%d show stat clients; %d requests served meanwhile", n, ok.Load())
}
