package proxy

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"go.uber.org/goleak"

	"github.com/fulcrum-proxy/fulcrum/conf"
)

// keepAliveLoop sends requests back to back on one connection, never
// retrying and never reconnecting (as wrk), two at a time when pipeline is
// set, until stop is closed. It records the X-Server of each response in
// last and the first error in errp.
type keepAliveLoop struct {
	ok   atomic.Int64
	last atomic.Value // string: the X-Server of the latest response
	err  atomic.Value // string: the first failure
}

func (k *keepAliveLoop) run(addr string, pipeline bool, stop <-chan struct{}) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		k.err.CompareAndSwap(nil, err.Error())
		return
	}
	defer c.Close()
	br := bufio.NewReader(c)
	req := "GET / HTTP/1.1\r\nHost: t\r\n\r\n"
	n := 1
	if pipeline {
		req += req
		n = 2
	}
	for range 1000000 {
		select {
		case <-stop:
			return
		default:
		}
		c.SetDeadline(time.Now().Add(10 * time.Second))
		if _, err := io.WriteString(c, req); err != nil {
			k.err.CompareAndSwap(nil, "write: "+err.Error())
			return
		}
		for range n {
			resp, err := http.ReadResponse(br, nil)
			if err == nil {
				_, err = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
			if err == nil && resp.StatusCode != 200 {
				err = fmt.Errorf("status %d", resp.StatusCode)
			}
			if err == nil && resp.Close {
				err = fmt.Errorf("the proxy closed the connection (Connection: close)")
			}
			if err != nil {
				k.err.CompareAndSwap(nil, err.Error())
				return
			}
			k.last.Store(resp.Header.Get("X-Server"))
			k.ok.Add(1)
		}
	}
}

// TestReloadKeepAliveConnectionsMove reloads 10 times, alternating between
// two configurations whose only server differs, while clients send
// requests back to back on one keep-alive connection each, one of them
// pipelining: no request fails, no connection is closed, and after each
// reload every connection is served by the new configuration (it moved to
// the new proxy, handoff.go), while the old proxies retire.
func TestReloadKeepAliveConnectionsMove(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	ups := []*upstream{newUpstream(t, "s1"), newUpstream(t, "s2")}
	for _, u := range ups {
		defer u.Close()
	}
	cfgFor := func(i int) *conf.Config {
		cfg := testConfig(conf.ModeHTTP, []string{ups[i%2].addr()}, nil)
		cfg.Backends[0].Servers[0].Name = ups[i%2].name
		return cfg
	}
	p, err := New(cfgFor(0), zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	addr := p.Frontends[0].Addrs()[0].String()

	const clients = 4
	loops := make([]*keepAliveLoop, clients)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i := range loops {
		loops[i] = &keepAliveLoop{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			loops[i].run(addr, i == 0, stop)
		}()
	}
	servedBy := func(name string) func() bool {
		return func() bool {
			for _, l := range loops {
				if l.err.Load() != nil {
					return true // reported below
				}
				if v, _ := l.last.Load().(string); v != name {
					return false
				}
			}
			return true
		}
	}
	waitFor(t, 10*time.Second, "every client served by s1", servedBy("s1"))
	var retired sync.WaitGroup
	for i := 1; i <= 10; i++ {
		next := reloadTo(t, p, keepBind(cfgFor(i), p))
		old := p
		p = next
		retired.Add(1)
		go func() {
			defer retired.Done()
			if err := next.Retire(context.Background(), old); err != nil {
				t.Errorf("Retire: %v", err)
			}
		}()
		waitFor(t, 10*time.Second, "every connection served by the new configuration", servedBy(ups[i%2].name))
	}
	// Every old proxy retires although the connections it accepted live on.
	retired.Wait()
	close(stop)
	wg.Wait()
	var total int64
	for i, l := range loops {
		if e := l.err.Load(); e != nil {
			t.Errorf("client %d (of %d requests): %v", i, l.ok.Load(), e)
		}
		total += l.ok.Load()
	}
	fe := p.Frontends[0]
	if got := fe.Counters.Stot.Load(); got != clients {
		t.Errorf("frontend stot: got %d, want %d (one connection per client, none reopened)", got, clients)
	}
	if got := fe.Counters.ReqTot.Load(); got != total {
		t.Errorf("frontend req_tot: got %d, want %d (every request, across the proxies)", got, total)
	}
	// The connections were closed by their clients: the new frontend, which
	// owns them all now, counts them out.
	waitFor(t, 10*time.Second, "frontend scur 0 after the clients closed", func() bool { return fe.Counters.Scur.Load() == 0 })
	p.Shutdown(context.Background())
}

// TestReloadRemovedBindClosesKeepAlive: a keep-alive connection accepted
// on a bind the new configuration removed is not moved: its next response
// says Connection: close, and the old proxy retires.
func TestReloadRemovedBindClosesKeepAlive(t *testing.T) {
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
	rc := dialRaw(t, p.Frontends[0].Addrs()[0].String())
	if resp := rc.do(t, "GET / HTTP/1.1\r\nHost: t\r\n\r\n"); resp.StatusCode != 200 || resp.Close {
		t.Fatalf("before the reload: status %d, close %v", resp.StatusCode, resp.Close)
	}
	// The new configuration binds another port: the old bind goes.
	next := reloadTo(t, p, testConfig(conf.ModeHTTP, []string{u.addr()}, nil))
	retired := make(chan error, 1)
	go func() { retired <- next.Retire(context.Background(), p) }()
	// The idle connection was not moved: the stop closed it.
	rc.c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := rc.br.ReadByte(); err == nil {
		t.Errorf("the connection on the removed bind got a byte, want it closed")
	}
	if err := <-retired; err != nil {
		t.Errorf("Retire: %v", err)
	}
	if got := next.Frontends[0].Counters.Scur.Load(); got != 0 {
		t.Errorf("new frontend scur: got %d, want 0 (nothing moved)", got)
	}
	next.Shutdown(context.Background())
}

// A keep-alive connection of a configuration being retired (a) must find
// where to move even when the next reload has already handed its
// successor's (b) listener to the newest configuration (c) but has not
// retired b yet. b linked to c only in Retire: in that window b no longer
// listened on the bind and had no successor, so the connection was closed
// after its request (TestReloadUnderLoad saw an extra dial now and then
// under a loaded machine).
func TestHandOffAcrossOverlappingReloads(t *testing.T) {
	u := newUpstream(t, "s1")
	a, err := New(testConfig(conf.ModeHTTP, []string{u.addr()}, nil), zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Start(); err != nil {
		t.Fatal(err)
	}
	addr := a.Frontends[0].Addrs()[0].String()
	b := reloadTo(t, a, keepBind(testConfig(conf.ModeHTTP, []string{u.addr()}, nil), a))
	b.linkSuccessors(a) // as b's Retire of a does first
	a.stopping.Store(true)
	c := reloadTo(t, b, keepBind(testConfig(conf.ModeHTTP, []string{u.addr()}, nil), b))
	cc := &clientConn{bind: &addr}
	if !a.Frontends[0].canHandOff(cc) {
		t.Errorf("a connection of the retiring configuration cannot move while the next reload is under way")
	}
	for _, p := range []*Proxy{c, b, a} {
		p.Shutdown(context.Background())
	}
}
