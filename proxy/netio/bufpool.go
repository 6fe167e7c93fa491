package netio

import (
	"bufio"
	"io"
	"sync"
)

// BufSize is the size of the pooled readers and writers and of a relay's
// copy buffer: 16 KiB, as HAProxy's tune.bufsize.
const BufSize = 16 << 10

// The pools of readers and writers; sync.Pool is the reason for these
// package variables.
var (
	readerPool = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, BufSize) }}
	writerPool = sync.Pool{New: func() any { return bufio.NewWriterSize(nil, BufSize) }}
)

// GetReader returns a pooled BufSize reader on r.
func GetReader(r io.Reader) *bufio.Reader {
	br := readerPool.Get().(*bufio.Reader)
	br.Reset(r)
	return br
}

// PutReader returns br to the pool (nil is ignored); br must not be used
// after.
func PutReader(br *bufio.Reader) {
	if br == nil {
		return
	}
	br.Reset(nil)
	readerPool.Put(br)
}

// GetWriter returns a pooled BufSize writer on w.
func GetWriter(w io.Writer) *bufio.Writer {
	bw := writerPool.Get().(*bufio.Writer)
	bw.Reset(w)
	return bw
}

// PutWriter returns bw to the pool (nil is ignored); bw must not be used
// after.
func PutWriter(bw *bufio.Writer) {
	if bw == nil {
		return
	}
	bw.Reset(nil)
	writerPool.Put(bw)
}

// bufPool holds BufSize copy buffers (GetBuf) as pointers to arrays: a
// slice's array pointer is had back without allocating, so neither Get
// nor Put allocates (a pointer to the slice itself would escape in Put).
var bufPool = sync.Pool{New: func() any { return new([BufSize]byte) }}

// GetBuf returns a pooled BufSize copy buffer.
func GetBuf() []byte { return bufPool.Get().(*[BufSize]byte)[:] }

// PutBuf returns a buffer from GetBuf to the pool; b must not be used
// after.
func PutBuf(b []byte) {
	if cap(b) < BufSize {
		return
	}
	bufPool.Put((*[BufSize]byte)(b[:BufSize]))
}
