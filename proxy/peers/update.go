package peers

// Update messages (peers-v2.0.txt §IV.3.a-b; src/peers.c
// peer_prepare_updatemsg and peer_treat_updatemsg). The data of an update:
//
//	[update id: 4 bytes]   UPDATE and UPDATE_TIMED only; the INC
//	                       variants mean the previous id + 1
//	[expire: 4 bytes]      the TIMED variants: ms left before the entry
//	                       expires; the others mean the table's expire
//	key                    string: length then bytes; integer and ip: 4
//	                       bytes; ipv6: 16; binary: the key size, padded
//	                       with zeros
//	data                   each type of the definition's bitfield, in
//	                       order: an integer, or for a rate the age of its
//	                       current period then its current and previous
//	                       counts, or for server_key a dictionary entry
//
// A dictionary entry (server_key) is its length then, within it, an id
// (1..128) of the sender's cache for this session and, the first time the
// sender uses that id for a value, the value's length and bytes; length 0
// means no value.

import (
	"encoding/binary"
	"sync"

	"github.com/fulcrum-proxy/fulcrum/proxy/stick"
)

// dictSize is the number of entries of a session's server_key caches
// (HAProxy's PEER_STKT_CACHE_MAX_ENTRIES).
const dictSize = 128

// dictTx is the cache of server_key values sent on a session: the id a
// value last got. Ids are given round-robin, evicting the oldest.
type dictTx struct {
	mu   sync.Mutex     // show peers dict reads it
	ids  map[string]int // value to index (id - 1)
	ring [dictSize]string
	next int
}

// index returns the index of s and whether the peer already knows it; a
// new value takes the next index, evicting the value there.
func (t *dictTx) index(s string) (int, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if i, ok := t.ids[s]; ok {
		return i, true
	}
	if t.ids == nil {
		t.ids = make(map[string]int, dictSize)
	}
	i := t.next
	if old := t.ring[i]; old != "" {
		delete(t.ids, old)
	}
	t.ring[i] = s
	t.ids[s] = i
	t.next = (i + 1) % dictSize
	return i, false
}

// dictRx is the cache of server_key values received on a session, by id-1.
type dictRx struct {
	mu  sync.Mutex // show peers dict reads it
	ids [dictSize]string
}

// snapshot returns the caches' values by index ("" = none).
func dictSnapshot(tx *dictTx, rx *dictRx) (txs, rxs [dictSize]string) {
	tx.mu.Lock()
	txs = tx.ring
	tx.mu.Unlock()
	rx.mu.Lock()
	rxs = rx.ids
	rx.mu.Unlock()
	return txs, rxs
}

// update is one update to send: which message, and the entry's content.
type update struct {
	id     uint32 // the update id
	withID bool   // false: the previous message's id + 1 (INCUPDATE)
	timed  bool   // carries expire
	expire uint32 // ms left
	key    []byte // AppendKeyBytes
	data   *stick.Data
}

// appendUpdate appends an update of the table def describes (its key type
// and size, its stored types) to dst. scratch is a buffer to build the
// data in; both are returned grown.
func appendUpdate(dst, scratch []byte, def *localDef, u *update, tx *dictTx) ([]byte, []byte) {
	b := scratch[:0]
	if u.withID {
		b = binary.BigEndian.AppendUint32(b, u.id)
	}
	if u.timed {
		b = binary.BigEndian.AppendUint32(b, u.expire)
	}
	switch def.keyType {
	case keyString:
		b = appendVarint(b, uint64(len(u.key)))
		b = append(b, u.key...)
	case keyBinary:
		k := u.key[:min(len(u.key), int(def.keySize))]
		b = append(b, k...)
		for range int(def.keySize) - len(k) {
			b = append(b, 0)
		}
	default:
		b = append(b, u.key...)
	}
	d := u.data
	for dt := range stick.NumDataTypes {
		if !def.store.Has(dt) {
			continue
		}
		switch wireTypes[dt].kind {
		case wireSint:
			// HAProxy encodes the int, sign-extended.
			b = appendVarint(b, uint64(int64(int32(uint32(d.Val[dt])))))
		case wireUint:
			b = appendVarint(b, uint64(uint32(d.Val[dt])))
		case wireULL:
			b = appendVarint(b, d.Val[dt])
		case wireFreq:
			f := d.Freq[dt]
			b = appendVarint(b, uint64(f.Age))
			b = appendVarint(b, uint64(f.Curr))
			b = appendVarint(b, uint64(f.Prev))
		case wireDict:
			b = appendDictEntry(b, d.ServerKey, tx)
		}
	}
	typ := byte(stktIncUpdate)
	switch {
	case u.withID && u.timed:
		typ = stktUpdateTimed
	case u.withID:
		typ = stktUpdate
	case u.timed:
		typ = stktIncUpdateTimed
	}
	return appendMessage(dst, classStickTable, typ, b), b
}

// appendDictEntry appends a server_key value: 0 for none, the id of a value
// the peer knows, or a new id with the value.
func appendDictEntry(b []byte, s string, tx *dictTx) []byte {
	if s == "" {
		return appendVarint(b, 0)
	}
	i, known := tx.index(s)
	if known {
		b = appendVarint(b, 1)
		return appendVarint(b, uint64(i+1))
	}
	var head [2 * maxVarintLen]byte
	h := appendVarint(head[:0], uint64(i+1))
	h = appendVarint(h, uint64(len(s)))
	b = appendVarint(b, uint64(len(h)+len(s)))
	b = append(b, h...)
	return append(b, s...)
}

// received is an update decoded.
type received struct {
	withID bool
	id     uint32
	timed  bool
	expire uint32
	key    []byte // as AppendKeyBytes gives it (binary keys still padded)
}

// decodeUpdate decodes the data of an update of the table def describes
// into r and d (d.Types says which fields came; types this side does not
// store are decoded and dropped); r.withID and r.timed say which message
// it is. The key is left as sent: stick.Table.KeyFromBytes cuts a string
// key to the table's length, as HAProxy cuts to its key size. It returns
// errMalformed when the data does not hold such an update; the caller
// then stores nothing. A server_key value is the only thing kept (in rx,
// the session's cache) from a message that fails later.
func decodeUpdate(data []byte, def *tableDef, r *received, d *stick.Data, rx *dictRx) error {
	c := cursor{b: data}
	if r.withID {
		r.id = c.u32()
	}
	if r.timed {
		r.expire = c.u32()
	}
	switch def.keyType {
	case keyString:
		r.key = c.bytes(c.varint())
	case keySint, keyIPv4:
		r.key = c.bytes(4)
	case keyIPv6:
		r.key = c.bytes(16)
	default:
		r.key = c.bytes(def.keySize)
	}
	d.Types = 0
	d.ServerKey = ""
	for dt := range numWireTypes {
		if def.types&(1<<dt) == 0 {
			continue
		}
		w := wireTypes[dt]
		n := uint64(1)
		if w.array {
			n = def.nbelem[dt]
		}
		for range n {
			switch w.kind {
			case wireFreq:
				age, curr, prev := c.varint(), c.varint(), c.varint()
				if dt < int(stick.NumDataTypes) {
					d.Freq[dt] = stick.Freq{Age: uint32(age), Curr: uint32(curr), Prev: uint32(prev)}
				}
			case wireDict:
				s, ok := decodeDictEntry(&c, rx)
				if !ok {
					return errMalformed
				}
				d.ServerKey = s
			default:
				v := c.varint()
				if dt < int(stick.NumDataTypes) {
					d.Val[dt] = v
				}
			}
		}
		if dt < int(stick.NumDataTypes) {
			d.Types |= 1 << dt
		}
	}
	if c.bad {
		d.Types = 0
		return errMalformed
	}
	return nil
}

// decodeDictEntry decodes a server_key value, "" for none.
func decodeDictEntry(c *cursor, rx *dictRx) (string, bool) {
	n := c.varint()
	if c.bad {
		return "", false
	}
	if n == 0 {
		return "", true
	}
	sub := cursor{b: c.bytes(n)}
	id := sub.varint()
	if c.bad || sub.bad || id == 0 || id > dictSize {
		return "", false
	}
	rx.mu.Lock()
	defer rx.mu.Unlock()
	if len(sub.b) == 0 {
		return rx.ids[id-1], true
	}
	v := sub.bytes(sub.varint())
	if sub.bad || len(sub.b) != 0 {
		return "", false
	}
	if string(v) != rx.ids[id-1] { // keep the string already there
		rx.ids[id-1] = string(v)
	}
	return rx.ids[id-1], true
}
