package http1

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/fulcrum-proxy/fulcrum/proxy/netio/epoll"
)

// fakeTry is a connection of the epoll layer as the exchange sees it
// (tryIO): TryWrite takes room bytes at most, Write takes everything, and
// reads come from resp. Await wakes at once.
type fakeTry struct {
	net.Conn
	room    int
	written bytes.Buffer
	resp    io.Reader
	awaited int
}

func (f *fakeTry) Await(w epoll.Waker)              { f.awaited++; w.Wake() }
func (f *fakeTry) Readable() bool                   { return true }
func (f *fakeTry) ReadExpired() bool                { return false }
func (f *fakeTry) Speculate()                       {}
func (f *fakeTry) TryRead(p []byte) (int, error)    { return f.resp.Read(p) }
func (f *fakeTry) Read(p []byte) (int, error)       { return f.resp.Read(p) }
func (f *fakeTry) Write(p []byte) (int, error)      { return f.written.Write(p) }
func (f *fakeTry) SetReadDeadline(time.Time) error  { return nil }
func (f *fakeTry) SetWriteDeadline(time.Time) error { return nil }
func (f *fakeTry) Close() error                     { return nil }
func (f *fakeTry) TryWrite(p []byte) (int, error) {
	n := min(len(p), f.room)
	f.room -= n
	f.written.Write(p[:n])
	if n < len(p) {
		return n, epoll.ErrWouldBlock
	}
	return n, nil
}

// TestExchangeTrySend: a head the socket takes whole leaves with TrySend
// (nothing pending); one it takes in part keeps the rest, which
// FlushPending writes, in order; Park arms the wait, and the response is
// read as usual after it.
func TestExchangeTrySend(t *testing.T) {
	for _, room := range []int{1 << 20, 100} {
		f := &fakeTry{room: room, resp: strings.NewReader("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")}
		ex := NewExchange(f, &Upstream{}, "")
		if !ex.Parkable() {
			t.Fatal("an exchange on the epoll layer is not parkable")
		}
		big := strings.Repeat("v", 5000)
		ex.WriteHead([]byte("GET"), []byte("/p"), func(w *bufio.Writer) {
			w.WriteString("x-big: " + big + "\r\n")
		}, 0)
		pending, err := ex.TrySend()
		if err != nil || pending != (room == 100) {
			t.Fatalf("room %d: TrySend pending %v, %v; want %v, nil", room, pending, err, room == 100)
		}
		if pending {
			if f.written.Len() != 100 {
				t.Fatalf("room 100: %d bytes written before the rest, want 100", f.written.Len())
			}
			if err := ex.FlushPending(); err != nil {
				t.Fatal(err)
			}
		}
		want := "GET /p HTTP/1.1\r\nx-big: " + big + "\r\n\r\n"
		if got := f.written.String(); got != want {
			t.Fatalf("room %d: server got %d bytes (%q...), want the head whole (%d)", room, len(got), got[:min(len(got), 40)], len(want))
		}
		woken := 0
		ex.Park(epoll.WakeFunc(func() { woken++ }), false)
		if woken != 1 || f.awaited != 1 || !ex.Readable() {
			t.Fatalf("room %d: woken %d, awaited %d; want 1 and 1", room, woken, f.awaited)
		}
		if err := ex.ReadHead(); err != nil || ex.Status() != 200 {
			t.Fatalf("room %d: ReadHead %v, status %d", room, err, ex.Status())
		}
		ex.Close()
	}
}
