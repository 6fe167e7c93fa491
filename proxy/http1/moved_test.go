package http1

import (
	"net"
	"net/netip"
	"testing"
	"time"
)

// TestMovedConnections: once a server's address changed (Moved), a
// connection to the old address does not go back to the pool when it
// finishes, and one pooled before the change is not taken: requests
// connect to the new address. A connection to the current address is
// pooled and reused.
func TestMovedConnections(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var accepted []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			accepted = append(accepted, c)
		}
	}()
	defer func() {
		l.Close()
		<-done
		for _, c := range accepted {
			c.Close()
		}
	}()
	up := &Upstream{}
	up.Pool.max = -1
	dial := func() *upConn {
		c, err := net.Dial("tcp", l.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		return newUpConn(c, up, "")
	}
	here := netip.MustParseAddrPort(l.Addr().String())
	elsewhere := netip.MustParseAddrPort("127.0.0.1:1")

	dial().release(time.Now())
	if up.Pool.Len() != 1 {
		t.Fatalf("before any change: %d idle, want 1", up.Pool.Len())
	}
	inFlight := dial()
	up.Moved.Store(&elsewhere)
	if uc := up.Pool.get(false, ""); uc != nil {
		t.Fatal("a connection to the old address was taken")
	}
	inFlight.release(time.Now())
	if up.Pool.Len() != 0 {
		t.Fatal("a connection to the old address went back to the pool")
	}
	up.Moved.Store(&here)
	dial().release(time.Now())
	if uc := up.Pool.get(false, ""); uc == nil {
		t.Fatal("a connection to the current address was not pooled and reused")
	} else {
		uc.close()
	}
}
