package uring

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// sessionThrough is through for a Session: the sockets stay the test's,
// closed at its end, and their descriptors are returned.
func sessionThrough(t *testing.T, r *Relay, s *Session, upstream string) (*net.TCPConn, [2]int) {
	t.Helper()
	client, ffd, bfd := detachedPair(t, upstream)
	t.Cleanup(func() {
		<-s.Done() // the relay no longer uses them
		unix.Close(ffd)
		unix.Close(bfd)
	})
	if err := r.Start(s, ffd, bfd); err != nil {
		t.Fatal(err)
	}
	return client, [2]int{ffd, bfd}
}

func fdOpen(fd int) bool {
	_, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0)
	return err == nil
}

// A session's ends count the bytes each way, half-closes pass through,
// a clean end has no error, and the relay leaves the sockets open.
func TestSessionCountsAndHalfClose(t *testing.T) {
	r := newRelay(t, RelayConfig{})
	up := startServer(t, func(c net.Conn) {
		b, _ := io.ReadAll(c) // until the client's half-close
		c.Write(append([]byte("re:"), b...))
	})
	s := r.Session(time.Minute, time.Minute)
	c, fds := sessionThrough(t, r, s, up)
	c.Write([]byte("hello"))
	c.CloseWrite()
	got, err := io.ReadAll(c)
	if err != nil || string(got) != "re:hello" {
		t.Fatalf("got %q %v", got, err)
	}
	in, out := s.Wait()
	if in != (End{N: 5}) || out != (End{N: 8}) {
		t.Errorf("ends %+v %+v, want {5} {8}", in, out)
	}
	if !fdOpen(fds[0]) || !fdOpen(fds[1]) {
		t.Error("the relay closed a session's socket")
	}
}

// An idle client (or server) ends the session after its timeout, as a
// read deadline of that side: Op read, os.ErrDeadlineExceeded, on in's
// (or out's) source; the other direction has no error.
func TestSessionTimeouts(t *testing.T) {
	r := newRelay(t, RelayConfig{})
	up := startServer(t, func(c net.Conn) {
		b := make([]byte, 4)
		io.ReadFull(c, b)
		c.Write(b)
		io.Copy(io.Discard, c)
	})
	for _, tc := range []struct {
		name           string
		client, server time.Duration
	}{{"client", 200 * time.Millisecond, time.Minute}, {"server", time.Minute, 200 * time.Millisecond}} {
		t.Run(tc.name, func(t *testing.T) {
			s := r.Session(tc.client, tc.server)
			c, _ := sessionThrough(t, r, s, up)
			c.Write([]byte("ping"))
			io.ReadFull(c, make([]byte, 4))
			start := time.Now()
			in, out := s.Wait()
			if d := time.Since(start); d < 150*time.Millisecond {
				t.Errorf("ended after %v, before the 200ms timeout", d)
			}
			timedOut, other := in.SrcErr, out.SrcErr
			if tc.name == "server" {
				timedOut, other = out.SrcErr, in.SrcErr
			}
			var op *net.OpError
			if !errors.As(timedOut, &op) || op.Op != "read" || !errors.Is(timedOut, os.ErrDeadlineExceeded) {
				t.Errorf("timed-out side's error %v, want a read deadline", timedOut)
			}
			if other != nil || in.DstErr != nil || out.DstErr != nil {
				t.Errorf("other errors %v %v %v, want none", other, in.DstErr, out.DstErr)
			}
			if in.N != 4 || out.N != 4 {
				t.Errorf("bytes %d %d, want 4 4", in.N, out.N)
			}
		})
	}
}

// A client that only sends keeps a silent server's side alive (bytes
// written to a socket refresh its read timeout, HAProxy's default, as
// netio.Relay and epoll.Pair); once it stops, the server's timeout ends
// the session.
func TestSessionOneWay(t *testing.T) {
	r := newRelay(t, RelayConfig{})
	up := startServer(t, func(c net.Conn) { io.Copy(io.Discard, c) })
	const short = 150 * time.Millisecond
	s := r.Session(time.Minute, short)
	c, _ := sessionThrough(t, r, s, up)
	var last time.Time
	for range 12 { // 12 x 40 ms: over three timeouts
		last = time.Now()
		c.Write([]byte("x"))
		select {
		case <-s.Done():
			in, out := s.Wait()
			t.Fatalf("the session ended while the client sent: %+v %+v", in, out)
		case <-time.After(40 * time.Millisecond):
		}
	}
	in, out := s.Wait()
	if d := time.Since(last); d < short {
		t.Errorf("ended %v after the last byte, before the timeout %v", d, short)
	}
	if !errors.Is(out.SrcErr, os.ErrDeadlineExceeded) || in.SrcErr != nil || in.N != 12 {
		t.Errorf("ends %+v %+v: want 12 bytes in, then the server's read timed out", in, out)
	}
}

// Abort before Start ends the session at once without relaying; during
// the relay it ends the pair (the client sees the end) with net.ErrClosed
// as in's source error.
func TestSessionAbort(t *testing.T) {
	r := newRelay(t, RelayConfig{})
	up := startServer(t, echo)
	s := r.Session(0, 0)
	s.Abort()
	c, _ := sessionThrough(t, r, s, up)
	in, _ := s.Wait()
	if !errors.Is(in.SrcErr, net.ErrClosed) || in.N != 0 {
		t.Errorf("aborted before start: %+v", in)
	}
	c.Close()

	s = r.Session(0, 0)
	c, _ = sessionThrough(t, r, s, up)
	c.Write([]byte("ping"))
	io.ReadFull(c, make([]byte, 4))
	s.Abort()
	s.Abort() // again: nothing
	in, out := s.Wait()
	if !errors.Is(in.SrcErr, net.ErrClosed) || in.N != 4 || out.N != 4 || out.SrcErr != nil {
		t.Errorf("aborted: %+v %+v", in, out)
	}
	if rest, err := io.ReadAll(c); len(rest) != 0 || err != nil {
		t.Errorf("client after the abort: %q %v, want the end", rest, err)
	}
	waitLive(t, r, 0)
}

// A client that does not read holds at most maxQueue buffers of the
// relay: the other sessions go on with a small pool; once it reads it gets
// every byte in order.
func TestSessionBackpressure(t *testing.T) {
	r := newRelay(t, RelayConfig{Buffers: 32, BufSize: 4096})
	const size = 4 << 20
	big := make([]byte, size)
	for i := range big {
		big[i] = byte(i * 7)
	}
	flood := startServer(t, func(c net.Conn) {
		c.Write(big)
		c.(*net.TCPConn).CloseWrite()
		io.Copy(io.Discard, c)
	})
	up := startServer(t, echo)
	slow := r.Session(0, 0)
	sc, _ := sessionThrough(t, r, slow, flood)
	// Let the flood fill the socket buffers and the queue.
	deadline := time.Now().Add(10 * time.Second)
	for r.Stats().Recvs < maxQueue && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	for i := range 3 {
		s := r.Session(0, 0)
		c, _ := sessionThrough(t, r, s, up)
		msg := []byte{'m', byte('0' + i)}
		for range 20 {
			c.Write(msg)
			got := make([]byte, 2)
			if _, err := io.ReadFull(c, got); err != nil || !bytes.Equal(got, msg) {
				t.Fatalf("session %d beside a slow reader: %q %v", i, got, err)
			}
		}
		c.Close()
		s.Wait()
	}
	got, err := io.ReadAll(sc)
	if err != nil || !bytes.Equal(got, big) {
		t.Fatalf("slow reader got %d bytes (%v), equal %v", len(got), err, bytes.Equal(got, big))
	}
	sc.Close()
	in, out := slow.Wait()
	if out.N != size || out.SrcErr != nil || out.DstErr != nil {
		t.Errorf("flood's end %+v (in %+v)", out, in)
	}
}

// Close ends the live sessions: each gets in.SrcErr net.ErrClosed, and a
// Start after Close fails.
func TestSessionRelayClose(t *testing.T) {
	r, err := NewRelay(RelayConfig{})
	if err != nil {
		if (errors.Is(err, unix.EPERM) || errors.Is(err, unix.ENOSYS)) && os.Getenv("CI") != "true" {
			t.Skipf("io_uring refused by this kernel: %v", err)
		}
		t.Fatal(err)
	}
	up := startServer(t, echo)
	var ss []*Session
	for range 3 {
		s := r.Session(time.Minute, 0)
		sessionThrough(t, r, s, up)
		ss = append(ss, s)
	}
	waitLive(t, r, 3)
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	for _, s := range ss {
		if in, _ := s.Wait(); !errors.Is(in.SrcErr, net.ErrClosed) {
			t.Errorf("after Close: %+v", in)
		}
	}
	if err := r.Start(r.Session(0, 0), -1, -1); !errors.Is(err, net.ErrClosed) {
		t.Errorf("Start after Close: %v", err)
	}
}
