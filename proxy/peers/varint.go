package peers

// The integer encoding of HAProxy's peers protocol (doc/peers-v2.0.txt §I,
// src/peers.c intencode/intdecode): values below 240 take one byte; larger
// ones start with a byte of 0xF0 | their low 4 bits, then 7 bits a byte,
// the high bit set on every byte but the last. Each byte is added whole
// (its high bit included) at its shift: the encoder subtracts what the
// decoder will add.

// maxVarintLen is the longest encoding of a 64-bit value: 4 bits in the
// first byte, 7 in each of the next nine.
const maxVarintLen = 10

// appendVarint appends v's encoding to dst.
func appendVarint(dst []byte, v uint64) []byte {
	if v < 0xF0 {
		return append(dst, byte(v))
	}
	dst = append(dst, byte(v)|0xF0)
	v = (v - 0xF0) >> 4
	for v >= 0x80 {
		dst = append(dst, byte(v)|0x80)
		v = (v - 0x80) >> 7
	}
	return append(dst, byte(v))
}

// varint decodes the value at the start of b and returns it with the
// number of bytes it took; n is 0 when b ends before the value does, and
// -1 when the encoding is longer than any 64-bit value's.
func varint(b []byte) (v uint64, n int) {
	if len(b) == 0 {
		return 0, 0
	}
	v = uint64(b[0])
	if v < 0xF0 {
		return v, 1
	}
	shift := uint(4)
	for i := 1; ; i++ {
		if i == maxVarintLen {
			return 0, -1
		}
		if i == len(b) {
			return 0, 0
		}
		v += uint64(b[i]) << shift
		if b[i] < 0x80 {
			return v, i + 1
		}
		shift += 7
	}
}
