// Package syslog sends log lines as HAProxy's `log` targets do: to a UDP
// or TCP address, a Unix datagram socket (/dev/log), or stdout/stderr, in
// the syslog formats HAProxy writes (RFC 3164 and RFC 5424 headers, or the
// short, priority, timed, iso and raw ones), with a facility, a level
// range and a maximum line length.
//
// A Sender never blocks its caller: each target has a bounded queue that a
// goroutine drains; a line that finds the queue full is dropped and
// counted, as HAProxy drops what its non-blocking socket refuses. The
// goroutines run from Start until Close.
package syslog

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/fulcrum-proxy/fulcrum/internal/linequeue"
)

// Facilities are the syslog facilities by code, named as HAProxy's.
var Facilities = [...]string{
	"kern", "user", "mail", "daemon", "auth", "syslog", "lpr", "news",
	"uucp", "cron", "auth2", "ftp", "ntp", "audit", "alert", "cron2",
	"local0", "local1", "local2", "local3", "local4", "local5", "local6", "local7",
}

// Levels are the syslog severities by code, named as HAProxy's.
var Levels = [...]string{"emerg", "alert", "crit", "err", "warning", "notice", "info", "debug"}

// Level codes used by fulcrum.
const (
	LevelEmerg  = 0
	LevelAlert  = 1
	LevelErr    = 3
	LevelNotice = 5
	LevelInfo   = 6
)

// Facility returns the code of a facility name, or -1.
func Facility(name string) int {
	for i, f := range Facilities {
		if f == name {
			return i
		}
	}
	return -1
}

// Level returns the code of a level name, or -1.
func Level(name string) int {
	for i, l := range Levels {
		if l == name {
			return i
		}
	}
	return -1
}

// Formats are the message formats of HAProxy's `log ... format`.
var Formats = []string{"rfc3164", "rfc5424", "local", "short", "priority", "timed", "iso", "raw"}

// Target is one log destination, as HAProxy's `log` line.
type Target struct {
	// Network is "udp", "tcp", "unixgram", "stdout" or "stderr"; Address
	// the host:port or socket path (empty for stdout/stderr).
	Network, Address string
	// Format is one of Formats.
	Format string
	// Facility is a code of Facilities; MaxLevel and MinLevel bound the
	// levels sent (a line of level L is sent when MinLevel <= L <=
	// MaxLevel; emerg is 0).
	Facility, MaxLevel, MinLevel int
	// Len is the longest message sent, header included, final line feed
	// not; longer ones are truncated (HAProxy's `len`).
	Len int
}

// ParseAddress reads HAProxy's log target address: "host:port" and
// "udp@host:port" (UDP, port 514 by default), "tcp@host:port", a path or
// "unix@path" (a Unix datagram socket such as /dev/log), "stdout" or
// "stderr".
func ParseAddress(s string) (network, address string, err error) {
	switch {
	case s == "stdout" || s == "stderr":
		return s, "", nil
	case strings.HasPrefix(s, "/"):
		return "unixgram", s, nil
	case strings.HasPrefix(s, "unix@"):
		p := strings.TrimPrefix(s, "unix@")
		if p == "" {
			return "", "", errors.New("unix@ needs a socket path")
		}
		return "unixgram", p, nil
	}
	network = "udp"
	for _, pfx := range []string{"udp@", "udp4@", "udp6@", "tcp@", "tcp4@", "tcp6@"} {
		if strings.HasPrefix(s, pfx) {
			network, s = strings.TrimSuffix(pfx, "@"), strings.TrimPrefix(s, pfx)
			break
		}
	}
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		if strings.HasPrefix(network, "tcp") {
			return "", "", fmt.Errorf("%q: a tcp target needs host:port", s)
		}
		host, port = s, "514" // HAProxy's default syslog port
	}
	if host == "" {
		return "", "", fmt.Errorf("%q: no host", s)
	}
	if n, err := strconv.Atoi(port); err != nil || n <= 0 || n > 65535 {
		return "", "", fmt.Errorf("%q: bad port %q", s, port)
	}
	return network, net.JoinHostPort(host, port), nil
}

// Header is what the syslog header says besides the level: the tag
// (program name), pid and hostname ("" = not sent, as HAProxy without
// log-send-hostname).
type Header struct {
	Tag      string
	Pid      int
	Hostname string
}

// AppendMessage writes one message of level for t: the header of t's
// format and msg truncated to t.Len, then a line feed. now is the emit
// date.
func (t *Target) AppendMessage(dst []byte, h *Header, level int, now time.Time, msg []byte) []byte {
	start := len(dst)
	pri := t.Facility*8 + level
	switch t.Format {
	case "raw":
	case "short":
		dst = append(dst, '<')
		dst = strconv.AppendInt(dst, int64(level), 10)
		dst = append(dst, '>')
	case "priority":
		dst = appendPri(dst, pri)
	case "timed":
		dst = appendPri(dst, pri)
		dst = now.AppendFormat(dst, "2006-01-02T15:04:05.000000Z07:00")
		dst = append(dst, ' ')
	case "iso":
		dst = now.AppendFormat(dst, "2006-01-02T15:04:05.000000Z07:00")
		dst = append(dst, ' ')
	case "rfc5424":
		dst = appendPri(dst, pri)
		dst = append(dst, '1', ' ')
		dst = now.AppendFormat(dst, "2006-01-02T15:04:05.000000Z07:00")
		dst = append(dst, ' ')
		dst = appendOr(dst, h.Hostname)
		dst = append(dst, ' ')
		dst = appendOr(dst, h.Tag)
		dst = append(dst, ' ')
		dst = strconv.AppendInt(dst, int64(h.Pid), 10)
		dst = append(dst, " - - "...)
	default: // rfc3164, local
		dst = appendPri(dst, pri)
		dst = now.AppendFormat(dst, time.Stamp) // "Jan _2 15:04:05"
		dst = append(dst, ' ')
		if h.Hostname != "" && t.Format != "local" {
			dst = append(dst, h.Hostname...)
			dst = append(dst, ' ')
		}
		dst = append(dst, h.Tag...)
		dst = append(dst, '[')
		dst = strconv.AppendInt(dst, int64(h.Pid), 10)
		dst = append(dst, "]: "...)
	}
	dst = append(dst, msg...)
	if t.Len > 0 && len(dst)-start > t.Len {
		dst = dst[:start+t.Len]
	}
	return append(dst, '\n')
}

func appendPri(dst []byte, pri int) []byte {
	dst = append(dst, '<')
	dst = strconv.AppendInt(dst, int64(pri), 10)
	return append(dst, '>')
}

func appendOr(dst []byte, s string) []byte {
	if s == "" {
		return append(dst, '-')
	}
	return append(dst, s...)
}

// queueLen is how many lines a target's queue holds before dropping.
const queueLen = 4096

// Sender sends lines to one target from its own goroutine.
type Sender struct {
	t       Target
	h       Header
	queue   *linequeue.Queue
	errs    atomic.Int64
	done    chan struct{}
	start   sync.Once
	started atomic.Bool
	dial    func(network, address string) (net.Conn, error)
	out     *os.File // stdout or stderr targets
}

// NewSender returns the sender of t with header h. Nothing is sent before
// Start.
func NewSender(t Target, h Header) *Sender {
	s := &Sender{t: t, h: h, queue: linequeue.New(queueLen), done: make(chan struct{}),
		dial: func(network, address string) (net.Conn, error) {
			return net.DialTimeout(network, address, 2*time.Second)
		}}
	switch t.Network {
	case "stdout":
		s.out = os.Stdout
	case "stderr":
		s.out = os.Stderr
	}
	return s
}

// Target returns the sender's target.
func (s *Sender) Target() *Target { return &s.t }

// Wants reports whether a line of level is sent to this target.
func (s *Sender) Wants(level int) bool { return level >= s.t.MinLevel && level <= s.t.MaxLevel }

// Dropped returns the lines dropped because the queue was full or the
// sender was closed.
func (s *Sender) Dropped() int64 { return s.queue.Dropped() }

// Errors returns the lines lost to send errors (target unreachable).
func (s *Sender) Errors() int64 { return s.errs.Load() }

// Send formats msg (the line without header) at level and queues it. It
// never blocks and does not keep msg.
func (s *Sender) Send(level int, now time.Time, msg []byte) {
	if !s.Wants(level) {
		return
	}
	bp := s.queue.Buffer()
	*bp = s.t.AppendMessage(*bp, &s.h, level, now, msg)
	s.queue.Push(bp)
}

// Start starts the sending goroutine (once; never after Close).
func (s *Sender) Start() {
	s.start.Do(func() {
		s.started.Store(true)
		go s.run()
	})
}

// Close stops taking lines, sends those queued (giving up after a second
// on a target that does not take them) and returns once the goroutine has
// stopped.
func (s *Sender) Close() {
	if s.queue.Closed() {
		return
	}
	s.queue.Close()
	s.start.Do(func() {}) // no Start after Close
	if s.started.Load() {
		<-s.done
	}
}

// isUDP reports whether network is one of the UDP ones.
func isUDP(network string) bool { return strings.HasPrefix(network, "udp") }

// run drains the queue into the target, redialling at most once a second
// after an error.
func (s *Sender) run() {
	defer close(s.done)
	var c net.Conn
	var retryAt, giveUp time.Time
	for {
		bp, ok := s.queue.Take()
		if !ok {
			break
		}
		b := *bp
		switch {
		case s.out != nil:
			if _, err := s.out.Write(b); err != nil {
				s.errs.Add(1)
			}
		default:
			now := time.Now()
			if s.queue.Closed() && giveUp.IsZero() {
				giveUp = now.Add(time.Second)
			}
			if c == nil && !now.Before(retryAt) && (giveUp.IsZero() || now.Before(giveUp)) {
				var err error
				if c, err = s.dial(s.t.Network, s.t.Address); err != nil {
					c, retryAt = nil, now.Add(time.Second)
				}
			}
			if c == nil || (!giveUp.IsZero() && now.After(giveUp)) {
				s.errs.Add(1)
				break
			}
			c.SetWriteDeadline(now.Add(time.Second))
			_, err := c.Write(b)
			if err != nil && isUDP(s.t.Network) && errors.Is(err, syscall.ECONNREFUSED) {
				// A connected UDP socket reports the ICMP refusal of an
				// earlier datagram (the collector was down) on this
				// write, which it did not send: send it again.
				// HAProxy's unconnected sendto sees no such error.
				_, err = c.Write(b)
			}
			if err != nil {
				s.errs.Add(1)
				c.Close()
				c, retryAt = nil, now.Add(time.Second)
			}
		}
		s.queue.Release(bp)
	}
	if c != nil {
		c.Close()
	}
}
