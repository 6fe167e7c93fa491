package runtime

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/fulcrum-proxy/fulcrum/proxy"
	"github.com/fulcrum-proxy/fulcrum/stats"
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

// TestConcurrentClients is the flood (run it under -race): 1,000
// clients connect to one socket at once, each sending `show stat` one to
// three times, while HTTP traffic flows through the proxy. Every reply
// must be whole CSV: the header of every column, then the four rows of the
// layout, each with a field per column. No request may fail, the socket
// serves at most its maxconn sessions at a time (the others wait in the
// listen queue and are all served in turn: none is refused), and once
// the traffic stops the counters agree with what the clients and the
// upstreams saw. No timing is asserted; the deadlines only end a hang.
func TestConcurrentClients(t *testing.T) {
	n := 1000
	if testing.Short() {
		n = 100
	}
	s1 := startUpstream(t, "127.0.0.1:0", "s1")
	s2 := startUpstream(t, "127.0.0.1:0", "s2")
	e := startEnv(t, twoServers(s1.addr, s2.addr))
	url := "http://" + e.p.Frontends[0].Addrs()[0].String() + "/"
	header := "pxname"
	for _, c := range stats.Columns()[1:] {
		header += "," + c.Name
	}
	wantRows := []string{"fe_web/FRONTEND", "web/s1", "web/s2", "web/BACKEND"}

	// Steady traffic, bounded: 4 clients until the flood is over, at most
	// 50,000 requests.
	stop := make(chan struct{})
	var ok, failed atomic.Int64
	var firstErr atomic.Value
	var traffic sync.WaitGroup
	for range 4 {
		traffic.Add(1)
		go func() {
			defer traffic.Done()
			c := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 1}}
			defer c.CloseIdleConnections()
			for ok.Load()+failed.Load() < 50000 {
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
	var stopOnce sync.Once
	stopTraffic := func() {
		stopOnce.Do(func() { close(stop) })
		traffic.Wait()
	}
	defer stopTraffic() // also when the test fails early
	waitFor(t, 10*time.Second, "traffic on both servers", func() bool {
		return s1.requests.Load() > 10 && s2.requests.Load() > 10
	})

	// The sessions being served, sampled while the clients run.
	sampling := make(chan struct{})
	maxSessions := make(chan int)
	go func() {
		peak := 0
		for {
			e.api.mu.Lock()
			peak = max(peak, len(e.api.sessions))
			e.api.mu.Unlock()
			select {
			case <-sampling:
				maxSessions <- peak
				return
			case <-time.After(100 * time.Microsecond):
			}
		}
	}()

	// The flood: every client connects before the first one sends.
	var clients sync.WaitGroup
	var replies, refused atomic.Int64
	errs := make(chan error, n)
	start := make(chan struct{})
	for i := range n {
		clients.Add(1)
		go func() {
			defer clients.Done()
			<-start
			for range 1 + i%3 {
				out, err := showStatOnce(e.socks[LevelUser], &refused)
				if err == nil {
					err = checkStatCSV(out, header, wantRows)
				}
				if err != nil {
					errs <- fmt.Errorf("client %d: %w", i, err)
					return
				}
				replies.Add(1)
			}
		}()
	}
	close(start)
	clients.Wait()
	close(sampling)
	peak := <-maxSessions
	stopTraffic()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if want := int64(n/3*6 + []int{0, 1, 3}[n%3]); replies.Load() != want {
		t.Errorf("%d whole replies, want %d", replies.Load(), want)
	}
	if peak > DefaultMaxConn {
		t.Errorf("%d sessions served at once, maxconn is %d", peak, DefaultMaxConn)
	}
	if failed.Load() > 0 {
		t.Errorf("%d of %d requests failed, first: %v", failed.Load(), ok.Load()+failed.Load(), firstErr.Load())
	}

	// The counters, now that nothing moves: every request counted once
	// on the frontend and on the server that answered it, none in flight.
	served := s1.requests.Load() + s2.requests.Load()
	for _, c := range []struct {
		px, sv, col string
		want        int64
	}{
		{"fe_web", "FRONTEND", "req_tot", ok.Load()},
		{"fe_web", "FRONTEND", "hrsp_2xx", ok.Load()},
		{"web", "BACKEND", "lbtot", served},
		{"web", "s1", "lbtot", s1.requests.Load()},
		{"web", "s2", "lbtot", s2.requests.Load()},
		{"web", "BACKEND", "hrsp_2xx", ok.Load()},
		{"web", "BACKEND", "scur", 0},
		{"fe_web", "FRONTEND", "scur", 0},
	} {
		waitFor(t, 10*time.Second, c.px+"/"+c.sv+" "+c.col+" settled", func() bool {
			got, _ := strconv.ParseInt(statRow(t, e, c.px, c.sv, c.col), 10, 64)
			if got != c.want && c.col != "scur" {
				t.Errorf("%s/%s %s = %d, want %d", c.px, c.sv, c.col, got, c.want)
				return true
			}
			return got == c.want // scur: the last connections may still close
		})
	}
	t.Logf("%d clients, %d show stat replies (peak %d sessions at once, %d connects refused and retried); %d requests served meanwhile", n, replies.Load(), peak, refused.Load(), ok.Load())
}

// showStatOnce sends `show stat` on a fresh connection to sock and returns
// the whole reply. A connect the kernel refuses because the listen queue
// is full (EAGAIN) is counted in refused and retried: the socket's
// documented behaviour under a flood larger than the queue.
func showStatOnce(sock string, refused *atomic.Int64) (string, error) {
	deadline := time.Now().Add(2 * time.Minute) // only ends a hang
	for {
		c, err := net.Dial("unix", sock)
		if errors.Is(err, syscall.EAGAIN) && time.Now().Before(deadline) {
			refused.Add(1)
			time.Sleep(10 * time.Millisecond)
			continue
		}
		if err != nil {
			return "", err
		}
		defer c.Close()
		c.SetDeadline(deadline)
		if _, err := io.WriteString(c, "show stat\n"); err != nil {
			return "", err
		}
		b, err := io.ReadAll(c)
		return string(b), err
	}
}

// checkStatCSV checks a `show stat` reply as a CSV reader sees it: the
// header, then rows (pxname/svname in order) of as many fields, then the
// empty line that ends the reply.
func checkStatCSV(out, header string, rows []string) error {
	body, ok := strings.CutSuffix(out, "\n\n")
	if !ok {
		return fmt.Errorf("reply does not end with an empty line: %q", out)
	}
	r := csv.NewReader(strings.NewReader(strings.TrimPrefix(body, "# ")))
	recs, err := r.ReadAll() // every record as many fields as the header
	if err != nil {
		return fmt.Errorf("not CSV: %v", err)
	}
	if got := strings.Join(recs[0], ","); got != header+"," {
		return fmt.Errorf("header %q", got)
	}
	if len(recs)-1 != len(rows) {
		return fmt.Errorf("%d rows, want %d", len(recs)-1, len(rows))
	}
	for i, want := range rows {
		if got := recs[i+1][0] + "/" + recs[i+1][1]; got != want {
			return fmt.Errorf("row %d is %s, want %s", i+1, got, want)
		}
	}
	return nil
}

// driveRequests sends n GET requests to url from workers goroutines, on
// kept-alive connections, and returns how many failed (an error or a
// status other than 200) with the first error.
func driveRequests(c *http.Client, url string, n, workers int) (failed int64, first error) {
	var left, bad atomic.Int64
	var firstErr atomic.Value
	left.Store(int64(n))
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for left.Add(-1) >= 0 {
				err := getOK(c, url)
				if err != nil {
					bad.Add(1)
					firstErr.CompareAndSwap(nil, err)
				}
			}
		}()
	}
	wg.Wait()
	if e, ok := firstErr.Load().(error); ok {
		first = e
	}
	return bad.Load(), first
}

// statHammer is clients goroutines, each sending `show stat` on a fresh
// connection to sock, again and again, until stop.
type statHammer struct {
	stop    chan struct{}
	wg      sync.WaitGroup
	conns   sync.Map     // the open connections, cut by halt
	replies atomic.Int64 // whole replies read
	errs    atomic.Int64 // failed dials, writes or reads before halt
}

func startStatHammer(sock string, clients int) *statHammer {
	h := &statHammer{stop: make(chan struct{})}
	for range clients {
		h.wg.Add(1)
		go func() {
			defer h.wg.Done()
			for {
				select {
				case <-h.stop:
					return
				default:
				}
				c, err := net.Dial("unix", sock)
				if err != nil {
					h.errs.Add(1)
					time.Sleep(time.Millisecond)
					continue
				}
				h.conns.Store(c, nil)
				c.SetDeadline(time.Now().Add(30 * time.Second))
				_, err = io.WriteString(c, "show stat\n")
				var n int64
				if err == nil {
					n, err = io.Copy(io.Discard, c)
				}
				h.conns.Delete(c)
				c.Close()
				select {
				case <-h.stop:
					return // cut by halt
				default:
				}
				if err != nil || n == 0 {
					h.errs.Add(1)
					continue
				}
				h.replies.Add(1)
			}
		}()
	}
	return h
}

// halt stops the clients, cutting the exchanges in progress (most wait in
// the listen queue), and waits for them.
func (h *statHammer) halt() {
	close(h.stop)
	done := make(chan struct{})
	go func() { h.wg.Wait(); close(done) }()
	for {
		h.conns.Range(func(c, _ any) bool {
			c.(net.Conn).SetDeadline(time.Now())
			return true
		})
		select {
		case <-done:
			return
		case <-time.After(10 * time.Millisecond): // again: a client was between its dial and Store
		}
	}
}

// BenchmarkDataPathUnderShowStat is the data-path check: the
// throughput of HTTP requests through the proxy (8 kept-alive clients, two
// upstreams, all in this process) alone, and while 1,000 clients hammer
// `show stat` on the admin socket. The two run in alternating phases, so
// that both see the same machine; b.N is the number of requests of all
// phases. It reports idle-req/s and showstat-req/s over all phases,
// slowdown-% as the median of the rounds' slowdowns (robust to another
// process taking the CPUs during one phase), and the show stat replies
// served per second. It asserts no timing; it fails only on a failed
// request. Between rounds, the clients cut by the end of a flood are still
// served (their command had arrived), so each round takes about a second.
//
//	go test ./runtime/ -run '^$' -bench DataPathUnderShowStat -benchtime 80000x
func BenchmarkDataPathUnderShowStat(b *testing.B) {
	const rounds, workers, clients = 8, 8, 1000
	s1 := startUpstream(b, "127.0.0.1:0", "s1")
	s2 := startUpstream(b, "127.0.0.1:0", "s2")
	e := startEnv(b, twoServers(s1.addr, s2.addr))
	url := "http://" + e.p.Frontends[0].Addrs()[0].String() + "/"
	hc := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: workers}}
	defer hc.CloseIdleConnections()
	if b.N < 2*rounds*workers { // the framework's first, probing run
		driveRequests(hc, url, b.N, workers)
		return
	}
	n := b.N / (2 * rounds)
	driveRequests(hc, url, 2*workers, workers) // open the connections

	// phase times n requests, failing the benchmark on a failed one.
	phase := func(what string) time.Duration {
		start := time.Now()
		failed, err := driveRequests(hc, url, n, workers)
		d := time.Since(start)
		if failed > 0 {
			b.Fatalf("%d requests failed %s, first: %v", failed, what, err)
		}
		return d
	}
	var idle, loaded time.Duration
	var replies int64
	var slowdowns []float64
	b.ResetTimer()
	for r := range rounds {
		// Half the rounds start with the flood, so that neither phase
		// always follows the other.
		var di, dl time.Duration
		if r%2 == 0 {
			di = phase("without show stat")
		}
		h := startStatHammer(e.socks[LevelAdmin], clients)
		// The steady state: the clients are at work and the API's burst
		// allowance is spent (budget.go), so that they are paced.
		for warm := time.Now(); h.replies.Load() < clients/10 || !e.api.budget.overdrawn() && time.Since(warm) < 5*time.Second; {
			time.Sleep(time.Millisecond)
		}
		before := h.replies.Load()
		dl = phase("under show stat")
		replies += h.replies.Load() - before
		h.halt()
		if h.errs.Load() > 0 {
			b.Logf("%d show stat exchanges failed", h.errs.Load())
		}
		if r%2 == 1 {
			di = phase("without show stat")
		}
		idle += di
		loaded += dl
		slowdowns = append(slowdowns, 100*(1-di.Seconds()/dl.Seconds()))
	}
	b.StopTimer()
	slices.Sort(slowdowns)
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(float64(rounds*n)/idle.Seconds(), "idle-req/s")
	b.ReportMetric(float64(rounds*n)/loaded.Seconds(), "showstat-req/s")
	b.ReportMetric((slowdowns[rounds/2-1]+slowdowns[rounds/2])/2, "slowdown-%")
	b.ReportMetric(float64(replies)/loaded.Seconds(), "stat-replies/s")
}

// BenchmarkAddServers1000 adds 1,000 servers to a backend of 10 over the
// admin socket, then deletes them (not timed); one op is the 1,000 adds,
// the goal being under 1 s. conn: one connection per command, as
// `echo "add server ..." | socat` sends it (a connection alone costs
// about what BenchmarkAddServers1000/show-version shows); session: the
// 1,000 commands in one interactive session (prompt), as a script
// keeping the socket open sends them.
func BenchmarkAddServers1000(b *testing.B) {
	e := startEnv(b, bigConfig(1, 10))
	round := 0
	line := func(i int) string {
		return fmt.Sprintf("add server be1/r%d-%d 127.0.0.1:%d weight %d enabled", round, i, 30000+i, 1+i%3)
	}
	clean := func() {
		bk := e.p.Backend("be1")
		for _, s := range bk.Servers() {
			if s.Dynamic() {
				bk.SetAdmin(s, proxy.AdminMaint)
				if err := e.p.DeleteServer(s); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
	b.Run("conn", func(b *testing.B) {
		for b.Loop() {
			round++
			for i := range 1000 {
				if got := e.run(b, LevelAdmin, line(i)); got != "New server registered.\n\n" {
					b.Fatalf("%s: %q", line(i), got)
				}
			}
			b.StopTimer()
			clean()
			b.StartTimer()
		}
	})
	b.Run("session", func(b *testing.B) {
		for b.Loop() {
			round++
			var in strings.Builder
			in.WriteString("prompt\n")
			for i := range 1000 {
				in.WriteString(line(i) + "\n")
			}
			in.WriteString("quit\n")
			if got := dialRun(b, "unix", e.socks[LevelAdmin], in.String()); strings.Count(got, "New server registered.") != 1000 {
				b.Fatalf("%d servers registered, want 1000", strings.Count(got, "New server registered."))
			}
			b.StopTimer()
			clean()
			b.StartTimer()
		}
	})
	// command: the 1,000 adds run as the command's function, without the
	// socket nor the API's CPU budget (budget.go), which paces a stream
	// of commands to cmdShare of the CPUs: the cost of the add itself.
	b.Run("command", func(b *testing.B) {
		c := benchContext(e, io.Discard)
		for b.Loop() {
			round++
			for i := range 1000 {
				if err := addServer(c, strings.Fields(line(i))[2:]); err != nil {
					b.Fatal(err)
				}
			}
			if n := len(e.p.Backend("be1").Servers()); n != 1010 {
				b.Fatalf("%d servers, want 1010", n)
			}
			b.StopTimer()
			clean()
			b.StartTimer()
		}
	})
	b.Run("show-version", func(b *testing.B) {
		for b.Loop() {
			for range 1000 {
				e.run(b, LevelAdmin, "show version")
			}
		}
	})
}
