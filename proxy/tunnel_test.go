package proxy

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/fulcrum-proxy/fulcrum/conf"
)

// wsServer switches protocols on an Upgrade request, then echoes the
// tunnel's bytes, or only reads them when the path is /quiet.
func wsServer(t *testing.T) string {
	t.Helper()
	return tcpServer(t, func(c *net.TCPConn) {
		c.SetDeadline(time.Now().Add(20 * time.Second))
		br := bufio.NewReader(c)
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		io.WriteString(c, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n")
		if req.URL.Path == "/quiet" {
			io.Copy(io.Discard, br)
			return
		}
		io.Copy(c, br)
	})
}

// A WebSocket is one request for the log and the counters, from its
// request to the tunnel's end (HAProxy 2.6, measured by a fresh-user
// trial: "101 145 ... cD--" with Ta 4002 for an idle one closed by timeout
// tunnel): the line is written when the tunnel ends, with its bytes, its
// duration and who ended it; bin and bout count the tunnel's bytes; the
// backend's timeout_tunnel replaces the client and server timeouts; and a
// client that only sends keeps a silent server's side open.
func TestWebSocketTunnelAccounted(t *testing.T) {
	const head = "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n"
	for _, tc := range []struct {
		name                  string
		path                  string
		tunnel, client, serve time.Duration
		sends                 int // bytes the client sends, one per 40 ms
		flags                 string
		idle                  time.Duration // the timeout that ends it
		echoed                bool
		cliAbrt, srvAbrt      int64
	}{
		// (The client's socket saw the last read, the server's the later
		// write: the client's side is the first idle, as HAProxy's "cD".)
		{"timeout_tunnel replaces both", "/quiet", 400 * time.Millisecond, 100 * time.Millisecond, 100 * time.Millisecond, 4, "cD", 400 * time.Millisecond, false, 1, 0},
		{"echo", "/echo", 0, 10 * time.Second, 300 * time.Millisecond, 3, "sD", 300 * time.Millisecond, true, 0, 1},
		{"client only sends", "/quiet", 0, 10 * time.Second, 200 * time.Millisecond, 12, "sD", 200 * time.Millisecond, false, 0, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig(conf.ModeHTTP, []string{wsServer(t)}, nil)
			cfg.Frontends[0].TimeoutClient = tc.client
			be := cfg.Backends[0]
			be.TimeoutServer, be.TimeoutTunnel = tc.serve, tc.tunnel
			p, addr, logs := startLoggedProxy(t, cfg)
			rc := dialRaw(t, addr)
			rc.c.SetDeadline(time.Now().Add(10 * time.Second))
			req := "GET " + tc.path + " HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n"
			io.WriteString(rc.c, req)
			resp, err := http.ReadResponse(rc.br, nil)
			if err != nil || resp.StatusCode != 101 {
				t.Fatalf("got %v %v, want 101", resp, err)
			}
			var last time.Time
			for range tc.sends {
				last = time.Now()
				rc.c.Write([]byte("x"))
				if tc.echoed {
					if b, err := rc.br.ReadByte(); err != nil || b != 'x' {
						t.Fatalf("echo: %q %v", b, err)
					}
				}
				time.Sleep(40 * time.Millisecond) // the client's pace, not a synchronisation
			}
			rest, err := io.ReadAll(rc.br) // until the proxy closes the tunnel
			ended := time.Since(last)
			if err != nil || len(rest) != 0 {
				t.Fatalf("after the tunnel: %q %v, want the proxy's close", rest, err)
			}
			if ended < tc.idle-20*time.Millisecond {
				t.Errorf("closed %v after the last byte, before the %v timeout", ended, tc.idle)
			}
			line := waitLogLine(t, logs, 101)
			wantFlags(t, line, tc.flags)
			out := int64(len(head))
			if tc.echoed {
				out += int64(tc.sends)
			}
			in := int64(len(req)) + int64(tc.sends)
			if line["bytes_read"] != float64(out) || line["bytes_uploaded"] != float64(in) {
				t.Errorf("log bytes %v / %v, want %d / %d", line["bytes_read"], line["bytes_uploaded"], out, in)
			}
			if ta, _ := line["Ta"].(float64); time.Duration(ta)*time.Millisecond < tc.idle {
				t.Errorf("Ta %v ms: the tunnel's time is not in it", line["Ta"])
			}
			fe, bec, srv := &p.Frontends[0].Counters, &p.Backends[0].Counters, &p.Backends[0].Servers()[0].Counters
			for name, c := range map[string]*Counters{"frontend": fe, "backend": bec, "server": srv} {
				if c.Bout.Load() != out {
					t.Errorf("%s bout %d, want %d", name, c.Bout.Load(), out)
				}
			}
			if fe.Bin.Load() != in || srv.Bin.Load() != in {
				t.Errorf("bin frontend %d server %d, want %d", fe.Bin.Load(), srv.Bin.Load(), in)
			}
			if bec.CliAbrt.Load() != tc.cliAbrt || srv.CliAbrt.Load() != tc.cliAbrt ||
				bec.SrvAbrt.Load() != tc.srvAbrt || srv.SrvAbrt.Load() != tc.srvAbrt {
				t.Errorf("cli_abrt %d/%d srv_abrt %d/%d (backend/server), want %d and %d",
					bec.CliAbrt.Load(), srv.CliAbrt.Load(), bec.SrvAbrt.Load(), srv.SrvAbrt.Load(), tc.cliAbrt, tc.srvAbrt)
			}
			if !strings.HasPrefix(line["request"].(string), "GET "+tc.path) {
				t.Errorf("request %v", line["request"])
			}
		})
	}
}

// In mode tcp the backend's timeout_tunnel replaces timeout_client and
// timeout_server once connected (HAProxy: "as soon as no analyzer
// remains"): an idle session lasts the tunnel timeout.
func TestTCPTimeoutTunnel(t *testing.T) {
	echo := tcpServer(t, func(c *net.TCPConn) { io.Copy(c, c) })
	for _, tunnel := range []time.Duration{0, 400 * time.Millisecond} {
		cfg := testConfig(conf.ModeTCP, []string{echo}, nil)
		cfg.Frontends[0].TimeoutClient = 100 * time.Millisecond
		cfg.Backends[0].TimeoutServer = 100 * time.Millisecond
		cfg.Backends[0].TimeoutTunnel = tunnel
		_, addr := startProxy(t, cfg)
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		c.SetDeadline(time.Now().Add(10 * time.Second))
		c.Write([]byte("x"))
		b := make([]byte, 1)
		if _, err := io.ReadFull(c, b); err != nil {
			t.Fatal(err)
		}
		last := time.Now()
		rest, err := io.ReadAll(c)
		idle := time.Since(last)
		c.Close()
		if len(rest) != 0 || err != nil {
			t.Fatalf("tunnel %v: %q %v, want the proxy's close", tunnel, rest, err)
		}
		want := 100 * time.Millisecond
		if tunnel > 0 {
			want = tunnel
		}
		if idle < want-20*time.Millisecond || (tunnel > 0 && idle < 300*time.Millisecond) {
			t.Errorf("timeout_tunnel %v: closed after %v idle, want %v", tunnel, idle, want)
		}
	}
}
