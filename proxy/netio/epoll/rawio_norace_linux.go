//go:build !race

package epoll

// sysRead and sysWrite are the reads and writes of the layer's sockets:
// the raw calls (rawio_linux.go).
func sysRead(fd int, b []byte) (int, error)  { return rawRead(fd, b) }
func sysWrite(fd int, b []byte) (int, error) { return rawWrite(fd, b) }
