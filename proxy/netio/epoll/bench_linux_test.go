package epoll

import (
	"context"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/fulcrum-proxy/fulcrum/internal/testutil"
)

// BenchmarkRoundTrip measures the layer's hot path, one 64-byte request and
// its answer through a relay: a client writes to the relay's accepted
// connection, the relay reads it and writes it to its server connection,
// the server echoes, and the relay reads the answer and writes it back to
// the client. "epoll" runs the relay's two connections on a Group (the
// accepted one from Listener, the server one moved by FromTCP), "go" on
// Go's net.Conns, as the proxy's two layers do. One op is one round trip.
// For the kernel's side, count with perf stat -e
// 'syscalls:sys_enter_read,syscalls:sys_exit_read' on the test binary.
func BenchmarkRoundTrip(b *testing.B) {
	for _, layer := range []string{"go", "epoll"} {
		b.Run(layer, func(b *testing.B) {
			var g *Group
			if layer == "epoll" {
				var err error
				if g, err = NewGroup(1); err != nil {
					b.Fatal(err)
				}
				defer g.Unref()
			}
			// The server: echo.
			sl, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				b.Fatal(err)
			}
			defer sl.Close()
			go func() {
				c, err := sl.Accept()
				if err != nil {
					return
				}
				defer c.Close()
				io.Copy(c, c)
			}()
			// The relay's listener and the client.
			ll, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				b.Fatal(err)
			}
			var l net.Listener = ll
			if g != nil {
				el, err := g.Listen(ll.(*net.TCPListener))
				if err != nil {
					b.Fatal(err)
				}
				l = el
			}
			defer l.Close()
			client, err := net.Dial("tcp", ll.Addr().String())
			if err != nil {
				b.Fatal(err)
			}
			defer client.Close()
			front, err := l.Accept()
			if err != nil {
				b.Fatal(err)
			}
			defer front.Close()
			back, err := net.Dial("tcp", sl.Addr().String())
			if err != nil {
				b.Fatal(err)
			}
			if g != nil {
				ec, err := g.FromTCP(back.(*net.TCPConn))
				if err != nil {
					b.Fatal(err)
				}
				back = ec
			}
			defer back.Close()
			relayed := make(chan struct{})
			go func() { // the relay: one goroutine, as an HTTP/1 session
				defer close(relayed)
				buf := make([]byte, 4096)
				for {
					n, err := front.Read(buf)
					if err != nil {
						return
					}
					if _, err := back.Write(buf[:n]); err != nil {
						return
					}
					if _, err := io.ReadFull(back, buf[:n]); err != nil {
						return
					}
					if _, err := front.Write(buf[:n]); err != nil {
						return
					}
				}
			}()
			testutil.PingPong(b, client, 64)
			client.Close()
			<-relayed
		})
	}
}

// BenchmarkAccept measures the accept path, a connection per request as
// http-close: a client dials, writes 16 bytes and reads 16 back until the
// end; the server side accepts (one goroutine, as the proxy's accept loop),
// and a goroutine per connection reads the 16 bytes, answers and closes.
// "epoll" accepts on a Group's Listener (the listening socket in the
// layer's epoll instance, no getsockname, the accepted socket registered
// only if it has to wait), "go" on Go's net.TCPListener. One op is one
// connection. Count the kernel's side as for BenchmarkRoundTrip, with
// 'syscalls:sys_enter_accept4,syscalls:sys_enter_epoll_ctl,
// syscalls:sys_enter_getsockname' (the client's calls are counted too).
func BenchmarkAccept(b *testing.B) {
	for _, layer := range []string{"go", "epoll"} {
		b.Run(layer, func(b *testing.B) {
			// No TCP keep-alive on either side, as the proxy's binds
			// (4 setsockopt per socket otherwise).
			lc := net.ListenConfig{KeepAlive: -1}
			ll, err := lc.Listen(context.Background(), "tcp", "127.0.0.1:0")
			if err != nil {
				b.Fatal(err)
			}
			dialer := net.Dialer{KeepAlive: -1}
			addr := ll.Addr().String()
			var l net.Listener = ll
			if layer == "epoll" {
				g, err := NewGroup(1)
				if err != nil {
					b.Fatal(err)
				}
				defer g.Unref()
				el, err := g.Listen(ll.(*net.TCPListener))
				if err != nil {
					b.Fatal(err)
				}
				l = el
			}
			var wg sync.WaitGroup
			wg.Add(1)
			go func() { // the accept loop
				defer wg.Done()
				for {
					c, err := l.Accept()
					if err != nil {
						return
					}
					wg.Add(1)
					go func() {
						defer wg.Done()
						defer c.Close()
						buf := make([]byte, 16)
						if _, err := io.ReadFull(c, buf); err == nil {
							c.Write(buf)
						}
					}()
				}
			}()
			msg := make([]byte, 16)
			got := make([]byte, 64)
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				c, err := dialer.Dial("tcp", addr)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := c.Write(msg); err != nil {
					b.Fatal(err)
				}
				if n, err := io.ReadAtLeast(c, got, len(msg)); err != nil || n != len(msg) {
					b.Fatalf("read %d, %v", n, err)
				}
				c.Close()
			}
			b.StopTimer()
			l.Close()
			wg.Wait()
		})
	}
}

// BenchmarkAcceptClose measures a connection's way through the layer's
// Listener as http-close's clients make it: a client connects, Accept
// returns the Conn (accept4), the proxy closes it (close), and the client
// sees the end. "raw" makes accept4, close and epoll_ctl without the
// runtime's system call bookkeeping (the default), "wrapped" with it
// (FULCRUM_RAW_CALLS=0). One op is one connection. What the raw calls
// save is mostly sysmon's wake-ups under load (bench/README.md), which a
// benchmark on an otherwise idle process shows little of.
func BenchmarkAcceptClose(b *testing.B) {
	for _, mode := range []string{"raw", "wrapped"} {
		b.Run(mode, func(b *testing.B) {
			saved := rawCalls
			rawCalls = mode == "raw"
			defer func() { rawCalls = saved }()
			g, err := NewGroup(1)
			if err != nil {
				b.Fatal(err)
			}
			defer g.Unref()
			ll, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				b.Fatal(err)
			}
			el, err := g.Listen(ll.(*net.TCPListener))
			if err != nil {
				b.Fatal(err)
			}
			defer el.Close()
			addr := el.Addr().String()
			buf := make([]byte, 1)
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				client, err := net.Dial("tcp", addr)
				if err != nil {
					b.Fatal(err)
				}
				c, err := el.Accept()
				if err != nil {
					b.Fatal(err)
				}
				c.Close()
				if _, err := client.Read(buf); err != io.EOF {
					b.Fatalf("client read: %v, want EOF", err)
				}
				client.Close()
			}
		})
	}
}

// BenchmarkDeadlineNoWait measures what a deadline costs a connection
// served without waiting, as an http-close client whose request is there
// at its accept: the read deadline is set, the request read, the write
// deadline set, the answer written, the connection closed. "lazy" makes
// no timer (the default), "eager" one per deadline
// (FULCRUM_LAZY_DEADLINES=0). One op is one connection's deadlines,
// read, write and close; the sockets come from a socketpair made per op
// (outside the timer).
func BenchmarkDeadlineNoWait(b *testing.B) {
	for _, mode := range []string{"lazy", "eager"} {
		b.Run(mode, func(b *testing.B) {
			saved := lazyDeadlines
			lazyDeadlines = mode == "lazy"
			defer func() { lazyDeadlines = saved }()
			g, err := NewGroup(1)
			if err != nil {
				b.Fatal(err)
			}
			defer g.Unref()
			req, buf := []byte("GET / HTTP/1.1\r\n\r\n"), make([]byte, 64)
			b.ReportAllocs()
			for b.Loop() {
				b.StopTimer()
				fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := unix.Write(fds[1], req); err != nil {
					b.Fatal(err)
				}
				c := g.register(fds[0], true)
				b.StartTimer()
				c.SetReadDeadline(time.Now().Add(time.Minute))
				if _, err := c.Read(buf); err != nil {
					b.Fatal(err)
				}
				c.SetWriteDeadline(time.Now().Add(time.Minute))
				if _, err := c.Write(req); err != nil {
					b.Fatal(err)
				}
				c.Close()
				b.StopTimer()
				unix.Close(fds[1])
				b.StartTimer()
			}
		})
	}
}
