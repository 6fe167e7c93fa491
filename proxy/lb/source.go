package lb

// Source address hashing ("balance source"), HAProxy's get_server_sh.
//
// Algorithm: the client address, as 32-bit big-endian words XORed together
// (one word for IPv4, four for IPv6), then the avalanche modifier if
// hash_type asks for it; HAProxy hashes addresses this way rather than with
// the hash function. With a hash_key, the address's 4 or 16 bytes are
// hashed with SipHash instead (hashkey.go): XORed words collide by
// construction. The key is always present, in HTTP and TCP mode alike.
// The hash selects a server as hashing.go describes: static with map-based,
// dynamic with consistent. Cost per pick: O(1) plus the lookup of
// hashing.go.

import (
	"encoding/binary"
	"net/netip"
)

// parseSource checks "source".
func parseSource(a Args) (Balance, error) {
	return Balance{build: func(c Config) Algorithm { return newHashing(c, sourceKey) }}, noArgs("source", a)
}

// sourceKey hashes the client address; absent only without a request.
func sourceKey(r *Request, t HashType) (uint32, bool) {
	if r == nil || !r.Src.IsValid() {
		return 0, false
	}
	h := newHasher(t)
	a := r.Src.Addr().Unmap()
	if t.keyed() {
		writeAddr(&h, a)
		return h.sum(), true
	}
	if a.Is4() {
		b := a.As4()
		return h.finish(binary.BigEndian.Uint32(b[:])), true
	}
	b := a.As16()
	var v uint32
	for i := 0; i < 16; i += 4 {
		v ^= binary.BigEndian.Uint32(b[i:])
	}
	return h.finish(v), true
}

// writeAddr adds the bytes of a (4 for IPv4, 16 for IPv6) to h.
func writeAddr(h *hasher, a netip.Addr) {
	if a.Is4() {
		b := a.As4()
		for _, c := range b {
			h.writeByte(c)
		}
		return
	}
	b := a.As16()
	for _, c := range b {
		h.writeByte(c)
	}
}
