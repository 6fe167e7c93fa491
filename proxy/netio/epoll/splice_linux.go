package epoll

import (
	"io"
	"os"
	"sync"

	"golang.org/x/sys/unix"
)

// spliceChunk is the most one splice call moves (Go's own splice uses the
// same bound).
const spliceChunk = 1 << 20

// copyBufs are the buffers of ReadFrom's copy when splice does not apply.
var copyBufs = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

// ReadFrom copies from r until EOF (or r's limit) into c. When r is
// another Conn, or an io.LimitedReader of one, the bytes go socket to pipe
// to socket with splice(2), waiting on each side's readiness as Read and
// Write do; otherwise they are copied through a buffer. It returns the
// bytes written; an error reading r is returned as it came, one writing c
// as a *net.OpError whose Op is "readfrom" (netio.IsWriteErr).
func (c *Conn) ReadFrom(r io.Reader) (int64, error) {
	src, limit := r, int64(-1)
	if lr, ok := r.(*io.LimitedReader); ok {
		src, limit = lr.R, lr.N
		if limit <= 0 {
			return 0, nil
		}
	}
	sc, ok := src.(*Conn)
	if !ok {
		return c.copyFrom(r)
	}
	n, err := c.spliceFrom(sc, limit)
	if lr, ok := r.(*io.LimitedReader); ok {
		lr.N -= n
	}
	return n, err
}

// copyFrom is io.Copy through a pooled buffer (without calling ReadFrom
// again).
func (c *Conn) copyFrom(r io.Reader) (int64, error) {
	bp := copyBufs.Get().(*[]byte)
	defer copyBufs.Put(bp)
	return io.CopyBuffer(writerOnly{c}, r, *bp)
}

// writerOnly hides Conn's ReadFrom from io.CopyBuffer.
type writerOnly struct{ c *Conn }

func (w writerOnly) Write(b []byte) (int, error) { return w.c.Write(b) }

// spliceFrom moves up to limit bytes (limit < 0: until EOF) from src to c
// through a pipe.
func (c *Conn) spliceFrom(src *Conn, limit int64) (int64, error) {
	if !c.incref() {
		return 0, c.opErr("readfrom", os.ErrClosed)
	}
	defer c.decref()
	if !src.incref() {
		return 0, src.opErr("read", os.ErrClosed)
	}
	defer src.decref()
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_NONBLOCK|unix.O_CLOEXEC); err != nil {
		return 0, c.opErr("readfrom", os.NewSyscallError("pipe2", err))
	}
	defer unix.Close(p[0])
	defer unix.Close(p[1])
	// A pipe holds 64 KiB by default: at that size a bulk transfer makes
	// 16 times the splices (and waits) of a chunk. Grown as Go's own
	// splice does (internal/poll, F_SETPIPE_SZ); if refused (pipe-max-size,
	// the user's pipe quota), the default pipe still works.
	unix.FcntlInt(uintptr(p[0]), unix.F_SETPIPE_SZ, spliceChunk)
	var total int64
	for limit < 0 || total < limit {
		want := int64(spliceChunk)
		if limit >= 0 && limit-total < want {
			want = limit - total
		}
		// Socket to pipe: wait for the source like Read does.
		var in int
		for {
			if src.r.expired() {
				return total, src.opErr("read", os.ErrDeadlineExceeded)
			}
			if src.r.ready.Swap(0) != 0 {
				n, err := unix.Splice(src.fd, nil, p[1], nil, int(want), unix.SPLICE_F_NONBLOCK|unix.SPLICE_F_MOVE)
				if err == unix.EINTR {
					src.r.ready.Store(1)
					continue
				}
				if err == nil {
					src.r.ready.Store(1) // not known to be drained
					in = int(n)
					break
				}
				if err != unix.EAGAIN {
					src.r.ready.Store(1)
					return total, src.opErr("read", os.NewSyscallError("splice", err))
				}
			}
			if err := src.wait(&src.r); err != nil {
				return total, src.opErr("read", err)
			}
		}
		if in == 0 {
			return total, nil // EOF
		}
		// Pipe to socket: everything taken out of the source is written.
		for in > 0 {
			if c.w.expired() {
				return total, c.opErr("readfrom", os.ErrDeadlineExceeded)
			}
			c.w.ready.Store(0)
			n, err := unix.Splice(p[0], nil, c.fd, nil, in, unix.SPLICE_F_NONBLOCK|unix.SPLICE_F_MOVE)
			if n > 0 {
				in -= int(n)
				total += n
				continue
			}
			if err == unix.EINTR {
				continue
			}
			if err != nil && err != unix.EAGAIN {
				c.w.ready.Store(1)
				return total, c.opErr("readfrom", os.NewSyscallError("splice", err))
			}
			if err := c.waitWrite(); err != nil {
				return total, c.opErr("readfrom", err)
			}
		}
		c.w.ready.Store(1)
	}
	return total, nil
}
