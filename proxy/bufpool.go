package proxy

import (
	"bufio"
	"io"
	"sync"
)

// Buffer sizes: 16 KiB matches HAProxy's tune.bufsize; a request or response
// head must fit in maxHeaderBytes.
const (
	bufSize        = 16 << 10
	maxHeaderBytes = 64 << 10
)

var (
	readerPool = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, bufSize) }}
	writerPool = sync.Pool{New: func() any { return bufio.NewWriterSize(nil, bufSize) }}
)

func getReader(r io.Reader) *bufio.Reader {
	br := readerPool.Get().(*bufio.Reader)
	br.Reset(r)
	return br
}

func putReader(br *bufio.Reader) {
	if br == nil {
		return
	}
	br.Reset(nil)
	readerPool.Put(br)
}

func getWriter(w io.Writer) *bufio.Writer {
	bw := writerPool.Get().(*bufio.Writer)
	bw.Reset(w)
	return bw
}

func putWriter(bw *bufio.Writer) {
	if bw == nil {
		return
	}
	bw.Reset(nil)
	writerPool.Put(bw)
}
