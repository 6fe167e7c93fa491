package proxy

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/fulcrum-proxy/fulcrum/conf"
)

// countingConn counts the bytes read from its connection.
type countingConn struct {
	net.Conn
	n int64
}

func (c *countingConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.n += int64(n)
	return n, err
}

// The h1 statistics (HAProxy 2.6's h1 module, show stat's h1_* columns):
// three keep-alive requests on one client connection, the last with a
// body large enough to be spliced, then an HTTP/2 connection that the
// frontend's h1 counters leave out. Every byte is accounted for: what the
// client sent and read, what the server read and sent.
func TestH1Stats(t *testing.T) {
	big := strings.Repeat("b", 300<<10) // above the splice threshold
	var srvIn int64
	got := make(chan int64, 8)
	up := tcpServer(t, func(c *net.TCPConn) {
		cc := &countingConn{Conn: c}
		br := bufio.NewReader(cc)
		for {
			req, err := http.ReadRequest(br)
			if err != nil {
				return
			}
			io.Copy(io.Discard, req.Body)
			got <- cc.n - int64(br.Buffered())
			body := "ok"
			if req.URL.Path == "/big" {
				body = big
			}
			fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
		}
	})
	cfg := testConfig(conf.ModeHTTP, []string{up}, nil)
	cfg.Frontends[0].ForwardFor = false
	p, addr := startProxy(t, cfg)
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	cc := &countingConn{Conn: c}
	br := bufio.NewReader(cc)
	var sent int64
	for _, path := range []string{"/a", "/post", "/big"} {
		req := "GET " + path + " HTTP/1.1\r\nHost: x\r\n\r\n"
		if path == "/post" {
			req = "POST /post HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello"
		}
		c.SetDeadline(time.Now().Add(10 * time.Second))
		io.WriteString(c, req)
		sent += int64(len(req))
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		srvIn = <-got
	}
	read := cc.n - int64(br.Buffered())
	fe, be := p.Frontends[0], p.Backends[0]
	// The last request ends (and counts) once its response is out: the
	// client may have it all a moment before; its server connection goes
	// back to the pool then too.
	waitFor(t, 5*time.Second, "the last request ended", func() bool {
		v := p.Snapshot().Backends[0].H1
		return fe.H1.OpenStreams.Load() == 0 && v.OpenStreams == 0
	})
	snap := p.Snapshot()
	fv, bv := snap.Frontends[0].H1, snap.Backends[0].H1
	if fv.OpenConns != 1 || fv.TotalConns != 1 || fv.OpenStreams != 0 || fv.TotalStreams != 3 {
		t.Errorf("frontend conns %d/%d streams %d/%d, want 1/1 0/3", fv.OpenConns, fv.TotalConns, fv.OpenStreams, fv.TotalStreams)
	}
	if fv.BytesIn != sent || fv.SplicedOut == 0 || fv.BytesOut+fv.SplicedOut != read {
		t.Errorf("frontend bytes in %d out %d spliced out %d; want in %d, out+spliced %d (spliced > 0)",
			fv.BytesIn, fv.BytesOut, fv.SplicedOut, sent, read)
	}
	if bv.OpenConns != 1 || bv.TotalConns != 1 || bv.OpenStreams != 0 || bv.TotalStreams != 3 {
		t.Errorf("backend conns %d/%d streams %d/%d, want 1/1 0/3 (the connection idle in its pool)", bv.OpenConns, bv.TotalConns, bv.OpenStreams, bv.TotalStreams)
	}
	if bv.BytesOut != srvIn || bv.SplicedIn != fv.SplicedOut || bv.BytesIn != fv.BytesOut {
		t.Errorf("backend bytes out %d in %d spliced in %d; want out %d (what the server read), in %d, spliced %d",
			bv.BytesOut, bv.BytesIn, bv.SplicedIn, srvIn, fv.BytesOut, fv.SplicedOut)
	}

	// An HTTP/2 client (prior knowledge) is not an h1 connection.
	h2 := &http.Client{Transport: h2cTransport(), Timeout: 10 * time.Second}
	resp, err := h2.Get("http://" + addr + "/a")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	c.Close()
	waitFor(t, 5*time.Second, "the HTTP/1 connection closed", func() bool { return fe.H1.OpenStreams.Load() == 0 && p.Snapshot().Frontends[0].H1.OpenConns == 0 })
	if fv := p.Snapshot().Frontends[0].H1; fv.TotalConns != 1 || fv.TotalStreams != 3 {
		t.Errorf("after an HTTP/2 connection: frontend h1 conns %d streams %d, want 1 3", fv.TotalConns, fv.TotalStreams)
	}
	if n := be.H1.TotalStreams.Load(); n != 4 {
		t.Errorf("backend h1 streams %d, want 4 (the HTTP/2 client's request went to the HTTP/1 server)", n)
	}
	// clear counters all zeroes them, as HAProxy's (a trial found them
	// kept); h2's too.
	p.ClearCounters(true)
	snap = p.Snapshot()
	for i, v := range []H1Values{snap.Frontends[0].H1, snap.Backends[0].H1} {
		if v.TotalConns != 0 || v.TotalStreams != 0 || v.BytesIn != 0 || v.BytesOut != 0 || v.SplicedIn != 0 || v.SplicedOut != 0 {
			t.Errorf("row %d after clear counters all: %+v", i, v)
		}
	}
	if h := snap.Frontends[0].H2; h.TotalConns != 0 || h.HeadersRcvd != 0 {
		t.Errorf("h2 after clear counters all: %+v", h)
	}
}
