package proxy

import (
	"net"
	"net/netip"
	"testing"
)

// addrConn is a net.Conn with a given peer address only.
type addrConn struct {
	net.Conn
	ra net.Addr
}

func (c addrConn) RemoteAddr() net.Addr { return c.ra }

// The client's address is read from the connection's TCPAddr without
// formatting it; an IPv4-mapped address (a dual-stack bind) is the IPv4
// one, as parsing its String gave.
func TestRemoteAddrPort(t *testing.T) {
	for _, c := range []struct {
		ra   net.Addr
		want string
	}{
		{&net.TCPAddr{IP: net.IPv4(10, 1, 2, 3).To4(), Port: 4242}, "10.1.2.3:4242"},
		{&net.TCPAddr{IP: net.IPv4(10, 1, 2, 3), Port: 4242}, "10.1.2.3:4242"}, // 16-byte form
		{&net.TCPAddr{IP: net.ParseIP("2001:db8::1"), Port: 80}, "[2001:db8::1]:80"},
		{&net.TCPAddr{IP: net.ParseIP("fe80::1"), Port: 80, Zone: "eth0"}, "[fe80::1%eth0]:80"},
		{&net.UnixAddr{Name: "@x", Net: "unix"}, "invalid AddrPort"},
	} {
		got := remoteAddrPort(addrConn{ra: c.ra})
		if got.String() != c.want {
			t.Errorf("%v: %v, want %s", c.ra, got, c.want)
		}
		if ta, ok := c.ra.(*net.TCPAddr); ok {
			if old, _ := netip.ParseAddrPort(ta.String()); old != got {
				t.Errorf("%v: %v, parsing the string gives %v", c.ra, got, old)
			}
		}
	}
}
