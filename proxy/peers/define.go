package peers

// Table definitions (peers-v2.0.txt §IV.3.c; src/peers.c
// peer_prepare_switchmsg and peer_treat_definemsg). A sender defines each
// table before its first update on a session, with an id of its own; the
// receiver pairs it with its table of the same name, key type and key
// size, and ignores the updates of a table it cannot pair.
//
// The data of a definition:
//
//	id, name length, name, key type, key size, data types bitfield,
//	expire (ms), then for each rate in the bitfield: its type, its period
//
// every number encoded as in varint.go. fulcrum appends one more number to
// a fulcrum peer only (handshake.go): flags, bit 0 set for an aggregate
// table. HAProxy never receives it.

import (
	"bytes"

	"github.com/fulcrum-proxy/fulcrum/proxy/stick"
)

// Key types on the wire (src/peers.c PEER_KT_*).
const (
	keySint   = 2
	keyIPv4   = 4
	keyIPv6   = 5
	keyString = 6
	keyBinary = 7
)

// wireKeyType returns the wire key type of a table key type.
func wireKeyType(t stick.KeyType) uint64 {
	switch t {
	case stick.KeyIP:
		return keyIPv4
	case stick.KeyIPv6:
		return keyIPv6
	case stick.KeyInteger:
		return keySint
	case stick.KeyString:
		return keyString
	}
	return keyBinary
}

// wireKeySize returns a table's key size as HAProxy counts it: 4 for ip
// and integer, 16 for ipv6; for string the configured length plus its
// terminating zero, 32 when none is configured; for binary the configured
// length, 32 when none is. keyLen is the configured length (0 = none).
func wireKeySize(t stick.KeyType, keyLen int) uint64 {
	switch t {
	case stick.KeyIP, stick.KeyInteger:
		return 4
	case stick.KeyIPv6:
		return 16
	case stick.KeyString:
		if keyLen > 0 {
			return uint64(keyLen) + 1
		}
	default:
		if keyLen > 0 {
			return uint64(keyLen)
		}
	}
	return 32
}

// How each data type of HAProxy 2.6 is encoded in updates
// (stktable_data_types[]: std_type and is_array). fulcrum stores the first
// stick.NumDataTypes, which have the same numbers; it decodes the others
// to skip them.
type wireKind uint8

const (
	wireSint wireKind = iota
	wireUint
	wireULL
	wireFreq
	wireDict
)

// numWireTypes is the number of data types HAProxy 2.6 knows.
const numWireTypes = 25

var wireTypes = [numWireTypes]struct {
	kind  wireKind
	array bool
}{
	0:  {wireSint, false}, // server_id
	1:  {wireUint, false}, // gpt0
	2:  {wireUint, false}, // gpc0
	3:  {wireFreq, false}, // gpc0_rate
	4:  {wireUint, false}, // conn_cnt
	5:  {wireFreq, false}, // conn_rate
	6:  {wireUint, false}, // conn_cur
	7:  {wireUint, false}, // sess_cnt
	8:  {wireFreq, false}, // sess_rate
	9:  {wireUint, false}, // http_req_cnt
	10: {wireFreq, false}, // http_req_rate
	11: {wireUint, false}, // http_err_cnt
	12: {wireFreq, false}, // http_err_rate
	13: {wireULL, false},  // bytes_in_cnt
	14: {wireFreq, false}, // bytes_in_rate
	15: {wireULL, false},  // bytes_out_cnt
	16: {wireFreq, false}, // bytes_out_rate
	17: {wireUint, false}, // gpc1
	18: {wireFreq, false}, // gpc1_rate
	19: {wireDict, false}, // server_key
	20: {wireUint, false}, // http_fail_cnt
	21: {wireFreq, false}, // http_fail_rate
	22: {wireUint, true},  // gpt[]
	23: {wireUint, true},  // gpc[]
	24: {wireFreq, true},  // gpc_rate[]
}

// maxArray bounds the elements of an array type a definition may
// announce (HAProxy allows 100).
const maxArray = 100

// defFlagAggregate is bit 0 of fulcrum's definition flags.
const defFlagAggregate = 1

// tableDef is a table as a definition describes it.
type tableDef struct {
	id        uint64 // the sender's id of the table
	name      []byte
	keyType   uint64
	keySize   uint64
	types     uint64 // bit d: data type d is in every update
	expire    uint64 // ms; 0 when the sender sent none
	nbelem    [numWireTypes]uint64
	aggregate bool // fulcrum's flag
	// usable is false when the updates cannot be decoded: a data type
	// this side does not know, or parameters that do not match the
	// bitfield (HAProxy ignores such a table too).
	usable bool
}

// localDef is what this side sends about one of its tables.
type localDef struct {
	id        uint64
	name      string
	keyType   uint64
	keySize   uint64
	store     *stick.Store
	expire    uint64 // ms
	aggregate bool
}

// types returns the bitfield of the stored data types.
func (d *localDef) types() uint64 {
	var bits uint64
	for dt := range stick.NumDataTypes {
		if d.store.Has(dt) {
			bits |= 1 << dt
		}
	}
	return bits
}

// appendDefine appends the definition message of d; fulcrum adds the flags
// a fulcrum peer reads.
func appendDefine(dst, scratch []byte, d *localDef, fulcrum bool) ([]byte, []byte) {
	b := scratch[:0]
	b = appendVarint(b, d.id)
	b = appendVarint(b, uint64(len(d.name)))
	b = append(b, d.name...)
	b = appendVarint(b, d.keyType)
	b = appendVarint(b, d.keySize)
	b = appendVarint(b, d.types())
	b = appendVarint(b, d.expire)
	for dt := range stick.NumDataTypes {
		if d.store.Has(dt) && dt.IsRate() {
			b = appendVarint(b, uint64(dt))
			b = appendVarint(b, uint64(d.store.Period(dt).Milliseconds()))
		}
	}
	if fulcrum {
		var flags uint64
		if d.aggregate {
			flags |= defFlagAggregate
		}
		b = appendVarint(b, flags)
	}
	return appendMessage(dst, classStickTable, stktDefine, b), b
}

// decodeDefine decodes a definition. It returns errMalformed when the
// message does not hold one (HAProxy then ends the session with a protocol
// error); a definition it decodes but cannot use has usable false. fulcrum
// reads fulcrum's flags.
func decodeDefine(data []byte, fulcrum bool) (tableDef, error) {
	var d tableDef
	c := cursor{b: data}
	d.id = c.varint()
	n := c.varint()
	if c.bad || n == 0 || n >= uint64(len(c.b)) {
		// HAProxy requires something after the name.
		return d, errMalformed
	}
	d.name = bytes.Clone(c.bytes(n))
	d.keyType = c.varint()
	d.keySize = c.varint()
	d.types = c.varint()
	if c.bad {
		return d, errMalformed
	}
	d.usable = d.types>>numWireTypes == 0
	if len(c.b) == 0 {
		// A 1.x-era definition: no expire and no parameters, so no arrays.
		for dt := range numWireTypes {
			if d.types&(1<<dt) != 0 && wireTypes[dt].array {
				d.usable = false
			}
		}
		return d, nil
	}
	d.expire = c.varint()
	for dt := range numWireTypes {
		if d.types&(1<<dt) == 0 {
			continue
		}
		w := wireTypes[dt]
		if !w.array && w.kind != wireFreq {
			continue
		}
		if c.varint() != uint64(dt) || c.bad {
			d.usable = false
			return d, nil
		}
		if w.array {
			d.nbelem[dt] = c.varint()
			if d.nbelem[dt] > maxArray {
				d.usable = false
			}
		}
		if w.kind == wireFreq {
			c.varint() // the period: a rate keeps the receiver's
		}
		if c.bad {
			d.usable = false
			return d, nil
		}
	}
	if fulcrum && len(c.b) > 0 {
		flags := c.varint()
		d.aggregate = flags&defFlagAggregate != 0
	}
	return d, nil
}

// decodeSwitch decodes a table switch: the sender's id of the table.
func decodeSwitch(data []byte) (uint64, error) {
	c := cursor{b: data}
	id := c.varint()
	if c.bad {
		return 0, errMalformed
	}
	return id, nil
}

// appendSwitch appends a table switch to the table of id.
func appendSwitch(dst []byte, id uint64) []byte {
	var b [maxVarintLen]byte
	return appendMessage(dst, classStickTable, stktSwitch, appendVarint(b[:0], id))
}

// appendAck appends an acknowledgement of the updates of the table the
// peer calls id, up to update.
func appendAck(dst []byte, id uint64, update uint32) []byte {
	var b [maxVarintLen + 4]byte
	x := appendVarint(b[:0], id)
	x = append(x, byte(update>>24), byte(update>>16), byte(update>>8), byte(update))
	return appendMessage(dst, classStickTable, stktAck, x)
}

// decodeAck decodes an acknowledgement: this side's table id and the last
// update the peer received.
func decodeAck(data []byte) (id uint64, update uint32, err error) {
	c := cursor{b: data}
	id = c.varint()
	update = c.u32()
	if c.bad {
		return 0, 0, errMalformed
	}
	return id, update, nil
}
