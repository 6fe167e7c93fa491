//go:build !linux

package proxyproto

import "net"

// readPeek is Linux-only (it needs POLLRDHUP); elsewhere Read reads the exact bytes (readExact).
func readPeek(net.Conn) (Header, error, bool) { return Header{}, nil, false }
