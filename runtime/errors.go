package runtime

import (
	"fmt"

	"github.com/fulcrum-proxy/fulcrum/proxy"
)

// appendErrorEvent writes one captured error as HAProxy's `show errors`
// does: a line with a space, the date and proxy, the other side and the
// source, the buffer and the error position, then the bytes, one text
// line per line of the message (dumpTextLine). HAProxy's three lines of
// H1 multiplexer flags have no equivalent in fulcrum's engine: one line
// gives the parser's reason in their place, ending the header with " :"
// as they do.
func appendErrorEvent(b []byte, ev *proxy.ErrorEvent) []byte {
	b = append(b, " \n"...)
	kind, what := "frontend", "request"
	if ev.Response {
		kind, what = "backend", "response"
	}
	b = fmt.Appendf(b, "[%s] %s %s (#%d): invalid %s\n", haproxyDate(ev.When), kind, ev.Proxy, ev.ProxyID, what)
	other, otherKind := ev.Other, "backend"
	if ev.Response {
		otherKind = "frontend"
	}
	if other == "" {
		other = "<NONE>"
	}
	server := ev.Server
	if server == "" {
		server = "<NONE>"
	}
	b = fmt.Appendf(b, "  %s %s (#%d), server %s (#%d), event #%d, src %s\n",
		otherKind, other, ev.OtherID, server, ev.ServerID, ev.Event, ev.Src)
	b = fmt.Appendf(b, "  buffer starts at 0 (including 0 out), %d free,\n", max(ev.BufSize-len(ev.Buf), 0))
	b = fmt.Appendf(b, "  len %d, wraps at %d, error at position %d\n", len(ev.Buf), ev.BufSize, ev.Pos)
	b = fmt.Appendf(b, "  H1 error: %s :\n  \n", ev.Reason)
	for line, ptr := 0, 0; ptr < len(ev.Buf); {
		b, ptr, line = dumpTextLine(b, ev.Buf, ptr, line)
	}
	return b
}

// textEscapes are the letters of the escaped control bytes in a dump.
var textEscapes = [256]byte{'\t': 't', '\n': 'n', '\r': 'r', 0x1b: 'e', '\\': '\\'}

// dumpTextLine writes one line of HAProxy's text dump of buf from ptr:
// "  OFFSET" with a space (the start of a message line) or "+" (its
// continuation), a space, then the bytes as text — printable ASCII as is,
// \t \n \r \e \\ escaped, other bytes as \xHH — up to and including a
// line feed or until the line holds 79 characters. It returns the next
// position and the start of the current message line.
func dumpTextLine(b, buf []byte, ptr, line int) ([]byte, int, int) {
	start := len(b)
	cont := byte(' ')
	if ptr != line {
		cont = '+'
	}
	b = fmt.Appendf(b, "  %05d%c ", ptr, cont)
	end := start + 80
	for ptr < len(buf) {
		c := buf[ptr]
		switch {
		case c >= 0x20 && c < 0x7f && c != '\\':
			if len(b) > end-2 {
				return append(b, '\n'), ptr, line
			}
			b = append(b, c)
		case c == '\t' || c == '\n' || c == '\r' || c == 0x1b || c == '\\':
			if len(b) > end-3 {
				return append(b, '\n'), ptr, line
			}
			b = append(b, '\\', textEscapes[c])
		default:
			if len(b) > end-5 {
				return append(b, '\n'), ptr, line
			}
			b = append(b, '\\', 'x', "0123456789ABCDEF"[c>>4], "0123456789ABCDEF"[c&15])
		}
		ptr++
		if c == '\n' {
			return append(b, '\n'), ptr, ptr
		}
	}
	return append(b, '\n'), ptr, line
}
