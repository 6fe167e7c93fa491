package acl

// IP pattern sets. HAProxy keeps IP patterns in a prefix tree; fulcrum
// keeps, for each prefix length present, the sorted list of networks of
// that length. A lookup masks the address to each present length and
// binary-searches that list: O(k log n) for k distinct lengths (a blocklist
// usually has one or two) and n networks, with no allocation. A set is
// immutable; adding or removing a network builds a new set that shares
// every list but the one that changed (O(n) copy of that list), so readers
// never lock.

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"slices"
	"strings"
)

// ip6 is an IPv6 address as two big-endian halves, comparable and ordered.
type ip6 struct{ hi, lo uint64 }

func cmp6(a, b ip6) int {
	switch {
	case a.hi < b.hi:
		return -1
	case a.hi > b.hi:
		return 1
	case a.lo < b.lo:
		return -1
	case a.lo > b.lo:
		return 1
	}
	return 0
}

func mask6(a ip6, bits int) ip6 {
	switch {
	case bits <= 0:
		return ip6{}
	case bits < 64:
		return ip6{a.hi &^ (1<<(64-bits) - 1), 0}
	case bits == 64:
		return ip6{a.hi, 0}
	case bits < 128:
		return ip6{a.hi, a.lo &^ (1<<(128-bits) - 1)}
	}
	return a
}

func to6(a netip.Addr) ip6 {
	b := a.As16()
	return ip6{binary.BigEndian.Uint64(b[:8]), binary.BigEndian.Uint64(b[8:])}
}

func to4(a netip.Addr) uint32 {
	b := a.As4()
	return binary.BigEndian.Uint32(b[:])
}

func mask4(a uint32, bits int) uint32 {
	if bits <= 0 {
		return 0
	}
	return a &^ (1<<(32-bits) - 1)
}

// ipSet is an immutable set of IPv4 and IPv6 networks.
type ipSet struct {
	v4    [33][]uint32 // by prefix length, sorted, unique, masked
	v6    [129][]ip6
	lens4 []int8 // prefix lengths with at least one network, longest first
	lens6 []int16
}

// parseIPPattern parses an IP pattern as HAProxy accepts it: an address,
// address/len, or IPv4 address/dotted-mask. An IPv4-mapped IPv6 network
// of /96 or more is kept as IPv4, so that it matches IPv4 clients.
func parseIPPattern(s string) (netip.Prefix, error) {
	addr, bitsStr, hasBits := strings.Cut(s, "/")
	a, err := netip.ParseAddr(addr)
	if err != nil || a.Zone() != "" {
		return netip.Prefix{}, errNotIP(s)
	}
	bits := a.BitLen()
	if hasBits {
		if m, err := netip.ParseAddr(bitsStr); err == nil && m.Is4() && a.Is4() {
			// Dotted mask: must be contiguous ones.
			v := to4(m)
			bits = 0
			for v&(1<<31) != 0 {
				bits++
				v <<= 1
			}
			if v != 0 {
				return netip.Prefix{}, errNotIP(s)
			}
		} else {
			n := 0
			if len(bitsStr) == 0 || len(bitsStr) > 3 {
				return netip.Prefix{}, errNotIP(s)
			}
			for _, c := range []byte(bitsStr) {
				if c < '0' || c > '9' {
					return netip.Prefix{}, errNotIP(s)
				}
				n = n*10 + int(c-'0')
			}
			if n > a.BitLen() {
				return netip.Prefix{}, errNotIP(s)
			}
			bits = n
		}
	}
	if a.Is4In6() && bits >= 96 {
		a, bits = a.Unmap(), bits-96
	}
	return netip.PrefixFrom(a, bits).Masked(), nil
}

// notIPError is HAProxy's message for a bad IP pattern, built only when
// reported.
type notIPError string

func (e notIPError) Error() string {
	return fmt.Sprintf("'%s' is not a valid IPv4 or IPv6 address.", string(e))
}

func errNotIP(s string) error { return notIPError(s) }

// contains reports whether a (unmapped) is in one of the set's networks.
func (s *ipSet) contains(a netip.Addr) bool {
	if s == nil {
		return false
	}
	if a.Is4() {
		v := to4(a)
		for _, l := range s.lens4 {
			if _, ok := slices.BinarySearch(s.v4[l], mask4(v, int(l))); ok {
				return true
			}
		}
		return false
	}
	v := to6(a)
	for _, l := range s.lens6 {
		if _, ok := slices.BinarySearchFunc(s.v6[l], mask6(v, int(l)), cmp6); ok {
			return true
		}
	}
	return false
}

// lookup returns the longest network of the set holding a, for `get acl`.
func (s *ipSet) lookup(a netip.Addr) (netip.Prefix, bool) {
	if s == nil {
		return netip.Prefix{}, false
	}
	if a.Is4() {
		v := to4(a)
		for _, l := range s.lens4 {
			if _, ok := slices.BinarySearch(s.v4[l], mask4(v, int(l))); ok {
				return netip.PrefixFrom(a, int(l)).Masked(), true
			}
		}
		return netip.Prefix{}, false
	}
	v := to6(a)
	for _, l := range s.lens6 {
		if _, ok := slices.BinarySearchFunc(s.v6[l], mask6(v, int(l)), cmp6); ok {
			return netip.PrefixFrom(a, int(l)).Masked(), true
		}
	}
	return netip.Prefix{}, false
}

// buildIPSet builds a set from networks in one sort per length.
func buildIPSet(nets []netip.Prefix) *ipSet {
	s := &ipSet{}
	for _, p := range nets {
		if p.Addr().Is4() {
			s.v4[p.Bits()] = append(s.v4[p.Bits()], to4(p.Addr()))
		} else {
			s.v6[p.Bits()] = append(s.v6[p.Bits()], to6(p.Addr()))
		}
	}
	for l := range s.v4 {
		slices.Sort(s.v4[l])
		s.v4[l] = slices.Compact(s.v4[l])
	}
	for l := range s.v6 {
		slices.SortFunc(s.v6[l], cmp6)
		s.v6[l] = slices.Compact(s.v6[l])
	}
	s.index()
	return s
}

// index recomputes the lists of present prefix lengths, longest first.
func (s *ipSet) index() {
	s.lens4, s.lens6 = s.lens4[:0:0], s.lens6[:0:0]
	for l := 32; l >= 0; l-- {
		if len(s.v4[l]) > 0 {
			s.lens4 = append(s.lens4, int8(l))
		}
	}
	for l := 128; l >= 0; l-- {
		if len(s.v6[l]) > 0 {
			s.lens6 = append(s.lens6, int16(l))
		}
	}
}

// with returns a copy of s with p added (s itself if p is already in).
func (s *ipSet) with(p netip.Prefix) *ipSet {
	n := *s
	l := p.Bits()
	if p.Addr().Is4() {
		v := to4(p.Addr())
		i, found := slices.BinarySearch(s.v4[l], v)
		if found {
			return s
		}
		n.v4[l] = slices.Insert(slices.Clip(s.v4[l]), i, v)
	} else {
		v := to6(p.Addr())
		i, found := slices.BinarySearchFunc(s.v6[l], v, cmp6)
		if found {
			return s
		}
		n.v6[l] = slices.Insert(slices.Clip(s.v6[l]), i, v)
	}
	n.index()
	return &n
}

// without returns a copy of s with p removed.
func (s *ipSet) without(p netip.Prefix) *ipSet {
	n := *s
	l := p.Bits()
	if p.Addr().Is4() {
		i, found := slices.BinarySearch(s.v4[l], to4(p.Addr()))
		if !found {
			return s
		}
		n.v4[l] = slices.Delete(slices.Clone(s.v4[l]), i, i+1)
	} else {
		i, found := slices.BinarySearchFunc(s.v6[l], to6(p.Addr()), cmp6)
		if !found {
			return s
		}
		n.v6[l] = slices.Delete(slices.Clone(s.v6[l]), i, i+1)
	}
	n.index()
	return &n
}
