package epoll

import (
	"errors"
	"io"
	"net"
	"sort"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// listen returns a Listener of g on a fresh loopback port, closed at the
// end of the test.
func listen(t *testing.T, g *Group) *Listener {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	el, err := g.Listen(l.(*net.TCPListener))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { el.Close() })
	return el
}

// N clients dialling at once give exactly N accepted Conns, whose peer
// addresses are the clients' (from accept4) and whose local address is the
// listener's; each carries its own client's bytes and has TCP_NODELAY,
// from the listening socket. The listening socket
// left Go's poller (the net.TCPListener is closed) and is not counted
// among the group's connections.
func TestAcceptMany(t *testing.T) {
	g := newGroup(t, 2)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	el, err := g.Listen(l.(*net.TCPListener))
	if err != nil {
		t.Fatal(err)
	}
	defer el.Close()
	if _, err := l.Accept(); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("the net.TCPListener after Listen: %v, want net.ErrClosed", err)
	}
	if el.Addr().String() != l.Addr().String() {
		t.Fatalf("Addr %v, want %v", el.Addr(), l.Addr())
	}
	const n = 40
	type client struct {
		c net.Conn
		i byte
	}
	clients := make(chan client, n)
	var dials sync.WaitGroup
	for i := range n {
		dials.Add(1)
		go func() {
			defer dials.Done()
			c, err := net.Dial("tcp", el.Addr().String())
			if err != nil {
				t.Error(err)
				return
			}
			c.Write([]byte{byte(i)}) // before or after its accept
			clients <- client{c, byte(i)}
		}()
	}
	var want, got []string
	byPeer := map[string]byte{}
	for range n {
		c, err := el.Accept()
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		ec := c.(*Conn)
		var nodelay int
		ec.rawControl(func(fd int) { nodelay, _ = unix.GetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_NODELAY) })
		if nodelay != 1 || !el.nodelay {
			t.Errorf("TCP_NODELAY %d on an accepted socket (listener's set: %v), want 1 inherited", nodelay, el.nodelay)
		}
		if ec.LocalAddr() != el.laddr.tcp || ec.LocalAddr().String() != el.Addr().String() {
			t.Errorf("local address %v, want the listener's %v", ec.LocalAddr(), el.Addr())
		}
		b := make([]byte, 1)
		ec.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, err := io.ReadFull(ec, b); err != nil {
			t.Fatal(err)
		}
		got = append(got, ec.RemoteAddr().String())
		byPeer[ec.RemoteAddr().String()] = b[0]
	}
	dials.Wait()
	close(clients)
	for c := range clients {
		defer c.c.Close()
		a := c.c.LocalAddr().String()
		want = append(want, a)
		// the byte a client sent came on the Conn whose peer it is
		if b, ok := byPeer[a]; !ok || b != c.i {
			t.Errorf("client %d (%s): the Conn with its address read %d, %v", c.i, a, b, ok)
		}
	}
	sort.Strings(want)
	sort.Strings(got)
	if len(got) != n || len(want) != n {
		t.Fatalf("accepted %d, dialled %d, want %d", len(got), len(want), n)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("peer addresses differ at %d: accepted %v, dialled %v", i, got, want)
		}
	}
	if len(byPeer) != n {
		t.Fatalf("%d distinct peers, want %d", len(byPeer), n)
	}
	if c := g.Conns(); c != n {
		t.Fatalf("group connections %d, want %d (the listener is not one)", c, n)
	}
	// No connection is left: the next Accept waits, until the deadline.
	el.SetDeadline(time.Now().Add(50 * time.Millisecond))
	var ne net.Error
	if _, err := el.Accept(); !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("Accept with nothing waiting: %v, want a timeout", err)
	}
}

// A listener bound to the wildcard address has no local address to give:
// an accepted Conn asks the kernel for its own on first use.
func TestAcceptWildcardLocalAddr(t *testing.T) {
	g := newGroup(t, 1)
	l, err := net.Listen("tcp4", "0.0.0.0:0")
	if err != nil {
		t.Fatal(err)
	}
	el, err := g.Listen(l.(*net.TCPListener))
	if err != nil {
		t.Fatal(err)
	}
	defer el.Close()
	if el.laddr != nil {
		t.Fatalf("laddr %v for a wildcard bind, want none", el.laddr)
	}
	_, port, _ := net.SplitHostPort(el.Addr().String())
	peer, err := net.Dial("tcp", "127.0.0.1:"+port)
	if err != nil {
		t.Fatal(err)
	}
	defer peer.Close()
	c, err := el.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if c.LocalAddr().String() != peer.RemoteAddr().String() || c.RemoteAddr().String() != peer.LocalAddr().String() {
		t.Fatalf("addresses %v -> %v, want %v -> %v", c.RemoteAddr(), c.LocalAddr(), peer.LocalAddr(), peer.RemoteAddr())
	}
}

// Closing the listener while an Accept waits ends that Accept with
// net.ErrClosed, and the socket is closed: the port refuses connections.
func TestAcceptCloseWhileWaiting(t *testing.T) {
	g := newGroup(t, 1)
	el := listen(t, g)
	errc := make(chan error, 1)
	go func() {
		_, err := el.Accept()
		errc <- err
	}()
	waitFor(t, "Accept to wait", func() bool { return el.s.r.waiting.Load() })
	if err := el.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-errc:
		if !errors.Is(err, net.ErrClosed) {
			t.Fatalf("Accept: %v, want net.ErrClosed", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Accept still waiting after Close")
	}
	if err := el.Close(); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("second Close: %v, want net.ErrClosed", err)
	}
	if c, err := net.DialTimeout("tcp", el.Addr().String(), 5*time.Second); err == nil {
		c.Close()
		t.Fatal("the closed listener's port still accepts connections")
	}
}

// An accept4 failure (EMFILE) is returned at once, one accept4 per Accept,
// never retried inside Accept (the caller backs off); the connection stays
// in the backlog and the first Accept after the failure clears gets it. A
// connection aborted before its accept (ECONNABORTED) is skipped.
func TestAcceptErrorsInjected(t *testing.T) {
	g := newGroup(t, 1)
	el := listen(t, g)
	var calls atomic.Int32
	var fail atomic.Value
	fail.Store([]error{syscall.EMFILE, syscall.EMFILE, syscall.ECONNABORTED})
	el.accept = func(fd int) (int, syscall.Sockaddr, error) {
		calls.Add(1)
		if errs := fail.Load().([]error); len(errs) > 0 {
			fail.Store(errs[1:])
			return -1, nil, errs[0]
		}
		return accept4(fd)
	}
	peer, err := net.Dial("tcp", el.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer peer.Close()
	for i := range 2 {
		_, err := el.Accept()
		if !errors.Is(err, syscall.EMFILE) {
			t.Fatalf("Accept %d: %v, want EMFILE", i, err)
		}
		if n := calls.Load(); n != int32(i+1) {
			t.Fatalf("after %d failed Accepts: %d accept4 calls, want %d", i+1, n, i+1)
		}
	}
	c, err := el.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if c.RemoteAddr().String() != peer.LocalAddr().String() {
		t.Fatalf("accepted %v, want %v", c.RemoteAddr(), peer.LocalAddr())
	}
	if n := calls.Load(); n != 4 {
		t.Fatalf("accept4 calls %d, want 4 (2 EMFILE, 1 ECONNABORTED, 1 success)", n)
	}
}

// A burst of connections is accepted with one accept4 each and a single
// failing one at the end, when Accept finds the backlog empty and waits.
func TestAcceptBurstCalls(t *testing.T) {
	g := newGroup(t, 1)
	el := listen(t, g)
	var calls, again atomic.Int32
	el.accept = func(fd int) (int, syscall.Sockaddr, error) {
		calls.Add(1)
		nfd, sa, err := accept4(fd)
		if err == syscall.EAGAIN {
			again.Add(1)
		}
		return nfd, sa, err
	}
	const n = 8
	var peers []net.Conn
	for range n {
		c, err := net.Dial("tcp", el.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		peers = append(peers, c)
	}
	waitFor(t, "the backlog to hold every connection", func() bool {
		var q uint32
		el.s.rawControl(func(fd int) {
			if ti, err := unix.GetsockoptTCPInfo(fd, unix.IPPROTO_TCP, unix.TCP_INFO); err == nil {
				q = ti.Unacked // a listening socket's accept queue length
			}
		})
		return q == n
	})
	for range n {
		c, err := el.Accept()
		if err != nil {
			t.Fatal(err)
		}
		c.Close()
	}
	if calls.Load() != n || again.Load() != 0 {
		t.Fatalf("%d accept4 calls, %d EAGAIN, want %d and 0", calls.Load(), again.Load(), n)
	}
	el.SetDeadline(time.Now().Add(20 * time.Millisecond))
	if _, err := el.Accept(); err == nil {
		t.Fatal("Accept with an empty backlog succeeded")
	}
	if calls.Load() != n+1 || again.Load() != 1 {
		t.Fatalf("%d accept4 calls, %d EAGAIN, want %d and 1", calls.Load(), again.Load(), n+1)
	}
}

// rawControl runs f on c's descriptor.
func (c *Conn) rawControl(f func(fd int)) {
	rawConn{c}.Control(func(fd uintptr) { f(int(fd)) })
}

// A socket enters the epoll instance only at its first wait: an accepted
// client whose bytes are there is read without it, and a read that has to
// wait registers it and is woken by the next bytes.
func TestRegisterAtFirstWait(t *testing.T) {
	g := newGroup(t, 1)
	el := listen(t, g)
	peer, err := net.Dial("tcp", el.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer peer.Close()
	peer.Write([]byte("abc"))
	nc, err := el.Accept()
	if err != nil {
		t.Fatal(err)
	}
	c := nc.(*Conn)
	defer c.Close()
	waitFor(t, "the bytes in the socket", func() bool {
		var n int
		c.rawControl(func(fd int) { n, _ = unix.IoctlGetInt(fd, unix.SIOCINQ) })
		return n == 3
	})
	buf := make([]byte, 8)
	if n, err := c.Read(buf); err != nil || string(buf[:n]) != "abc" {
		t.Fatalf("read %q, %v", buf[:n], err)
	}
	if r := c.reg.Load(); r != regNone {
		t.Fatalf("registration %d after a read that did not wait, want none", r)
	}
	if !c.Idle() { // not registered: it looks (a peek), finds nothing
		t.Fatal("Idle with nothing sent: false")
	}
	got := make(chan string, 1)
	go func() {
		n, err := c.Read(buf)
		if err != nil {
			got <- err.Error()
			return
		}
		got <- string(buf[:n])
	}()
	waitFor(t, "the read to wait", func() bool { return c.r.waiting.Load() })
	if r := c.reg.Load(); r != regIn {
		t.Fatalf("registration %d while a read waits, want input", r)
	}
	peer.Write([]byte("d"))
	select {
	case s := <-got:
		if s != "d" {
			t.Fatalf("read %q, want d", s)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the waiting read was not woken")
	}
}
