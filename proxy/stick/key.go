package stick

// Keys: the five key types of a table, and the conversion of a key between
// its text (Runtime API, show table) and its compact form.

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"net/netip"
	"strconv"
)

// KeyType is the type of a table's keys.
type KeyType uint8

// The key types, as HAProxy names them.
const (
	KeyIP      KeyType = iota // IPv4 address
	KeyIPv6                   // IPv6 address (IPv4 ones are stored mapped)
	KeyInteger                // signed 32-bit integer
	KeyString                 // up to Len bytes
	KeyBinary                 // exactly Len bytes, zero-padded
)

var keyTypeNames = [...]string{"ip", "ipv6", "integer", "string", "binary"}

// String returns the type's HAProxy name.
func (k KeyType) String() string { return keyTypeNames[k] }

// ParseKeyType parses "ip", "ipv6", "integer", "string" or "binary".
func ParseKeyType(s string) (KeyType, error) {
	for i, n := range keyTypeNames {
		if n == s {
			return KeyType(i), nil
		}
	}
	return 0, fmt.Errorf("unknown key type '%s' (known: ip, ipv6, integer, string, binary)", s)
}

// Key is one key in compact form: addresses and integers in hi and lo,
// strings and binary keys in s. It is comparable and used as a map key.
type Key struct {
	hi, lo uint64
	s      string
}

// IPKey returns the key of address a for a table of type t (KeyIP or
// KeyIPv6); ok is false when a does not fit (an IPv6 address in an ip
// table).
func IPKey(t KeyType, a netip.Addr) (Key, bool) {
	switch t {
	case KeyIP:
		a = a.Unmap()
		if !a.Is4() {
			return Key{}, false
		}
		b := a.As4()
		return Key{lo: uint64(binary.BigEndian.Uint32(b[:]))}, true
	case KeyIPv6:
		b := a.As16()
		return Key{hi: binary.BigEndian.Uint64(b[:8]), lo: binary.BigEndian.Uint64(b[8:])}, true
	}
	return Key{}, false
}

// IntKey returns the key of integer n: its low 32 bits, as HAProxy's
// integer tables keep them.
func IntKey(n int64) Key { return Key{lo: uint64(uint32(n))} }

// StringKey returns the key of b for a string or binary table of key
// length n: cut to n bytes. It copies b only when the key is new to the
// map (Go's map assignment keeps the string), so a lookup of an existing
// key does not allocate (see Table.Get).
func StringKey(b []byte, n int) Key {
	if len(b) > n {
		b = b[:n]
	}
	return Key{s: string(b)}
}

// ParseKey parses the text of a key as the Runtime API gives it. As HAProxy
// 2.6, an unparsable address becomes 0.0.0.0 (::) and a non-numeric
// integer is an error; strings are cut to the key length.
func (t *Table) ParseKey(text string) (Key, error) {
	switch t.typ {
	case KeyIP:
		a, err := netip.ParseAddr(text)
		k, ok := IPKey(t.typ, a)
		if err != nil || !ok {
			k, _ = IPKey(t.typ, netip.IPv4Unspecified())
		}
		return k, nil
	case KeyIPv6:
		a, err := netip.ParseAddr(text)
		if err != nil || !a.Is6() {
			return Key{}, fmt.Errorf("invalid key")
		}
		k, _ := IPKey(t.typ, a)
		return k, nil
	case KeyInteger:
		n, err := strconv.ParseUint(text, 10, 32)
		if err != nil {
			return Key{}, fmt.Errorf("invalid key")
		}
		return IntKey(int64(n)), nil
	case KeyBinary:
		b, err := hex.DecodeString(text)
		if err != nil {
			return Key{}, fmt.Errorf("invalid key")
		}
		return StringKey(b, t.keyLen), nil
	}
	return StringKey([]byte(text), t.keyLen), nil
}

// appendKey appends k's text as `show table` prints it.
func (t *Table) appendKey(dst []byte, k Key) []byte {
	switch t.typ {
	case KeyIP:
		var b [4]byte
		binary.BigEndian.PutUint32(b[:], uint32(k.lo))
		return netip.AddrFrom4(b).AppendTo(dst)
	case KeyIPv6:
		var b [16]byte
		binary.BigEndian.PutUint64(b[:8], k.hi)
		binary.BigEndian.PutUint64(b[8:], k.lo)
		return netip.AddrFrom16(b).AppendTo(dst)
	case KeyInteger:
		return strconv.AppendUint(dst, k.lo, 10)
	case KeyBinary:
		dst = hex.AppendEncode(dst, []byte(k.s))
		for range t.keyLen - len(k.s) {
			dst = append(dst, "00"...)
		}
		return dst
	}
	return appendText(dst, k.s)
}

// appendText appends a string key as HAProxy's show table writes it
// (dump_text, src/tools.c): up to its first NUL, printable ASCII as is
// but for the space, '=' and '\\' (escaped with a backslash, as tab, CR,
// LF and ESC: \t \r \n \e), any other byte as \xNN.
func appendText(dst []byte, s string) []byte {
	const hexUpper = "0123456789ABCDEF"
	for i := 0; i < len(s) && s[i] != 0; i++ {
		c := s[i]
		switch {
		case c == ' ' || c == '=' || c == '\\':
			dst = append(dst, '\\', c)
		case c == '\t':
			dst = append(dst, '\\', 't')
		case c == '\n':
			dst = append(dst, '\\', 'n')
		case c == '\r':
			dst = append(dst, '\\', 'r')
		case c == 0x1b:
			dst = append(dst, '\\', 'e')
		case c > ' ' && c < 0x7f:
			dst = append(dst, c)
		default:
			dst = append(dst, '\\', 'x', hexUpper[c>>4], hexUpper[c&0xf])
		}
	}
	return dst
}

// less orders keys as `show table` lists them: addresses and integers by
// value, strings by bytes.
func (t *Table) less(a, b Key) bool {
	switch t.typ {
	case KeyString, KeyBinary:
		return a.s < b.s
	}
	if a.hi != b.hi {
		return a.hi < b.hi
	}
	return a.lo < b.lo
}
