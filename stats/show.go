package stats

import (
	"bufio"
	"io"
	"strconv"
	"sync"

	"github.com/fulcrum-proxy/fulcrum/proxy"
)

// The writers below print `show stat` without the empty line that ends a
// Runtime API reply: the dispatcher frames replies, and the HTTP page's
// bodies end with the last line. Each buffers its output and returns the
// first write error; ErrNoSuchProxy comes before anything is written.

// writerPool recycles the writers' 32 KiB buffers: the Runtime API renders
// a reply per client, and a flood of `show stat` clients must not become a
// flood of garbage, whose collection the data path pays for.
var writerPool = sync.Pool{New: func() any { return bufio.NewWriterSize(nil, 32<<10) }}

// newWriter returns a pooled buffered writer to w; freeWriter returns it.
func newWriter(w io.Writer) *bufio.Writer {
	bw := writerPool.Get().(*bufio.Writer)
	bw.Reset(w)
	return bw
}

func freeWriter(bw *bufio.Writer) {
	bw.Reset(nil)
	writerPool.Put(bw)
}

// WriteCSV writes `show stat`: the "# pxname,svname,..." header, then one
// line per row that f selects. Every field, the last included, is followed
// by a comma, as HAProxy prints it.
func WriteCSV(w io.Writer, snap *proxy.Snapshot, f Filter) error {
	if f.Proxy != "" && !hasProxy(snap, f.Proxy) {
		return ErrNoSuchProxy
	}
	bw := newWriter(w)
	defer freeWriter(bw)
	bw.Write(csvHeader)
	var line []byte
	err := eachRow(snap, &f, func(r *row) error {
		line = line[:0]
		for i := range columns {
			c := &columns[i]
			line = c.value(r).appendCSV(line, c.typ)
			line = append(line, ',')
		}
		line = append(line, '\n')
		_, err := bw.Write(line)
		return err
	})
	if err != nil {
		return err
	}
	return bw.Flush()
}

// csvHeader is the CSV header line, built once from the table.
var csvHeader = func() []byte {
	b := []byte("# ")
	for i := range columns {
		b = append(b, columns[i].Name...)
		b = append(b, ',')
	}
	return append(b, '\n')
}()

// WriteTyped writes `show stat typed`: one line per non-empty field,
// "F.<iid>.<sid>.<pos>.<name>.1:<tags>:<type>:<value>".
func WriteTyped(w io.Writer, snap *proxy.Snapshot, f Filter) error {
	return writeTyped(w, snap, f, false)
}

// WriteDesc writes `show stat typed desc`: WriteTyped's lines, each followed
// by `:"<description>"`. (HAProxy 2.6 ignores desc in CSV and JSON output.)
func WriteDesc(w io.Writer, snap *proxy.Snapshot, f Filter) error {
	return writeTyped(w, snap, f, true)
}

// writeTyped is WriteTyped, with descriptions when desc is set.
func writeTyped(w io.Writer, snap *proxy.Snapshot, f Filter, desc bool) error {
	if f.Proxy != "" && !hasProxy(snap, f.Proxy) {
		return ErrNoSuchProxy
	}
	bw := newWriter(w)
	defer freeWriter(bw)
	var line []byte
	err := eachRow(snap, &f, func(r *row) error {
		for i := range columns {
			c := &columns[i]
			pos := typedPos(i)
			if pos < 0 {
				continue
			}
			v := c.value(r)
			if !v.set {
				continue
			}
			line = append(line[:0], r.kind.letter(), '.')
			line = strconv.AppendInt(line, int64(r.iid), 10)
			line = append(line, '.')
			line = strconv.AppendInt(line, int64(r.sid), 10)
			line = append(line, '.')
			line = strconv.AppendInt(line, int64(pos), 10)
			line = append(line, '.')
			line = append(line, c.Name...)
			line = append(line, ".1:"...)
			line = append(line, c.tagsFor(r.kind)...)
			line = append(line, ':')
			line = append(line, c.typ.String()...)
			line = append(line, ':')
			line = v.appendText(line, c.typ)
			if desc {
				line = append(line, ":\""...)
				line = append(line, c.Desc...)
				line = append(line, '"')
			}
			line = append(line, '\n')
			if _, err := bw.Write(line); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	return bw.Flush()
}

// WriteJSON writes `show stat json`: an array with one array per row, of
// one object per non-empty field, then a newline.
func WriteJSON(w io.Writer, snap *proxy.Snapshot, f Filter) error {
	if f.Proxy != "" && !hasProxy(snap, f.Proxy) {
		return ErrNoSuchProxy
	}
	bw := newWriter(w)
	defer freeWriter(bw)
	bw.WriteByte('[')
	var b []byte
	first := true
	err := eachRow(snap, &f, func(r *row) error {
		b = b[:0]
		if !first {
			b = append(b, ',')
		}
		first = false
		b = append(b, '[')
		n := 0
		for i := range columns {
			c := &columns[i]
			pos := typedPos(i)
			if pos < 0 {
				continue
			}
			v := c.value(r)
			if !v.set {
				continue
			}
			if n > 0 {
				b = append(b, ',')
			}
			n++
			b = append(b, `{"objType":"`...)
			b = append(b, r.kind.objType()...)
			b = append(b, `","proxyId":`...)
			b = strconv.AppendInt(b, int64(r.iid), 10)
			b = append(b, `,"id":`...)
			b = strconv.AppendInt(b, int64(r.sid), 10)
			b = append(b, `,"field":{"pos":`...)
			b = strconv.AppendInt(b, int64(pos), 10)
			b = append(b, `,"name":`...)
			b = appendJSONString(b, c.Name)
			b = append(b, `},"processNum":1,"tags":`...)
			b = appendJSONTags(b, c.tagsFor(r.kind))
			b = append(b, `,"value":`...)
			b = appendJSONValue(b, v, c.typ)
			b = append(b, '}')
		}
		b = append(b, ']')
		_, err := bw.Write(b)
		return err
	})
	if err != nil {
		return err
	}
	bw.WriteString("]\n")
	return bw.Flush()
}
