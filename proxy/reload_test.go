package proxy

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"go.uber.org/goleak"

	"github.com/fulcrum-proxy/fulcrum/conf"
	"github.com/fulcrum-proxy/fulcrum/proxy/lb"
)

// reloadTo builds the successor of old from cfg and starts it in old's
// place, failing t on error.
func reloadTo(t *testing.T, old *Proxy, cfg *conf.Config) *Proxy {
	t.Helper()
	p, err := NewFrom(old, cfg, zerolog.Nop())
	if err != nil {
		t.Fatalf("NewFrom: %v", err)
	}
	if err := p.StartFrom(old); err != nil {
		t.Fatalf("StartFrom: %v", err)
	}
	return p
}

// keepBind returns cfg with its first frontend bound where p's listens, so
// that a reload to it keeps the listener.
func keepBind(cfg *conf.Config, p *Proxy) *conf.Config {
	cfg.Frontends[0].Binds = []string{p.Frontends[0].Addrs()[0].String()}
	return cfg
}

// TestReloadHandOverRefusesNothing reloads 30 times while clients open a
// new connection per request: none is refused or reset, and each reload's
// old proxy retires, its counts added to the new one's, and its start time
// kept.
func TestReloadHandOverRefusesNothing(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	u := newUpstream(t, "s1")
	defer u.Close()
	p, err := New(testConfig(conf.ModeHTTP, []string{u.addr()}, nil), zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	addr := p.Frontends[0].Addrs()[0].String()
	started := p.Snapshot().Started

	var ok, failed atomic.Int64
	var firstErr atomic.Value
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 10 * time.Second}
			for range 100000 {
				select {
				case <-stop:
					return
				default:
				}
				resp, err := client.Get("http://" + addr + "/")
				if err == nil {
					_, err = io.ReadAll(resp.Body)
					resp.Body.Close()
					if err == nil && resp.StatusCode != 200 {
						err = fmt.Errorf("status %d", resp.StatusCode)
					}
				}
				if err != nil {
					failed.Add(1)
					firstErr.CompareAndSwap(nil, err.Error())
					continue
				}
				ok.Add(1)
			}
		}()
	}
	var retiring sync.WaitGroup
	for range 30 {
		before := ok.Load()
		next := reloadTo(t, p, keepBind(testConfig(conf.ModeHTTP, []string{u.addr()}, nil), p))
		old := p
		p = next
		retiring.Add(1)
		go func() {
			defer retiring.Done()
			next.Retire(context.Background(), old)
		}()
		waitFor(t, 10*time.Second, "requests on the new proxy", func() bool { return ok.Load() >= before+20 })
	}
	close(stop)
	wg.Wait()
	retiring.Wait()
	if n := failed.Load(); n > 0 {
		t.Errorf("%d of %d requests failed across 30 reloads; first: %v", n, n+ok.Load(), firstErr.Load())
	}
	if got, want := p.Frontends[0].Counters.ReqTot.Load(), ok.Load(); got != want {
		t.Errorf("req_tot after 30 reloads: got %d, want %d", got, want)
	}
	if got, want := p.Backends[0].Servers()[0].Counters.Stot.Load(), ok.Load(); got != want {
		t.Errorf("server stot after 30 reloads: got %d, want %d", got, want)
	}
	// The start time carries over with the counters (show info's uptime).
	if got := p.Snapshot().Started; !got.Equal(started) {
		t.Errorf("started %v after 30 reloads, want the first start %v", got, started)
	}
	p.Shutdown(context.Background())
}

// TestReloadTCPSessionFinishesOnOld: a TCP session open across a reload
// keeps working on the old proxy, a new one goes to the new proxy, and
// the old proxy retires once the session closes.
func TestReloadTCPSessionFinishesOnOld(t *testing.T) {
	// Checked after the cleanups, which stop the echo server.
	leaks := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, leaks) })
	echo := tcpServer(t, echoConn)
	cfg := testConfig(conf.ModeTCP, []string{echo}, nil)
	p, err := New(cfg, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	addr := p.Frontends[0].Addrs()[0].String()
	roundTrip := func(c net.Conn, br *bufio.Reader, msg string) {
		t.Helper()
		c.SetDeadline(time.Now().Add(5 * time.Second))
		if _, err := io.WriteString(c, msg+"\n"); err != nil {
			t.Fatal(err)
		}
		line, err := br.ReadString('\n')
		if err != nil || line != msg+"\n" {
			t.Fatalf("echo: got %q %v, want %q", line, err, msg)
		}
	}
	c1, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	br1 := bufio.NewReader(c1)
	roundTrip(c1, br1, "before")

	next := reloadTo(t, p, keepBind(testConfig(conf.ModeTCP, []string{echo}, nil), p))
	retired := make(chan error, 1)
	go func() { retired <- next.Retire(context.Background(), p) }()
	// The Runtime API sees the old proxy's sessions once Retire has
	// begun (it may not have on a loaded machine by the checks below).
	waitFor(t, 5*time.Second, "Retire to begin", func() bool { return next.retiring.Load() == p })

	roundTrip(c1, br1, "during") // still relayed by the old proxy
	c2, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatalf("new connection after the reload: %v", err)
	}
	roundTrip(c2, bufio.NewReader(c2), "new")
	select {
	case <-retired:
		t.Fatal("the old proxy retired with a TCP session in flight")
	default:
	}
	if got := next.Frontends[0].Counters.Scur.Load(); got != 1 {
		t.Errorf("new proxy's scur: got %d, want 1 (only the new session)", got)
	}
	// The new proxy's Runtime API sees both sessions, and shuts down the
	// old one's.
	var old uintptr
	srcs := map[string]bool{}
	for _, s := range next.Sessions() {
		srcs[s.Src.String()] = true
		if s.Src.String() == c1.LocalAddr().String() {
			old = s.ID
		}
	}
	if len(srcs) != 2 || !srcs[c1.LocalAddr().String()] || !srcs[c2.LocalAddr().String()] {
		t.Errorf("sessions seen by the new proxy: %v, want %s and %s", srcs, c1.LocalAddr(), c2.LocalAddr())
	}
	if !next.ShutdownSession(old) {
		t.Fatal("shutdown session: the old proxy's session not found")
	}
	c1.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := br1.ReadString('\n'); err != io.EOF {
		t.Errorf("the old session after its shutdown: %v, want EOF", err)
	}
	c1.Close()
	if err := <-retired; err != nil {
		t.Errorf("Retire: %v", err)
	}
	c2.Close()
	next.Shutdown(context.Background())
}

// TestReloadInheritsServerState covers what inherit keeps and what the
// file wins over.
func TestReloadInheritsServerState(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	cfg := testConfig(conf.ModeHTTP, []string{"127.0.0.1:1", "127.0.0.1:2", "127.0.0.1:3"}, []int{10, 10, 10})
	old, err := New(cfg, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	b := old.Backends[0]
	b.SetAdmin(b.Servers()[0], AdminDrain)
	b.SetWeight(b.Servers()[1], 3)
	b.SetWeight(b.Servers()[2], 4)
	b.SetAddr(b.Servers()[2], "127.0.0.1:9")
	cfg.Backends[0].Servers[1].Slowstart = time.Minute
	b.mu.Lock()
	rampStart := time.Now().Add(-20 * time.Second) // a third into its slowstart
	b.Servers()[1].bal.rampStart = rampStart
	b.mu.Unlock()
	b.Counters.Stot.Store(41)
	b.Servers()[0].Counters.Stot.Store(40)
	old.Frontends[0].Counters.ReqTot.Store(99)
	old.Frontends[0].SSL.Sess.Store(12)
	old.Frontends[0].SSL.FailedHandshake.Store(3)
	old.Frontends[0].ProxyErrors.Store(2)
	b.SSL.ReusedSess.Store(5)
	b.Servers()[0].SSL.Sess.Store(6)

	next := testConfig(conf.ModeHTTP, []string{"127.0.0.1:1", "127.0.0.1:2", "127.0.0.1:3", "127.0.0.1:4"}, []int{10, 10, 20, 10})
	next.Backends[0].Servers[1].Slowstart = time.Minute
	p, err := NewFrom(old, next, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	nb := p.Backends[0]
	tests := []struct {
		name      string
		got, want any
	}{
		{"s1 admin (runtime DRAIN kept)", nb.Servers()[0].Admin(), AdminDrain},
		{"s2 weight (runtime kept)", nb.Servers()[1].UserWeight.Load(), int32(3)},
		{"s3 weight (file changed: file wins)", nb.Servers()[2].UserWeight.Load(), int32(20)},
		{"s3 address (runtime kept)", nb.Servers()[2].Addr(), "127.0.0.1:9"},
		{"s4 (new) admin", nb.Servers()[3].Admin(), AdminReady},
		{"backend stot", nb.Counters.Stot.Load(), int64(41)},
		{"s1 stot", nb.Servers()[0].Counters.Stot.Load(), int64(40)},
		{"frontend req_tot", p.Frontends[0].Counters.ReqTot.Load(), int64(99)},
		{"frontend ssl", p.Frontends[0].SSL.Values(), SSLValues{Sess: 12, FailedHandshake: 3}},
		{"frontend proxy errors", p.Frontends[0].ProxyErrors.Load(), int64(2)},
		{"backend ssl", nb.SSL.Values(), SSLValues{ReusedSess: 5}},
		{"s1 ssl", nb.Servers()[0].SSL.Values(), SSLValues{Sess: 6}},
		{"s1 usable (DRAIN: no)", nb.Servers()[0].bal.usable, false},
	}
	nb.mu.Lock()
	ramp, w := nb.Servers()[1].bal.rampStart, nb.Servers()[1].lb.Weight
	if nb.ramp != nil { // the next slowstart step: not in this test
		nb.ramp()
		nb.ramp = nil
	}
	nb.mu.Unlock()
	if !ramp.Equal(rampStart) {
		t.Errorf("s2 slowstart: ramp started %v, want %v (kept)", ramp, rampStart)
	}
	if w >= 3*lb.WeightScale || w <= 0 {
		t.Errorf("s2 slowstart: weight %d, want a part of 3*%d while ramping", w, lb.WeightScale)
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s: got %v, want %v", tt.name, tt.got, tt.want)
		}
	}
	// Counted on old after the new proxy was built: added by Retire.
	b.Counters.Stot.Add(2)
	if err := p.Retire(context.Background(), old); err != nil {
		t.Fatal(err)
	}
	if got := nb.Counters.Stot.Load(); got != 43 {
		t.Errorf("backend stot after Retire: got %d, want 43", got)
	}
	p.Shutdown(context.Background())
}

// TestReloadStickTables: a table whose definition stays keeps its entries;
// one whose size changed starts empty.
func TestReloadStickTables(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	text := `
[[frontend]]
name = "www"
bind = ["127.0.0.1:0"]
default_backend = "web"
[[backend]]
name = "web"
stick_table = { type = "ip", size = %d }
stick = ["on src"]
[[backend.server]]
name = "s1"
address = "127.0.0.1:1"
`
	parse := func(size int) *conf.Config {
		cfg, err := conf.Parse("t.toml", []byte(fmt.Sprintf(text, size)))
		if err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	old, err := New(parse(100), zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	k, err := old.Table("web").ParseKey("10.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	old.Table("web").Release(old.Table("web").Get(k))
	same, err := NewFrom(old, parse(100), zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	if got := same.Table("web").Used(); got != 1 {
		t.Errorf("same definition: %d entries, want 1 (kept)", got)
	}
	bigger, err := NewFrom(old, parse(200), zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	if got := bigger.Table("web").Used(); got != 0 {
		t.Errorf("size changed: %d entries, want 0 (new table)", got)
	}
	for _, p := range []*Proxy{old, same, bigger} {
		p.Shutdown(context.Background())
	}
}

// TestReloadBindInUse: a new bind that cannot be opened fails the reload
// and the old proxy keeps its listener and serves.
func TestReloadBindInUse(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	u := newUpstream(t, "s1")
	defer u.Close()
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	old, err := New(testConfig(conf.ModeHTTP, []string{u.addr()}, nil), zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	if err := old.Start(); err != nil {
		t.Fatal(err)
	}
	addr := old.Frontends[0].Addrs()[0].String()
	cfg := keepBind(testConfig(conf.ModeHTTP, []string{u.addr()}, nil), old)
	cfg.Frontends[0].Binds = append(cfg.Frontends[0].Binds, busy.Addr().String())
	p, err := NewFrom(old, cfg, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	if err := p.StartFrom(old); err == nil || !strings.Contains(err.Error(), "address already in use") {
		t.Fatalf("StartFrom with a busy bind: got %v, want address already in use", err)
	}
	p.Shutdown(context.Background())
	resp, err := http.Get("http://" + addr + "/")
	if err != nil {
		t.Fatalf("old proxy after a failed reload: %v", err)
	}
	resp.Body.Close()
	http.DefaultClient.CloseIdleConnections()
	old.Shutdown(context.Background())
}
