//go:build !unix

package proxy

import "net"

// resetOnClose makes the close of c send a TCP reset where the connection
// allows it (see reset_unix.go).
func resetOnClose(c net.Conn) {
	if l, ok := c.(interface{ SetLinger(int) error }); ok {
		l.SetLinger(0)
	}
}
