package resolve

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fulcrum-proxy/fulcrum/conf"
	"github.com/fulcrum-proxy/fulcrum/internal/testutil"
	"github.com/fulcrum-proxy/fulcrum/proxy"
	"github.com/rs/zerolog"
)

// upstream is an HTTP server that answers its name, after delay.
type upstream struct {
	*httptest.Server
	name  string
	delay atomic.Int64 // ns
	hits  atomic.Int64
}

func newUpstream(t *testing.T, name string) *upstream { return newUpstreamOn(t, name, nil) }

// newUpstreamOn is newUpstream listening on l (nil: a new 127.0.0.1 port).
func newUpstreamOn(t *testing.T, name string, l net.Listener) *upstream {
	t.Helper()
	u := &upstream{name: name}
	u.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u.hits.Add(1)
		if d := time.Duration(u.delay.Load()); d > 0 {
			time.Sleep(d)
		}
		io.WriteString(w, name)
	}))
	if l != nil {
		u.Listener.Close()
		u.Listener = l
	}
	u.Start()
	t.Cleanup(u.Close)
	return u
}

func (u *upstream) port() int { return u.Listener.Addr().(*net.TCPAddr).Port }

// discovery is a proxy whose backend "web" is a server_template filled
// from the SRV records of a dnsmasq, with its resolution running.
type discovery struct {
	p      *proxy.Proxy
	addr   string // the frontend
	dns    *testutil.Dnsmasq
	ups    map[string]*upstream
	client *http.Client
}

// srvHost is an srv-host value for upstream u under target name with an
// SRV weight.
func srvHost(u *upstream, target string, weight int) string {
	return fmt.Sprintf("_http._tcp.svc.test,%s,%d,0,%d", target, u.port(), weight)
}

// startDiscovery starts n upstreams a1..an, dnsmasq with the given
// srv-host records (built by records from them), and a proxy with a
// template of slots servers.
func startDiscovery(t *testing.T, n, slots int, records func(ups map[string]*upstream) []string) *discovery {
	t.Helper()
	d := &discovery{ups: map[string]*upstream{}}
	var hosts []string
	for i := 1; i <= n; i++ {
		name := fmt.Sprintf("a%d", i)
		d.ups[name] = newUpstream(t, name)
		hosts = append(hosts, fmt.Sprintf("127.0.0.1 %s.svc.test", name))
	}
	d.dns = testutil.StartDnsmasq(t, hosts, records(d.ups))
	cfg := fmt.Sprintf(`
[[resolvers]]
name = "dns"
nameserver = ["%s"]
accepted_payload_size = 4096
timeout_resolve = "50ms"
timeout_retry = "200ms"
hold_obsolete = "300ms"
hold_timeout = "60s"

[[frontend]]
name = "fe"
bind = ["127.0.0.1:0"]
default_backend = "web"

[[backend]]
name = "web"
retries = 0
[[backend.server_template]]
prefix = "srv"
count = %d
fqdn = "_http._tcp.svc.test"
resolvers = "dns"
init_addr = "none"
`, d.dns.Addr, slots)
	c, err := conf.Parse("e2e.toml", []byte(cfg))
	if err != nil {
		t.Fatal(err)
	}
	d.p, err = proxy.New(c, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	m := New(d.p, zerolog.Nop())
	if err := m.Init(nil, nil); err != nil {
		t.Fatal(err)
	}
	if err := d.p.Start(); err != nil {
		t.Fatal(err)
	}
	m.Start()
	t.Cleanup(func() {
		m.Stop()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		d.p.Shutdown(ctx)
	})
	d.addr = d.p.Frontends[0].Addrs()[0].String()
	tr := &http.Transport{MaxIdleConnsPerHost: 64}
	t.Cleanup(tr.CloseIdleConnections)
	d.client = &http.Client{Transport: tr, Timeout: 10 * time.Second}
	return d
}

// get sends one request and returns the status and the upstream's name.
func (d *discovery) get() (int, string, error) {
	resp, err := d.client.Get("http://" + d.addr + "/")
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

// slots returns the template's servers as "name addr-target MAINT?", in
// order, from the snapshot.
func (d *discovery) slots() string {
	var out []string
	for _, ss := range d.p.Snapshot().Backends[0].Servers {
		target := "-"
		if ss.Resolution.FQDN != "" {
			target = strings.TrimSuffix(ss.Resolution.FQDN, ".svc.test")
		}
		out = append(out, fmt.Sprintf("%s=%s %s", ss.Name, target, ss.Status()))
	}
	return strings.Join(out, ", ")
}

// filled reports whether the slots holding each target are exactly want
// ("a1 a2 a3"), each UP, the others in MAINT (resolution).
func (d *discovery) filled(want string) bool {
	var got []string
	for _, ss := range d.p.Snapshot().Backends[0].Servers {
		switch {
		case ss.Resolution.Maint:
		case ss.Status() == "no check":
			got = append(got, strings.TrimSuffix(ss.Resolution.FQDN, ".svc.test"))
		default:
			return false
		}
	}
	have := map[string]bool{}
	for _, g := range got {
		have[g] = true
	}
	ws := strings.Fields(want)
	if len(ws) != len(got) {
		return false
	}
	for _, w := range ws {
		if !have[w] {
			return false
		}
	}
	return true
}

// load runs workers keep-alive clients until stop is closed, and returns
// the count of requests per upstream and of failures.
func (d *discovery) load(workers int, stop <-chan struct{}) func() (map[string]int, []string) {
	var mu sync.Mutex
	hits := map[string]int{}
	var failures []string
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; n < 100000; n++ { // bounded even if stop never comes
				select {
				case <-stop:
					return
				default:
				}
				code, body, err := d.get()
				mu.Lock()
				if err != nil || code != 200 {
					failures = append(failures, fmt.Sprintf("%d %v %q", code, err, body))
				} else {
					hits[body]++
				}
				mu.Unlock()
			}
		}()
	}
	return func() (map[string]int, []string) {
		wg.Wait()
		return hits, failures
	}
}

// TestDiscoverySRV: dnsmasq publishes three SRV records; they fill three
// of four slots and the traffic follows their weights exactly; a record
// removed empties its slot after hold_obsolete while its requests in
// flight complete, with no failed request under load; two records added
// fill the free slots.
func TestDiscoverySRV(t *testing.T) {
	d := startDiscovery(t, 5, 4, func(ups map[string]*upstream) []string {
		return []string{srvHost(ups["a1"], "a1.svc.test", 256), srvHost(ups["a2"], "a2.svc.test", 512), srvHost(ups["a3"], "a3.svc.test", 768)}
	})
	waitFor(t, 15*time.Second, "three slots filled", func() bool { return d.filled("a1 a2 a3") })

	// Weights 256, 512, 768 map to 1, 2, 3: roundrobin sends exactly
	// 100, 200 and 300 of 600 requests.
	counts := map[string]int{}
	for range 600 {
		code, body, err := d.get()
		if err != nil || code != 200 {
			t.Fatalf("request: %d %v", code, err)
		}
		counts[body]++
	}
	if counts["a1"] != 100 || counts["a2"] != 200 || counts["a3"] != 300 {
		t.Fatalf("requests per upstream: got %v, want a1:100 a2:200 a3:300 (%s)", counts, d.slots())
	}

	// a3 answers slowly: requests are in flight on it when its record goes.
	d.ups["a3"].delay.Store(int64(50 * time.Millisecond))
	stop := make(chan struct{})
	wait := d.load(8, stop)
	waitFor(t, 15*time.Second, "requests on a3", func() bool { return d.ups["a3"].hits.Load() > 320 })
	d.dns.SetSRV(srvHost(d.ups["a1"], "a1.svc.test", 256), srvHost(d.ups["a2"], "a2.svc.test", 512))
	waitFor(t, 15*time.Second, "a3's slot emptied", func() bool { return d.filled("a1 a2") })
	// Requests picked for a3 before its slot emptied finish there; then
	// a3 gets no more.
	waitFor(t, 15*time.Second, "a3's requests in flight to finish", func() bool {
		for _, ss := range d.p.Snapshot().Backends[0].Servers {
			if ss.Resolution.Maint && ss.Scur > 0 {
				return false
			}
		}
		return true
	})
	emptied := d.ups["a3"].hits.Load()
	// Two records appear: they fill the free slots and take traffic.
	d.dns.SetSRV(srvHost(d.ups["a1"], "a1.svc.test", 256), srvHost(d.ups["a2"], "a2.svc.test", 512),
		srvHost(d.ups["a4"], "a4.svc.test", 256), srvHost(d.ups["a5"], "a5.svc.test", 256))
	waitFor(t, 15*time.Second, "a4 and a5 in slots", func() bool { return d.filled("a1 a2 a4 a5") })
	waitFor(t, 15*time.Second, "traffic on a4 and a5", func() bool { return d.ups["a4"].hits.Load() > 0 && d.ups["a5"].hits.Load() > 0 })
	close(stop)
	hits, failures := wait()
	if len(failures) > 0 {
		t.Fatalf("%d failed requests under load, first: %s", len(failures), failures[0])
	}
	if got := d.ups["a3"].hits.Load(); got != emptied {
		t.Errorf("a3 got %d requests after its slot was emptied", got-emptied)
	}
	t.Logf("under load: %v; slots: %s", hits, d.slots())
}

// TestDiscoveryNameserverDown: when the name server stops answering, the
// servers keep their addresses for hold_timeout and the traffic flows.
func TestDiscoveryNameserverDown(t *testing.T) {
	d := startDiscovery(t, 2, 2, func(ups map[string]*upstream) []string {
		return []string{srvHost(ups["a1"], "a1.svc.test", 1), srvHost(ups["a2"], "a2.svc.test", 1)}
	})
	waitFor(t, 15*time.Second, "two slots filled", func() bool { return d.filled("a1 a2") })
	sent := func() int64 { return d.p.Resolvers[0].Nameservers[0].Counters.Sent.Load() }
	d.dns.Stop()
	// Several resolutions fail (timeout_retry 200ms, 3 tries): the slots
	// stay and every request succeeds.
	before := sent()
	for n := 0; sent() < before+6; n++ {
		code, _, err := d.get()
		if err != nil || code != 200 {
			t.Fatalf("request %d with the name server down: %d %v (%s)", n, code, err, d.slots())
		}
		if n > 100000 {
			t.Fatal("no query sent")
		}
	}
	if !d.filled("a1 a2") {
		t.Fatalf("slots changed while holding: %s", d.slots())
	}
	if c := &d.p.Resolvers[0].Nameservers[0].Counters; c.Timeout.Load() == 0 && c.SndError.Load() == 0 {
		t.Errorf("no timeout or send error counted: %s", counters(c))
	}
}

// TestDiscoveryAddressChange: a host name server follows its name's
// address (dnsmasq's hosts file, SIGHUP); new connections go to the new
// address while a request in flight finishes on the old one.
func TestDiscoveryAddressChange(t *testing.T) {
	u1 := newUpstream(t, "one")
	// Both upstreams on one port, on two loopback addresses.
	l2, err := net.Listen("tcp", fmt.Sprintf("127.0.0.2:%d", u1.port()))
	if err != nil {
		t.Skipf("cannot listen on 127.0.0.2:%d: %v", u1.port(), err)
	}
	newUpstreamOn(t, "two", l2)
	dm := testutil.StartDnsmasq(t, []string{"127.0.0.1 app.test"}, nil)
	c, err := conf.Parse("e2e.toml", []byte(fmt.Sprintf(`
[[resolvers]]
name = "dns"
nameserver = ["%s"]
timeout_resolve = "50ms"
timeout_retry = "200ms"

[[frontend]]
name = "fe"
bind = ["127.0.0.1:0"]
default_backend = "web"

[[backend]]
name = "web"
http_reuse = "always"
[[backend.server]]
name = "app"
address = "app.test:%d"
resolvers = "dns"
resolve_prefer = "ipv4"
init_addr = "none"
`, dm.Addr, u1.port())))
	if err != nil {
		t.Fatal(err)
	}
	p, err := proxy.New(c, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	m := New(p, zerolog.Nop())
	if err := m.Init(nil, nil); err != nil {
		t.Fatal(err)
	}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	m.Start()
	defer func() {
		m.Stop()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		p.Shutdown(ctx)
	}()
	s := p.Backend("web").Server("app")
	want1 := fmt.Sprintf("127.0.0.1:%d", u1.port())
	waitFor(t, 15*time.Second, "the first address", func() bool { return s.Addr() == want1 })
	client := &http.Client{Transport: &http.Transport{}, Timeout: 10 * time.Second}
	defer client.Transport.(*http.Transport).CloseIdleConnections()
	front := "http://" + p.Frontends[0].Addrs()[0].String() + "/"
	get := func() string {
		resp, err := client.Get(front)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	if got := get(); got != "one" {
		t.Fatalf("before: got %q, want one", got)
	}
	// A slow request in flight on the first address when it moves.
	u1.delay.Store(int64(300 * time.Millisecond))
	inflight := make(chan string, 1)
	other := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	go func() {
		resp, err := other.Get(front)
		if err != nil {
			inflight <- err.Error()
			return
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		inflight <- string(b)
	}()
	waitFor(t, 15*time.Second, "the request in flight", func() bool { return u1.hits.Load() == 2 })
	dm.SetHosts("127.0.0.2 app.test")
	waitFor(t, 15*time.Second, "the new address", func() bool { return s.Addr() == fmt.Sprintf("127.0.0.2:%d", u1.port()) })
	for i := range 5 {
		if got := get(); got != "two" {
			t.Fatalf("after the change, request %d: got %q, want two (pooled connections to the old address must not serve)", i, got)
		}
	}
	if got := <-inflight; got != "one" {
		t.Errorf("the request in flight: got %q, want one (it finishes on the old address)", got)
	}
	// Its connection does not go back to the pool: the next requests
	// still reach the new address.
	for range 3 {
		if got := get(); got != "two" {
			t.Fatalf("got %q, want two", got)
		}
	}
}

// TestInitAddrNoneDNSDown: with init_addr none and no name server
// answering, the servers start in MAINT (resolution), stay there, and
// requests get 503 at once.
func TestInitAddrNoneDNSDown(t *testing.T) {
	dead, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	deadAddr := dead.LocalAddr().String()
	dead.Close()
	c, err := conf.Parse("e2e.toml", []byte(resolversConf(deadAddr)+`
[[frontend]]
name = "fe"
bind = ["127.0.0.1:0"]
default_backend = "web"

[[backend]]
name = "web"
[[backend.server_template]]
prefix = "srv"
count = 2
fqdn = "_http._tcp.svc.test"
resolvers = "dns"
init_addr = "none"
[[backend.server]]
name = "h"
address = "app.test:80"
resolvers = "dns"
init_addr = "none"
`))
	if err != nil {
		t.Fatal(err)
	}
	p, err := proxy.New(c, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	m := New(p, zerolog.Nop())
	if err := m.Init(nil, nil); err != nil {
		t.Fatal(err)
	}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	m.Start()
	defer func() {
		m.Stop()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		p.Shutdown(ctx)
	}()
	ns := &p.Resolvers[0].Nameservers[0].Counters
	waitFor(t, 15*time.Second, "failed resolutions", func() bool { return ns.Sent.Load()+ns.SndError.Load() >= 6 })
	for _, ss := range p.Snapshot().Backends[0].Servers {
		if got := ss.Status(); got != "MAINT (resolution)" || ss.Addr != "" {
			t.Errorf("%s: status %q, address %q; want MAINT (resolution) without address", ss.Name, got, ss.Addr)
		}
	}
	resp, err := http.Get("http://" + p.Frontends[0].Addrs()[0].String() + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 503 {
		t.Errorf("status %d, want 503", resp.StatusCode)
	}
}
