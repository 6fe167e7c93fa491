package epoll

import (
	"errors"
	"net"
	"testing"

	"golang.org/x/sys/unix"
)

// fdOpen reports whether fd is an open descriptor.
func fdOpen(fd int) bool {
	_, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0)
	return err == nil
}

// A lent socket is out of the epoll instance, usable by its holder, and
// still open after Close until given back; Close calls the abort once;
// the descriptor is closed once, by the give-back, and a second give-back
// or Close does nothing more.
func TestLendCloseWhileLent(t *testing.T) {
	g := newGroup(t, 1)
	c, peer := accepted(t, g)
	// Registered first: a read that waits.
	got := make(chan string, 1)
	go func() {
		b := make([]byte, 1)
		n, _ := c.Read(b)
		got <- string(b[:n])
	}()
	waitFor(t, "the read to wait", func() bool { return c.r.waiting.Load() })
	peer.Write([]byte("a"))
	if s := <-got; s != "a" {
		t.Fatalf("read %q", s)
	}
	if c.reg.Load() == regNone {
		t.Fatal("not registered after a read")
	}
	aborts := 0
	fd, giveBack, err := c.Lend(func() { aborts++ })
	if err != nil {
		t.Fatal(err)
	}
	if fd != c.fd || c.reg.Load() != regNone {
		t.Fatalf("fd %d (conn's %d), reg %d: want the conn's, out of epoll", fd, c.fd, c.reg.Load())
	}
	// Out of the epoll instance: a second DEL fails with ENOENT.
	if err := unix.EpollCtl(c.p.epfd, unix.EPOLL_CTL_DEL, fd, nil); !errors.Is(err, unix.ENOENT) {
		t.Errorf("lent socket still in epoll: DEL gave %v", err)
	}
	// The holder uses it.
	if _, err := unix.Write(fd, []byte("b")); err != nil {
		t.Fatal(err)
	}
	if got := mustRead(t, peer, make([]byte, 1)); got != "b" {
		t.Fatalf("peer read %q", got)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if aborts != 1 {
		t.Errorf("abort called %d times by Close, want 1", aborts)
	}
	if !fdOpen(fd) {
		t.Fatal("descriptor closed while still lent")
	}
	giveBack()
	if fdOpen(fd) && g.conns.get(fd) == c {
		t.Error("descriptor still open after the give-back of a closed conn")
	}
	giveBack() // once only
	if err := c.Close(); !errors.Is(err, net.ErrClosed) {
		t.Errorf("second Close: %v, want net.ErrClosed", err)
	}
	if aborts != 1 {
		t.Errorf("abort called %d times, want 1", aborts)
	}
}

// Given back before Close, the conn works as before (its reads register
// it again) and Close closes it without calling the abort; a closed conn
// is not lent.
func TestLendGiveBackThenUse(t *testing.T) {
	g := newGroup(t, 1)
	c, peer := accepted(t, g)
	aborted := false
	_, giveBack, err := c.Lend(func() { aborted = true })
	if err != nil {
		t.Fatal(err)
	}
	giveBack()
	peer.Write([]byte("z"))
	if got := mustRead(t, c, make([]byte, 1)); got != "z" {
		t.Fatalf("read after the give-back: %q", got)
	}
	fd := c.fd
	c.Close()
	if aborted {
		t.Error("abort called after the give-back")
	}
	waitFor(t, "the descriptor to close", func() bool { return g.conns.get(fd) != c })
	if _, _, err := c.Lend(func() {}); !errors.Is(err, net.ErrClosed) {
		t.Errorf("Lend of a closed conn: %v, want net.ErrClosed", err)
	}
}
