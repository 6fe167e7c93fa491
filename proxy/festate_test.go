package proxy

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/fulcrum-proxy/fulcrum/conf"
	"github.com/fulcrum-proxy/fulcrum/proxy/syslog"
)

// A frontend paused (disable frontend) at a reload accepts again on the
// new configuration, as HAProxy's new process starts every frontend
// enabled; a shut down one's port is opened again.
func TestPausedFrontendReload(t *testing.T) {
	up := newUpstream(t, "a")
	for _, how := range []string{"pause", "shutdown"} {
		t.Run(how, func(t *testing.T) {
			cfg := testConfig(conf.ModeHTTP, []string{up.addr()}, nil)
			addr := freeAddr(t)
			cfg.Frontends[0].Binds = []string{addr}
			p, _ := startProxy(t, cfg)
			fe := p.Frontends[0]
			if how == "pause" {
				if err := fe.Pause(); err != nil {
					t.Fatal(err)
				}
			} else if err := fe.Shutdown(); err != nil {
				t.Fatal(err)
			}
			// A closed listener's socket goes once no Accept holds it
			// (the epoll layer): a dial just before may be reset.
			waitFor(t, 5*time.Second, "connections refused", func() bool {
				c, err := net.DialTimeout("tcp", addr, 5*time.Second)
				if c != nil {
					c.Close()
				}
				return errors.Is(err, syscall.ECONNREFUSED)
			})
			next := testConfig(conf.ModeHTTP, []string{up.addr()}, nil)
			next.Frontends[0].Binds = []string{addr}
			np := reloadTo(t, p, next)
			defer np.Shutdown(t.Context())
			c := &http.Client{Timeout: 10 * time.Second}
			resp, err := c.Get("http://" + addr + "/")
			if err != nil {
				t.Fatalf("after the reload: %v", err)
			}
			resp.Body.Close()
			if got := np.Frontends[0].State(); got != "OPEN" {
				t.Errorf("state %s after the reload, want OPEN", got)
			}
		})
	}
}

// A bind on port 0 loses its port when paused (Linux keeps only a port
// asked for): enabling it fails, and the frontend stays paused rather
// than listen on another port.
func TestPausedPortZero(t *testing.T) {
	up := newUpstream(t, "a")
	p, addr := startProxy(t, testConfig(conf.ModeHTTP, []string{up.addr()}, nil))
	fe := p.Frontends[0]
	if err := fe.Pause(); err != nil {
		t.Fatal(err)
	}
	if err := fe.Resume(); err == nil {
		t.Fatal("Resume of a port-0 bind succeeded")
	}
	if got := fe.State(); got != "PAUSED" {
		t.Errorf("state %s, want PAUSED", got)
	}
	if _, err := net.DialTimeout("tcp", addr, 5*time.Second); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("dial %v, want refused", err)
	}
}

// shutdown frontend ends its HTTP connections as HAProxy's stop_proxy
// (measured): each after its next response, which says Connection:
// close, the idle one's next request included.
func TestShutdownFrontendEndsConnections(t *testing.T) {
	held, release := make(chan struct{}, 1), make(chan struct{})
	var once sync.Once
	free := func() { once.Do(func() { close(release) }) }
	up := tcpServer(t, func(c *net.TCPConn) {
		br := bufio.NewReader(c)
		for {
			req, err := http.ReadRequest(br)
			if err != nil {
				return
			}
			if req.URL.Path == "/hold" {
				held <- struct{}{}
				<-release
			}
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
		}
	})
	t.Cleanup(free) // before the server's own cleanup (LIFO): a failed test must not leave it waiting
	p, addr := startProxy(t, testConfig(conf.ModeHTTP, []string{up}, nil))
	idle, busy := dialRaw(t, addr), dialRaw(t, addr)
	idle.do(t, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	busy.c.SetDeadline(time.Now().Add(10 * time.Second))
	io.WriteString(busy.c, "GET /hold HTTP/1.1\r\nHost: x\r\n\r\n")
	<-held
	if err := p.Frontends[0].Shutdown(); err != nil {
		t.Fatal(err)
	}
	if resp := idle.do(t, "GET / HTTP/1.1\r\nHost: x\r\n\r\n"); resp.StatusCode != 200 || !resp.Close {
		t.Errorf("idle connection's next request: %d, close %v; want 200 with Connection: close", resp.StatusCode, resp.Close)
	}
	idle.c.SetReadDeadline(time.Now().Add(2 * time.Second)) // below the keep-alive timeout (5 s)
	if b, err := io.ReadAll(idle.br); len(b) != 0 || err != nil {
		t.Errorf("idle connection after its response: %q, %v; want closed", b, err)
	}
	free()
	resp, err := http.ReadResponse(busy.br, nil)
	if err != nil || resp.StatusCode != 200 || !resp.Close {
		t.Fatalf("busy connection: %v, %v; want its 200 with Connection: close", resp, err)
	}
	io.Copy(io.Discard, resp.Body)
	if b, err := io.ReadAll(busy.br); len(b) != 0 || err != nil {
		t.Errorf("after the response: %q, %v; want closed", b, err)
	}
}

// Pause, resume and stop reach the [[global.log]] targets as HAProxy's
// warnings ("Paused frontend fe.", "Resumed frontend fe.", "Proxy fe
// stopped (cumulated conns: FE: n, BE: m).").
func TestFrontendEventsLogged(t *testing.T) {
	sink := newSyslogSink(t)
	up := newUpstream(t, "a")
	cfg := testConfig(conf.ModeHTTP, []string{up.addr()}, nil)
	cfg.Frontends[0].Binds = []string{freeAddr(t)}
	cfg.Global.Log = []conf.LogTarget{{Target: syslog.Target{Network: "udp", Address: sink.addr(),
		Format: "rfc3164", Facility: 16, MaxLevel: 7, MinLevel: 0, Len: 1024}}}
	p, addr := startProxy(t, cfg)
	dialRaw(t, addr).do(t, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	fe := p.Frontends[0]
	for _, f := range []func() error{fe.Pause, fe.Resume, fe.Shutdown} {
		if err := f(); err != nil {
			t.Fatal(err)
		}
	}
	for i, want := range []string{"Paused frontend www.", "Resumed frontend www.", "Proxy www stopped (cumulated conns: FE: 1, BE: 0)."} {
		if got := sink.next(t, i); got != want {
			t.Errorf("event %d: %q, want %q", i, got, want)
		}
	}
	if line := sink.nextRaw(t, 0); !strings.HasPrefix(line, "<132>") {
		t.Errorf("%q: want local0.warning (<132>)", line)
	}
}
