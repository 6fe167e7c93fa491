// Package testutil holds small helpers shared by the tests of several
// packages. It is internal: nothing outside the module's tests uses it.
package testutil

import (
	"io"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"
)

// SyncBuffer collects text written from several goroutines (a logger, a
// child process's stdout and stderr) and is read while they write.
type SyncBuffer struct {
	mu  sync.Mutex
	buf strings.Builder
}

// Write appends p. It never fails.
func (b *SyncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns everything written so far.
func (b *SyncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// NeedTool returns the path of an external program a test drives (curl,
// haproxy, tmux...). When it is missing the test fails under CI=true,
// where the CI installs it (.ci/run PKGS), and is skipped elsewhere with
// the Debian package to install.
func NeedTool(t testing.TB, name, pkg string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err == nil {
		return path
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s not found: the CI must install the Debian package %s (.ci/run PKGS)", name, pkg)
	}
	t.Skipf("%s not found: apt-get install %s to run this test", name, pkg)
	return ""
}

// WaitFor polls cond every 10 ms until it holds or d has passed; then the
// test fails, naming what it waited for.
func WaitFor(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// PingPong is a relay benchmark's loop: b.N times, size bytes written to c
// and the same number read back (an echo behind the relay), timed alone.
func PingPong(b *testing.B, c net.Conn, size int) {
	b.Helper()
	msg := make([]byte, size)
	got := make([]byte, size)
	b.SetBytes(int64(size))
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if _, err := c.Write(msg); err != nil {
			b.Fatal(err)
		}
		if _, err := io.ReadFull(c, got); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
}

// EchoServer listens on 127.0.0.1:0 and sends back whatever each
// connection sends, until the test ends; it returns the address.
func EchoServer(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() { io.Copy(c, c); c.Close() }()
		}
	}()
	return l.Addr().String()
}

// DialEcho connects to addr (an echo behind a relay), checks that "ping"
// comes back, and returns the open connection (10 s deadline set).
func DialEcho(t testing.TB, addr string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	c.SetDeadline(time.Now().Add(10 * time.Second))
	buf := make([]byte, 4)
	if _, err := io.WriteString(c, "ping"); err != nil {
		c.Close()
		t.Fatal(err)
	}
	if _, err := io.ReadFull(c, buf); err != nil || string(buf) != "ping" {
		c.Close()
		t.Fatalf("echo through %s: %q %v", addr, buf, err)
	}
	return c
}
