package syslog

import (
	"bufio"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestHeadersAsHAProxy checks the message of each format against lines
// HAProxy 2.6 sent (testdata/log/, and captures of format rfc5424 and of
// len 100).
func TestHeadersAsHAProxy(t *testing.T) {
	utc := time.FixedZone("UTC", 0)
	msg := []byte(`127.0.0.1:57854 [01/Dec/2026:22:24:19.305] www web/s1 0/0/1/0/1 200 110 - - ---- 1/1/0/0/0 0/0 {127.0.0.1:41880} {text/plain} "GET /x HTTP/1.1"`)
	h := Header{Tag: "haproxy", Pid: 26375}
	for _, tc := range []struct {
		name string
		t    Target
		h    Header
		now  time.Time
		want string
	}{
		{"rfc3164", Target{Format: "rfc3164", Facility: 16, MaxLevel: 7}, h, time.Date(2026, 12, 1, 22, 24, 19, 0, utc),
			"<134>Dec  1 22:24:19 haproxy[26375]: " + string(msg) + "\n"},
		{"rfc3164 hostname", Target{Format: "rfc3164", Facility: 18, MaxLevel: 7}, Header{Tag: "haproxy", Pid: 26612, Hostname: "localhost"},
			time.Date(2026, 12, 1, 22, 24, 25, 0, utc), "<150>Dec  1 22:24:25 localhost haproxy[26612]: " + string(msg) + "\n"},
		{"rfc5424", Target{Format: "rfc5424", Facility: 16, MaxLevel: 7}, h, time.Date(2026, 12, 1, 22, 24, 19, 310507000, utc),
			"<134>1 2026-12-01T22:24:19.310507Z - haproxy 26375 - - " + string(msg) + "\n"},
		{"len 100", Target{Format: "rfc3164", Facility: 18, MaxLevel: 7, Len: 100}, Header{Tag: "haproxy", Pid: 26612, Hostname: "localhost"},
			time.Date(2026, 12, 1, 22, 24, 25, 0, utc),
			"<150>Dec  1 22:24:25 localhost haproxy[26612]: 127.0.0.1:57854 [01/Dec/2026:22:24:19.305] www web/s1\n"},
		{"raw", Target{Format: "raw"}, h, time.Now(), string(msg) + "\n"},
		{"short", Target{Format: "short", Facility: 16}, h, time.Now(), "<6>" + string(msg) + "\n"},
		{"priority", Target{Format: "priority", Facility: 16}, h, time.Now(), "<134>" + string(msg) + "\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := string(tc.t.AppendMessage(nil, &tc.h, LevelInfo, tc.now, msg))
			want := tc.want
			if tc.name == "rfc5424" {
				// HAProxy writes +00:00 for UTC; Go's layout writes Z
				// there: both are RFC 3339. Compare the rest.
				got = strings.Replace(got, "Z -", "+00:00 -", 1)
				want = strings.Replace(want, "Z -", "+00:00 -", 1)
			}
			if got != want {
				t.Errorf("got  %q\nwant %q", got, want)
			}
		})
	}
}

func TestParseAddress(t *testing.T) {
	for _, tc := range []struct{ in, network, addr, err string }{
		{"127.0.0.1:514", "udp", "127.0.0.1:514", ""},
		{"127.0.0.1", "udp", "127.0.0.1:514", ""},
		{"udp@[::1]:1514", "udp", "[::1]:1514", ""},
		{"tcp@127.0.0.1:601", "tcp", "127.0.0.1:601", ""},
		{"/dev/log", "unixgram", "/dev/log", ""},
		{"unix@/run/log.sock", "unixgram", "/run/log.sock", ""},
		{"stderr", "stderr", "", ""},
		{"tcp@127.0.0.1", "", "", "needs host:port"},
		{"127.0.0.1:99999", "", "", "bad port"},
		{"unix@", "", "", "needs a socket path"},
	} {
		n, a, err := ParseAddress(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: got error %v, want %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || n != tc.network || a != tc.addr {
			t.Errorf("%q: got %s %s %v, want %s %s", tc.in, n, a, err, tc.network, tc.addr)
		}
	}
}

// TestSendUDPUnixTCP sends lines to a UDP listener, a Unix datagram socket
// and a TCP listener and reads them back; levels outside the range are
// not sent.
func TestSendUDPUnixTCP(t *testing.T) {
	udp, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer udp.Close()
	sock := filepath.Join(t.TempDir(), "log.sock")
	ux, err := net.ListenPacket("unixgram", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ux.Close()
	tl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer tl.Close()
	h := Header{Tag: "fulcrum", Pid: 42}
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.Local)
	senders := []*Sender{
		NewSender(Target{Network: "udp", Address: udp.LocalAddr().String(), Format: "rfc3164", Facility: 16, MaxLevel: LevelInfo}, h),
		NewSender(Target{Network: "unixgram", Address: sock, Format: "rfc5424", Facility: 17, MaxLevel: LevelInfo}, h),
		NewSender(Target{Network: "tcp", Address: tl.Addr().String(), Format: "rfc3164", Facility: 23, MaxLevel: LevelNotice}, h),
	}
	for _, s := range senders {
		s.Start()
		s.Send(7, now, []byte("debug: never sent"))
		s.Send(LevelInfo, now, []byte("hello"))
		s.Send(LevelErr, now, []byte("an error"))
	}
	read := func(pc net.PacketConn) string {
		pc.SetReadDeadline(time.Now().Add(5 * time.Second))
		b := make([]byte, 2048)
		n, _, err := pc.ReadFrom(b)
		if err != nil {
			t.Fatal(err)
		}
		return string(b[:n])
	}
	if got, want := read(udp), "<134>Jan  2 03:04:05 fulcrum[42]: hello\n"; got != want {
		t.Errorf("udp: got %q, want %q", got, want)
	}
	if got := read(udp); !strings.HasPrefix(got, "<131>") || !strings.HasSuffix(got, "an error\n") {
		t.Errorf("udp second line: got %q", got)
	}
	if got, want := read(ux), "<142>1 "+now.Format("2006-01-02T15:04:05.000000Z07:00")+" - fulcrum 42 - - hello\n"; got != want {
		t.Errorf("unix: got %q, want %q", got, want)
	}
	read(ux)
	c, err := tl.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	// Only the error line: info is above notice, the maximum level sent.
	if want := "<187>Jan  2 03:04:05 fulcrum[42]: an error\n"; line != want {
		t.Errorf("tcp: got %q, want %q", line, want)
	}
	for _, s := range senders {
		s.Close()
		if s.Dropped() != 0 {
			t.Errorf("%s: %d lines dropped", s.Target().Network, s.Dropped())
		}
	}
}

// TestSendNeverBlocks: a target that takes nothing (a full queue) drops
// lines instead of blocking the caller; Close returns.
func TestSendNeverBlocks(t *testing.T) {
	s := NewSender(Target{Network: "udp", Address: "127.0.0.1:9", Format: "raw", MaxLevel: 7}, Header{})
	for range queueLen + 10 {
		s.Send(LevelInfo, time.Now(), []byte("x"))
	}
	if s.Dropped() != 10 {
		t.Errorf("dropped: got %d, want 10", s.Dropped())
	}
	s.Close()
	s.Start() // no effect after Close
	s.Send(LevelInfo, time.Now(), []byte("x"))
	if s.Dropped() != 11 {
		t.Errorf("dropped after close: got %d, want 11", s.Dropped())
	}
}

// TestSendStderr: a stderr target writes the lines in order.
func TestSendStderr(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	s := NewSender(Target{Network: "stderr", Format: "raw", MaxLevel: 7}, Header{})
	s.out = w
	s.Start()
	s.Send(LevelInfo, time.Now(), []byte("one"))
	s.Send(LevelInfo, time.Now(), []byte("two"))
	s.Close()
	w.Close()
	b := make([]byte, 100)
	n, _ := r.Read(b)
	if got := string(b[:n]); got != "one\ntwo\n" {
		t.Errorf("got %q", got)
	}
}

// notifyConn tells each Write's result on wrote.
type notifyConn struct {
	net.Conn
	wrote chan error
}

func (c *notifyConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	c.wrote <- err
	return n, err
}

// TestUDPCollectorBack: a UDP collector that was down (a line sent then
// is lost, and the kernel keeps the ICMP refusal for the next write) gets
// every line once it is back, the first included, as HAProxy's: the
// refusal is an earlier datagram's, and the line is sent again.
func TestUDPCollectorBack(t *testing.T) {
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := pc.LocalAddr().String()
	pc.Close() // the collector is down
	wrote := make(chan error, 16)
	s := NewSender(Target{Network: "udp", Address: addr, Format: "raw", Facility: 16, MaxLevel: LevelInfo}, Header{Tag: "t"})
	s.dial = func(network, address string) (net.Conn, error) {
		c, err := net.Dial(network, address)
		if err != nil {
			return nil, err
		}
		return &notifyConn{Conn: c, wrote: wrote}, nil
	}
	s.Start()
	defer s.Close()
	now := time.Now()
	s.Send(LevelInfo, now, []byte("lost"))
	if err := <-wrote; err != nil {
		t.Fatalf("the first write: %v", err)
	}
	pc, err = net.ListenPacket("udp", addr) // the collector is back
	if err != nil {
		t.Skipf("the port was taken meanwhile: %v", err)
	}
	defer pc.Close()
	for _, l := range []string{"a", "b", "c"} {
		s.Send(LevelInfo, now, []byte(l))
	}
	b := make([]byte, 64)
	for _, want := range []string{"a", "b", "c"} {
		pc.SetReadDeadline(time.Now().Add(5 * time.Second))
		n, _, err := pc.ReadFrom(b)
		if err != nil {
			t.Fatalf("waiting for %q: %v (sender errors %d)", want, err, s.Errors())
		}
		if got := strings.TrimSpace(string(b[:n])); got != want {
			t.Errorf("got %q, want %q", got, want)
		}
	}
}
