package proxy

import (
	"crypto/rand"
	"crypto/sha256"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/fulcrum-proxy/fulcrum/conf"
)

// tcpServer accepts connections and runs fn on each. At the end of the
// test it stops accepting, closes the connections still open and waits
// for every fn to return, so that no goroutine outlives the test.
func tcpServer(t testing.TB, fn func(c *net.TCPConn)) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		conns = map[net.Conn]struct{}{}
	)
	t.Cleanup(func() {
		l.Close()
		mu.Lock()
		for c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns[c] = struct{}{}
			mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer func() {
					mu.Lock()
					delete(conns, c)
					mu.Unlock()
					c.Close()
				}()
				fn(c.(*net.TCPConn))
			}()
		}
	}()
	return l.Addr().String()
}

// echoConn is a tcpServer handler that sends back what it reads.
func echoConn(c *net.TCPConn) { io.Copy(c, c) }

func TestTCPEcho(t *testing.T) {
	echo := tcpServer(t, echoConn)
	p, addr := startProxy(t, testConfig(conf.ModeTCP, []string{echo}, nil))
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	for _, msg := range []string{"hello", "world", "!"} {
		c.Write([]byte(msg))
		buf := make([]byte, len(msg))
		if _, err := io.ReadFull(c, buf); err != nil || string(buf) != msg {
			t.Fatalf("echo: got %q %v, want %q", buf, err, msg)
		}
	}
	c.(*net.TCPConn).CloseWrite()
	if rest, err := io.ReadAll(c); err != nil || len(rest) != 0 {
		t.Fatalf("after half-close: got %q %v, want clean EOF", rest, err)
	}
	c.Close()
	waitFor(t, 2*time.Second, "session end", func() bool { return p.Snapshot().Backends[0].Scur == 0 })
	be := p.Snapshot().Backends[0]
	if be.Stot != 1 || be.Bin != 11 || be.Bout != 11 || be.Servers[0].Lbtot != 1 {
		t.Errorf("counters: stot %d bin %d bout %d lbtot %d, want 1 11 11 1", be.Stot, be.Bin, be.Bout, be.Servers[0].Lbtot)
	}
}

// TestTCPBulkBothWays sends 50 MB each way at once through the proxy and
// checks both checksums; each side half-closes when done sending and must
// still receive everything the other side sends after that.
func TestTCPBulkBothWays(t *testing.T) {
	const size = 50 << 20
	up := make([]byte, size)
	down := make([]byte, size)
	rand.Read(up)
	rand.Read(down)
	srv, serverGot := bulkServer(t, down)
	_, addr := startProxy(t, testConfig(conf.ModeTCP, []string{srv}, nil))
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(60 * time.Second))
	go func() {
		c.Write(up)
		c.(*net.TCPConn).CloseWrite()
	}()
	h := sha256.New()
	if _, err := io.Copy(h, c); err != nil {
		t.Fatalf("client read: %v", err)
	}
	if got, want := h.Sum(nil), sha256.Sum256(down); string(got) != string(want[:]) {
		t.Errorf("server-to-client checksum mismatch")
	}
	r := <-serverGot
	if want := sha256.Sum256(up); r.err != nil || r.sum != want {
		t.Errorf("client-to-server checksum mismatch (err %v)", r.err)
	}
}

func TestTCPStoppedUpstream(t *testing.T) {
	l, _ := net.Listen("tcp", "127.0.0.1:0")
	dead := l.Addr().String()
	l.Close()
	p, addr := startProxy(t, testConfig(conf.ModeTCP, []string{dead}, nil))
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	if n, _ := c.Read(make([]byte, 1)); n != 0 {
		t.Errorf("read %d bytes from a session without server", n)
	}
	waitFor(t, 2*time.Second, "econ", func() bool { return p.Snapshot().Backends[0].Econ == 1 })
}

// sumResult is what a bulkServer received: its SHA-256 and how the read
// ended.
type sumResult struct {
	sum [32]byte
	err error
}

// bulkServer is an upstream that sends down and half-closes while it
// reads what comes until the end, whose checksum it then reports.
func bulkServer(t *testing.T, down []byte) (string, <-chan sumResult) {
	got := make(chan sumResult, 1)
	addr := tcpServer(t, func(c *net.TCPConn) {
		done := make(chan struct{})
		go func() {
			c.Write(down)
			c.CloseWrite()
			close(done)
		}()
		h := sha256.New()
		_, err := io.Copy(h, c)
		var r sumResult
		copy(r.sum[:], h.Sum(nil))
		r.err = err
		got <- r
		<-done
	})
	return addr, got
}

// TestTCPQueuedClientSpeaksFirst: a client that sends its request while
// it waits in the server's queue has it relayed as soon as it gets the
// slot, not when it sends again (a fresh-user trial beside HAProxy 2.6:
// the epoll layer's queue wait consumed the readiness of those bytes, and
// the session hung until timeout client, logged cD).
func TestTCPQueuedClientSpeaksFirst(t *testing.T) {
	echo := tcpServer(t, echoConn)
	cfg := testConfig(conf.ModeTCP, []string{echo}, nil)
	cfg.Backends[0].Servers[0].MaxConn = 1
	p, addr := startProxy(t, cfg)
	dial := func() net.Conn {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		c.SetDeadline(time.Now().Add(5 * time.Second))
		return c
	}
	a := dial()
	io.WriteString(a, "A")
	if _, err := io.ReadFull(a, make([]byte, 1)); err != nil {
		t.Fatalf("first client: %v", err)
	}
	b := dial()
	io.WriteString(b, "B-early") // in the socket before the queue's wait looks
	waitFor(t, 5*time.Second, "the second client queued", func() bool { return p.Snapshot().Backends[0].Qcur == 1 })
	a.Close()
	buf := make([]byte, 7)
	if _, err := io.ReadFull(b, buf); err != nil || string(buf) != "B-early" {
		t.Fatalf("queued client: got %q, %v; want its bytes echoed once served", buf, err)
	}
}
