package resolve

// Name servers: one connected UDP socket each, one reader goroutine that
// hands answers to the query waiting for their id, and a TCP exchange for
// answers that come back truncated.

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"sync"
	"time"

	"github.com/fulcrum-proxy/fulcrum/proxy"
)

// maxUDP is the read buffer of a name server socket: any UDP datagram, so
// that an answer larger than accepted_payload_size is seen and counted
// (too_big) rather than cut.
const maxUDP = 65535

// nameserver is one name server of a section.
type nameserver struct {
	i    int    // index in its section
	name string // as configured
	addr string
	c    *proxy.NameserverCounters

	mu     sync.Mutex   // guards conn and closed
	conn   *net.UDPConn // nil until the first query, and after a failed send
	closed bool         // the manager stopped: no socket opens again
}

// reply is a datagram (or TCP message) from a name server, for the query
// whose id it carries.
type reply struct {
	ns   int
	data []byte
	tcp  bool // came over TCP (after a truncated UDP answer)
}

// send sends a query over UDP, opening the socket (and its reader) on
// first use: counted in sent, or in snd_error when it fails (the socket is
// then closed and opened again at the next query, as HAProxy's dgram).
func (ns *nameserver) send(sec *section, q []byte) bool {
	ns.mu.Lock()
	if ns.closed {
		ns.mu.Unlock()
		return false
	}
	if ns.conn == nil {
		ua, err := net.ResolveUDPAddr("udp", ns.addr)
		var c *net.UDPConn
		if err == nil {
			c, err = net.DialUDP("udp", nil, ua)
		}
		if err != nil {
			ns.mu.Unlock()
			ns.c.SndError.Add(1)
			return false
		}
		ns.conn = c
		sec.m.wg.Add(1)
		go ns.read(sec, c)
	}
	c := ns.conn
	ns.mu.Unlock()
	if _, err := c.Write(q); err != nil {
		ns.c.SndError.Add(1)
		ns.mu.Lock()
		if ns.conn == c {
			ns.conn = nil
			c.Close()
		}
		ns.mu.Unlock()
		return false
	}
	ns.c.Sent.Add(1)
	return true
}

// read is the reader of socket c: it hands each datagram to the query
// waiting for its id, and counts what cannot be handed: too_big, invalid
// (no id), outdated (no query waits for that id). It ends when c is
// closed (Stop, or a failed send); a refused port (ICMP) is not an end.
func (ns *nameserver) read(sec *section, c *net.UDPConn) {
	defer sec.m.wg.Done()
	buf := make([]byte, maxUDP+1)
	for {
		n, err := c.Read(buf)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			if sec.m.ctx.Err() != nil {
				return
			}
			continue // ECONNREFUSED from an ICMP unreachable: the socket stays
		}
		ns.deliver(sec, buf[:n], false)
	}
}

// deliver hands a message to the query waiting for its id.
func (ns *nameserver) deliver(sec *section, msg []byte, tcp bool) {
	if len(msg) > sec.conf.AcceptedPayloadSize && !tcp {
		ns.c.TooBig.Add(1)
		return
	}
	if len(msg) < 2 {
		ns.c.Invalid.Add(1)
		return
	}
	id := binary.BigEndian.Uint16(msg)
	sec.idMu.Lock()
	ex := sec.ids[id]
	sec.idMu.Unlock()
	if ex == nil {
		ns.c.Outdated.Add(1)
		return
	}
	// The channel holds two replies per name server (UDP, then TCP): a
	// name server sending more for one id is dropped, never waited for.
	select {
	case ex.replies <- reply{ns: ns.i, data: append([]byte(nil), msg...), tcp: tcp}:
	default:
	}
}

// exchangeTCP sends q over TCP (RFC 1035 section 4.2.2: a two-byte length
// before each message) and hands the answer to the waiting query, as if it
// had come over UDP. It gives up at deadline. Run in its own goroutine,
// counted in the manager's wait group.
func (ns *nameserver) exchangeTCP(sec *section, q []byte, deadline time.Time) {
	defer sec.m.wg.Done()
	d := net.Dialer{Deadline: deadline}
	c, err := d.DialContext(sec.m.ctx, "tcp", ns.addr)
	if err != nil {
		return
	}
	defer c.Close()
	c.SetDeadline(deadline)
	stop := context.AfterFunc(sec.m.ctx, func() { c.Close() })
	defer stop()
	out := make([]byte, 2+len(q))
	binary.BigEndian.PutUint16(out, uint16(len(q)))
	copy(out[2:], q)
	if _, err := c.Write(out); err != nil {
		return
	}
	var l [2]byte
	if _, err := io.ReadFull(c, l[:]); err != nil {
		return
	}
	msg := make([]byte, binary.BigEndian.Uint16(l[:]))
	if _, err := io.ReadFull(c, msg); err != nil {
		ns.c.Invalid.Add(1)
		return
	}
	ns.deliver(sec, msg, true)
}

// close closes the socket for good: its reader ends.
func (ns *nameserver) close() {
	ns.mu.Lock()
	defer ns.mu.Unlock()
	ns.closed = true
	if ns.conn != nil {
		ns.conn.Close()
		ns.conn = nil
	}
}
