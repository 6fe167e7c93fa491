package netio

import (
	"io"
	"net"
	"strings"
	"testing"
	"time"
)

// pair returns the two ends of a loopback TCP connection.
func pair(t *testing.T) (a, b *net.TCPConn) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	c, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	s, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(); s.Close() })
	return c.(*net.TCPConn), s.(*net.TCPConn)
}

// Pipe moves exactly n bytes, small ones through the buffer and a flow
// that fills it by splice, and reports an early end as a source error.
func TestPipe(t *testing.T) {
	for _, tc := range []struct {
		name   string
		send   int
		n      int64
		wantN  int64
		srcErr bool
	}{
		{"small", 100, 100, 100, false},
		{"bulk", 1 << 20, 1 << 20, 1 << 20, false},
		{"until EOF", 5000, -1, 5000, false},
		{"early EOF", 10, 20, 10, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srcW, src := pair(t)
			dst, dstR := pair(t)
			go func() {
				srcW.Write([]byte(strings.Repeat("x", tc.send)))
				srcW.CloseWrite()
			}()
			got := make(chan int, 1)
			go func() {
				b, _ := io.ReadAll(dstR)
				got <- len(b)
			}()
			e := Pipe(dst, src, tc.n, time.Second, time.Second, false)
			dst.CloseWrite()
			if e.N != tc.wantN || (e.SrcErr != nil) != tc.srcErr || e.DstErr != nil {
				t.Errorf("got %+v, want %d bytes, source error %v", e, tc.wantN, tc.srcErr)
			}
			if n := <-got; int64(n) != tc.wantN {
				t.Errorf("destination read %d bytes, want %d", n, tc.wantN)
			}
		})
	}
}

// A deadline is pushed forward only once an eighth of the timeout has
// gone by, and a sooner one is always armed.
func TestDeadlines(t *testing.T) {
	c, _ := pair(t)
	var dl Deadlines
	t0 := time.Now()
	dl.ArmRead(c, t0, 8*time.Second)
	dl.ArmRead(c, t0.Add(500*time.Millisecond), 8*time.Second)
	if got := dl.Read(); !got.Equal(t0.Add(8 * time.Second)) {
		t.Errorf("re-armed too early: %v", got.Sub(t0))
	}
	dl.ArmRead(c, t0.Add(time.Second), 8*time.Second)
	if got := dl.Read(); !got.Equal(t0.Add(9 * time.Second)) {
		t.Errorf("not re-armed after an eighth: %v", got.Sub(t0))
	}
	dl.ArmRead(c, t0.Add(time.Second), time.Second)
	if got := dl.Read(); !got.Equal(t0.Add(2 * time.Second)) {
		t.Errorf("a sooner deadline was not armed: %v", got.Sub(t0))
	}
}

// writeDeadlineConn counts the write deadlines set on it.
type writeDeadlineConn struct {
	net.Conn
	set int
}

func (c *writeDeadlineConn) SetWriteDeadline(time.Time) error { c.set++; return nil }

// After ForgetWrite (the layer dropped the deadline: a hibernation), the
// next ArmWrite arms one even within an eighth of the timeout.
func TestDeadlinesForgetWrite(t *testing.T) {
	c := &writeDeadlineConn{}
	var dl Deadlines
	t0 := time.Now()
	dl.ArmWrite(c, t0, 8*time.Second)
	dl.ArmWrite(c, t0.Add(100*time.Millisecond), 8*time.Second)
	if c.set != 1 {
		t.Fatalf("%d deadlines set, want 1", c.set)
	}
	dl.ForgetWrite()
	dl.ArmWrite(c, t0.Add(200*time.Millisecond), 8*time.Second)
	if c.set != 2 {
		t.Fatalf("%d deadlines set after ForgetWrite, want 2", c.set)
	}
}

// Messages of every size around the first read's buffer and the copy
// buffer, each sent once the previous one has arrived (so that the copy
// waits between them, with and without the big buffer), come out byte for
// byte and in order.
func TestPipeMessagesAroundBufferSizes(t *testing.T) {
	srcW, src := pair(t)
	dst, dstR := pair(t)
	sizes := []int{1, pipeFirstRead - 1, pipeFirstRead, pipeFirstRead + 1, 3000, relayBufSize - 1, 100, relayBufSize + 7, 5}
	done := make(chan CopyEnd, 1)
	go func() { done <- Pipe(dst, src, -1, 5*time.Second, 5*time.Second, false) }()
	dstR.SetReadDeadline(time.Now().Add(10 * time.Second))
	var total int64
	for i, n := range sizes {
		msg := make([]byte, n)
		for j := range msg {
			msg[j] = byte(i*31 + j)
		}
		if _, err := srcW.Write(msg); err != nil {
			t.Fatal(err)
		}
		got := make([]byte, n)
		if _, err := io.ReadFull(dstR, got); err != nil {
			t.Fatalf("message %d (%d bytes): %v", i, n, err)
		}
		if string(got) != string(msg) {
			t.Fatalf("message %d (%d bytes) changed on the way", i, n)
		}
		total += int64(n)
	}
	srcW.CloseWrite()
	if e := <-done; e.N != total || e.SrcErr != nil || e.DstErr != nil {
		t.Fatalf("got %+v, want %d bytes and no error", e, total)
	}
}

// TestBufPoolAllocs: taking a copy buffer and giving it back allocates
// nothing once the pool holds one.
func TestBufPoolAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector makes sync.Pool drop buffers")
	}
	PutBuf(GetBuf())
	if n := testing.AllocsPerRun(100, func() { PutBuf(GetBuf()) }); n != 0 {
		t.Errorf("GetBuf+PutBuf: %v allocations, want 0", n)
	}
}

// A client that resets while the relay is blocked both ways (it sends
// without reading, the echo server behind stops reading when its replies
// back up) ends the session at once, not after the idle timeouts: the
// write to the client fails, and the write to the server blocked meanwhile
// is ended too; the client's reset is what the session reports.
func TestRelayAbortsBlockedDirection(t *testing.T) {
	cl, pc := pair(t)  // the client, the proxy's client side
	ps, srv := pair(t) // the proxy's server side, the echo server
	go io.Copy(srv, srv)
	sent := make(chan struct{})
	go func() { // the client sends without reading, until the relay stops taking
		defer close(sent)
		cl.SetWriteDeadline(time.Now().Add(30 * time.Second))
		buf := make([]byte, 64<<10)
		for {
			cl.SetWriteDeadline(time.Now().Add(300 * time.Millisecond))
			if _, err := cl.Write(buf); err != nil {
				return // the windows are full both ways
			}
		}
	}()
	type result struct{ in, out CopyEnd }
	done := make(chan result, 1)
	go func() {
		in, out := Relay(pc, ps, 20*time.Second, 20*time.Second)
		done <- result{in, out}
	}()
	<-sent
	cl.SetLinger(0)
	cl.Close() // a reset
	select {
	case r := <-done:
		if r.out.DstErr == nil || IsTimeout(r.out.DstErr) {
			t.Errorf("server to client: %+v, want the write to the client failed (reset)", r.out)
		}
		if r.in.SrcErr != nil && !IsConnReset(r.in.SrcErr) || r.in.DstErr != nil || r.out.SrcErr != nil {
			t.Errorf("in %+v, out %+v: the abort's own timeouts are reported", r.in, r.out)
		}
		if r.in.N == 0 || r.out.N == 0 {
			t.Errorf("bytes in %d, out %d: the relay moved nothing before the reset", r.in.N, r.out.N)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the relay still runs 10 s after the client's reset (idle timeouts 20 s)")
	}
}

// Bytes written to a socket refresh its read timeout, as HAProxy's
// default ("option independent-streams" off): a side that only sends
// keeps the silent side's timeout from firing, small messages or a bulk
// flow spliced; once both are quiet, the silent side's timeout ends it.
func TestRelayOneWayKeepsSilentSide(t *testing.T) {
	const short, long = 150 * time.Millisecond, 20 * time.Second
	for _, tc := range []struct {
		name       string
		fromClient bool
		chunk      int
	}{{"client sends", true, 1}, {"server sends", false, 1}, {"client sends bulk", true, 64 << 10}} {
		t.Run(tc.name, func(t *testing.T) {
			cl, pc := pair(t)
			ps, srv := pair(t)
			clientIdle, serverIdle := long, short
			sender, receiver := cl, srv
			if !tc.fromClient {
				clientIdle, serverIdle = short, long
				sender, receiver = srv, cl
			}
			type result struct{ in, out CopyEnd }
			done := make(chan result, 1)
			go func() {
				in, out := Relay(pc, ps, clientIdle, serverIdle)
				done <- result{in, out}
			}()
			go io.Copy(io.Discard, receiver)
			buf := make([]byte, tc.chunk)
			var last time.Time
			var sent int64
			for range 12 { // 12 x 40 ms: over three timeouts
				last = time.Now()
				sender.SetWriteDeadline(time.Now().Add(5 * time.Second))
				n, err := sender.Write(buf)
				sent += int64(n)
				if err != nil {
					t.Fatalf("write: %v", err)
				}
				select {
				case r := <-done:
					t.Fatalf("the relay ended while one side sent: in %+v, out %+v", r.in, r.out)
				case <-time.After(40 * time.Millisecond):
				}
			}
			var r result
			select {
			case r = <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("the relay still runs 10 s after both sides went quiet")
			}
			if idle := time.Since(last); idle < short {
				t.Errorf("ended %v after the last byte, before the timeout %v", idle, short)
			}
			silent, busy := r.out, r.in
			if !tc.fromClient {
				silent, busy = r.in, r.out
			}
			if !IsTimeout(silent.SrcErr) || silent.DstErr != nil || silent.N != 0 {
				t.Errorf("silent direction %+v: want its source's read timed out", silent)
			}
			if busy.SrcErr != nil || busy.DstErr != nil || busy.N != sent {
				t.Errorf("busy direction %+v: want %d bytes, no error", busy, sent)
			}
		})
	}
}

// TestRelayBothIdleBlamesClient: with equal timeouts and a byte relayed to
// the server, both sides go idle at once and either read may time out
// first; the end is the client's (HAProxy looks at the client side first),
// every time.
func TestRelayBothIdleBlamesClient(t *testing.T) {
	const idle = 40 * time.Millisecond
	for i := range 15 {
		cl, pc := pair(t)
		ps, srv := pair(t)
		go io.Copy(io.Discard, srv)
		if _, err := cl.Write([]byte("x")); err != nil {
			t.Fatal(err)
		}
		in, out := Relay(pc, ps, idle, idle)
		if got := EndedBy(in, out); got != EndClientTimeout {
			t.Fatalf("round %d: ended by %v (in %+v, out %+v), want the client's timeout", i, got, in, out)
		}
	}
}
