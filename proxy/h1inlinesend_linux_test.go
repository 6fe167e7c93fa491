package proxy

import (
	"bufio"
	"context"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fulcrum-proxy/fulcrum/conf"
)

// TestInlineReqSendPending: a request the reaper sends on a pooled server
// connection that does not take it whole goes out in part, and a worker
// sends the rest once the server reads, then relays the response (http1
// sendPending). The server stops reading after its first response; the
// second request's 13 kB head is more than the buffers between them hold
// (tune_sndbuf_server fixes the proxy's send buffer at 8 KiB, and the
// server's receive buffer is 4.5 KiB).
func TestInlineReqSendPending(t *testing.T) {
	if os.Getenv(H1InlineEnv) == "0" || os.Getenv(H1InlineReqEnv) == "0" {
		t.Skip("the request phase is a worker's with " + H1InlineEnv + "=0 or " + H1InlineReqEnv + "=0")
	}
	lc := net.ListenConfig{Control: sockBufsControl(conf.SocketBufs{Rcv: 2048})}
	l, err := lc.Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	var wg sync.WaitGroup
	t.Cleanup(wg.Wait)
	hold, open := gate()
	t.Cleanup(open) // before wg.Wait: cleanups run last first
	pad := strings.Repeat("a", 13000)
	got2 := make(chan string, 1) // the second request as the server read it
	wg.Go(func() {
		c, err := l.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(20 * time.Second))
		br := bufio.NewReader(c)
		head := func() (string, error) {
			var h strings.Builder
			for !strings.HasSuffix(h.String(), "\r\n\r\n") {
				line, err := br.ReadString('\n')
				h.WriteString(line)
				if err != nil {
					return h.String(), err
				}
			}
			return h.String(), nil
		}
		if _, err := head(); err != nil {
			return
		}
		c.Write([]byte("HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\n/r1"))
		<-hold
		second, err := head()
		if err != nil {
			got2 <- "read: " + err.Error()
			return
		}
		got2 <- second
		c.Write([]byte("HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\n/r2"))
		br.ReadByte() // until the proxy closes
	})
	_, fe, addr := inlineProxy(t, l.Addr().String(), func(cfg *conf.Config) {
		cfg.Global.ServerBufs = conf.SocketBufs{Snd: 4096}
	})
	rc := dialRaw(t, addr)
	if r := rc.do(t, "GET /r1 HTTP/1.1\r\nHost: x\r\n\r\n"); r.StatusCode != 200 || bodyOf(r) != "/r1" {
		t.Fatalf("first request: %d", r.StatusCode)
	}
	if _, err := rc.c.Write([]byte("GET /r2 HTTP/1.1\r\nHost: x\r\nX-Pad: " + pad + "\r\n\r\n")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the reaper to hand the request on", func() bool { return fe.h1inl.Handed.Load() >= 2 })
	open()
	r, err := http.ReadResponse(rc.br, nil)
	if err != nil {
		t.Fatal(err)
	}
	if b := bodyOf(r); r.StatusCode != 200 || b != "/r2" {
		t.Fatalf("second request: %d %q", r.StatusCode, b)
	}
	second := <-got2
	if !strings.HasPrefix(second, "GET /r2 HTTP/1.1\r\n") || !strings.Contains(second, "\r\nx-pad: "+pad+"\r\n") && !strings.Contains(second, "\r\nX-Pad: "+pad+"\r\n") {
		t.Fatalf("the server read the second request as %.200q", second)
	}
	// The first request's head: handed to a worker to connect; the
	// second: begun and sent (in part) by the reaper, handed on.
	wantReq(t, fe, 0, 1, 0, 1)
}
