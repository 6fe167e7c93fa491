package epoll

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/fulcrum-proxy/fulcrum/internal/testutil"
	"github.com/fulcrum-proxy/fulcrum/proxy/netio"
)

// serverSide returns a Conn of g dialled to a new listener (moved by
// FromTCP, as the proxy's server connections) and the listener's
// accepted net.Conn.
func serverSide(t testing.TB, g *Group) (*Conn, net.Conn) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	d, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	srv, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	sc, err := g.FromTCP(d.(*net.TCPConn))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sc.Close(); srv.Close() })
	return sc, srv
}

// relayed is a pair under test: the client's end (cl), the relayed Conns
// (cc, sc) and the server's end (srv).
type relayed struct {
	cl, srv net.Conn
	cc, sc  *Conn
	p       *Pair
}

func startRelayed(t testing.TB, g *Group, clientIdle, serverIdle time.Duration, splice bool) *relayed {
	t.Helper()
	cc, cl := accepted(t, g)
	sc, srv := serverSide(t, g)
	p, err := startPair(cc, sc, clientIdle, serverIdle, splice)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Abort(); p.Wait() })
	return &relayed{cl: cl, srv: srv, cc: cc, sc: sc, p: p}
}

// wait returns the pair's ends, failing the test after 10 s.
func (r *relayed) wait(t *testing.T) (in, out netio.CopyEnd) {
	t.Helper()
	select {
	case <-r.p.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the pair did not end within 10 s")
	}
	return r.p.Wait()
}

// readN reads exactly n bytes from c, with a deadline.
func readN(t *testing.T, c net.Conn, n int) []byte {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	b := make([]byte, n)
	if _, err := io.ReadFull(c, b); err != nil {
		t.Fatalf("read %d bytes: %v", n, err)
	}
	return b
}

// readEOF reads until the end of the stream and returns what came.
func readEOF(t *testing.T, c net.Conn) []byte {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	b, err := io.ReadAll(c)
	if err != nil {
		t.Fatalf("read to the end: %v", err)
	}
	return b
}

func message(seed, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(seed*131 + i*7)
	}
	return b
}

// Messages of many sizes go both ways byte for byte, each answered before
// the next (a keep-alive session); the client's end of stream reaches the
// server, the server's the client, and each direction counts exactly what
// it moved.
func TestPairPingPong(t *testing.T) {
	g := newGroup(t, 1)
	r := startRelayed(t, g, 10*time.Second, 10*time.Second, true)
	if n := g.Pairs(); n != 1 {
		t.Errorf("group counts %d pairs, want 1", n)
	}
	sizes := []int{1, 64, 1000, 4096, netio.BufSize - 1, 100, 3, 70000, 5}
	var in, out int64
	for i, n := range sizes {
		req := message(i, n)
		if _, err := r.cl.Write(req); err != nil {
			t.Fatal(err)
		}
		if got := readN(t, r.srv, n); !bytes.Equal(got, req) {
			t.Fatalf("request %d (%d bytes) changed on the way", i, n)
		}
		resp := message(i+100, n/2+1)
		if _, err := r.srv.Write(resp); err != nil {
			t.Fatal(err)
		}
		if got := readN(t, r.cl, len(resp)); !bytes.Equal(got, resp) {
			t.Fatalf("response %d (%d bytes) changed on the way", i, len(resp))
		}
		in += int64(n)
		out += int64(len(resp))
	}
	r.cl.(*net.TCPConn).CloseWrite()
	if b := readEOF(t, r.srv); len(b) != 0 {
		t.Fatalf("server read %d bytes more before the end", len(b))
	}
	r.srv.Close()
	if b := readEOF(t, r.cl); len(b) != 0 {
		t.Fatalf("client read %d bytes more before the end", len(b))
	}
	ein, eout := r.wait(t)
	if ein != (netio.CopyEnd{N: in}) || eout != (netio.CopyEnd{N: out}) {
		t.Errorf("in %+v, out %+v; want %d and %d bytes, no errors", ein, eout, in, out)
	}
	// The Conns are the caller's again: the pair is detached.
	if r.cc.pair.Load() != nil || r.sc.pair.Load() != nil || r.cc.lent.Load() != nil {
		t.Error("a Conn still points at the ended pair")
	}
	if n := g.Pairs(); n != 0 {
		t.Errorf("group counts %d pairs after the end, want 0", n)
	}
}

// A half-closed session goes on the other way: the client sends its
// request and its end of stream, the server answers with a bulk response
// (spliced) after it has seen the end, then ends.
func TestPairHalfClose(t *testing.T) {
	g := newGroup(t, 1)
	r := startRelayed(t, g, 10*time.Second, 10*time.Second, true)
	r.cl.Write([]byte("request"))
	r.cl.(*net.TCPConn).CloseWrite()
	if got := readEOF(t, r.srv); string(got) != "request" {
		t.Fatalf("server read %q, want the request then the end", got)
	}
	resp := message(7, 3<<20+11)
	go func() {
		r.srv.Write(resp)
		r.srv.Close()
	}()
	if got := readEOF(t, r.cl); !bytes.Equal(got, resp) {
		t.Fatalf("client read %d bytes, want the %d of the response", len(got), len(resp))
	}
	in, out := r.wait(t)
	if in != (netio.CopyEnd{N: 7}) || out != (netio.CopyEnd{N: int64(len(resp))}) {
		t.Errorf("in %+v, out %+v; want 7 and %d bytes, no errors", in, out, len(resp))
	}
}

// A server that does not read stops the pair from reading the client once
// a buffer (or pipe) is pending: the client's writes block; once the server
// reads, every byte arrives in order and the counts are exact. On the
// buffer alone and with splice.
func TestPairBackpressure(t *testing.T) {
	for _, splice := range []bool{false, true} {
		name := "buffer"
		if splice {
			name = "splice"
		}
		t.Run(name, func(t *testing.T) {
			g := newGroup(t, 1)
			r := startRelayed(t, g, 20*time.Second, 20*time.Second, splice)
			// The client writes until its writes block for 300 ms.
			var sent bytes.Buffer
			chunk := make([]byte, 32<<10)
			for i := 0; ; i++ {
				if i > 4096 {
					t.Fatal("the client wrote 128 MiB without blocking: no backpressure")
				}
				for j := range chunk {
					chunk[j] = byte(i + j)
				}
				r.cl.SetWriteDeadline(time.Now().Add(300 * time.Millisecond))
				n, err := r.cl.Write(chunk)
				sent.Write(chunk[:n])
				if err != nil {
					if !errors.Is(err, os.ErrDeadlineExceeded) {
						t.Fatal(err)
					}
					break
				}
			}
			dir := &r.p.dirs[0]
			pending := make(chan int, 1)
			// What the pair holds is at most one buffer or pipe: read
			// under busy (the pump's lock) through a kick that does not
			// move anything (the server's socket is full).
			waitFor(t, "the pair to be idle", func() bool {
				if !r.p.busy.CompareAndSwap(false, true) {
					return false
				}
				defer r.p.busy.Store(false)
				select {
				case pending <- dir.pending():
				default:
				}
				return true
			})
			if n := <-pending; n <= 0 || n > spliceChunk {
				t.Errorf("%d bytes pending in the pair, want some, at most %d", n, spliceChunk)
			}
			r.cl.(*net.TCPConn).CloseWrite()
			got := readEOF(t, r.srv)
			if !bytes.Equal(got, sent.Bytes()) {
				t.Fatalf("server read %d bytes, the client sent %d (or they differ)", len(got), sent.Len())
			}
			r.srv.Close()
			readEOF(t, r.cl)
			in, out := r.wait(t)
			if in != (netio.CopyEnd{N: int64(sent.Len())}) || out != (netio.CopyEnd{}) {
				t.Errorf("in %+v, out %+v; want %d bytes in, none out, no errors", in, out, sent.Len())
			}
		})
	}
}

// Each side's inactivity timeout ends the pair with that side's read
// timed out (the other direction reports no error), after the timeout
// and not before, even after traffic; a destination that does not take
// the bytes pending times out as a write.
func TestPairIdleTimeout(t *testing.T) {
	const short, long = 150 * time.Millisecond, 20 * time.Second
	t.Run("client", func(t *testing.T) {
		g := newGroup(t, 1)
		r := startRelayed(t, g, short, long, true)
		// Some traffic first: the timeout counts from the last byte.
		for i := range 3 {
			r.cl.Write([]byte("ping"))
			readN(t, r.srv, 4)
			r.srv.Write([]byte("pong"))
			readN(t, r.cl, 4)
			_ = i
		}
		last := time.Now()
		in, out := r.wait(t)
		if idle := time.Since(last); idle < short {
			t.Errorf("ended %v after the last byte, before the timeout %v", idle, short)
		}
		if !netio.IsTimeout(in.SrcErr) || netio.IsWriteErr(in.SrcErr) || in.DstErr != nil || in.N != 12 {
			t.Errorf("in %+v: want the client's read timed out after 12 bytes", in)
		}
		if out != (netio.CopyEnd{N: 12}) {
			t.Errorf("out %+v: want 12 bytes, no error", out)
		}
	})
	t.Run("server", func(t *testing.T) {
		g := newGroup(t, 1)
		r := startRelayed(t, g, long, short, true)
		start := time.Now()
		in, out := r.wait(t)
		if idle := time.Since(start); idle < short {
			t.Errorf("ended after %v, before the timeout %v", idle, short)
		}
		if !netio.IsTimeout(out.SrcErr) || out.DstErr != nil || out.N != 0 {
			t.Errorf("out %+v: want the server's read timed out", out)
		}
		if in != (netio.CopyEnd{}) {
			t.Errorf("in %+v: want nothing, no error", in)
		}
	})
	// Bytes written to a socket refresh its read timeout (HAProxy's
	// default, "option independent-streams" off): a side that only sends
	// keeps the silent side's timeout from firing, for many timeouts; once
	// both are quiet the silent side's timeout ends the pair.
	for _, fromClient := range []bool{true, false} {
		t.Run(map[bool]string{true: "one way from client", false: "one way from server"}[fromClient], func(t *testing.T) {
			g := newGroup(t, 1)
			var r *relayed
			var sender, receiver net.Conn
			if fromClient {
				r = startRelayed(t, g, long, short, true) // the silent server's timeout is short
				sender, receiver = r.cl, r.srv
			} else {
				r = startRelayed(t, g, short, long, true)
				sender, receiver = r.srv, r.cl
			}
			var last time.Time
			for range 12 { // 12 x 40 ms: over three timeouts
				last = time.Now()
				sender.Write([]byte("x"))
				readN(t, receiver, 1)
				select {
				case <-r.p.Done():
					in, out := r.p.Wait()
					t.Fatalf("the pair ended while one side sent: in %+v, out %+v", in, out)
				case <-time.After(40 * time.Millisecond):
				}
			}
			in, out := r.wait(t)
			if idle := time.Since(last); idle < short {
				t.Errorf("ended %v after the last byte, before the timeout %v", idle, short)
			}
			silent, busy := out, in // the server's reads timed out
			if !fromClient {
				silent, busy = in, out
			}
			if !netio.IsTimeout(silent.SrcErr) || silent.DstErr != nil || silent.N != 0 {
				t.Errorf("silent direction %+v: want its source's read timed out", silent)
			}
			if busy != (netio.CopyEnd{N: 12}) {
				t.Errorf("busy direction %+v: want 12 bytes, no error", busy)
			}
		})
	}
	t.Run("write", func(t *testing.T) {
		// The client stops reading (it still sends, within clientIdle):
		// the server's bytes wait in the pair, and the write to the
		// client times out (clientIdle) while the client's own reads
		// keep the other direction active.
		g := newGroup(t, 1)
		r := startRelayed(t, g, 300*time.Millisecond, long, true)
		go io.Copy(io.Discard, r.srv)
		go func() { // the server sends until its writes block
			chunk := make([]byte, 64<<10)
			for i := 0; i < 2048; i++ {
				r.srv.SetWriteDeadline(time.Now().Add(time.Second))
				if _, err := r.srv.Write(chunk); err != nil {
					return
				}
			}
		}()
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for ended := false; !ended; {
			select {
			case <-r.p.Done():
				ended = true
			case <-tick.C:
				r.cl.Write([]byte("x"))
			case <-time.After(10 * time.Second):
				t.Fatal("the pair did not end within 10 s")
			}
		}
		in, out := r.p.Wait()
		if !netio.IsTimeout(out.DstErr) || !netio.IsWriteErr(out.DstErr) || out.SrcErr != nil || out.N == 0 {
			t.Errorf("out %+v: want bytes, then the write to the client timed out", out)
		}
		if in.SrcErr != nil || in.DstErr != nil || in.N == 0 {
			t.Errorf("in %+v: want bytes, no error", in)
		}
	})
}

// Abort, and the Close of either Conn, end a pair mid-session at once, as
// a close of the client (netio.Relay's results: in's source error wraps
// net.ErrClosed, out reports none); the closed Conn's descriptor is closed
// once the pair has let it go.
func TestPairAbortAndClose(t *testing.T) {
	for _, how := range []string{"abort", "close client", "close server"} {
		t.Run(how, func(t *testing.T) {
			g := newGroup(t, 2)
			r := startRelayed(t, g, 20*time.Second, 20*time.Second, true)
			r.cl.Write([]byte("abc"))
			readN(t, r.srv, 3)
			live := g.Conns()
			switch how {
			case "abort":
				r.p.Abort()
			case "close client":
				r.cc.Close()
			case "close server":
				r.sc.Close()
			}
			in, out := r.wait(t)
			if !errors.Is(in.SrcErr, net.ErrClosed) || in.DstErr != nil || in.N != 3 {
				t.Errorf("in %+v: want 3 bytes and the client closed", in)
			}
			if out != (netio.CopyEnd{}) {
				t.Errorf("out %+v: want nothing, no error", out)
			}
			if how != "abort" {
				waitFor(t, "the closed conn's descriptor to close", func() bool { return g.Conns() == live-1 })
			}
			r.p.Abort() // again: nothing
		})
	}
}

// A client that resets ends the pair with its read's reset, and the
// server's side sees the end.
func TestPairPeerReset(t *testing.T) {
	g := newGroup(t, 1)
	r := startRelayed(t, g, 20*time.Second, 20*time.Second, true)
	r.cl.Write([]byte("hello"))
	readN(t, r.srv, 5)
	r.cl.(*net.TCPConn).SetLinger(0)
	r.cl.Close()
	in, out := r.wait(t)
	if !errors.Is(in.SrcErr, syscall.ECONNRESET) || !netio.IsConnReset(in.SrcErr) || in.DstErr != nil || in.N != 5 {
		t.Errorf("in %+v: want 5 bytes and the client's reset", in)
	}
	if out != (netio.CopyEnd{}) {
		t.Errorf("out %+v: want nothing, no error", out)
	}
}

// Pairs whose Conns sit on two pollers relay both ways at once (each side
// writes while the other does), under the race detector.
func TestPairTwoPollers(t *testing.T) {
	g := newGroup(t, 2)
	const pairs, rounds = 4, 40
	type result struct {
		in, out netio.CopyEnd
		err     string
	}
	results := make(chan result, pairs)
	for range pairs {
		r := startRelayed(t, g, 10*time.Second, 10*time.Second, true)
		for r.cc.p == r.sc.p { // the next server connection goes to the other poller
			r.p.Abort()
			r.p.Wait()
			r = startRelayed(t, g, 10*time.Second, 10*time.Second, true)
		}
		go func() {
			var res result
			sent := make(chan []byte, 1)
			go func() { // the server sends its own stream meanwhile
				var all []byte
				for i := range rounds {
					m := message(i, 700+i*97)
					r.srv.Write(m)
					all = append(all, m...)
				}
				r.srv.(*net.TCPConn).CloseWrite()
				sent <- all
			}()
			got := make(chan []byte, 1)
			go func() {
				r.cl.SetReadDeadline(time.Now().Add(10 * time.Second))
				b, _ := io.ReadAll(r.cl)
				got <- b
			}()
			var all []byte
			for i := range rounds {
				m := message(i+50, 1000+i*131)
				r.cl.Write(m)
				all = append(all, m...)
			}
			r.cl.(*net.TCPConn).CloseWrite()
			r.srv.SetReadDeadline(time.Now().Add(10 * time.Second))
			atSrv, _ := io.ReadAll(r.srv)
			srvSent, atCl := <-sent, <-got
			if !bytes.Equal(atSrv, all) || !bytes.Equal(atCl, srvSent) {
				res.err = "bytes changed on the way"
			}
			select {
			case <-r.p.Done():
			case <-time.After(10 * time.Second):
				res.err = "the pair did not end"
				results <- res
				return
			}
			res.in, res.out = r.p.Wait()
			if res.in != (netio.CopyEnd{N: int64(len(all))}) || res.out != (netio.CopyEnd{N: int64(len(srvSent))}) {
				res.err = "wrong ends"
			}
			results <- res
		}()
	}
	for range pairs {
		if res := <-results; res.err != "" {
			t.Errorf("%s: in %+v, out %+v", res.err, res.in, res.out)
		}
	}
}

// Bulk flows both ways at once, longer than a reaper's budget: both
// directions switch to splice, the reaper hands the rest to a goroutine,
// and every byte arrives in order.
func TestPairBulk(t *testing.T) {
	g := newGroup(t, 2)
	r := startRelayed(t, g, 10*time.Second, 10*time.Second, true)
	const size = 3*pairBudget + 12345
	up, down := message(1, size), message(2, size)
	go func() { r.cl.Write(up); r.cl.(*net.TCPConn).CloseWrite() }()
	go func() { r.srv.Write(down); r.srv.(*net.TCPConn).CloseWrite() }()
	atCl := make(chan []byte, 1)
	go func() {
		r.cl.SetReadDeadline(time.Now().Add(20 * time.Second))
		b, _ := io.ReadAll(r.cl)
		atCl <- b
	}()
	r.srv.SetReadDeadline(time.Now().Add(20 * time.Second))
	atSrv, _ := io.ReadAll(r.srv)
	if !bytes.Equal(atSrv, up) {
		t.Errorf("server read %d bytes, want the client's %d", len(atSrv), size)
	}
	if b := <-atCl; !bytes.Equal(b, down) {
		t.Errorf("client read %d bytes, want the server's %d", len(b), size)
	}
	in, out := r.wait(t)
	if in != (netio.CopyEnd{N: size}) || out != (netio.CopyEnd{N: size}) {
		t.Errorf("in %+v, out %+v; want %d bytes each way, no errors", in, out, size)
	}
	if !r.p.dirs[0].bulk || !r.p.dirs[1].bulk {
		t.Errorf("bulk in %v, out %v: want both spliced", r.p.dirs[0].bulk, r.p.dirs[1].bulk)
	}
}

// Bytes that arrived before the pair started, on a server socket never
// registered (a banner) and on a client socket already registered and
// drained, are relayed: the readiness carried over, or the registration's
// first event, says so.
func TestPairBytesBeforeStart(t *testing.T) {
	g := newGroup(t, 1)
	cc, cl := accepted(t, g)
	sc, srv := serverSide(t, g)
	// The client's socket registered and found drained by a read that
	// waited, as a session's earlier reads leave it.
	got := make(chan string, 1)
	go func() {
		b := make([]byte, 8)
		n, _ := cc.Read(b)
		got <- string(b[:n])
	}()
	waitFor(t, "the read to wait", func() bool { return cc.r.waiting.Load() })
	cl.Write([]byte("first"))
	if s := <-got; s != "first" {
		t.Fatalf("read %q", s)
	}
	cl.Write([]byte("early"))
	srv.Write([]byte("banner"))
	waitFor(t, "the client's event", func() bool { return cc.r.ready.Load() != 0 })
	p, err := StartPair(cc, sc, 10*time.Second, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { p.Abort(); p.Wait() }()
	if b := readN(t, cl, 6); string(b) != "banner" {
		t.Errorf("client read %q, want the server's banner", b)
	}
	if b := readN(t, srv, 5); string(b) != "early" {
		t.Errorf("server read %q, want the client's early bytes", b)
	}
}

// StartPair refuses a closed Conn and Conns of two groups, and changes
// nothing then.
func TestPairStartFails(t *testing.T) {
	g, g2 := newGroup(t, 1), newGroup(t, 1)
	cc, _ := accepted(t, g)
	sc, _ := serverSide(t, g2)
	if _, err := StartPair(cc, sc, 0, 0); !errors.Is(err, errDifferentGroups) {
		t.Errorf("two groups: %v", err)
	}
	sc2, _ := serverSide(t, g)
	sc2.Close()
	if _, err := StartPair(cc, sc2, 0, 0); !errors.Is(err, net.ErrClosed) {
		t.Errorf("closed server: %v", err)
	}
	if cc.pair.Load() != nil || cc.state.Load() != 0 {
		t.Errorf("the client conn was changed: pair %v, state %d", cc.pair.Load(), cc.state.Load())
	}
}

// BenchmarkPairPingPong: one 64-byte message and its echo through a
// relay of two epoll Conns, by a Pair (the reapers move the bytes) and
// by netio.Relay (a goroutine per direction, woken per message). One op
// is one round trip.
func BenchmarkPairPingPong(b *testing.B) {
	for _, how := range []string{"pair", "relay"} {
		b.Run(how, func(b *testing.B) {
			g, err := NewGroup(1)
			if err != nil {
				b.Fatal(err)
			}
			defer g.Unref()
			cc, cl := accepted(b, g)
			sc, srv := serverSide(b, g)
			go func() { io.Copy(srv, srv); srv.Close() }()
			ended := make(chan struct{})
			if how == "pair" {
				p, err := StartPair(cc, sc, time.Minute, time.Minute)
				if err != nil {
					b.Fatal(err)
				}
				go func() { p.Wait(); close(ended) }()
			} else {
				go func() { netio.Relay(cc, sc, time.Minute, time.Minute); close(ended) }()
			}
			testutil.PingPong(b, cl, 64)
			cl.Close()
			<-ended
		})
	}
}
