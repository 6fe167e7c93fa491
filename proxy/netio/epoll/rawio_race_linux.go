//go:build race

package epoll

import "golang.org/x/sys/unix"

// Under the race detector the layer reads and writes through unix.Read
// and unix.Write, whose annotations tell the detector that bytes written
// to a socket happen before the same bytes are read from its peer (tests
// run clients, servers and the proxy in one process). rawRead and
// rawWrite are tested on their own (rawio_linux_test.go).
func sysRead(fd int, b []byte) (int, error)  { return unix.Read(fd, b) }
func sysWrite(fd int, b []byte) (int, error) { return unix.Write(fd, b) }
