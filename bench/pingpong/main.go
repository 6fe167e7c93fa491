// Command pingpong shows why a RawConn.Read whose first callback declines
// cannot replace a read that may find the socket empty (issue 21, point 2):
// internal/poll's prepareRead resets a readiness the netpoller recorded, and
// with edge-triggered epoll the event does not come again: with GOMAXPROCS=2
// MODE=decline stalls (the server's read fails at its 10 s deadline).
// Count reads with
//
//	MODE=plain perf stat -e syscalls:sys_enter_read -e syscalls:sys_exit_read --filter "ret == -11" ./pingpong
//
// Ping-pong over loopback: the server reads 4 bytes and answers 4, N times.
// MODE=plain: conn.Read. MODE=decline: RawConn.Read whose first callback
// declines (waits for readiness first), then reads.
package main

import (
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
	"time"
)

func main() {
	const n = 20000
	decline := os.Getenv("MODE") == "decline"
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fail(err)
	}
	go func() { // the server: answer each 4-byte ping with the same bytes
		c, err := l.Accept()
		if err != nil {
			fail(err)
		}
		// A stalled read ends the program instead of hanging it.
		c.SetDeadline(time.Now().Add(10 * time.Second))
		rc, err := c.(*net.TCPConn).SyscallConn()
		if err != nil {
			fail(err)
		}
		b := make([]byte, 64)
		for i := range n {
			var m int
			if decline {
				first := true
				var rerr error
				err = rc.Read(func(fd uintptr) bool {
					if first { // wait for readiness before the first read
						first = false
						return false
					}
					m, rerr = syscall.Read(int(fd), b)
					return rerr != syscall.EAGAIN
				})
				if err == nil {
					err = rerr
				}
			} else {
				m, err = c.Read(b)
			}
			if err != nil {
				fail(fmt.Errorf("server read, round %d of %d: %w", i+1, n, err))
			}
			if _, err := c.Write(b[:m]); err != nil {
				fail(err)
			}
		}
	}()
	c, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		fail(err)
	}
	b := make([]byte, 4)
	for range n {
		if _, err := c.Write([]byte("ping")); err != nil {
			fail(err)
		}
		if _, err := io.ReadFull(c, b); err != nil {
			fail(err)
		}
	}
	fmt.Printf("%d round trips\n", n)
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "pingpong:", err)
	os.Exit(1)
}
