package lb

// Keyed hashing (hash_key): fulcrum's own, neither HAProxy nor other Go
// proxies have it. HAProxy's hash functions (hashfunc.go) are public and
// unkeyed: whoever knows a backend's server list can compute, offline,
// which URIs, parameters, header values or addresses land on a chosen
// server, and aim a flood at it (every one of 960 aimed requests reached
// the chosen server under map-based `balance uri`). With a hash_key, the
// key of a request is hashed with SipHash-2-4 (Aumasson and Bernstein,
// "SipHash: a fast short-input PRF", 2012) under a 128-bit secret derived
// from the key instead: a pseudo-random function, so the mapping cannot be
// computed, nor its collisions found, without the secret, and the outputs
// say nothing usable about it (no XOR of two outputs cancels the key, as
// it would with a secret seed or a secret added to a public hash).
//
// The hash function of hash_type (and avalanche) is then not used; the
// method (map-based or consistent) is. `source` hashes the address's bytes
// with SipHash too, rather than XORing its 32-bit words (which makes every
// IPv6 address with the same XOR collide, key or not). Without a key
// nothing changes: the unkeyed functions run exactly as before.
//
// Cost: SipHash compresses 8 bytes in two rounds, about the cost of sdbm
// over the same 8 bytes, plus four finishing rounds per key; no allocation.

import (
	"crypto/sha256"
	"encoding/binary"
	"math/bits"
)

// HashKey is the secret of keyed hashing: a SipHash key. The zero value is
// no key (HAProxy's unkeyed hashing).
type HashKey struct {
	k0, k1 uint64
	set    bool
}

// NewHashKey derives a SipHash key from the secret of hash_key: the first
// 16 bytes of its SHA-256, so that a secret of any length and alphabet
// gives a uniform 128-bit key. An empty secret gives no key.
func NewHashKey(secret string) HashKey {
	if secret == "" {
		return HashKey{}
	}
	sum := sha256.Sum256([]byte(secret))
	return HashKey{k0: binary.LittleEndian.Uint64(sum[0:]), k1: binary.LittleEndian.Uint64(sum[8:]), set: true}
}

// IsSet reports whether k is a key (hashing is keyed).
func (k HashKey) IsSet() bool { return k.set }

// sipState is the running state of SipHash-2-4 over a message given in
// pieces: the four words, the message bytes not yet compressed (m, n%8 of
// them, little-endian) and the length so far.
type sipState struct {
	v0, v1, v2, v3 uint64
	m              uint64
	n              uint64
}

// init starts a hash under key k (the initialisation of the paper).
func (s *sipState) init(k HashKey) {
	s.v0 = k.k0 ^ 0x736f6d6570736575
	s.v1 = k.k1 ^ 0x646f72616e646f6d
	s.v2 = k.k0 ^ 0x6c7967656e657261
	s.v3 = k.k1 ^ 0x7465646279746573
	s.m, s.n = 0, 0
}

// sipRound is one SipRound, on the four words held in registers.
func sipRound(v0, v1, v2, v3 uint64) (uint64, uint64, uint64, uint64) {
	v0 += v1
	v1 = bits.RotateLeft64(v1, 13) ^ v0
	v0 = bits.RotateLeft64(v0, 32)
	v2 += v3
	v3 = bits.RotateLeft64(v3, 16) ^ v2
	v0 += v3
	v3 = bits.RotateLeft64(v3, 21) ^ v0
	v2 += v1
	v1 = bits.RotateLeft64(v1, 17) ^ v2
	v2 = bits.RotateLeft64(v2, 32)
	return v0, v1, v2, v3
}

// compress absorbs one 8-byte word of the message (two rounds: the "2" of
// SipHash-2-4).
func (s *sipState) compress(m uint64) {
	v0, v1, v2, v3 := s.v0, s.v1, s.v2, s.v3^m
	v0, v1, v2, v3 = sipRound(v0, v1, v2, v3)
	v0, v1, v2, v3 = sipRound(v0, v1, v2, v3)
	s.v0, s.v1, s.v2, s.v3 = v0^m, v1, v2, v3
}

// writeByte adds one byte to the message.
func (s *sipState) writeByte(c byte) {
	s.m |= uint64(c) << (8 * (s.n & 7))
	s.n++
	if s.n&7 == 0 {
		s.compress(s.m)
		s.m = 0
	}
}

// writeString adds str to the message, a word at a time where it can.
func (s *sipState) writeString(str string) {
	i := 0
	for ; i < len(str) && s.n&7 != 0; i++ {
		s.writeByte(str[i])
	}
	if i+8 <= len(str) {
		v0, v1, v2, v3 := s.v0, s.v1, s.v2, s.v3
		for ; i+8 <= len(str); i += 8 {
			m := uint64(str[i]) | uint64(str[i+1])<<8 | uint64(str[i+2])<<16 | uint64(str[i+3])<<24 |
				uint64(str[i+4])<<32 | uint64(str[i+5])<<40 | uint64(str[i+6])<<48 | uint64(str[i+7])<<56
			v3 ^= m
			v0, v1, v2, v3 = sipRound(v0, v1, v2, v3)
			v0, v1, v2, v3 = sipRound(v0, v1, v2, v3)
			v0 ^= m
			s.n += 8
		}
		s.v0, s.v1, s.v2, s.v3 = v0, v1, v2, v3
	}
	for ; i < len(str); i++ {
		s.writeByte(str[i])
	}
}

// sum64 returns the 64-bit SipHash-2-4 of the message (the last word
// carries the length's low byte; four finishing rounds). s is spent.
func (s *sipState) sum64() uint64 {
	b := s.m | s.n<<56
	v0, v1, v2, v3 := s.v0, s.v1, s.v2, s.v3^b
	v0, v1, v2, v3 = sipRound(v0, v1, v2, v3)
	v0, v1, v2, v3 = sipRound(v0, v1, v2, v3)
	v0 ^= b
	v2 ^= 0xff
	v0, v1, v2, v3 = sipRound(v0, v1, v2, v3)
	v0, v1, v2, v3 = sipRound(v0, v1, v2, v3)
	v0, v1, v2, v3 = sipRound(v0, v1, v2, v3)
	v0, v1, v2, v3 = sipRound(v0, v1, v2, v3)
	return v0 ^ v1 ^ v2 ^ v3
}

// sum returns the hash folded to the 32 bits the algorithms map from.
func (s *sipState) sum() uint32 {
	x := s.sum64()
	return uint32(x) ^ uint32(x>>32)
}
