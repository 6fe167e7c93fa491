package peers

// Messages of the peers protocol after the handshake (peers-v2.0.txt §IV,
// src/peers.c): two bytes, class then type; a type with its high bit set
// (every stick-table message) is followed by the encoded length of its
// data, then the data.

import (
	"bufio"
	"encoding/binary"
	"errors"
	"io"
)

// Message classes.
const (
	classControl    = 0
	classError      = 1
	classStickTable = 10
	classReserved   = 255
)

// Control messages (class 0), without data.
const (
	ctrlResyncRequest  = 0 // send me everything you know
	ctrlResyncFinished = 1 // taught all, and I was up to date
	ctrlResyncPartial  = 2 // taught all, but I was not up to date
	ctrlResyncConfirm  = 3 // your lesson was received
	ctrlHeartbeat      = 4
)

// Error messages (class 1), without data: the sender closes after them.
const (
	errProtocol  = 0
	errSizeLimit = 1
)

// Stick-table messages (class 10), with data.
const (
	stktUpdate         = 0x80 // update id, key, data
	stktIncUpdate      = 0x81 // key, data: the id is the previous one's + 1
	stktDefine         = 0x82 // table definition
	stktSwitch         = 0x83 // the next updates are of this table
	stktAck            = 0x84 // updates received up to an id
	stktUpdateTimed    = 0x85 // update id, expire, key, data
	stktIncUpdateTimed = 0x86 // expire, key, data
)

// hasData reports whether a message of type typ carries a length and data.
func hasData(typ byte) bool { return typ&0x80 != 0 }

// maxMessage is the largest message data accepted, HAProxy's default
// buffer size (tune.bufsize): a peer sending more gets the size-limit
// error, as HAProxy sends it.
const maxMessage = 16384

// Errors reading a message. A session answers both with an error message
// and closes: errTooLarge with the size-limit error, the others with the
// protocol error.
var (
	// errTooLarge: a message's data is longer than maxMessage.
	errTooLarge = errors.New("message too large")
	// errMalformed: a message's data does not decode.
	errMalformed = errors.New("malformed message")
)

// frameReader reads messages from a peer.
type frameReader struct {
	r    *bufio.Reader
	buf  []byte  // data of the last message read
	head [2]byte // class and type: here, as io.ReadFull would move a local to the heap
}

// next reads one message and returns its class, type and data. data is
// valid until the next call. It returns errTooLarge or errMalformed for a
// message it cannot read, or the connection's error.
func (fr *frameReader) next() (class, typ byte, data []byte, err error) {
	if _, err = io.ReadFull(fr.r, fr.head[:]); err != nil {
		return 0, 0, nil, err
	}
	class, typ = fr.head[0], fr.head[1]
	if !hasData(typ) {
		return class, typ, nil, nil
	}
	var lenBuf [maxVarintLen]byte
	i := 0
	for {
		b, err := fr.r.ReadByte()
		if err != nil {
			return 0, 0, nil, unexpected(err)
		}
		lenBuf[i] = b
		i++
		if (i == 1 && b < 0xF0) || (i > 1 && b < 0x80) {
			break
		}
		if i == maxVarintLen {
			return 0, 0, nil, errMalformed
		}
	}
	n, _ := varint(lenBuf[:i])
	if n > maxMessage {
		return 0, 0, nil, errTooLarge
	}
	if cap(fr.buf) < int(n) {
		fr.buf = make([]byte, n, max(n, 512))
	}
	data = fr.buf[:n]
	if _, err := io.ReadFull(fr.r, data); err != nil {
		return 0, 0, nil, unexpected(err)
	}
	return class, typ, data, nil
}

// unexpected turns an end of file inside a message into
// io.ErrUnexpectedEOF: the peer left mid-message.
func unexpected(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// appendMessage appends a message with data to dst.
func appendMessage(dst []byte, class, typ byte, data []byte) []byte {
	dst = append(dst, class, typ)
	dst = appendVarint(dst, uint64(len(data)))
	return append(dst, data...)
}

// cursor decodes a message's data. The first failure sticks: every later
// read returns zero, and bad tells.
type cursor struct {
	b   []byte
	bad bool
}

// varint reads an encoded integer.
func (c *cursor) varint() uint64 {
	v, n := varint(c.b)
	if n <= 0 {
		c.fail()
		return 0
	}
	c.b = c.b[n:]
	return v
}

// u32 reads a 32-bit integer in network order.
func (c *cursor) u32() uint32 {
	if len(c.b) < 4 {
		c.fail()
		return 0
	}
	v := binary.BigEndian.Uint32(c.b)
	c.b = c.b[4:]
	return v
}

// bytes reads n bytes.
func (c *cursor) bytes(n uint64) []byte {
	if n > uint64(len(c.b)) {
		c.fail()
		return nil
	}
	v := c.b[:n]
	c.b = c.b[n:]
	return v
}

func (c *cursor) fail() {
	c.bad = true
	c.b = nil
}
