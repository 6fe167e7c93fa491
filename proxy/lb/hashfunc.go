package lb

// Hash functions and hash_type, as HAProxy 2.6 (src/hash.c, hash-type in
// its configuration manual): sdbm (the default), djb2, wt6 and crc32, each
// optionally followed by the "avalanche" modifier, Bob Jenkins' 32-bit full
// avalanche mix (HAProxy's full_hash). The functions run over the key in
// pieces (a hasher is a running state) so that a URI split into path and
// query, or a lowercased header, is hashed without building a string.

import (
	"errors"
	"hash/crc32"
	"strings"
)

// HashFunc is a hash function of hash_type.
type HashFunc uint8

// The hash functions, HAProxy's.
const (
	SDBM HashFunc = iota
	DJB2
	WT6
	CRC32

	// keyedSip is SipHash-2-4 under a hash_key (hashkey.go): what a
	// hasher runs instead of the function of hash_type when the backend
	// has a key. Not a hash_type keyword.
	keyedSip
)

// hashFuncNames are the keywords of the hash functions, by HashFunc.
var hashFuncNames = [...]string{SDBM: "sdbm", DJB2: "djb2", WT6: "wt6", CRC32: "crc32"}

// String returns the function's keyword ("siphash" for a keyed hash).
func (f HashFunc) String() string {
	if int(f) < len(hashFuncNames) {
		return hashFuncNames[f]
	}
	return "siphash"
}

// HashType is a parsed hash_type: how hashing algorithms map a hash to a
// server. The zero value is HAProxy's default, "map-based sdbm".
type HashType struct {
	Consistent bool     // "consistent" (a ring) rather than "map-based" (a table)
	Func       HashFunc // the hash function
	Avalanche  bool     // apply the full avalanche mix to the function's result

	// key, when set, replaces Func and Avalanche with SipHash under it
	// (hash_key); newHashing copies it from Config.Key.
	key HashKey
}

// keyed reports whether hashes are keyed (hash_key).
func (t HashType) keyed() bool { return t.key.set }

// ParseHashType parses "<method> [<function> [avalanche]]". "consistent"
// alone means "consistent sdbm avalanche", as HAProxy documents: a raw sdbm
// of similar keys would cluster on the ring.
func ParseHashType(s string) (HashType, error) {
	w := strings.Fields(s)
	var h HashType
	if len(w) == 0 || len(w) > 3 || (w[0] != "map-based" && w[0] != "consistent") {
		return h, errors.New(`must be "map-based" or "consistent", optionally followed by sdbm, djb2, wt6 or crc32 and then "avalanche"`)
	}
	h.Consistent = w[0] == "consistent"
	if len(w) == 1 {
		h.Avalanche = h.Consistent
		return h, nil
	}
	found := false
	for f, name := range hashFuncNames {
		if w[1] == name {
			h.Func, found = HashFunc(f), true
		}
	}
	if !found {
		return h, errors.New("unknown hash function " + w[1] + ", must be sdbm, djb2, wt6 or crc32")
	}
	if len(w) == 3 {
		if w[2] != "avalanche" {
			return h, errors.New(`only "avalanche" may follow the hash function, not ` + w[2])
		}
		h.Avalanche = true
	}
	return h, nil
}

// hasher is the running state of one hash function over a key given in
// pieces. Its zero value is not ready: use newHasher.
type hasher struct {
	fn             HashFunc
	h0, h1         uint32 // h0 is the state of sdbm, djb2 and crc32
	step0, step1   uint32 // wt6's rotations
	avalanche, set bool
	sip            sipState // keyedSip's state
}

// newHasher starts a hash of function t.Func, or of SipHash under t's key
// when it has one.
func newHasher(t HashType) hasher {
	if t.keyed() {
		h := hasher{fn: keyedSip}
		h.sip.init(t.key)
		return h
	}
	h := hasher{fn: t.Func, avalanche: t.Avalanche}
	switch t.Func {
	case DJB2:
		h.h0 = 5381
	case WT6:
		h.h0, h.h1, h.step0, h.step1 = 0xa53c965a, 0x5ca6953a, 6, 18
	case CRC32:
		h.h0 = ^uint32(0)
	}
	return h
}

// writeByte adds one byte to the hash.
func (h *hasher) writeByte(c byte) {
	t := uint32(c)
	switch h.fn {
	case SDBM:
		h.h0 = t + (h.h0 << 6) + (h.h0 << 16) - h.h0
	case DJB2:
		h.h0 = (h.h0 << 5) + h.h0 + t
	case WT6:
		h0 := ^(h.h0 ^ t)
		h1 := ^(h.h1 + t)
		t = h1<<h.step0 | h1>>(32-h.step0)
		h.h1 = h0<<h.step1 | h0>>(32-h.step1)
		h.h0 = t
		t = (h.h0>>16 ^ h.h1) & 0xffff
		h.step0 = t & 0x1f
		h.step1 = t >> 11
	case CRC32:
		h.h0 = crc32.IEEETable[byte(h.h0)^c] ^ h.h0>>8
	case keyedSip:
		h.sip.writeByte(c)
	}
}

// writeString adds s to the hash.
func (h *hasher) writeString(s string) {
	if h.fn == keyedSip {
		h.sip.writeString(s)
		return
	}
	for i := 0; i < len(s); i++ {
		h.writeByte(s[i])
	}
}

// writeLower adds s to the hash with ASCII letters lowercased.
func (h *hasher) writeLower(s string) {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		h.writeByte(c)
	}
}

// sum returns the hash of what was written, avalanched if configured.
func (h *hasher) sum() uint32 {
	var v uint32
	switch h.fn {
	case keyedSip:
		return h.sip.sum()
	case WT6:
		v = h.h0 ^ h.h1
	case CRC32:
		v = ^h.h0
	default:
		v = h.h0
	}
	return h.finish(v)
}

// finish applies the avalanche modifier to a raw hash when configured.
func (h *hasher) finish(v uint32) uint32 {
	if h.avalanche {
		return fullHash(v)
	}
	return v
}

// fullHash is Bob Jenkins' 32-bit full avalanche integer hash followed by a
// multiplication by a large prime, as HAProxy's full_hash: a one-bit change
// of the input changes half of the output bits.
func fullHash(a uint32) uint32 {
	a = (a + 0x7ed55d16) + (a << 12)
	a = (a ^ 0xc761c23c) ^ (a >> 19)
	a = (a + 0x165667b1) + (a << 5)
	a = (a + 0xd3a2646c) ^ (a << 9)
	a = (a + 0xfd7046c5) + (a << 3)
	a = (a ^ 0xb55a4f09) ^ (a >> 16)
	return a * 3221225473
}

// mix64 is the splitmix64 finaliser: a bijective 64-bit mix used to place
// ring points and random keys.
func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}
