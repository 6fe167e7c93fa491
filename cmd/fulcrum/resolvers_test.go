package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fulcrum-proxy/fulcrum/conf"
	"github.com/miekg/dns"
)

// fakeDNS is an in-process name server on 127.0.0.1 (UDP) that answers A
// queries for app.test with addr while answering is on, and nothing at
// all while it is off.
type fakeDNS struct {
	addr      string
	answering atomic.Bool
	ip        string
}

func startFakeDNS(t *testing.T, ip string) *fakeDNS {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeDNS{addr: pc.LocalAddr().String(), ip: ip}
	f.answering.Store(true)
	started := make(chan struct{})
	srv := &dns.Server{PacketConn: pc, NotifyStartedFunc: func() { close(started) },
		Handler: dns.HandlerFunc(func(w dns.ResponseWriter, r *dns.Msg) {
			if !f.answering.Load() {
				return
			}
			m := new(dns.Msg)
			m.SetReply(r)
			if q := r.Question[0]; q.Qtype == dns.TypeA && strings.EqualFold(q.Name, "app.test.") {
				rr, _ := dns.NewRR("app.test. 1 IN A " + f.ip)
				m.Answer = append(m.Answer, rr)
			}
			w.WriteMsg(m)
		})}
	go srv.ActivateAndServe()
	<-started
	t.Cleanup(func() { srv.Shutdown() })
	return f
}

// dnsConfig is a configuration whose one server resolves app.test through
// the name server at ns, on port, with init_addr initAddr.
func dnsConfig(sock, bind, ns string, port int, initAddr, state string) string {
	return fmt.Sprintf(`
[global]
state_file = %q

[[global.stats_socket]]
path = %q
level = "admin"

[[resolvers]]
name = "dns"
nameserver = [%q]
timeout_resolve = "50ms"
timeout_retry = "100ms"
hold_timeout = "30s"

[[frontend]]
name = "www"
bind = [%q]
default_backend = "web"

[[backend]]
name = "web"
[[backend.server]]
name = "app"
address = "app.test:%d"
resolvers = "dns"
resolve_prefer = "ipv4"
init_addr = %q
`, state, sock, ns, bind, port, initAddr)
}

// TestResolversReloadAndRestart: a server whose address DNS gave keeps it
// through a reload (without asking DNS again) and through a restart with
// the state file (init_addr "last") while the name server is down; an
// init_addr list that finds no address stops the start with an error.
func TestResolversReloadAndRestart(t *testing.T) {
	noLeaks(t)
	up := upstreams(t, 1)[0]
	_, portStr, _ := net.SplitHostPort(up)
	var port int
	fmt.Sscan(portStr, &port)
	ns := startFakeDNS(t, "127.0.0.1")
	dir := t.TempDir()
	sock, state, path := filepath.Join(dir, "a.sock"), filepath.Join(dir, "state"), filepath.Join(dir, "fulcrum.toml")

	run := func(initAddr string, check func(r *reloader, front string)) error {
		t.Helper()
		if err := os.WriteFile(path, []byte(dnsConfig(sock, "127.0.0.1:0", ns.addr, port, initAddr, state)), 0o644); err != nil {
			t.Fatal(err)
		}
		cfg, err := conf.Load(path)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		started := make(chan *reloader, 1)
		done := make(chan error, 1)
		go func() {
			done <- serveWith(ctx, cfg, io.Discard, serveOptions{started: func(r *reloader) { started <- r }})
		}()
		var r *reloader
		select {
		case r = <-started:
		case err := <-done:
			return err
		}
		front := r.current().Frontends[0].Addrs()[0].String()
		// Reloads keep the listener: the file names its port.
		os.WriteFile(path, []byte(dnsConfig(sock, front, ns.addr, port, initAddr, state)), 0o644)
		check(r, front)
		cancel()
		return <-done
	}
	get := func(front string) int {
		resp, err := http.Get("http://" + front + "/")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		io.Copy(io.Discard, resp.Body)
		return resp.StatusCode
	}
	want := fmt.Sprintf("127.0.0.1:%d", port)
	err := run("last,none", func(r *reloader, front string) {
		app := func() string { return r.current().Backend("web").Server("app").Addr() }
		waitFor(t, 5*time.Second, "the address from DNS", func() bool { return app() == want })
		// The address is stored before the server re-enters the balancer
		// (one ApplyDNS, under the backend's lock): a request in between
		// finds no server (the fresh-clone CI run saw a 503 there).
		waitFor(t, 5*time.Second, "the server in use", func() bool { return get(front) == 200 })
		ns.answering.Store(false)
		if err := r.reload(); err != nil {
			t.Fatal(err)
		}
		if got := app(); got != want || r.current().Backend("web").Server("app").ResolutionMaint() {
			t.Fatalf("after the reload: address %q, resolution maint %v; want %s in use", got, r.current().Backend("web").Server("app").ResolutionMaint(), want)
		}
		if code := get(front); code != 200 {
			t.Fatalf("after the reload: status %d", code)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	// Restart, the name server still down: the state file's address.
	err = run("last,none", func(r *reloader, front string) {
		if got := r.current().Backend("web").Server("app").Addr(); got != want {
			t.Fatalf("after the restart: address %q, want %s (init_addr last)", got, want)
		}
		if code := get(front); code != 200 {
			t.Fatalf("after the restart: status %d", code)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	os.Remove(state)
	err = run("last", func(r *reloader, front string) { t.Error("started without an address") })
	if err == nil || !strings.Contains(err.Error(), `backend "web": server "app": could not resolve address 'app.test' (init_addr last)`) {
		t.Errorf("start without any address: got %v", err)
	}
}
