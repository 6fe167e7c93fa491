package proxyproto

// Taking the header off an accepted connection. The connection must stay
// what it is (a *net.TCPConn, so that fulcrum's relays splice): the header
// is read without buffering a byte past it. On Linux sockets, Read peeks at the
// bytes waiting (recv with MSG_PEEK: read_linux.go), decodes them, then
// consumes exactly the header's length; two system calls per connection.
// Elsewhere it reads the exact bytes it needs: version 2 by its length
// field, version 1 one byte at a time up to its CRLF (readExact).

import (
	"errors"
	"io"
	"net"
	"os"
)

// Read reads the PROXY header at the start of c and consumes exactly its
// bytes. The caller bounds the wait with c's read deadline. Errors are
// *Error: Empty, Truncated, Timeout or Abort when reading fails, or the
// Parse codes.
func Read(c net.Conn) (Header, error) {
	if h, err, ok := readPeek(c); ok {
		return h, err
	}
	return readExact(c)
}

// readErr maps a read error after got bytes of a header to a *Error.
func readErr(err error, got int) *Error {
	switch {
	case errors.Is(err, os.ErrDeadlineExceeded):
		return &Error{Code: Timeout, Err: err}
	case err == io.EOF || errors.Is(err, io.ErrUnexpectedEOF):
		if got == 0 {
			return &Error{Code: Empty}
		}
		return &Error{Code: Truncated}
	}
	return &Error{Code: Abort, Err: err}
}

// readExact reads a header from r without reading past it: the 5 first
// bytes tell the version; version 1 is read one byte at a time up to its
// CRLF, version 2 up to its 16-byte head, then its announced length.
func readExact(r io.Reader) (Header, error) {
	buf := make([]byte, 0, 232) // a v1 line, or a v2 header with IPv6 addresses and some TLVs
	read := func(n int) error {
		start := len(buf)
		buf = append(buf, make([]byte, n)...)
		m, err := io.ReadFull(r, buf[start:])
		buf = buf[:start+m]
		return err
	}
	if err := read(5); err != nil {
		return Header{}, readErr(err, len(buf))
	}
	if _, _, err := Parse(buf); err != ErrIncomplete {
		return Header{}, asError(err)
	}
	for {
		var need int
		switch {
		case buf[0] == 'P':
			need = 1
		case len(buf) < v2HeadLen:
			need = v2HeadLen - len(buf)
		default:
			need = v2HeadLen + (int(buf[14])<<8 | int(buf[15])) - len(buf)
			if need <= 0 {
				need = 1 // Parse refuses the length; let it say so
			}
		}
		if err := read(need); err != nil {
			return Header{}, readErr(err, len(buf))
		}
		h, n, err := Parse(buf)
		switch {
		case err == nil && n == len(buf):
			return h, nil
		case err == nil:
			return Header{}, errBadHeader // cannot happen: nothing is read past a header
		case err != ErrIncomplete:
			return Header{}, asError(err)
		}
	}
}

// asError returns err as a *Error; Parse only returns those.
func asError(err error) error {
	if e, ok := err.(*Error); ok {
		return e
	}
	return &Error{Code: BadHeader, Err: err}
}

// errEOF is a peek that found the connection closed.
var errEOF = io.EOF
