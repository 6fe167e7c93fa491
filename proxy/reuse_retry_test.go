package proxy

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fulcrum-proxy/fulcrum/conf"
)

// Issue 21, point 2: a pooled connection whose server closes it just after
// the take's look at its socket fails the request on it, which is then
// retried once on a new connection when it can be replayed (no body, or
// an idempotent method's body all buffered). This server closes its keep-alive
// connections at moments that vary by connection, deterministically: the
// n-th connection serves 1 + n%3 requests (its responses never announce
// the close), then, by (n/3)%4:
//   - 0: closes right after its last response (FIN, racing the reuse);
//   - 1: closes 1 + n%7 ms after it (while the connection sits idle);
//   - 2: reads the next request and closes without answering (FIN);
//   - 3: reads the next request and resets the connection (RST).
//
// Concurrent keep-alive clients send GETs and PUTs with small bodies
// (sent with their head, so all buffered: replayable). Every request must
// get its own answer (the server echoes method, path and body): none
// fails, none gets another client's, though the server dropped requests.
func TestIdleClosesNeverCostARequest(t *testing.T) {
	var conns, dropped atomic.Int64
	up := tcpServer(t, func(c *net.TCPConn) {
		n := conns.Add(1) - 1
		serve, how := 1+int(n%3), int(n/3)%4
		br := bufio.NewReader(c)
		for i := 0; ; i++ {
			req, err := http.ReadRequest(br)
			if err != nil {
				return
			}
			body, _ := io.ReadAll(req.Body)
			if i == serve {
				dropped.Add(1)
				if how == 3 {
					c.SetLinger(0)
				}
				c.Close()
				return
			}
			echo := req.Method + " " + req.URL.Path + " " + string(body)
			fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s", len(echo), echo)
			if i == serve-1 && how < 2 {
				if how == 1 {
					time.Sleep(time.Duration(1+n%7) * time.Millisecond) // a schedule, not a synchronisation
				}
				c.Close()
				return
			}
		}
	})
	cfg := testConfig(conf.ModeHTTP, []string{up}, nil)
	cfg.Backends[0].HTTPReuse = "always"
	p, addr := startProxy(t, cfg)

	const clients, requests = 4, 40
	var wg sync.WaitGroup
	for ci := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Error(err)
				return
			}
			defer c.Close()
			c.SetDeadline(time.Now().Add(20 * time.Second))
			br := bufio.NewReader(c)
			for ri := range requests {
				path := fmt.Sprintf("/c%d/r%d", ci, ri)
				raw, want := "GET "+path+" HTTP/1.1\r\nHost: x\r\n\r\n", "GET "+path+" "
				if ri%3 == 1 {
					body := fmt.Sprintf("body-%d-%d", ci, ri)
					raw = fmt.Sprintf("PUT %s HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s", path, len(body), body)
					want = "PUT " + path + " " + body
				}
				if _, err := io.WriteString(c, raw); err != nil {
					t.Errorf("client %d request %d: %v", ci, ri, err)
					return
				}
				resp, err := http.ReadResponse(br, nil)
				if err != nil {
					t.Errorf("client %d request %d: %v", ci, ri, err)
					return
				}
				got, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 || string(got) != want {
					t.Errorf("client %d request %d: %d %q, want 200 %q", ci, ri, resp.StatusCode, got, want)
					return
				}
			}
		}()
	}
	wg.Wait()
	if dropped.Load() == 0 {
		t.Error("the server dropped no request: the retry was not exercised")
	}
	sn := p.Snapshot().Backends[0]
	if sn.Econ != 0 || sn.Eresp != 0 {
		t.Errorf("econ %d eresp %d, want 0 0", sn.Econ, sn.Eresp)
	}
	t.Logf("%d server connections, %d requests dropped by the server and retried", conns.Load(), dropped.Load())
}

// Issue 16's point 3: bytes a server sends unasked after a response, in a
// write of their own, never become the next request's answer, however
// soon the connection is reused: the take looks at its socket every time
// (a look skipped for a connection idle less than 100 ms was tried for
// issue 21 and dropped for this reason).
func TestLateJunkAfterResponses(t *testing.T) {
	for _, tc := range []struct{ name, method, resp string }{
		{"after a 200 with a body", "GET", "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"},
		{"body after 204", "GET", "HTTP/1.1 204 No Content\r\n\r\n"},
		{"body after 304", "GET", "HTTP/1.1 304 Not Modified\r\nContent-Length: 9\r\n\r\n"},
		{"body to HEAD", "HEAD", "HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sendJunk, junkSent := make(chan struct{}), make(chan struct{})
			up := tcpServer(t, func(c *net.TCPConn) {
				br := bufio.NewReader(c)
				for {
					req, err := http.ReadRequest(br)
					if err != nil {
						return
					}
					if req.URL.Path == "/junk" {
						io.WriteString(c, tc.resp)
						<-sendJunk // the proxy pooled the connection: its client has the answer
						io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nEVIL")
						close(junkSent)
						continue
					}
					fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s", len(req.URL.Path), req.URL.Path)
				}
			})
			cfg := testConfig(conf.ModeHTTP, []string{up}, nil)
			cfg.Backends[0].HTTPReuse = "always"
			_, addr := startProxy(t, cfg)
			c := dialRaw(t, addr)
			c.c.SetDeadline(time.Now().Add(10 * time.Second))
			io.WriteString(c.c, tc.method+" /junk HTTP/1.1\r\nHost: x\r\n\r\n")
			resp, err := http.ReadResponse(c.br, &http.Request{Method: tc.method})
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			close(sendJunk)
			<-junkSent // written: on loopback, in the pooled connection's socket
			for i := range 3 {
				path := fmt.Sprintf("/next%d", i)
				if got := bodyOf(dialRaw(t, addr).do(t, "GET "+path+" HTTP/1.1\r\nHost: x\r\n\r\n")); got != path {
					t.Fatalf("next client got %q, want its own %q", got, path)
				}
			}
		})
	}
}
