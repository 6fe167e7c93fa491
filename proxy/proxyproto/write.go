package proxyproto

// Encoding, for servers that receive the PROXY protocol (HAProxy's
// send-proxy and send-proxy-v2).

import (
	"encoding/binary"
	"hash/crc32"
	"strconv"
)

// AppendV1 appends h as a version 1 line to dst. A Local header, or
// addresses that are not both IPv4 or both IPv6, give "PROXY UNKNOWN\r\n".
// IPv4-mapped IPv6 addresses are written as IPv4.
func (h *Header) AppendV1(dst []byte) []byte {
	src, dstA := h.Src.Addr().Unmap(), h.Dst.Addr().Unmap()
	if h.Command != Proxy || !src.IsValid() || !dstA.IsValid() || src.Is4() != dstA.Is4() {
		return append(dst, "PROXY UNKNOWN\r\n"...)
	}
	dst = append(dst, "PROXY TCP4 "...)
	if !src.Is4() {
		dst[len(dst)-2] = '6'
	}
	dst = src.AppendTo(dst)
	dst = append(dst, ' ')
	dst = dstA.AppendTo(dst)
	dst = append(dst, ' ')
	dst = strconv.AppendUint(dst, uint64(h.Src.Port()), 10)
	dst = append(dst, ' ')
	dst = strconv.AppendUint(dst, uint64(h.Dst.Port()), 10)
	return append(dst, "\r\n"...)
}

// AppendV2 appends h as a version 2 header to dst, with h.TLVs in order.
// A Local header (or addresses of mixed families) is written as LOCAL with
// no address. A TLV of type TypeCRC32C, whatever its value, receives the
// header's checksum.
func (h *Header) AppendV2(dst []byte) []byte {
	start := len(dst)
	dst = append(dst, sigV2...)
	src, dstA := h.Src.Addr(), h.Dst.Addr()
	local := h.Command != Proxy || !src.IsValid() || !dstA.IsValid()
	if !local && src.Unmap().Is4() && dstA.Unmap().Is4() {
		src, dstA = src.Unmap(), dstA.Unmap()
	} else if !local && (src.Is4() || dstA.Is4()) {
		local = true
	}
	switch {
	case local:
		dst = append(dst, 0x20, 0x00, 0, 0)
	case src.Is4():
		dst = append(dst, 0x21, 0x11, 0, 0)
		a, b := src.As4(), dstA.As4()
		dst = append(dst, a[:]...)
		dst = append(dst, b[:]...)
		dst = binary.BigEndian.AppendUint16(dst, h.Src.Port())
		dst = binary.BigEndian.AppendUint16(dst, h.Dst.Port())
	default:
		dst = append(dst, 0x21, 0x21, 0, 0)
		a, b := src.As16(), dstA.As16()
		dst = append(dst, a[:]...)
		dst = append(dst, b[:]...)
		dst = binary.BigEndian.AppendUint16(dst, h.Src.Port())
		dst = binary.BigEndian.AppendUint16(dst, h.Dst.Port())
	}
	crcAt := -1
	for _, t := range h.TLVs {
		dst = append(dst, t.Type)
		if t.Type == TypeCRC32C {
			dst = binary.BigEndian.AppendUint16(dst, 4)
			crcAt = len(dst)
			dst = append(dst, 0, 0, 0, 0)
			continue
		}
		dst = binary.BigEndian.AppendUint16(dst, uint16(len(t.Value)))
		dst = append(dst, t.Value...)
	}
	binary.BigEndian.PutUint16(dst[start+14:], uint16(len(dst)-start-v2HeadLen))
	if crcAt >= 0 {
		binary.BigEndian.PutUint32(dst[crcAt:], crc32.Checksum(dst[start:], castagnoli))
	}
	return dst
}
