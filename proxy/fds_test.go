package proxy

import (
	"net/http"
	"testing"
	"time"

	"github.com/fulcrum-proxy/fulcrum/conf"
	"github.com/fulcrum-proxy/fulcrum/proxy/http1"
)

// Issue 16: idle pooled server connections were kept whatever the
// descriptors left (pool_max_conn is unlimited by default), so that near the
// descriptor limit new server connections failed with EMFILE (503s), and
// nothing kept the clients past what the descriptors allow in the backlog.
// With a bound of 6 descriptors (3 connections): pooled connections are
// closed to make room, the accounting matches the pools, and a fourth
// client waits unaccepted until one of three open ones leaves.
func TestIssue16DescriptorBudget(t *testing.T) {
	u := newUpstream(t, "s1")
	p, addr := startProxy(t, testConfig(conf.ModeHTTP, []string{u.addr()}, nil))
	p.LimitDescriptors(6)
	pool := &p.Backends[0].Servers()[0].up.Pool
	idle := pool.Len

	// One request per connection: under http_reuse safe each opens a
	// server connection that goes idle into the pool afterwards.
	for i := range 20 {
		rc := dialRaw(t, addr)
		if resp := rc.do(t, "GET / HTTP/1.1\r\nHost: x\r\n\r\n"); resp.StatusCode != 200 {
			t.Fatalf("client %d: status %d, want 200", i, resp.StatusCode)
		}
		rc.c.Close()
		// The accept loop holds the next connection's two before Accept.
		waitFor(t, 5*time.Second, "the client's descriptors to be returned", func() bool {
			return p.fds.slots.cur.Load() == int64(idle())+connFDs
		})
		if n := idle(); n > 6 {
			t.Fatalf("after client %d: %d idle pooled connections, want at most 6 (the bound)", i, n)
		}
	}
	if got, want := p.fds.idle.Load(), int64(idle()); got != want {
		t.Errorf("budget counts %d idle connections, the pool holds %d", got, want)
	}
	if n := u.conns.Load(); n < 20 {
		t.Errorf("%d server connections opened, want 20 (one per client under safe)", n)
	}

	// Three clients hold the 6 descriptors; a fourth waits in the backlog.
	var held []*rawClient
	for range 3 {
		rc := dialRaw(t, addr)
		if resp := rc.do(t, "GET / HTTP/1.1\r\nHost: x\r\n\r\n"); resp.StatusCode != 200 {
			t.Fatalf("held client: status %d", resp.StatusCode)
		}
		held = append(held, rc)
	}
	waitFor(t, 5*time.Second, "the accept loop to wait for descriptors", func() bool {
		return p.fds.slots.waiters.Load() == 1
	})
	if n := idle(); n != 0 {
		t.Errorf("%d idle pooled connections with 3 clients open, want 0 (no descriptor to spare)", n)
	}
	// The loop waits before accept(2): the fourth stays in the backlog.
	fourth := dialRaw(t, addr)
	if st := p.Frontends[0].Counters.Stot.Load(); st != 23 {
		t.Errorf("frontend sessions %d, want 23 (the fourth not accepted)", st)
	}
	held[0].c.Close()
	resp := fourth.do(t, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	if resp.StatusCode != http.StatusOK {
		t.Errorf("fourth client: status %d, want 200", resp.StatusCode)
	}
}

// A reload's proxy shares the descriptor budget of the one it replaces:
// they share the process's descriptor table.
func TestDescriptorBudgetSharedAcrossReload(t *testing.T) {
	u := newUpstream(t, "s1")
	cfg := testConfig(conf.ModeHTTP, []string{u.addr()}, nil)
	old, _ := startProxy(t, cfg)
	p, err := NewFrom(old, testConfig(conf.ModeHTTP, []string{u.addr()}, nil), nopLogger())
	if err != nil {
		t.Fatal(err)
	}
	defer p.Shutdown(contextBackground())
	if p.fds != old.fds {
		t.Fatal("the new proxy has its own descriptor budget")
	}
	if got := p.Backends[0].Servers()[0].up.Pool.Budget(); got != http1.Budget(p.fds) {
		t.Error("the new proxy's pools do not count in the budget")
	}
}
