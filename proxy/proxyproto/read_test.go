package proxyproto

import (
	"bytes"
	"errors"
	"io"
	"net"
	"net/netip"
	"testing"
	"time"
)

// tcpPair returns both ends of a loopback TCP connection.
func tcpPair(t testing.TB) (client, server *net.TCPConn) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	c, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	s, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(); s.Close() })
	return c.(*net.TCPConn), s.(*net.TCPConn)
}

// TestRead: the header is taken off a real socket and not one byte more:
// what follows is read next, whether it came with the header or after.
func TestRead(t *testing.T) {
	v2h := (&Header{Command: Proxy, Src: netip.MustParseAddrPort("192.0.2.1:1000"), Dst: netip.MustParseAddrPort("192.0.2.2:443"),
		TLVs: []TLV{{Type: TypeUniqueID, Value: bytes.Repeat([]byte{'u'}, 128)}, {Type: TypeCRC32C}}}).AppendV2(nil)
	cases := []struct {
		name   string
		chunks []string // written in turn
		src    string
	}{
		{"v1 with data", []string{"PROXY TCP4 192.0.2.1 192.0.2.2 1000 443\r\nHELLO"}, "192.0.2.1:1000"},
		{"v1 split", []string{"PROXY TCP4 192.0.2.1 19", "2.0.2.2 1000 443\r", "\nHELLO"}, "192.0.2.1:1000"},
		{"v1 then data", []string{"PROXY TCP4 192.0.2.1 192.0.2.2 1000 443\r\n", "HELLO"}, "192.0.2.1:1000"},
		{"v2 large with data", []string{string(v2h) + "HELLO"}, "192.0.2.1:1000"},
		{"v2 split", []string{string(v2h[:14]), string(v2h[14:60]), string(v2h[60:]), "HELLO"}, "192.0.2.1:1000"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cl, sv := tcpPair(t)
			done := make(chan struct{})
			go func() {
				defer close(done)
				for _, ch := range c.chunks {
					cl.Write([]byte(ch))
				}
			}()
			sv.SetReadDeadline(time.Now().Add(5 * time.Second))
			h, err := Read(sv)
			<-done
			if err != nil {
				t.Fatalf("Read: %v", err)
			}
			if h.Src.String() != c.src {
				t.Fatalf("got src %v, want %s", h.Src, c.src)
			}
			rest := make([]byte, 5)
			if _, err := io.ReadFull(sv, rest); err != nil || string(rest) != "HELLO" {
				t.Fatalf("after the header: got %q %v, want HELLO", rest, err)
			}
		})
	}
}

func TestReadFailures(t *testing.T) {
	cases := []struct {
		name  string
		write string
		close bool
		code  Code
	}{
		{"closed empty", "", true, Empty},
		{"closed mid-header", "PROXY TCP4 1.2", true, Truncated},
		{"timeout empty", "", false, Timeout},
		{"timeout mid-header", "PROXY TCP4 1.2", false, Timeout},
		{"not a header", "GET / HTTP/1.1\r\n\r\n", false, NotHeader},
		{"bad header", "PROXY TCP4 1.2.3.4 1.2.3.5 99999 1\r\n", false, BadHeader},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cl, sv := tcpPair(t)
			cl.Write([]byte(c.write))
			if c.close {
				cl.Close()
			}
			sv.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
			_, err := Read(sv)
			var pe *Error
			if !errors.As(err, &pe) || pe.Code != c.code {
				t.Fatalf("got %v, want code %d", err, c.code)
			}
		})
	}
}

// countReader counts what is read from it.
type countReader struct {
	r io.Reader
	n int
}

func (c *countReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}

// TestReadExact: where the connection is not a socket (net.Pipe here),
// the header is read without reading past it either.
func TestReadExact(t *testing.T) {
	for _, in := range []string{
		"PROXY TCP6 2001:db8::1 ::1 1 2\r\nrest",
		"PROXY UNKNOWN\r\nrest",
		string(v2(0x21, 0x11, addr4)) + "rest",
		string(v2(0x20, 0x00)) + "rest",
	} {
		cr := &countReader{r: bytes.NewReader([]byte(in))}
		h, err := readExact(cr)
		_, n, perr := Parse([]byte(in))
		if err != nil || perr != nil || cr.n != n {
			t.Fatalf("%q: err %v, read %d bytes, header is %d", in, err, cr.n, n)
		}
		if h.Version == 0 {
			t.Fatalf("%q: no version", in)
		}
	}
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	go a.Write([]byte("PROXY TCP4 192.0.2.1 192.0.2.2 1 2\r\n"))
	h, err := Read(b)
	if err != nil || h.Src.String() != "192.0.2.1:1" {
		t.Fatalf("pipe: got %v %v", h.Src, err)
	}
}
