// Package proxyproto reads and writes the PROXY protocol header, versions 1
// (text) and 2 (binary), as specified by HAProxy's proxy-protocol.txt: the
// line or block a load balancer puts in front of a relayed connection to
// pass on the client's address.
//
// The main types:
//
//   - Header is one decoded header: version, command (PROXY or LOCAL),
//     the source and destination addresses of the relayed connection and,
//     in version 2, its TLVs.
//   - Parse decodes a header from the first bytes of a connection. It is a
//     pure function over a byte slice (fuzzed: FuzzParse): it returns
//     ErrIncomplete while the bytes are a valid beginning of a header, and
//     a *Error naming HAProxy's failure reason otherwise.
//   - Read takes the header off an accepted connection without consuming
//     one byte past it (MSG_PEEK on Linux sockets), so the connection stays
//     the *net.TCPConn it was: no wrapper, no buffer in front of it, and
//     splice(2) still applies to TCP bulk transfers after it.
//   - Header.AppendV1 and Header.AppendV2 encode a header, for servers
//     configured to receive one.
//
// Invariants: Parse never reads past len(b) nor panics on any input; a
// header it accepts is at most MaxV1Len (version 1) or MaxV2Len
// (version 2) bytes; Read consumes exactly the header's bytes.
package proxyproto
